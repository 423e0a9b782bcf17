// Package text prints events one per line for people to read, as
// `iotrace dump` does by default:
//
//	rank 0   t0   0.000000171s +24.4µs  open         /scratch/out.0 flags=O_WRONLY|O_CREAT|O_TRUNC mode=0644 = 3
//	rank 0   t0   0.000024771s +3.95µs  pwrite       fd=3 off=4096 size=4096 = 4096
//	rank 1   t0   0.000000090s +1.8µs   open         /scratch/missing flags=O_RDONLY = -2 ENOENT
//	rank 0   t0   0.000030000s +5µs     MPI_Bcast    root=0 bytes=24
//	rank 0   t0   0.000040000s +0       region_begin "dump 3"
//	rank 3   t0  12.345678901s +4.2µs   MPI_Recv     peer=any tag=any bytes=8
//
// The columns are: rank, thread, start (seconds from the trace epoch, to
// the nanosecond), duration, call, then the call's arguments and, after
// "=", its result — bytes, a new offset or descriptor, or -errno with the
// errno's name; communication calls show a result only when it is not
// MPI_SUCCESS (0). Arguments that do not apply to a call are left out; a
// path with spaces, quotes or bytes that do not print is quoted as in Go.
// The form is for reading, not parsing: use JSON lines for that.
package text

import (
	"bufio"
	"io"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/iotrace/iotrace/trace"
)

// Writer prints events, one line each. Its output is buffered: call Flush
// at the end.
type Writer struct {
	w   *bufio.Writer
	buf []byte
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: bufio.NewWriterSize(w, 64<<10)} }

// Write prints e; path resolves its path ids.
func (w *Writer) Write(e *trace.Event, path func(trace.PathID) string) error {
	w.buf = AppendEvent(w.buf[:0], e, path)
	w.buf = append(w.buf, '\n')
	_, err := w.w.Write(w.buf)
	return err
}

// Flush writes the buffered lines to the underlying writer.
func (w *Writer) Flush() error { return w.w.Flush() }

// Column widths: a column pads to its width and a longer value pushes the
// rest of the line to the right.
const (
	rankWidth   = 8  // "rank 12 "
	threadWidth = 3  // "t0 "
	startWidth  = 14 // "  0.000012345s", right-aligned
	durWidth    = 8  // "+24.4µs "
	opWidth     = 12 // "region_begin"
)

// AppendEvent appends the line of e, without a newline, to b.
func AppendEvent(b []byte, e *trace.Event, path func(trace.PathID) string) []byte {
	col := len(b)
	b = append(b, "rank "...)
	b = strconv.AppendUint(b, uint64(e.Rank), 10)
	b = pad(b, col, rankWidth)
	col = len(b)
	b = append(b, ' ', 't')
	b = strconv.AppendUint(b, uint64(e.Thread), 10)
	b = pad(b, col, threadWidth)

	var t [32]byte
	ts := appendSeconds(t[:0], e.Start)
	for i := len(ts); i < startWidth; i++ {
		b = append(b, ' ')
	}
	b = append(b, ' ')
	b = append(b, ts...)
	b = append(b, ' ')
	col = len(b)
	b = append(b, '+')
	b = AppendDuration(b, e.Dur)
	b = pad(b, col, durWidth)
	b = append(b, ' ')
	col = len(b)
	info := e.Op.Info()
	b = append(b, info.Name...)
	b = pad(b, col, opWidth)

	a := args{b: b}
	switch info.Class {
	case trace.ClassMarker:
		a.b = append(a.b, ' ')
		a.b = strconv.AppendQuote(a.b, path(e.Path))
		if e.Path2 != 0 {
			a.str("", "-> "+quotePath(path(e.Path2)))
		}
		a.common(e, info, path, false)
		if e.Ret != 0 {
			a.result(e.Ret)
		}
	case trace.ClassComm:
		a.comm(e, info)
		a.common(e, info, path, true)
		if e.Ret != 0 { // MPI_SUCCESS goes without saying
			a.result(e.Ret)
		}
	default:
		a.common(e, info, path, true)
		a.result(e.Ret)
	}
	for len(a.b) > 0 && a.b[len(a.b)-1] == ' ' { // the padding of a bare call
		a.b = a.b[:len(a.b)-1]
	}
	return a.b
}

