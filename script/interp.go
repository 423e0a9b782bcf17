package script

import (
	"errors"
	"fmt"
	"math"

	"github.com/iotrace/iotrace/trace"
)

// StepKind says what Interp.Step produced.
type StepKind uint8

const (
	// StepEvent: the event is the rank's next call, timed on the rank's
	// own nominal clock.
	StepEvent StepKind = iota
	// StepSync: the event is a collective call (on a communicator of more
	// than one rank). Its Start is the rank's arrival and its Dur the
	// call's nominal duration; the caller decides when it ends and calls
	// Settle with that time before the next Step.
	StepSync
	// StepDecide: the rank is about to start an iteration of a
	// time-driven loop (Check describes it); the caller answers with
	// Decide before the next Step.
	StepDecide
	// StepDone: the script has ended for this rank.
	StepDone
)

// LoopCheck describes the question a time-driven loop asks before each
// iteration: run another one?
type LoopCheck struct {
	Rank  int    // world rank that asks
	Pos   Pos    // position of the repeat statement
	Limit int64  // the loop's duration, ns
	Iter  int64  // iterations run so far (0 at the first check)
	Comm  uint32 // communicator of the group that runs the loop: its ranks must get the same answers
	Start int64  // the rank's nominal clock at the first check, ns
	Prev  int64  // the rank's nominal clock at the previous check (Start at the first), ns
	Now   int64  // the rank's nominal clock now, ns
}

// Interp runs a script for one rank. It is an iterator: Step makes the
// next call on demand and keeps only the state of the loops it is in, so
// a loop of a billion iterations costs no memory. An Interp is used by
// one goroutine.
type Interp struct {
	inst   *Instance
	prog   *Program
	model  *Model
	paths  *trace.Paths
	quiet  bool // make events without paths (a world runs other ranks for their timing)
	rank   int64
	nranks int64
	grank  int64
	gsize  int64
	comm   uint32
	group  int // current group, -1 outside on blocks

	slots []val
	mhs   []handle // MPI file handles, by handle slot (the rank's)
	chs   []commH  // communicators, by handle slot
	// The members of the current communicator when split made it (nil:
	// the world, or a group), its name, and how many communicators the
	// rank made from each parent.
	members  []int
	commName string
	splits   map[uint32]uint32
	mids     fdAlloc
	sizes    map[trace.PathID]int64
	cache    []siteCache

	// Processes, descriptors and MPI file handles (proc.go): the thread
	// of the command being run, the handle names of its process, and the
	// follower of the rank's events.
	th uint32
	st *follower

	now      int64
	stack    []frame
	pend     [3]trace.Event
	npend    int
	ipend    int
	syncWait bool
	deciding bool
	check    LoopCheck
	err      error
	budget   int64
	idle     int64 // steps since the last call (MaxIdleSteps)
	late     bool  // the nominal clock passed the largest int64 (advance)
	cmdPos   Pos   // position of the command being run
}

// MaxIdleSteps bounds the statements and loop iterations an interpreter
// runs between two calls it makes: a loop that makes no call
// (repeat 1000000000000 { }) would otherwise keep an analysis or a replay
// busy for hours doing nothing. At tens of millions of steps a second, the
// limit is reached within seconds. It is fixed.
const MaxIdleSteps = 100_000_000

// maxIdle is MaxIdleSteps; tests lower it.
var maxIdle int64 = MaxIdleSteps

type val struct {
	i int64
	s string
	l []int64 // a list; a slot owns its slice (let and assignment copy)
}

type siteCache struct {
	s  string
	id trace.PathID
	ok bool
}

// handle is a handle name: a descriptor of a process (d: its open file
// description, which dup and fork share) or an MPI file handle of the
// rank (mh), as the follower has them while the handle is open.
type handle struct {
	open     bool
	fd       int32
	path     trace.PathID
	d        *desc
	mh       *mhandle
	comm     uint32
	openedAt Pos
	closedAt Pos
}

type frameKind uint8

const (
	fBlock frameKind = iota
	fRepeat
	fRepeatFor
	fOn
	fTime
)

type frame struct {
	kind    frameKind
	body    []cstmt
	pc      int
	n, i    int64
	slot    int
	pos     Pos
	limit   int64
	start   int64
	prev    int64
	checked bool
	label   trace.PathID
	// saved group context of an on block
	sGroup        int
	sComm         uint32
	sGrank, sSize int64
}

// fdAlloc hands out the lowest free number from base, as POSIX does.
type fdAlloc struct {
	base int32
	used []bool
}

// maxOpen bounds the handles a rank may hold open at once.
const maxOpen = 1 << 16

func (a *fdAlloc) alloc() (int32, bool) {
	for i, u := range a.used {
		if !u {
			a.used[i] = true
			return a.base + int32(i), true
		}
	}
	if len(a.used) >= maxOpen {
		return 0, false
	}
	a.used = append(a.used, true)
	return a.base + int32(len(a.used)-1), true
}

func (a *fdAlloc) free(fd int32) {
	if i := int(fd - a.base); i >= 0 && i < len(a.used) {
		a.used[i] = false
	}
}

// maxKnownSizes bounds how many files' sizes a rank remembers.
const maxKnownSizes = 1 << 16

// NewInterp returns an interpreter for rank. Paths of its events are
// interned in paths, which several interpreters may share.
func (in *Instance) NewInterp(rank int, paths *trace.Paths) (*Interp, error) {
	if rank < 0 || rank >= in.ranks {
		return nil, fmt.Errorf("%s: rank %d out of range: the run has %d ranks", in.prog.name, rank, in.ranks)
	}
	p := in.prog
	it := &Interp{
		inst: in, prog: p, model: &in.model, paths: paths,
		rank: int64(rank), nranks: int64(in.ranks), grank: int64(rank), gsize: int64(in.ranks), group: -1,
		slots: make([]val, p.nslots), mhs: make([]handle, p.nhandles), chs: make([]commH, p.nhandles),
		mids:  fdAlloc{base: 1},
		sizes: map[trace.PathID]int64{}, cache: make([]siteCache, p.nsites),
		budget: in.budget,
	}
	for i, pa := range p.params {
		it.slots[pa.slot] = in.params[i]
	}
	it.st = it.newFollower()
	if len(p.body) > 0 {
		it.stack = append(it.stack, frame{kind: fBlock, body: p.body})
	}
	return it, nil
}

// Now returns the rank's nominal clock, ns.
func (it *Interp) Now() int64 { return it.now }

// Check describes the time-driven loop check after Step returned
// StepDecide.
func (it *Interp) Check() LoopCheck { return it.check }

// Settle ends the collective call Step returned with StepSync at end: the
// rank's clock moves there.
func (it *Interp) Settle(end int64) {
	if it.syncWait {
		it.syncWait = false
		if end > it.now {
			it.now = end
		}
	}
}

