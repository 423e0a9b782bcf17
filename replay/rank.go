package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/iotrace/iotrace/internal/sat"
	"github.com/iotrace/iotrace/replay/comm"
	"github.com/iotrace/iotrace/trace"
)

// runner replays one rank.
type runner struct {
	rp       *Replay
	rank     uint32
	idx      int
	src      trace.Source
	ex       Executor
	cm       comm.Comm
	world    World
	rec      *recorder
	timing   Timing
	speed    float64
	strict   bool
	w        waiter
	ctx      context.Context
	stop     *atomic.Bool
	pool     *batchPool // the rank's event batches
	prefetch bool       // a reader goroutine reads ahead
	readN    int        // events read at a time (inline)

	handles    map[int32]uint32 // MPI file handle → communicator
	reqs       []comm.Request   // outstanding non-blocking calls, oldest first
	sharedNext int              // the rank's shared file pointer calls so far
	progress   atomic.Int64     // events this rank has done, for the ranks that wait on it
	deps       []Dep            // the plan's waits of this rank
	watched    bool             // another rank waits for this one's calls
	nextDep    int
	peers      []*runner                  // the runners, by the index of their rank in the plan (nil: not here)
	call       Call                       // the call handed to the executor (Paths set, no paths)
	pathMap    map[trace.PathID]*pathSlot // the paths of this rank so far
	lastID     trace.PathID               // the path of the previous lookup
	lastSlot   *pathSlot
	events     int64     // events of this rank handled so far
	lib        []LibCost // the MPI-IO calls whose library cost the rank keeps (Plan.libCost)
	nextLib    int

	// timing state
	origin      int64 // recorded start of the trace's first call (Plan.Start)
	started     bool
	prevOrigEnd int64
	prevEnd     int64

	// predOn: the replay predicts (--predict); pred is the rank's
	// timeline to rebuild (predict.go), its stretches so far, stretch the
	// one being replayed; issue is when the current call was handed to the
	// backend or the communication layer, syncFl and syncComm what
	// collective it is (predSync, predFileDomain; 0: none).
	pred     []predRec
	predOn   bool
	predAny  bool // a call is in the timeline
	stretch  predStretch
	issue    int64
	syncFl   uint8
	syncComm uint32
	// sysTimed: the executor times the system calls of the calls it
	// makes, in sys (SysTime).
	sysTimed bool
	sys      SysTime

	// runEx is ex where it makes runs of calls; curRun is the one handed
	// to it.
	runEx  RunExecutor
	curRun Run

	res rankResult
	// elapsed is when the rank ended, ns from the common start.
	elapsed int64
}

// pathSlot caches where a path id goes.
type pathSlot struct {
	rel  string
	skip Skip
	rec  trace.PathID // id in the replay's trace, +1 (0: not yet interned)
}

// needsPath marks the ops whose path the backend opens or changes.
var needsPath = func() (t [opLimit]bool) {
	for _, op := range trace.Ops() {
		switch op.Class() {
		case trace.ClassMeta:
			t[op] = true
		case trace.ClassPOSIX:
			t[op] = op.Info().FD == trace.FDOpen
		}
	}
	t[trace.OpMPIFileOpen], t[trace.OpMPIFileDelete] = true, true
	return t
}()

func (rn *runner) slot(id trace.PathID) *pathSlot {
	if rn.lastSlot != nil && rn.lastID == id {
		return rn.lastSlot
	}
	if rn.pathMap == nil {
		rn.pathMap = map[trace.PathID]*pathSlot{}
	}
	s := rn.pathMap[id]
	if s == nil {
		s = &pathSlot{}
		s.rel, s.skip = rn.rp.plan.mapPath(rn.src.Path(id))
		rn.pathMap[id] = s
	}
	rn.lastID, rn.lastSlot = id, s
	return s
}

// MapPath implements PathMapper for the executors.
func (rn *runner) MapPath(id trace.PathID) (string, Skip) {
	if id == 0 {
		return "", SkipUnknownFD
	}
	s := rn.slot(id)
	return s.rel, s.skip
}

// TracePath implements PathMapper.
func (rn *runner) TracePath(id trace.PathID) string { return rn.src.Path(id) }

