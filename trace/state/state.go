// Package state follows the file state a trace's calls make and use, once,
// below every source and consumer of traces: for each rank, its processes
// and threads, their descriptor tables of open file descriptions
// (positions, status flags such as O_APPEND, close-on-exec), its MPI file
// handles with their views and individual pointers; and, across ranks, the
// namespace (namespace.go): which names exist, which files they name, what
// a replay must find before it starts, and the sizes files reach.
//
// A Follower is fed one rank's events in call order. For each it answers
// what the call worked on — the process, the open file description, the
// MPI file handle, the file's path, the byte range — and updates the
// state with what the call did, as Go's execution-trace reader tracks
// goroutine state once so that analyses need not:
//
//	f := state.New[D, H](nil)
//	for each event e of the rank {
//		st := f.Apply(&e)
//		// st.Desc, st.Path, st.Off…: what e worked on
//	}
//
// The effects of each op come from its trace.OpInfo (FD, NS, Proc,
// Resize), not from switches over ops. D and H are the consumer's own data
// on each open file description and MPI file handle (a replay keeps its
// real descriptor there; a recorder the id of the path in its sink); use
// struct{} for none.
//
// The follower believes the trace: a data call at the file position is at
// the Offset the capture recorded, a call that failed changed nothing, a
// descriptor the trace never opened is learnt from the first call that
// uses it (its path, if the event has one). Threads and processes come
// from the fork, clone, exec and exit events captures record; a trace
// without them (older captures, imports, scripts) is one process whose
// threads share one table.
package state

import (
	"math"

	"github.com/iotrace/iotrace/trace"
)

// Desc is an open file description: what an open makes, and what dup and
// fork share.
type Desc[D any] struct {
	// Path is the path the description was opened on, as the trace names
	// it (0: unknown, as for a descriptor learnt without a path).
	Path trace.PathID
	// Flags are its open flags (x86-64 values); F_SETFL changes the status
	// flags among them.
	Flags uint32
	// Pos is its file position, -1 when unknown.
	Pos int64
	// Learnt says the trace never showed it opened: it was inherited (an
	// OpInherit event) or learnt from the first call on its descriptor.
	Learnt bool
	// Node is the file in the namespace, when the follower keeps one.
	Node *Node
	// Aux is the consumer's own data.
	Aux D

	refs int // descriptors (in every table) that refer to it
}

// Append reports whether writes through d go to the end of the file.
func (d *Desc[D]) Append() bool { return d.Flags&trace.OAppend != 0 }

// View is an MPI file view: blocks of BlockLen bytes every Stride bytes
// from Disp (BlockLen 0, or Stride not above it: contiguous from Disp).
type View struct{ Disp, BlockLen, Stride int64 }

// FileOffset maps an offset within the view to the file.
func (v View) FileOffset(off int64) int64 {
	if v.BlockLen > 0 && v.Stride > v.BlockLen {
		return v.Disp + off/v.BlockLen*v.Stride + off%v.BlockLen
	}
	return v.Disp + off
}

// Range returns the file range [first, end) the view bytes [off, off+n)
// touch (n > 0).
func (v View) Range(off, n int64) (first, end int64) {
	return v.FileOffset(off), v.FileOffset(off+n-1) + 1
}

// Handle is an MPI file handle of a rank.
type Handle[H any] struct {
	Path  trace.PathID
	Comm  uint32
	Amode uint32
	View  View
	Pos   int64 // the individual file pointer, in bytes of the view
	Node  *Node
	Aux   H
}

// Proc is a process of the rank.
type Proc[D any] struct {
	// ID is the trace's index of the process's first thread.
	ID     uint32
	Parent *Proc[D]
	// Exe is the program it last exec'd (0: not seen).
	Exe   trace.PathID
	Ended bool
	// Maps are its file mappings, for a recorder (see Maps): fork copies
	// them, exec drops them.
	Maps Maps

	tab     *table[D]
	threads int
}

// TableData returns the consumer's data on p's descriptor table (nil until
// SetTableData): what processes sharing the table (CLONE_FILES) share,
// and what Follower.CopyTableData copies when fork or exec copies it.
func (p *Proc[D]) TableData() any { return p.tab.data }