// Decide answers the check after StepDecide: cont runs another iteration,
// false leaves the loop.
func (it *Interp) Decide(cont bool) {
	if !it.deciding {
		return
	}
	it.deciding = false
	f := &it.stack[len(it.stack)-1]
	if !cont {
		it.stack = it.stack[:len(it.stack)-1]
		return
	}
	f.checked = true
	f.pc = 0
	if f.slot >= 0 {
		it.slots[f.slot].i = f.i
	}
}

var errProtocol = errors.New("script: Step called before Settle or Decide")

// Step makes the next call of the script. See StepKind for what the
// caller owes after each kind. After an error every Step returns it.
func (it *Interp) Step(ev *trace.Event) (StepKind, error) {
	if it.err != nil {
		return StepDone, it.err
	}
	if it.syncWait {
		return StepDone, errProtocol
	}
	if it.deciding {
		return StepDecide, nil
	}
	for {
		if it.ipend < it.npend {
			*ev = it.pend[it.ipend]
			it.ipend++
			if it.ipend == it.npend {
				it.ipend, it.npend = 0, 0
			}
			it.idle = 0
			return StepEvent, nil
		}
		n := len(it.stack)
		if n == 0 {
			return StepDone, nil
		}
		f := &it.stack[n-1]
		if it.idle++; it.idle > maxIdle {
			it.err = it.idleError()
			return StepDone, it.err
		}
		if f.kind == fRepeatFor && !f.checked {
			if it.budget > 0 {
				if it.budget--; it.budget == 0 {
					it.err = fmt.Errorf("%s: rank %d: step budget exhausted", it.prog.name, it.rank)
					return StepDone, it.err
				}
			}
			it.check = LoopCheck{Rank: int(it.rank), Pos: f.pos, Limit: f.limit, Iter: f.i,
				Comm: it.comm, Start: f.start, Prev: f.prev, Now: it.now}
			f.prev = it.now
			it.deciding = true
			return StepDecide, nil
		}
		if f.pc < len(f.body) {
			if it.budget > 0 {
				if it.budget--; it.budget == 0 {
					it.err = fmt.Errorf("%s: rank %d: step budget exhausted", it.prog.name, it.rank)
					return StepDone, it.err
				}
			}
			s := f.body[f.pc]
			f.pc++
			if cm, ok := s.(*cCmd); ok {
				it.cmdPos = cm.pos
			}
			sync, err := it.exec(s, ev)
			if err == nil && (it.late || sync && ev.Dur > math.MaxInt64-ev.Start) {
				err = evalErr(it.cmdPos, "the nominal clock passes 2^63-1 ns (292 years): the calls' nominal durations and the sleeps add up to more")
			}
			if err != nil {
				it.err = it.wrap(err)
				return StepDone, it.err
			}
			if sync {
				it.syncWait = true
				it.idle = 0
				return StepSync, nil
			}
			continue
		}
		it.endFrame()
	}
}

// idleError is the error of MaxIdleSteps, at the innermost loop.
func (it *Interp) idleError() error {
	pos := it.cmdPos
	for i := len(it.stack) - 1; i >= 0; i-- {
		if k := it.stack[i].kind; k == fRepeat || k == fRepeatFor {
			pos = it.stack[i].pos
			break
		}
	}
	return &Error{File: it.prog.name, Pos: pos, Msg: fmt.Sprintf("rank %d: %d statements and loop iterations ran without making a call (a script makes a call at least every %d steps; the limit is fixed)", it.rank, maxIdle, maxIdle)}
}

// advance moves the rank's nominal clock by d ≥ 0 ns; past the largest
// int64 it stays there and the step fails (Step), rather than wrap to the
// most negative time.
func (it *Interp) advance(d int64) {
	if d > math.MaxInt64-it.now {
		it.now, it.late = math.MaxInt64, true
		return
	}
	it.now += d
}

func (it *Interp) wrap(err error) error {
	var ee *evalError
	if errors.As(err, &ee) {
		return &Error{File: it.prog.name, Pos: ee.pos, Msg: fmt.Sprintf("rank %d: %s", it.rank, ee.msg)}
	}
	return err
}

func (it *Interp) endFrame() {
	n := len(it.stack)
	f := &it.stack[n-1]
	switch f.kind {
	case fRepeat:
		f.i++
		if f.i < f.n {
			f.pc = 0
			if f.slot >= 0 {
				it.slots[f.slot].i = f.i
			}
			return
		}
	case fRepeatFor:
		f.i++
		f.checked = false
		return
	case fOn:
		it.group, it.comm, it.grank, it.gsize = f.sGroup, f.sComm, f.sGrank, f.sSize
	case fTime:
		it.th = 0
		it.emit(trace.Event{Op: trace.OpRegionEnd, Path: f.label})
	}
	it.stack = it.stack[:n-1]
}

func (it *Interp) push(f frame) { it.stack = append(it.stack, f) }

func (it *Interp) int(x *cexpr) (int64, error) { return x.fi(it) }

// nonNeg evaluates x and requires it ≥ 0.
func (it *Interp) nonNeg(x *cexpr, what string) (int64, error) {
	v, err := x.fi(it)
	if err == nil && v < 0 {
		err = evalErr(x.pos, fmt.Sprintf("%s must not be negative, got %s", what, formatValue(it, x.typ, v)))
	}
	return v, err
}

