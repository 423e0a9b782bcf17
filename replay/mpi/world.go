//go:build mpi

package mpi

/*
#include "cmpi.h"
*/
import "C"

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/iotrace/iotrace/replay/comm"
	"github.com/iotrace/iotrace/trace"
)

// World is the communication layer of this process's trace ranks over
// MPI (a replay.World).
//
// One goroutine, the engine, makes every MPI call of it, all of them
// non-blocking, so that it never waits in MPI while a trace rank needs it
// (the ranks are goroutines that post their calls to it):
//
//   - A collective of communicator c completes once every member running
//     in this process has entered it and, when c spans several processes,
//     the one MPI collective of those processes (on c's own MPI
//     communicator, so that the instances of c match in call order) has
//     completed. It moves the recorded bytes: MPI_Ibcast of the root's
//     count, MPI_Ireduce and MPI_Iallreduce of doubles, and for gather,
//     scatter, allgather and alltoall the v-variants with each process's
//     sum over its ranks, after an MPI_Iallgather of those sums (so a
//     trace whose ranks recorded different counts replays too).
//     Alltoall spreads each rank's bytes evenly over the members.
//   - A message between ranks of one process goes through the engine's
//     mailboxes; one between processes is an MPI_Issend of the recorded
//     bytes whose tag carries both ranks' places in their blocks and the
//     trace's tag. Receives match as comm.Local matches them: in posting
//     order, by source and tag, with the wildcards.
//   - Every 100 ms (and when this process's ranks all wait or are done)
//     the engines sum up their state with two MPI_Iallreduce calls: when
//     every rank has finished and every message was received, the world
//     ends; when every rank waits, no message is on its way and no MPI
//     collective can still complete, in two rounds in a row, the waiting
//     calls fail with comm.ErrUnmatched, as comm.Local fails them.
type World struct {
	j    *Job
	opts WorldOptions
	in   chan *op
	own  map[uint32]int // trace rank → index in j.Own()

	exited chan struct{}
	err    error // the first MPI failure outside a call
	stats  WorldStats

	// quit stops the engine at once (Stop): a process of the job stopped
	// answering, and MPI calls with it would never complete.
	quit     chan struct{}
	quitErr  error
	quitOnce sync.Once
}

// WorldStats counts what the world did over MPI.
type WorldStats struct {
	Messages    int64 // messages sent to other processes
	Bytes       int64 // their bytes
	Collectives int64 // MPI collectives issued
	Unreceived  int64 // messages that no receive matched
}

// WorldOptions configure a World.
type WorldOptions struct {
	// FilesSynchronise says the backend's collective MPI-IO calls are
	// real MPI collectives (the MPI-IO backend), which make the ranks
	// wait for each other themselves: the world's file-domain
	// collectives (comm.DomainFile) then return at once instead of
	// adding an MPI_Ibarrier to every collective file call.
	FilesSynchronise bool
}

// NewWorld starts the communication layer of j's ranks.
func NewWorld(j *Job, opts WorldOptions) *World {
	w := &World{j: j, opts: opts, in: make(chan *op, 1024), own: map[uint32]int{}, exited: make(chan struct{}), quit: make(chan struct{})}
	for i, r := range j.Own() {
		w.own[r] = i
	}
	e := newEngine(w)
	go e.run()
	return w
}

// Endpoint implements replay.World.
func (w *World) Endpoint(rank uint32) comm.Comm {
	i, ok := w.own[rank]
	if !ok {
		panic(fmt.Sprintf("mpi: rank %d does not run in process %d", rank, w.j.Rank))
	}
	return &endpoint{w: w, me: i, rank: rank}
}

// Has implements replay.World.
func (w *World) Has(rank uint32) bool {
	_, ok := slices.BinarySearch(w.j.Ranks, rank)
	return ok
}

// Wait waits until every rank of every process has finished (called Done)
// and every message has arrived, and returns what the world did. Every
// process must call it.
func (w *World) Wait() (WorldStats, error) {
	if len(w.own) == 0 {
		// A process without ranks still takes part in the rounds.
		w.post(&op{kind: opNone})
	}
	<-w.exited
	return w.stats, w.err
}

// Stop ends the world at once with err: its engine makes no more MPI
// calls and leaves what it started (a peer that no longer answers would
// never complete them), Wait returns err, and calls of the ranks fail
// with it.
func (w *World) Stop(err error) {
	w.quitOnce.Do(func() {
		w.quitErr = err
		close(w.quit)
	})
}

// post hands o to the engine, unless the world was stopped.
func (w *World) post(o *op) bool {
	select {
	case w.in <- o:
		return true
	case <-w.quit:
		return false
	}
}