// recordID returns the id the replay's trace uses for path id of event
// e, and whether it had to intern the path (a slow path).
func (rn *runner) recordID(e *trace.Event, id trace.PathID) (trace.PathID, bool) {
	if id == 0 {
		return 0, false
	}
	if e.Op.Class() == trace.ClassMarker {
		return rn.rec.sink.Intern(rn.src.Path(id)), true
	}
	s := rn.slot(id)
	if s.rec == 0 {
		name := rn.src.Path(id)
		if s.skip == NotSkipped {
			name = rn.rp.recordPath(s.rel)
		}
		s.rec = rn.rec.sink.Intern(name) + 1
		return s.rec - 1, true
	}
	return s.rec - 1, false
}

// safeRun is run, with a panic (a bug) turned into the replay's error
// instead of a crash of every rank.
func (rn *runner) safeRun() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("rank %d, event %d: internal error: %v (please report it with the command line)", rn.rank, rn.events, r)
		}
	}()
	return rn.run()
}

// run replays the rank's events until the end of its stream, a stop, or
// a failure under Strict.
func (rn *runner) run() (err error) {
	var rd *reader
	defer func() {
		rn.progress.Store(math.MaxInt64) // whoever waits for this rank waits no more
		if rd != nil {
			rd.stop()
		}
		if cerr := rn.ex.Close(); err == nil && cerr != nil {
			err = rankErr(rn.rank, cerr)
		}
		closeSource(rn.src)
		rn.cm.Done()
	}()
	if rn.timing != AFAP && rn.w.own {
		defer fineSlack()()
		rn.w.switches = involuntarySwitches()
	}
	if rn.prefetch {
		rd = startReader(rn.src, rn.pool)
		for {
			var f filled
			select {
			case f = <-rd.ready:
			case <-rn.ctx.Done():
				return nil
			}
			k, err := rn.batchRun(f.evs)
			rn.rp.done.Add(int64(len(f.evs)))
			rn.keep(f.evs, k)
			if err != nil {
				return err
			}
			if stop, err := rn.after(f.err); stop {
				return err
			}
		}
	}
	var buf []trace.Event
	fill := 0
	defer func() {
		if buf != nil {
			rn.keep(buf, fill)
		}
	}()
	for {
		if buf == nil {
			if buf = rn.pool.get(rn.ctx.Done()); buf == nil {
				return nil
			}
		}
		if rn.stop.Load() {
			return nil // stopped: no more reading (a trace block each, with many ranks)
		}
		n, rerr := rn.src.ReadEvents(buf[fill:min(fill+rn.readN, len(buf))])
		k, err := rn.batchRun(buf[fill : fill+n])
		rn.rp.done.Add(int64(n))
		fill += k
		switch {
		case rn.rec == nil:
			fill = 0
		case fill == len(buf):
			rn.keep(buf, fill)
			buf, fill = nil, 0
		}
		if err != nil {
			return err
		}
		if stop, err := rn.after(rerr); stop {
			return err
		}
	}
}

// keep hands the first k events of the batch b, replayed, to the
// recorder, or b back to the pool.
func (rn *runner) keep(b []trace.Event, k int) {
	if rn.rec != nil {
		rn.rec.put(b[:k])
	} else {
		rn.pool.put(b)
	}
}

// depTimeout bounds a wait for another rank's call: the trace's clocks
// may be wrong, and a replay must not hang on them.
const depTimeout = 10 * time.Second

// waitDeps waits until the ranks the next call depends on have made the
// calls it waits for (see Plan.deps). It returns false when the replay
// stops.
func (rn *runner) waitDeps() bool {
	deadline := time.Now().Add(depTimeout)
	for ; rn.nextDep < len(rn.deps) && rn.deps[rn.nextDep].Event == rn.events; rn.nextDep++ {
		d := rn.deps[rn.nextDep]
		if d.Rank >= len(rn.peers) || rn.peers[d.Rank] == nil {
			continue // a rank this process does not run: MPI's own calls order it
		}
		p := rn.peers[d.Rank]
		for spin := 0; p.progress.Load() < d.After; spin++ {
			if rn.stop.Load() || rn.ctx.Err() != nil {
				return false
			}
			if time.Now().After(deadline) {
				break
			}
			if spin < 100 {
				runtime.Gosched()
			} else {
				time.Sleep(50 * time.Microsecond)
			}
		}
	}
	return true
}