// exec runs one statement. It reports whether ev now holds a collective
// call the caller must settle.
func (it *Interp) exec(s cstmt, ev *trace.Event) (bool, error) {
	switch s := s.(type) {
	case *cSetElem:
		k, err := s.index.fi(it)
		if err != nil {
			return false, err
		}
		v, err := s.x.fi(it)
		if err != nil {
			return false, err
		}
		l := it.slots[s.slot].l
		if err := checkIndex(s.pos, k, len(l)); err != nil {
			return false, err
		}
		l[k] = v
	case *cLet:
		if s.x.typ == TList {
			l, err := s.x.fl(it)
			if err != nil {
				return false, err
			}
			it.slots[s.slot].l = append([]int64(nil), l...)
			return false, nil
		}
		if s.x.typ == TString {
			v, err := s.x.fs(it)
			if err != nil {
				return false, err
			}
			it.slots[s.slot].s = v
			return false, nil
		}
		v, err := s.x.fi(it)
		if err != nil {
			return false, err
		}
		it.slots[s.slot].i = v
	case *cIf:
		body := s.els
		for i := range s.arms {
			v, err := s.arms[i].cond.fi(it)
			if err != nil {
				return false, err
			}
			if v != 0 {
				body = s.arms[i].body
				break
			}
		}
		if len(body) > 0 {
			it.push(frame{kind: fBlock, body: body})
		}
	case *cRepeat:
		if s.forTime {
			d, err := it.nonNeg(&s.count, "the duration of repeat for")
			if err != nil {
				return false, err
			}
			it.push(frame{kind: fRepeatFor, body: s.body, slot: s.slot, pos: s.pos, limit: d, start: it.now, prev: it.now})
			return false, nil
		}
		n, err := it.nonNeg(&s.count, "a repeat count")
		if err != nil || n == 0 {
			return false, err
		}
		if s.slot >= 0 {
			it.slots[s.slot].i = 0
		}
		it.push(frame{kind: fRepeat, body: s.body, slot: s.slot, n: n, pos: s.pos})
	case *cOn:
		g := it.inst.groups[s.group]
		if it.rank < int64(g.First) || it.rank >= int64(g.First+g.Size) || len(s.body) == 0 {
			return false, nil
		}
		it.push(frame{kind: fOn, body: s.body, sGroup: it.group, sComm: it.comm, sGrank: it.grank, sSize: it.gsize})
		it.group, it.comm, it.grank, it.gsize = s.group, g.Comm, it.rank-int64(g.First), int64(g.Size)
	case *cTime:
		id, err := it.path(&s.label, s.site)
		if err != nil {
			return false, err
		}
		it.th = 0
		it.emit(trace.Event{Op: trace.OpRegionBegin, Path: id})
		it.push(frame{kind: fTime, body: s.body, label: id})
	case *cCmd:
		return it.command(s, ev)
	}
	return false, nil
}

// path evaluates a path and interns it; a site remembers its last string
// so a loop over one path interns it once. Quiet interpreters skip it.
func (it *Interp) path(x *cexpr, site int) (trace.PathID, error) {
	if it.quiet {
		return 0, nil
	}
	c := &it.cache[site]
	if x.isConst && c.ok {
		return c.id, nil
	}
	s, err := x.fs(it)
	if err != nil {
		return 0, err
	}
	if c.ok && c.s == s {
		return c.id, nil
	}
	id := it.paths.Intern(s)
	*c = siteCache{s: s, id: id, ok: true}
	return id, nil
}

// emit queues an event timed on the rank's clock, and follows it.
func (it *Interp) emit(e trace.Event) { it.queue(e, true) }

// emitOnly queues an event the follower need not see.
func (it *Interp) emitOnly(e trace.Event) { it.queue(e, false) }

func (it *Interp) queue(e trace.Event, follow bool) {
	e.Rank = uint32(it.rank)
	e.Thread = it.th
	e.Start = it.now
	e.Dur = it.model.dur(&e)
	it.advance(e.Dur)
	if follow {
		it.st.Follow(&e)
	}
	it.pend[it.npend] = e
	it.npend++
}

func (it *Interp) known(p trace.PathID) int64 { return it.sizes[p] }

func (it *Interp) setKnown(p trace.PathID, size int64) {
	if p == 0 {
		return
	}
	if _, ok := it.sizes[p]; !ok && len(it.sizes) >= maxKnownSizes {
		clear(it.sizes)
	}
	it.sizes[p] = size
}

func (it *Interp) grow(p trace.PathID, end int64) {
	if end > it.known(p) {
		it.setKnown(p, end)
	}
}

func (it *Interp) handle(cm *cCmd) (*handle, error) {
	h := &it.mhs[cm.h]
	if !cm.hmpi {
		h = &it.names().hs[cm.h]
	}
	if !h.open {
		if h.closedAt.IsValid() {
			return nil, evalErr(cm.hPos, fmt.Sprintf("%s is not open (closed at %s)", cm.hName, h.closedAt))
		}
		return nil, evalErr(cm.hPos, fmt.Sprintf("%s is not open", cm.hName))
	}
	return h, nil
}

func (it *Interp) optInt(cm *cCmd, key string, def int64, what string, nonneg bool) (int64, error) {
	x := cm.arg(key)
	if x == nil {
		return def, nil
	}
	if nonneg {
		return it.nonNeg(x, what)
	}
	return it.int(x)
}

// result evaluates the ret of a command: the call's result where it is
// not the default def. failed reports a negative result: the call changed
// nothing the script tracks.
func (it *Interp) result(cm *cCmd, def int64) (ret int64, failed bool, err error) {
	if cm.ret == nil {
		return def, false, nil
	}
	v, err := it.int(cm.ret)
	return v, v < 0, err
}

// flagsArg evaluates an optional flags (or mode) argument into a field.
func (it *Interp) flagsArg(cm *cCmd, key string, def uint32) (uint32, error) {
	v, err := it.optInt(cm, key, int64(def), key, true)
	return uint32(v), err
}

// peer checks a rank of the current group (root, peer) and returns it as
// a world rank; any (-1) is allowed where anyOK.
func (it *Interp) peer(cm *cCmd, key string, what string, anyOK bool) (int32, error) {
	return it.peerOr(cm, key, what, anyOK, false)
}

// peerOr is peer that also takes none (MPI_PROC_NULL) where noneOK.
func (it *Interp) peerOr(cm *cCmd, key string, what string, anyOK, noneOK bool) (int32, error) {
	x := cm.arg(key)
	var v int64
	if x != nil {
		var err error
		if v, err = it.int(x); err != nil {
			return 0, err
		}
	} else if key != "root" {
		return 0, nil
	}
	// Without one, the root is rank 0 of the communicator.
	if anyOK && v == -1 {
		return -1, nil
	}
	if noneOK && v == int64(trace.ProcNull) {
		return trace.ProcNull, nil
	}
	if v < 0 || v >= it.gsize {
		where := "the run"
		switch {
		case it.members != nil:
			where = "communicator " + it.commName
		case it.group >= 0:
			where = "group " + it.inst.groups[it.group].Name
		}
		pos := cm.pos
		if x != nil {
			pos = x.pos
		}
		return 0, evalErr(pos, fmt.Sprintf("%s %d out of range: %s has %d ranks (0 to %d)", what, v, where, it.gsize, it.gsize-1))
	}
	if it.members != nil {
		return int32(it.members[v]), nil
	}
	if it.group >= 0 {
		// A rank of the group, as MPI numbers it in the group's
		// communicator; events, as traces, give the world rank.
		v += int64(it.inst.groups[it.group].First)
	}
	return int32(v), nil
}

var errTooMany = "too many open files (the limit is 65536 per process)"

// oTmpfile is the bit of O_TMPFILE besides O_DIRECTORY: an open with it
// takes a mode, as one with O_CREAT does.
const oTmpfile = 0x400000

