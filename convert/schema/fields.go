// Package schema is the field schema of an event as JSON lines and CSV
// write it (docs/FORMAT.md, "JSON lines"): the fields, their names and
// types, the JSON object of an event (AppendEvent), and a Builder that
// makes an event from field values, checking each. convert/jsonl,
// convert/csv and convert/chrome share it.
package schema

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/iotrace/iotrace/convert/internal/textutil"
	"github.com/iotrace/iotrace/trace"
)

// Field is one field of the schema (docs/FORMAT.md, "JSON lines").
type Field uint8

// The fields, in the order the Writer puts them on a line.
const (
	FieldRank Field = iota
	FieldThread
	FieldOp
	FieldPath
	FieldPath2
	FieldLabel
	FieldFD
	FieldOffset
	FieldSize
	FieldRet
	FieldErrno
	FieldFlags
	FieldMode
	FieldWhence
	FieldPeer
	FieldTag
	FieldSource
	FieldRecvTag
	FieldComm
	FieldBytes
	FieldCount
	FieldStride
	FieldFD2
	FieldOffset2
	FieldStart
	FieldDur
	NumFields // the number of fields
)

// Kind is the JSON type a field takes.
type Kind uint8

const (
	KindInt    Kind = iota + 1 // a JSON integer
	KindString                 // a JSON string
	KindEither                 // a string (names, octal) or an integer
)

var fieldInfo = [NumFields]struct {
	name   string
	kind   Kind
	lo, hi int64 // range of an integer value
}{
	FieldRank:    {"rank", KindInt, 0, maxU32},
	FieldThread:  {"thread", KindInt, 0, maxU32},
	FieldOp:      {"op", KindString, 0, 0},
	FieldPath:    {"path", KindString, 0, 0},
	FieldPath2:   {"path2", KindString, 0, 0},
	FieldLabel:   {"label", KindString, 0, 0},
	FieldFD:      {"fd", KindInt, minI32, maxI32},
	FieldOffset:  {"offset", KindInt, minI64, maxI64},
	FieldSize:    {"size", KindInt, 0, maxI64},
	FieldRet:     {"ret", KindInt, minI64, maxI64},
	FieldErrno:   {"errno", KindString, 0, 0},
	FieldFlags:   {"flags", KindEither, 0, maxU32},
	FieldMode:    {"mode", KindEither, 0, maxU32},
	FieldWhence:  {"whence", KindEither, minI32, maxI32},
	FieldPeer:    {"peer", KindInt, minI32, maxI32},
	FieldTag:     {"tag", KindInt, minI32, maxI32},
	FieldSource:  {"source", KindInt, minI32, maxI32},
	FieldRecvTag: {"recv_tag", KindInt, minI32, maxI32},
	FieldComm:    {"comm", KindInt, 0, maxU32},
	FieldBytes:   {"bytes", KindInt, 0, maxI64},
	FieldCount:   {"count", KindInt, minI32, maxI32},
	FieldStride:  {"stride", KindInt, minI64, maxI64},
	FieldFD2:     {"fd2", KindInt, minI32, maxI32},
	FieldOffset2: {"offset2", KindInt, minI64, maxI64},
	FieldStart:   {"start_ns", KindInt, minI64, maxI64},
	FieldDur:     {"dur_ns", KindInt, 0, maxI64},
}

const (
	maxU32 = 1<<32 - 1
	minI32 = -1 << 31
	maxI32 = 1<<31 - 1
	minI64 = -1 << 63
	maxI64 = 1<<63 - 1
)

// fieldByName is read-only after package initialisation.
var fieldByName = func() map[string]Field {
	m := make(map[string]Field, NumFields)
	for f := Field(0); f < NumFields; f++ {
		m[fieldInfo[f].name] = f
	}
	return m
}()

// String returns the field's name as it appears in JSON ("start_ns").
func (f Field) String() string {
	if f < NumFields {
		return fieldInfo[f].name
	}
	return "field#" + strconv.Itoa(int(f))
}

// Kind returns the JSON type the field takes.
func (f Field) Kind() Kind {
	if f < NumFields {
		return fieldInfo[f].kind
	}
	return 0
}

// LookupField returns the field called name.
func LookupField(name string) (Field, bool) {
	f, ok := fieldByName[name]
	return f, ok
}

