package replay

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iotrace/iotrace/replay/comm"
	"github.com/iotrace/iotrace/trace"
)

// denseTrace is one rank of n pwrites that take no time, each recorded
// a gap of 0 to 5 µs after the previous one ended (as in a database's
// capture), and the sum of those gaps.
func denseTrace(n int) ([]trace.Event, int64) {
	rng := rand.New(rand.NewPCG(1, 2))
	evs := make([]trace.Event, n)
	var t, sum int64
	for i := range evs {
		g := rng.Int64N(5001)
		if i > 0 {
			sum += g
		}
		t += g
		evs[i] = trace.Event{Op: trace.OpPwrite, FD: 3, Offset: int64(i%256) * 4096, Size: 4096, Ret: 4096, Start: t}
	}
	return evs, sum
}

// thinkRunner is a runner of one rank, with a processor of its own, that
// replays with think timing around an executor doing nothing.
func thinkRunner(t testing.TB, evs []trace.Event) *runner {
	m := trace.NewMemTrace()
	m.Add(evs...)
	rp, err := New(m, Options{Timing: Think})
	if err != nil {
		t.Fatal(err)
	}
	src, _ := m.Rank(0)
	var stop atomic.Bool
	return &runner{
		rp: rp, src: src, ex: nopExec{}, cm: comm.NewLocal([]uint32{0}, nil).Endpoint(0),
		w: waiter{clk: newClock(time.Now()), stop: &stop, ctx: context.Background(), precise: true, own: true,
			margin: calibrate(false), skip: skipBelow(true)},
		stop: &stop, timing: Think, speed: 1, handles: map[int32]uint32{}, ctx: context.Background(),
		rec: &recorder{sink: nopSink{}},
	}
}

// TestDenseThinkWaitsNeverSleep replays a dense think-timing trace (gaps
// of 0 to 5 µs) and checks the waiter's accounting, which load does not
// change: no gap that short sleeps — not even after a spin lost its
// processor, which once sent the next 1,000 waits through nanosleep(2),
// each tens of microseconds late on a virtual machine — and the think
// time the replay kept (each call's start minus the previous call's end,
// from the events it records) is at least the recorded think time less
// what the waiter may owe (waiter.skip): what a waiter skips it pays
// later.
func TestDenseThinkWaitsNeverSleep(t *testing.T) {
	const n = 20_000
	evs, recorded := denseTrace(n)
	rn := thinkRunner(t, evs)
	rn.w.calm = calmWaits // as after a spin that lost its processor
	buf := append([]trace.Event(nil), evs...)
	if k, err := rn.batchRun(buf); err != nil || k != n {
		t.Fatalf("batchRun: %d, %v", k, err)
	}
	st := rn.w.stats
	if st.sleeps != 0 || st.timers != 0 {
		t.Fatalf("gaps of at most 5 µs (margin %d ns): %d nanosleeps and %d timer sleeps (%+v)", rn.w.margin, st.sleeps, st.timers, st)
	}
	if rn.w.skip <= 0 || rn.w.skip > 5_000 || rn.w.owed < 0 || rn.w.owed >= rn.w.skip {
		t.Fatalf("skip %d ns, owed %d ns: want 0 < skip ≤ 5 µs and 0 ≤ owed < skip", rn.w.skip, rn.w.owed)
	}
	var kept int64
	for i := 1; i < n; i++ {
		kept += buf[i].Start - (buf[i-1].Start + buf[i-1].Dur)
	}
	if kept < recorded-rn.w.skip {
		t.Fatalf("think time kept %d ns, recorded %d ns: more than skip (%d ns) short", kept, recorded, rn.w.skip)
	}
	if rn.res.lag.byOp()[trace.OpPwrite].Count() != n {
		t.Fatalf("issue lag of %d calls, want %d", rn.res.lag.byOp()[trace.OpPwrite].Count(), n)
	}
	t.Logf("%d calls, recorded think time %v, kept %v; waiter %+v, skip %d ns", n, time.Duration(recorded), time.Duration(kept), st, rn.w.skip)
}

// TestLongWaitAfterLostSpinSleeps: after a spin lost its processor to
// another thread, the waits longer than spinCheck (20 µs) sleep up to the
// deadline, even those shorter than the margin, and only those count down
// the calm; shorter waits spin.
func TestLongWaitAfterLostSpinSleeps(t *testing.T) {
	var stop atomic.Bool
	w := waiter{clk: newClock(time.Now()), stop: &stop, ctx: context.Background(), precise: true, own: true, margin: 200_000, calm: 2}
	now := w.now()
	now, _ = w.until(now+2_000, now) // short: spins, keeps the calm
	if w.calm != 2 || w.stats.sleeps != 0 || w.stats.spins != 1 {
		t.Fatalf("a 2 µs wait: calm %d, %+v; want it spun, calm left at 2", w.calm, w.stats)
	}
	start, _ := w.until(now+100_000, now) // shorter than the margin, longer than 20 µs: sleeps up to the deadline
	if w.calm != 1 || w.stats.sleeps == 0 || start < now+100_000 {
		t.Fatalf("a 100 µs wait: calm %d, %+v, ended %d ns early", w.calm, w.stats, now+100_000-start)
	}
}

// BenchmarkThinkDense measures what the waiter and the engine cost per
// call beyond the recorded gaps, on a dense think-timing trace (gaps of
// 0 to 5 µs, calls that take no time): the metric ns-over-gap/call is
// the replay's duration less the recorded think time, over the calls.
func BenchmarkThinkDense(b *testing.B) {
	evs, _ := denseTrace(trace.BatchSize)
	rn := thinkRunner(b, evs)
	buf := make([]trace.Event, len(evs))
	var gaps, took int64
	b.ResetTimer()
	for done := 0; done < b.N; done += len(buf) {
		k := min(len(buf), b.N-done)
		copy(buf, evs[:k])
		rn.started = false
		rn.w.owed = 0
		t0 := rn.w.now()
		rn.batchRun(buf[:k])
		took += rn.w.now() - t0
		for i := 1; i < k; i++ {
			gaps += evs[i].Start - evs[i-1].Start
		}
	}
	b.ReportMetric(float64(took-gaps)/float64(b.N), "ns-over-gap/call")
}
