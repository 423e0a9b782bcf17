package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/convert"
	"github.com/iotrace/iotrace/internal/outfile"
	"github.com/iotrace/iotrace/report"
	"github.com/spf13/cobra"
)

// compareOptions are the options of iotrace compare.
type compareOptions struct {
	in     convert.Opener
	format string
	out    string
	report report.Options
	check  bool
}

func newCompareCmd() *cobra.Command {
	o := &compareOptions{}
	c := &cobra.Command{
		Use:   "compare [--format text|csv|json|markdown|html] A B",
		Short: "Put two traces side by side: counts per op, time ratios, run time ratio",
		Args:  cli.Args(2, 2, "compare takes two inputs, A and B (each a trace, a directory of trace files, a script or a file convert reads)"),
		RunE:  func(cmd *cobra.Command, args []string) error { return runCompare(o, args, cli.StreamsOf(cmd)) },
	}
	cli.Help(c, "iotrace-compare")
	cli.AddInputFlags(c.Flags(), &o.in)
	cli.AddSelectFlags(c.Flags(), &o.in.Select)
	c.Flags().StringVar(&o.format, "format", "text", "output format: text, csv, json, markdown or html (with charts)")
	c.Flags().BoolVar(&o.report.Detail, "detail", false, "split operation families into their calls")
	c.Flags().StringVarP(&o.out, "output", "o", "", "write the comparison to this file instead of standard output")
	c.Flags().BoolVar(&o.check, "check", false, "exit with status 1 when the counts of an op differ")
	return c
}

func runCompare(o *compareOptions, args []string, s cli.IO) error {
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
	var st [2]*report.Stats
	for i, a := range args {
		var err error
		if st[i], err = cli.Stats(&o.in, []string{a}, s, o.report); err != nil {
			return cli.Named(a, err)
		}
	}
	cmp := report.Compare(st[0], st[1])
	err = out.Put(s.Out, func(w io.Writer) error {
		if o.format == "html" {
			return report.RenderCompareHTML(w, cmp, report.HTMLOptions{
				Inputs: []string{"A: " + args[0], "B: " + args[1]}, NameA: "A", NameB: "B"})
		}
		return report.RenderCompare(w, cmp, o.format)
	})
	if err != nil {
		return err
	}
	if m := cmp.Mismatches(); o.check && len(m) > 0 {
		fmt.Fprintf(s.Err, "iotrace: counts differ in %s\n", strings.Join(m, ", "))
		return cli.ExitError{Code: 1}
	}
	return nil
}
