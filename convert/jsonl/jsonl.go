// Package jsonl reads and writes traces as JSON lines: one JSON object per
// event, the form `iotrace dump --format jsonl` prints and `iotrace convert
// --from jsonl` reads, so that any tool can produce or consume a trace. The
// schema is in docs/FORMAT.md ("JSON lines").
package jsonl

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/iotrace/iotrace/trace"
)

// Writer writes events as JSON lines.
type Writer struct {
	w   *bufio.Writer
	buf []byte
}

// NewWriter returns a Writer on w. Call Flush at the end.
func NewWriter(w io.Writer) *Writer { return &Writer{w: bufio.NewWriterSize(w, 64<<10)} }

// Write writes one event; path resolves its path ids.
func (w *Writer) Write(e *trace.Event, path func(trace.PathID) string) error {
	w.buf = AppendEvent(w.buf[:0], e, path)
	w.buf = append(w.buf, '\n')
	_, err := w.w.Write(w.buf)
	return err
}

// Flush writes buffered lines.
func (w *Writer) Flush() error { return w.w.Flush() }

// AppendEvent appends the JSON object of e (without a newline). Fields that
// are zero are left out, except rank, op, start_ns, dur_ns and, for calls
// (not markers), ret.
func AppendEvent(b []byte, e *trace.Event, path func(trace.PathID) string) []byte {
	info := e.Op.Info()
	marker := info.Class == trace.ClassMarker
	b = append(b, `{"rank":`...)
	b = strconv.AppendUint(b, uint64(e.Rank), 10)
	if e.Thread != 0 {
		b = append(b, `,"thread":`...)
		b = strconv.AppendUint(b, uint64(e.Thread), 10)
	}
	b = append(b, `,"op":`...)
	b = appendString(b, info.Name)
	if e.Path != 0 {
		if marker {
			b = append(b, `,"label":`...)
		} else {
			b = append(b, `,"path":`...)
		}
		b = appendString(b, path(e.Path))
	}
	if e.Path2 != 0 {
		b = append(b, `,"path2":`...)
		b = appendString(b, path(e.Path2))
	}
	intField := func(name string, v int64) {
		if v != 0 {
			b = append(b, `,"`...)
			b = append(b, name...)
			b = append(b, `":`...)
			b = strconv.AppendInt(b, v, 10)
		}
	}
	intField("fd", int64(e.FD))
	intField("offset", e.Offset)
	intField("size", e.Size)
	if !marker {
		b = append(b, `,"ret":`...)
		b = strconv.AppendInt(b, e.Ret, 10)
		if e.Ret < 0 {
			b = append(b, `,"errno":`...)
			b = appendString(b, trace.Errno(e.Ret))
		}
	}
	if e.Flags != 0 {
		b = append(b, `,"flags":`...)
		b = appendString(b, trace.FormatFlags(e.Op, e.Flags))
	}
	if e.Mode != 0 {
		b = append(b, `,"mode":"0`...)
		b = strconv.AppendUint(b, uint64(e.Mode), 8)
		b = append(b, '"')
	}
	if e.Whence != 0 {
		b = append(b, `,"whence":`...)
		b = appendString(b, trace.WhenceName(e.Whence))
	}
	intField("peer", int64(e.Peer))
	intField("tag", int64(e.Tag))
	intField("comm", int64(e.Comm))
	intField("bytes", e.Bytes)
	intField("count", int64(e.Count))
	intField("stride", e.Stride)
	b = append(b, `,"start_ns":`...)
	b = strconv.AppendInt(b, e.Start, 10)
	b = append(b, `,"dur_ns":`...)
	b = strconv.AppendInt(b, e.Dur, 10)
	return append(b, '}')
}

// appendString appends s as a JSON string. Bytes that are not UTF-8 become
// U+FFFD, as in encoding/json.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, `\u00`...)
				b = append(b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// MaxLine is the longest line a Reader accepts.
const MaxLine = 1 << 20

// Reader reads events from JSON lines. It implements trace.Source; each
// event carries its Rank, so one stream holds every rank.
type Reader struct {
	r     *bufio.Reader
	name  string
	lineN int
	paths *trace.Paths
	err   error
}

// NewReader returns a Reader of r; name appears in errors.
func NewReader(r io.Reader, name string) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 64<<10), name: name, paths: trace.NewPaths()}
}

// Path implements trace.Source.
func (r *Reader) Path(id trace.PathID) string { return r.paths.Lookup(id) }

// Line is the number of the last line read.
func (r *Reader) Line() int { return r.lineN }

// ReadEvents implements trace.Source. Errors name the file and line:
// "in.jsonl:17: unknown field "sise"".
func (r *Reader) ReadEvents(evs []trace.Event) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n := 0
	for n < len(evs) {
		raw, err := r.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && n > 0 {
				r.err = io.EOF
				return n, nil
			}
			r.err = err
			return n, err
		}
		t := bytes.TrimSpace(raw)
		if len(t) == 0 || t[0] == '#' {
			continue
		}
		if err := r.parse(t, &evs[n]); err != nil {
			r.err = fmt.Errorf("%s:%d: %v", r.name, r.lineN, err)
			return n, r.err
		}
		n++
	}
	return n, nil
}