// after says whether the rank stops after a batch whose read returned
// rerr, and with what error.
func (rn *runner) after(rerr error) (bool, error) {
	switch {
	case rn.stop.Load(), errors.Is(rerr, io.EOF):
		return true, nil
	case rerr == nil:
		return false, nil
	case rn.ctx.Err() != nil:
		return true, nil // stopped while the source waited (a script's loop)
	}
	return true, fmt.Errorf("rank %d: reading the trace: %w", rn.rank, rerr)
}

// batchRun replays evs in place: the events to record are moved to the
// front and given their measured times and results; it returns how many.
//
// The clock is read once per call, when the call returns: that reading
// is also the start of the next call, unless something that takes time
// comes between them (a wait for the call's intended start, which reads
// the clock itself, or a slow path: a skip, a failure, a new path). So a
// recorded duration holds the call and the few nanoseconds of the
// engine's own work before it — less than a second clock read would add
// to every call.
//
// A replay as fast as possible that does not predict takes a shorter way
// for the calls most traces are made of, the POSIX calls on a descriptor
// (direct): no wait, no Call to fill but its event, nothing kept for
// think timing or the prediction. It does what the long way does for
// them, in fewer instructions: each is paid for in every call's measured
// time (ioreplay's overhead benchmark, docs/BENCHMARKS.md).
func (rn *runner) batchRun(evs []trace.Event) (int, error) {
	k := 0
	var moved int64 // bytes read and written, for the progress line
	defer func() { rn.rp.moved.Add(moved) }()
	direct := rn.timing == AFAP && !rn.predOn && !rn.sysTimed
	c := &rn.call
	c.Paths = rn
	now := rn.w.now()
	// runs: the direct calls go to the executor a run at a time
	// (RunExecutor), but the one a run stopped before (slowAt), which
	// takes the long way.
	runs := direct && rn.runEx != nil && !rn.watched
	slowAt := -1
	for i := 0; i < len(evs); i++ {
		e := &evs[i]
		if runs && i != slowAt {
			if n := rn.runLen(len(evs) - i); n > 0 {
				made, err := rn.doRun(evs, i, n, &k, &now, &moved)
				if err != nil {
					return k, err
				}
				if made < n && rn.curRun.Fail == 0 {
					slowAt = i + made
				}
				if made > 0 {
					i += made - 1
					continue
				}
			}
		}
		if rn.stop.Load() {
			rn.res.events += int64(i)
			return k, nil
		}
		if rn.watched {
			// The calls before this one are done: said before this one
			// waits, for a rank may wait for them while this one waits
			// for it.
			rn.progress.Store(rn.events)
		}
		if rn.nextDep < len(rn.deps) && rn.deps[rn.nextDep].Event == rn.events {
			if !rn.waitDeps() {
				rn.res.events += int64(i)
				return k, nil
			}
			now = rn.w.now()
		}
		rn.events++
		if direct && e.Op < opLimit && directOps[e.Op] && e.Flags&trace.InMPIIO == 0 {
			oRet := e.Ret
			c.Ev = e
			ret, skip := rn.ex.Do(c)
			end := rn.w.now()
			start := now
			now = end
			if skip != NotSkipped {
				if err := rn.skipped(e, skip); err != nil {
					rn.res.events += int64(i + 1)
					return k, err
				}
				now = rn.w.now()
				continue
			}
			rn.res.io += end - start
			if ret > 0 {
				if dataOps[e.Op] { // not an lseek's offset, a dup's descriptor
					moved += ret
				}
			} else if ret < 0 {
				if err := rn.failed(e, ret, oRet); err != nil {
					rn.res.events += int64(i + 1)
					return k, err
				}
				now = rn.w.now()
			}
			if rn.rec != nil {
				if k != i {
					evs[k] = *e
				}
				r := &evs[k]
				r.Start, r.Dur, r.Ret = start, end-start, ret
				if (r.Path != 0 || r.Path2 != 0) && rn.recordPaths(r) {
					now = rn.w.now()
				}
				k++
			}
			continue
		}
		oStart, oEnd, oRet := e.Start, e.Start+e.Dur, e.Ret
		start := now
		// A POSIX call the MPI library made inside an MPI-IO call is not
		// issued (the MPI-IO call is): it has no time of its own to keep,
		// and the next call's gap counts from the end of the MPI-IO call.
		cls := e.Op.Class()
		inner := e.Flags&trace.InMPIIO != 0 && (cls == trace.ClassPOSIX || cls == trace.ClassMeta)
		var gap int64 // the captured think time before the call (--predict)
		if rn.predOn && !inner && rn.predAny {
			gap = rn.scale(max(sat.Sub(oStart, rn.prevOrigEnd), 0))
		}
		if rn.timing != AFAP && !inner {
			intended := rn.intended(oStart)
			var ok bool
			if rn.timing == Think {
				// Closed loop: a gap too short to wait is owed to the
				// next (waiter.gap); the lag counts from the deadline
				// waited for.
				start, intended, ok = rn.w.gap(intended, now)
			} else {
				start, ok = rn.w.until(intended, now)
			}
			if !ok {
				rn.res.events += int64(i)
				return k, nil
			}
			rn.res.lag.add(e.Op, max(start-intended, 0))
		}
		ret, skip, err := rn.exec(e)
		end := rn.w.now()
		var kept int64 // the library cost kept
		if len(rn.lib) > rn.nextLib && skip == NotSkipped && err == nil {
			// The MPI library's own cost in the capture, beyond the
			// calls the backend made for this one: kept in the call.
			kEnd, ok := rn.keepLib(end)
			if !ok {
				rn.res.events += int64(i + 1)
				return k, nil
			}
			kept, end = kEnd-end, kEnd
		}
		if ret > 0 && int(e.Op) < len(dataOps) && dataOps[e.Op] {
			moved += ret
		}
		now = end
		if !inner {
			rn.prevEnd, rn.prevOrigEnd = end, oEnd
			if rn.predOn && err == nil {
				rn.predict(e, cls, gap, end, kept, skip)
			}
		}
		if err != nil {
			rn.res.events += int64(i + 1)
			return k, err
		}
		if skip != NotSkipped {
			if err := rn.skipped(e, skip); err != nil {
				rn.res.events += int64(i + 1)
				return k, err
			}
			now = rn.w.now()
			continue
		}
		if cls == trace.ClassPOSIX || cls == trace.ClassMeta || cls == trace.ClassMPIIO {
			rn.res.io += end - start
		}
		if ret < 0 && cls != trace.ClassComm {
			if err := rn.failed(e, ret, oRet); err != nil {
				rn.res.events += int64(i + 1)
				return k, err
			}
			now = rn.w.now()
		}
		if rn.rec == nil {
			continue
		}
		if k != i {
			evs[k] = *e
		}
		r := &evs[k]
		r.Start, r.Dur, r.Ret = start, end-start, ret
		if r.Path != 0 || r.Path2 != 0 {
			if rn.recordPaths(r) {
				now = rn.w.now()
			}
		}
		k++
	}
	rn.res.events += int64(len(evs))
	return k, nil
}

