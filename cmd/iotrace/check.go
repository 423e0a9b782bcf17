package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/report"
	"github.com/iotrace/iotrace/trace/format"
	"github.com/spf13/cobra"
)

func init() { commands = append(commands, newCheckCmd) }

func newCheckCmd() *cobra.Command {
	var salvage bool
	c := &cobra.Command{
		Use:   "check [--salvage] FILE|DIR…",
		Short: "Verify trace files block by block and say what is recoverable",
		Long: `check reads every block of each trace file, verifies its CRC, decodes every
event and compares the index with the blocks. It prints, per file, the blocks,
events and ranks found, and any truncation or damaged block with its offset.
It exits with status 1 if any file is damaged or truncated.

For the ranks of an MPI capture it also prints what was measured of their
clocks against rank 0's (docs/FORMAT.md, "One clock"): the offset, its error
bound and when it was measured, at start-up and at the end, and the drift
between them. Readers put every rank's times on rank 0's clock with them.

Without --salvage a scan stops at the first damaged block; with it, it goes on
at the next intact block, as readers given --salvage do.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			names, err := format.ExpandNames(args)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			bad := 0
			for _, n := range names {
				rep, err := format.Check(n, salvage)
				if err != nil {
					return err
				}
				if rep.Unreadable != "" {
					fmt.Fprintf(out, "%s: DAMAGED: %s\n", n, strings.TrimPrefix(rep.Unreadable, n+": "))
					bad++
					continue
				}
				status := "ok"
				switch {
				case len(rep.Damage) > 0:
					status = "DAMAGED"
				case rep.Truncated != "":
					status = "TRUNCATED"
				case rep.IndexNote != "":
					status = "ok (no index)"
				}
				fmt.Fprintf(out, "%s: %s: %s, %s, %s, %s %s, %s\n", n, status, count(rep.Size, "byte"),
					count(int64(rep.Blocks), "block"), count(rep.Events, "event"), count(int64(len(rep.Ranks)), "rank"),
					rankList(rep.Ranks), count(int64(rep.Paths), "path"))
				if rep.Truncated != "" {
					fmt.Fprintf(out, "  truncated: %s\n", rep.Truncated)
				}
				for _, d := range rep.Damage {
					fmt.Fprintf(out, "  damaged: offset %d: %s\n", d.Offset, d.Reason)
				}
				if rep.IndexNote != "" {
					fmt.Fprintf(out, "  index: %s\n", rep.IndexNote)
				}
				if rep.Damaged() {
					bad++
				} else {
					printClocks(out, n)
				}
			}
			if bad > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "iotrace check: %d of %d files damaged\n", bad, len(names))
				return cli.ExitError{Code: 1}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&salvage, "salvage", false, "go on past damaged blocks to find every intact block")
	return c
}

// printClocks prints the clock samples of the ranks of file n.
func printClocks(out io.Writer, n string) {
	rd, err := format.Open(n)
	if err != nil {
		return
	}
	defer rd.Close()
	for _, rs := range rd.Summary() {
		c := rs.Clock
		if c == nil || len(c.Samples) == 0 {
			continue
		}
		var parts []string
		for _, s := range c.Samples {
			parts = append(parts, fmt.Sprintf("%s ±%s at %s", signed(s.Offset), report.HumanDuration(s.Err), report.HumanDuration(s.At)))
		}
		line := fmt.Sprintf("  clock: rank %d against rank %d", rs.Rank, c.Ref)
		if c.Method != "" {
			line += " (" + c.Method + ")"
		}
		line += ": " + strings.Join(parts, ", ")
		if f, l := c.Samples[0], c.Samples[len(c.Samples)-1]; l.At > f.At {
			d := float64(l.At - f.At)
			line += fmt.Sprintf("; drift %.3g ±%.2g µs/s", float64(l.Offset-f.Offset)/d*1e6, float64(l.Err+f.Err)/d*1e6)
		}
		fmt.Fprintln(out, line)
	}
}

// signed is a duration with its sign: "+1.2ms", "-300ns".
func signed(ns int64) string {
	if ns < 0 {
		return report.HumanDuration(ns)
	}
	return "+" + report.HumanDuration(ns)
}

// count is "1 block", "2 blocks".
func count(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// rankList prints ranks compactly: "[0-3 7]".
func rankList(rs []uint32) string {
	var parts []string
	for i := 0; i < len(rs); {
		j := i
		for j+1 < len(rs) && rs[j+1] == rs[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", rs[i], rs[j]))
		} else {
			parts = append(parts, fmt.Sprint(rs[i]))
		}
		i = j + 1
	}
	return "[" + strings.Join(parts, " ") + "]"
}