type opKind uint8

const (
	opNone opKind = iota
	opColl
	opSend
	opRecv
	opWait
	opDone
)

// op is a call a rank posts to the engine.
type op struct {
	kind  opKind
	me    int // local index of the rank
	ck    comm.Kind
	dom   comm.Domain
	comm  uint32
	root  int32
	bytes int64
	v     int64
	peer  int32
	tag   int32
	recv  *recvOp
	res   chan result
}

type result struct {
	v   int64
	err error
}

// recvOp is a posted receive.
type recvOp struct {
	me      int
	comm    uint32
	src     int32 // trace rank, or -1
	tag     int32 // folded tag, or -1
	done    bool  // matched or failed (engine side)
	waiting bool  // its rank waits for it
	res     chan result
}

type endpoint struct {
	w    *World
	me   int
	rank uint32
}

func (p *endpoint) post(o *op) { p.w.post(o) }

func (p *endpoint) call(ctx context.Context, o *op) (int64, error) {
	o.res = make(chan result, 1)
	if !p.w.post(o) {
		return 0, p.w.quitErr
	}
	select {
	case r := <-o.res:
		return r.v, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-p.w.quit:
		return 0, p.w.quitErr
	}
}

func (p *endpoint) Collective(ctx context.Context, kind comm.Kind, d comm.Domain, c uint32, root int32, bytes int64) error {
	if c == trace.CommSelf || (d == comm.DomainFile && p.w.opts.FilesSynchronise) {
		return nil
	}
	_, err := p.call(ctx, &op{kind: opColl, me: p.me, ck: kind, dom: d, comm: c, root: root, bytes: bytes})
	return err
}

func (p *endpoint) DecideBcast(ctx context.Context, c uint32, root int32, v int64) (int64, error) {
	if c == trace.CommSelf {
		return v, nil
	}
	return p.call(ctx, &op{kind: opColl, me: p.me, ck: comm.KindDecide, dom: comm.DomainComm, comm: c, root: root, v: v})
}

func (p *endpoint) Send(ctx context.Context, c uint32, peer, tag int32, bytes int64) error {
	_, err := p.Isend(ctx, c, peer, tag, bytes)
	return err
}

func (p *endpoint) Isend(ctx context.Context, c uint32, peer, tag int32, bytes int64) (comm.Request, error) {
	if peer < 0 || p.w.j.owner(uint32(peer)) < 0 {
		return nil, fmt.Errorf("comm: send to rank %d, which is not part of the replay", peer)
	}
	p.post(&op{kind: opSend, me: p.me, comm: c, peer: peer, tag: tag, bytes: max(bytes, 0)})
	return doneReq{}, nil
}

func (p *endpoint) Recv(ctx context.Context, c uint32, peer, tag int32, bytes int64) error {
	r, err := p.Irecv(ctx, c, peer, tag, bytes)
	if err != nil {
		return err
	}
	return r.Wait(ctx)
}

func (p *endpoint) Irecv(ctx context.Context, c uint32, peer, tag int32, bytes int64) (comm.Request, error) {
	if peer >= 0 && p.w.j.owner(uint32(peer)) < 0 {
		return nil, fmt.Errorf("comm: receive from rank %d, which is not part of the replay", peer)
	}
	rv := &recvOp{me: p.me, comm: c, src: peer, tag: -1, res: make(chan result, 1)}
	if tag >= 0 {
		rv.tag = p.w.j.foldTag(tag)
	}
	p.post(&op{kind: opRecv, me: p.me, recv: rv})
	return &recvReq{p: p, rv: rv}, nil
}

func (p *endpoint) Done() { p.post(&op{kind: opDone, me: p.me}) }

type doneReq struct{}

func (doneReq) Wait(context.Context) error { return nil }

type recvReq struct {
	p    *endpoint
	rv   *recvOp
	got  bool
	err  error
	told bool
}

func (r *recvReq) Wait(ctx context.Context) error {
	if r.got {
		return r.err
	}
	select {
	case res := <-r.rv.res:
		r.got, r.err = true, res.err
		return r.err
	default:
	}
	if !r.told {
		r.told = true
		r.p.post(&op{kind: opWait, me: r.p.me, recv: r.rv})
	}
	select {
	case res := <-r.rv.res:
		r.got, r.err = true, res.err
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	case <-r.p.w.quit:
		return r.p.w.quitErr
	}
}

