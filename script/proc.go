package script

import (
	"fmt"
	"math"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/state"
)

// Processes, descriptor tables and MPI file handles of a rank are
// trace/state's: the interpreter feeds its follower every event it makes
// (and the quiet inherits it makes none for), so that the rules are the
// ones every reader of a trace follows. A thread's calls use the table of
// its process; a thread the script never made with fork or clone belongs
// to the rank's first process (one process for scripts without process
// commands, whose threads share one table); fork copies the table
// (CLONE_FILES shares it), on the same open file descriptions (position,
// O_APPEND); exec closes the close-on-exec descriptors; a process ends
// with its last thread, and its descriptors close with it. Putting a
// descriptor where one is open (open or dup with fd N, inherit) closes
// the one there first, as dup2 does.
//
// What the interpreter keeps itself is its names: which handle names each
// descriptor of a table (names, the table's data in the follower, which
// fork copies), so that a handle name in a forked child names the child's
// copy; and the rank's MPI file handles by name.

type (
	follower = state.Follower[struct{}, struct{}]
	desc     = state.Desc[struct{}]
	mhandle  = state.Handle[struct{}]
)

// names says which handle names each descriptor of a descriptor table.
type names struct {
	hs   []handle           // by handle slot
	byFD state.FDMap[int32] // the handle slot + 1 that names each descriptor
}

func (n *names) clone() *names {
	return &names{hs: append([]handle(nil), n.hs...), byFD: n.byFD.Clone()}
}

// firstFD is where the lowest free descriptor is looked for.
const firstFD = 3

// newFollower returns the follower of the interpreter's rank, wired to
// its names: a descriptor that closes, by whatever call, closes the
// handle that named it.
func (it *Interp) newFollower() *follower {
	f := state.New[struct{}, struct{}](nil)
	f.OnClose = func(p *state.Proc[struct{}], fd int32, _ *desc) {
		n, _ := p.TableData().(*names)
		if n == nil {
			return
		}
		if v := n.byFD.Get(fd); v > 0 {
			n.byFD.Set(fd, 0)
			h := &n.hs[v-1]
			h.open, h.d, h.closedAt = false, nil, it.cmdPos
		}
	}
	f.CopyTableData = func(v any) any {
		if n, _ := v.(*names); n != nil {
			return n.clone()
		}
		return nil
	}
	return f
}

// names returns the handle names of the current thread's process.
func (it *Interp) names() *names {
	p := it.st.Proc(it.th)
	n, _ := p.TableData().(*names)
	if n == nil {
		n = &names{hs: make([]handle, it.prog.nhandles)}
		p.SetTableData(n)
	}
	return n
}

// bind makes handle slot name descriptor fd of the current process, which
// the event just followed put there: a handle that named fd before no
// longer does.
func (it *Interp) bind(slot int, fd int32, path trace.PathID, at Pos) error {
	d := it.st.Lookup(it.th, fd)
	if d == nil {
		// The call, as trace/state reads it, made no descriptor: the
		// script must not name one.
		return evalErr(at, fmt.Sprintf("the call leaves no descriptor %d to name", fd))
	}
	n := it.names()
	if v := n.byFD.Get(fd); v > 0 && int(v-1) != slot {
		h := &n.hs[v-1]
		h.open, h.d, h.closedAt = false, nil, at
	}
	n.byFD.Set(fd, int32(slot)+1)
	n.hs[slot] = handle{open: true, fd: fd, path: path, d: d, openedAt: at}
	return nil
}

// setThread evaluates the thread of a command (0 without one).
func (it *Interp) setThread(cm *cCmd) error {
	var th uint32
	if cm.thread != nil {
		v, err := it.nonNeg(cm.thread, "a thread")
		if err != nil {
			return err
		}
		if v > math.MaxUint32 {
			return evalErr(cm.thread.pos, fmt.Sprintf("thread %d out of range (0 to %d)", v, uint32(math.MaxUint32)))
		}
		th = uint32(v)
	}
	it.th = th
	return nil
}

// descArg evaluates the fd argument of a command: the descriptor it
// gives, or the lowest free one from 3.
func (it *Interp) descArg(cm *cCmd) (int32, error) {
	x := cm.arg("fd")
	if x == nil {
		return it.lowestFD(cm)
	}
	v, err := it.nonNeg(x, "a descriptor")
	if err != nil {
		return 0, err
	}
	if v > math.MaxInt32 {
		return 0, evalErr(x.pos, fmt.Sprintf("descriptor %d out of range (0 to %d)", v, math.MaxInt32))
	}
	if it.st.Lookup(it.th, int32(v)) == nil && it.st.Open(it.th) >= maxOpen {
		return 0, evalErr(cm.pos, errTooMany)
	}
	return int32(v), nil
}

// lowestFD returns the lowest free descriptor from 3 of the current
// process, where the command's open goes.
func (it *Interp) lowestFD(cm *cCmd) (int32, error) {
	if it.st.Open(it.th) >= maxOpen {
		return 0, evalErr(cm.pos, errTooMany)
	}
	return it.st.Free(it.th, firstFD), nil
}
