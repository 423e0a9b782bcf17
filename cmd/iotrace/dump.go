package main

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/convert/csv"
	"github.com/iotrace/iotrace/convert/jsonl"
	"github.com/iotrace/iotrace/convert/text"
	"github.com/iotrace/iotrace/trace"
	"github.com/spf13/cobra"
)

func init() { commands = append(commands, newDumpCmd) }

// lineWriter is an event-per-line output.
type lineWriter interface {
	Write(e *trace.Event, path func(trace.PathID) string) error
	Flush() error
}

func newLineWriter(format string, w io.Writer) (lineWriter, error) {
	switch format {
	case "text":
		return text.NewWriter(w), nil
	case "jsonl":
		return jsonl.NewWriter(w), nil
	case "csv":
		return csv.NewWriter(w), nil
	}
	return nil, fmt.Errorf("unknown format %q (want text, jsonl or csv)", format)
}

// writeLines writes the events of t (ranks in order, those of only if it
// is not empty; ops in keep, if keep is not nil) to lw.
func writeLines(lw lineWriter, t trace.Trace, only []uint32, keep map[trace.Op]bool) error {
	buf := make([]trace.Event, trace.BatchSize)
	for _, r := range t.Ranks() {
		if len(only) > 0 && !slices.Contains(only, r) {
			continue
		}
		src, err := t.Rank(r)
		if err != nil {
			return err
		}
		for {
			n, err := src.ReadEvents(buf)
			for i := range buf[:n] {
				if keep != nil && !keep[buf[i].Op] {
					continue
				}
				if werr := lw.Write(&buf[i], t.Path); werr != nil {
					return werr
				}
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
		}
	}
	return lw.Flush()
}

// opFilter turns --op names (calls or families) into a set of ops.
func opFilter(names []string) (map[trace.Op]bool, error) {
	if len(names) == 0 {
		return nil, nil
	}
	keep := map[trace.Op]bool{}
	for _, n := range names {
		found := false
		if op, ok := trace.ParseOp(n); ok {
			keep[op] = true
			found = true
		}
		for _, op := range trace.Ops() {
			if op.Info().Family == n {
				keep[op] = true
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("--op %q: no such call or family", n)
		}
	}
	return keep, nil
}

func newDumpCmd() *cobra.Command {
	var in cli.Input
	var formatName string
	var ranks []uint
	var ops []string
	c := &cobra.Command{
		Use:   "dump [--format text|jsonl|csv] [--rank N]… [--op NAME]… INPUT…",
		Short: "Print a trace one event per line (text, JSON lines or CSV)",
		Long: `dump prints every event of a trace, rank after rank, in call order. --format
jsonl prints the JSON-lines form that 'iotrace convert --from jsonl' reads back
(schema in docs/FORMAT.md); csv has a header row and every column. --rank and
--op (a call such as pwrite, or a family such as write) select events.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			lw, err := newLineWriter(formatName, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			keep, err := opFilter(ops)
			if err != nil {
				return err
			}
			t, err := in.Open(args, scriptOpener, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			var only []uint32
			for _, r := range ranks {
				only = append(only, uint32(r))
			}
			err = writeLines(lw, t, only, keep)
			if cerr := t.Close(); err == nil {
				err = cerr
			}
			return err
		},
	}
	in.AddFlags(c.Flags())
	c.Flags().StringVar(&formatName, "format", "text", "text, jsonl or csv")
	c.Flags().UintSliceVar(&ranks, "rank", nil, "print only these ranks (repeatable)")
	c.Flags().StringArrayVar(&ops, "op", nil, "print only this call or family (repeatable)")
	return c
}
