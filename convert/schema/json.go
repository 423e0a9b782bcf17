package schema

import (
	"strconv"
	"unicode/utf8"

	"github.com/iotrace/iotrace/trace"
)

// AppendEvent appends the JSON object of e, without a newline, to b.
//
// Fields that are zero or empty are left out, with these exceptions:
// rank, op, start_ns and dur_ns are always written, and ret is always
// written for calls (every op but the markers region_begin, region_end and
// mark, which have ret only when it is not 0). A marker's Path is written
// as "label". A negative ret within -4095..-1 is followed by its errno
// name.
func AppendEvent(b []byte, e *trace.Event, path func(trace.PathID) string) []byte {
	return (*Encoder)(nil).AppendEvent(b, e, path)
}

// Encoder writes the JSON objects of events, keeping the text of the flag
// values it met. The zero Encoder is ready to use.
type Encoder struct {
	flags map[flagKey]string // formatted flags, per op class and value
}

type flagKey struct {
	op    trace.Op
	flags uint32
}

// AppendEvent is the package's AppendEvent, with the flags' text kept.
func (w *Encoder) AppendEvent(b []byte, e *trace.Event, path func(trace.PathID) string) []byte {
	marker := e.Op.Class() == trace.ClassMarker
	b = append(b, `{"rank":`...)
	b = strconv.AppendUint(b, uint64(e.Rank), 10)
	if e.Thread != 0 {
		b = append(b, `,"thread":`...)
		b = strconv.AppendUint(b, uint64(e.Thread), 10)
	}
	b = append(b, `,"op":`...)
	if e.Op.Known() {
		b = append(b, '"')
		b = append(b, e.Op.Info().Name...) // call names need no escaping
		b = append(b, '"')
	} else {
		b = append(b, `"op#`...)
		b = strconv.AppendUint(b, uint64(e.Op), 10)
		b = append(b, '"')
	}
	if e.Path != 0 {
		if marker {
			b = append(b, `,"label":`...)
		} else {
			b = append(b, `,"path":`...)
		}
		b = AppendString(b, path(e.Path))
	}
	if e.Path2 != 0 {
		b = append(b, `,"path2":`...)
		b = AppendString(b, path(e.Path2))
	}
	if e.FD != 0 {
		b = append(b, `,"fd":`...)
		b = strconv.AppendInt(b, int64(e.FD), 10)
	}
	if e.Offset != 0 {
		b = append(b, `,"offset":`...)
		b = strconv.AppendInt(b, e.Offset, 10)
	}
	if e.Size != 0 {
		b = append(b, `,"size":`...)
		b = strconv.AppendInt(b, e.Size, 10)
	}
	if !marker || e.Ret != 0 {
		b = append(b, `,"ret":`...)
		b = strconv.AppendInt(b, e.Ret, 10)
		if e.Ret < 0 && e.Ret >= -maxErrno {
			b = append(b, `,"errno":"`...)
			b = append(b, trace.Errno(e.Ret)...) // E[A-Z0-9]+: no escaping
			b = append(b, '"')
		}
	}
	src, rtag, half := e.RecvFrom()
	if flags := e.Flags; flags != 0 {
		if e.Op == trace.OpMPISendrecv {
			flags &^= trace.RecvHalf // "source" says it
		}
		if flags != 0 {
			b = append(b, `,"flags":`...)
			b = AppendString(b, w.formatFlags(e.Op, flags))
		}
	}
	if e.Mode != 0 {
		b = append(b, `,"mode":"0`...)
		b = strconv.AppendUint(b, uint64(e.Mode), 8)
		b = append(b, '"')
	}
	if e.Whence != 0 {
		b = append(b, `,"whence":`...)
		b = AppendString(b, trace.WhenceName(e.Whence))
	}
	if e.Peer != 0 {
		b = append(b, `,"peer":`...)
		b = strconv.AppendInt(b, int64(e.Peer), 10)
	}
	if e.Tag != 0 {
		b = append(b, `,"tag":`...)
		b = strconv.AppendInt(b, int64(e.Tag), 10)
	}
	if half {
		b = append(b, `,"source":`...)
		b = strconv.AppendInt(b, int64(src), 10)
		b = append(b, `,"recv_tag":`...)
		b = strconv.AppendInt(b, int64(rtag), 10)
	}
	if e.Comm != 0 {
		b = append(b, `,"comm":`...)
		b = strconv.AppendUint(b, uint64(e.Comm), 10)
	}
	if e.Bytes != 0 {
		b = append(b, `,"bytes":`...)
		b = strconv.AppendInt(b, e.Bytes, 10)
	}
	if e.Count != 0 {
		b = append(b, `,"count":`...)
		b = strconv.AppendInt(b, int64(e.Count), 10)
	}
	if e.Stride != 0 {
		b = append(b, `,"stride":`...)
		b = strconv.AppendInt(b, e.Stride, 10)
	}
	if e.FD2 != 0 {
		b = append(b, `,"fd2":`...)
		b = strconv.AppendInt(b, int64(e.FD2), 10)
	}
	if e.Offset2 != 0 {
		b = append(b, `,"offset2":`...)
		b = strconv.AppendInt(b, e.Offset2, 10)
	}
	b = append(b, `,"start_ns":`...)
	b = strconv.AppendInt(b, e.Start, 10)
	b = append(b, `,"dur_ns":`...)
	b = strconv.AppendInt(b, e.Dur, 10)
	return append(b, '}')
}

// formatFlags is trace.FormatFlags with a cache: a trace has few distinct
// flag values.
func (w *Encoder) formatFlags(op trace.Op, f uint32) string {
	if w == nil {
		return trace.FormatFlags(op, f)
	}
	// FormatFlags depends only on the op's class and family.
	k := flagKey{flags: f}
	switch {
	case op.Class() == trace.ClassMPIIO:
		k.op = trace.OpMPIFileOpen
	case op.Known() && op.Info().Family == "open":
		k.op = trace.OpOpen
	}
	if s, ok := w.flags[k]; ok {
		return s
	}
	s := trace.FormatFlags(op, f)
	if w.flags == nil {
		w.flags = map[flagKey]string{}
	}
	if len(w.flags) < cacheLimit {
		w.flags[k] = s
	}
	return s
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string. Bytes that are not UTF-8 are
// written as the escapes \udc80–\udcff (a lone low surrogate carrying the
// byte, as Python's "surrogateescape" does), which a Reader turns back into
// the same bytes, so that any path survives a round trip. Other JSON
// readers see U+FFFD there.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\t':
				b = append(b, '\\', 't')
			case '\r':
				b = append(b, '\\', 'r')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', 'd', 'c', hexDigits[c>>4], hexDigits[c&15])
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
