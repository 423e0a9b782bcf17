package preload

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/iotrace/iotrace/capture"
	"io"
	"math"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// The spool layout (shim/shim.h; docs/FORMAT.md "Preload spool"): a
// header of headerSize bytes, then blocks of blockSize bytes, each one
// thread's. A block's header (16 bytes: magic, span, thread, time base)
// is followed by records: u16 length (0: none, nor any after it in the
// block), u8 call, u8 flags, u16 mask, then the fields the mask names as
// LEB128 varints. A block's records are relative to the one before
// (start, descriptor, offset) unless marked recAbs.
const (
	spoolMagic   = "IOTSPOOL"
	spoolVersion = 2
	headerSize   = 4096
	blockSize    = 4096
	blockHeader  = 16
	blockMagic   = 0x4b42 // a thread's blocks, in the order it wrote them
	sideMagic    = 0x5342 // a thread's side blocks: its signal handlers' records, and records too long for a block
	recFixed     = 6
	maxPath      = 4095
)

// Record flags (shim.h RF_*), and recAbs, the spool's own.
const (
	rfInMPIIO    = 1
	rfAnySource  = 2
	rfAnyTag     = 4
	rfPathAt     = 8
	rfRecvHalf   = 16 // MPI_Sendrecv: Off and Size hold its receive half's source and tag
	rfPath2At    = 32 // the second path is relative to the directory descriptor in Peer
	rfOver       = 64 // a varint after the fixed fields: Record.Over
	knownRFFlags = rfInMPIIO | rfAnySource | rfAnyTag | rfPathAt | rfRecvHalf | rfPath2At | rfOver
	recAbs       = 0x80
)

// The fields of a record, in their order (shim.h M_*).
const (
	mStart = 1 << iota
	mDur
	mFD
	mOff
	mNoOff
	mSize
	mRet
	mBytes
	mOFlags
	mMode
	mPeer
	mTag
	mComm
	mCount
	mPath
	mPath2
)

// Header describes the process that wrote a spool.
type Header struct {
	PID, PPID  uint32
	Rank, Size int32  // MPI rank and size, -1 when the process made no MPI_Init
	Dropped    uint32 // records the shim could not write (its spool was full)
	MonoStart  int64  // CLOCK_MONOTONIC ns when the shim started
	RealStart  int64  // CLOCK_REALTIME ns at the same moment
	Cmdline    []string
	Cwd        string
	// ProcStart is the process's start time (clock ticks since boot):
	// the same in every image of a process (exec), different in another
	// process that got the same pid.
	ProcStart uint64
	// Exec says the image was started by exec (the shim made the spool
	// as it started); false for a forked child's image, whose spool the
	// shim makes at its first record, and in spools of shims before the
	// field (which made one for every forked child, at the fork).
	Exec bool
	// Exe is the program (/proc/self/exe), "" when the shim could not
	// record it (a path longer than the header holds).
	Exe string
	// Blocks is how many blocks the process took; Capacity, how many the
	// file may hold.
	Blocks, Capacity uint64
	// Cost is what the shim measured of its own cost per call at the
	// start of the program's first image, which the images it execs
	// inherit (IOTRACE_COST; Samples 0: nothing, a shim before it).
	Cost capture.Cost
	// Tail is the time (ns) a plain record's wrapper takes after its
	// call, from the same calibration: the Over of a record after a
	// plain one (a data call's, an lseek's) that took no new block,
	// which the shim does not measure (0: none, or a shim before it).
	Tail int64
}

// Header offsets.
const (
	offProcStart = 3136
	offExec      = 3144
	offBlocks    = 3200
	offCapacity  = 3208
	offCost      = 3216
	offExe       = 3328
	maxExe       = 760
)

