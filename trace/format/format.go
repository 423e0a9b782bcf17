// Package format reads and writes iotrace's binary trace container, the
// byte layout of which docs/FORMAT.md documents.
//
// A file is a header followed by blocks and, when the writer finished, an
// index block and a 16-byte trailer. Every block carries its own length and
// CRC-32C, so a reader recovers every complete block of a file cut at any
// byte, reports a damaged block with its file offset, and (with Salvage)
// reads past it. Events travel in per-rank blocks: column-wise,
// delta/varint-encoded and zstd-compressed.
package format

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sort"

	"github.com/iotrace/iotrace/trace"
)

// Magic opens every trace file. Like PNG's signature it catches files
// mangled by text-mode transfers.
const Magic = "\x89IOT\r\n\x1a\n"

// Version is the container version this package writes. A reader accepts
// files of the same major version; everything added later within it
// (block kinds, columns, header fields, ops) is skippable.
const Version = 1

const (
	fileHeaderLen  = 16 // magic, version, flags, body length
	blockHeaderLen = 16 // magic, kind, flags, reserved, length, crc
	trailerLen     = 16 // trailer magic, index offset
	blockMagic     = "IOBK"
	trailerMagic   = "IOTINDEX"
	maxBlockLen    = 1 << 30 // sanity bound on a block's payload
	maxHeaderLen   = 1 << 24
	// MaxBlockEvents bounds the events of one block, for writers and readers.
	MaxBlockEvents = 1 << 20
)

// Block kinds.
const (
	kindRankInfo = 1
	kindStrings  = 2
	kindEvents   = 3
	kindIndex    = 4
	kindReplay   = 5 // how the replay of a rank went (a replay's own trace)
)