// runLen returns how many of the next n calls may go to the executor as
// a run: those before the next call that waits for another rank's
// (Plan.deps).
func (rn *runner) runLen(n int) int {
	if rn.nextDep < len(rn.deps) {
		return int(min(int64(n), max(rn.deps[rn.nextDep].Event-rn.events, 0)))
	}
	return n
}

// doRun hands the executor the run of the n calls at evs[i:] (see
// batchRun: k, now and moved are its) and does for the calls it made
// what batchRun does for a direct call, in the same order: count them,
// record them, and end the replay at a failure under Strict. It returns
// how many calls the executor made.
//
// What a direct call skips or where it fails takes a slow path, which
// reads the clock again after it so that its time is no call's: a run
// ends there (RunExecutor). Interning a path new to the replay's trace is
// one too: here it comes after the run's calls, whose times it cannot
// touch, and the clock is read again after it as well.
func (rn *runner) doRun(evs []trace.Event, i, n int, k *int, now, moved *int64) (int, error) {
	r := &rn.curRun
	r.Evs, r.Clock, r.Stop, r.Start = evs[i:i+n], &rn.w.clk, rn.stop, *now
	rn.runEx.DoRun(r)
	r.Evs = nil
	made, ok := r.N, r.N
	if r.Fail != 0 {
		ok--
	}
	*now = r.End
	*moved += r.Moved
	rn.res.io += r.End - r.Start // the calls follow each other
	rn.events += int64(ok)
	slow := false
	if rn.rec != nil {
		if *k != i {
			copy(evs[*k:], evs[i:i+ok])
		}
		slow = rn.recordRun(evs[*k : *k+ok])
		*k += ok
	}
	if r.Fail != 0 {
		e := &evs[i+ok]
		rn.events++
		oRet := e.Ret
		e.Ret = r.Fail
		if err := rn.failed(e, r.Fail, oRet); err != nil {
			rn.res.events += int64(i + made)
			return made, err
		}
		slow = true
		if rn.rec != nil {
			evs[*k] = *e
			rn.recordPaths(&evs[*k])
			*k++
		}
	}
	if slow {
		*now = rn.w.now()
	}
	return made, nil
}

