// Package csv writes a trace as CSV, for spreadsheets and data frames, and
// reads it back: a header row naming the fields of the JSON-lines schema
// (docs/FORMAT.md, "JSON lines"), then one row per event with every column.
//
// Integer columns always hold a number, 0 included, but source and
// recv_tag, empty when an MPI_Sendrecv's receive half is unknown (and on
// every other call). Text columns are empty
// when there is nothing to say: path and path2 (a marker's Path is in
// label instead), errno (set when ret is -1…-4095), flags (names, when not
// 0), mode (octal, "0644", when not 0) and whence (a name, for seeks and
// whenever it is not 0).
package csv

import (
	"bufio"
	"io"
	"strconv"
	"strings"

	"github.com/iotrace/iotrace/convert/schema"
	"github.com/iotrace/iotrace/trace"
)

// Columns returns the column names, in order: the JSON-lines fields.
func Columns() []string {
	cols := make([]string, schema.NumFields)
	for f := range schema.NumFields {
		cols[f] = f.String()
	}
	return cols
}

// Writer writes events as CSV rows (RFC 4180, "\n" line ends). Its output
// is buffered: call Flush at the end.
type Writer struct {
	w      *bufio.Writer
	header bool
	buf    []byte
}

// NewWriter returns a Writer on w. The header row comes with the first
// event, or with Flush if there is none.
func NewWriter(w io.Writer) *Writer { return &Writer{w: bufio.NewWriterSize(w, 64<<10)} }

func (w *Writer) writeHeader() error {
	w.header = true
	_, err := w.w.WriteString(strings.Join(Columns(), ",") + "\n")
	return err
}

// Write writes e as one row; path resolves its path ids.
func (w *Writer) Write(e *trace.Event, path func(trace.PathID) string) error {
	if !w.header {
		if err := w.writeHeader(); err != nil {
			return err
		}
	}
	w.buf = AppendRow(w.buf[:0], e, path)
	w.buf = append(w.buf, '\n')
	_, err := w.w.Write(w.buf)
	return err
}

// Flush writes the buffered rows (and the header, if no event came).
func (w *Writer) Flush() error {
	if !w.header {
		if err := w.writeHeader(); err != nil {
			return err
		}
	}
	return w.w.Flush()
}

// AppendRow appends the row of e, without a line end, to b.
func AppendRow(b []byte, e *trace.Event, path func(trace.PathID) string) []byte {
	info := e.Op.Info()
	marker := info.Class == trace.ClassMarker
	num := func(v int64) { b = strconv.AppendInt(b, v, 10); b = append(b, ',') }
	str := func(s string) { b = appendField(b, s); b = append(b, ',') }
	num(int64(e.Rank))
	num(int64(e.Thread))
	str(info.Name)
	var p, label string
	if e.Path != 0 {
		if marker {
			label = path(e.Path)
		} else {
			p = path(e.Path)
		}
	}
	str(p)
	if e.Path2 != 0 {
		str(path(e.Path2))
	} else {
		b = append(b, ',')
	}
	str(label)
	num(int64(e.FD))
	num(e.Offset)
	num(e.Size)
	num(e.Ret)
	if e.Ret < 0 && e.Ret >= -4095 {
		b = append(b, trace.Errno(e.Ret)...)
	}
	b = append(b, ',')
	src, rtag, half := e.RecvFrom()
	flags := e.Flags
	if e.Op == trace.OpMPISendrecv {
		flags &^= trace.RecvHalf // the source cell says it
	}
	if flags != 0 {
		str(trace.FormatFlags(e.Op, flags))
	} else {
		b = append(b, ',')
	}
	if e.Mode != 0 {
		b = append(b, '0')
		b = strconv.AppendUint(b, uint64(e.Mode), 8)
	}
	b = append(b, ',')
	if e.Whence != 0 || info.Family == "seek" {
		str(trace.WhenceName(e.Whence))
	} else {
		b = append(b, ',')
	}
	num(int64(e.Peer))
	num(int64(e.Tag))
	if half {
		num(int64(src))
		num(int64(rtag))
	} else {
		b = append(b, ",,"...)
	}
	num(int64(e.Comm))
	num(e.Bytes)
	num(int64(e.Count))
	num(e.Stride)
	num(int64(e.FD2))
	num(e.Offset2)
	num(e.Start)
	b = strconv.AppendInt(b, e.Dur, 10)
	return b
}

// appendField appends s, quoted if it holds a comma, a quote, a line end
// or leading space, as encoding/csv does.
func appendField(b []byte, s string) []byte {
	if !needsQuotes(s) {
		return append(b, s...)
	}
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			b = append(b, '"')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}

func needsQuotes(s string) bool {
	if s == "" {
		return false
	}
	if s == `\.` || s[0] == ' ' || s[0] == '\t' {
		return true
	}
	return strings.ContainsAny(s, ",\"\r\n")
}