// SetTableData sets the consumer's data on p's descriptor table.
func (p *Proc[D]) SetTableData(v any) { p.tab.data = v }

// slot is one descriptor of a table.
type slot[D any] struct {
	d       *Desc[D]
	cloexec bool
}

// table is a descriptor table: shared by the threads of a process (and by
// processes made with CLONE_FILES), copied by fork.
type table[D any] struct {
	fds   FDMap[slot[D]]
	procs int // processes that use it
	data  any // the consumer's (Proc.TableData)
}

// get returns fd's slot, nil if it is not open. Do not change it: put.
func (t *table[D]) get(fd int32) *slot[D] {
	if uint32(fd) < uint32(len(t.fds.low)) {
		if s := &t.fds.low[fd]; s.d != nil {
			return s
		}
		return nil
	}
	if s, ok := t.fds.high[fd]; ok {
		return &s
	}
	return nil
}

func (t *table[D]) put(fd int32, s slot[D]) { t.fds.Set(fd, s) }

func (t *table[D]) setCloexec(fd int32, on bool) {
	if s := t.get(fd); s != nil {
		t.fds.Set(fd, slot[D]{d: s.d, cloexec: on})
	}
}

// remove takes fd out of the table and returns its description.
func (t *table[D]) remove(fd int32) *Desc[D] { return t.fds.Delete(fd).d }

// each calls fn for every open descriptor, in increasing order.
func (t *table[D]) each(fn func(fd int32, s slot[D])) { t.fds.Each(fn) }

// Follower follows one rank's state. The zero value is not ready: use
// New.
type Follower[D, H any] struct {
	// OnRelease, if set, is called when the last descriptor of an open
	// file description closes (by close, dup2 onto it, exec, or the end of
	// its process), with the description as it was.
	OnRelease func(*Desc[D])
	// OnHandleClose, if set, is called when an MPI file handle closes.
	OnHandleClose func(*Handle[H])
	// OnClose, if set, is called when descriptor fd of process p closes
	// (by close, an open, dup or inherit onto it, close_range, exec's
	// close-on-exec, the end of the processes that used its table), before
	// OnRelease sees its description.
	OnClose func(p *Proc[D], fd int32, d *Desc[D])
	// CopyTableData, if set, returns the consumer's data for a copy of a
	// descriptor table (fork without CLONE_FILES, and exec or close_range
	// unsharing one) from the original's; without it the copy has none.
	CopyTableData func(any) any

	ns       *Namespace
	threads  map[uint32]*Proc[D]
	main     *Proc[D]
	last     uint32 // the thread of the previous lookup
	lastProc *Proc[D]
	handles  map[int32]*Handle[H]
	lastH    *Handle[H] // the handle of the previous MPI-IO call, by its number lastHN
	lastHN   int32
	procs    int  // processes alive
	ebadf    bool // the event being followed failed with EBADF
	scratch  Step[D, H]
}

// New returns a follower of one rank. ns, if not nil, is the namespace the
// rank's calls act on, which several ranks' followers may share (feed them
// their events in one order, then: see Namespace).
func New[D, H any](ns *Namespace) *Follower[D, H] {
	return &Follower[D, H]{ns: ns, threads: map[uint32]*Proc[D]{}, handles: map[int32]*Handle[H]{}}
}

// Namespace returns the namespace the follower acts on (nil: none).
func (f *Follower[D, H]) Namespace() *Namespace { return f.ns }

// Proc returns the process of thread th: the one a fork or clone event
// made it in, or the rank's first process for a thread the trace never
// showed created.
func (f *Follower[D, H]) Proc(th uint32) *Proc[D] {
	if f.lastProc != nil && f.last == th {
		return f.lastProc
	}
	p := f.threads[th]
	if p == nil {
		if f.main == nil {
			f.main = f.newProc(th, nil, &table[D]{})
		}
		p = f.main
		p.threads++
		f.threads[th] = p
	}
	f.last, f.lastProc = th, p
	return p
}

func (f *Follower[D, H]) newProc(id uint32, parent *Proc[D], t *table[D]) *Proc[D] {
	t.procs++
	f.procs++
	return &Proc[D]{ID: id, Parent: parent, tab: t}
}

