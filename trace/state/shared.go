package state

import (
	"slices"

	"github.com/iotrace/iotrace/trace"
)

// SharedPointers works out where the shared file pointer calls of every
// rank land, which no rank's follower can: the shared pointer of a file
// opened on a communicator moves with every member's calls.
// MPI_File_write_shared and its kin land at the pointer as the ranks reach
// it (in the order the calls are fed), the calls of one ordered collective
// in rank order from it, each moving it by what it moved;
// MPI_File_set_view sets it to 0 and MPI_File_seek_shared where it says.
// An ordered collective is placed when the pointer is next used another
// way (every member has made its call by then) or at the end.
type SharedPointers struct {
	pos     map[spKey]int64
	calls   []spCall            // every shared pointer call, in plan order
	pending map[spKey][]spRound // ordered collectives not placed yet, in order
	ordered map[spRound][]int   // the calls of each (indexes into calls)
	rounds  map[spKeyRank]int   // ordered calls each rank made on each key so far
	placed  map[spKey]int       // ordered collectives placed on each key
}

type spKey struct {
	path trace.PathID
	comm uint32
}

type spKeyRank struct {
	k    spKey
	rank int
}

type spRound struct {
	k spKey
	n int
}

type spCall struct {
	rank int
	off  int64
	n    int64
}

// NewSharedPointers returns the shared pointers of a run of ranks, all at
// 0.
func NewSharedPointers() *SharedPointers {
	return &SharedPointers{pos: map[spKey]int64{}, pending: map[spKey][]spRound{}, ordered: map[spRound][]int{},
		rounds: map[spKeyRank]int{}, placed: map[spKey]int{}}
}

// Event follows one MPI-IO call of the rank at index rank on the file
// handle a Follower says it used (its Path and Comm). Feed it every
// rank's calls in one order: the order the ranks reached them.
func (sp *SharedPointers) Event(rank int, e *trace.Event, path trace.PathID, comm uint32) {
	k := spKey{path, comm}
	info := e.Op.Info()
	switch {
	case e.Op == trace.OpMPIFileSetView && e.Ret >= 0:
		sp.place(k)
		sp.pos[k] = 0
	case e.Op == trace.OpMPIFileSeekShared && e.Ret >= 0:
		sp.place(k)
		switch e.Whence {
		case 0:
			sp.pos[k] = max(e.Offset, 0)
		case 1:
			sp.pos[k] = max(sp.pos[k]+e.Offset, 0)
		}
	case info.Addr == trace.AddrShared:
		n := max(e.Ret, 0)
		if !info.Collective {
			sp.place(k)
			sp.calls = append(sp.calls, spCall{rank: rank, off: sp.pos[k], n: n})
			sp.pos[k] += n
			return
		}
		kr := spKeyRank{k, rank}
		r := spRound{k, sp.rounds[kr]}
		sp.rounds[kr]++
		if _, ok := sp.ordered[r]; !ok && r.n >= sp.placed[k] {
			sp.pending[k] = append(sp.pending[k], r)
		}
		sp.ordered[r] = append(sp.ordered[r], len(sp.calls))
		sp.calls = append(sp.calls, spCall{rank: rank, n: n, off: -1})
	}
}

// place gives the ordered collectives pending on k their offsets: each
// from where the pointer is, its calls in rank order.
func (sp *SharedPointers) place(k spKey) {
	for _, r := range sp.pending[k] {
		idx := sp.ordered[r]
		slices.SortFunc(idx, func(a, b int) int { return sp.calls[a].rank - sp.calls[b].rank })
		pos := sp.pos[k]
		for _, i := range idx {
			sp.calls[i].off = pos
			pos += sp.calls[i].n
		}
		sp.pos[k] = pos
		delete(sp.ordered, r)
		sp.placed[k] = r.n + 1
	}
	delete(sp.pending, k)
}

// Offsets returns the offsets of each rank's shared pointer calls, in the
// order of its calls.
func (sp *SharedPointers) Offsets(ranks int) [][]int64 {
	if len(sp.calls) == 0 {
		return nil
	}
	for k := range sp.pending {
		sp.place(k)
	}
	out := make([][]int64, ranks)
	for _, c := range sp.calls {
		out[c.rank] = append(out[c.rank], max(c.off, 0))
	}
	return out
}