func (it *Interp) command(cm *cCmd, ev *trace.Event) (bool, error) {
	if cm.thread != nil || it.th != 0 {
		if err := it.setThread(cm); err != nil {
			return false, err
		}
	}
	if cm.commH >= 0 {
		restore, err := it.onComm(cm)
		if err != nil {
			return false, err
		}
		sync, err := it.command1(cm, ev)
		restore()
		return sync, err
	}
	return it.command1(cm, ev)
}

// command1 runs a command once its thread and communicator are set.
func (it *Interp) command1(cm *cCmd, ev *trace.Event) (bool, error) {
	switch cm.op {
	case opSleep:
		d, err := it.nonNeg(cm.n, "a sleep")
		it.advance(d)
		return false, err
	case opFail:
		msg, err := cm.path.fs(it)
		if err != nil {
			return false, err
		}
		return false, evalErr(cm.pos, msg)
	case opMark:
		id, err := it.path(cm.path, cm.site)
		if err == nil {
			it.emit(trace.Event{Op: trace.OpMark, Path: id})
		}
		return false, err
	case opBarrier, opBcast, opReduce, opGather, opScatter, opAllreduce, opAllgather, opAlltoall:
		e := trace.Event{Op: collectiveCmd[cm.name], Comm: it.comm}
		if cm.n != nil {
			n, err := it.nonNeg(cm.n, "a byte count")
			if err != nil {
				return false, err
			}
			e.Bytes = n
		}
		root, err := it.peer(cm, "root", "root", false)
		if err != nil {
			return false, err
		}
		switch cm.op {
		case opBcast, opReduce, opGather, opScatter:
			e.Peer = root
		}
		e.Op = cm.recOp(e.Op)
		if e.Ret, _, err = it.result(cm, 0); err != nil {
			return false, err
		}
		if e.Count, err = it.elements(cm); err != nil {
			return false, err
		}
		return it.collective(e, ev)
	case opSplit:
		return it.split(cm, ev)
	case opWait:
		n, err := it.nonNeg(cm.n, "a number of requests")
		if err != nil {
			return false, err
		}
		if n > math.MaxInt32 {
			return false, evalErr(cm.n.pos, fmt.Sprintf("%d requests out of range", n))
		}
		e := trace.Event{Op: cm.recOp(trace.OpMPIWait), Count: int32(n)}
		if e.Ret, _, err = it.result(cm, 0); err != nil {
			return false, err
		}
		it.emit(e)
		return false, nil
	case opSend, opRecv, opSendrecv:
		n, err := it.nonNeg(cm.n, "a byte count")
		if err != nil {
			return false, err
		}
		recv := cm.op == opRecv
		key, op := "to", trace.OpMPISend
		switch cm.op {
		case opRecv:
			key, op = "from", trace.OpMPIRecv
		case opSendrecv:
			op = trace.OpMPISendrecv
			if cm.arg("with") != nil {
				key = "with"
			}
		}
		// A sendrecv's halves may name none (MPI_PROC_NULL), its
		// source any.
		shift := cm.op == opSendrecv && key == "to"
		p, err := it.peerOr(cm, key, pick(shift, "destination", "peer"), recv, shift)
		if err != nil {
			return false, err
		}
		tagOK := func(key string, tag int64, anyOK bool) error {
			if tag < -1 || (tag == -1 && !anyOK) || tag > 1<<30 {
				return evalErr(cm.arg(key).pos, fmt.Sprintf("%s %d out of range (0 to 2^30%s)", key, tag, pick(anyOK, ", or any", "")))
			}
			return nil
		}
		tag, err := it.optInt(cm, "tag", 0, "", false)
		if err != nil {
			return false, err
		}
		if err := tagOK("tag", tag, recv); err != nil {
			return false, err
		}
		e := trace.Event{Op: cm.recOp(op), Peer: p, Tag: int32(tag), Bytes: n, Comm: it.comm}
		if cm.anySrc {
			e.Flags |= trace.PostedAnySource
		}
		if cm.anyTag {
			e.Flags |= trace.PostedAnyTag
		}
		if cm.op == opSendrecv {
			src := p
			if shift {
				if src, err = it.peerOr(cm, "from", "source", true, true); err != nil {
					return false, err
				}
				if p == trace.ProcNull {
					e.Bytes = 0 // it sends nothing
				}
			}
			rtag, err := it.optInt(cm, "recvtag", tag, "", false)
			if err != nil {
				return false, err
			}
			if err := tagOK("recvtag", rtag, true); err != nil {
				return false, err
			}
			e.SetRecvFrom(src, int32(rtag))
		}
		if e.Ret, _, err = it.result(cm, 0); err != nil {
			return false, err
		}
		if e.Count, err = it.elements(cm); err != nil {
			return false, err
		}
		it.emit(e)
		return false, nil
	}
	if cm.op >= opMPIOpen && cm.op <= opMPIView {
		return it.mpiCommand(cm, ev)
	}
	return false, it.posixCommand(cm)
}

// elements evaluates the element count of a communication call (0
// without one).
func (it *Interp) elements(cm *cCmd) (int32, error) {
	v, err := it.optInt(cm, "elements", 0, "element count", true)
	if err == nil && v > math.MaxInt32 {
		err = evalErr(cm.arg("elements").pos, fmt.Sprintf("element count %d out of range", v))
	}
	return int32(v), err
}

// collective makes a collective call: a sync unless the rank is alone.
func (it *Interp) collective(e trace.Event, ev *trace.Event) (bool, error) {
	if e.Comm == trace.CommSelf || it.inst.commSize(e.Comm) <= 1 {
		it.emit(e)
		return false, nil
	}
	e.Rank = uint32(it.rank)
	e.Thread = it.th
	e.Start = it.now
	e.Dur = it.model.dur(&e)
	it.st.Follow(&e)
	*ev = e
	return true, nil
}