// Record is one call as the shim recorded it (shim.h struct rec).
type Record struct {
	Call   uint16
	Flags  uint16
	Tid    uint32 // thread index in the process, 0 for the main thread
	FD     int32
	Start  int64 // CLOCK_MONOTONIC ns
	Dur    int64
	Off    int64
	Size   int64
	Ret    int64
	Bytes  int64
	OFlags uint32
	Mode   uint32
	Peer   int32
	Tag    int32
	Comm   uint32
	Count  int32
	Path   string
	Path2  string
	// Over is the shim's own time (ns) from the end of the thread's
	// previous record's call to the end of the wrapper that wrote it: in
	// the gap before this call (0: not measured).
	Over int64
}

// Spool is one process's spool file.
type Spool struct {
	Name   string
	Header Header
	r      io.ReaderAt
	size   int64
	mem    []byte // the file's used part, mapped (OpenSpool)
	blocks int64  // blocks the file holds of those taken
	closer io.Closer
}

// SpoolError is a damaged spool: the file and the byte offset.
type SpoolError struct {
	Name   string
	Offset int64
	Msg    string
}

func (e *SpoolError) Error() string {
	return fmt.Sprintf("%s: offset %d: %s", e.Name, e.Offset, e.Msg)
}

// OpenSpool opens a spool file and reads its header. The blocks the
// process wrote are mapped into memory, not read.
func OpenSpool(name string) (*Spool, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	s, err := NewSpool(name, f, st.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	if n := headerSize + s.blocks*blockSize; s.blocks > 0 && n <= st.Size() {
		if m, err := unix.Mmap(int(f.Fd()), 0, int(n), unix.PROT_READ, unix.MAP_SHARED); err == nil {
			s.mem = m
		}
	}
	s.closer = f
	return s, nil
}

// NewSpool reads a spool of size bytes from r; name names it in errors.
func NewSpool(name string, r io.ReaderAt, size int64) (*Spool, error) {
	s := &Spool{Name: name, r: r, size: size}
	if size < headerSize {
		return nil, &SpoolError{name, size, fmt.Sprintf("shorter than its header (%d bytes)", headerSize)}
	}
	h := make([]byte, headerSize)
	if _, err := r.ReadAt(h, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if string(h[:8]) != spoolMagic {
		if bytes.Equal(h[:8], make([]byte, 8)) {
			return nil, &SpoolError{name, 0, "no header: the process ended while the shim started"}
		}
		return nil, &SpoolError{name, 0, "not an iotrace spool (bad magic)"}
	}
	le := binary.LittleEndian
	if v := le.Uint32(h[8:]); v != spoolVersion {
		return nil, &SpoolError{name, 8, fmt.Sprintf("spool version %d, this iotrace reads version %d", v, spoolVersion)}
	}
	if bs, hs := le.Uint32(h[12:]), le.Uint32(h[16:]); bs != blockSize || hs != headerSize {
		return nil, &SpoolError{name, 12, fmt.Sprintf("block size %d and header size %d, want %d and %d", bs, hs, blockSize, headerSize)}
	}
	hd := &s.Header
	hd.PID, hd.PPID = le.Uint32(h[20:]), le.Uint32(h[24:])
	hd.Rank, hd.Size = int32(le.Uint32(h[28:])), int32(le.Uint32(h[32:]))
	hd.Dropped = le.Uint32(h[36:])
	hd.MonoStart, hd.RealStart = int64(le.Uint64(h[40:])), int64(le.Uint64(h[48:]))
	if n := le.Uint32(h[56:]); n > 1024 {
		return nil, &SpoolError{name, 56, fmt.Sprintf("command line of %d bytes (at most 1024)", n)}
	} else if n > 0 {
		hd.Cmdline = strings.Split(strings.TrimRight(string(h[60:60+n]), "\x00"), "\x00")
	}
	if n := le.Uint32(h[1084:]); n > 2048 {
		return nil, &SpoolError{name, 1084, fmt.Sprintf("working directory of %d bytes (at most 2048)", n)}
	} else {
		hd.Cwd = string(h[1088 : 1088+n])
	}
	hd.ProcStart = le.Uint64(h[offProcStart:])
	switch x := le.Uint32(h[offExec:]); x {
	case 0, 1:
		hd.Exec = x == 1
	default:
		return nil, &SpoolError{name, offExec, fmt.Sprintf("exec flag %d (0 or 1)", x)}
	}
	hd.Cost = capture.Cost{InCall: int64(le.Uint32(h[offCost:])), Between: int64(le.Uint32(h[offCost+4:])),
		Spread: int64(le.Uint32(h[offCost+8:])), Samples: int(le.Uint32(h[offCost+12:]))}
	hd.Tail = int64(le.Uint32(h[offCost+16:]))
	if n := le.Uint32(h[offExe:]); n > maxExe {
		return nil, &SpoolError{name, offExe, fmt.Sprintf("program name of %d bytes (at most %d)", n, maxExe)}
	} else {
		hd.Exe = string(h[offExe+4 : offExe+4+n])
	}
	if hd.Rank < -1 || hd.Size < -1 || (hd.Size > 0 && hd.Rank >= hd.Size) {
		return nil, &SpoolError{name, 28, fmt.Sprintf("MPI rank %d of %d", hd.Rank, hd.Size)}
	}
	hd.Blocks, hd.Capacity = le.Uint64(h[offBlocks:]), le.Uint64(h[offCapacity:])
	// Blocks taken past the capacity were never written (their records
	// are counted as dropped); a file cut short holds fewer.
	s.blocks = int64(min(hd.Blocks, hd.Capacity, uint64(size-headerSize)/blockSize))
	return s, nil
}

// Close closes the spool file.
func (s *Spool) Close() error {
	if s.mem != nil {
		unix.Munmap(s.mem)
		s.mem = nil
	}
	if s.closer != nil {
		return s.closer.Close()
	}
	return nil
}

// ReadStats says what reading a spool found.
type ReadStats struct {
	Records int64
	// Incomplete counts records being written when the process ended:
	// bytes after a thread's last complete record.
	Incomplete int64
}

// block is one of the spool's blocks (with the blocks it spans).
type block struct {
	off  int64
	span int
	tid  uint32
	base int64
	side bool
}

// read returns the n bytes at off; buf is where they may be read to.
func (s *Spool) read(off int64, n int, buf []byte) ([]byte, error) {
	if s.mem != nil && off+int64(n) <= int64(len(s.mem)) {
		return s.mem[off : off+int64(n)], nil
	}
	if off+int64(n) > s.size {
		return nil, &SpoolError{s.Name, off, "block runs past the end of the file"}
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := s.r.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	return buf, nil
}

// index lists the blocks written, in the order they were taken. A block
// never written (taken by a process that ended first, or left empty) has
// no magic and is skipped.
func (s *Spool) index() ([]block, error) {
	var bs []block
	var buf []byte
	le := binary.LittleEndian
	for i := int64(0); i < s.blocks; {
		off := headerSize + i*blockSize
		h, err := s.read(off, blockHeader, buf)
		if err != nil {
			return bs, err
		}
		buf = h[:0]
		magic, span := le.Uint16(h), int64(le.Uint16(h[2:]))
		if magic == 0 {
			i++
			continue
		}
		if magic != blockMagic && magic != sideMagic {
			return bs, &SpoolError{s.Name, off, fmt.Sprintf("bad block magic %#x", magic)}
		}
		if span < 1 || i+span > s.blocks {
			return bs, &SpoolError{s.Name, off, fmt.Sprintf("block spans %d blocks, the spool holds %d after it", span, s.blocks-i)}
		}
		bs = append(bs, block{off: off, span: int(span), tid: le.Uint32(h[4:]), base: int64(le.Uint64(h[8:])), side: magic == sideMagic})
		i += span
	}
	return bs, nil
}

// Records calls fn for every complete record, block by block in the
// order the process took them (a thread's records in the order they were
// made, threads interleaved by block). A damaged block or record ends the
// reading with a *SpoolError; fn has seen every record before it.
func (s *Spool) Records(fn func(*Record) error) (ReadStats, error) {
	var st ReadStats
	bs, err := s.index()
	c := &cursor{s: s, blocks: bs, stats: &st}
	var rec Record
	for {
		ok, cerr := c.next(&rec)
		if cerr != nil {
			return st, cerr
		}
		if !ok {
			return st, err
		}
		if err := fn(&rec); err != nil {
			return st, err
		}
	}
}

// cursor reads the records of a list of blocks in order.
type cursor struct {
	s      *Spool
	blocks []block
	stats  *ReadStats
	bi     int    // the next block
	data   []byte // the current block
	base   int64  // its offset
	b      block
	pos    int
	buf    []byte
	pstart int64 // what the next record's fields are relative to
	poff   int64
	pfd    int32
}

// next decodes the next complete record into rec; false at the end.
func (c *cursor) next(rec *Record) (bool, error) {
	le := binary.LittleEndian
	for {
		if c.data == nil || c.pos+2 > len(c.data) {
			if c.bi >= len(c.blocks) {
				return false, nil
			}
			c.b = c.blocks[c.bi]
			c.bi++
			d, err := c.s.read(c.b.off, c.b.span*blockSize, c.buf)
			if err != nil {
				return false, err
			}
			if c.s.mem == nil {
				c.buf = d[:0]
			}
			c.data, c.base, c.pos = d, c.b.off, blockHeader
			c.pstart, c.poff, c.pfd = c.b.base, 0, 0
			continue
		}
		n := int(le.Uint16(c.data[c.pos:]))
		if n == 0 {
			// The thread's last record in this block. Bytes after it
			// are one it was writing when the process ended.
			if bytes.IndexFunc(c.data[c.pos+2:min(c.pos+recFixed, len(c.data))], func(r rune) bool { return r != 0 }) >= 0 {
				c.stats.Incomplete++
			}
			c.pos = len(c.data)
			continue
		}
		at := c.base + int64(c.pos)
		if n < recFixed || c.pos+n > len(c.data) {
			return false, &SpoolError{c.s.Name, at, fmt.Sprintf("record of %d bytes in a block with %d after it", n, len(c.data)-c.pos)}
		}
		if err := c.decode(c.data[c.pos:c.pos+n], rec, at); err != nil {
			return false, err
		}
		c.pos += n
		c.stats.Records++
		return true, nil
	}
}

// uv reads the varint at b[p:] and returns it and the position after
// it, or -1 when b ends first or it runs past 64 bits.
func uv(b []byte, p int) (uint64, int) {
	var v uint64
	for s := uint(0); s < 64 && uint(p) < uint(len(b)); s += 7 { // uint: p may be -1
		x := b[p]
		p++
		v |= uint64(x&0x7f) << s
		if x < 0x80 {
			return v, p
		}
	}
	return 0, -1
}

// uvShort is uv for a varint of one or two bytes, as most of a record's
// fields are, short enough for the compiler to inline; it returns -1 for
// a longer one (or at -1, or at the end of b), which the caller reads
// with uv. Calls of uv for every field cost decode more than reading the
// varints: each spilled and reloaded a dozen of its registers.
func uvShort(b []byte, p int) (uint64, int) {
	if uint(p) < uint(len(b)) {
		x := b[p]
		if x < 0x80 {
			return uint64(x), p + 1
		}
		if p+1 < len(b) && b[p+1] < 0x80 {
			return uint64(x&0x7f) | uint64(b[p+1])<<7, p + 2
		}
	}
	return 0, -1
}

// unzigzag decodes a zigzag varint's value.
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// sv reads a zigzag varint.
func sv(b []byte, p int) (int64, int) {
	v, p := uv(b, p)
	return unzigzag(v), p
}

// decode decodes record b (its bytes, length first), at file offset at.
func (c *cursor) decode(b []byte, rec *Record, at int64) error {
	flags := uint16(b[3])
	mask := uint32(b[4]) | uint32(b[5])<<8
	*rec = Record{Call: uint16(b[2]), Flags: flags &^ (recAbs | rfOver), Tid: c.b.tid}
	if flags&^(knownRFFlags|recAbs) != 0 {
		return &SpoolError{c.s.Name, at, fmt.Sprintf("unknown record flags %#x", flags)}
	}
	pstart, pfd, poff := c.pstart, c.pfd, c.poff
	if flags&recAbs != 0 {
		pstart, pfd, poff = 0, 0, 0
	}
	// p becomes -1 (and stays so: every read at -1 fails) when the
	// fields run past the record. Each field's varint is read by
	// uvShort, inlined, or if longer by uv.
	p := recFixed
	rec.Start, rec.FD = pstart, pfd
	if mask&mStart != 0 {
		u, q := uvShort(b, p)
		if q < 0 {
			u, q = uv(b, p)
		}
		p = q
		rec.Start = pstart + unzigzag(u)
	}
	if mask&mDur != 0 {
		u, q := uvShort(b, p)
		if q < 0 {
			u, q = uv(b, p)
		}
		p = q
		rec.Dur = int64(u)
	}
	if mask&mFD != 0 {
		u, q := uvShort(b, p)
		if q < 0 {
			u, q = uv(b, p)
		}
		p = q
		rec.FD = int32(unzigzag(u))
	}
	switch {
	case mask&mNoOff != 0:
		rec.Off = -1
	case mask&mOff != 0:
		u, q := uvShort(b, p)
		if q < 0 {
			u, q = uv(b, p)
		}
		p = q
		rec.Off = poff + unzigzag(u)
	}
	if mask&mSize != 0 {
		u, q := uvShort(b, p)
		if q < 0 {
			u, q = uv(b, p)
		}
		p = q
		rec.Size = unzigzag(u)
	}
	pred := int64(0)
	if rec.Size > 0 {
		pred = rec.Size
	} else if rec.Off > 0 {
		pred = rec.Off
	}
	rec.Ret = pred
	if mask&mRet != 0 {
		u, q := uvShort(b, p)
		if q < 0 {
			u, q = uv(b, p)
		}
		p = q
		rec.Ret = pred + unzigzag(u)
	}
	if flags&rfOver != 0 {
		u, q := uvShort(b, p)
		if q < 0 {
			u, q = uv(b, p)
		}
		p = q
		if u > math.MaxInt64 {
			return &SpoolError{c.s.Name, at, fmt.Sprintf("the shim's own time %d ns", u)}
		}
		rec.Over = int64(u)
	}
	if mask&^(mStart|mDur|mFD|mOff|mNoOff|mSize|mRet) != 0 && p >= 0 {
		if err := c.decodeRare(b, p, mask, rec, at); err != nil {
			return err
		}
		p = len(b)
	}
	if p != len(b) {
		return &SpoolError{c.s.Name, at, fmt.Sprintf("record of %d bytes does not hold the fields its mask %#x names", len(b), mask)}
	}
	if rec.Dur < 0 {
		return &SpoolError{c.s.Name, at, fmt.Sprintf("negative duration %d", rec.Dur)}
	}
	if flags&recAbs == 0 {
		c.pstart, c.pfd = rec.Start, rec.FD
		if mask&mOff != 0 {
			c.poff = rec.Off
		}
	}
	return nil
}

// decodeRare decodes the fields most calls do not have, from b[p:] to
// the end of the record.
func (c *cursor) decodeRare(b []byte, p int, mask uint32, rec *Record, at int64) error {
	var v int64
	var u uint64
	if mask&mBytes != 0 {
		rec.Bytes, p = sv(b, p)
	}
	if mask&mOFlags != 0 {
		u, p = uv(b, p)
		rec.OFlags = uint32(u)
	}
	if mask&mMode != 0 {
		u, p = uv(b, p)
		rec.Mode = uint32(u)
	}
	if mask&mPeer != 0 {
		v, p = sv(b, p)
		rec.Peer = int32(v)
	}
	if mask&mTag != 0 {
		v, p = sv(b, p)
		rec.Tag = int32(v)
	}
	if mask&mComm != 0 {
		u, p = uv(b, p)
		rec.Comm = uint32(u)
	}
	if mask&mCount != 0 {
		v, p = sv(b, p)
		rec.Count = int32(v)
	}
	var l1, l2 uint64
	if mask&mPath != 0 {
		l1, p = uv(b, p)
	}
	if mask&mPath2 != 0 {
		l2, p = uv(b, p)
	}
	if p < 0 {
		return &SpoolError{c.s.Name, at, fmt.Sprintf("record of %d bytes does not hold the fields its mask %#x names", len(b), mask)}
	}
	if l1 > maxPath || l2 > maxPath {
		return &SpoolError{c.s.Name, at, fmt.Sprintf("path of %d bytes (at most %d)", max(l1, l2), maxPath)}
	}
	if uint64(len(b)-p) != l1+l2 {
		return &SpoolError{c.s.Name, at, fmt.Sprintf("record of %d bytes holds %d bytes of paths, its lengths say %d", len(b), len(b)-p, l1+l2)}
	}
	rec.Path, rec.Path2 = string(b[p:p+int(l1)]), string(b[p+int(l1):])
	return nil
}

// streams returns the spool's records as streams each in the order a
// thread made them: per thread, its blocks, and its side blocks (its
// signal handlers' records, and records too long for a block), each
// stream in start order but for a signal handler's calls.
func (s *Spool) streams(st *ReadStats) ([]*cursor, error) {
	bs, err := s.index()
	type key struct {
		tid  uint32
		side bool
	}
	by := map[key]*cursor{}
	var out []*cursor
	for _, b := range bs {
		k := key{b.tid, b.side}
		c := by[k]
		if c == nil {
			c = &cursor{s: s, stats: st}
			by[k] = c
			out = append(out, c)
		}
		c.blocks = append(c.blocks, b)
	}
	return out, err
}

// merged reads a spool's records in start order: its streams (one per
// thread, and one per thread's side blocks) merged.
type merged struct {
	curs  []*cursor
	heads []Record // each live stream's next record
	heap  []int    // the live streams, a min-heap by their heads' start
	taken bool     // next returned the head of heap[0]: its stream moves on at the next call
	Stats ReadStats
	err   error
}

func (s *Spool) merged() *merged {
	m := &merged{}
	curs, err := s.streams(&m.Stats)
	m.curs, m.heads, m.err = curs, make([]Record, len(curs)), err
	for i, c := range curs {
		ok, err := c.next(&m.heads[i])
		if err != nil {
			m.fail(err)
			continue
		}
		if ok {
			m.heap = append(m.heap, i)
			m.up(len(m.heap) - 1)
		}
	}
	return m
}

func (m *merged) fail(err error) {
	if m.err == nil {
		m.err = err
	}
}

func (m *merged) less(a, b int) bool {
	x, y := m.heap[a], m.heap[b]
	return m.heads[x].Start < m.heads[y].Start || m.heads[x].Start == m.heads[y].Start && x < y
}

func (m *merged) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !m.less(i, p) {
			return
		}
		m.heap[i], m.heap[p] = m.heap[p], m.heap[i]
		i = p
	}
}

func (m *merged) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(m.heap) {
			return
		}
		if r := l + 1; r < len(m.heap) && m.less(r, l) {
			l = r
		}
		if !m.less(l, i) {
			return
		}
		m.heap[i], m.heap[l] = m.heap[l], m.heap[i]
		i = l
	}
}

// next returns the next record, which stays valid until the next call
// (its stream's head: not copied); nil at the end, or at the first damage
// (then err says where).
func (m *merged) next() *Record {
	if m.taken {
		// The stream of the record returned last moves on.
		m.taken = false
		i := m.heap[0]
		ok, err := m.curs[i].next(&m.heads[i])
		if err != nil {
			m.fail(err)
		}
		if !ok || err != nil {
			m.heap[0] = m.heap[len(m.heap)-1]
			m.heap = m.heap[:len(m.heap)-1]
		}
		if len(m.heap) > 1 { // a process of one thread has one stream
			m.down(0)
		}
	}
	if len(m.heap) == 0 || m.err != nil {
		return nil
	}
	m.taken = true
	return &m.heads[m.heap[0]]
}
