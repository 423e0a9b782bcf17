// Package jsonl reads and writes traces as JSON lines: one flat JSON object
// per event, the form `iotrace dump --format jsonl` prints and `iotrace
// convert --from jsonl` reads, so that any tool can produce or consume a
// trace. The schema is in docs/FORMAT.md ("JSON lines").
//
// Both directions stream. A Writer takes events one at a time with a
// function that resolves their path ids; a Reader is a trace.Source whose
// events carry their Rank, so one JSON-lines file of any size converts
// into a trace file in one pass:
//
//	w := jsonl.NewWriter(os.Stdout)
//	w.Write(&ev, src.Path)
//	w.Flush()
//
//	r := jsonl.NewReader(f, "in.jsonl")
//	trace.Copy(sink, r)
package jsonl

import (
	"bufio"
	"io"

	"github.com/iotrace/iotrace/convert/schema"
	"github.com/iotrace/iotrace/trace"
)

// Writer writes events as JSON lines. Its output is buffered: call Flush
// at the end.
type Writer struct {
	w   *bufio.Writer
	buf []byte
	enc schema.Encoder
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 64<<10)}
}

// Write writes e as one line; path resolves its path ids (Source.Path,
// Paths.Lookup).
func (w *Writer) Write(e *trace.Event, path func(trace.PathID) string) error {
	w.buf = w.enc.AppendEvent(w.buf[:0], e, path)
	w.buf = append(w.buf, '\n')
	_, err := w.w.Write(w.buf)
	return err
}

// Flush writes the buffered lines to the underlying writer.
func (w *Writer) Flush() error { return w.w.Flush() }
