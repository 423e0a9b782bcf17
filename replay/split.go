package replay

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"math/rand/v2"

	"github.com/iotrace/iotrace/trace"
)

// splitter cuts one rank's large requests into schedule blocks and orders
// them (see Split). It makes the blocks of a request one at a time, as
// they are read (next): a request of 1 TiB split at 64 KiB is 16 million
// blocks, which a list of them held in memory (gigabytes).
type splitter struct {
	sp   Split
	rank uint32
	rng  *rand.Rand

	// The request being split.
	e        trace.Event
	active   bool
	op       trace.Op
	end      int64 // end of the request's bytes
	k, n     int64 // blocks made, blocks in all
	seek     bool  // a seek to the position follows the blocks
	inOrder  bool  // file order: the next block starts at cur
	cur      int64
	err      error // the request splits into too many blocks
	srvs     []srvCursor
	ring     []int // hash: servers in issue order (indexes into srvs; -1: done)
	ringPos  int
	open     []int // random: the servers with blocks left, by server
	nsrvOpen int
}

// MaxSplitBlocks is the most blocks --split cuts one request into (1 TiB
// at 64 KiB): a request of 2^62 bytes would make 2^50 calls, which no plan
// or replay gets through; 2^29 took the plan four minutes.
const MaxSplitBlocks = 1 << 24

func newSplitter(sp Split, rank uint32) *splitter {
	return &splitter{sp: sp, rank: rank, rng: rand.New(rand.NewPCG(sp.Seed, uint64(rank)+0x5851f42d4c957f2d))}
}

// srvCursor is where a server's next block of the request starts.
type srvCursor struct {
	srv int
	pos int64
}

// explicitOp returns the op of e that takes an explicit offset.
func explicitOp(op trace.Op) trace.Op {
	switch op {
	case trace.OpRead, trace.OpReadv, trace.OpFread:
		return trace.OpPread
	case trace.OpWrite, trace.OpWritev, trace.OpFwrite:
		return trace.OpPwrite
	case trace.OpPreadv, trace.OpPreadv2:
		return trace.OpPread
	case trace.OpPwritev, trace.OpPwritev2:
		return trace.OpPwrite
	case trace.OpMPIFileRead, trace.OpMPIFileIread:
		return trace.OpMPIFileReadAt
	case trace.OpMPIFileWrite, trace.OpMPIFileIwrite:
		return trace.OpMPIFileWriteAt
	case trace.OpMPIFileReadAll:
		return trace.OpMPIFileReadAtAll
	case trace.OpMPIFileWriteAll:
		return trace.OpMPIFileWriteAtAll
	}
	return op
}

// plainOp returns the non-vector op of the same addressing.
func plainOp(op trace.Op) trace.Op {
	switch op {
	case trace.OpReadv:
		return trace.OpRead
	case trace.OpWritev:
		return trace.OpWrite
	case trace.OpPreadv, trace.OpPreadv2:
		return trace.OpPread
	case trace.OpPwritev, trace.OpPwritev2:
		return trace.OpPwrite
	}
	return op
}

// splittable reports whether e is a request the splitter cuts.
func (s *splitter) splittable(e *trace.Event) bool {
	if !isData(e.Op) || e.Size <= s.sp.Size || e.Ret < 0 || e.Offset < 0 {
		return false
	}
	info := e.Op.Info()
	return info.Addr == trace.AddrExplicit || info.Addr == trace.AddrIndividual
}

// split appends the blocks of e (or e itself, when it is not split) to
// out: all of them at once, for tests and small requests.
func (s *splitter) split(e *trace.Event, out []trace.Event) []trace.Event {
	if !s.start(e) {
		return append(out, *e)
	}
	for {
		ev, ok := s.next()
		if !ok {
			return out
		}
		out = append(out, ev)
	}
}

// nextUp is the next multiple of m above off, held at the int64 bound.
func nextUp(off, m int64) int64 {
	q := off/m + 1
	if q > math.MaxInt64/m {
		return math.MaxInt64
	}
	return q * m
}

// multiples counts the multiples of m strictly between off and end.
func multiples(off, end, m int64) int64 {
	if m <= 0 || end-1 <= off {
		return 0
	}
	return (end-1)/m - off/m
}

