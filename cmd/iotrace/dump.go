package main

import (
	"fmt"
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
		Args:  cli.Args(1, -1, cli.NoInput),
		RunE:  func(cmd *cobra.Command, args []string) error { return runDump(o, args, cli.StreamsOf(cmd)) },
	}
	cli.Help(c, "iotrace-dump")
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
	if note := t.Meta().TimesNote(); note != "" {
		// On standard error: the lines stay the trace's.
		fmt.Fprintln(s.Err, "iotrace dump: "+note)
	}
	err = convert.WriteLines(lw, t)
	if cerr := t.Close(); err == nil {
		err = cerr
	}
	return err
}
