package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/convert/csv"
	"github.com/iotrace/iotrace/convert/jsonl"
	"github.com/iotrace/iotrace/convert/text"
	"github.com/iotrace/iotrace/trace"
	"github.com/spf13/cobra"
)

func init() { commands = append(commands, newDumpCmd) }

// lineWriter is an event-per-line output: text, JSON lines or CSV.
type lineWriter interface {
	Write(e *trace.Event, path func(trace.PathID) string) error
	Flush() error
}

// lineFormats are the names --format takes.
var lineFormats = []string{"text", "jsonl", "csv"}

func newLineWriter(format string, w io.Writer) (lineWriter, error) {
	switch format {
	case "text":
		return text.NewWriter(w), nil
	case "jsonl":
		return jsonl.NewWriter(w), nil
	case "csv":
		return csv.NewWriter(w), nil
	}
	return nil, fmt.Errorf("--format %q: want text, jsonl or csv", format)
}

// eventFilter selects events by rank and op; an empty filter keeps all.
type eventFilter struct {
	ranks []uint32          // keep only these ranks, if not empty
	ops   map[trace.Op]bool // keep only these ops, if not nil
}

func (f *eventFilter) keepRank(r uint32) bool {
	return len(f.ranks) == 0 || slices.Contains(f.ranks, r)
}

func (f *eventFilter) keep(e *trace.Event) bool {
	return (f.ops == nil || f.ops[e.Op]) && f.keepRank(e.Rank)
}

// writeLines writes the events of t, rank after rank in increasing order,
// to lw: only the ranks in only, if it is not empty, and only the ops in
// keep, if keep is not nil.
func writeLines(lw lineWriter, t trace.Trace, only []uint32, keep map[trace.Op]bool) error {
	f := eventFilter{ranks: only, ops: keep}
	for _, r := range t.Ranks() {
		if !f.keepRank(r) {
			continue
		}
		src, err := t.Rank(r)
		if err != nil {
			return err
		}
		err = writeSource(lw, src, t.Path, &f)
		if c, ok := src.(io.Closer); ok {
			c.Close()
		}
		if err != nil {
			lw.Flush() // what was read before the error
			return err
		}
	}
	return lw.Flush()
}

// writeSource writes the events of src that f keeps to lw, without
// flushing it.
func writeSource(lw lineWriter, src trace.Source, path func(trace.PathID) string, f *eventFilter) error {
	buf := make([]trace.Event, trace.BatchSize)
	for {
		n, err := src.ReadEvents(buf)
		for i := range buf[:n] {
			if !f.keep(&buf[i]) {
				continue
			}
			if werr := lw.Write(&buf[i], path); werr != nil {
				return werr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// opFilter turns --op names (calls or families) into a set of ops; nil if
// there are none.
func opFilter(names []string) (map[trace.Op]bool, error) {
	if len(names) == 0 {
		return nil, nil
	}
	keep := map[trace.Op]bool{}
	for _, list := range names {
		for _, n := range strings.Split(list, ",") {
			n = strings.TrimSpace(n)
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
				return nil, fmt.Errorf("--op %q: no such call or family (calls such as pwrite or MPI_Barrier, families such as write or open)", n)
			}
		}
	}
	return keep, nil
}

// checkRanks fails if a rank --rank asks for is not in the trace.
func checkRanks(only, have []uint32) error {
	for _, r := range only {
		if !slices.Contains(have, r) {
			return fmt.Errorf("--rank %d: the trace has no rank %d (its ranks: %s)", r, r, rankList(have))
		}
	}
	return nil
}

// lineInput returns the reader of a JSON-lines or CSV input (by its
// extension), or nil for any other input.
func lineInput(name string) func(io.Reader, string) trace.Source {
	switch {
	case strings.HasSuffix(name, ".jsonl"):
		return func(r io.Reader, name string) trace.Source { return jsonl.NewReader(r, name) }
	case strings.HasSuffix(name, ".csv"):
		return func(r io.Reader, name string) trace.Source { return csv.NewReader(r, name) }
	}
	return nil
}

// dumpLines prints a JSON-lines or CSV file, in the order of its lines.
func dumpLines(lw lineWriter, name string, open func(io.Reader, string) trace.Source, f *eventFilter) error {
	file, err := os.Open(name)
	if err != nil {
		return err
	}
	defer file.Close()
	src := open(file, name)
	err = writeSource(lw, src, src.Path, f)
	// The lines before a bad one are printed, then the error.
	if ferr := lw.Flush(); err == nil {
		err = ferr
	}
	return err
}

func newDumpCmd() *cobra.Command {
	var in cli.Input
	var formatName string
	var ranks []uint
	var ops []string
	c := &cobra.Command{
		Use:   "dump [--format text|jsonl|csv] [--rank N]… [--op NAME]… INPUT…",
		Short: "Print a trace one event per line (text, JSON lines or CSV)",
		Long: `dump prints every event of a trace, rank after rank, each rank's events in
call order, one line per event.

  text   for people: rank, thread, start (s), duration, call, arguments, "=" result
         (errors as -errno and name)
  jsonl  one JSON object per event, the form 'iotrace convert --from jsonl' reads
         back (schema: docs/FORMAT.md, "JSON lines")
  csv    a header row, then every field of the JSON-lines schema in every row

--rank N (repeatable, or 0,2,5) prints only those ranks; --op NAME (repeatable,
or a comma list) only those calls (pwrite, MPI_File_write_at_all) or families
(write, open, seek, sync). INPUT is trace files or a directory of them, a
pattern script with --ranks, or one .jsonl or .csv file, which is printed in
the order of its lines (a quick way to check one: the first bad line is named).`,
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
			var only []uint32
			for _, r := range ranks {
				if r > 1<<32-1 {
					return fmt.Errorf("--rank %d: out of range", r)
				}
				only = append(only, uint32(r))
			}
			if open := lineInput(args[0]); open != nil {
				if len(args) != 1 {
					return fmt.Errorf("%s is read alone, not with other inputs", args[0])
				}
				return dumpLines(lw, args[0], open, &eventFilter{ranks: only, ops: keep})
			}
			t, err := in.Open(args, scriptOpener, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			err = checkRanks(only, t.Ranks())
			if err == nil {
				err = writeLines(lw, t, only, keep)
			}
			if cerr := t.Close(); err == nil {
				err = cerr
			}
			return err
		},
	}
	in.AddFlags(c.Flags())
	c.Flags().StringVar(&formatName, "format", "text", "output form: "+strings.Join(lineFormats, ", "))
	c.Flags().UintSliceVar(&ranks, "rank", nil, "print only this rank (repeatable)")
	c.Flags().StringArrayVar(&ops, "op", nil, "print only this call or family (repeatable)")
	return c
}