// Unshare gives thread th's process a descriptor table of its own, if it
// shares one (unshare(CLONE_FILES), which no event records).
func (f *Follower[D, H]) Unshare(th uint32) { f.unshare(f.Proc(th)) }

// Procs returns how many processes of the rank are alive.
func (f *Follower[D, H]) Procs() int { return f.procs }

// Lookup returns the description of descriptor fd in thread th's process,
// or nil.
func (f *Follower[D, H]) Lookup(th uint32, fd int32) *Desc[D] {
	if s := f.Proc(th).tab.get(fd); s != nil {
		return s.d
	}
	return nil
}

// Free returns the lowest descriptor from `from` on that is free in
// thread th's process (where its next open goes, from 0).
func (f *Follower[D, H]) Free(th uint32, from int32) int32 {
	return f.Proc(th).tab.fds.Lowest(from)
}

// Open returns how many descriptors are open in thread th's process.
func (f *Follower[D, H]) Open(th uint32) int { return f.Proc(th).tab.fds.Len() }

// Handle returns MPI file handle h, or nil.
func (f *Follower[D, H]) Handle(h int32) *Handle[H] { return f.handle(h) }

// handle returns MPI file handle n, or nil: most MPI-IO calls use the
// handle the call before did.
func (f *Follower[D, H]) handle(n int32) *Handle[H] {
	if f.lastH != nil && f.lastHN == n {
		return f.lastH
	}
	h := f.handles[n]
	if h != nil {
		f.lastH, f.lastHN = h, n
	}
	return h
}

// Each calls fn for every descriptor open in thread th's process.
func (f *Follower[D, H]) Each(th uint32, fn func(fd int32, d *Desc[D])) {
	f.Proc(th).tab.each(func(fd int32, s slot[D]) { fn(fd, s.d) })
}

// CloseAll closes every descriptor of every process and every MPI file
// handle, as the end of the rank's processes does: OnRelease and
// OnHandleClose see each once.
func (f *Follower[D, H]) CloseAll() {
	seen := map[*table[D]]bool{}
	for _, p := range f.threads {
		if seen[p.tab] {
			continue
		}
		seen[p.tab] = true
		var fds []int32
		p.tab.each(func(fd int32, s slot[D]) { fds = append(fds, fd) })
		for _, fd := range fds {
			f.closeFD(p, fd)
		}
	}
	f.lastH = nil
	for h, fh := range f.handles {
		delete(f.handles, h)
		if f.OnHandleClose != nil {
			f.OnHandleClose(fh)
		}
	}
}

// Step is what one event worked on.
type Step[D, H any] struct {
	Proc *Proc[D]
	// Desc is the open file description the call used (its descriptor's,
	// the source of a dup, the one a close closed, the file an *at call
	// with no path acts on), or nil. For a copy it is the one read.
	Desc *Desc[D]
	// Desc2 is the description a copy wrote to.
	Desc2 *Desc[D]
	// New is the description an open, dup or inherit put at its new
	// descriptor (a dup's is Desc).
	New *Desc[D]
	// Handle is the MPI file handle of an MPI-IO call.
	Handle *Handle[H]
	// Path is the file the call reached: the path its descriptor or
	// handle was opened on, when the trace showed it, else its own Path;
	// 0 when unknown.
	Path trace.PathID
	// Learnt says Desc (or Desc2) was learnt at this call: the trace
	// never showed its descriptor opened.
	Learnt bool
}

// Apply follows e: it returns what e worked on and updates the state with
// what it did.
func (f *Follower[D, H]) Apply(e *trace.Event) Step[D, H] {
	var st Step[D, H]
	f.apply(e, &st)
	return st
}

// Follow is Apply for a consumer that needs no Step (one that makes the
// events, as the script interpreter and the preload encoder do): it
// updates the state alike.
func (f *Follower[D, H]) Follow(e *trace.Event) {
	if f.Data(e) != nil || e.Op >= opLimit || f.seek(e) {
		return
	}
	f.scratch = Step[D, H]{}
	f.other(e, &f.scratch)
}