func (it *Interp) posixCommand(cm *cCmd) error {
	var id trace.PathID
	var err error
	if cm.path != nil {
		if id, err = it.path(cm.path, cm.site); err != nil {
			return err
		}
	}
	switch cm.op {
	case opReadPath, opWritePath, opAppend:
		n, err := it.nonNeg(cm.arg("size"), "size")
		if err != nil {
			return err
		}
		at, err := it.optInt(cm, "at", -1, "offset", true)
		if err != nil {
			return err
		}
		fd, err := it.lowestFD(cm)
		if err != nil {
			return err
		}
		data := trace.Event{FD: fd, Path: id, Size: n, Ret: n}
		var flags, mode uint32
		switch cm.op {
		case opReadPath:
			flags = trace.ORdonly
			data.Op = pick(at >= 0, trace.OpPread, trace.OpRead)
		case opWritePath:
			flags, mode = trace.OWronly|trace.OCreat, 0o644
			data.Op = pick(at >= 0, trace.OpPwrite, trace.OpWrite)
		default:
			flags, mode = trace.OWronly|trace.OCreat|trace.OAppend, 0o644
			data.Op = trace.OpWrite
			at = it.known(id)
		}
		data.Offset = max(at, 0)
		// The command opens, uses and closes a descriptor: the follower's
		// state is the same after it, so it need not see the calls.
		it.emitOnly(trace.Event{Op: trace.OpOpen, Path: id, Flags: flags, Mode: mode, Ret: int64(fd)})
		it.emitOnly(data)
		it.emitOnly(trace.Event{Op: trace.OpClose, FD: fd, Path: id})
		if cm.op != opReadPath {
			it.grow(id, data.Offset+n)
		}
	case opCreate:
		mode, err := it.optInt(cm, "mode", 0o644, "mode", true)
		if err != nil {
			return err
		}
		fd, err := it.lowestFD(cm)
		if err != nil {
			return err
		}
		it.emitOnly(trace.Event{Op: trace.OpCreat, Path: id, Flags: trace.OWronly | trace.OCreat | trace.OTrunc, Mode: uint32(mode), Ret: int64(fd)})
		it.emitOnly(trace.Event{Op: trace.OpClose, FD: fd, Path: id})
		it.setKnown(id, 0)
	case opDelete:
		e := trace.Event{Op: cm.recOp(trace.OpUnlink), Path: id}
		failed, err := it.details(cm, &e, 0)
		if err != nil {
			return err
		}
		it.emit(e)
		if !failed {
			delete(it.sizes, id)
		}
	case opRename:
		to, err := it.path(cm.arg("to"), cm.site2)
		if err != nil {
			return err
		}
		e := trace.Event{Op: cm.recOp(trace.OpRename), Path: id, Path2: to}
		failed, err := it.details(cm, &e, 0)
		if err != nil {
			return err
		}
		it.emit(e)
		if sz, ok := it.sizes[id]; ok && !failed {
			delete(it.sizes, id)
			it.setKnown(to, sz)
		}
	case opLookup:
		mode, err := it.flagsArg(cm, "mode", 0)
		if err != nil {
			return err
		}
		e := trace.Event{Op: trace.OpAccess, Path: id, Mode: mode}
		if _, err := it.details(cm, &e, 0); err != nil {
			return err
		}
		it.emit(e)
	case opStatPath:
		// mode: the mask of statx as the preload capture records it.
		mode, err := it.flagsArg(cm, "mode", 0)
		if err != nil {
			return err
		}
		e := trace.Event{Op: cm.recOp(trace.OpStat), Path: id, Mode: mode}
		if _, err := it.details(cm, &e, 0); err != nil {
			return err
		}
		it.emit(e)
	case opMkdir:
		mode, err := it.optInt(cm, "mode", 0o755, "mode", true)
		if err != nil {
			return err
		}
		e := trace.Event{Op: cm.recOp(trace.OpMkdir), Path: id, Mode: uint32(mode)}
		if _, err := it.details(cm, &e, 0); err != nil {
			return err
		}
		it.emit(e)
	case opRmdir:
		e := trace.Event{Op: trace.OpRmdir, Path: id}
		if _, err := it.details(cm, &e, 0); err != nil {
			return err
		}
		it.emit(e)
	case opTruncPath:
		n, err := it.nonNeg(cm.arg("to"), "size")
		if err != nil {
			return err
		}
		e := trace.Event{Op: cm.recOp(trace.OpTruncate), Path: id, Size: n}
		failed, err := it.details(cm, &e, 0)
		if err != nil {
			return err
		}
		it.emit(e)
		if !failed {
			it.setKnown(id, n)
		}
	case opOpen:
		flags, err := it.optInt(cm, "flags", trace.ORdwr|trace.OCreat, "flags", true)
		if err != nil {
			return err
		}
		mode, err := it.optInt(cm, "mode", 0o644, "mode", true)
		if err != nil {
			return err
		}
		if flags&(trace.OCreat|oTmpfile) == 0 && cm.arg("mode") == nil {
			mode = 0
		}
		e := trace.Event{Op: cm.recOp(trace.OpOpen), Path: id, Flags: uint32(flags), Mode: uint32(mode)}
		if h := &it.names().hs[cm.h]; h.open && cm.arg("fd") == nil {
			return evalErr(cm.hPos, fmt.Sprintf("%s is still open (opened at %s); close it before opening it again", cm.hName, h.openedAt))
		}
		if cm.ret != nil {
			// A failed open: no descriptor, the handle stays closed.
			ret, err := it.int(cm.ret)
			if err != nil {
				return err
			}
			if ret >= 0 {
				return evalErr(cm.ret.pos, fmt.Sprintf("the ret of open must be negative (a failed open), got %d", ret))
			}
			e.Ret = ret
			it.emit(e)
			return nil
		}
		fd, err := it.descArg(cm)
		if err != nil {
			return err
		}
		if err := it.bindable(cm.h, cm.hName, cm.hPos, fd, "opening it"); err != nil {
			return err
		}
		e.Ret = int64(fd)
		it.emit(e)
		if err := it.bind(cm.h, fd, id, cm.pos); err != nil {
			return err
		}
		if flags&trace.OTrunc != 0 {
			it.setKnown(id, 0)
		}
	case opLink, opSymlink:
		key, def := "to", trace.OpLink
		if cm.op == opSymlink {
			key, def = "target", trace.OpSymlink
		}
		to, err := it.path(cm.arg(key), cm.site2)
		if err != nil {
			return err
		}
		return it.call(cm, trace.Event{Op: cm.recOp(def), Path: id, Path2: to})
	case opReadlink:
		n, err := it.optInt(cm, "size", 0, "size", true)
		if err != nil {
			return err
		}
		return it.call(cm, trace.Event{Op: cm.recOp(trace.OpReadlink), Path: id, Size: n})
	case opUnmap, opMsync:
		// The end or flush of a mapping of the file PATH, by file range:
		// no descriptor.
		at, err := it.optInt(cm, "at", 0, "offset", true)
		if err != nil {
			return err
		}
		n, err := it.nonNeg(cm.arg("size"), "size")
		if err != nil {
			return err
		}
		return it.call(cm, trace.Event{Op: pick(cm.op == opUnmap, trace.OpMunmap, trace.OpMsync), FD: -1, Path: id, Offset: at, Size: n})
	case opSyncAll:
		return it.call(cm, trace.Event{Op: trace.OpSync})
	case opInherit, opCloseRange, opFork, opClone, opExec, opExit:
		return it.procCommand(cm, id)
	default:
		return it.fdCommand(cm)
	}
	return nil
}

// call makes a call whose only details are its flags and result.
func (it *Interp) call(cm *cCmd, e trace.Event) error {
	if _, err := it.details(cm, &e, 0); err != nil {
		return err
	}
	it.emit(e)
	return nil
}

