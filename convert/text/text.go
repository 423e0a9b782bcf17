// Package text prints events one per line for people to read, as
// `iotrace dump` does by default:
//
//	rank 0 t0   0.000012345s +2.87µs  pwrite       fd=3 /scratch/out.0 off=4096 size=4096 = 4096
package text

import (
	"bufio"
	"io"
	"strconv"

	"github.com/iotrace/iotrace/report"
	"github.com/iotrace/iotrace/trace"
)

// Writer prints events.
type Writer struct {
	w   *bufio.Writer
	buf []byte
}

// NewWriter returns a Writer on w; call Flush at the end.
func NewWriter(w io.Writer) *Writer { return &Writer{w: bufio.NewWriterSize(w, 64<<10)} }

// Flush writes buffered lines.
func (w *Writer) Flush() error { return w.w.Flush() }

func pad(b []byte, from, width int) []byte {
	for len(b)-from < width {
		b = append(b, ' ')
	}
	return b
}

// Write prints one event; path resolves its path ids.
func (w *Writer) Write(e *trace.Event, path func(trace.PathID) string) error {
	b := append(w.buf[:0], "rank "...)
	b = strconv.AppendUint(b, uint64(e.Rank), 10)
	b = append(b, " t"...)
	b = strconv.AppendUint(b, uint64(e.Thread), 10)
	b = append(b, ' ')
	start := len(b)
	sec, ns := e.Start/1e9, e.Start%1e9
	if e.Start < 0 {
		b = append(b, '-')
		sec, ns = -sec, -ns
	}
	b = strconv.AppendInt(b, sec, 10)
	b = append(b, '.')
	f := strconv.AppendInt(nil, ns+1e9, 10)
	b = append(b, f[1:]...)
	b = append(b, 's')
	b = pad(b, start, 14)
	b = append(b, " +"...)
	start = len(b)
	b = append(b, report.HumanDuration(e.Dur)...)
	b = pad(b, start, 8)
	b = append(b, ' ')
	start = len(b)
	info := e.Op.Info()
	b = append(b, info.Name...)
	b = pad(b, start, 12)
	kv := func(k string, v int64) {
		b = append(b, ' ')
		b = append(b, k...)
		b = append(b, '=')
		b = strconv.AppendInt(b, v, 10)
	}
	if info.Class == trace.ClassMarker {
		b = append(b, ' ')
		b = strconv.AppendQuote(b, path(e.Path))
	} else {
		if e.FD != 0 || info.Family == "close" || info.Dir != trace.DirNone {
			kv("fd", int64(e.FD))
		}
		if e.Path != 0 {
			b = append(b, ' ')
			b = append(b, path(e.Path)...)
		}
		if e.Path2 != 0 {
			b = append(b, " -> "...)
			b = append(b, path(e.Path2)...)
		}
		if e.Offset != 0 || info.Dir != trace.DirNone || info.Family == "seek" {
			kv("off", e.Offset)
		}
		if e.Size != 0 || info.Dir != trace.DirNone {
			kv("size", e.Size)
		}
		if e.Count != 0 {
			kv("count", int64(e.Count))
		}
		if e.Stride != 0 {
			kv("stride", e.Stride)
		}
		if e.Flags != 0 {
			b = append(b, " flags="...)
			b = append(b, trace.FormatFlags(e.Op, e.Flags)...)
		}
		if e.Mode != 0 {
			b = append(b, " mode=0"...)
			b = strconv.AppendUint(b, uint64(e.Mode), 8)
		}
		if e.Whence != 0 {
			b = append(b, " whence="...)
			b = append(b, trace.WhenceName(e.Whence)...)
		}
		if info.Class == trace.ClassComm {
			kv("peer", int64(e.Peer))
			if e.Tag != 0 {
				kv("tag", int64(e.Tag))
			}
			kv("comm", int64(e.Comm))
			kv("bytes", e.Bytes)
		}
		b = append(b, " = "...)
		b = strconv.AppendInt(b, e.Ret, 10)
		if e.Ret < 0 {
			b = append(b, ' ')
			b = append(b, trace.Errno(e.Ret)...)
		}
	}
	b = append(b, '\n')
	w.buf = b
	_, err := w.w.Write(b)
	return err
}