// seek follows e and reports true if e is an lseek on a descriptor the
// table holds, by the thread of the call before: what Data is to reads
// and writes, for Follow (half the calls of IOR's POSIX backend).
func (f *Follower[D, H]) seek(e *trace.Event) bool {
	if e.Op != trace.OpLseek || f.lastProc == nil || f.last != e.Thread {
		return false
	}
	t := f.lastProc.tab
	if uint32(e.FD) >= uint32(len(t.fds.low)) {
		return false
	}
	d := t.fds.low[e.FD].d
	if d == nil {
		return false
	}
	if e.Ret >= 0 {
		d.Pos = e.Ret
		if n := d.Node; f.ns != nil && n != nil && n.File != nil && e.Whence == 2 {
			n.File.sawSize(e.Ret-e.Offset, n.wasThere()) // as applyNS
		}
	}
	return true
}

// apply follows e into st, which is zero.
func (f *Follower[D, H]) apply(e *trace.Event, st *Step[D, H]) {
	if e.Op >= opLimit {
		return
	}
	if d := f.Data(e); d != nil {
		st.Proc, st.Desc, st.Path = f.lastProc, d, e.Path
		if d.Path != 0 {
			st.Path = d.Path
		}
		return
	}
	f.other(e, st)
}

// other follows an event (below opLimit) that Data does not take.
func (f *Follower[D, H]) other(e *trace.Event, st *Step[D, H]) {
	info := &infos[e.Op]
	switch info.Class {
	case trace.ClassMarker, trace.ClassComm, trace.ClassUnknown:
		return
	case trace.ClassMPIIO:
		f.mpiio(e, &info.OpInfo, st)
		return
	case trace.ClassProcess:
		f.process(e, &info.OpInfo, st)
		return
	}
	p := f.Proc(e.Thread)
	st.Proc = p
	st.Path = e.Path
	ok := e.Ret >= 0
	const ebadf = 9
	f.ebadf = e.Ret == -ebadf
	switch info.FD {
	case trace.FDOn:
		st.Desc = f.use(p, e.FD, e.Path, st)
		if info.Dir == trace.DirCopy {
			st.Desc2 = f.use(p, e.FD2, e.Path2, st)
		}
	case trace.FDAt:
		if e.Path == 0 && e.FD >= 0 {
			st.Desc = f.use(p, e.FD, 0, st)
		}
	case trace.FDOpen:
		if ok {
			fd := int32(e.Ret)
			if e.Op == trace.OpFopen && e.FD > 0 {
				fd = e.FD // a stream: FD holds its descriptor
			}
			d := &Desc[D]{Path: e.Path, Flags: e.Flags &^ trace.InMPIIO, Pos: 0}
			f.install(p, fd, d, e.Flags&oCloexec != 0)
			st.New = d
		}
	case trace.FDDup:
		f.dup(p, e, st)
	case trace.FDClose:
		if s := p.tab.get(e.FD); s != nil {
			st.Desc = s.d
		}
		f.closeFD(p, e.FD) // a close releases its descriptor even when it fails (EINTR)
	case trace.FDCloseRange:
		if ok {
			f.closeRange(p, e)
		}
	}
	// The file a call on a descriptor reaches is the one its description
	// was opened on, even where the call's own path differs (a name given
	// relative at the open and absolute later, a rename since).
	switch {
	case st.Desc != nil && st.Desc.Path != 0 && info.FD != trace.FDAt:
		st.Path = st.Desc.Path
	case st.Path == 0 && st.New != nil:
		st.Path = st.New.Path
	}
	if ok {
		f.moved(e, &info.OpInfo, st)
	}
	if f.ns != nil {
		applyNS(f.ns, e, &info.OpInfo, st)
	}
}

// infos holds the OpInfo of every op below opLimit, for the hot path,
// and whether Apply may take its fast path for the op: a POSIX read or
// write on a descriptor (not a vector call, which preadv2 makes at the
// position; not a copy).
const opLimit = 1024

type opInfo struct {
	trace.OpInfo
	fast bool
}