// bindable checks that handle slot may take descriptor fd: it is closed,
// or open at fd itself (which the call replaces).
func (it *Interp) bindable(slot int, name string, pos Pos, fd int32, again string) error {
	if h := &it.names().hs[slot]; h.open && h.fd != fd {
		return evalErr(pos, fmt.Sprintf("%s is still open (opened at %s); close it before %s again", name, h.openedAt, again))
	}
	return nil
}

// procCommand runs the commands on processes, threads and descriptor
// tables (proc.go).
func (it *Interp) procCommand(cm *cCmd, id trace.PathID) error {
	switch cm.op {
	case opInherit:
		fd, err := it.descArg(cm)
		if err != nil {
			return err
		}
		flags, err := it.optInt(cm, "flags", 0, "flags", true)
		if err != nil {
			return err
		}
		at, err := it.optInt(cm, "at", 0, "position", true)
		if err != nil {
			return err
		}
		if err := it.bindable(cm.h, cm.hName, cm.hPos, fd, "inheriting it"); err != nil {
			return err
		}
		e := trace.Event{Op: trace.OpInherit, FD: fd, Ret: int64(fd), Path: id, Flags: uint32(flags), Offset: at}
		if cm.quiet {
			// No event, but the descriptor is there all the same.
			e.Thread = it.th
			it.st.Follow(&e)
		} else {
			it.emit(e)
		}
		if err := it.bind(cm.h, fd, id, cm.pos); err != nil {
			return err
		}
	case opCloseRange:
		first, err := it.nonNeg(cm.n, "a descriptor")
		if err != nil {
			return err
		}
		last, err := it.nonNeg(cm.arg("to"), "a descriptor")
		if err != nil {
			return err
		}
		if first > math.MaxInt32 {
			return evalErr(cm.n.pos, fmt.Sprintf("descriptor %d out of range (0 to %d)", first, math.MaxInt32))
		}
		e := trace.Event{Op: trace.OpCloseRange, FD: int32(first), Size: last}
		if _, err := it.details(cm, &e, 0); err != nil {
			return err
		}
		it.emit(e)
	case opFork, opClone:
		th, err := it.nonNeg(cm.n, "a thread")
		if err != nil {
			return err
		}
		if th > math.MaxUint32 {
			return evalErr(cm.n.pos, fmt.Sprintf("thread %d out of range (0 to %d)", th, uint32(math.MaxUint32)))
		}
		e := trace.Event{Op: pick(cm.op == opFork, trace.OpFork, trace.OpClone)}
		failed, err := it.details(cm, &e, th)
		if err != nil {
			return err
		}
		if !failed && e.Ret != th {
			return evalErr(cm.ret.pos, fmt.Sprintf("the ret of %s must be negative (a failed %s), got %d", cm.name, cm.name, e.Ret))
		}
		it.emit(e)
	case opExec:
		e := trace.Event{Op: trace.OpExec, Path: id}
		if _, err := it.details(cm, &e, 0); err != nil {
			return err
		}
		it.emit(e)
	case opExit:
		e := trace.Event{Op: trace.OpExit}
		if _, err := it.details(cm, &e, 0); err != nil {
			return err
		}
		it.emit(e)
	}
	return nil
}

// fdCall makes the calls on a handle that fdCommand leaves to it:
// copies, fallocate, posix_fadvise, mmap, getdents.
func (it *Interp) fdCall(cm *cCmd, h *handle, e *trace.Event) error {
	size := func(key string) (int64, error) { return it.optInt(cm, key, 0, "size", true) }
	at, err := it.optInt(cm, "at", -1, "offset", true)
	if err != nil {
		return err
	}
	switch cm.op {
	case opCopy:
		h2 := &it.names().hs[cm.h2]
		if !h2.open {
			return evalErr(cm.h2Pos, fmt.Sprintf("%s is not open", cm.h2Name))
		}
		n, err := size("size")
		if err != nil {
			return err
		}
		outat, err := it.optInt(cm, "outat", -1, "offset", true)
		if err != nil {
			return err
		}
		e.FD2, e.Path2, e.Size = h2.fd, h2.path, n
		failed, err := it.details(cm, e, n)
		if err != nil {
			return err
		}
		moved := max(e.Ret, 0)
		if failed {
			moved = 0
		}
		// A side the call gives an offset for (CopyInAt, CopyOutAt) is
		// read or written there; the other at its handle's position
		// (which the follower moves).
		if at >= 0 {
			e.Flags |= trace.CopyInAt
			e.Offset = at
		} else if e.Offset, err = it.position(cm, "pos", h, false); err != nil {
			return err
		}
		if outat >= 0 {
			e.Flags |= trace.CopyOutAt
			e.Offset2 = outat
		} else if e.Offset2, err = it.position(cm, "outpos", h2, true); err != nil {
			return err
		}
		it.grow(h2.path, e.Offset2+moved)
	case opAllocate:
		n, err := size("size")
		if err != nil {
			return err
		}
		e.Offset, e.Size = max(at, 0), n
		failed, err := it.details(cm, e, 0)
		if err != nil {
			return err
		}
		const keepSize = 1 // FALLOC_FL_KEEP_SIZE
		if !failed && e.Flags&keepSize == 0 {
			it.grow(h.path, e.Offset+n)
		}
	case opAdvise:
		n, err := size("size")
		if err != nil {
			return err
		}
		advice, err := it.optInt(cm, "advice", 0, "advice", true)
		if err != nil {
			return err
		}
		e.Offset, e.Size, e.Flags = max(at, 0), n, uint32(advice)
		if _, err := it.details(cm, e, 0); err != nil {
			return err
		}
	case opMap:
		n, err := size("size")
		if err != nil {
			return err
		}
		prot, err := it.optInt(cm, "prot", 0, "protection", true)
		if err != nil {
			return err
		}
		e.Offset, e.Size, e.Mode = max(at, 0), n, uint32(prot)
		if _, err := it.details(cm, e, 0); err != nil {
			return err
		}
	case opReaddir:
		n, err := size("size")
		if err != nil {
			return err
		}
		e.Size = n
		if _, err := it.details(cm, e, 0); err != nil {
			return err
		}
	}
	it.emit(*e)
	return nil
}