// foldTag maps a trace tag onto the bits an MPI tag has left for it.
func (j *Job) foldTag(tag int32) int32 {
	lim := int64(1) << j.tagBits
	if int64(tag) < lim {
		return tag
	}
	return int32(int64(tag) % lim)
}

// ---- the engine ----

type rankState uint8

const (
	stRunning rankState = iota
	stBlocked
	stDone
)

type collKey struct {
	comm uint32
	dom  comm.Domain
}

// instance is a collective being entered by this process's members.
type instance struct {
	kind    comm.Kind
	root    uint32 // trace rank
	arrived int
	ops     []*op
	value   int64
	bytes   int64 // sum over the local members
	maxB    int64 // largest of the local members
	issued  bool  // the MPI part is under way
}

type collState struct {
	ci     *commInfo
	dom    comm.Domain
	cur    *instance
	issued int64 // MPI collectives issued
}

type message struct {
	comm uint32
	src  uint32
	tag  int32
}

// mpiReq is an outstanding non-blocking MPI call and what to do when it
// completes.
type mpiReq struct {
	req   *C.MPI_Request // in C memory
	then  func(err error)
	bufs  []cbuf // freed when it completes
	round bool   // part of a round: not activity of the ranks
}

type engine struct {
	w     *World
	j     *Job
	own   []uint32
	state []rankState
	what  []string // what a blocked rank waits in
	nrun  int
	nblk  int
	ndone int

	colls   map[collKey]*collState
	posted  [][]*recvOp
	mail    [][]message
	npost   int // posted receives not yet matched
	reqs    []*mpiReq
	sends   int // outstanding sends
	sendBuf cbuf
	old     []cbuf // send buffers outgrown while sends used them
	recvBuf cbuf

	sent, received int64
	activity       int64
	changed        bool

	// rounds
	roundAt   time.Time
	inRound   bool
	sumBuf    cbuf // in: 6 int64, out: 6 int64
	maxBuf    cbuf
	lastSum   []int64
	lastCand  bool
	collOrder []collKey // the collective states in the rounds, in the same order everywhere
	finished  bool
}

func newEngine(w *World) *engine {
	j := w.j
	e := &engine{w: w, j: j, own: j.Own(), colls: map[collKey]*collState{}, roundAt: time.Now()}
	n := len(e.own)
	e.state = make([]rankState, n)
	e.what = make([]string, n)
	e.nrun = n
	e.posted = make([][]*recvOp, n)
	e.mail = make([][]message, n)
	ids := make([]uint32, 0, len(j.comms))
	for id := range j.comms {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		ci := j.comms[id]
		if !ci.spansProcesses() {
			continue
		}
		for _, d := range []comm.Domain{comm.DomainComm, comm.DomainFile} {
			k := collKey{id, d}
			e.collOrder = append(e.collOrder, k)
			e.colls[k] = &collState{ci: ci, dom: d}
		}
	}
	e.sumBuf = newCbuf(2 * nSum * 8)
	e.maxBuf = newCbuf(int64(2 * 3 * len(e.collOrder) * 8))
	e.sendBuf = newCbuf(64 << 10)
	e.recvBuf = newCbuf(64 << 10)
	return e
}

const roundEvery = 100 * time.Millisecond

