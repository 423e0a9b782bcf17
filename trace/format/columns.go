package format

import (
	"cmp"
	"encoding/binary"
	"errors"
	"math"
	"math/bits"
	"slices"

	"github.com/iotrace/iotrace/trace"
	"github.com/klauspost/compress/huff0"
	"github.com/klauspost/compress/zstd"
)

// Column ids. Each column holds one value per event of the block, derived
// from one field of the event (docs/FORMAT.md lists the transforms). A
// reader skips columns whose id it does not know.
const (
	colOp     = 1
	colThread = 2
	colStart  = 3
	colDur    = 4
	colPath   = 5
	colPath2  = 6
	colFD     = 7
	colOffset = 8
	colSize   = 9
	colRet    = 10
	colFlags  = 11
	colMode   = 12
	colWhence = 13
	colPeer   = 14
	colTag    = 15
	colComm   = 16
	colBytes  = 17
	colCount  = 18
	colStride = 19
	colSource = 20 // MPI_Sendrecv: the receive half's source (with flag trace.RecvHalf)
	colRTag   = 21 // MPI_Sendrecv: the receive half's tag
	colFD2    = 22 // copies: the descriptor written to
	colOff2   = 23 // copies: where it was written
	numCols   = 23
)

// Column encodings. The encoding byte of a column is layout<<4 | stage.
// The layout says how the values v are laid out as bytes, each as
// q = zigzag((v - base) / mult); the stage says how those bytes are stored.
const (
	layoutConst  = 0 // every value is base; no data
	layoutValues = 1 // one varint q per event
	layoutRuns   = 2 // varint pairs: q, run length
	layoutDict   = 3 // dictionary of up to 255 q values, an index byte per event, exceptions

	stageRaw  = 0 // the bytes as they are
	stageZstd = 1 // a zstd frame
	stageHuff = 2 // Huffman coding (huff0): a byte 1 (one stream) or 4 (four streams), then the huff0 block
)

func zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// oddInverse returns the inverse of the odd d modulo 2^64 (Newton's
// iteration: each step doubles the correct low bits).
func oddInverse(d uint64) uint64 {
	x := d // correct to 3 bits, since d·d ≡ 1 mod 8
	for i := 0; i < 5; i++ {
		x *= 2 - d*x
	}
	return x
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// column collects one column's values of a block. While the column has
// few runs of equal values it keeps them as (value, length) pairs; once
// runs get short it switches to a list of the values.
type column struct {
	runs    []int64 // run mode: value, length, value, length, …
	vals    []int64 // stream mode: the values
	stream  bool    // stream mode
	first   int64   // first value
	g       uint64  // gcd of |v - first| over the values so far
	lo, hi  int64   // smallest and largest value
	samples []int64 // values that start runs, the first ones, to choose a base
	zeros   []int64
}

const maxSamples = 63

// addAll appends vals; n is the number of values the block holds so far.
func (c *column) addAll(n int, vals []int64) {
	if len(vals) == 0 {
		return
	}
	i := 0
	if n == 0 {
		v := vals[0]
		c.first, c.g, c.lo, c.hi, c.stream = v, 0, v, v, false
		c.samples = append(c.samples[:0], v)
		c.runs = append(c.runs[:0], v, 1)
		c.vals = c.vals[:0]
		i = 1
	}
	if c.stream {
		c.addStream(vals[i:])
		return
	}
	last := len(c.runs) - 2
	prev, run := c.runs[last], c.runs[last+1]
	// Most chunks of a run-mode column continue its run: check that
	// without a branch per value.
	if allEqual(vals[i:], prev) {
		c.runs[last+1] = run + int64(len(vals)-i)
		return
	}
	for j, v := range vals[i:] {
		if v == prev {
			run++
			continue
		}
		c.runs[last+1] = run
		c.note(v)
		if len(c.runs) >= 64 && len(c.runs) > (n+i+j)/4 {
			// Runs are short: switch to a stream of values.
			c.toStream()
			c.addStream(vals[i+j:])
			return
		}
		c.runs = append(c.runs, v, 1)
		last += 2
		prev, run = v, 1
	}
	c.runs[last+1] = run
}

// allEqual reports whether every value of vals is v, without a branch
// per value.
func allEqual(vals []int64, v int64) bool {
	var d0, d1, d2, d3 int64
	i := 0
	for ; i+4 <= len(vals); i += 4 {
		d0 |= vals[i] ^ v
		d1 |= vals[i+1] ^ v
		d2 |= vals[i+2] ^ v
		d3 |= vals[i+3] ^ v
	}
	for ; i < len(vals); i++ {
		d0 |= vals[i] ^ v
	}
	return d0|d1|d2|d3 == 0
}

// note updates gcd, range and samples for a value that starts a run.
func (c *column) note(v int64) {
	c.lo, c.hi = min(c.lo, v), max(c.hi, v)
	if c.g != 1 {
		d := uint64(v - c.first)
		if int64(d) < 0 {
			d = -d
		}
		// A power-of-two gcd (aligned offsets, sizes) is checked with a
		// mask; Euclid's divisions run only when the gcd changes.
		if g := c.g; g == 0 || g&(g-1) != 0 || d&(g-1) != 0 {
			c.g = gcd(g, d)
		}
	}
	if len(c.samples) < maxSamples {
		c.samples = append(c.samples, v)
	}
}

func (c *column) toStream() {
	for k := 0; k < len(c.runs); k += 2 {
		for r := c.runs[k+1]; r > 0; r-- {
			c.vals = append(c.vals, c.runs[k])
		}
	}
	c.runs = c.runs[:0]
	c.stream = true
}

// addStream appends vals in stream mode.
func (c *column) addStream(vals []int64) {
	prev := c.vals[len(c.vals)-1]
	copy(c.reserve(len(vals)), vals)
	c.noteStream(vals, prev)
}

// reserve extends a stream-mode column by n values and returns them, to
// be filled and then passed to noteStream.
func (c *column) reserve(n int) []int64 {
	if cap(c.vals)-len(c.vals) < n {
		// Double: append grows large slices by a quarter, which copies a
		// block's values many times on the way to its size.
		c.vals = slices.Grow(c.vals, max(n, len(c.vals), 1024))
	}
	k := len(c.vals)
	c.vals = c.vals[:k+n]
	return c.vals[k:]
}

// noteStream takes in the values vals just added to a stream-mode column
// (prev is the value before them): samples, range and gcd, while they are
// in cache.
func (c *column) noteStream(vals []int64, prev int64) {
	if len(c.samples) < maxSamples {
		for _, v := range vals {
			if v != prev && len(c.samples) < maxSamples {
				c.samples = append(c.samples, v)
			}
			prev = v
		}
	}
	// Range: two chains of min and max, which do not wait on each other.
	lo0, hi0, lo1, hi1 := c.lo, c.hi, c.lo, c.hi
	i := 0
	for ; i+2 <= len(vals); i += 2 {
		lo0, hi0 = min(lo0, vals[i]), max(hi0, vals[i])
		lo1, hi1 = min(lo1, vals[i+1]), max(hi1, vals[i+1])
	}
	for ; i < len(vals); i++ {
		lo0, hi0 = min(lo0, vals[i]), max(hi0, vals[i])
	}
	c.lo, c.hi = min(lo0, lo1), max(hi0, hi1)
	// The gcd, until it is 1 (measured values get there at once).
	g, first := c.g, c.first
	for j := 0; j < len(vals) && g != 1; j++ {
		d := uint64(vals[j] - first)
		if int64(d) < 0 {
			d = -d
		}
		// A power-of-two gcd (aligned offsets, sizes) is checked with a
		// mask; Euclid's divisions run only when the gcd changes.
		if g == 0 || g&(g-1) != 0 || d&(g-1) != 0 {
			g = gcd(g, d)
		}
	}
	c.g = g
}

// colEncoder turns events into the columns of a block.
type colEncoder struct {
	cols    [numCols + 1]column
	n       int
	prevEnd int64
	predOff int64
	minT    int64
	maxT    int64
	// Per column, the values of the chunk being added, while addEvents
	// runs: from chunkScratches, as few encoders add at once.
	vals *[numCols + 1][]int64

	// The scratch of encoding, while appendColumns runs (nil otherwise).
	// It comes from encScratches (see freeList): the dictionary's counts
	// alone are 256 KiB.
	*encScratch

	ops      []opAcc        // the block's per-op totals
	opIndex  [256]uint16    // 1 + index in ops of an op below 256, or 0
	newPaths []trace.PathID // path ids the last addEvents named
}

// encScratch is what encoding a block's columns uses and leaves behind.
type encScratch struct {
	huff       huff0.Scratch
	scratch    []byte
	tmp        []byte
	sorted     []int64
	freq       []uint32
	uvals      []uint64
	distinct   []uint64
	index      []byte
	zbuf       []byte
	fbuf       []byte
	dbuf       []byte
	dout       []byte
	counts     []uint32
	exc        []byte
	seen       [1<<10 + 1]uint64 // dictionary: a bit per value up to 1<<16
	kept       []uint64          // dictionary: the values kept
	keptCount  []uint32          // dictionary: how often each occurs
	escapes    int               // dictionary: how many values are not kept
	plainBytes bool              // dictionary: every value kept, each below 0x80
	dhdr       []byte            // dictionary: its header
	utop       uint64            // largest of uvals
	ularge     int               // how many uvals are 1<<16 or more
}

var encScratches = newFreeList[encScratch]()

var chunkScratches = newFreeList[[numCols + 1][]int64]()

func (c *colEncoder) reset() {
	for i := range c.cols {
		c.cols[i].vals = c.cols[i].vals[:0]
		c.cols[i].runs = c.cols[i].runs[:0]
		c.cols[i].samples = c.cols[i].samples[:0]
	}
	c.n = 0
}

// retBase is what the ret column predicts a result to be: the size of a
// data call, the offset of a seek.
func retBase(e *trace.Event) int64 {
	if e.Size != 0 {
		return e.Size
	}
	return e.Offset
}

// opAcc accumulates one op's totals of a block: its count, the sum of its
// positive results (the bytes of a data call) and of its communication
// bytes; opTotals picks the one that counts for the op (eventBytes).
type opAcc struct {
	op           trace.Op
	count        int64
	retSum, comm int64
}

// addEvents encodes evs, column by column; their path ids are the file's.
// It also adds them to the block's per-op totals and lists in newPaths the
// path ids they name (each id once per change, not per event).
func (c *colEncoder) addEvents(evs []trace.Event) {
	if len(evs) == 0 {
		return
	}
	if c.n == 0 {
		c.minT, c.maxT = evs[0].Start, evs[0].End()
		c.prevEnd, c.predOff = 0, 0
	}
	c.vals = chunkScratches.get()
	defer func() {
		chunkScratches.put(c.vals)
		c.vals = nil
	}()
	n := len(evs)
	for id := 1; id <= numCols; id++ {
		if cap(c.vals[id]) < n {
			c.vals[id] = make([]int64, n, max(n, 256))
		}
		c.vals[id] = c.vals[id][:n]
	}
	// Columns in stream mode take their values in place; the others
	// through c.vals, to find runs.
	var v [colFlags][]int64
	var prev [colFlags]int64
	for id := 1; id < colFlags; id++ {
		if col := &c.cols[id]; c.n > 0 && col.stream {
			prev[id] = col.vals[len(col.vals)-1]
			v[id] = col.reserve(n)
		} else {
			v[id] = c.vals[id][:n]
		}
	}
	vStart, vOffset, vRet := v[colStart][:n], v[colOffset][:n], v[colRet][:n]
	vOp, vThread, vDur := v[colOp][:n], v[colThread][:n], v[colDur][:n]
	vPath, vPath2, vFD, vSize := v[colPath][:n], v[colPath2][:n], v[colFD][:n], v[colSize][:n]
	prevEnd, predOff, minT, maxT := c.prevEnd, c.predOff, c.minT, c.maxT
	// One pass over the events: the columns that are rarely all zero, the
	// per-op totals, the paths, and which of the other columns are zero.
	var or uint64
	lastPath, lastPath2 := trace.PathID(0), trace.PathID(0)
	c.newPaths = c.newPaths[:0]
	for i := range evs {
		e := &evs[i]
		start, end := e.Start, e.Start+e.Dur
		minT = min(minT, start)
		maxT = max(maxT, end)
		vStart[i] = start - prevEnd
		prevEnd = end
		off, size := e.Offset, e.Size
		vOffset[i] = off - predOff
		if off != 0 || size != 0 {
			predOff = off + size
		}
		rb := off // retBase
		if size != 0 {
			rb = size
		}
		vRet[i] = e.Ret - rb
		vOp[i] = int64(e.Op)
		vThread[i] = int64(e.Thread)
		vDur[i] = e.Dur
		vPath[i] = int64(e.Path)
		vPath2[i] = int64(e.Path2)
		vFD[i] = int64(e.FD)
		vSize[i] = size
		or |= uint64(e.Flags) | uint64(e.Mode) | uint64(uint32(e.Whence)) | uint64(uint32(e.Peer)) |
			uint64(uint32(e.Tag)) | uint64(e.Comm) | uint64(e.Bytes) | uint64(uint32(e.Count)) | uint64(e.Stride) |
			uint64(uint32(e.Source)) | uint64(uint32(e.RecvTag)) | uint64(uint32(e.FD2)) | uint64(e.Offset2)
		op := e.Op
		slot := int(c.opIndex[uint8(op)]) - 1
		if op >= 256 || slot < 0 {
			slot = c.opSlot(op)
		}
		a := &c.ops[slot]
		a.count++
		a.retSum += max(e.Ret, 0)
		a.comm += e.Bytes
		if e.Path != lastPath || e.Path2 != lastPath2 {
			lastPath, lastPath2 = e.Path, e.Path2
			c.newPaths = append(c.newPaths, lastPath, lastPath2)
		}
	}
	c.prevEnd, c.predOff, c.minT, c.maxT = prevEnd, predOff, minT, maxT
	for id := 1; id < colFlags; id++ {
		if col := &c.cols[id]; c.n > 0 && col.stream {
			col.noteStream(v[id], prev[id])
		} else {
			col.addAll(c.n, v[id])
		}
	}
	// The columns of flags, modes and communication are zero in most
	// chunks: those only extend their runs.
	var rare [numCols + 1]bool
	if or != 0 {
		c.rareColumns(evs, &rare)
	}
	for id := colFlags; id <= numCols; id++ {
		if !rare[id] {
			c.cols[id].addZeros(c.n, n)
			continue
		}
		c.cols[id].addAll(c.n, c.vals[id][:n])
	}
	c.n += n
}

// rareColumns fills c.vals[id] from evs for each column from colFlags on
// that is not all zeros, and marks those in rare.
func (c *colEncoder) rareColumns(evs []trace.Event, rare *[numCols + 1]bool) {
	var or [numCols + 1]uint64
	for i := range evs {
		e := &evs[i]
		or[colFlags] |= uint64(e.Flags)
		or[colMode] |= uint64(e.Mode)
		or[colWhence] |= uint64(uint32(e.Whence))
		or[colPeer] |= uint64(uint32(e.Peer))
		or[colTag] |= uint64(uint32(e.Tag))
		or[colComm] |= uint64(e.Comm)
		or[colBytes] |= uint64(e.Bytes)
		or[colCount] |= uint64(uint32(e.Count))
		or[colStride] |= uint64(e.Stride)
		or[colSource] |= uint64(uint32(e.Source))
		or[colRTag] |= uint64(uint32(e.RecvTag))
		or[colFD2] |= uint64(uint32(e.FD2))
		or[colOff2] |= uint64(e.Offset2)
	}
	for id := colFlags; id <= numCols; id++ {
		if or[id] == 0 {
			continue
		}
		rare[id] = true
		vs := c.vals[id][:len(evs)]
		switch id {
		case colFlags:
			for i := range evs {
				vs[i] = int64(evs[i].Flags)
			}
		case colMode:
			for i := range evs {
				vs[i] = int64(evs[i].Mode)
			}
		case colWhence:
			for i := range evs {
				vs[i] = int64(evs[i].Whence)
			}
		case colPeer:
			for i := range evs {
				vs[i] = int64(evs[i].Peer)
			}
		case colTag:
			for i := range evs {
				vs[i] = int64(evs[i].Tag)
			}
		case colComm:
			for i := range evs {
				vs[i] = int64(evs[i].Comm)
			}
		case colBytes:
			for i := range evs {
				vs[i] = evs[i].Bytes
			}
		case colCount:
			for i := range evs {
				vs[i] = int64(evs[i].Count)
			}
		case colStride:
			for i := range evs {
				vs[i] = evs[i].Stride
			}
		case colSource:
			for i := range evs {
				vs[i] = int64(evs[i].Source)
			}
		case colRTag:
			for i := range evs {
				vs[i] = int64(evs[i].RecvTag)
			}
		case colFD2:
			for i := range evs {
				vs[i] = int64(evs[i].FD2)
			}
		case colOff2:
			for i := range evs {
				vs[i] = evs[i].Offset2
			}
		}
	}
}

// opSlot returns the index in c.ops of op's totals, adding them if the
// block has none yet.
func (c *colEncoder) opSlot(op trace.Op) int {
	if int(op) < len(c.opIndex) {
		if k := c.opIndex[op]; k > 0 {
			return int(k) - 1
		}
	} else if k := slices.IndexFunc(c.ops, func(a opAcc) bool { return a.op == op }); k >= 0 {
		return k
	}
	c.ops = append(c.ops, opAcc{op: op})
	if int(op) < len(c.opIndex) && len(c.ops) <= math.MaxUint16 {
		c.opIndex[op] = uint16(len(c.ops))
	}
	return len(c.ops) - 1
}

// opTotals returns the block's per-op totals, sorted by op, and clears
// them.
func (c *colEncoder) opTotals() []OpTotal {
	ts := make([]OpTotal, len(c.ops))
	for i, a := range c.ops {
		t := OpTotal{Op: a.op, Count: a.count}
		switch {
		case a.op.Dir() != trace.DirNone:
			t.Bytes = a.retSum
		case a.op.Class() == trace.ClassComm:
			t.Bytes = a.comm
		}
		ts[i] = t
		if int(a.op) < len(c.opIndex) {
			c.opIndex[a.op] = 0
		}
	}
	c.ops = c.ops[:0]
	slices.SortFunc(ts, func(a, b OpTotal) int { return cmp.Compare(a.Op, b.Op) })
	return ts
}

// addZeros appends n zeros.
func (c *column) addZeros(have, n int) {
	if have == 0 {
		c.first, c.g, c.lo, c.hi, c.stream = 0, 0, 0, 0, false
		c.samples = append(c.samples[:0], 0)
		c.runs = append(c.runs[:0], 0, int64(n))
		c.vals = c.vals[:0]
		return
	}
	if !c.stream && c.runs[len(c.runs)-2] == 0 {
		c.runs[len(c.runs)-1] += int64(n)
		return
	}
	if cap(c.zeros) < n {
		c.zeros = make([]int64, n)
	}
	c.addAll(have, c.zeros[:n])
}

// rawSize is the size of the columns' varint streams.
func (c *colEncoder) rawSize() int {
	s := 0
	for i := range c.cols {
		s += 8*len(c.cols[i].vals) + 2*len(c.cols[i].runs)
	}
	return s
}

// appendColumns appends the column directory and data of the block to p.
func (c *colEncoder) appendColumns(p []byte, zenc *zstd.Encoder) []byte {
	c.encScratch = encScratches.get()
	defer func() {
		encScratches.put(c.encScratch)
		c.encScratch = nil
	}()
	type out struct {
		id         int
		enc        byte
		base       int64
		mult       uint64
		raw        int
		start, end int // data in c.scratch
	}
	var outs [numCols]out
	k := 0
	c.scratch = c.scratch[:0]
	for id := 1; id <= numCols; id++ {
		col := &c.cols[id]
		o := out{id: id, mult: 1}
		if col.g == 0 { // every value equals the first
			if col.first == 0 {
				continue // absent: a reader takes zeros
			}
			o.enc, o.base = layoutConst<<4, col.first
			outs[k] = o
			k++
			continue
		}
		o.mult = col.g
		o.base = c.base(col)
		if uint64(col.hi)-uint64(col.lo) > 1<<62 {
			// Differences could overflow: store the values as they are.
			o.mult, o.base = 1, 0
		}
		base, mult := o.base, int64(o.mult)
		q := func(v int64) uint64 { return zigzag((v - base) / mult) }
		var best []byte
		if !col.stream {
			tmp := c.tmp[:0]
			for k := 0; k < len(col.runs); k += 2 {
				tmp = binary.AppendUvarint(tmp, q(col.runs[k]))
				tmp = binary.AppendUvarint(tmp, uint64(col.runs[k+1]))
			}
			c.tmp = tmp
			o.raw = len(c.tmp)
			var st byte
			st, best = c.pack(c.tmp, zenc, &c.fbuf)
			o.enc = layoutRuns<<4 | st
		} else {
			// Exact division by mult = 2^k·d (d odd): shift, then multiply by
			// the inverse of d modulo 2^64 — no divide instruction per value.
			// The same pass finds what the dictionary needs to know first.
			k := uint(bits.TrailingZeros64(uint64(mult)))
			inv := oddInverse(uint64(mult) >> k)
			n := len(col.vals)
			c.uvals = slices.Grow(c.uvals[:0], n)[:n]
			uv := c.uvals
			var top uint64
			large := 0
			for i, v := range col.vals {
				u := zigzag(int64(uint64((v-base)>>k) * inv))
				uv[i] = u
				top = max(top, u)
				large += int((u>>16 + (1<<63 - 1)) >> 63) // u >= 1<<16, without a branch
			}
			c.utop, c.ularge = top, large
			o.enc, o.raw, best = c.encodeStream(spread(col.samples), zenc)
		}
		o.start = len(c.scratch)
		c.scratch = append(c.scratch, best...)
		o.end = len(c.scratch)
		outs[k] = o
		k++
	}
	p = binary.AppendUvarint(p, uint64(k))
	for _, o := range outs[:k] {
		p = binary.AppendUvarint(p, uint64(o.id))
		p = append(p, o.enc)
		p = binary.AppendVarint(p, o.base)
		p = binary.AppendUvarint(p, o.mult)
		p = binary.AppendUvarint(p, uint64(o.raw))
		p = binary.AppendUvarint(p, uint64(o.end-o.start))
	}
	for _, o := range outs[:k] {
		p = append(p, c.scratch[o.start:o.end]...)
	}
	return p
}

// encodeStream encodes the values c.uvals of a stream column and returns
// the column's encoding byte, raw size and data. The candidates are the
// varint stream, stored raw, Huffman-coded or (unless the values are
// spread, as measured ones are) as a zstd frame, and the dictionary
// layout. Their Huffman-coded sizes are estimated from histograms, and
// zstd is tried on a prefix first, so that only the winner (or the two
// best, when their estimates are close) is encoded.
func (c *colEncoder) encodeStream(spread bool, zenc *zstd.Encoder) (byte, int, []byte) {
	var raw []byte // the varint stream, once made
	varints := func() []byte {
		if raw == nil {
			raw = appendVarints(c.tmp[:0], c.uvals)
			c.tmp = raw
		}
		return raw
	}
	values := func() (byte, int, []byte) {
		raw := varints()
		st, data := c.pack(raw, nil, &c.fbuf)
		return layoutValues<<4 | st, len(raw), data
	}
	// zstd pays for repeated sequences, which measured (spread) values do
	// not have. It is tried on a prefix first: on the whole stream only
	// when the prefix compresses well. Every other candidate costs at
	// least a bit per value, so a frame below that wins outright.
	const prefix = 4 << 10
	var zpre, zall []byte // zstd frames of the prefix and of the whole stream
	var pre int           // length of the prefix
	if !spread && zenc != nil {
		raw := varints()
		if len(raw) >= 32 {
			pre = min(len(raw), prefix)
			zpre = zenc.EncodeAll(raw[:pre], c.zbuf[:0])
			c.zbuf = zpre
			if pre == len(raw) {
				zall = zpre
			} else if 8*len(zpre)*len(raw) < c.n*pre {
				zall = zenc.EncodeAll(raw, c.zbuf[:0])
				c.zbuf = zall
			}
			if zall != nil && 8*len(zall) < c.n {
				return layoutValues<<4 | stageZstd, len(raw), zall
			}
		}
	}
	dictOK := c.ularge <= c.n/2 && c.dictPrepare()
	if dictOK && c.plainBytes {
		return values() // see dictPrepare
	}
	if spread && !dictOK {
		return values()
	}
	// Estimated sizes of the varint stream (vEst) and of the dictionary
	// layout (dEst).
	var vEst, dEst int
	var vhist [256]uint32
	if dictOK {
		dEst = c.dictEstimate()
		// The varint stream's bytes are those of the kept values and of
		// the exceptions.
		vlen := len(c.exc)
		byteHist(&vhist, c.exc)
		for k, v := range c.kept {
			f := c.keptCount[k]
			for ; v >= 0x80; v >>= 7 {
				vhist[byte(v)|0x80] += f
				vlen += int(f)
			}
			vhist[v] += f
			vlen += int(f)
		}
		vEst = huffEst(&vhist, vlen)
	} else {
		dEst = math.MaxInt
		byteHist(&vhist, varints())
		vEst = huffEst(&vhist, len(raw))
	}
	best := min(vEst, dEst)
	if zpre != nil {
		if zall == nil && len(zpre)*len(raw) < best*pre*7/8 {
			zall = zenc.EncodeAll(raw, c.zbuf[:0])
			c.zbuf = zall
		}
		if zall != nil && len(zall) < best {
			return layoutValues<<4 | stageZstd, len(raw), zall
		}
	}
	if !dictOK {
		return values()
	}
	if close := max(vEst, dEst)/25 + 16; vEst+close < dEst {
		return values()
	} else if dEst+close < vEst {
		d := c.dictFinish()
		return layoutDict << 4, len(d), d
	}
	// Close: encode both.
	venc, vraw, v := values()
	d := c.dictFinish()
	if len(v) < len(d) {
		return venc, vraw, v
	}
	return layoutDict << 4, len(d), d
}

// byteHist adds the byte counts of b to h.
func byteHist(h *[256]uint32, b []byte) {
	// Four tables: repeated bytes do not wait on each other's counts.
	var h1, h2, h3 [256]uint32
	for len(b) >= 4 {
		h[b[0]]++
		h1[b[1]]++
		h2[b[2]]++
		h3[b[3]]++
		b = b[4:]
	}
	for _, x := range b {
		h[x]++
	}
	for i := range h {
		h[i] += h1[i] + h2[i] + h3[i]
	}
}

// huffEst estimates what pack's Huffman stage makes of total bytes of
// histogram h, its leading byte and table included; total if it would not
// pay. The estimate is the entropy, plus a little for Huffman's whole
// bits, but at least a bit per byte.
func huffEst(h *[256]uint32, total int) int {
	if total < 32 || total > huff0.BlockSizeMax {
		return total
	}
	maxCount, maxSym := uint32(0), 0
	sum := 0.0 // Σ f·log2(f)
	for s, f := range h {
		if f != 0 {
			maxCount = max(maxCount, f)
			maxSym = s
			sum += float64(f) * log2(f)
		}
	}
	if int(maxCount) == total || maxCount == 1 || int(maxCount) < total>>7 {
		return total // one symbol, or incompressible: huff0 declines
	}
	n := float64(total)
	bits := max(n*log2(uint32(total))-sum+0.03*n, n)
	size := int(bits/8) + 1 + (maxSym+1)/2
	if total >= 1<<10 {
		size += 6 + 3 // the jump table of four streams, their last bytes
	}
	return min(size, total)
}

// log2 approximates log2(x), x ≥ 1, within 0.006: the exponent from the
// leading bit, the fraction from a table of the next 8 bits.
func log2(x uint32) float64 {
	e := bits.Len32(x) - 1
	return float64(e) + log2Frac[x<<(31-e)>>23&0xff]
}

// log2Frac[i] is log2(1 + i/256).
var log2Frac = func() (t [256]float64) {
	for i := range t {
		t[i] = math.Log2(1 + float64(i)/256)
	}
	return
}()

// The dictionary layout stores the varint stream as a dictionary of its
// most frequent values (at most 255), one index byte per event
// (Huffman-coded), and the values missing from the dictionary as
// exceptions. It pays for columns of many distinct but recurring values,
// such as measured durations.
//
// dictPrepare chooses the dictionary of c.uvals and makes its index bytes
// (c.index), exceptions (c.exc) and header (c.dhdr); it reports false when
// the values hardly recur.
func (c *colEncoder) dictPrepare() bool {
	uv := c.uvals
	top := min(c.utop, 1<<16-1)
	// freq counts each value up to top; values above top land in
	// freq[top+1], which is not a value.
	if uint64(len(c.freq)) < top+2 {
		c.freq = make([]uint32, max(top+2, 1024))
	}
	freq := c.freq[:top+2]
	distinct := c.distinct[:0]
	switch {
	case top < 255:
		// Four small tables: repeated values do not wait on each other's
		// counts.
		var f0, f1, f2, f3 [256]uint32
		i := 0
		for ; i+4 <= len(uv); i += 4 {
			f0[uint8(min(uv[i], top+1))]++
			f1[uint8(min(uv[i+1], top+1))]++
			f2[uint8(min(uv[i+2], top+1))]++
			f3[uint8(min(uv[i+3], top+1))]++
		}
		for ; i < len(uv); i++ {
			f0[uint8(min(uv[i], top+1))]++
		}
		for v := range freq {
			if f := f0[v] + f1[v] + f2[v] + f3[v]; f != 0 {
				freq[v] = f
				distinct = append(distinct, uint64(v))
			}
		}
	case top < uint64(len(uv))/2:
		// Dense values: count every value, then collect those seen in
		// order: no branch per value, no sort.
		for _, u := range uv {
			freq[min(u, top+1)]++
		}
		for v, f := range freq {
			if f != 0 {
				distinct = append(distinct, uint64(v))
			}
		}
	default:
		// Sparse values: seen marks those counted, a bit each, so that
		// they come out in order without a scan of freq (a scan of up to
		// 4 counts a value cost more than the marks).
		seen := c.seen[:(top+1)/64+1]
		for _, u := range uv {
			u = min(u, top+1)
			freq[u]++
			seen[u/64] |= 1 << (u % 64)
		}
		for w, x := range seen {
			for x != 0 {
				distinct = append(distinct, uint64(w*64+bits.TrailingZeros64(x)))
				x &= x - 1
			}
			seen[w] = 0
		}
	}
	freq[top+1] = 0
	defer func() { // freq is all zeros between calls
		for _, v := range c.distinct {
			freq[v] = 0
		}
	}()
	if len(distinct) > 0 && distinct[len(distinct)-1] > top {
		distinct = distinct[:len(distinct)-1] // top+1 is not a value
	}
	c.distinct = distinct
	// Keep the 255 most frequent values: values of a count strictly above
	// the 255th largest (ties may not fit).
	var threshold uint32 = 1
	if len(distinct) > 255 {
		threshold = c.countThreshold(distinct, freq)
	}
	kept := c.kept[:0]
	covered := 0
	for _, v := range distinct {
		if f := freq[v]; f >= threshold {
			kept = append(kept, v)
			covered += int(f)
		} else {
			freq[v] = 0
		}
	}
	c.kept = kept
	if c.n-covered > c.n/2 {
		return false // too many exceptions: the values hardly recur
	}
	// The dictionary is stored sorted by value, as deltas; freq becomes
	// the index (+1) of each kept value, 0 for the others.
	c.keptCount = c.keptCount[:0]
	hdr := binary.AppendUvarint(c.dhdr[:0], uint64(len(kept)))
	var prev uint64
	for k, v := range kept {
		hdr = binary.AppendUvarint(hdr, v-prev)
		prev = v
		c.keptCount = append(c.keptCount, freq[v])
		freq[v] = uint32(k + 1)
	}
	c.dhdr = hdr
	c.escapes = c.n - covered
	c.plainBytes = c.escapes == 0 && kept[len(kept)-1] < 0x80
	if c.plainBytes {
		// Every value is in the dictionary and a one-byte varint: the
		// varint bytes are the values, the same Huffman payload as the
		// index, without the dictionary. No index needed.
		return true
	}
	if cap(c.index) < c.n {
		c.index = make([]byte, c.n)
	}
	index := c.index[:c.n]
	exc := c.exc[:0]
	escape := byte(len(kept))
	for i, u := range uv {
		if f := freq[min(u, top+1)]; f != 0 {
			index[i] = byte(f - 1)
		} else {
			index[i] = escape
			exc = binary.AppendUvarint(exc, u)
		}
	}
	c.exc = exc
	return true
}

// dictEstimate estimates the size of the dictionary layout dictPrepare
// made.
func (c *colEncoder) dictEstimate() int {
	var h [256]uint32
	copy(h[:], c.keptCount)
	h[len(c.keptCount)] += uint32(c.escapes)
	data := huffEst(&h, c.n)
	return len(c.dhdr) + 1 + uvarintLen(uint64(data)) + data + len(c.exc)
}

// dictFinish encodes the dictionary layout dictPrepare made.
func (c *colEncoder) dictFinish() []byte {
	enc, data := c.pack(c.index[:c.n], nil, &c.dbuf)
	out := append(c.dout[:0], c.dhdr...)
	out = append(out, enc)
	out = binary.AppendUvarint(out, uint64(len(data)))
	out = append(out, data...)
	out = append(out, c.exc...)
	c.dout = out
	return out
}

func uvarintLen(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

// countThreshold returns 1 + the 255th largest count freq[v] of the values
// distinct, from a histogram of the counts (sorting them only when more
// than 255 values recur very often).
func (c *colEncoder) countThreshold(distinct []uint64, freq []uint32) uint32 {
	const capped = 1024
	var hist [capped + 1]int32
	for _, v := range distinct {
		hist[min(freq[v], capped)]++
	}
	acc := int32(0)
	for f := capped; f >= 1; f-- {
		acc += hist[f]
		if acc >= 255 {
			if f < capped {
				return uint32(f) + 1
			}
			break
		}
	}
	counts := c.counts[:0]
	for _, v := range distinct {
		counts = append(counts, freq[v])
	}
	c.counts = counts
	slices.Sort(counts)
	return counts[len(counts)-255] + 1
}

// appendVarints appends the uvarint encoding of each of us to dst.
func appendVarints(dst []byte, us []uint64) []byte {
	b := dst[:cap(dst)]
	p := len(dst)
	for _, u := range us {
		if len(b)-p < 16 {
			b = slices.Grow(b[:p], max(len(us), 1024)*2)
			b = b[:cap(b)]
		}
		switch {
		case u < 1<<7:
			b[p] = byte(u)
			p++
		case u < 1<<14:
			b[p] = byte(u) | 0x80
			b[p+1] = byte(u >> 7)
			p += 2
		case u < 1<<21:
			b[p] = byte(u) | 0x80
			b[p+1] = byte(u>>7) | 0x80
			b[p+2] = byte(u >> 14)
			p += 3
		default:
			p += binary.PutUvarint(b[p:], u)
		}
	}
	return b[:p]
}

// pack chooses the smallest of storing in as it is, as a zstd frame (when
// zenc is not nil) and Huffman-coded, and returns the stage and the bytes
// (which may be in or *dst).
func (c *colEncoder) pack(in []byte, zenc *zstd.Encoder, dst *[]byte) (byte, []byte) {
	stage, best := byte(stageRaw), in
	if len(in) < 32 {
		return stage, best
	}
	if zenc != nil {
		z := zenc.EncodeAll(in, c.zbuf[:0])
		c.zbuf = z
		if len(z) < len(best) {
			stage, best = stageZstd, z
			if len(z) < len(in)/16 {
				return stage, best // runs and repeats: an entropy coder cannot beat this
			}
		}
	}
	// Huffman coding (rather than FSE) because it decodes about twice as
	// fast and compresses these streams as well.
	c.huff.Reuse = huff0.ReusePolicyNone
	var h []byte
	var err error
	if len(in) >= 1<<10 {
		h, _, err = huff0.Compress4X(in, &c.huff)
		if err == nil && len(h) < len(best) {
			*dst = append(append((*dst)[:0], 4), h...)
			stage, best = stageHuff, *dst
		}
	} else if h, _, err = huff0.Compress1X(in, &c.huff); err == nil && len(h) < len(best) {
		*dst = append(append((*dst)[:0], 1), h...)
		stage, best = stageHuff, *dst
	}
	return stage, best
}

// spread reports whether most of a column's sampled run values differ.
func spread(samples []int64) bool {
	if len(samples) < maxSamples {
		return false
	}
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	distinct := 1
	for i := 1; i < len(sorted); i++ {
		if sorted[i] != sorted[i-1] {
			distinct++
		}
	}
	return distinct > len(sorted)/2
}

// base picks the median of the column's first values, which puts most
// values of a column with a typical value (a duration, a gap) near zero.
func (c *colEncoder) base(col *column) int64 {
	c.sorted = append(c.sorted[:0], col.samples...)
	slices.Sort(c.sorted)
	return c.sorted[len(c.sorted)/2]
}

// colStream is a column's varint stream being decoded.
type colStream struct {
	b    []byte
	pos  int
	base int64
	mult int64
	dict []uint64   // dictionary layout: the dictionary; b holds one index byte per event
	exc  *colStream // dictionary layout: exceptions
	runs bool       // runs layout
	cur  int64      // runs layout: value of the current run
	left uint64     // runs layout: values left in the current run
}

var errColumn = errors.New("column shorter than its event count")

// next returns the next varint of the stream.
func (s *colStream) next() (uint64, error) {
	b := s.b
	p := s.pos
	if p < len(b) && b[p] < 0x80 {
		s.pos = p + 1
		return uint64(b[p]), nil
	}
	var x uint64
	var shift uint
	for i := 0; i < binary.MaxVarintLen64; i++ {
		if p >= len(b) {
			return 0, errColumn
		}
		c := b[p]
		p++
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return 0, errors.New("varint overflows 64 bits")
			}
			s.pos = p
			return x | uint64(c)<<shift, nil
		}
		x |= uint64(c&0x7f) << shift
		shift += 7
	}
	return 0, errors.New("varint overflows 64 bits")
}