func (it *Interp) fdCommand(cm *cCmd) error {
	h, err := it.handle(cm)
	if err != nil {
		return err
	}
	e := trace.Event{FD: h.fd, Path: h.path, Op: cm.recOp(cm.defaultOp())}
	if e.Op.Info().FD == trace.FDAt {
		// An *at call on its descriptor (AT_EMPTY_PATH, an empty path):
		// no Path, FD names the file (docs/FORMAT.md).
		e.Path = 0
	}
	switch cm.op {
	case opReadFD, opWriteFD:
		n, err := it.nonNeg(cm.arg("size"), "size")
		if err != nil {
			return err
		}
		at, err := it.optInt(cm, "at", -1, "offset", true)
		if err != nil {
			return err
		}
		iov, err := it.optInt(cm, "iov", 0, "buffer count", true)
		if err != nil {
			return err
		}
		if iov == 0 {
			// fread/fwrite: the item count (nmemb), where the capture
			// records it.
			if iov, err = it.optInt(cm, "elements", 0, "element count", true); err != nil {
				return err
			}
		}
		if e.Flags, err = it.flagsArg(cm, "flags", 0); err != nil {
			return err
		}
		ret, _, err := it.result(cm, n)
		if err != nil {
			return err
		}
		moved := max(ret, 0)
		write := cm.op == opWriteFD
		e.Size, e.Ret, e.Count = n, ret, int32(min(iov, 1<<31-1))
		if at >= 0 {
			e.Offset = at
		} else if e.Offset, err = it.position(cm, "pos", h, write); err != nil {
			return err
		}
		if write {
			it.grow(h.path, e.Offset+moved)
		}
	case opStatFD, opLookupFD:
		if e.Mode, err = it.flagsArg(cm, "mode", 0); err != nil {
			return err
		}
		if _, err := it.details(cm, &e, 0); err != nil {
			return err
		}
	case opLinkFD:
		if e.Path2, err = it.path(cm.arg("to"), cm.site2); err != nil {
			return err
		}
		if _, err := it.details(cm, &e, 0); err != nil {
			return err
		}
	case opReadlinkFD:
		if e.Size, err = it.optInt(cm, "size", 0, "size", true); err != nil {
			return err
		}
		if _, err := it.details(cm, &e, 0); err != nil {
			return err
		}
	case opTruncFD:
		n, err := it.nonNeg(cm.arg("to"), "size")
		if err != nil {
			return err
		}
		e.Size = n
		failed, err := it.details(cm, &e, 0)
		if err != nil {
			return err
		}
		if !failed {
			it.setKnown(h.path, n)
		}
	case opSeekFD:
		off, err := it.int(cm.arg("to"))
		if err != nil {
			return err
		}
		e.Offset, e.Whence = off, cm.whence
		if e.Op == trace.OpFseek {
			// fseek returns 0, not the position: the position is where
			// it asked for, where the script can compute that.
			failed, err := it.details(cm, &e, 0)
			if err != nil {
				return err
			}
			pos, ok := seekPos(h.d.Pos, it.known(h.path), off, cm.whence)
			it.emit(e)
			if ok && !failed {
				// The follower knows where SEEK_SET and SEEK_CUR leave
				// it, not the size SEEK_END counts from: the script does.
				h.d.Pos = pos
			}
			return nil
		}
		if cm.ret != nil {
			// The recorded result is the new position (or an error, which
			// leaves the position where it was).
			if e.Ret, _, err = it.result(cm, 0); err != nil {
				return err
			}
			break
		}
		if e.Ret, err = it.seekTo(cm, h, h.d.Pos, off); err != nil {
			return err
		}
	case opSyncFD, opDatasync:
		if _, err := it.details(cm, &e, 0); err != nil {
			return err
		}
	case opCloseFD:
		if _, err := it.details(cm, &e, 0); err != nil {
			return err
		}
	case opDup:
		if h2 := &it.names().hs[cm.h2]; h2.open && cm.arg("fd") == nil {
			return evalErr(cm.h2Pos, fmt.Sprintf("%s is still open (opened at %s); close it before using its name again", cm.h2Name, h2.openedAt))
		}
		if cm.ret != nil {
			// A failed dup: no new handle.
			failed, err := it.details(cm, &e, 0)
			if err != nil {
				return err
			}
			if !failed {
				return evalErr(cm.ret.pos, fmt.Sprintf("the ret of dup must be negative (a failed dup), got %d", e.Ret))
			}
			break
		}
		if _, err := it.details(cm, &e, 0); err != nil {
			return err
		}
		if e.Op == trace.OpFcntl && e.Flags != trace.FDupfd && e.Flags != trace.FDupfdCloexec {
			return evalErr(cm.arg("flags").pos, fmt.Sprintf("a dup through fcntl has the command F_DUPFD or F_DUPFD_CLOEXEC as its flags, got %d", e.Flags))
		}
		if e.Size, err = it.optInt(cm, "arg", 0, "", false); err != nil {
			return err
		}
		fd, err := it.descArg(cm)
		if err != nil {
			return err
		}
		if err := it.bindable(cm.h2, cm.h2Name, cm.h2Pos, fd, "using its name"); err != nil {
			return err
		}
		e.Ret = int64(fd)
		it.emit(e)
		if err := it.bind(cm.h2, fd, h.path, cm.pos); err != nil {
			return err
		}
		return nil
	case opFcntl:
		cmd, err := it.nonNeg(cm.arg("cmd"), "an fcntl command")
		if err != nil {
			return err
		}
		if cmd == trace.FDupfd || cmd == trace.FDupfdCloexec {
			return evalErr(cm.arg("cmd").pos, "fcntl's dup commands make a handle: write dup HANDLE as NAME call fcntl")
		}
		arg, err := it.optInt(cm, "arg", 0, "", false)
		if err != nil {
			return err
		}
		e.Flags, e.Size = uint32(cmd), arg
		if _, err := it.details(cm, &e, 0); err != nil {
			return err
		}
		it.emit(e)
		return nil
	case opCopy, opAllocate, opAdvise, opMap, opReaddir:
		return it.fdCall(cm, h, &e)
	}
	if err := it.flagsDetail(cm, &e); err != nil {
		return err
	}
	it.emit(e)
	return nil
}

// flagsDetail sets the flags detail of a call, where it has one.
func (it *Interp) flagsDetail(cm *cCmd, e *trace.Event) error {
	if x := cm.arg("flags"); x != nil && cm.op != opOpen && cm.op != opMPIOpen {
		v, err := it.nonNeg(x, "flags")
		if err != nil {
			return err
		}
		e.Flags = uint32(v)
	}
	return nil
}

// details sets the ret of a call (def without one) and reports whether
// it failed.
func (it *Interp) details(cm *cCmd, e *trace.Event, def int64) (bool, error) {
	if err := it.flagsDetail(cm, e); err != nil {
		return false, err
	}
	ret, failed, err := it.result(cm, def)
	e.Ret = ret
	return failed, err
}

// position evaluates where a call on handle h at its position is: the
// position the command gives with key, the end of the file for a write
// through O_APPEND, or h's position.
func (it *Interp) position(cm *cCmd, key string, h *handle, write bool) (int64, error) {
	if x := cm.arg(key); x != nil {
		return it.nonNeg(x, "a position")
	}
	if write && h.d.Append() {
		return it.known(h.path), nil
	}
	return max(h.d.Pos, 0), nil
}

