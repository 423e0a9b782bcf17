package format

import (
	"encoding/binary"
	"errors"
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
	numCols   = 19
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

// addStream appends vals in stream mode; range and gcd are computed when
// the block is written (finishStream).
func (c *column) addStream(vals []int64) {
	if len(c.samples) < maxSamples {
		prev := c.vals[len(c.vals)-1]
		for _, v := range vals {
			if v != prev && len(c.samples) < maxSamples {
				c.samples = append(c.samples, v)
			}
			prev = v
		}
	}
	c.vals = append(c.vals, vals...)
}

// finishStream computes the range and gcd of a stream column's values.
func (c *column) finishStream() {
	lo, hi, first := c.vals[0], c.vals[0], c.vals[0]
	var g uint64
	for _, v := range c.vals {
		lo, hi = min(lo, v), max(hi, v)
		if g != 1 {
			d := uint64(v - first)
			if int64(d) < 0 {
				d = -d
			}
			if g == 0 || g&(g-1) != 0 || d&(g-1) != 0 {
				g = gcd(g, d)
			}
		}
	}
	c.lo, c.hi, c.g = lo, hi, g
}

// colEncoder turns events into the columns of a block.
type colEncoder struct {
	cols    [numCols + 1]column
	n       int
	prevEnd int64
	predOff int64
	minT    int64
	maxT    int64
	vals    [numCols + 1][]int64 // per column, the values of the chunk being added

	huff     huff0.Scratch
	scratch  []byte
	tmp      []byte
	sorted   []int64
	freq     []uint32
	uvals    []uint64
	distinct []uint64
	index    []byte
	zbuf     []byte
	fbuf     []byte
	dbuf     []byte
	dout     []byte
	counts   []uint32
	exc      []byte
	lastExc  int
}

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

// addEvents encodes evs, column by column; their path ids are the file's.
func (c *colEncoder) addEvents(evs []trace.Event) {
	if len(evs) == 0 {
		return
	}
	if c.n == 0 {
		c.minT, c.maxT = evs[0].Start, evs[0].End()
		c.prevEnd, c.predOff = 0, 0
	}
	for id := 1; id <= numCols; id++ {
		if cap(c.vals[id]) < len(evs) {
			c.vals[id] = make([]int64, len(evs), max(len(evs), 256))
		}
		c.vals[id] = c.vals[id][:len(evs)]
	}
	v := &c.vals
	prevEnd, predOff, minT, maxT := c.prevEnd, c.predOff, c.minT, c.maxT
	for i := range evs {
		e := &evs[i]
		minT = min(minT, e.Start)
		maxT = max(maxT, e.Start+e.Dur)
		v[colStart][i] = e.Start - prevEnd
		prevEnd = e.Start + e.Dur
		v[colOffset][i] = e.Offset - predOff
		if e.Offset != 0 || e.Size != 0 {
			predOff = e.Offset + e.Size
		}
		v[colRet][i] = e.Ret - retBase(e)
	}
	c.prevEnd, c.predOff, c.minT, c.maxT = prevEnd, predOff, minT, maxT
	for i := range evs {
		e := &evs[i]
		v[colOp][i] = int64(e.Op)
		v[colThread][i] = int64(e.Thread)
		v[colDur][i] = e.Dur
		v[colPath][i] = int64(e.Path)
		v[colPath2][i] = int64(e.Path2)
		v[colFD][i] = int64(e.FD)
		v[colSize][i] = e.Size
	}
	// The columns of flags, modes and communication are zero in most
	// chunks: one pass tells which, and those only extend their runs.
	var or [numCols + 1]uint64
	for i := range evs {
		e := &evs[i]
		or[colFlags] |= uint64(e.Flags)
		or[colMode] |= uint64(e.Mode)
		or[colWhence] |= uint64(e.Whence)
		or[colPeer] |= uint64(e.Peer)
		or[colTag] |= uint64(e.Tag)
		or[colComm] |= uint64(e.Comm)
		or[colBytes] |= uint64(e.Bytes)
		or[colCount] |= uint64(e.Count)
		or[colStride] |= uint64(e.Stride)
	}
	for id := colFlags; id <= numCols; id++ {
		if or[id] == 0 {
			continue
		}
		for i := range evs {
			e := &evs[i]
			var x int64
			switch id {
			case colFlags:
				x = int64(e.Flags)
			case colMode:
				x = int64(e.Mode)
			case colWhence:
				x = int64(e.Whence)
			case colPeer:
				x = int64(e.Peer)
			case colTag:
				x = int64(e.Tag)
			case colComm:
				x = int64(e.Comm)
			case colBytes:
				x = e.Bytes
			case colCount:
				x = int64(e.Count)
			case colStride:
				x = e.Stride
			}
			v[id][i] = x
		}
	}
	for id := 1; id <= numCols; id++ {
		if id >= colFlags && or[id] == 0 {
			c.cols[id].addZeros(c.n, len(evs))
			continue
		}
		c.cols[id].addAll(c.n, v[id])
	}
	c.n += len(evs)
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
		if col.stream {
			col.finishStream()
		}
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
			c.tmp = c.tmp[:0]
			for k := 0; k < len(col.runs); k += 2 {
				c.tmp = binary.AppendUvarint(c.tmp, q(col.runs[k]))
				c.tmp = binary.AppendUvarint(c.tmp, uint64(col.runs[k+1]))
			}
			o.raw = len(c.tmp)
			var st byte
			st, best = c.pack(c.tmp, zenc, &c.fbuf)
			o.enc = layoutRuns<<4 | st
		} else {
			c.uvals = c.uvals[:0]
			c.tmp = c.tmp[:0]
			// Exact division by mult = 2^k·d (d odd): shift, then multiply by
			// the inverse of d modulo 2^64 — no divide instruction per value.
			k := uint(bits.TrailingZeros64(uint64(mult)))
			inv := oddInverse(uint64(mult) >> k)
			for _, v := range col.vals {
				c.uvals = append(c.uvals, zigzag(int64(uint64((v-base)>>k)*inv)))
			}
			varints := func() []byte {
				c.tmp = c.tmp[:0]
				for _, u := range c.uvals {
					if u < 0x80 {
						c.tmp = append(c.tmp, byte(u))
					} else {
						c.tmp = binary.AppendUvarint(c.tmp, u)
					}
				}
				return c.tmp
			}
			if spread(col.samples) {
				// Measured values (most samples distinct) do not repeat
				// as sequences, so zstd does not pay; a dictionary of
				// their frequent values does, unless they hardly recur.
				d, ok := c.dict()
				if ok {
					o.enc, o.raw, best = layoutDict<<4, len(d), d
				}
				if !ok || c.lastExc > c.n/8 {
					raw := varints()
					st, v := c.pack(raw, nil, &c.fbuf)
					if !ok || len(v) < len(best) {
						o.enc, o.raw, best = layoutValues<<4|st, len(raw), v
					}
				}
			} else {
				raw := varints()
				var st byte
				st, best = c.pack(raw, zenc, &c.fbuf)
				o.enc, o.raw = layoutValues<<4|st, len(raw)
				if len(best) > c.n/4 {
					if d, ok := c.dict(); ok && len(d) < len(best) {
						o.enc, o.raw, best = layoutDict<<4, len(d), d
					}
				}
			}
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

// dict encodes the varint stream raw as a dictionary of its most frequent
// values (at most 255), one index byte per event (Huffman-coded), and the
// values missing from the dictionary as exceptions. It pays for columns of
// many distinct but recurring values, such as measured durations.
func (c *colEncoder) dict() ([]byte, bool) {
	d, exc, ok := c.dictExc()
	c.lastExc = exc
	return d, ok
}

// dictExc is dict that also returns how many values are exceptions.
func (c *colEncoder) dictExc() ([]byte, int, bool) {
	// Values from 1<<16 up never enter the dictionary; a column of mostly
	// such values does not take one.
	var top uint64
	large := 0
	for _, u := range c.uvals {
		top = max(top, u)
		if u >= 1<<16 {
			large++
		}
	}
	if large > c.n/2 {
		return nil, large, false
	}
	top = min(top, 1<<16-1)
	if uint64(len(c.freq)) <= top {
		c.freq = make([]uint32, max(top+1, 1024))
	}
	freq := c.freq
	c.distinct = c.distinct[:0]
	for _, u := range c.uvals {
		if u <= top {
			if freq[u] == 0 {
				c.distinct = append(c.distinct, u)
			}
			freq[u]++
		}
	}
	defer func() {
		for _, u := range c.distinct {
			freq[u] = 0
		}
	}()
	// Keep the 255 most frequent values: find the count threshold.
	keep := len(c.distinct)
	covered := 0
	if keep <= 255 {
		for _, u := range c.distinct {
			covered += int(freq[u])
		}
	}
	var threshold uint32 = 1
	if keep > 255 {
		counts := c.counts[:0]
		for _, u := range c.distinct {
			counts = append(counts, freq[u])
		}
		c.counts = counts
		slices.Sort(counts)
		threshold = counts[len(counts)-255] + 1 // strictly above: ties may not fit
		keep = 0
		for _, f := range counts {
			if f >= threshold {
				keep++
				covered += int(f)
			}
		}
	}
	if c.n-covered > c.n/2 {
		return nil, c.n - covered, false // too many exceptions: the values hardly recur
	}
	// The dictionary is stored sorted by value, as deltas; freq becomes
	// the index (+1) of each kept value.
	slices.Sort(c.distinct)
	out := binary.AppendUvarint(c.dout[:0], uint64(keep))
	var prev uint64
	k := uint32(0)
	for _, v := range c.distinct {
		if freq[v] >= threshold {
			out = binary.AppendUvarint(out, v-prev)
			prev = v
			k++
			freq[v] = k
		} else {
			freq[v] = 0
		}
	}
	if cap(c.index) < c.n {
		c.index = make([]byte, c.n)
	}
	index := c.index[:c.n]
	exc := c.exc[:0]
	defer func() { c.exc = exc }()
	for i, u := range c.uvals {
		if u <= top && freq[u] > 0 {
			index[i] = byte(freq[u] - 1)
		} else {
			index[i] = byte(keep)
			exc = binary.AppendUvarint(exc, u)
		}
	}
	enc, data := c.pack(index, nil, &c.dbuf)
	out = append(out, enc)
	out = binary.AppendUvarint(out, uint64(len(data)))
	out = append(out, data...)
	out = append(out, exc...)
	c.dout = out
	return out, c.n - covered, true
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
func (s *colStream) fill(dst []int64) error {
	switch {
	case s.b == nil:
		for i := range dst {
			dst[i] = s.base
		}
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
			for j := i; j < i+n; j++ {
				dst[j] = s.cur
			}
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
