package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/convert/csv"
	"github.com/iotrace/iotrace/convert/jsonl"
	"github.com/iotrace/iotrace/convert/text"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
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

// writeLines writes the events of t that sel keeps, rank after rank in
// increasing order, to lw.
func writeLines(lw lineWriter, t trace.Trace, sel *filter.Selection) error {
	for _, r := range t.Ranks() {
		if !sel.KeepRank(r) {
			continue
		}
		src, err := t.Rank(r)
		if err != nil {
			return err
		}
		err = writeSource(lw, src, t.Path, sel)
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

// writeSource writes the events of src that sel keeps to lw, without
// flushing it.
func writeSource(lw lineWriter, src trace.Source, path func(trace.PathID) string, sel *filter.Selection) error {
	buf := make([]trace.Event, trace.BatchSize)
	for {
		n, err := src.ReadEvents(buf)
		for i := range buf[:n] {
			if !sel.Keep(&buf[i], path) {
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
func dumpLines(lw lineWriter, name string, open func(io.Reader, string) trace.Source, sel *filter.Selection) error {
	file, err := os.Open(name)
	if err != nil {
		return err
	}
	defer file.Close()
	src := open(file, name)
	err = writeSource(lw, src, src.Path, sel)
	// The lines before a bad one are printed, then the error.
	if ferr := lw.Flush(); err == nil {
		err = ferr
	}
	return err
}

func newDumpCmd() *cobra.Command {
	var in cli.Input
	var formatName string
	var ranks []string
	var ops []string
	c := &cobra.Command{
		Use:   "dump [--format text|jsonl|csv] [--rank LIST]… [--op NAME]… INPUT…",
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
meta, mpiio, comm, marker, process), in any case. INPUT is trace files or a directory of them, a
pattern script with --ranks, or one .jsonl or .csv file, which is printed in
the order of its lines (a quick way to check one: the first bad line is named).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			lw, err := newLineWriter(formatName, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			sel, err := selection(ranks, ops)
			if err != nil {
				return err
			}
			if open := lineInput(args[0]); open != nil {
				if len(args) != 1 {
					return fmt.Errorf("%s is read alone, not with other inputs", args[0])
				}
				return dumpLines(lw, args[0], open, sel)
			}
			t, err := in.Open(args, scriptOpener, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			err = sel.CheckRanks("--rank", t.Ranks())
			if err == nil {
				err = writeLines(lw, t, sel)
			}
			if cerr := t.Close(); err == nil {
				err = cerr
			}
			return err
		},
	}
	in.AddFlags(c.Flags())
	c.Flags().StringVar(&formatName, "format", "text", "output form: "+strings.Join(lineFormats, ", "))
	c.Flags().StringArrayVar(&ranks, "rank", nil, "print only these ranks, e.g. 0-3,8 (repeatable)")
	c.Flags().StringArrayVar(&ops, "op", nil, "print only these calls, families or classes (repeatable, or a comma list)")
	return c
}

// selection turns --rank and --op into a selection of events.
func selection(ranks, ops []string) (*filter.Selection, error) {
	sel := &filter.Selection{}
	if len(ranks) > 0 {
		rs, err := filter.ParseRanks(strings.Join(ranks, ","))
		if err != nil {
			return nil, fmt.Errorf("--rank: %w", err)
		}
		sel.Ranks = rs
	}
	if len(ops) > 0 {
		o, err := filter.ParseOps(ops...)
		if err != nil {
			return nil, fmt.Errorf("--op: %w", err)
		}
		sel.Ops = o
	}
	return sel, nil
}
