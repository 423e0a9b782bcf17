package fold

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/trace"
)

// Explain writes what a conversion folded: the trace's calls and each
// rank's folded program, then the script with the number of calls every
// line makes (over all ranks), found by running it.
func Explain(w io.Writer, res *Result, name string, src []byte) error {
	p, err := script.Compile(name, src)
	if err != nil {
		return err
	}
	in, err := p.Instantiate(script.Config{Ranks: res.Ranks})
	if err != nil {
		return err
	}
	text := strings.Split(strings.TrimSuffix(string(src), "\n"), "\n")
	calls := make([]int64, len(text)+1)
	var regions int64
	paths := trace.NewPaths()
	for r := 0; r < res.Ranks; r++ {
		it, err := in.NewInterp(r, paths)
		if err != nil {
			return err
		}
		var ev trace.Event
	steps:
		for {
			k, err := it.Step(&ev)
			if err != nil {
				return err
			}
			switch k {
			case script.StepDone:
				break steps
			case script.StepSync:
				it.Settle(ev.Start + ev.Dur)
			case script.StepDecide:
				it.Decide(false)
				continue
			}
			if ev.Op == trace.OpRegionBegin || ev.Op == trace.OpRegionEnd {
				regions++
			} else if l := it.Pos().Line; l > 0 && l < len(calls) {
				calls[l]++
			}
		}
	}
	lines := len(text)
	fmt.Fprintf(w, "%d calls of %d ranks → %d lines (%.1f calls a line)\n", res.Events, res.Ranks, lines, float64(res.Events)/float64(max(lines, 1)))
	fmt.Fprintf(w, "%d ranks with calls, %d distinct folded programs, merged into one script\n", len(res.PerRank), res.Groups)
	for _, wn := range res.Warnings {
		fmt.Fprintf(w, "note: %s\n", wn)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rank\tcalls\tlines alone\tloops\tdeepest\t")
	for i := range res.PerRank {
		r := &res.PerRank[i]
		if res.rankLines != nil {
			r.Lines = res.rankLines(i)
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t\n", r.Rank, r.Events, r.Lines, r.Loops, r.Depth)
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprint(w, "calls made by each line (all ranks, every iteration)")
	if regions > 0 {
		fmt.Fprintf(w, "; the time blocks make %d region events", regions)
	}
	fmt.Fprintln(w, ":")
	width := len(fmt.Sprint(res.Events))
	for i, l := range text {
		c := ""
		if calls[i+1] > 0 {
			c = fmt.Sprint(calls[i+1])
		}
		fmt.Fprintf(w, "%*s  %s\n", width, c, l)
	}
	return nil
}