var infos = func() (t [opLimit]opInfo) {
	// The known ops only: Info of an unknown one formats its name, and
	// doing that for every number below opLimit was 0.24 ms of every
	// command's start. An unknown op's entry is the zero one (class
	// unknown, as Info says).
	for _, op := range trace.Ops() {
		if op >= opLimit {
			continue
		}
		in := op.Info()
		t[op] = opInfo{OpInfo: in, fast: in.Class == trace.ClassPOSIX && in.FD == trace.FDOn &&
			(in.Dir == trace.DirRead || in.Dir == trace.DirWrite) && !in.Vector}
	}
	return t
}()

// Data follows e and returns its description if e is a read or write on
// a descriptor the table holds, by the thread of the call before (what
// most calls of a trace are); for any other event it changes nothing and
// returns nil: then call Apply. It is Apply without the Step, for hot
// paths: Data(e) != nil leaves the state as Apply(e) would.
func (f *Follower[D, H]) Data(e *trace.Event) *Desc[D] {
	if e.Op >= opLimit || f.lastProc == nil || f.last != e.Thread {
		return nil
	}
	info := &infos[e.Op]
	if !info.fast {
		return nil
	}
	t := f.lastProc.tab
	fd := e.FD
	if uint32(fd) >= uint32(len(t.fds.low)) {
		return nil
	}
	d := t.fds.low[fd].d
	if d == nil {
		return nil
	}
	if e.Ret >= 0 {
		if info.Addr == trace.AddrIndividual {
			d.Pos = after(e.Offset, e.Ret)
		}
		if n := d.Node; f.ns != nil && n != nil && n.File != nil &&
			!(n.File.covers(e, &info.OpInfo) && (info.Addr != trace.AddrIndividual || !d.Append())) {
			dataNS(d.Node, e, &info.OpInfo, d.Append())
		}
	}
	return d
}

// Repeats reports whether Data, having returned d for an event, would
// return d again for the next event of the same thread, descriptor and
// op (op) and change nothing, so long as nothing but Data followed the
// events in between: true for a read or write that moves no file
// position (at an explicit offset), on a follower without a namespace.
// A hot loop may then skip the call.
func (f *Follower[D, H]) Repeats(op trace.Op) bool {
	return f.ns == nil && op < opLimit && infos[op].fast && infos[op].Addr == trace.AddrExplicit
}

// Again reports whether Data(e) would return d and change nothing, for
// an e of the thread, descriptor and op of the event Data last returned d
// for, so long as nothing but Data followed the events in between: a
// read or write that moves no file position (at an explicit offset) and
// has nothing to tell the namespace (it failed, or writes where the file
// was written already). A hot loop may then skip the call.
func (f *Follower[D, H]) Again(e *trace.Event, d *Desc[D]) bool {
	if e.Op >= opLimit {
		return false
	}
	info := &infos[e.Op]
	if !info.fast || info.Addr != trace.AddrExplicit {
		return false
	}
	if e.Ret < 0 || f.ns == nil {
		return true
	}
	n := d.Node
	return n == nil || n.File == nil || n.File.covers(e, &info.OpInfo)
}

// Repeat is Again for the events that follow one Again passed: of its
// thread, descriptor and op, with nothing else in between (the events
// Again passes change nothing it reads). A hot loop tests each with
// Passes, without Again's lookups.
type Repeat struct {
	all bool  // every event passes: no namespace, or a file it does not follow
	lim int64 // else a write passes whose end is at or before lim (a failed call always)
}

// RepeatOf returns the test of the events after one of op on d that
// Again(e, d) passed.
func (f *Follower[D, H]) RepeatOf(op trace.Op, d *Desc[D]) Repeat {
	if f.ns == nil {
		return Repeat{all: true}
	}
	n := d.Node
	if n == nil || n.File == nil {
		return Repeat{all: true}
	}
	fl := n.File
	if op >= opLimit || infos[op].Dir != trace.DirWrite || !fl.otherWrites || !fl.Changed {
		return Repeat{lim: math.MinInt64} // covers holds for none
	}
	return Repeat{lim: min(fl.Size, fl.written, fl.grown)}
}