// recordRun gives the events of a run the path ids of the replay's
// trace (recordPaths), and reports whether that took a slow path.
func (rn *runner) recordRun(evs []trace.Event) (slow bool) {
	for i := range evs {
		r := &evs[i]
		if r.Path == 0 && r.Path2 == 0 {
			continue
		}
		if r.Path2 == 0 && r.Path == rn.lastID && rn.lastSlot != nil && rn.lastSlot.rec != 0 {
			r.Path = rn.lastSlot.rec - 1
			continue
		}
		if rn.recordPaths(r) {
			slow = true
		}
	}
	return slow
}

// opLimit bounds the ops of the engine's tables.
const opLimit = 1024

// directOps marks the ops batchRun may take the short way with: POSIX
// calls that name no path to map (those on a descriptor, and the
// process calls).
var directOps = func() (t [opLimit]bool) {
	for _, op := range trace.Ops() {
		if op < opLimit && op.Class() == trace.ClassPOSIX && !needsPath[op] {
			t[op] = true
		}
	}
	return t
}()

// skipped counts a call the executor did not make, and returns the error
// that ends the replay under Strict.
func (rn *runner) skipped(e *trace.Event, skip Skip) error {
	rn.res.skip(e.Op, skip)
	if rn.strict && skip != SkipInMPIIO {
		return fmt.Errorf("rank %d, event %d (%s): skipped: %s", rn.rank, rn.events, rn.describe(e), skip)
	}
	return nil
}

// failed counts a call that failed with ret (−errno), which the trace's
// call returned oRet, and returns the error that ends the replay under
// Strict when the trace's call did not fail so.
func (rn *runner) failed(e *trace.Event, ret, oRet int64) error {
	expected := ret == oRet
	var detail string
	if d, ok := rn.ex.(ErrorDetailer); ok {
		detail = d.ErrorDetail()
	}
	rn.res.fail(e.Op, ret, expected, detail)
	if rn.strict && !expected {
		why := errnoText(ret)
		if detail != "" {
			why += " (" + detail + ")"
		}
		return fmt.Errorf("rank %d, event %d (%s): %s", rn.rank, rn.events, rn.describe(e), why)
	}
	return nil
}