func (e *engine) run() {
	defer close(e.w.exited)
	idle := 0
	timer := time.NewTimer(time.Hour)
	for {
		select {
		case <-e.w.quit:
			// MPI may still use the buffers of the calls left: they stay.
			e.w.err = e.w.quitErr
			return
		default:
		}
		did := false
		for k := 0; k < 256; k++ {
			select {
			case o := <-e.w.in:
				e.handle(o)
				did = true
				continue
			default:
			}
			break
		}
		if e.progress() {
			did = true
		}
		if e.finished && e.sends == 0 {
			e.free()
			return
		}
		e.maybeRound()
		if did {
			idle = 0
			continue
		}
		idle++
		if idle < 32 && e.busy() {
			runtime.Gosched()
			continue
		}
		d := 2 * time.Millisecond
		if e.busy() {
			d = min(time.Duration(idle-31)*5*time.Microsecond, 50*time.Microsecond)
		}
		if !e.inRound {
			d = min(d, max(time.Until(e.roundAt.Add(roundEvery)), 0))
		}
		timer.Reset(d)
		select {
		case o := <-e.w.in:
			e.handle(o)
			idle = 0
		case <-timer.C:
		case <-e.w.quit:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// busy reports whether a rank of this process waits for MPI.
func (e *engine) busy() bool {
	if e.npost > 0 && e.nblk > 0 {
		return true
	}
	for _, cs := range e.colls {
		if cs.cur != nil && cs.cur.issued {
			return true
		}
	}
	// A sender's MPI moves the data of a large message once its receiver
	// has matched it.
	return e.sends > 0
}

func (e *engine) free() {
	e.sendBuf.free()
	e.recvBuf.free()
	for i := range e.old {
		e.old[i].free()
	}
	// Requests still outstanding (collectives a deadlock left unmatched)
	// keep their buffers: MPI may still write them.
}

func (e *engine) block(me int, what string) {
	if e.state[me] == stRunning {
		e.nrun--
		e.nblk++
		e.state[me] = stBlocked
		e.what[me] = what
		if e.nrun == 0 {
			e.changed = true
		}
	}
}

func (e *engine) unblock(me int) {
	if e.state[me] == stBlocked {
		e.nblk--
		e.nrun++
		e.state[me] = stRunning
	}
	e.activity++
}

func (e *engine) handle(o *op) {
	switch o.kind {
	case opNone:
		e.changed = true
	case opColl:
		e.collective(o)
	case opSend:
		e.send(o)
	case opRecv:
		e.postRecv(o.recv)
	case opWait:
		if !o.recv.done {
			o.recv.waiting = true
			r := o.recv
			e.block(o.me, fmt.Sprintf("a receive from %s (tag %s) on communicator %d", rankName(r.src), tagName(r.tag), r.comm))
		}
	case opDone:
		switch e.state[o.me] {
		case stRunning:
			e.nrun--
		case stBlocked:
			e.nblk--
		}
		if e.state[o.me] != stDone {
			e.state[o.me] = stDone
			e.ndone++
			e.changed = true
		}
		e.activity++
	}
}

func rankName(r int32) string {
	if r < 0 {
		return "any rank"
	}
	return fmt.Sprintf("rank %d", r)
}

func tagName(t int32) string {
	if t < 0 {
		return "any"
	}
	return fmt.Sprint(t)
}

func reply(ch chan result, v int64, err error) {
	if ch != nil {
		ch <- result{v, err}
	}
}

// ---- collectives ----

func (e *engine) collective(o *op) {
	j := e.j
	ci := j.comm(o.comm)
	rank := e.own[o.me]
	if _, member := slices.BinarySearch(ci.local, rank); !member || len(ci.members) <= 1 {
		reply(o.res, o.v, nil)
		return
	}
	key := collKey{ci.id, o.dom}
	cs := e.colls[key]
	if cs == nil {
		cs = &collState{ci: ci, dom: o.dom}
		e.colls[key] = cs
	}
	if cs.cur == nil {
		root := ci.members[0]
		if o.root >= 0 {
			if _, ok := slices.BinarySearch(ci.members, uint32(o.root)); ok {
				root = uint32(o.root)
			}
		}
		cs.cur = &instance{kind: o.ck, root: root}
	}
	in := cs.cur
	in.arrived++
	in.ops = append(in.ops, o)
	in.bytes += o.bytes
	in.maxB = max(in.maxB, o.bytes)
	if rank == in.root {
		in.value = o.v
	}
	e.activity++
	e.block(o.me, fmt.Sprintf("%s on communicator %d (%d of its %d members in this process arrived)", o.ck, ci.id, in.arrived, len(ci.local)))
	if in.arrived < len(ci.local) {
		return
	}
	if !ci.spansProcesses() || ci.broken {
		e.complete(cs, nil)
		return
	}
	in.issued = true
	cs.issued++
	e.w.stats.Collectives++
	if err := e.startMPI(cs); err != nil {
		e.complete(cs, err)
	}
}

// complete releases the members of cs's current instance.
func (e *engine) complete(cs *collState, err error) {
	in := cs.cur
	cs.cur = nil
	for _, o := range in.ops {
		e.unblock(o.me)
		reply(o.res, in.value, err)
	}
}

// startMPI issues the MPI part of cs's current instance.
func (e *engine) startMPI(cs *collState) error {
	in := cs.cur
	ci := cs.ci
	c := ci.comm
	if cs.dom == comm.DomainFile {
		c = ci.file
	}
	rootProc := C.int(slices.Index(ci.procs, e.j.owner(in.root)))
	done := func(err error) {
		if cs.cur == in { // not given up by a deadlock
			e.complete(cs, err)
		}
	}
	switch in.kind {
	case comm.KindBarrier, comm.KindCommCreate, comm.KindFile:
		return e.issue("MPI_Ibarrier", done, nil, func(r *C.MPI_Request) C.int { return C.ibarrier(c, r) })
	case comm.KindDecide:
		b := newCbuf(8)
		if C.int(ci.me) == rootProc {
			*(*int64)(b.p) = in.value
		}
		return e.issue("MPI_Ibcast", func(err error) {
			if err == nil {
				in.value = *(*int64)(b.p)
			}
			done(err)
		}, []cbuf{b}, func(r *C.MPI_Request) C.int { return C.ibcast(b.p, 8, 0, rootProc, c, r) })
	case comm.KindBcast, comm.KindReduce, comm.KindAllreduce:
		if ci.exact {
			return e.startData(cs, c, rootProc, in.maxB)
		}
		// The largest count of any process, then the data.
		mine, all := newCbuf(8), newCbuf(8)
		*(*int64)(mine.p) = in.maxB
		return e.issue("MPI_Iallreduce", func(err error) {
			if err != nil {
				done(err)
				return
			}
			if err := e.startData(cs, c, rootProc, *(*int64)(all.p)); err != nil {
				done(err)
			}
		}, []cbuf{mine, all}, func(r *C.MPI_Request) C.int {
			return C.iallreduce64((*C.longlong)(mine.p), (*C.longlong)(all.p), 1, 1, c, r)
		})
	case comm.KindGather, comm.KindScatter, comm.KindAllgather, comm.KindAlltoall:
		np := len(ci.procs)
		if ci.exact {
			sums := make([]int64, np)
			for q := range sums {
				sums[q] = int64(ci.counts[q]) * in.maxB
			}
			return e.startV(cs, c, rootProc, sums)
		}
		// First every process's sum, then the v-variant.
		mine := newCbuf(8)
		all := newCbuf(int64(np) * 8)
		*(*int64)(mine.p) = in.bytes
		return e.issue("MPI_Iallgather", func(err error) {
			if err != nil {
				done(err)
				return
			}
			sums := slices.Clone(unsafe.Slice((*int64)(all.p), np))
			if err := e.startV(cs, c, rootProc, sums); err != nil {
				done(err)
			}
		}, []cbuf{mine, all}, func(r *C.MPI_Request) C.int {
			return C.iallgather64((*C.longlong)(mine.p), (*C.longlong)(all.p), c, r)
		})
	}
	return fmt.Errorf("collective %s not supported over MPI", in.kind)
}

// startData issues a broadcast, reduction or all-reduction of n bytes.
func (e *engine) startData(cs *collState, c C.MPI_Comm, rootProc C.int, n int64) error {
	in := cs.cur
	done := func(err error) {
		if cs.cur == in {
			e.complete(cs, err)
		}
	}
	if in.kind == comm.KindBcast {
		cnt, unit := counted(n)
		var b cbuf
		p := e.sendBufFor(n)
		if C.int(cs.ci.me) != rootProc {
			b = newCbuf(n)
			p = b.p
		}
		return e.issue("MPI_Ibcast", done, []cbuf{b}, func(r *C.MPI_Request) C.int { return C.ibcast(p, cnt, unit, rootProc, c, r) })
	}
	cnt := C.int(min((n+7)/8, math.MaxInt32))
	src := e.sendBufFor(int64(cnt) * 8)
	out := newCbuf(int64(cnt) * 8)
	if in.kind == comm.KindReduce {
		return e.issue("MPI_Ireduce", done, []cbuf{out}, func(r *C.MPI_Request) C.int { return C.ireduce(src, out.p, cnt, rootProc, c, r) })
	}
	return e.issue("MPI_Iallreduce", done, []cbuf{out}, func(r *C.MPI_Request) C.int { return C.iallreduce(src, out.p, cnt, c, r) })
}

// startV issues the v-variant of a gather, scatter, allgather or
// alltoall, given every process's sum of bytes.
func (e *engine) startV(cs *collState, c C.MPI_Comm, rootProc C.int, sums []int64) error {
	in := cs.cur
	ci := cs.ci
	np := len(ci.procs)
	me := ci.me
	done := func(err error) {
		if cs.cur == in {
			e.complete(cs, err)
		}
	}
	// Byte counts between processes, then in units if they overflow.
	var send, recv []int64 // per process
	send, recv = make([]int64, np), make([]int64, np)
	switch in.kind {
	case comm.KindGather:
		send[rootProc] = sums[me]
		if C.int(me) == rootProc {
			copy(recv, sums)
		}
	case comm.KindScatter:
		recv[rootProc] = sums[me]
		if C.int(me) == rootProc {
			copy(send, sums)
		}
	case comm.KindAllgather:
		for q := range send {
			send[q] = sums[me]
		}
		copy(recv, sums)
	case comm.KindAlltoall:
		m := int64(len(ci.members))
		for q := range send {
			send[q] = sums[me] * int64(ci.counts[q]) / m
			recv[q] = sums[q] * int64(ci.counts[me]) / m
		}
	}
	var total int64
	for _, s := range sums {
		total += s
	}
	unit := C.int(0)
	if total > math.MaxInt32 {
		unit = 1
		for q := range send {
			send[q] = (send[q] + unitBytes - 1) / unitBytes
			recv[q] = (recv[q] + unitBytes - 1) / unitBytes
		}
	}
	ints := func(v []int64) (cbuf, cbuf, int64) {
		cnt, dsp := newCbuf(int64(np)*4), newCbuf(int64(np)*4)
		cs, ds := unsafe.Slice((*C.int)(cnt.p), np), unsafe.Slice((*C.int)(dsp.p), np)
		var off int64
		for q, x := range v {
			cs[q], ds[q] = C.int(x), C.int(off)
			off += x
		}
		return cnt, dsp, off
	}
	scnt, sdsp, stot := ints(send)
	rcnt, rdsp, rtot := ints(recv)
	ub := int64(1)
	if unit != 0 {
		ub = unitBytes
	}
	src := e.sendBufFor(stot * ub)
	out := newCbuf(rtot * ub)
	bufs := []cbuf{scnt, sdsp, rcnt, rdsp, out}
	mySend := C.int(0)
	for _, x := range send {
		mySend = max(mySend, C.int(x))
	}
	myRecv := C.int(recv[rootProc])
	switch in.kind {
	case comm.KindGather:
		return e.issue("MPI_Igatherv", done, bufs, func(r *C.MPI_Request) C.int {
			return C.igatherv(src, C.int(send[rootProc]), out.p, (*C.int)(rcnt.p), (*C.int)(rdsp.p), unit, rootProc, c, r)
		})
	case comm.KindScatter:
		return e.issue("MPI_Iscatterv", done, bufs, func(r *C.MPI_Request) C.int {
			return C.iscatterv(src, (*C.int)(scnt.p), (*C.int)(sdsp.p), out.p, myRecv, unit, rootProc, c, r)
		})
	case comm.KindAllgather:
		return e.issue("MPI_Iallgatherv", done, bufs, func(r *C.MPI_Request) C.int {
			return C.iallgatherv(src, mySend, out.p, (*C.int)(rcnt.p), (*C.int)(rdsp.p), unit, c, r)
		})
	default:
		return e.issue("MPI_Ialltoallv", done, bufs, func(r *C.MPI_Request) C.int {
			return C.ialltoallv(src, (*C.int)(scnt.p), (*C.int)(sdsp.p), out.p, (*C.int)(rcnt.p), (*C.int)(rdsp.p), unit, c, r)
		})
	}
}

// sendBufFor returns the shared, zeroed, read-only send buffer with room
// for n bytes.
func (e *engine) sendBufFor(n int64) unsafe.Pointer {
	if n > e.sendBuf.n {
		e.old = append(e.old, e.sendBuf)
		e.sendBuf = newCbuf(max(n, 2*e.sendBuf.n))
	}
	return e.sendBuf.p
}

// issue starts a non-blocking MPI call and keeps its request.
func (e *engine) issue(name string, then func(error), bufs []cbuf, start func(*C.MPI_Request) C.int) error {
	r := (*C.MPI_Request)(C.malloc(C.size_t(unsafe.Sizeof(C.MPI_Request(nil)))))
	*r = C.req_null()
	if rc := start(r); rc != C.MPI_SUCCESS {
		C.free(unsafe.Pointer(r))
		for i := range bufs {
			bufs[i].free()
		}
		return mpiErr(name, rc)
	}
	e.reqs = append(e.reqs, &mpiReq{req: r, then: func(err error) {
		if err != nil {
			err = fmt.Errorf("%s: %w", name, err)
		}
		then(err)
	}, bufs: bufs, round: name == roundCall})
	return nil
}

// roundCall names the calls of the rounds.
const roundCall = "MPI_Iallreduce (round)"

// progress tests the outstanding MPI requests and looks for messages.
func (e *engine) progress() bool {
	did := false
	for i := 0; i < len(e.reqs); i++ {
		q := e.reqs[i]
		var flag C.int
		rc := C.test(q.req, &flag)
		if rc == C.MPI_SUCCESS && flag == 0 {
			continue
		}
		e.reqs = slices.Delete(e.reqs, i, i+1)
		i--
		C.free(unsafe.Pointer(q.req))
		var err error
		if rc != C.MPI_SUCCESS {
			err = fmt.Errorf("%s", errorString(rc))
		}
		q.then(err) // reads the buffers
		for k := range q.bufs {
			q.bufs[k].free()
		}
		if !q.round {
			e.activity++
		}
		did = true
	}
	if e.npost > 0 || e.ndone == len(e.own) {
		if e.probe() {
			did = true
		}
	}
	return did
}

// ---- messages ----

func (e *engine) send(o *op) {
	j := e.j
	dst := uint32(o.peer)
	tag := j.foldTag(o.tag)
	p := j.owner(dst)
	if p == j.Rank {
		e.deliver(e.w.own[dst], message{comm: o.comm, src: e.own[o.me], tag: tag})
		return
	}
	ci := j.comm(o.comm)
	dest := slices.Index(ci.procs, p)
	if dest < 0 || ci.me < 0 {
		ci = j.comms[trace.CommWorld]
		dest = slices.Index(ci.procs, p)
	}
	mtag := int32(tag)<<(2*j.idxBits) | int32(o.me)<<j.idxBits | int32(j.index(dst))
	n, unit := counted(o.bytes)
	buf := e.sendBufFor(o.bytes)
	e.sent++
	e.sends++
	e.w.stats.Messages++
	e.w.stats.Bytes += o.bytes
	err := e.issue("MPI_Issend", func(err error) {
		e.sends--
		if err != nil && e.w.err == nil {
			e.w.err = err
		}
	}, nil, func(r *C.MPI_Request) C.int { return C.issend(buf, n, unit, C.int(dest), C.int(mtag), ci.comm, r) })
	if err != nil {
		e.sends--
		if e.w.err == nil {
			e.w.err = err
		}
	}
}

func (e *engine) postRecv(r *recvOp) {
	box := e.mail[r.me]
	for i, m := range box {
		if matches(r, m) {
			e.mail[r.me] = slices.Delete(box, i, i+1)
			r.done = true
			reply(r.res, 0, nil)
			return
		}
	}
	e.posted[r.me] = append(e.posted[r.me], r)
	e.npost++
}

func matches(r *recvOp, m message) bool {
	return r.comm == m.comm && (r.src < 0 || uint32(r.src) == m.src) && (r.tag < 0 || r.tag == m.tag)
}

// deliver hands a message to local rank me: to its first matching posted
// receive, or to its mailbox.
func (e *engine) deliver(me int, m message) {
	e.activity++
	if e.state[me] == stDone && len(e.posted[me]) == 0 {
		e.w.stats.Unreceived++
		return
	}
	for i, r := range e.posted[me] {
		if matches(r, m) {
			e.posted[me] = slices.Delete(e.posted[me], i, i+1)
			e.npost--
			r.done = true
			if r.waiting {
				e.unblock(me)
			}
			reply(r.res, 0, nil)
			return
		}
	}
	e.mail[me] = append(e.mail[me], m)
}

// probe receives the messages that have arrived from other processes.
func (e *engine) probe() bool {
	j := e.j
	did := false
	mask := int32(1)<<j.idxBits - 1
	for _, ci := range j.comms {
		if ci.me < 0 || !ci.spansProcesses() {
			continue
		}
		for {
			var found, src, tag C.int
			var bytes C.longlong
			var msg C.MPI_Message
			if rc := C.improbe(ci.comm, &found, &msg, &src, &tag, &bytes); rc != C.MPI_SUCCESS {
				if e.w.err == nil {
					e.w.err = mpiErr("MPI_Improbe", rc)
				}
				break
			}
			if found == 0 {
				break
			}
			n := int64(bytes)
			_, unit := counted(n)
			need := n
			if unit != 0 {
				need = (n + unitBytes - 1) / unitBytes * unitBytes
			}
			if need > e.recvBuf.n {
				e.recvBuf.free()
				e.recvBuf = newCbuf(need)
			}
			if rc := C.mrecv(e.recvBuf.p, C.longlong(n), unit, &msg); rc != C.MPI_SUCCESS && e.w.err == nil {
				e.w.err = mpiErr("MPI_Mrecv", rc)
			}
			e.received++
			did = true
			t := int32(tag)
			srcIdx, dstIdx := int(t>>j.idxBits&mask), int(t&mask)
			srcProc := ci.procs[src]
			srcRank := j.Ranks[j.lo[srcProc]+srcIdx]
			if dstIdx >= len(e.own) {
				e.w.stats.Unreceived++
				continue
			}
			e.deliver(dstIdx, message{comm: ci.id, src: srcRank, tag: t >> (2 * j.idxBits)})
		}
	}
	return did
}

// ---- rounds: the end of the world, and deadlocks ----

const nSum = 6 // running, blocked, done, sent, received, activity

func (e *engine) maybeRound() {
	if e.inRound || e.finished {
		return
	}
	quiet := e.nrun == 0
	if time.Since(e.roundAt) < roundEvery && !(quiet && e.changed) {
		return
	}
	e.changed = false
	e.roundAt = time.Now()
	sum := unsafe.Slice((*int64)(e.sumBuf.p), 2*nSum)
	sum[0], sum[1], sum[2] = int64(e.nrun), int64(e.nblk), int64(e.ndone)
	sum[3], sum[4], sum[5] = e.sent, e.received, e.activity
	nmax := 3 * len(e.collOrder)
	mx := unsafe.Slice((*int64)(e.maxBuf.p), 2*nmax)
	for i, k := range e.collOrder {
		cs := e.colls[k]
		if cs.ci.me < 0 {
			mx[3*i], mx[3*i+1], mx[3*i+2] = math.MinInt64, math.MinInt64, 0
			continue
		}
		pending := int64(0)
		if cs.cur != nil && cs.cur.issued {
			pending = 1
		}
		mx[3*i], mx[3*i+1], mx[3*i+2] = cs.issued, -cs.issued, pending
	}
	e.inRound = true
	left := 2
	finish := func(err error) {
		if err != nil {
			if e.w.err == nil {
				e.w.err = err
			}
			e.finished = true // cannot agree any more
			return
		}
		left--
		if left == 0 {
			e.inRound = false
			e.endRound(slices.Clone(sum[nSum:]), slices.Clone(mx[nmax:]))
		}
	}
	sb := e.sumBuf.p
	if err := e.issue(roundCall, finish, nil, func(r *C.MPI_Request) C.int {
		return C.iallreduce64((*C.longlong)(sb), (*C.longlong)(unsafe.Add(sb, nSum*8)), nSum, 0, e.j.ctl, r)
	}); err != nil {
		finish(err)
		return
	}
	mb := e.maxBuf.p
	if err := e.issue(roundCall, finish, nil, func(r *C.MPI_Request) C.int {
		return C.iallreduce64((*C.longlong)(mb), (*C.longlong)(unsafe.Add(mb, nmax*8)), C.int(nmax), 1, e.j.ctl, r)
	}); err != nil {
		finish(err)
	}
}

// endRound decides, from every process's state, whether the world has
// ended or is deadlocked. Every process decides the same.
func (e *engine) endRound(sum, mx []int64) {
	running, blocked, done, sent, received := sum[0], sum[1], sum[2], sum[3], sum[4]
	// A collective can still complete when some process has it under way
	// and every process of its communicator has issued as many.
	canComplete := false
	for i := range e.collOrder {
		hi, lo, pending := mx[3*i], -mx[3*i+1], mx[3*i+2]
		if pending > 0 && hi == lo {
			canComplete = true
		}
	}
	if done == int64(len(e.j.Ranks)) && sent == received && !canComplete {
		e.finished = true
		return
	}
	cand := running == 0 && blocked > 0 && sent == received && !canComplete
	if cand && e.lastCand && slices.Equal(sum, e.lastSum) {
		e.deadlock()
		cand = false
	}
	e.lastCand, e.lastSum = cand, sum
}

// deadlock fails every call a rank of this process waits in.
func (e *engine) deadlock() {
	for me := range e.own {
		if e.state[me] != stBlocked {
			continue
		}
		err := fmt.Errorf("%w: rank %d waits in %s, which no running rank will complete", comm.ErrUnmatched, e.own[me], e.what[me])
		for _, r := range e.posted[me] {
			if r.waiting && !r.done {
				r.done = true
				reply(r.res, 0, err)
				e.posted[me] = slices.DeleteFunc(e.posted[me], func(x *recvOp) bool { return x == r })
				e.npost--
				break
			}
		}
	}
	for _, cs := range e.colls {
		if cs.cur == nil {
			continue
		}
		if cs.cur.issued {
			// Its MPI collective stays unmatched: the communicator's
			// later collectives synchronise within each process only.
			cs.ci.broken = true
		}
		in := cs.cur
		cs.cur = nil
		for _, o := range in.ops {
			err := fmt.Errorf("%w: rank %d waits in %s, which no running rank will complete", comm.ErrUnmatched, e.own[o.me], e.what[o.me])
			e.unblock(o.me)
			reply(o.res, 0, err)
		}
	}
	for me := range e.own {
		if e.state[me] == stBlocked {
			e.unblock(me)
		}
	}
}
