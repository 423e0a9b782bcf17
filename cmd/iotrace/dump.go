package main

import (
	"strings"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/convert"
	"github.com/spf13/cobra"
)

// dumpOptions are the options of iotrace dump.
type dumpOptions struct {
	in     convert.Opener
	format string
}

func newDumpCmd() *cobra.Command {
	o := &dumpOptions{}
	c := &cobra.Command{
		Use:   "dump [--format text|jsonl|csv] [--rank LIST]… [--op NAME]… [--path PREFIX]… [--time FROM:TO] INPUT…",
		Short: "Print a trace one event per line (text, JSON lines or CSV)",
		Long: `dump prints every event of a trace, rank after rank, each rank's events in
call order, one line per event.

  text   for people: rank, thread, start (s), duration, call, arguments, "=" result
         (errors as -errno and name)
  jsonl  one JSON object per event, the form 'iotrace convert --from jsonl' reads
         back (schema: docs/FORMAT.md, "JSON lines")
  csv    a header row, then every field of the JSON-lines schema in every row

--rank LIST (repeatable; ranks and ranges, 0-3,8) prints only those ranks;
--op NAME (repeatable, or a comma list) only those calls (pwrite,
MPI_File_write_at_all), families (write, open, seek, sync) or classes (posix,
meta, mpiio, comm, marker, process), in any case; --path PREFIX only calls on
paths under it; --time FROM:TO only calls that start in that window (10s:1m,
:500ms). INPUT is trace files or a directory of them, a pattern script with
--ranks, a file convert reads (strace, DXT, fio iologs), or one .jsonl or .csv
file, which is printed in the order of its lines (a quick way to check one:
the first bad line is named).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runDump(o, args, cli.StreamsOf(cmd)) },
	}
	cli.AddInputFlags(c.Flags(), &o.in)
	c.Flags().StringVar(&o.format, "format", "text", "output form: "+strings.Join(convert.LineFormats, ", "))
	cli.AddSelectFlags(c.Flags(), &o.in.Select)
	return c
}

func runDump(o *dumpOptions, args []string, s cli.IO) error {
	lw, err := convert.NewLineWriter(o.format, s.Out)
	if err != nil {
		return err
	}
	sel, err := o.in.Select.Selection()
	if err != nil {
		return err
	}
	if len(args) == 1 && o.in.From == "" {
		// A file of lines is printed in the order of its lines.
		if ok, err := convert.LinesInOrder(lw, args[0], sel); ok {
			return err
		}
	}
	t, err := cli.Open(&o.in, args, s)
	if err != nil {
		return err
	}
	err = convert.WriteLines(lw, t)
	if cerr := t.Close(); err == nil {
		err = cerr
	}
	return err
}