// predict adds the call just made to the rank's rebuilt timeline
// (predict.go): gap is the captured think time before it, end when it
// returned, kept the library cost it kept (in end), skip why it was not
// made.
//
// A call's own time in the timeline is what the file system took for it:
// where the executor times its system calls (SysTimer), their time
// (SysTime.total: the replay's looks at a name counted with the call as
// the slower of the two) plus the library cost kept — not the engine's
// work around them (following descriptors, mapping paths, recording),
// which the application did not do; a call the executor made no system
// call for keeps its captured time, as a skipped one does. Otherwise it is the
// time from the hand-off to the return. A collective of the
// communication layer keeps its captured time: its cost is the MPI
// library's, which a standalone replay does not run (the rebuild takes
// the least of its members', the last arrival's own cost). A collective
// MPI-IO call timed by its system calls is marked predOwn: its time is
// the member's own share of the work, not a cost the members share.
func (rn *runner) predict(e *trace.Event, cls trace.Class, gap, end, kept int64, skip Skip) {
	rn.predAny = true
	dur, fl := end-rn.issue, rn.syncFl
	file := cls == trace.ClassPOSIX || cls == trace.ClassMeta || cls == trace.ClassMPIIO
	switch {
	case cls == trace.ClassMarker:
		dur = 0
	case e.Op == trace.OpPagein && skip == NotSkipped:
		// The capture's wait for mapped pages: the replay read them at
		// the mapping's mmap and counts their time there.
		dur = 0
	case skip != NotSkipped:
		// Not made here, but the application spent the time on it.
		dur, fl = e.Dur, 0
	case cls == trace.ClassComm && fl&predSync != 0:
		dur = max(e.Dur, 0)
	case file && rn.sysTimed:
		if rn.sys.calls == 0 {
			dur = max(e.Dur, 0)
		} else if ns := rn.w.clk.ticksNS(rn.sys.total()); ns >= 0 {
			dur = sat.Add(ns, kept)
			if fl&predSync != 0 {
				fl |= predOwn // a collective MPI-IO call: the member's own work
			}
		}
	}
	if fl&predSync == 0 {
		rn.stretch.add(gap, dur, file)
		return
	}
	if file {
		fl |= predFile
	}
	rn.pred = append(rn.pred, rn.stretch.end(gap, dur, rn.syncComm, fl))
}

// keepLib waits, after the call the rank just made (its events-th),
// what the MPI library cost in the capture beyond the POSIX calls inside
// that call, if it is an MPI-IO call with such a cost; end is when the
// call returned. It returns the new end of the call, or false if the
// replay was stopped meanwhile.
func (rn *runner) keepLib(end int64) (int64, bool) {
	n := rn.events - 1
	for rn.nextLib < len(rn.lib) && rn.lib[rn.nextLib].Event < n {
		rn.nextLib++
	}
	if rn.nextLib == len(rn.lib) || rn.lib[rn.nextLib].Event != n {
		return end, true
	}
	cost := rn.lib[rn.nextLib].Cost
	rn.nextLib++
	rn.res.libCalls++
	rn.res.libTime = sat.Add(rn.res.libTime, cost)
	return rn.w.until(sat.Add(end, cost), end)
}

// recordPaths gives r the path ids of the replay's trace, and reports
// whether that took a slow path (a path new to the trace).
func (rn *runner) recordPaths(r *trace.Event) (slow bool) {
	var s1, s2 bool
	if r.Path != 0 {
		r.Path, s1 = rn.recordID(r, r.Path)
	}
	if r.Path2 != 0 {
		r.Path2, s2 = rn.recordID(r, r.Path2)
	}
	return s1 || s2
}

// intended returns when the call recorded at oStart should start.
func (rn *runner) intended(oStart int64) int64 {
	if rn.timing == Original {
		// From the trace's first call, whichever rank made it: a rank
		// keeps the delay before its first call.
		return rn.scale(oStart - rn.origin)
	}
	if !rn.started {
		rn.started = true
		return 0 // the common start of the ranks
	}
	switch rn.timing {
	case Think:
		return rn.prevEnd + rn.scale(max(oStart-rn.prevOrigEnd, 0))
	}
	return 0
}

func (rn *runner) scale(d int64) int64 {
	if rn.speed == 1 {
		return d
	}
	return int64(float64(d) / rn.speed)
}

