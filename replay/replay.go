package replay

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iotrace/iotrace/internal/sat"
	"github.com/iotrace/iotrace/replay/comm"
	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/target"
)

// Options configure a replay.
type Options struct {
	Timing Timing
	// Speed divides recorded gaps (original and think timing); 0 is 1.
	Speed float64
	// Map rewrites path prefixes (see Mapper).
	Map        []target.MapRule
	Transforms Transforms
	// Strict stops the replay at the first call that fails where the
	// original did not, at the first unmatched communication, and at the
	// first call a safety rule skips.
	Strict bool
	// World makes the communication layer of ranks; nil is comm.NewLocal.
	World func(ranks []uint32, groups map[uint32][]uint32) World
	// Batch is the number of events a rank reads at a time; 0 chooses
	// from the number of ranks.
	Batch int
	// Share picks, from the ranks of the plan, those this process runs:
	// an MPI process's share of a replay spread over several
	// (replay/mpi). nil runs every rank. The world is still made with
	// every rank of the plan.
	Share func(ranks []uint32) []uint32
	// Predict says the replay predicts the application's I/O time
	// (ioreplay --predict: think timing, a cold cache, the MPI-IO
	// library's cost kept); the replay's trace records it.
	Predict bool
	// Ready is called when every rank of this process is ready to run,
	// just before their common start (an MPI replay waits there for the
	// other processes).
	Ready func()
}

// World is the communication layer of a replay's ranks.
type World interface {
	Endpoint(rank uint32) comm.Comm
	// Has reports whether rank takes part in the replay.
	Has(rank uint32) bool
}

// Replay is a trace ready to replay.
type Replay struct {
	opts  Options
	t     trace.Trace
	plan  *Plan
	done  atomic.Int64
	moved atomic.Int64 // bytes the data calls replayed so far moved
	out   Output
	// script is the script a replay runs live, or nil.
	script *scriptTrace
}

// New applies the transforms to t and reads it once to plan the replay.
// Nothing is touched on disk.
func New(t trace.Trace, opts Options) (*Replay, error) {
	if opts.Speed == 0 {
		opts.Speed = 1
	}
	if opts.Speed < 0 {
		return nil, fmt.Errorf("--speed %v: want a positive factor", opts.Speed)
	}
	x, err := opts.Transforms.Apply(t)
	if err != nil {
		return nil, err
	}
	st, _ := t.(*scriptTrace)
	var groups map[uint32][]uint32
	if st != nil {
		groups = st.groups()
	}
	p, err := makePlan(x, opts.Map, groups, st != nil)
	if err != nil {
		return nil, err
	}
	return &Replay{opts: opts, t: x, plan: p, script: st}, nil
}

// Timing returns the timing the replay runs with.
func (r *Replay) Timing() Timing { return r.opts.Timing }

// Options returns the options of the replay.
func (r *Replay) Options() Options { return r.opts }

// Plan returns what New found.
func (r *Replay) Plan() *Plan { return r.plan }

// Trace returns the trace the replay runs: the input seen through the
// transforms.
func (r *Replay) Trace() trace.Trace { return r.t }

// Progress returns how many events the ranks have replayed so far, of
// how many.
func (r *Replay) Progress() (done, total int64) { return r.done.Load(), r.plan.Events }

// Moved returns the bytes the data calls replayed so far have read and
// written.
func (r *Replay) Moved() int64 { return r.moved.Load() }

// dataOps marks the ops that read or write file data (Info().Dir), for
// the count of bytes moved.
var dataOps = func() (d [1024]bool) {
	for _, op := range trace.Ops() {
		if int(op) < len(d) {
			dir := op.Info().Dir
			d[op] = dir == trace.DirRead || dir == trace.DirWrite
		}
	}
	return d
}()

// Output says where a replay records what it does.
type Output struct {
	// Target is the directory the backend works in; the replay's trace
	// names files by their path in it.
	Target string
	// Record returns the sink of a rank's replay events (measured times,
	// results); nil records nothing. Each rank's sink is written from one
	// goroutine.
	Record func(rank uint32) trace.Sink
	// Replayed, if set, receives how each rank's replay went, once every
	// rank has ended (trace/format's Writer.SetReplay records it in the
	// replay's trace).
	Replayed func(rank uint32, rr *trace.ReplayRank) error
	// Observe, if set, is given each rank's replayed events, each rank's
	// in order, once its sink has them, from one goroutine of the replay
	// (report.Live.Add: the report computed while the replay runs).
	Observe func(rank uint32, evs []trace.Event)
	// Hold holds the replayed events back from Record's sinks and from
	// Observe until the ranks have ended (up to HoldLimit; the rest as
	// they come): a predicting replay, whose calls would otherwise share
	// the processors with encoding its trace and computing its report.
	Hold bool
}