// Header field ids (the header body and rank-info blocks are lists of
// id/length/value fields; unknown ids are skipped).
const (
	fieldCommand = 1 // one field per argument
	fieldHost    = 2 // one field per host
	fieldClock   = 3
	fieldEpoch   = 4 // signed varint, ns since the Unix epoch
	fieldRanks   = 5 // uvarint
	fieldCreator = 6
	fieldPID     = 7 // rank-info only: uvarint process id
	// 8-10: the clock (rank info, clock.go)
	fieldCorrected = 11 // header: how the times were corrected for the recorder's cost
	// 12: the recorder's cost (rank info, cost.go)
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc(b ...[]byte) uint32 {
	var c uint32
	for _, p := range b {
		c = crc32.Update(c, castagnoli, p)
	}
	return c
}

// ErrFormat matches (errors.Is) every error about a malformed file: it
// is trace.ErrMalformed, which consumers that do not read the container
// themselves test for.
var ErrFormat = trace.ErrMalformed

// FormatError is an error about a malformed file: what is wrong, and
// where (Offset is -1 when the error is about the file as a whole).
type FormatError struct {
	File   string
	Offset int64
	Msg    string
}

func (e *FormatError) Error() string {
	if e.Offset < 0 {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("%s: offset %d: %s", e.File, e.Offset, e.Msg)
}

// Is makes errors.Is(err, ErrFormat) hold for every FormatError.
func (e *FormatError) Is(target error) bool { return target == ErrFormat }

// formatError is an error at a byte offset of a file (-1: the whole file).
func formatError(name string, off int64, format string, args ...any) error {
	return &FormatError{File: name, Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// ---- field lists ----

type fields []byte

func (f *fields) bytes(id uint64, v []byte) {
	*f = binary.AppendUvarint(*f, id)
	*f = binary.AppendUvarint(*f, uint64(len(v)))
	*f = append(*f, v...)
}

func (f *fields) str(id uint64, s string) { f.bytes(id, []byte(s)) }

func (f *fields) varint(id uint64, v int64) { f.bytes(id, binary.AppendVarint(nil, v)) }

func (f *fields) uvarint(id uint64, v uint64) { f.bytes(id, binary.AppendUvarint(nil, v)) }

// eachField calls fn for every field of b.
func eachField(b []byte, fn func(id uint64, v []byte) error) error {
	for len(b) > 0 {
		id, n := binary.Uvarint(b)
		if n <= 0 {
			return errors.New("bad field id")
		}
		b = b[n:]
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return errors.New("bad field length")
		}
		b = b[n:]
		if err := fn(id, b[:l]); err != nil {
			return err
		}
		b = b[l:]
	}
	return nil
}

func fieldVarint(v []byte) (int64, error) {
	x, n := binary.Varint(v)
	if n <= 0 || n != len(v) {
		return 0, errors.New("bad varint field")
	}
	return x, nil
}

func fieldUvarint(v []byte) (uint64, error) {
	x, n := binary.Uvarint(v)
	if n <= 0 || n != len(v) {
		return 0, errors.New("bad uvarint field")
	}
	return x, nil
}

func encodeMeta(m trace.Meta) []byte {
	var f fields
	for _, a := range m.Command {
		f.str(fieldCommand, a)
	}
	for _, h := range m.Hosts {
		f.str(fieldHost, h)
	}
	if m.Clock != "" {
		f.str(fieldClock, m.Clock)
	}
	f.varint(fieldEpoch, m.Epoch)
	if m.Ranks > 0 {
		f.uvarint(fieldRanks, uint64(m.Ranks))
	}
	if m.Creator != "" {
		f.str(fieldCreator, m.Creator)
	}
	if m.Corrected != "" {
		f.str(fieldCorrected, m.Corrected)
	}
	return f
}

func decodeMeta(b []byte) (trace.Meta, error) {
	var m trace.Meta
	err := eachField(b, func(id uint64, v []byte) error {
		switch id {
		case fieldCommand:
			m.Command = append(m.Command, string(v))
		case fieldHost:
			m.Hosts = append(m.Hosts, string(v))
		case fieldClock:
			m.Clock = string(v)
		case fieldEpoch:
			x, err := fieldVarint(v)
			if err != nil {
				return err
			}
			m.Epoch = x
		case fieldRanks:
			x, err := fieldUvarint(v)
			if err != nil {
				return err
			}
			if x > trace.MaxRanks {
				return errors.New("rank count out of range")
			}
			m.Ranks = int(x)
		case fieldCreator:
			m.Creator = string(v)
		case fieldCorrected:
			m.Corrected = string(v)
		}
		return nil
	})
	return m, err
}

// ---- event block summary ----

// OpTotal is the number of calls of one op in a block or rank, and the bytes
// they moved (data ops: bytes transferred; communication: bytes sent).
type OpTotal struct {
	Op    trace.Op
	Count int64
	Bytes int64
}

// BlockInfo describes one block of a file, as the index lists it.
type BlockInfo struct {
	Offset int64 // file offset of the block header
	Length int64 // payload length
	Kind   uint8
	Rank   uint32
	// Events blocks only:
	Events int64
	MinT   int64 // earliest start, ns from the file's (or rank's) epoch
	MaxT   int64 // latest end
	Ops    []OpTotal
}

func appendSummary(b []byte, rank uint32, n int64, minT, maxT int64, ops []OpTotal) []byte {
	b = binary.AppendUvarint(b, uint64(rank))
	b = binary.AppendUvarint(b, uint64(n))
	b = binary.AppendVarint(b, minT)
	b = binary.AppendUvarint(b, uint64(maxT-minT))
	b = binary.AppendUvarint(b, uint64(len(ops)))
	for _, o := range ops {
		b = binary.AppendUvarint(b, uint64(o.Op))
		b = binary.AppendUvarint(b, uint64(o.Count))
		b = binary.AppendVarint(b, o.Bytes)
	}
	return b
}

// decoder reads varints from a byte slice and remembers the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errors.New("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errors.New("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return x
}

// count reads a uvarint that counts items of at least minSize bytes each
// still to come, and rejects counts the remaining bytes cannot hold.
func (d *decoder) count(minSize int) int {
	x := d.uvarint()
	if d.err == nil && x > uint64(len(d.b)/minSize) {
		d.err = errors.New("count exceeds the block")
		return 0
	}
	return int(x)
}

func (d *decoder) bytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = errors.New("length exceeds the block")
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

// readSummary decodes the summary at the start of an events payload.
func readSummary(d *decoder, bi *BlockInfo) {
	r := d.uvarint()
	if r > 1<<32-1 {
		d.err = errors.New("rank out of range")
	}
	bi.Rank = uint32(r)
	bi.Events = int64(d.uvarint())
	if bi.Events < 0 || bi.Events > MaxBlockEvents {
		d.err = errors.New("event count out of range")
	}
	bi.MinT = d.varint()
	bi.MaxT = bi.MinT + int64(d.uvarint())
	nops := d.count(3)
	bi.Ops = make([]OpTotal, 0, nops)
	for i := 0; i < nops && d.err == nil; i++ {
		op := d.uvarint()
		if op > 0xffff {
			d.err = errors.New("op out of range")
		}
		bi.Ops = append(bi.Ops, OpTotal{Op: trace.Op(op), Count: int64(d.uvarint()), Bytes: d.varint()})
	}
}

// addOps merges b into a (sorted by op).
func addOps(a []OpTotal, b []OpTotal) []OpTotal {
	for _, o := range b {
		i := sort.Search(len(a), func(i int) bool { return a[i].Op >= o.Op })
		if i < len(a) && a[i].Op == o.Op {
			a[i].Count += o.Count
			a[i].Bytes += o.Bytes
			continue
		}
		a = append(a, OpTotal{})
		copy(a[i+1:], a[i:])
		a[i] = o
	}
	return a
}