// lookupField is LookupField on bytes, without allocating. A switch is
// twice as fast as the map on the hot path of the Reader.
// LookupBytes is LookupField of a name in bytes, without allocating.
func LookupBytes(name []byte) (Field, bool) {
	switch string(name) {
	case "rank":
		return FieldRank, true
	case "thread":
		return FieldThread, true
	case "op":
		return FieldOp, true
	case "path":
		return FieldPath, true
	case "path2":
		return FieldPath2, true
	case "label":
		return FieldLabel, true
	case "fd":
		return FieldFD, true
	case "offset":
		return FieldOffset, true
	case "size":
		return FieldSize, true
	case "ret":
		return FieldRet, true
	case "errno":
		return FieldErrno, true
	case "flags":
		return FieldFlags, true
	case "mode":
		return FieldMode, true
	case "whence":
		return FieldWhence, true
	case "peer":
		return FieldPeer, true
	case "tag":
		return FieldTag, true
	case "source":
		return FieldSource, true
	case "recv_tag":
		return FieldRecvTag, true
	case "comm":
		return FieldComm, true
	case "bytes":
		return FieldBytes, true
	case "count":
		return FieldCount, true
	case "stride":
		return FieldStride, true
	case "fd2":
		return FieldFD2, true
	case "offset2":
		return FieldOffset2, true
	case "start_ns":
		return FieldStart, true
	case "dur_ns":
		return FieldDur, true
	}
	return 0, false
}

// maxErrno is the largest value a negative ret is an errno of (Linux's
// MAX_ERRNO); results below -maxErrno are written without an errno name.
const maxErrno = 4095

// cacheLimit bounds the per-reader caches of op and flag spellings, so
// that a hostile input cannot grow them without end.
const cacheLimit = 4096

// Builder assembles events from schema fields, one field at a time, and
// applies the schema's rules: types and ranges, no field twice, rank and
// op required, errno agreeing with ret, labels only on markers. The
// JSON-lines Reader uses one; other readers of the same fields (CSV) use
// it so that they accept exactly the same events.
//
// A Builder interns paths and labels in its own table (Paths). It is not
// safe for concurrent use.
type Builder struct {
	paths   *trace.Paths
	pathIDs map[string]trace.PathID // the table, for lookups without allocating
	ops     map[string]trace.Op
	flags   map[string]uint32

	e                  *trace.Event
	seen               uint32
	path, path2, label []byte
	errno              int64
	errnoName          []byte
}

// NewBuilder returns a Builder with an empty path table.
func NewBuilder() *Builder {
	return &Builder{
		paths:   trace.NewPaths(),
		pathIDs: map[string]trace.PathID{},
		ops:     map[string]trace.Op{},
		flags:   map[string]uint32{},
	}
}

// Paths returns the table the built events' path ids refer to.
func (b *Builder) Paths() *trace.Paths { return b.paths }

// Begin starts a new event in e, which it zeroes.
func (b *Builder) Begin(e *trace.Event) {
	*e = trace.Event{}
	b.e = e
	b.seen = 0
	b.path, b.path2, b.label, b.errnoName = nil, nil, nil, nil
	b.errno = 0
}

func (b *Builder) mark(f Field) error {
	if f >= NumFields {
		return fmt.Errorf("no field %d", f)
	}
	bit := uint32(1) << f
	if b.seen&bit != 0 {
		return fmt.Errorf("field %q given twice", f)
	}
	b.seen |= bit
	return nil
}

// SetInt sets f to the integer v.
func (b *Builder) SetInt(f Field, v int64) error {
	if err := b.mark(f); err != nil {
		return err
	}
	info := &fieldInfo[f]
	if info.kind == KindString {
		return fmt.Errorf("field %q: want a string, got a number", f)
	}
	if v < info.lo || v > info.hi {
		if v < 0 && info.lo == 0 {
			return fmt.Errorf("field %q: negative (%d)", f, v)
		}
		return fmt.Errorf("field %q: %d out of range", f, v)
	}
	e := b.e
	switch f {
	case FieldRank:
		e.Rank = uint32(v)
	case FieldThread:
		e.Thread = uint32(v)
	case FieldFD:
		e.FD = int32(v)
	case FieldOffset:
		e.Offset = v
	case FieldSize:
		e.Size = v
	case FieldRet:
		e.Ret = v
	case FieldFlags:
		e.Flags = uint32(v)
	case FieldMode:
		e.Mode = uint32(v)
	case FieldWhence:
		e.Whence = int32(v)
	case FieldPeer:
		e.Peer = int32(v)
	case FieldTag:
		e.Tag = int32(v)
	case FieldSource:
		e.Source = int32(v)
	case FieldRecvTag:
		e.RecvTag = int32(v)
	case FieldComm:
		e.Comm = uint32(v)
	case FieldBytes:
		e.Bytes = v
	case FieldCount:
		e.Count = int32(v)
	case FieldStride:
		e.Stride = v
	case FieldFD2:
		e.FD2 = int32(v)
	case FieldOffset2:
		e.Offset2 = v
	case FieldStart:
		e.Start = v
	case FieldDur:
		e.Dur = v
	}
	return nil
}

