package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/internal/outfile"
	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/report"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
)

// writeReport prints the statistics of the replay's trace, the summary
// of the replay and, with --compare, the comparison with the original;
// with --html it writes them as a page too. Files are written whole or
// not at all.
func (o *options) writeReport(orig trace.Trace, inputs []string, recPath string, res *replay.Result, s cli.IO) error {
	rt, err := format.Open(recPath)
	if err != nil {
		return fmt.Errorf("reading the replay's trace: %w", err)
	}
	defer rt.Close()
	opts := report.Options{Detail: o.detail}
	st, err := report.Compute(rt, opts)
	if err != nil {
		return fmt.Errorf("reading the replay's trace: %w", err)
	}
	var cmp *report.Comparison
	if o.compare {
		ost, err := report.Compute(orig, opts)
		if err != nil {
			return fmt.Errorf("reading the original: %w", err)
		}
		cmp = report.Compare(ost, st)
	}
	textual := o.format == "text" || o.format == "markdown"
	if !textual && !o.quiet {
		res.WriteSummary(s.Err)
	}
	err = outfile.Write(o.output, s.Out, func(w io.Writer) error {
		if err := report.Render(w, st, o.by, o.format); err != nil {
			return err
		}
		if textual {
			fmt.Fprintln(w)
			res.WriteSummary(w)
		}
		if cmp == nil {
			return nil
		}
		if textual {
			fmt.Fprint(w, "\nOriginal (a) and replay (b):\n\n")
		}
		return report.RenderCompare(w, cmp, o.format)
	})
	if err != nil || o.html == "" {
		return err
	}
	if err := writeHTML(o.html, st, cmp, inputs, res); err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	return nil
}

// writeHTML writes the HTML report of the replay (with cmp, beside the
// original) and its summary to path.
func writeHTML(path string, st *report.Stats, cmp *report.Comparison, inputs []string, res *replay.Result) error {
	var sum strings.Builder
	res.WriteSummary(&sum)
	o := report.HTMLOptions{Title: "Replay report", Inputs: inputs, NameA: "original", NameB: "replay",
		Notes: []report.HTMLNote{{Title: "Replay", Text: sum.String()}}}
	return writeFile(path, func(w io.Writer) error {
		if cmp != nil {
			return report.RenderCompareHTML(w, cmp, o)
		}
		return report.RenderHTML(w, st, o)
	})
}

// writeFile writes the file name through write, whole or not at all.
func writeFile(name string, write func(io.Writer) error) error {
	return outfile.Write(name, nil, write)
}