// exec carries out one event: communication here, I/O in the backend.
func (rn *runner) exec(e *trace.Event) (int64, Skip, error) {
	if e.Flags&trace.InMPIIO != 0 {
		if c := e.Op.Class(); c == trace.ClassPOSIX || c == trace.ClassMeta {
			return 0, SkipInMPIIO, nil
		}
	}
	rn.syncFl = 0
	switch e.Op.Class() {
	case trace.ClassMarker:
		return 0, NotSkipped, nil
	case trace.ClassComm:
		if rn.predOn {
			rn.issue = rn.w.now()
		}
		return rn.commCall(e)
	case trace.ClassMPIIO:
		if rn.predOn {
			rn.issue = rn.w.now()
		}
		if e.Op.Collective() {
			c, ok := rn.handles[e.FD]
			if !ok || e.Op == trace.OpMPIFileOpen {
				c = e.Comm
			}
			rn.syncFl, rn.syncComm = predSync|predFileDomain, c
			if err := rn.cm.Collective(rn.ctx, comm.KindFile, comm.DomainFile, c, -1, 0); err != nil {
				if skip, err := rn.commErr(e, err); err != nil || skip != NotSkipped {
					return 0, skip, err
				}
			}
		}
		if e.Op.Info().Addr == trace.AddrShared && e.Offset == 0 {
			// Where the shared file pointer is: the plan worked it out.
			if off, ok := rn.rp.plan.sharedOffset(rn.rank, &rn.sharedNext); ok {
				e.Offset = off
			}
		}
		switch e.Op {
		case trace.OpMPIFileOpen:
			rn.handles[e.FD] = e.Comm
		case trace.OpMPIFileClose:
			delete(rn.handles, e.FD)
		}
	}
	c := &rn.call
	c.Ev = e
	paths := e.Op < opLimit && needsPath[e.Op]
	if paths {
		if e.Path != 0 {
			s := rn.slot(e.Path)
			c.Path, c.PathSkip = s.rel, s.skip
		}
		if e.Path2 != 0 {
			s := rn.slot(e.Path2)
			c.Path2 = s.rel
			if s.skip != NotSkipped {
				c.PathSkip = s.skip
			}
		}
	}
	if rn.predOn && e.Op.Class() != trace.ClassMPIIO {
		rn.issue = rn.w.now()
	}
	if rn.sysTimed {
		rn.sys, c.Sys = SysTime{}, &rn.sys
	}
	ret, skip := rn.ex.Do(c)
	if paths {
		// The next call's are empty unless it names paths (Call).
		c.Path, c.Path2, c.PathSkip = "", "", NotSkipped
	}
	return ret, skip, nil
}

// commErr turns an error of the communication layer into the outcome of
// the call: an unmatched call is counted and the replay goes on (but
// with Strict); a stop is no error.
func (rn *runner) commErr(e *trace.Event, err error) (Skip, error) {
	if errors.Is(err, comm.ErrUnmatched) {
		rn.res.unmatch(err)
		if rn.strict {
			return NotSkipped, fmt.Errorf("rank %d, event %d (%s): %w", rn.rank, rn.events, rn.describe(e), err)
		}
		return NotSkipped, nil
	}
	if rn.ctx.Err() != nil {
		return NotSkipped, nil
	}
	return NotSkipped, fmt.Errorf("rank %d, event %d (%s): %w", rn.rank, rn.events, rn.describe(e), err)
}

var collectiveKinds = map[trace.Op]comm.Kind{
	trace.OpMPIBarrier: comm.KindBarrier, trace.OpMPIBcast: comm.KindBcast,
	trace.OpMPIReduce: comm.KindReduce, trace.OpMPIAllreduce: comm.KindAllreduce,
	trace.OpMPIGather: comm.KindGather, trace.OpMPIGatherv: comm.KindGather,
	trace.OpMPIScatter: comm.KindScatter, trace.OpMPIScatterv: comm.KindScatter,
	trace.OpMPIAllgather: comm.KindAllgather, trace.OpMPIAllgatherv: comm.KindAllgather,
	trace.OpMPIAlltoall: comm.KindAlltoall, trace.OpMPIAlltoallv: comm.KindAlltoall,
	trace.OpMPICommSplit: comm.KindCommCreate, trace.OpMPICommDup: comm.KindCommCreate,
}

func (rn *runner) peerOK(peer int32) bool {
	return peer < 0 || rn.world.Has(uint32(peer))
}

