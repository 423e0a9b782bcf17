package script

import (
	"fmt"
	"math"
)

// Processes and descriptor tables of a rank, as the interpreter keeps
// them. The rules are trace/state's (Follower), mirrored here because an
// interpreter's descriptors are its handles: a thread's calls use the
// table of its process; a thread the script never made with fork or clone
// belongs to the rank's first process (one process for scripts without
// process commands, whose threads share one table); fork copies the
// table (CLONE_FILES shares it), so that a handle name in the child names
// the child's copy, on the same open file description (position,
// O_APPEND); exec closes the close-on-exec descriptors; a process ends
// with its last thread, and its descriptors close with it. Putting a
// descriptor where one is open (open or dup with fd N, inherit) closes
// the one there first, as dup2 does. MPI file handles belong to the rank.

// fdTable is a descriptor table: the POSIX handles of the processes that
// share it, and which handle holds each open descriptor.
type fdTable struct {
	hs    []handle // by handle slot
	fds   fdMap
	procs int // processes that use it
}

// proc is a process of the rank.
type proc struct {
	id      uint32 // its first thread
	tab     *fdTable
	threads int
	ended   bool
}

// fdMap says what holds each open descriptor of a table: a handle (its
// slot + 1) or the implicit command being run (holdTemp). Small
// descriptors are in a slice, others in a map, so that `fd 1000000`
// costs one entry.
type fdMap struct {
	low  []int32
	high map[int32]int32
	n    int // open descriptors
}

const (
	holdTemp = -1      // a descriptor an implicit command holds for its call
	lowFDs   = 1 << 12 // descriptors below it live in the slice
	firstFD  = 3       // where the lowest free descriptor is looked for
)

func (m *fdMap) get(fd int32) int32 {
	if fd >= 0 && int(fd) < len(m.low) {
		return m.low[fd]
	}
	if fd >= lowFDs || fd < 0 {
		return m.high[fd]
	}
	return 0
}

// set makes fd held by v (0: free).
func (m *fdMap) set(fd int32, v int32) {
	old := m.get(fd)
	switch {
	case old == 0 && v != 0:
		m.n++
	case old != 0 && v == 0:
		m.n--
	}
	if fd >= 0 && fd < lowFDs {
		if int(fd) >= len(m.low) {
			if v == 0 {
				return
			}
			low := make([]int32, min(max(16, 2*len(m.low), int(fd)+1), lowFDs))
			copy(low, m.low)
			m.low = low
		}
		m.low[fd] = v
		return
	}
	if v == 0 {
		delete(m.high, fd)
		return
	}
	if m.high == nil {
		m.high = map[int32]int32{}
	}
	m.high[fd] = v
}

// lowest returns the lowest free descriptor from firstFD on.
func (m *fdMap) lowest() (int32, bool) {
	if m.n >= maxOpen {
		return 0, false
	}
	for fd := int32(firstFD); ; fd++ {
		if m.get(fd) == 0 {
			return fd, true
		}
	}
}

// each calls fn for every open descriptor, in increasing order below
// lowFDs.
func (m *fdMap) each(fn func(fd, v int32)) {
	for fd, v := range m.low {
		if v != 0 {
			fn(int32(fd), v)
		}
	}
	for fd, v := range m.high {
		fn(fd, v)
	}
}

func (m *fdMap) clone() fdMap {
	c := fdMap{low: append([]int32(nil), m.low...), n: m.n}
	if m.high != nil {
		c.high = make(map[int32]int32, len(m.high))
		for k, v := range m.high {
			c.high[k] = v
		}
	}
	return c
}

func (t *fdTable) clone() *fdTable {
	return &fdTable{hs: append([]handle(nil), t.hs...), fds: t.fds.clone(), procs: 1}
}

// procOf returns the process of thread th (see the rules above).
func (it *Interp) procOf(th uint32) *proc {
	if it.lastP != nil && it.lastTh == th {
		return it.lastP
	}
	p := it.threads[th]
	if p == nil {
		if it.main == nil {
			it.main = it.newProc(th, &fdTable{hs: make([]handle, it.prog.nhandles)})
		}
		p = it.main
		p.threads++
		if it.threads == nil {
			it.threads = map[uint32]*proc{}
		}
		it.threads[th] = p
	}
	it.lastTh, it.lastP = th, p
	return p
}