// SetString sets f to the string s. s must stay unchanged until End.
func (b *Builder) SetString(f Field, s []byte) error {
	if err := b.mark(f); err != nil {
		return err
	}
	e := b.e
	switch f {
	case FieldOp:
		op, ok := b.ops[string(s)]
		if !ok {
			op, ok = trace.ParseOp(string(s))
			if !ok {
				return fmt.Errorf("unknown op %q", s)
			}
			if len(b.ops) < cacheLimit {
				b.ops[string(s)] = op
			}
		}
		e.Op = op
	case FieldPath, FieldPath2, FieldLabel:
		if err := textutil.CheckPath(len(s)); err != nil {
			return fmt.Errorf("field %q: %v", f, err)
		}
		switch f {
		case FieldPath:
			b.path = s
		case FieldPath2:
			b.path2 = s
		default:
			b.label = s
		}
	case FieldErrno:
		v, ok := parseErrno(s)
		if !ok {
			return fmt.Errorf("unknown errno %q", s)
		}
		b.errno, b.errnoName = v, s
	case FieldFlags:
		v, ok := b.flags[string(s)]
		if !ok {
			var err error
			v, err = trace.ParseFlags(string(s))
			if err != nil {
				return fmt.Errorf("field %q: %v", f, err)
			}
			if len(b.flags) < cacheLimit {
				b.flags[string(s)] = v
			}
		}
		e.Flags = v
	case FieldMode:
		v, ok := parseOctal(s)
		if !ok {
			return fmt.Errorf("field %q: %q is not an octal mode", f, s)
		}
		e.Mode = v
	case FieldWhence:
		for w := int32(0); w <= 4; w++ {
			if string(s) == trace.WhenceName(w) {
				e.Whence = w
				return nil
			}
		}
		v, err := trace.ParseWhence(string(s))
		if err != nil {
			return fmt.Errorf("field %q: %v", f, err)
		}
		e.Whence = v
	default:
		return fmt.Errorf("field %q: want an integer, got a string", f)
	}
	return nil
}

// parseOctal reads a non-empty string of octal digits that fits in 32
// bits.
func parseOctal(s []byte) (uint32, bool) {
	if len(s) == 0 {
		return 0, false
	}
	var v uint64
	for _, c := range s {
		if c < '0' || c > '7' {
			return 0, false
		}
		v = v<<3 | uint64(c-'0')
		if v > maxU32 {
			return 0, false
		}
	}
	return uint32(v), true
}

// parseErrno reads an errno name ("ENOENT") or "E<n>", the form
// trace.Errno gives a number without a name, and returns its positive
// value.
func parseErrno(s []byte) (int64, bool) {
	if v, ok := trace.ParseErrno(string(s)); ok {
		return v, true
	}
	if len(s) < 2 || len(s) > 5 || s[0] != 'E' || s[1] == '0' {
		return 0, false
	}
	var v int64
	for _, c := range s[1:] {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, v >= 1 && v <= maxErrno
}

// Has reports whether f was set since Begin.
func (b *Builder) Has(f Field) bool { return f < NumFields && b.seen&(1<<f) != 0 }

// End checks the event begun by Begin and resolves its paths.
func (b *Builder) End() error {
	e := b.e
	if !b.Has(FieldOp) {
		return errors.New(`missing field "op"`)
	}
	if !b.Has(FieldRank) {
		return errors.New(`missing field "rank"`)
	}
	if b.Has(FieldErrno) {
		if b.Has(FieldRet) && e.Ret != -b.errno {
			return fmt.Errorf(`"errno" %s (%d) disagrees with "ret" %d`, b.errnoName, b.errno, e.Ret)
		}
		e.Ret = -b.errno
	}
	if e.Op == trace.OpMPISendrecv {
		// Its receive half is known exactly when "source" is given:
		// flag RecvHalf follows it (rank 0 is a source, not "unknown").
		e.Flags &^= trace.RecvHalf
		if b.Has(FieldSource) {
			e.Flags |= trace.RecvHalf
		} else if b.Has(FieldRecvTag) {
			return errors.New(`"recv_tag" without "source"`)
		}
	} else if b.Has(FieldSource) || b.Has(FieldRecvTag) {
		f := FieldSource
		if !b.Has(f) {
			f = FieldRecvTag
		}
		return fmt.Errorf("%q on %s, which has no receive half (only MPI_Sendrecv has)", f, e.Op)
	}
	if b.Has(FieldLabel) {
		if b.Has(FieldPath) {
			return errors.New(`both "label" and "path": a marker's label is its path`)
		}
		if e.Op.Class() != trace.ClassMarker {
			return fmt.Errorf(`"label" on %s, which is not a marker (use "path")`, e.Op)
		}
		e.Path = b.intern(b.label)
	}
	if b.Has(FieldPath) {
		e.Path = b.intern(b.path)
	}
	if b.Has(FieldPath2) {
		e.Path2 = b.intern(b.path2)
	}
	return nil
}

func (b *Builder) intern(s []byte) trace.PathID {
	if id, ok := b.pathIDs[string(s)]; ok {
		return id
	}
	str := string(s)
	id := b.paths.Intern(str)
	b.pathIDs[str] = id
	return id
}

// LineError is an error in one line of the input: the error of every
// text importer.
type LineError = textutil.LineError