// commCall carries out a communication call.
func (rn *runner) commCall(e *trace.Event) (int64, Skip, error) {
	ctx := rn.ctx
	var err error
	switch e.Op {
	case trace.OpMPISend, trace.OpMPIIsend:
		if !rn.peerOK(e.Peer) || e.Peer < 0 {
			return 0, SkipPeer, nil
		}
		var req comm.Request
		req, err = rn.cm.Isend(ctx, e.Comm, e.Peer, e.Tag, e.Bytes)
		if err == nil && e.Op == trace.OpMPIIsend {
			rn.reqs = append(rn.reqs, req)
		}
	case trace.OpMPIRecv, trace.OpMPIIrecv:
		if !rn.peerOK(e.Peer) {
			return 0, SkipPeer, nil
		}
		var req comm.Request
		req, err = rn.cm.Irecv(ctx, e.Comm, e.Peer, e.Tag, e.Bytes)
		if err == nil {
			if e.Op == trace.OpMPIIrecv {
				rn.reqs = append(rn.reqs, req)
			} else {
				err = req.Wait(ctx)
			}
		}
	case trace.OpMPISendrecv:
		// The receive half: from the recorded source with the recorded
		// tag; where a trace lacks it (written before it was recorded),
		// from any source with the send's tag.
		src, rtag, known := e.RecvFrom()
		if !known {
			if !rn.peerOK(e.Peer) || e.Peer < 0 {
				return 0, SkipPeer, nil
			}
			src, rtag = comm.AnySource, e.Tag
		}
		// A half with MPI_PROC_NULL, or with a rank the replay leaves
		// out, moves nothing; the other half still runs, as its partner
		// waits for it.
		send := e.Peer >= 0 && rn.peerOK(e.Peer)
		recv := src != trace.ProcNull && rn.peerOK(src)
		if !send && !recv {
			return 0, SkipPeer, nil
		}
		if send {
			err = rn.cm.Send(ctx, e.Comm, e.Peer, e.Tag, e.Bytes)
		}
		if err == nil && recv {
			err = rn.cm.Recv(ctx, e.Comm, src, rtag, e.Bytes)
		}
	case trace.OpMPIWait, trace.OpMPIWaitall:
		n := 1
		if e.Op == trace.OpMPIWaitall {
			n = len(rn.reqs)
			if e.Count > 0 {
				n = min(int(e.Count), n)
			}
		}
		n = min(n, len(rn.reqs))
		for _, req := range rn.reqs[:n] {
			if werr := req.Wait(ctx); werr != nil && err == nil {
				err = werr
			}
		}
		rn.reqs = rn.reqs[:copy(rn.reqs, rn.reqs[n:])]
	default:
		kind, ok := collectiveKinds[e.Op]
		if !ok {
			return 0, SkipUnsupported, nil
		}
		root := int32(-1)
		switch kind {
		case comm.KindBcast, comm.KindReduce, comm.KindGather, comm.KindScatter:
			root = e.Peer
		}
		rn.syncFl, rn.syncComm = predSync, e.Comm
		err = rn.cm.Collective(ctx, kind, comm.DomainComm, e.Comm, root, e.Bytes)
	}
	if err != nil {
		skip, err := rn.commErr(e, err)
		return 0, skip, err
	}
	return 0, NotSkipped, nil
}

// describe names an event for an error message.
func (rn *runner) describe(e *trace.Event) string {
	s := e.Op.String()
	switch {
	case e.Op.Class() == trace.ClassComm:
		if src, rtag, ok := e.RecvFrom(); ok {
			return fmt.Sprintf("%s comm %d peer %d tag %d source %d recv tag %d", s, e.Comm, e.Peer, e.Tag, src, rtag)
		}
		return fmt.Sprintf("%s comm %d peer %d tag %d", s, e.Comm, e.Peer, e.Tag)
	case isData(e.Op):
		return fmt.Sprintf("%s fd %d offset %d size %d", s, e.FD, e.Offset, e.Size)
	case e.Path != 0:
		return fmt.Sprintf("%s %q", s, rn.src.Path(e.Path))
	}
	return fmt.Sprintf("%s fd %d", s, e.FD)
}

// errnoText names a negative result.
func errnoText(ret int64) string {
	if n := trace.Errno(ret); n != "" {
		return n
	}
	return fmt.Sprint(ret)
}