func (it *Interp) newProc(id uint32, t *fdTable) *proc {
	t.procs++
	return &proc{id: id, tab: t}
}

// install puts handle slot at descriptor fd of table t, closing the
// handle that held fd first.
func (it *Interp) install(t *fdTable, fd int32, slot int, h handle) {
	it.closeFD(t, fd)
	h.open, h.fd = true, fd
	t.hs[slot] = h
	t.fds.set(fd, int32(slot)+1)
}

// closeFD closes descriptor fd of t, and the handle that held it.
func (it *Interp) closeFD(t *fdTable, fd int32) {
	v := t.fds.get(fd)
	if v == 0 {
		return
	}
	t.fds.set(fd, 0)
	if v > 0 {
		h := &t.hs[v-1]
		h.open, h.closedAt = false, it.cmdPos
	}
}

// unshare gives p a table of its own, if it shares one.
func (it *Interp) unshare(p *proc) {
	if p.tab.procs <= 1 {
		return
	}
	p.tab.procs--
	p.tab = p.tab.clone()
}

// closeWhere closes the descriptors of t for which shut is true (h: the
// handle that holds fd).
func (it *Interp) closeWhere(t *fdTable, shut func(fd int32, h *handle) bool) {
	var fds []int32
	t.fds.each(func(fd, v int32) {
		var h *handle
		if v > 0 {
			h = &t.hs[v-1]
		}
		if shut(fd, h) {
			fds = append(fds, fd)
		}
	})
	for _, fd := range fds {
		it.closeFD(t, fd)
	}
}

// dropThread forgets thread th; its process ends with its last thread,
// and its descriptors close unless another process shares its table.
func (it *Interp) dropThread(th uint32) {
	p := it.threads[th]
	if p == nil {
		return
	}
	delete(it.threads, th)
	it.lastP = nil
	if p.threads--; p.threads > 0 || p.ended {
		return
	}
	p.ended = true
	if p.tab.procs--; p.tab.procs <= 0 {
		it.closeWhere(p.tab, func(int32, *handle) bool { return true })
	}
	if p == it.main {
		it.main = nil
	}
}

// fork makes thread child the first thread of a new process, a copy of
// p (sharing p's table with CLONE_FILES).
func (it *Interp) fork(p *proc, child uint32, shareTable bool) {
	it.dropThread(child)
	t := p.tab
	if !shareTable {
		t = t.clone()
		t.procs = 0
	}
	c := it.newProc(child, t)
	c.threads = 1
	it.threads[child] = c
	it.lastP = nil
}

// newThread makes th a new thread of p.
func (it *Interp) newThread(p *proc, th uint32) {
	it.dropThread(th)
	p.threads++
	it.threads[th] = p
	it.lastP = nil
}

// execProc runs a new program in p: its table becomes its own, its
// close-on-exec descriptors close, its other threads are gone.
func (it *Interp) execProc(p *proc, th uint32) {
	it.unshare(p)
	it.closeWhere(p.tab, func(_ int32, h *handle) bool { return h != nil && h.cloexec })
	for t, q := range it.threads {
		if q == p && t != th {
			delete(it.threads, t)
			p.threads--
		}
	}
	it.lastP = nil
}

// setThread evaluates the thread of a command (0 without one) and makes
// its process the current one.
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
	it.p = it.procOf(th)
	return nil
}

// descArg evaluates the fd argument of a command: the descriptor it
// gives, or the lowest free one from 3.
func (it *Interp) descArg(cm *cCmd) (int32, error) {
	x := cm.arg("fd")
	if x == nil {
		fd, ok := it.p.tab.fds.lowest()
		if !ok {
			return 0, evalErr(cm.pos, errTooMany)
		}
		return fd, nil
	}
	v, err := it.nonNeg(x, "a descriptor")
	if err != nil {
		return 0, err
	}
	if v > math.MaxInt32 {
		return 0, evalErr(x.pos, fmt.Sprintf("descriptor %d out of range (0 to %d)", v, math.MaxInt32))
	}
	if it.p.tab.fds.get(int32(v)) == 0 && it.p.tab.fds.n >= maxOpen {
		return 0, evalErr(cm.pos, errTooMany)
	}
	return int32(v), nil
}

// oCloexec is O_CLOEXEC (x86-64 value) in open flags.
const oCloexec = 0x80000