// Passes reports what Again would for e.
func (r Repeat) Passes(e *trace.Event) bool {
	return e.Ret < 0 || r.all || e.Ret > 0 && endOf(e.Offset, e.Ret) <= r.lim
}

// after is the position after a call at the position off that moved n
// bytes: unknown (-1) when off is.
func after(off, n int64) int64 {
	if off < 0 {
		return -1
	}
	return off + n
}

// oCloexec is O_CLOEXEC (x86-64 value) in open flags.
const oCloexec = 0x80000

// setflMask are the status flags F_SETFL changes (x86-64 values): O_APPEND,
// O_ASYNC, O_DIRECT, O_NOATIME, O_NONBLOCK.
const setflMask = trace.OAppend | 0x2000 | trace.ODirect | 0x40000 | 0x800

// use returns the description of fd, learning it (on path) if the trace
// never showed it opened — but from a call that failed with EBADF, which
// says it was not open.
func (f *Follower[D, H]) use(p *Proc[D], fd int32, path trace.PathID, st *Step[D, H]) *Desc[D] {
	if s := p.tab.get(fd); s != nil {
		return s.d
	}
	if fd < 0 || f.ebadf {
		return nil
	}
	d := &Desc[D]{Path: path, Pos: -1, Learnt: true}
	f.install(p, fd, d, false)
	st.Learnt = true
	if f.ns != nil && path != 0 {
		d.Node = f.ns.inherited(path)
	}
	return d
}

// install puts d at fd, closing what was there.
func (f *Follower[D, H]) install(p *Proc[D], fd int32, d *Desc[D], cloexec bool) {
	if fd < 0 {
		return
	}
	f.closeFD(p, fd)
	d.refs++
	p.tab.put(fd, slot[D]{d: d, cloexec: cloexec})
}

func (f *Follower[D, H]) closeFD(p *Proc[D], fd int32) {
	if d := p.tab.remove(fd); d != nil {
		if f.OnClose != nil {
			f.OnClose(p, fd, d)
		}
		f.unref(d)
	}
}

func (f *Follower[D, H]) unref(d *Desc[D]) {
	if d.refs--; d.refs <= 0 && f.OnRelease != nil {
		f.OnRelease(d)
	}
}

func (f *Follower[D, H]) dup(p *Proc[D], e *trace.Event, st *Step[D, H]) {
	cloexec := false
	switch e.Op {
	case trace.OpDup3:
		cloexec = e.Flags&oCloexec != 0
	case trace.OpFcntl:
		switch e.Flags {
		case trace.FDupfd:
		case trace.FDupfdCloexec:
			cloexec = true
		case trace.FSetfd:
			if e.Ret >= 0 {
				p.tab.setCloexec(e.FD, e.Size&1 != 0)
			}
			st.Desc = f.use(p, e.FD, e.Path, st)
			return
		case trace.FSetfl:
			st.Desc = f.use(p, e.FD, e.Path, st)
			if e.Ret >= 0 && st.Desc != nil {
				st.Desc.Flags = st.Desc.Flags&^setflMask | uint32(e.Size)&setflMask
			}
			return
		default:
			st.Desc = f.use(p, e.FD, e.Path, st)
			return
		}
	}
	if e.Ret >= 0 && e.Ret == int64(e.FD) {
		st.Desc = f.use(p, e.FD, e.Path, st) // dup2(fd, fd)
		st.New = st.Desc
		return
	}
	src := p.tab.get(e.FD)
	if src == nil && e.Path != 0 && e.Ret >= 0 {
		st.Desc = f.use(p, e.FD, e.Path, st)
	} else if src != nil {
		st.Desc = src.d
	}
	if e.Ret < 0 {
		return
	}
	nfd := int32(e.Ret)
	if st.Desc == nil {
		// A dup of a descriptor the trace knows nothing of (an unrecorded
		// pipe) onto one it knows: that one now names something else.
		f.closeFD(p, nfd)
		return
	}
	f.install(p, nfd, st.Desc, cloexec)
	st.New = st.Desc
}

