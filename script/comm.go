package script

import (
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/iotrace/iotrace/trace"
)

// Communicators a script makes with split (MPI_Comm_split, and
// MPI_Comm_dup with call MPI_Comm_dup). A split is collective over the
// current communicator (the one of the enclosing on block, or of comm
// NAME); the ranks whose color is equal make one new communicator, their
// ranks in it ordered by key, then by their ranks in the parent, and a
// rank whose color is negative (MPI_UNDEFINED) gets none. Every rank
// computes the members itself: color and key are evaluated for each rank
// of the parent (the checker lets them use the rank, params and
// constants only). Its id is the one the preload capture gives
// (docs/FORMAT.md: a hash of the parent's id, how many communicators were
// made from the parent before, and the members), unless the script gives
// one with id N.

// mpiUndefined is MPI_UNDEFINED (Open MPI's and MPICH's value).
const mpiUndefined = -32766

// commH is a communicator handle of a rank.
type commH struct {
	open    bool
	id      uint32
	members []int // world ranks, by rank in the communicator
	me      int   // this rank's rank in it
}

// commReg is what an instance knows of the communicators its scripts
// made: every rank that makes one registers it, with the same members.
// Each gets an index after those of the world, self and the groups, for
// the completion log.
type commReg struct {
	mu      sync.Mutex
	index   map[uint32]int
	members [][]int
}

// registerComm records communicator id with its members.
func (in *Instance) registerComm(id uint32, members []int) error {
	r := &in.reg
	r.mu.Lock()
	defer r.mu.Unlock()
	if int(id) < 2+len(in.groups) {
		return fmt.Errorf("communicator id %d is taken (world, self and the groups are 0 to %d)", id, 1+len(in.groups))
	}
	if i, ok := r.index[id]; ok {
		if !slices.Equal(r.members[i], members) {
			return fmt.Errorf("communicator id %d is made with two different sets of ranks", id)
		}
		return nil
	}
	if r.index == nil {
		r.index = map[uint32]int{}
	}
	r.index[id] = len(r.members)
	r.members = append(r.members, members)
	return nil
}

// comm returns the members of a communicator a split made, and its index
// among all of them.
func (in *Instance) splitComm(id uint32) ([]int, int, bool) {
	r := &in.reg
	r.mu.Lock()
	defer r.mu.Unlock()
	i, ok := r.index[id]
	if !ok {
		return nil, 0, false
	}
	return r.members[i], 2 + len(in.groups) + i, true
}

// commIndex returns the dense index of communicator id: world, self, the
// groups, then those splits made.
func (in *Instance) commIndex(id uint32) (int, bool) {
	if int64(id) < int64(2+len(in.groups)) {
		return int(id), true
	}
	_, i, ok := in.splitComm(id)
	return i, ok
}

// fnv is the hash the preload shim names communicators with.
func fnv(h, v uint32) uint32 {
	for range 4 {
		h ^= v & 0xff
		h *= 16777619
		v >>= 8
	}
	return h
}

// commID is the id the preload shim gives the communicator with members
// made from parent after seq others.
func commID(parent, seq uint32, members []int) uint32 {
	key := fnv(fnv(2166136261, parent), seq)
	sorted := slices.Clone(members)
	sort.Ints(sorted)
	h := fnv(2166136261, key)
	for _, m := range sorted {
		h = fnv(h, uint32(m))
	}
	if h < 2 {
		h += 2
	}
	return h
}

// curMembers returns the world ranks of the current communicator, by
// rank in it.
func (it *Interp) curMembers() []int {
	switch {
	case it.members != nil:
		return it.members
	case it.group >= 0:
		g := it.inst.groups[it.group]
		return seq(g.First, g.Size)
	}
	return seq(0, int(it.nranks))
}

// split runs split as NAME: the event, and the communicator handle.
func (it *Interp) split(cm *cCmd, ev *trace.Event) (bool, error) {
	parent := it.comm
	members := it.curMembers()
	// Color and key of every rank of the parent, computed as that rank
	// computes them.
	color, key := cm.arg("color"), cm.arg("key")
	colors := make([]int64, len(members))
	keys := make([]int64, len(members))
	tmp := *it
	var mine = -1
	for i, r := range members {
		tmp.rank, tmp.grank = int64(r), int64(i)
		if color != nil {
			v, err := color.fi(&tmp)
			if err != nil {
				return false, err
			}
			colors[i] = v
		}
		if key != nil {
			v, err := key.fi(&tmp)
			if err != nil {
				return false, err
			}
			keys[i] = v
		}
		if int64(r) == it.rank {
			mine = i
		}
	}
	if mine < 0 {
		return false, evalErr(cm.pos, "split on a communicator this rank is not in")
	}
	if it.splits == nil {
		it.splits = map[uint32]uint32{}
	}
	seqN := it.splits[parent]
	it.splits[parent]++
	e := trace.Event{Op: cm.recOp(trace.OpMPICommSplit), Comm: parent, Ret: -1}
	h := &it.chs[cm.h]
	if cm.callOp == trace.OpMPICommDup {
		// A dup: every rank of the parent, in its order.
		for i := range colors {
			colors[i], keys[i] = 0, 0
		}
	}
	var in []int
	if colors[mine] >= 0 {
		for i := range members {
			if colors[i] == colors[mine] {
				in = append(in, i)
			}
		}
		sort.SliceStable(in, func(a, b int) bool { return keys[in[a]] < keys[in[b]] })
		world := make([]int, len(in))
		me := 0
		for j, i := range in {
			world[j] = members[i]
			if i == mine {
				me = j
			}
		}
		id := commID(parent, seqN, world)
		if x := cm.arg("id"); x != nil {
			v, err := it.nonNeg(x, "a communicator id")
			if err != nil {
				return false, err
			}
			if v > 1<<32-1 {
				return false, evalErr(x.pos, fmt.Sprintf("communicator id %d out of range", v))
			}
			id = uint32(v)
		}
		if err := it.inst.registerComm(id, world); err != nil {
			return false, evalErr(cm.pos, err.Error())
		}
		*h = commH{open: true, id: id, members: world, me: me}
		e.Ret = int64(id)
	} else {
		*h = commH{}
	}
	if cm.ret != nil {
		// A failed split: no communicator.
		v, err := it.int(cm.ret)
		if err != nil {
			return false, err
		}
		e.Ret = v
		*h = commH{}
	}
	return it.collective(e, ev)
}

// onComm makes communicator handle slot the current communicator for one
// command, and returns what restores the one before.
func (it *Interp) onComm(cm *cCmd) (func(), error) {
	c := &it.chs[cm.commH]
	if !c.open {
		return nil, evalErr(cm.pos, fmt.Sprintf("%s is no communicator of rank %d (its split made none here)", cm.commName, it.rank))
	}
	group, comm, grank, gsize, members := it.group, it.comm, it.grank, it.gsize, it.members
	it.group, it.comm, it.grank, it.gsize, it.members = -1, c.id, int64(c.me), int64(len(c.members)), c.members
	it.commName = cm.commName
	return func() {
		it.group, it.comm, it.grank, it.gsize, it.members = group, comm, grank, gsize, members
		it.commName = ""
	}, nil
}
