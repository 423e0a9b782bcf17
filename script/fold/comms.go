package fold

import (
	"fmt"
	"math/bits"
	"slices"
	"sort"

	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/trace"
)

// Communicators in a converted script: the groups declared at the top
// (inferGroups) and those split made. A rank's lowerer names the
// communicators it made; which ranks each has, only all ranks' traces
// tell: Convert gathers them (splitMembers) and then, in each rank's
// program, sets the colors and ids of its splits (splitColors) and
// writes the peers and roots of calls on a communicator as its ranks
// (commPeers).

// splitMembers returns, for each communicator a split made, its members:
// the ranks whose split returned its id, in increasing order (a script
// orders a split's ranks by their ranks in the parent).
func splitMembers(made []map[string]uint32, ranks []uint32) map[uint32][]int {
	out := map[uint32][]int{}
	for i, m := range made {
		for _, id := range m {
			out[id] = append(out[id], int(ranks[i]))
		}
	}
	for _, rs := range out {
		sort.Ints(rs)
	}
	return out
}

// A split site is one collective split: the parent's id and how many
// communicators each of its ranks made from it before.
type splitSite struct{ parent, seq uint32 }

// splitLeaves calls fn for each split of a rank's program, with the
// holes of its site and of the id it made; false if they are not
// constants (splits in a loop whose ids follow no progression).
func splitLeaves(list []*stmt, fn func(s *stmt, site splitSite, id int64, color, idHole int)) bool {
	ok := true
	for _, s := range list {
		if s.kind != tLeaf {
			ok = splitLeaves(s.body, fn) && ok
			continue
		}
		l := s.t.leaf
		if l.cmd != "split" {
			continue
		}
		parent, ok1 := s.holes[l.hidden].constant()
		seq, ok2 := s.holes[l.hidden+1].constant()
		color, idHole := -1, -1
		for _, a := range l.args {
			switch a.key {
			case "color":
				color = a.hole
			case "id":
				idHole = a.hole
			}
		}
		id, ok3 := s.holes[idHole].constant()
		if !ok1 || !ok2 || !ok3 {
			ok = false
			continue
		}
		fn(s, splitSite{uint32(parent), uint32(seq)}, id, color, idHole)
	}
	return ok
}

// splitColor is the color every rank of a split's parent gives: a
// function of the rank, or a list indexed by the rank.
type splitColor struct {
	f    rfun
	list []int64 // nil: f
}

// splitColors works out, from every rank's program, the color of each
// split: ranks that made one communicator share a color (its number
// among those the split made, by their lowest ranks), the others have
// MPI_UNDEFINED. It sets the color hole of each split to the number of
// its site's color (0: every rank 0, the default, left out), which is
// the same on every rank of the site, and leaves the id out where the
// script computes the trace's (the preload capture's). It returns the
// colors by number, for the emitter.
func splitColors(lists [][]*stmt, rs []int, nranks int, groups map[uint32][]int, members map[uint32][]int) (map[int64]splitColor, error) {
	sites := map[splitSite]map[int]int64{}
	for i, list := range lists {
		if !splitLeaves(list, func(_ *stmt, site splitSite, id int64, _, _ int) {
			if sites[site] == nil {
				sites[site] = map[int]int64{}
			}
			sites[site][rs[i]] = id
		}) {
			return nil, fmt.Errorf("rank %d: communicators made in a loop whose ids follow no progression", rs[i])
		}
	}
	colors := map[int64]splitColor{}
	number := map[splitSite]int64{}
	var keys []splitSite
	for site := range sites {
		keys = append(keys, site)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].parent < keys[j].parent || keys[i].parent == keys[j].parent && keys[i].seq < keys[j].seq
	})
	for _, site := range keys {
		byRank := sites[site]
		var ms []int // the parent's ranks
		for r := range byRank {
			ms = append(ms, r)
		}
		sort.Ints(ms)
		// The communicators made, numbered by their lowest rank.
		var ids []int64
		for _, r := range ms {
			if id := byRank[r]; id >= 0 && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
		vals := make([]int64, len(ms))
		zero := true
		for i, r := range ms {
			vals[i] = script.MPIUndefined
			if k := slices.Index(ids, byRank[r]); k >= 0 {
				vals[i] = int64(k)
			}
			zero = zero && vals[i] == 0
		}
		if zero {
			continue
		}
		c := splitColor{}
		if f, ok := fitColor(ms, vals, nranks); ok {
			c.f = f
		} else {
			c.list = make([]int64, nranks)
			for i := range c.list {
				c.list[i] = script.MPIUndefined
			}
			for i, r := range ms {
				c.list[r] = vals[i]
			}
		}
		number[site] = int64(len(colors) + 1)
		colors[number[site]] = c
	}
	for i, list := range lists {
		splitLeaves(list, func(s *stmt, site splitSite, id int64, color, idHole int) {
			holes := slices.Clone(s.holes)
			h := s.t.leaf.hidden
			holes[h], holes[h+1] = nil, nil
			if color >= 0 {
				holes[color] = constPoly(number[site])
			}
			if id >= 0 && uint32(id) == script.CommID(site.parent, site.seq, members[uint32(id)]) {
				holes[idHole] = constPoly(-1)
			}
			s.holes = holes
		})
		_ = i
	}
	return colors, nil
}