func (f *Follower[D, H]) closeRange(p *Proc[D], e *trace.Event) {
	const unshare = 2
	first, last := int64(e.FD), e.Size
	if e.Flags&unshare != 0 {
		f.unshare(p)
	}
	var fds []int32
	p.tab.each(func(fd int32, s slot[D]) {
		if int64(fd) >= first && int64(fd) <= last {
			fds = append(fds, fd)
		}
	})
	for _, fd := range fds {
		if e.Flags&trace.CloseRangeCloexec != 0 {
			p.tab.setCloexec(fd, true)
		} else {
			f.closeFD(p, fd)
		}
	}
}

// unshare gives p a table of its own, if it shares one.
func (f *Follower[D, H]) unshare(p *Proc[D]) {
	if p.tab.procs <= 1 {
		return
	}
	p.tab.procs--
	p.tab = f.copyTable(p.tab)
	p.tab.procs = 1
}

// copyTable copies t, for no process yet.
func (f *Follower[D, H]) copyTable(t *table[D]) *table[D] {
	c := &table[D]{fds: t.fds.Clone()}
	if f.CopyTableData != nil {
		c.data = f.CopyTableData(t.data)
	}
	c.each(func(fd int32, s slot[D]) { s.d.refs++ })
	return c
}

// moved updates positions and sizes after a call that succeeded.
func (f *Follower[D, H]) moved(e *trace.Event, info *trace.OpInfo, st *Step[D, H]) {
	d := st.Desc
	switch {
	case info.Dir == trace.DirCopy:
		if d != nil && e.Flags&trace.CopyInAt == 0 {
			d.Pos = after(e.Offset, e.Ret)
		}
		if d2 := st.Desc2; d2 != nil && e.Flags&trace.CopyOutAt == 0 {
			d2.Pos = after(e.Offset2, e.Ret)
		}
	case info.Dir != trace.DirNone:
		if d != nil && (info.Addr == trace.AddrIndividual || info.Vector && e.Flags&trace.AtPosition != 0) {
			d.Pos = after(e.Offset, e.Ret)
		}
	case info.Family == "seek":
		if d != nil {
			if e.Op == trace.OpFseek {
				// fseek returns 0: the position is what it asked for, where
				// that is known.
				switch {
				case e.Whence == 0:
					d.Pos = e.Offset
				case e.Whence == 1 && d.Pos >= 0:
					d.Pos += e.Offset
				default:
					d.Pos = -1
				}
			} else {
				d.Pos = e.Ret
			}
		}
	}
}

// process follows a process event.
func (f *Follower[D, H]) process(e *trace.Event, info *trace.OpInfo, st *Step[D, H]) {
	p := f.Proc(e.Thread)
	st.Proc = p
	switch info.Proc {
	case trace.ProcFork:
		if e.Ret < 0 || e.Ret > 1<<32-1 {
			return
		}
		child := uint32(e.Ret)
		f.dropThread(child)
		var c *Proc[D]
		if e.Flags&trace.CloneFiles != 0 {
			c = f.newProc(child, p, p.tab)
		} else {
			c = f.newProc(child, p, f.copyTable(p.tab))
		}
		c.Exe = p.Exe
		c.Maps = p.Maps.clone()
		c.threads = 1
		f.threads[child] = c
		f.last, f.lastProc = 0, nil
	case trace.ProcThread:
		if e.Ret < 0 || e.Ret > 1<<32-1 {
			return
		}
		th := uint32(e.Ret)
		f.dropThread(th)
		p.threads++
		f.threads[th] = p
		f.last, f.lastProc = 0, nil
	case trace.ProcExec:
		if e.Ret < 0 {
			return
		}
		p.Exe = e.Path
		p.Maps = Maps{}
		f.unshare(p)
		var fds []int32
		p.tab.each(func(fd int32, s slot[D]) {
			if s.cloexec {
				fds = append(fds, fd)
			}
		})
		for _, fd := range fds {
			f.closeFD(p, fd)
		}
		// The process's other threads are gone.
		for th, q := range f.threads {
			if q == p && th != e.Thread {
				delete(f.threads, th)
				p.threads--
			}
		}
		f.last, f.lastProc = 0, nil
	case trace.ProcExit:
		f.dropThread(e.Thread)
	case trace.ProcInherit:
		d := &Desc[D]{Path: e.Path, Flags: e.Flags &^ oCloexec, Pos: e.Offset, Learnt: true}
		f.install(p, e.FD, d, e.Flags&oCloexec != 0)
		st.New, st.Path = d, e.Path
		if f.ns != nil && e.Path != 0 {
			d.Node = f.ns.inherited(e.Path)
		}
	}
}