// args appends " key=value" pairs.
type args struct{ b []byte }

func (a *args) int(k string, v int64) {
	a.b = append(a.b, ' ')
	a.b = append(a.b, k...)
	a.b = append(a.b, '=')
	a.b = strconv.AppendInt(a.b, v, 10)
}

func (a *args) str(k, v string) {
	a.b = append(a.b, ' ')
	if k != "" {
		a.b = append(a.b, k...)
		a.b = append(a.b, '=')
	}
	a.b = append(a.b, v...)
}

// rank prints a peer or root: a number, or "any" for -1.
func (a *args) rank(k string, v int32) {
	switch v {
	case -1:
		a.str(k, "any")
		return
	case trace.ProcNull:
		a.str(k, "none")
		return
	}
	a.int(k, int64(v))
}

func (a *args) result(ret int64) {
	a.b = append(a.b, " = "...)
	a.b = strconv.AppendInt(a.b, ret, 10)
	if ret < 0 && ret >= -4095 {
		a.b = append(a.b, ' ')
		a.b = append(a.b, trace.Errno(ret)...)
	}
}

func (a *args) tag(k string, v int32) {
	if v == -1 {
		a.str(k, "any")
		return
	}
	a.int(k, int64(v))
}

// comm appends the arguments of a communication call.
func (a *args) comm(e *trace.Event, info trace.OpInfo) {
	switch info.Comm {
	case trace.CommP2P:
		a.rank("peer", e.Peer)
		a.tag("tag", e.Tag)
		if src, rtag, ok := e.RecvFrom(); ok {
			a.rank("source", src)
			a.tag("recvtag", rtag)
		}
	case trace.CommRooted:
		a.rank("root", e.Peer)
		if e.Tag != 0 {
			a.int("tag", int64(e.Tag))
		}
	default:
		if e.Peer != 0 {
			a.rank("peer", e.Peer)
		}
		if e.Tag != 0 {
			a.int("tag", int64(e.Tag))
		}
	}
	if e.Bytes != 0 || (info.Comm != trace.CommWait && info.Comm != trace.CommCreate && e.Op != trace.OpMPIBarrier) {
		a.int("bytes", e.Bytes)
	}
}

// takesFD reports whether op works on a descriptor (or MPI file handle)
// rather than a path.
func takesFD(info trace.OpInfo) bool {
	switch info.FD {
	case trace.FDOn, trace.FDDup, trace.FDClose, trace.FDCloseRange:
		return true
	}
	return false
}