// start begins splitting e, and reports whether it is split.
func (s *splitter) start(e *trace.Event) bool {
	if !s.splittable(e) {
		return false
	}
	b, stripe := s.sp.Size, s.sp.Stripe
	s.e, s.active, s.k = *e, true, 0
	s.end = e.Offset + e.Size
	if e.Size > math.MaxInt64-e.Offset {
		s.end = math.MaxInt64
	}
	// The blocks end at the multiples of b and of the stripe.
	s.n = 1 + multiples(e.Offset, s.end, b) + multiples(e.Offset, s.end, stripe)
	if g := gcd(b, stripe); b/g <= math.MaxInt64/stripe {
		s.n -= multiples(e.Offset, s.end, b/g*stripe)
	}
	if s.n > MaxSplitBlocks {
		s.active = false
		s.err = fmt.Errorf("a %s of %d bytes splits into %d blocks of %d bytes (--split): more than %d; split larger", e.Op, e.Size, s.n, b, MaxSplitBlocks)
		return true
	}
	reorder := s.sp.Order != "first"
	s.op = plainOp(e.Op)
	if reorder {
		s.op = explicitOp(e.Op)
	}
	s.seek = reorder && e.Op.Info().Addr == trace.AddrIndividual && e.Op.Class() == trace.ClassPOSIX
	s.inOrder = s.sp.Order == "first" || s.sp.Servers <= 1 && s.sp.Order != "random"
	if s.inOrder {
		s.cur = e.Offset
		return true
	}
	// The servers the request reaches, and where each one's blocks start.
	nsrv := int64(s.sp.Servers)
	s0, s1 := e.Offset/stripe, (s.end-1)/stripe
	s.srvs = s.srvs[:0]
	for srv := int64(0); srv < nsrv; srv++ {
		first := s0 + ((srv-s0%nsrv)+nsrv)%nsrv // its first stripe from s0
		if first > s1 {
			continue
		}
		s.srvs = append(s.srvs, srvCursor{srv: int(srv), pos: max(e.Offset, first*stripe)})
	}
	switch s.sp.Order {
	case "hash":
		// Step j goes to server (rank + j) mod Servers, skipping the
		// servers without blocks left: a ring from the rank's server.
		r0 := int(s.rank % uint32(nsrv))
		s.ring = s.ring[:0]
		start := 0
		for start < len(s.srvs) && s.srvs[start].srv < r0 {
			start++
		}
		for i := range s.srvs {
			s.ring = append(s.ring, (start+i)%len(s.srvs))
		}
		s.ringPos, s.nsrvOpen = 0, len(s.ring)
	case "random":
		s.open = s.open[:0]
		for i := range s.srvs {
			s.open = append(s.open, i)
		}
	}
	return true
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// block is the block that starts at off: its end.
func (s *splitter) block(off int64) int64 {
	return min(s.end, nextUp(off, s.sp.Size), nextUp(off, s.sp.Stripe))
}

// take makes the block of server cursor c, moves it on, and reports
// whether the server has blocks left.
func (s *splitter) take(c *srvCursor) (off, end int64, more bool) {
	off = c.pos
	end = s.block(off)
	c.pos = end
	if end%s.sp.Stripe == 0 && end < s.end {
		// The stripe is done: the server's next one is Servers stripes on.
		next := end/s.sp.Stripe - 1 + int64(s.sp.Servers)
		if next > math.MaxInt64/s.sp.Stripe {
			c.pos = math.MaxInt64
		} else {
			c.pos = next * s.sp.Stripe
		}
	}
	return off, end, c.pos < s.end
}

// next returns the next block of the request being split, then the seek
// that follows them, if any, then false.
func (s *splitter) next() (trace.Event, bool) {
	if !s.active {
		return trace.Event{}, false
	}
	e := &s.e
	if s.k == s.n {
		s.active = false
		if !s.seek {
			return trace.Event{}, false
		}
		// The blocks went to explicit offsets; put the file position
		// where the request left it.
		end := e.Offset + max(e.Ret, 0)
		return trace.Event{Op: trace.OpLseek, Rank: e.Rank, Thread: e.Thread, Start: e.End(),
			FD: e.FD, Path: e.Path, Offset: end, Ret: end}, true
	}
	var off, end int64
	switch {
	case s.inOrder:
		off = s.cur
		end = s.block(off)
		s.cur = end
	case s.sp.Order == "hash":
		for s.ring[s.ringPos] < 0 {
			s.ringPos = (s.ringPos + 1) % len(s.ring)
		}
		i := s.ring[s.ringPos]
		var more bool
		off, end, more = s.take(&s.srvs[i])
		if !more {
			s.ring[s.ringPos] = -1
		}
		s.ringPos = (s.ringPos + 1) % len(s.ring)
	default: // random
		// Pick uniformly among the servers that still have blocks.
		j := s.rng.IntN(len(s.open))
		var more bool
		off, end, more = s.take(&s.srvs[s.open[j]])
		if !more {
			s.open = append(s.open[:j], s.open[j+1:]...)
		}
	}
	ev := *e
	rel := off - e.Offset
	ev.Op, ev.Offset, ev.Size, ev.Count = s.op, off, end-off, 0
	ev.Ret = min(max(e.Ret-rel, 0), end-off)
	ev.Start = e.Start + mulDiv(s.k, max(e.Dur, 0), s.n)
	ev.Dur = max(e.Dur, 0) / s.n
	s.k++
	return ev, true
}

// mulDiv is a*b/c for non-negative a, b and positive c, without
// overflowing (a < c: the result is below b).
func mulDiv(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	q, _ := bits.Div64(hi, lo, uint64(c))
	return int64(q)
}

// splitSource is a rank's source with its large requests split, block
// by block as they are read.
type splitSource struct {
	in  trace.Source
	x   *transformed
	s   *splitter
	buf []trace.Event
	pos int
	eof bool
	err error
}

func (ss *splitSource) ReadEvents(evs []trace.Event) (int, error) {
	n := 0
	for n < len(evs) && ss.err == nil {
		if ss.s.active {
			if ev, ok := ss.s.next(); ok {
				evs[n] = ev
				n++
				continue
			}
		}
		if ss.pos == len(ss.buf) {
			if ss.eof || ss.err != nil {
				break
			}
			if ss.buf == nil {
				ss.buf = make([]trace.Event, 256)
			}
			k, err := ss.in.ReadEvents(ss.buf[:cap(ss.buf)])
			ss.buf, ss.pos = ss.buf[:k], 0
			if errors.Is(err, io.EOF) {
				ss.eof = true
			} else if err != nil {
				ss.err = err
			}
			continue
		}
		e := &ss.buf[ss.pos]
		ss.pos++
		if !ss.s.start(e) {
			evs[n] = *e
			n++
		} else if ss.s.err != nil {
			ss.err = ss.s.err
			break
		}
	}
	if n > 0 {
		return n, nil
	}
	if ss.err != nil {
		return 0, ss.err
	}
	return 0, io.EOF
}

func (ss *splitSource) Path(id trace.PathID) string { return ss.x.Path(id) }

func (ss *splitSource) Close() error {
	if c, ok := ss.in.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