// dropThread forgets thread th; its process ends with its last thread.
func (f *Follower[D, H]) dropThread(th uint32) {
	p := f.threads[th]
	if p == nil {
		return
	}
	delete(f.threads, th)
	f.last, f.lastProc = 0, nil
	if p.threads--; p.threads > 0 || p.Ended {
		return
	}
	p.Ended = true
	f.procs--
	if p.tab.procs--; p.tab.procs > 0 {
		return
	}
	var fds []int32
	p.tab.each(func(fd int32, s slot[D]) { fds = append(fds, fd) })
	for _, fd := range fds {
		f.closeFD(p, fd)
	}
	if p == f.main {
		f.main = nil
	}
}

// mpiio follows an MPI-IO call.
func (f *Follower[D, H]) mpiio(e *trace.Event, info *trace.OpInfo, st *Step[D, H]) {
	ok := e.Ret >= 0
	h := f.handle(e.FD)
	switch info.FD {
	case trace.FDOpen:
		if !ok {
			st.Path = e.Path
			break
		}
		if h != nil && f.OnHandleClose != nil {
			f.OnHandleClose(h)
		}
		h = &Handle[H]{Path: e.Path, Comm: e.Comm, Amode: e.Flags}
		f.handles[e.FD] = h
		f.lastH, f.lastHN = h, e.FD
		if f.ns != nil && e.Path != 0 {
			h.Node = f.ns.openHandle(e)
		}
	case trace.FDClose:
		if h != nil {
			delete(f.handles, e.FD)
			f.lastH = nil
			if f.OnHandleClose != nil {
				f.OnHandleClose(h)
			}
		}
	case trace.FDOn:
		if h == nil && e.Path != 0 {
			// A handle opened before the capture: learnt.
			h = &Handle[H]{Path: e.Path, Comm: e.Comm}
			f.handles[e.FD] = h
			f.lastH, f.lastHN = h, e.FD
			st.Learnt = true
		}
	default:
		st.Path = e.Path
		if f.ns != nil && info.NS == trace.NSRemove && e.Ret >= 0 {
			f.ns.remove(f.ns.node(e.Path), KindFile)
		} else if f.ns != nil && info.NS == trace.NSRemove && e.Ret == -2 {
			f.ns.absent(f.ns.node(e.Path))
		}
		return
	}
	st.Handle = h
	st.Path = e.Path
	if h == nil {
		return
	}
	if h.Path != 0 {
		st.Path = h.Path
	}
	if !ok {
		return
	}
	switch {
	case e.Op == trace.OpMPIFileSetView:
		h.View = View{Disp: e.Offset, BlockLen: e.Size, Stride: e.Stride}
		h.Pos = 0
	case e.Op == trace.OpMPIFileSeek:
		switch e.Whence {
		case 0:
			h.Pos = e.Offset
		case 1:
			h.Pos += e.Offset
		default:
			h.Pos = -1
		}
	case info.Dir != trace.DirNone && info.Addr == trace.AddrIndividual:
		h.Pos = e.Offset + e.Ret
	}
	if f.ns != nil && h.Node != nil {
		f.ns.handleCall(e, info, h.Node, h.View)
	}
}

// Pieces calls fn with the contiguous file extents of the view bytes
// [off, off+size), in order. It stops at the first error fn returns.
func (v View) Pieces(off, size int64, fn func(off, n int64) error) error {
	if v.BlockLen <= 0 || v.Stride <= v.BlockLen {
		return fn(v.Disp+off, size)
	}
	for done := int64(0); done < size; {
		p := off + done
		within := p % v.BlockLen
		n := min(v.BlockLen-within, size-done)
		if err := fn(v.Disp+p/v.BlockLen*v.Stride+within, n); err != nil {
			return err
		}
		done += n
	}
	return nil
}