func (r *Reader) readLine() ([]byte, error) {
	r.lineN++
	var long []byte
	for {
		b, err := r.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, b...)
			if len(long) > MaxLine {
				return nil, fmt.Errorf("%s:%d: line longer than %d bytes", r.name, r.lineN, MaxLine)
			}
			continue
		}
		if long != nil {
			b = append(long, b...)
			if len(b) > MaxLine {
				return nil, fmt.Errorf("%s:%d: line longer than %d bytes", r.name, r.lineN, MaxLine)
			}
		}
		if errors.Is(err, io.EOF) {
			if len(b) == 0 {
				return nil, io.EOF
			}
			return b, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.name, err)
		}
		return b, nil
	}
}

// fields lists the JSON-lines fields; a bit each, to find duplicates.
var fields = map[string]uint32{}

func init() {
	for i, f := range []string{"rank", "thread", "op", "path", "path2", "label", "fd", "offset", "size", "ret", "errno",
		"flags", "mode", "whence", "peer", "tag", "comm", "bytes", "count", "stride", "start_ns", "dur_ns"} {
		fields[f] = 1 << i
	}
}

func (r *Reader) parse(b []byte, e *trace.Event) error {
	*e = trace.Event{}
	var seen uint32
	var opName, errnoName, label, path, path2 *string
	var ret *int64
	err := scanObject(b, func(key string, v value) error {
		bit, ok := fields[key]
		if !ok {
			return fmt.Errorf("unknown field %q", key)
		}
		if seen&bit != 0 {
			return fmt.Errorf("field %q given twice", key)
		}
		seen |= bit
		str := func() (*string, error) {
			if !v.isStr {
				return nil, fmt.Errorf("field %q: want a string, got a number", key)
			}
			s := v.str
			return &s, nil
		}
		num := func(lo, hi int64) (int64, error) {
			if v.isStr {
				return 0, fmt.Errorf("field %q: want an integer, got a string", key)
			}
			if v.num < lo || v.num > hi {
				return 0, fmt.Errorf("field %q: %d out of range", key, v.num)
			}
			return v.num, nil
		}
		var err error
		var n int64
		const i32, u32, i64 = 1<<31 - 1, 1<<32 - 1, 1<<63 - 1
		switch key {
		case "op":
			opName, err = str()
		case "errno":
			errnoName, err = str()
		case "label":
			label, err = str()
		case "path":
			path, err = str()
		case "path2":
			path2, err = str()
		case "rank":
			n, err = num(0, u32)
			e.Rank = uint32(n)
		case "thread":
			n, err = num(0, u32)
			e.Thread = uint32(n)
		case "fd":
			n, err = num(-i32-1, i32)
			e.FD = int32(n)
		case "peer":
			n, err = num(-i32-1, i32)
			e.Peer = int32(n)
		case "tag":
			n, err = num(-i32-1, i32)
			e.Tag = int32(n)
		case "comm":
			n, err = num(0, u32)
			e.Comm = uint32(n)
		case "count":
			n, err = num(-i32-1, i32)
			e.Count = int32(n)
		case "offset":
			e.Offset, err = num(-i64-1, i64)
		case "size":
			e.Size, err = num(0, i64)
			if err != nil && !v.isStr {
				err = fmt.Errorf("field \"size\": negative (%d)", v.num)
			}
		case "ret":
			e.Ret, err = num(-i64-1, i64)
			ret = &e.Ret
		case "bytes":
			e.Bytes, err = num(-i64-1, i64)
		case "stride":
			e.Stride, err = num(-i64-1, i64)
		case "start_ns":
			e.Start, err = num(-i64-1, i64)
		case "dur_ns":
			e.Dur, err = num(0, i64)
			if err != nil && !v.isStr {
				err = fmt.Errorf("field \"dur_ns\": negative (%d)", v.num)
			}
		case "flags":
			if v.isStr {
				e.Flags, err = trace.ParseFlags(v.str)
			} else {
				n, err = num(0, u32)
				e.Flags = uint32(n)
			}
		case "mode":
			if v.isStr {
				m, perr := strconv.ParseUint(v.str, 8, 32)
				if perr != nil {
					err = fmt.Errorf("%q is not an octal mode", v.str)
				}
				e.Mode = uint32(m)
			} else {
				n, err = num(0, u32)
				e.Mode = uint32(n)
			}
		case "whence":
			if v.isStr {
				e.Whence, err = trace.ParseWhence(v.str)
			} else {
				n, err = num(-i32-1, i32)
				e.Whence = int32(n)
			}
		}
		if err != nil && !strings.HasPrefix(err.Error(), "field ") {
			err = fmt.Errorf("field %q: %v", key, err)
		}
		return err
	})
	if err != nil {
		return err
	}
	if opName == nil {
		return errors.New(`missing field "op"`)
	}
	if seen&fields["rank"] == 0 {
		return errors.New(`missing field "rank"`)
	}
	op, ok := trace.ParseOp(*opName)
	if !ok {
		return fmt.Errorf("unknown op %q", *opName)
	}
	e.Op = op
	if errnoName != nil {
		v, ok := trace.ParseErrno(*errnoName)
		if !ok {
			return fmt.Errorf("unknown errno %q", *errnoName)
		}
		if ret != nil && *ret != -v {
			return fmt.Errorf(`"errno" %s (%d) disagrees with "ret" %d`, *errnoName, v, *ret)
		}
		e.Ret = -v
	}
	if label != nil && path != nil {
		return errors.New(`both "label" and "path"`)
	}
	if label != nil {
		if op.Info().Class != trace.ClassMarker {
			return fmt.Errorf(`"label" on %s, which is not a marker`, op)
		}
		e.Path = r.paths.Intern(*label)
	}
	if path != nil {
		e.Path = r.paths.Intern(*path)
	}
	if path2 != nil {
		e.Path2 = r.paths.Intern(*path2)
	}
	return nil
}