// seekTo is where the command's seek of h from position pos goes.
func (it *Interp) seekTo(cm *cCmd, h *handle, pos, off int64) (int64, error) {
	pos, ok := seekPos(pos, it.known(h.path), off, cm.whence)
	if !ok {
		return 0, evalErr(cm.arg("to").pos, fmt.Sprintf("seek of %s to a negative or too large offset", cm.hName))
	}
	return pos, nil
}

// SeekPos is where a seek to off with whence leaves a position pos in a
// file of known size (SEEK_DATA and SEEK_HOLE: off itself, as in a file
// without holes), and whether that is a valid position.
func seekPos(pos, known, off int64, whence int32) (int64, bool) {
	var p int64
	var ov bool
	switch whence {
	case 0, 3, 4:
		p = off
	case 1:
		p, ov = addOv(pos, off)
	case 2:
		p, ov = addOv(known, off)
	default:
		return 0, false
	}
	return p, !ov && p >= 0
}

// SeekPos is seekPos for the converter, which mirrors the interpreter.
func SeekPos(pos, known, off int64, whence int32) (int64, bool) {
	return seekPos(pos, known, off, whence)
}

func (it *Interp) mpiCommand(cm *cCmd, ev *trace.Event) (bool, error) {
	if cm.op == opMPIOpen {
		id, err := it.path(cm.path, cm.site)
		if err != nil {
			return false, err
		}
		flags, err := it.optInt(cm, "flags", trace.MPIModeRdwr|trace.MPIModeCreate, "flags", true)
		if err != nil {
			return false, err
		}
		h := &it.mhs[cm.h]
		if h.open {
			return false, evalErr(cm.hPos, fmt.Sprintf("%s is still open (opened at %s); close it before opening it again", cm.hName, h.openedAt))
		}
		fid, ok := it.mids.alloc()
		if !ok {
			return false, evalErr(cm.pos, errTooMany)
		}
		comm := pick(cm.self, trace.CommSelf, it.comm)
		e := trace.Event{Op: trace.OpMPIFileOpen, Path: id, Flags: uint32(flags), FD: fid, Comm: comm}
		failed, err := it.details(cm, &e, 0)
		if err != nil {
			return false, err
		}
		if failed {
			// A failed open: no handle.
			it.mids.free(fid)
			e.FD = 0
		}
		sync, err := it.collective(e, ev)
		if !failed {
			*h = handle{open: true, fd: fid, path: id, comm: comm, mh: it.st.Handle(fid), openedAt: cm.pos}
		}
		return sync, err
	}
	h, err := it.handle(cm)
	if err != nil {
		return false, err
	}
	e := trace.Event{FD: h.fd, Path: h.path, Comm: h.comm, Op: cm.recOp(cm.defaultOp())}
	setPos, newPos := false, int64(0) // where a seek leaves the individual pointer
	switch cm.op {
	case opMPIRead, opMPIWrite:
		if err := it.mpiData(cm, h, &e); err != nil {
			return false, err
		}
	case opMPISeek:
		off, err := it.int(cm.arg("to"))
		if err != nil {
			return false, err
		}
		e.Offset, e.Whence = off, cm.whence
		failed, err := it.details(cm, &e, 0)
		if err != nil {
			return false, err
		}
		if !cm.shared && !failed {
			pos, err := it.seekTo(cm, h, h.mh.Pos, off)
			if err != nil {
				return false, err
			}
			// The follower knows where MPI_SEEK_SET and MPI_SEEK_CUR
			// leave the pointer, not the size MPI_SEEK_END counts from:
			// the script does.
			setPos, newPos = true, pos
		}
	case opMPISync:
		if _, err := it.details(cm, &e, 0); err != nil {
			return false, err
		}
	case opMPITrunc:
		n, err := it.nonNeg(cm.arg("to"), "size")
		if err != nil {
			return false, err
		}
		e.Size = n
		failed, err := it.details(cm, &e, 0)
		if err != nil {
			return false, err
		}
		if !failed {
			it.setKnown(h.path, n)
		}
	case opMPIView:
		disp, err := it.optInt(cm, "disp", 0, "displacement", true)
		if err != nil {
			return false, err
		}
		block, err := it.optInt(cm, "block", 0, "block length", true)
		if err != nil {
			return false, err
		}
		stride, err := it.optInt(cm, "stride", 0, "stride", true)
		if err != nil {
			return false, err
		}
		if cm.arg("stride") != nil && (block == 0 || stride < block) {
			return false, evalErr(cm.arg("stride").pos, fmt.Sprintf("a view needs 0 < block <= stride, got block %d and stride %d", block, stride))
		}
		e.Offset, e.Size, e.Stride = disp, block, stride
		if _, err := it.details(cm, &e, 0); err != nil {
			return false, err
		}
	case opMPIClose:
		if _, err := it.details(cm, &e, 0); err != nil {
			return false, err
		}
		it.mids.free(h.fd)
		h.open, h.mh, h.closedAt = false, nil, cm.pos
	}
	if err := it.flagsDetail(cm, &e); err != nil {
		return false, err
	}
	sync := false
	if e.Op.Collective() {
		if sync, err = it.collective(e, ev); err != nil {
			return false, err
		}
	} else {
		it.emit(e)
	}
	if setPos {
		h.mh.Pos = newPos
	}
	return sync, nil
}

// mpiData sets the details of the MPI-IO read or write e of cm on h.
func (it *Interp) mpiData(cm *cCmd, h *handle, e *trace.Event) error {
	n, err := it.nonNeg(cm.arg("size"), "size")
	if err != nil {
		return err
	}
	at, err := it.optInt(cm, "at", -1, "offset", true)
	if err != nil {
		return err
	}
	elems, err := it.optInt(cm, "elements", min(n, 1<<31-1), "element count", true)
	if err != nil {
		return err
	}
	ret, _, err := it.result(cm, n)
	if err != nil {
		return err
	}
	moved := max(ret, 0)
	w := cm.op == opMPIWrite
	e.Size, e.Count, e.Ret = n, int32(min(elems, 1<<31-1)), ret
	switch {
	case cm.shared, cm.order:
	case at >= 0:
		e.Offset = at
	case cm.arg("pos") != nil:
		if e.Offset, err = it.nonNeg(cm.arg("pos"), "a position"); err != nil {
			return err
		}
	default:
		e.Offset = max(h.mh.Pos, 0) // the individual file pointer, which the follower moves
	}
	if w && !cm.shared && !cm.order {
		it.grow(h.path, e.Offset+moved)
	}
	return nil
}

// Pos returns the position of the command that made the last event (or
// the collective call awaiting Settle), for messages about it.
func (it *Interp) Pos() Pos { return it.cmdPos }
