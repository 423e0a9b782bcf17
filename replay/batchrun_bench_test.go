package replay

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iotrace/iotrace/replay/comm"
	"github.com/iotrace/iotrace/trace"
)

// BenchmarkBatchRun measures the engine's own work per call — dispatch,
// the clock, bookkeeping, recording — around an executor that does
// nothing, as ioreplay --timing afap replays a rank's batch of pwrites:
// a call at a time, and in runs (RunExecutor, the clock read in the
// executor's loop).
func BenchmarkBatchRun(b *testing.B) {
	b.Run("calls", func(b *testing.B) { benchBatchRun(b, nopExec{}) })
	b.Run("runs", func(b *testing.B) { benchBatchRun(b, nopRunExec{}) })
}

func benchBatchRun(b *testing.B, ex Executor) {
	m := trace.NewMemTrace()
	evs := make([]trace.Event, trace.BatchSize)
	for i := range evs {
		evs[i] = trace.Event{Op: trace.OpPwrite, FD: 3, Offset: int64(i%256) * 4096, Size: 4096, Ret: 4096, Start: int64(i) * 1500, Dur: 1000}
	}
	m.Add(evs...)
	rp, err := New(m, Options{})
	if err != nil {
		b.Fatal(err)
	}
	src, _ := m.Rank(0)
	var stop atomic.Bool
	rn := &runner{
		rp: rp, src: src, ex: ex, cm: comm.NewLocal([]uint32{0}, nil).Endpoint(0),
		w:    waiter{clk: newClock(time.Now()), stop: &stop, ctx: context.Background()},
		stop: &stop, timing: AFAP, speed: 1, handles: map[int32]uint32{}, ctx: context.Background(),
		rec: &recorder{sink: nopSink{}},
	}
	rn.runEx, _ = ex.(RunExecutor)
	buf := make([]trace.Event, len(evs))
	b.ResetTimer()
	for done := 0; done < b.N; done += len(buf) {
		copy(buf, evs)
		rn.batchRun(buf[:min(len(buf), b.N-done)])
	}
}
