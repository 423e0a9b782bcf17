package replay

import (
	"encoding/binary"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Pattern is the data a replay writes: a large buffer of xorshift output,
// shared read-only by every rank. A writer takes consecutive slices of it
// through a Cursor, so the bytes of a rank form one continuous stream.
// The period is odd (PatternPeriod, 1 MiB + 1 byte), so an aligned file
// block of 4 KiB (or any power of two) repeats only after PatternPeriod
// blocks (4 GiB of a rank's stream), and no compression record of up to
// 1 MiB holds a repeat; the content is pseudo-random, so neither
// compression nor deduplication in the file system flatters a replay.
// The period is short enough to stay in a core's cache, so writing
// non-repeating data costs little more than writing one buffer again.
type Pattern struct {
	buf []byte // PatternPeriod + PatternChunk bytes; the tail repeats the head
}

const (
	// PatternChunk is the most bytes one slice of the pattern holds;
	// larger calls write several slices with one vector call.
	PatternChunk = 1 << 20
	// PatternPeriod is the length of the stream before it repeats.
	PatternPeriod = 1<<20 + 1
	// DirectAlign is the alignment of slices for O_DIRECT.
	DirectAlign = 4096
)

// NewPattern returns the pattern: built once per process (about 2 MiB,
// a millisecond) and shared, since it is only read.
func NewPattern() *Pattern { return sharedPattern() }

var sharedPattern = sync.OnceValue(func() *Pattern {
	n := PatternPeriod + PatternChunk
	buf := patternMemory(n)
	x := uint64(0x9e3779b97f4a7c15)
	for i := 0; i+8 <= PatternPeriod; i += 8 {
		// xorshift64*
		x ^= x >> 12
		x ^= x << 25
		x ^= x >> 27
		binary.LittleEndian.PutUint64(buf[i:], x*0x2545f4914f6cdd1d)
	}
	// The last bytes of the period, then the period's head again, so that
	// any slice up to PatternChunk long is contiguous.
	for i := PatternPeriod &^ 7; i < PatternPeriod; i++ {
		buf[i] = byte(i*131+7) | 1
	}
	for off := PatternPeriod; off < n; off += PatternPeriod {
		copy(buf[off:], buf[:PatternPeriod])
	}
	return &Pattern{buf: buf}
})

// Warm makes, ahead of a replay, what its ranks take at their start and
// a process makes once: the pattern, and the clock's look at the
// processor's time-stamp counter (/proc/cpuinfo). For a goroutine of its
// own while the plan reads the trace: then they cost the replay nothing.
func Warm() {
	NewPattern()
	tscUsable()
}

// hugePage is the size of a transparent huge page on amd64 and arm64.
const hugePage = 2 << 20

// patternMemory returns n bytes for the pattern, aligned for O_DIRECT,
// never freed. It maps them outside the Go heap, starting on a huge-page
// boundary and advised as huge pages, and faults them in with one call:
// a replay reads the pattern on every write, and where page faults and
// TLB misses are dear (a VM with shadow page tables, page-table isolation
// without PCID) two huge pages cost less than 513 small ones — about 11 µs
// per small-page fault on the benchmark machine, 6 ms in all. Where the
// kernel has no huge pages (or says no) the advice is ignored; where the
// mapping fails, the memory comes from the Go heap.
func patternMemory(n int) []byte {
	size := (n + DirectAlign - 1) &^ (DirectAlign - 1)
	m, err := unix.Mmap(-1, 0, size+hugePage, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		raw := make([]byte, n+DirectAlign)
		off := 0
		if r := int(uintptr(unsafe.Pointer(&raw[0])) % DirectAlign); r != 0 {
			off = DirectAlign - r
		}
		return raw[off : off+n]
	}
	off := 0
	if r := int(uintptr(unsafe.Pointer(&m[0])) % hugePage); r != 0 {
		off = hugePage - r
	}
	// Unmap what lies before and after the aligned part (best effort).
	if off > 0 {
		unix.MunmapPtr(unsafe.Pointer(&m[0]), uintptr(off))
	}
	if tail := len(m) - off - size; tail > 0 {
		unix.MunmapPtr(unsafe.Pointer(&m[off+size]), uintptr(tail))
	}
	buf := unsafe.Slice(&m[off], size)
	unix.Madvise(buf, unix.MADV_HUGEPAGE)
	unix.Madvise(buf, unix.MADV_POPULATE_WRITE) // Linux 5.14; else faults as written
	return buf[:n:n]
}

// Cursor is one writer's position in the pattern.
type Cursor struct {
	p     *Pattern
	pos   int
	fixed bool
}

// Cursor returns a cursor that starts at a place derived from seed, so
// different ranks write different bytes.
func (p *Pattern) Cursor(seed uint64) Cursor {
	seed = (seed + 1) * 0x9e3779b97f4a7c15
	return Cursor{p: p, pos: int(seed % PatternPeriod)}
}

// FixedCursor returns a cursor whose every slice is the head of the
// pattern: the same bytes again and again (still pseudo-random and not
// zero), as a benchmark that fills its buffer once writes them. Cheaper
// to write than the stream — the bytes stay in the cache — but a file
// system that compresses or deduplicates is flattered by it.
func (p *Pattern) FixedCursor() Cursor { return Cursor{p: p, fixed: true} }

// Next returns the next n bytes of the stream (n ≤ PatternChunk). With
// align > 1 the slice starts at a multiple of align in memory (for
// O_DIRECT); the stream then skips to that boundary.
func (c *Cursor) Next(n int, align int) []byte {
	if n > PatternChunk {
		n = PatternChunk
	}
	if c.fixed {
		return c.p.buf[:n:n]
	}
	start := c.pos
	if align > 1 {
		start &^= align - 1
	}
	c.pos = (start + n) % PatternPeriod // n may span several periods
	return c.p.buf[start : start+n : start+n]
}