// fitColor finds a function of the rank that gives vals on ranks: a
// constant, a line, a ring, or a 2-D decomposition (rank % m, rank / m).
// Any that fits will do: the color is computed only for these ranks.
func fitColor(ranks []int, vals []int64, nranks int) (rfun, bool) {
	if len(ranks) < 2 {
		return rfun{kind: rConst, a: vals[0]}, true
	}
	if f, ok := fitRank(ranks, vals, nranks, true); ok {
		return f, true
	}
	for m := int64(2); m < int64(nranks); m++ {
		if f, ok := fitGrid(ranks, vals, m); ok {
			return f, true
		}
	}
	return rfun{}, false
}

// commPeers rewrites, in rank r's program, the peers and roots of the
// commands that run on a group's or a split's communicator from world
// ranks, as traces give them, to ranks of that communicator, as a script
// names them (docs/SCRIPT.md, "on" and "comm NAME"). A peer's other form,
// xor(grank, x), is kept where it still holds: where the peer is one
// rank, and where the communicator's ranks are consecutive from a
// multiple of a power of two at least their number.
func commPeers(list []*stmt, groups map[uint32][]int, splits map[string]uint32, members map[uint32][]int, r int) error {
	for _, s := range list {
		if s.kind != tLeaf {
			if err := commPeers(s.body, groups, splits, members, r); err != nil {
				return err
			}
			continue
		}
		l := s.t.leaf
		if l == nil {
			continue
		}
		var ms []int
		name := ""
		switch {
		case l.commName != "":
			ms, name = members[splits[l.commName]], "communicator "+l.commName
		case l.comm >= 2:
			ms, name = groups[l.comm], fmt.Sprintf("communicator %d", l.comm)
		}
		if len(ms) == 0 || ms[0] == 0 && ms[len(ms)-1] == len(ms)-1 {
			continue // the world's numbering, or a group from rank 0
		}
		me := slices.Index(ms, r)
		first, size := int64(ms[0]), int64(len(ms))
		consecutive := ms[len(ms)-1]-ms[0] == len(ms)-1
		aligned := consecutive && first%(int64(1)<<bits.Len64(uint64(size-1))) == 0
		holes := slices.Clone(s.holes)
		for _, a := range l.args {
			if a.maskHole <= 0 && a.key != "root" {
				continue
			}
			p := holes[a.hole]
			v, one := p.constant()
			if one && (v == -1 || v == int64(trace.ProcNull)) {
				continue // any source, or none
			}
			switch {
			case one:
				i := slices.Index(ms, int(v))
				if i < 0 {
					return fmt.Errorf("rank %d: %s %d is not a rank of %s", r, a.key, v, name)
				}
				holes[a.hole] = constPoly(int64(i))
				if a.maskHole > 0 && me >= 0 {
					holes[a.altHole] = constPoly(int64(i) ^ int64(me))
				}
			case consecutive:
				holes[a.hole] = shiftConst(p, -first)
				if a.maskHole > 0 && !aligned {
					if m, ok := holes[a.maskHole].constant(); ok {
						holes[a.maskHole] = constPoly(m &^ 2)
					}
				}
			default:
				return fmt.Errorf("rank %d: the %s of a call on %s changes in a loop, and its ranks are not consecutive", r, a.key, name)
			}
		}
		s.holes = holes
	}
	return nil
}
