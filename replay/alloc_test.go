package replay

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iotrace/iotrace/replay/comm"
	"github.com/iotrace/iotrace/trace"
)

type nopExec struct{}

func (nopExec) Do(c *Call) (int64, Skip) { return c.Ev.Ret, NotSkipped }
func (nopExec) Close() error             { return nil }

// nopRunExec is nopExec that makes runs (RunExecutor), as the POSIX
// backend does: the engine takes its run path.
type nopRunExec struct{ nopExec }

func (nopRunExec) DoRun(r *Run) {
	now, moved := r.Start, int64(0)
	for i := range r.Evs {
		e := &r.Evs[i]
		end := r.Clock.Now()
		e.Start, e.Dur, now = now, end-now, end
		moved += e.Ret
	}
	r.N, r.End, r.Moved, r.Fail = len(r.Evs), now, moved, 0
}

type nopSink struct{}

func (nopSink) WriteEvents([]trace.Event) error { return nil }
func (nopSink) Intern(string) trace.PathID      { return 1 }

// TestHotPathDoesNotAllocate runs batches of data calls through a
// runner, recording them, a call at a time and in runs, and checks that
// no event allocates.
func TestHotPathDoesNotAllocate(t *testing.T) {
	m := trace.NewMemTrace()
	f := m.Paths.Intern("/data/file")
	var evs []trace.Event
	for i := 0; i < 1024; i++ {
		op := trace.OpPwrite
		if i%3 == 0 {
			op = trace.OpRead
		}
		evs = append(evs, trace.Event{Op: op, FD: 3, Path: f, Offset: int64(i) * 4096, Size: 4096, Ret: 4096, Start: int64(i) * 10})
	}
	m.Add(evs...)
	rp, err := New(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	src, _ := m.Rank(0)
	for _, tm := range []Timing{AFAP, Original, 255} {
		var ex Executor = nopExec{}
		if tm == 255 { // as fast as possible, in runs
			tm, ex = AFAP, nopRunExec{}
		}
		var stop atomic.Bool
		rn := &runner{
			rp: rp, src: src, ex: ex, cm: comm.NewLocal([]uint32{0}, nil).Endpoint(0),
			w:    waiter{clk: newClock(time.Now()), stop: &stop, ctx: context.Background(), precise: true, margin: 50_000},
			stop: &stop, timing: tm, speed: 1, handles: map[int32]uint32{}, ctx: context.Background(),
			rec: &recorder{sink: nopSink{}},
		}
		rn.runEx, _ = ex.(RunExecutor)
		buf := make([]trace.Event, len(evs))
		rn.batchRun(append(buf[:0], evs...)) // warm up: path ids, histogram
		allocs := testing.AllocsPerRun(20, func() {
			copy(buf, evs)
			rn.started = false
			rn.w.clk = newClock(time.Now())
			if k, err := rn.batchRun(buf); err != nil || k != len(buf) {
				t.Fatalf("batchRun: %d, %v", k, err)
			}
		})
		if allocs != 0 {
			t.Fatalf("%v: %.1f allocations per batch of %d events", tm, allocs, len(evs))
		}
	}
}