// Run replays every rank with backend b, recording to out, and returns
// what happened. The backend should have prepared the plan. Run returns
// early, with the result so far, when ctx is cancelled
// (Result.Interrupted) or, with Strict, at the first failure (the error
// names the event).
func (r *Replay) Run(ctx context.Context, b Backend, out Output) (*Result, error) {
	r.out = out
	ranks, planIdx := r.share()
	if len(ranks) == 0 {
		return &Result{Timing: r.opts.Timing}, nil
	}
	mk := r.opts.World
	if mk == nil {
		mk = func(ranks []uint32, groups map[uint32][]uint32) World { return comm.NewLocal(ranks, groups) }
	}
	world := mk(r.plan.Ranks, r.plan.Groups)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stop atomic.Bool
	go func() {
		<-ctx.Done()
		stop.Store(true)
	}()

	procs := runtime.GOMAXPROCS(0)
	batch := r.opts.Batch
	if batch <= 0 {
		batch = min(max(65536/len(ranks), 32), trace.BatchSize)
	}
	precise := len(ranks) <= 8*procs
	// With fewer ranks than processors, each rank has a processor of its
	// own: its waits spin instead of yielding, on a thread whose timer
	// slack is 1 ns, and its data calls are raw system calls (posix).
	own := len(ranks) < procs
	// With processors to spare, a reader goroutine per rank decodes the
	// input ahead of the calls (the runner then calls the source's Path
	// while the reader is in ReadEvents: the sources of this module look
	// paths up in a trace.Paths, which allows that). A script is read event by event instead,
	// so that its time-driven loops decide when the calls before them
	// have run.
	prefetch := r.script == nil && len(ranks) < procs
	var margin, skip int64
	if r.opts.Timing != AFAP && precise {
		margin = calibrate(own)
	}
	if r.opts.Timing == Think {
		skip = skipBelow(precise)
	}
	// A backend without an MPI library keeps what the capture's library
	// cost at each MPI-IO call, where calls have times to keep.
	keepLib := r.opts.Timing != AFAP
	if n, ok := b.(NativeMPIIO); ok && n.NativeMPIIO() {
		keepLib = false
	}
	// --predict rebuilds the application's timeline after the replay
	// (predict.go), where this process replays every rank of the plan.
	predict := r.opts.Predict && r.opts.Timing == Think && len(ranks) == len(r.plan.Ranks)
	runners := make([]*runner, len(ranks))
	var obs *observer
	closeAll := func() {
		for _, rn := range runners {
			if rn != nil {
				rn.ex.Close()
				if rn.src != nil {
					closeSource(rn.src)
				}
				if rn.rec != nil {
					rn.rec.close()
				}
			}
		}
		if obs != nil {
			obs.close()
		}
	}
	if r.script != nil {
		// A script runs live: its time-driven loops ask the runner.
		r.script.deciders = func(rank uint32) script.Decider {
			for _, rn := range runners {
				if rn != nil && rn.rank == rank {
					return &loopDecider{rn: rn}
				}
			}
			return nil
		}
		defer func() { r.script.deciders = nil }()
	}
	// More ranks than the process has threads for: their calls take
	// turns (see bounded).
	var slots chan struct{}
	if n, ok := b.(NativeMPIIO); (!ok || !n.NativeMPIIO()) && len(ranks) > 4 {
		if t := threadBudget(); len(ranks) > t {
			slots = make(chan struct{}, t)
		}
	}
	holdAll := 0
	if out.Hold {
		holdAll = HoldLimit()
	}
	for i, rk := range ranks {
		ex, err := b.Rank(rk, len(ranks))
		if err != nil {
			closeAll()
			return nil, rankErr(rk, err)
		}
		st, timed := ex.(SysTimer)
		timed = timed && st.TimesSys()
		if slots != nil {
			ex = bounded{ex, slots}
		}
		rn := &runner{
			rp: r, rank: rk, idx: i, ex: ex, cm: world.Endpoint(rk), world: world,
			timing: r.opts.Timing, speed: r.opts.Speed, strict: r.opts.Strict, origin: r.plan.Start,
			w:       waiter{margin: margin, skip: skip, precise: precise, own: own, stop: &stop, ctx: ctx},
			handles: map[int32]uint32{},
			ctx:     ctx, stop: &stop, readN: batch,
			pool:     newBatchPool(batch, len(ranks)),
			prefetch: prefetch,
			predOn:   predict,
			sysTimed: predict && timed,
			stretch:  newStretch(),
		}
		rn.runEx, _ = ex.(RunExecutor) // not through bounded: a slot a call
		if r.script != nil {
			// Read one event at a time, so that a loop decides when the
			// calls before it have run.
			rn.readN = 1
		}
		runners[i] = rn
		if rn.src, err = r.t.Rank(rk); err != nil {
			closeAll()
			return nil, rankErr(rk, err)
		}
		rn.res.rank = rk
		rn.res.planned = r.plan.PerRank[planIdx[i]].Events
		if pi := planIdx[i]; pi < len(r.plan.IO) {
			rn.res.capturedIO = r.plan.IO[pi]
			if keepLib {
				rn.lib = r.plan.libCost[pi]
			}
		}
		if out.Record != nil {
			if out.Observe != nil && obs == nil {
				obs = newObserver(out.Observe, len(ranks)*(rn.pool.max+1))
			}
			hold := 0
			if out.Hold {
				// The rank's share of the budget, at most its events
				// (what it holds is allocated once, at that length).
				hold = int(min(int64(holdAll/len(ranks)), rn.res.planned))
			}
			rn.rec = newRecorder(out.Record(rk), rk, rn.pool, obs, len(ranks) >= inlineRecordRanks, hold, ctx.Done())
		}
	}

	// The ranks that wait for another's calls (Plan.deps) see its runner,
	// where it runs in this process.
	peers := make([]*runner, len(r.plan.Ranks))
	for i, rn := range runners {
		peers[planIdx[i]] = rn
	}
	for i, rn := range runners {
		if pi := planIdx[i]; pi < len(r.plan.deps) {
			rn.deps, rn.peers = r.plan.deps[pi], peers
			for _, d := range rn.deps {
				if d.Rank < len(peers) && peers[d.Rank] != nil {
					peers[d.Rank].watched = true
				}
			}
		}
	}
	if r.opts.Ready != nil {
		r.opts.Ready()
	}
	start := make(chan struct{})
	var base time.Time
	var wg sync.WaitGroup
	var fatalOnce sync.Once
	var fatal error
	for _, rn := range runners {
		wg.Add(1)
		go func(rn *runner) {
			defer wg.Done()
			<-start
			defer func() { rn.elapsed = time.Since(base).Nanoseconds() }()
			if err := rn.safeRun(); err != nil {
				fatalOnce.Do(func() { fatal = err })
				cancel()
			}
		}(rn)
	}
	base = time.Now()
	for _, rn := range runners {
		rn.w.clk = newClock(base)
	}
	close(start)
	wg.Wait()
	elapsed := time.Since(base)
	if predict && fatal == nil && ctx.Err() == nil {
		recs := make([][]predRec, len(runners))
		for i, rn := range runners {
			recs[i] = append(rn.pred, rn.stretch.end(0, 0, 0, 0))
			rn.pred = nil
		}
		span := spanOf(rebuild(ranks, r.plan.Groups, recs))
		if span.ok {
			for _, rn := range runners {
				rn.res.ioSpan, rn.res.capturedIOSpan = max(sat.Sub(span.last, span.first), 1), r.plan.IOSpan
			}
		}
	}

	planned := r.plan.Events
	if r.opts.Share != nil {
		planned = 0
		for _, i := range planIdx {
			planned += r.plan.PerRank[i].Events
		}
	}
	res := &Result{Timing: r.opts.Timing, Ranks: len(ranks), Planned: planned, Elapsed: elapsed, Epoch: base, Script: r.script != nil, Predict: r.opts.Predict}
	var recErr error
	interrupted := ctx.Err() != nil && fatal == nil
	var stopped string
	if interrupted {
		// Why, when the context was cancelled with a cause of its own (a
		// team whose process stopped answering), not by the user.
		if c := context.Cause(ctx); c != nil && !errors.Is(c, ctx.Err()) {
			stopped = c.Error()
		}
	}
	for _, rn := range runners {
		res.merge(&rn.res)
		if rn.rec != nil {
			if err := rn.rec.close(); err != nil && recErr == nil {
				recErr = fmt.Errorf("recording rank %d: %w", rn.rank, err)
			}
		}
		rr := rn.res.record(res, rn.elapsed, interrupted, stopped)
		res.PerRank = append(res.PerRank, rr)
		if out.Replayed != nil {
			if err := out.Replayed(rn.rank, rr); err != nil && recErr == nil {
				recErr = fmt.Errorf("recording rank %d: %w", rn.rank, err)
			}
		}
	}
	if obs != nil {
		if err := obs.close(); err != nil && recErr == nil {
			recErr = err
		}
	}
	res.finish()
	res.Interrupted = interrupted
	if fatal == nil {
		fatal = recErr
	}
	return res, fatal
}

// share returns the ranks this process runs and their indexes in the
// plan.
func (r *Replay) share() ([]uint32, []int) {
	all := r.plan.Ranks
	if r.opts.Share == nil {
		idx := make([]int, len(all))
		for i := range idx {
			idx[i] = i
		}
		return all, idx
	}
	share := r.opts.Share(all)
	mine := make(map[uint32]bool, len(share))
	for _, rk := range share {
		mine[rk] = true
	}
	var ranks []uint32
	var idx []int
	for i, rk := range all {
		if mine[rk] {
			ranks = append(ranks, rk)
			idx = append(idx, i)
		}
	}
	return ranks, idx
}

// recordPath is the path the replay's own trace gives to a target path.
func (r *Replay) recordPath(rel string) string {
	if r.out.Target == "" {
		return rel
	}
	return filepath.Join(r.out.Target, rel)
}
