// Package csv writes a trace as CSV: a header row, then one row per event
// with every column of the JSON-lines schema (docs/FORMAT.md), for
// spreadsheets and data frames.
package csv

import (
	"encoding/csv"
	"io"
	"strconv"

	"github.com/iotrace/iotrace/trace"
)

// Columns are the CSV columns, in order.
var Columns = []string{"rank", "thread", "op", "path", "path2", "fd", "offset", "size", "ret", "errno",
	"flags", "mode", "whence", "peer", "tag", "comm", "bytes", "count", "stride", "start_ns", "dur_ns"}

// Writer writes events as CSV rows.
type Writer struct {
	w      *csv.Writer
	header bool
	rec    []string
}

// NewWriter returns a Writer on w; the header row comes with the first
// event (or Flush).
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: csv.NewWriter(w), rec: make([]string, len(Columns))}
}

// Write writes one event; path resolves its path ids.
func (w *Writer) Write(e *trace.Event, path func(trace.PathID) string) error {
	if !w.header {
		w.header = true
		if err := w.w.Write(Columns); err != nil {
			return err
		}
	}
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	r := w.rec
	r[0], r[1], r[2] = i(int64(e.Rank)), i(int64(e.Thread)), e.Op.String()
	r[3], r[4] = path(e.Path), path(e.Path2)
	r[5], r[6], r[7], r[8], r[9] = i(int64(e.FD)), i(e.Offset), i(e.Size), i(e.Ret), trace.Errno(e.Ret)
	r[10] = ""
	if e.Flags != 0 {
		r[10] = trace.FormatFlags(e.Op, e.Flags)
	}
	r[11] = ""
	if e.Mode != 0 {
		r[11] = "0" + strconv.FormatUint(uint64(e.Mode), 8)
	}
	r[12] = ""
	if e.Whence != 0 {
		r[12] = trace.WhenceName(e.Whence)
	}
	r[13], r[14], r[15], r[16] = i(int64(e.Peer)), i(int64(e.Tag)), i(int64(e.Comm)), i(e.Bytes)
	r[17], r[18], r[19], r[20] = i(int64(e.Count)), i(e.Stride), i(e.Start), i(e.Dur)
	return w.w.Write(r)
}

// Flush writes buffered rows (and the header, if no event came).
func (w *Writer) Flush() error {
	if !w.header {
		w.header = true
		w.w.Write(Columns)
	}
	w.w.Flush()
	return w.w.Error()
}