// common appends the arguments every class may have, those that apply to
// the call always and the others when they are set.
func (a *args) common(e *trace.Event, info trace.OpInfo, path func(trace.PathID) string, paths bool) {
	if e.FD != 0 || takesFD(info) {
		if info.Class == trace.ClassMPIIO {
			a.int("fh", int64(e.FD))
		} else {
			a.int("fd", int64(e.FD))
		}
	}
	if paths && e.Path != 0 {
		a.str("", quotePath(path(e.Path)))
	}
	if paths && e.Path2 != 0 {
		a.str("", "-> "+quotePath(path(e.Path2)))
	}
	if e.Offset != 0 || info.Dir != trace.DirNone || info.Family == "seek" {
		a.int("off", e.Offset)
	}
	if e.Whence != 0 || info.Family == "seek" {
		a.str("whence", trace.WhenceName(e.Whence))
	}
	if e.Size != 0 || info.Dir != trace.DirNone {
		a.int("size", e.Size)
	}
	if e.Count != 0 {
		a.int("count", int64(e.Count))
	}
	if e.Stride != 0 {
		a.int("stride", e.Stride)
	}
	if e.FD2 != 0 || info.Dir == trace.DirCopy {
		a.int("fd2", int64(e.FD2))
	}
	if e.Offset2 != 0 || info.Dir == trace.DirCopy {
		a.int("off2", e.Offset2)
	}
	flags := e.Flags
	if e.Op == trace.OpMPISendrecv {
		flags &^= trace.RecvHalf // source= says it
	}
	if flags != 0 || (info.Family == "open" && info.Class != trace.ClassMPIIO) {
		a.str("flags", trace.FormatFlags(e.Op, flags))
	}
	if e.Mode != 0 {
		a.b = append(a.b, " mode=0"...)
		a.b = strconv.AppendUint(a.b, uint64(e.Mode), 8)
	}
	if info.Class != trace.ClassComm {
		if e.Peer != 0 {
			a.rank("peer", e.Peer)
		}
		if e.Tag != 0 {
			a.int("tag", int64(e.Tag))
		}
		if e.Bytes != 0 {
			a.int("bytes", e.Bytes)
		}
	}
	switch e.Comm {
	case trace.CommWorld:
	case trace.CommSelf:
		a.str("comm", "self")
	default:
		a.int("comm", int64(e.Comm))
	}
}

// quotePath returns p as it is if it reads unambiguously on a line, or
// quoted as in Go.
func quotePath(p string) string {
	if p == "" {
		return `""`
	}
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRuneInString(p[i:])
		if r == utf8.RuneError && size == 1 || r == ' ' || r == '"' || r == '\\' || !unicode.IsPrint(r) {
			return strconv.Quote(p)
		}
		i += size
	}
	return p
}

// pad appends spaces until the text from col on is width columns wide.
func pad(b []byte, col, width int) []byte {
	for n := utf8.RuneCount(b[col:]); n < width; n++ {
		b = append(b, ' ')
	}
	return b
}

// appendSeconds appends ns as seconds with nine decimals: "12.345678901s".
func appendSeconds(b []byte, ns int64) []byte {
	u := uint64(ns)
	if ns < 0 {
		b = append(b, '-')
		u = -u
	}
	b = strconv.AppendUint(b, u/1e9, 10)
	b = append(b, '.')
	frac := u % 1e9
	for d := uint64(1e8); d > 0; d /= 10 {
		b = append(b, byte('0'+frac/d%10))
	}
	return append(b, 's')
}

var durUnits = [...]struct {
	scale float64
	name  string
}{{1e3, "µs"}, {1e6, "ms"}, {1e9, "s"}}

// AppendDuration appends ns with three significant digits and a unit:
// "0", "812ns", "4.21µs", "42.1µs", "3.5ms", "12.3s", "4021s".
func AppendDuration(b []byte, ns int64) []byte {
	if ns == 0 {
		return append(b, '0')
	}
	if ns < 0 {
		b = append(b, '-')
		if ns == -1<<63 {
			return append(b, "9223372036s"...)
		}
		ns = -ns
	}
	if ns < 1000 {
		b = strconv.AppendInt(b, ns, 10)
		return append(b, "ns"...)
	}
	for i, u := range durUnits {
		v := float64(ns) / u.scale
		prec := 2
		switch {
		case v >= 99.95:
			prec = 0
		case v >= 9.995:
			prec = 1
		}
		// A value that rounds up to 1000 reads better in the next unit.
		if v >= 999.5 && i < len(durUnits)-1 {
			continue
		}
		var nb [32]byte
		num := strconv.AppendFloat(nb[:0], v, 'f', prec, 64)
		if prec > 0 {
			for num[len(num)-1] == '0' {
				num = num[:len(num)-1]
			}
			if num[len(num)-1] == '.' {
				num = num[:len(num)-1]
			}
		}
		b = append(b, num...)
		return append(b, u.name...)
	}
	return b // not reached
}
