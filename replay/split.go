package replay

import (
	"math/rand/v2"

	"github.com/iotrace/iotrace/trace"
)

// splitter cuts one rank's large requests into schedule blocks and orders
// them (see Split).
type splitter struct {
	sp     Split
	rank   uint32
	rng    *rand.Rand
	pieces []piece
	lists  [][]int // per server: indexes into pieces, in offset order
	heads  []int
	order  []int
}

type piece struct {
	off, n int64 // file offset and length
	rel    int64 // offset within the request
}

func newSplitter(sp Split, rank uint32) *splitter {
	return &splitter{sp: sp, rank: rank, rng: rand.New(rand.NewPCG(sp.Seed, uint64(rank)+0x5851f42d4c957f2d))}
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

func (s *splitter) split(e *trace.Event, out []trace.Event) []trace.Event {
	if !s.splittable(e) {
		return append(out, *e)
	}
	// Cut at multiples of the block size and of the stripe.
	s.pieces = s.pieces[:0]
	b, stripe := s.sp.Size, s.sp.Stripe
	for off, end := e.Offset, e.Offset+e.Size; off < end; {
		next := min(end, (off/b+1)*b, (off/stripe+1)*stripe)
		s.pieces = append(s.pieces, piece{off: off, n: next - off, rel: off - e.Offset})
		off = next
	}
	s.orderPieces()
	individual := e.Op.Info().Addr == trace.AddrIndividual
	reorder := s.sp.Order != "first"
	op := plainOp(e.Op)
	if reorder {
		op = explicitOp(e.Op)
	}
	n := int64(len(s.pieces))
	for k, i := range s.order {
		p := s.pieces[i]
		ev := *e
		ev.Op, ev.Offset, ev.Size, ev.Count = op, p.off, p.n, 0
		ev.Ret = min(max(e.Ret-p.rel, 0), p.n)
		ev.Start = e.Start + int64(k)*e.Dur/n
		ev.Dur = e.Dur / n
		out = append(out, ev)
	}
	if reorder && individual && e.Op.Class() == trace.ClassPOSIX {
		// The blocks went to explicit offsets; put the file position
		// where the request left it.
		end := e.Offset + max(e.Ret, 0)
		out = append(out, trace.Event{Op: trace.OpLseek, Rank: e.Rank, Thread: e.Thread, Start: e.End(),
			FD: e.FD, Path: e.Path, Offset: end, Ret: end})
	}
	return out
}

// orderPieces sets s.order to the issue order of s.pieces.
func (s *splitter) orderPieces() {
	s.order = s.order[:0]
	if s.sp.Order == "first" || s.sp.Servers <= 1 && s.sp.Order != "random" {
		for i := range s.pieces {
			s.order = append(s.order, i)
		}
		return
	}
	nsrv := s.sp.Servers
	if len(s.lists) != nsrv {
		s.lists = make([][]int, nsrv)
		s.heads = make([]int, nsrv)
	}
	for i := range s.lists {
		s.lists[i] = s.lists[i][:0]
		s.heads[i] = 0
	}
	for i, p := range s.pieces {
		srv := int((p.off / s.sp.Stripe) % int64(nsrv))
		s.lists[srv] = append(s.lists[srv], i)
	}
	left := len(s.pieces)
	switch s.sp.Order {
	case "random":
		for left > 0 {
			// Pick uniformly among the servers that still have blocks.
			open := 0
			for srv := range s.lists {
				if s.heads[srv] < len(s.lists[srv]) {
					open++
				}
			}
			k := s.rng.IntN(open)
			for srv := range s.lists {
				if s.heads[srv] == len(s.lists[srv]) {
					continue
				}
				if k == 0 {
					s.order = append(s.order, s.lists[srv][s.heads[srv]])
					s.heads[srv]++
					break
				}
				k--
			}
			left--
		}
	case "hash":
		for j := 0; left > 0; j++ {
			srv := (int(s.rank%uint32(nsrv)) + j) % nsrv
			if s.heads[srv] < len(s.lists[srv]) {
				s.order = append(s.order, s.lists[srv][s.heads[srv]])
				s.heads[srv]++
				left--
			}
		}
	}
}
