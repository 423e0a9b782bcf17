package replay_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/target"
)

// timedBackend's calls spend untimed the engine's share of a call
// (work) and, timed through Call.Sys, a system call of sys; a write of
// size 0 makes no system call.
type timedBackend struct {
	work, sys time.Duration
	timed     atomic.Int64 // ns the timed system calls took, by the wall clock
}

func (b *timedBackend) Prepare(context.Context, *target.Layout) error { return nil }
func (b *timedBackend) Close() error                                  { return nil }
func (b *timedBackend) Rank(uint32, int) (replay.Executor, error)     { return &timedExec{b}, nil }

type timedExec struct{ b *timedBackend }

func (x *timedExec) TimesSys() bool { return true }
func (x *timedExec) Close() error   { return nil }
func (x *timedExec) Do(c *replay.Call) (int64, replay.Skip) {
	time.Sleep(x.b.work)
	if c.Ev.Size == 0 {
		return c.Ev.Ret, replay.NotSkipped
	}
	t := c.Sys.Start()
	w := time.Now()
	time.Sleep(x.b.sys)
	x.b.timed.Add(int64(time.Since(w)))
	c.Sys.Stop(t)
	return c.Ev.Ret, replay.NotSkipped
}

// TestPredictTimesSystemCalls: under --predict a call's time in the
// rebuilt timeline is what its executor's system calls took (Call.Sys),
// not the engine's work around them; a call that made none keeps its
// captured time. An open and three writes, the writes 1 ms of system
// call each, every call 20 ms of other work, 1 ms of think time before
// each write, then a write of nothing that took 7 ms in the capture: the
// prediction holds the 3 ms of system calls, the 4 ms of think time and
// the 7 ms (14 ms), and none of the 100 ms of work — whatever the load,
// since sleeps only last longer.
func TestPredictTimesSystemCalls(t *testing.T) {
	m := trace.NewMemTrace()
	m.Add(trace.Event{Op: trace.OpOpen, Path: m.Paths.Intern("/f"), FD: 3, Ret: 3, Flags: trace.OWronly | trace.OCreat, Start: 0, Dur: 0})
	for i := range 3 {
		m.Add(trace.Event{Op: trace.OpPwrite, FD: 3, Size: 8, Ret: 8, Start: ms + int64(i)*2*ms, Dur: ms})
	}
	m.Add(trace.Event{Op: trace.OpPwrite, FD: 3, Size: 0, Ret: 0, Start: 7 * ms, Dur: 7 * ms})
	b := &timedBackend{work: 20 * time.Millisecond, sys: time.Millisecond}
	res, _ := run(t, m, replay.Options{Timing: replay.Think, Predict: true}, b)
	span := res.PerRank[0].IOSpan
	if span < 13*ms {
		t.Errorf("predicted %v: less than the 3 ms of system calls, 4 ms of think time and the 7 ms captured", time.Duration(span))
	}
	if span > int64(res.Elapsed)-90*ms {
		t.Errorf("predicted %v of a replay of %v: the 100 ms of the engine's work are in it (timed %v)", time.Duration(span), res.Elapsed, time.Duration(b.timed.Load()))
	}
}

// sizedBackend's calls make one system call that lasts Size µs.
type sizedBackend struct{ timedBackend }

func (b *sizedBackend) Rank(uint32, int) (replay.Executor, error) { return sizedExec{}, nil }

type sizedExec struct{}

func (sizedExec) TimesSys() bool { return true }
func (sizedExec) Close() error   { return nil }
func (sizedExec) Do(c *replay.Call) (int64, replay.Skip) {
	t := c.Sys.Start()
	time.Sleep(time.Duration(c.Ev.Size) * time.Microsecond)
	c.Sys.Stop(t)
	return c.Ev.Ret, replay.NotSkipped
}

// TestPredictCollectiveWritesOwnTime: in a collective MPI-IO call each
// member does its own I/O, and a member whose share takes longer ends
// later. Two ranks write 1 ms and 10 ms in one MPI_File_write_at_all:
// the prediction holds the 10 ms. (The rebuild ended a collective for
// all its members at the shortest member's time, as a barrier's: 1 ms.)
func TestPredictCollectiveWritesOwnTime(t *testing.T) {
	m := trace.NewMemTrace()
	p := m.Paths.Intern("/f")
	for r, size := range []int64{1000, 10000} {
		m.Add(trace.Event{Rank: uint32(r), Op: trace.OpMPIFileWriteAtAll, Path: p, FD: 1, Size: size, Ret: size,
			Comm: trace.CommWorld, Start: ms, Dur: 10 * ms})
	}
	res, _ := run(t, m, replay.Options{Timing: replay.Think, Predict: true}, &sizedBackend{})
	if span := res.PerRank[0].IOSpan; span < 10*ms {
		t.Errorf("predicted %v: less than rank 1's 10 ms write", time.Duration(span))
	}
}

// TestPredictPageinIsTheMapping: a pagein is the capture's wait for
// mapped pages between two calls, which the replay reads at the mmap and
// times there: under --predict it adds nothing of its own (a call that
// made no system call otherwise keeps its captured time). Two writes of
// 1 ms with a pagein of 500 ms between them: a prediction of ~2 ms.
func TestPredictPageinIsTheMapping(t *testing.T) {
	m := trace.NewMemTrace()
	p := m.Paths.Intern("/f")
	m.Add(trace.Event{Op: trace.OpOpen, Path: p, FD: 3, Ret: 3, Flags: trace.ORdwr | trace.OCreat, Start: 0, Dur: 0})
	m.Add(trace.Event{Op: trace.OpPwrite, FD: 3, Size: 8, Ret: 8, Start: 0, Dur: ms})
	// Size 0: timedBackend makes no system call for it, as replay/posix.
	m.Add(trace.Event{Op: trace.OpPagein, FD: -1, Path: p, Count: 1, Start: ms, Dur: 500 * ms})
	m.Add(trace.Event{Op: trace.OpPwrite, FD: 3, Size: 8, Ret: 8, Start: 501 * ms, Dur: ms})
	res, _ := run(t, m, replay.Options{Timing: replay.Think, Predict: true}, &timedBackend{sys: time.Millisecond})
	if span := res.PerRank[0].IOSpan; span >= 400*ms || span < 2*ms {
		t.Errorf("predicted %v: want the two writes' 2 ms, without the capture's 500 ms wait for mapped pages", time.Duration(span))
	}
}
