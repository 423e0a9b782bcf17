package main

import (
	"fmt"
	"io"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/report"
	"github.com/iotrace/iotrace/trace"
)

// writeReport prints st, the statistics of the replay's trace (how the
// replay went included) and, with --compare, the comparison with the
// original; with --html it writes them as a page too. Files are written
// whole or not at all.
func (o *options) writeReport(st *report.Stats, orig trace.Trace, inputs []string, s cli.IO) error {
	var cmp *report.Comparison
	if o.compare {
		ost, err := report.Compute(orig, report.Options{Detail: o.detail})
		if err != nil {
			return fmt.Errorf("reading the original: %w", err)
		}
		cmp = report.Compare(ost, st)
	}
	textual := o.format == "text" || o.format == "markdown"
	if !textual && !o.quiet {
		st.Replay.WriteText(s.Err)
	}
	ho := report.HTMLOptions{Title: "Replay report", Inputs: inputs, NameA: "original", NameB: "replay"}
	page := func(w io.Writer) error {
		if cmp != nil {
			return report.RenderCompareHTML(w, cmp, ho)
		}
		return report.RenderHTML(w, st, ho)
	}
	err := o.files.write(&o.files.output, o.output, s.Out, func(w io.Writer) error {
		if o.format == "html" {
			return page(w)
		}
		if err := report.Render(w, st, o.by, o.format); err != nil || cmp == nil {
			return err
		}
		if textual {
			fmt.Fprint(w, "\nOriginal (a) and replay (b):\n\n")
		}
		return report.RenderCompare(w, cmp, o.format)
	})
	if err != nil || o.html == "" {
		return err
	}
	if err := o.files.write(&o.files.html, o.html, s.Out, page); err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	return nil
}
