package convert

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/iotrace/iotrace/convert/csv"
	"github.com/iotrace/iotrace/convert/jsonl"
	"github.com/iotrace/iotrace/convert/text"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
)

// LineWriter writes one event per line: text, JSON lines or CSV.
type LineWriter interface {
	Write(e *trace.Event, path func(trace.PathID) string) error
	Flush() error
}

// LineFormats are the names NewLineWriter takes.
var LineFormats = []string{"text", "jsonl", "csv"}

// NewLineWriter returns the writer of one event per line in format.
func NewLineWriter(format string, w io.Writer) (LineWriter, error) {
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

// WriteLines writes the events of t, rank after rank in increasing
// order, to lw, and flushes it. Open a trace with an Opener whose Select
// is set to write only some of them.
func WriteLines(lw LineWriter, t trace.Trace) error {
	for _, r := range t.Ranks() {
		src, err := t.Rank(r)
		if err != nil {
			return err
		}
		err = writeSource(lw, src, t.Path, nil)
		closeSource(src)
		if err != nil {
			lw.Flush() // what was read before the error
			return err
		}
	}
	return lw.Flush()
}

// writeSource writes the events of src that keep keeps (every one for
// nil) to lw, without flushing it.
func writeSource(lw LineWriter, src trace.Source, path func(trace.PathID) string, keep func(*trace.Event) bool) error {
	buf := make([]trace.Event, trace.BatchSize)
	for {
		n, err := src.ReadEvents(buf)
		for i := range buf[:n] {
			if keep != nil && !keep(&buf[i]) {
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

// LinesInOrder writes the events of a JSON-lines or CSV file that sel
// keeps to lw in the order of its lines, the lines before a bad one
// first, and reports whether name is such a file (by its form). It is how
// a file of lines is checked: its first bad line is named.
func LinesInOrder(lw LineWriter, name string, sel *filter.Selection) (bool, error) {
	var read func(io.Reader, string) trace.Source
	switch Guess(name) {
	case "jsonl":
		read = func(r io.Reader, name string) trace.Source { return jsonl.NewReader(r, name) }
	case "csv":
		read = func(r io.Reader, name string) trace.Source { return csv.NewReader(r, name) }
	default:
		return false, nil
	}
	file, err := os.Open(name)
	if err != nil {
		return true, err
	}
	defer file.Close()
	src := read(file, name)
	// The lines interleave ranks: each rank's state is followed apart.
	keepers := map[uint32]*filter.Keeper{}
	keep := func(e *trace.Event) bool {
		k := keepers[e.Rank]
		if k == nil {
			k = sel.Keeper()
			keepers[e.Rank] = k
		}
		return k.Keep(e, src.Path)
	}
	err = writeSource(lw, src, src.Path, keep)
	if ferr := lw.Flush(); err == nil {
		err = ferr
	}
	return true, err
}
