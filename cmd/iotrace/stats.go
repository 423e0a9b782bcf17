package main

import (
	"fmt"
	"io"

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
		Args:  cli.Args(1, -1, cli.NoInput),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.beffio && cmd.Flags().Changed("by") && o.by != "beffio" {
				return fmt.Errorf("--beffio is --by beffio; it cannot go with --by %s", o.by)
			}
			return runStats(o, args, cli.StreamsOf(cmd))
		},
	}
	cli.Help(c, "iotrace-stats")
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
	if err := cli.CheckChoice("--format", o.format, cli.Formats); err != nil {
		return err
	}
	if err := outfile.NotInput([]outfile.Output{{Flag: "--output", Name: o.out}}, args); err != nil {
		return err
	}
	out, err := outfile.Open(o.out)
	if err != nil {
		return err
	}
	defer out.Abort()
	st, err := cli.Stats(&o.in, args, s, o.report.For(o.by, o.format == "html"))
	if err != nil {
		return err
	}
	return out.Put(s.Out, func(w io.Writer) error {
		if o.format == "html" {
			return report.RenderHTML(w, st, report.HTMLOptions{Inputs: args})
		}
		return report.Render(w, st, o.by, o.format)
	})
}