// fill decodes the next len(dst) values of the column into dst.
// fillWith sets every element of d to v: a long run by doubling copies
// (memmove), a fraction of an instruction a value instead of a loop's
// four or five.
func fillWith(d []int64, v int64) {
	if len(d) < 16 {
		for i := range d {
			d[i] = v
		}
		return
	}
	d[0] = v
	for k := 1; k < len(d); k *= 2 {
		copy(d[k:], d[:k])
	}
}

func (s *colStream) fill(dst []int64) error {
	switch {
	case s.b == nil:
		fillWith(dst, s.base)
	case s.runs:
		for i := 0; i < len(dst); {
			if s.left == 0 {
				u, err := s.next()
				if err != nil {
					return err
				}
				if s.left, err = s.next(); err != nil {
					return err
				}
				if s.left == 0 {
					return errors.New("run of length 0")
				}
				s.cur = s.base + unzigzag(u)*s.mult
			}
			n := int(min(uint64(len(dst)-i), s.left))
			fillWith(dst[i:i+n], s.cur)
			i += n
			s.left -= uint64(n)
		}
	case s.dict != nil:
		if len(s.b)-s.pos < len(dst) {
			return errColumn
		}
		idx := s.b[s.pos : s.pos+len(dst)]
		s.pos += len(dst)
		for i, j := range idx {
			var u uint64
			if int(j) < len(s.dict) {
				u = s.dict[j]
			} else {
				var err error
				if u, err = s.exc.next(); err != nil {
					return err
				}
			}
			dst[i] = s.base + unzigzag(u)*s.mult
		}
	default:
		b, p := s.b, s.pos
		base, mult := s.base, s.mult
		for i := range dst {
			if p < len(b) && b[p] < 0x80 {
				dst[i] = base + unzigzag(uint64(b[p]))*mult
				p++
				continue
			}
			s.pos = p
			u, err := s.next()
			if err != nil {
				return err
			}
			p = s.pos
			dst[i] = base + unzigzag(u)*mult
		}
		s.pos = p
	}
	return nil
}

// value returns the next value of the column: base for a constant (or
// absent) column, else base + unzigzag(varint) * mult.
func (s *colStream) value() (int64, error) {
	if s.b == nil {
		return s.base, nil
	}
	if s.runs {
		if s.left == 0 {
			u, err := s.next()
			if err != nil {
				return 0, err
			}
			if s.left, err = s.next(); err != nil {
				return 0, err
			}
			if s.left == 0 {
				return 0, errors.New("run of length 0")
			}
			s.cur = s.base + unzigzag(u)*s.mult
		}
		s.left--
		return s.cur, nil
	}
	if s.dict != nil {
		if s.pos >= len(s.b) {
			return 0, errColumn
		}
		i := s.b[s.pos]
		s.pos++
		if int(i) < len(s.dict) {
			return s.base + unzigzag(s.dict[i])*s.mult, nil
		}
		u, err := s.exc.next()
		return s.base + unzigzag(u)*s.mult, err
	}
	u, err := s.next()
	return s.base + unzigzag(u)*s.mult, err
}
