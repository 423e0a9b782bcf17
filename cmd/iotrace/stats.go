package main

import (
	"fmt"
	"io"
	"slices"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/convert"
	"github.com/iotrace/iotrace/internal/outfile"
	"github.com/iotrace/iotrace/report"
	"github.com/spf13/cobra"
)

// statsOptions are the options of iotrace stats.
type statsOptions struct {
	in     convert.Opener
	by     string
	format string
	out    string
	beffio bool
	report report.Options
}

func newStatsCmd() *cobra.Command {
	o := &statsOptions{}
	c := &cobra.Command{
		Use:   "stats [--by op|size|rank|file|access|region|beffio] [--format text|csv|json|markdown|html] INPUT…",
		Short: "Per-operation tables of a trace: counts, times, bytes, bandwidth, latency",
		Long: `stats reads a trace (files, a directory of them, a pattern script with
--ranks, or what convert reads: strace, Darshan DXT or counters, Recorder, fio
iologs, JSON lines, CSV) and prints one of its tables:

  op      per operation family: count over all ranks, total time over all ranks,
          time per rank (total ÷ ranks), bytes, aggregate bandwidth (bytes ÷
          time per rank, MB = 10^6 B), latency p50/p99/max, errors (default)
  size    size distribution per data operation: exact sizes when an operation
          has at most 16 distinct sizes, power-of-two buckets otherwise
  rank    time per rank in each group of calls, with stragglers flagged
  file    per file: opens, reads, writes, bytes, time, ranks that touched it;
          then the access table
  access  per file, over its ranks and per rank, its access pattern as Darshan
          counts it: sequential and consecutive accesses, the common sizes and
          strides, alignment, shared or unique, the slowest rank, read/write
          overlap (docs/FORMAT.md, "access")
  region  the op table per labelled region (innermost region counts)
  beffio  the b_eff_io value of a run of samples/beffio.iop (--beffio): the
          bandwidth of each pattern type (bytes over the time from open to
          close), of each access method (average of the types, type 0
          twice) and of the partition (25 % first write + 25 % rewrite +
          50 % read); --detail adds every pattern

Families gather calls: read = read/pread/readv/preadv, write likewise, open =
open/openat/creat, seek = lseek, sync = fsync/fdatasync; --detail splits them.
MPI-IO and communication calls keep their own rows. --format json always holds
the op and size tables (field names in docs/FORMAT.md, "Reports").

--format html writes one self-contained page (no network, no script) with
every table and charts: time per operation, request sizes, bandwidth over
time and a per-rank timeline. Write it to a file with -o report.html.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.beffio && cmd.Flags().Changed("by") && o.by != "beffio" {
				return fmt.Errorf("--beffio is --by beffio; it cannot go with --by %s", o.by)
			}
			return runStats(o, args, cli.StreamsOf(cmd))
		},
	}
	cli.AddInputFlags(c.Flags(), &o.in)
	cli.AddSelectFlags(c.Flags(), &o.in.Select)
	c.Flags().StringVar(&o.by, "by", "op", "table: op, size, rank, file, access, region or beffio")
	c.Flags().BoolVar(&o.beffio, "beffio", false, "the b_eff_io value of a run of samples/beffio.iop (same as --by beffio)")
	c.Flags().StringVar(&o.format, "format", "text", "output format: text, csv, json, markdown or html (every table and charts)")
	c.Flags().BoolVar(&o.report.Detail, "detail", false, "split operation families into their calls")
	c.Flags().StringVarP(&o.out, "output", "o", "", "write the report to this file instead of standard output")
	return c
}

func runStats(o *statsOptions, args []string, s cli.IO) error {
	if o.beffio {
		o.by = "beffio"
	}
	if err := cli.CheckChoice("--by", o.by, report.Views); err != nil {
		return err
	}
	if err := cli.CheckChoice("--format", o.format, htmlFormats); err != nil {
		return err
	}
	st, err := cli.Stats(&o.in, args, s, o.report.For(o.by, o.format == "html"))
	if err != nil {
		return err
	}
	return outfile.Write(o.out, s.Out, func(w io.Writer) error {
		if o.format == "html" {
			return report.RenderHTML(w, st, report.HTMLOptions{Inputs: args})
		}
		return report.Render(w, st, o.by, o.format)
	})
}

// htmlFormats are the formats of stats and compare: those of the tables,
// and html, the report of every table with charts.
var htmlFormats = append(slices.Clone(report.Formats), "html")
