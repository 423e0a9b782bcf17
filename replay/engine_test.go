package replay_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iotrace/iotrace/internal/loadcheck"
	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/replay/posix"
	"github.com/iotrace/iotrace/report"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/target"
	"github.com/iotrace/iotrace/trace/tracegen"
	"golang.org/x/sys/unix"
)

const ms = int64(time.Millisecond)

// fakeBackend carries out nothing: each call takes delay(e) and returns
// ret(e) (the recorded result by default).
type fakeBackend struct {
	delay func(e *trace.Event) time.Duration
	ret   func(e *trace.Event) int64
}

func (f *fakeBackend) Prepare(context.Context, *target.Layout) error { return nil }
func (f *fakeBackend) Close() error                                  { return nil }
func (f *fakeBackend) Rank(uint32, int) (replay.Executor, error)     { return &fakeExec{f}, nil }

type fakeExec struct{ f *fakeBackend }

func (x *fakeExec) Do(c *replay.Call) (int64, replay.Skip) {
	if x.f.delay != nil {
		if d := x.f.delay(c.Ev); d > 0 {
			time.Sleep(d)
		}
	}
	if x.f.ret != nil {
		return x.f.ret(c.Ev), replay.NotSkipped
	}
	return c.Ev.Ret, replay.NotSkipped
}
func (x *fakeExec) Close() error { return nil }

// sinks records each rank's replay events.
type sinks struct {
	mu    sync.Mutex
	paths *trace.Paths
	by    map[uint32]*rankSink
}

type rankSink struct {
	s   *sinks
	evs []trace.Event
}

func newSinks() *sinks { return &sinks{paths: trace.NewPaths(), by: map[uint32]*rankSink{}} }

func (s *sinks) out(target string) replay.Output {
	return replay.Output{Target: target, Record: func(r uint32) trace.Sink {
		s.mu.Lock()
		defer s.mu.Unlock()
		rs := &rankSink{s: s}
		s.by[r] = rs
		return rs
	}}
}

func (r *rankSink) WriteEvents(evs []trace.Event) error { r.evs = append(r.evs, evs...); return nil }
func (r *rankSink) Intern(p string) trace.PathID        { return r.s.paths.Intern(p) }

// trace returns what was recorded as a trace.
func (s *sinks) trace() *trace.MemTrace {
	m := trace.NewMemTrace()
	m.Paths = s.paths
	for r, rs := range s.by {
		for _, e := range rs.evs {
			e.Rank = r
			m.Add(e)
		}
	}
	return m
}

func (s *sinks) rank(r uint32) []trace.Event { return s.by[r].evs }

func run(t *testing.T, tr trace.Trace, opts replay.Options, b replay.Backend) (*replay.Result, *sinks) {
	t.Helper()
	_, res, s, err := tryRun(t, tr, opts, b)
	if err != nil {
		t.Fatal(err)
	}
	return res, s
}

// tryRun is run returning the replay's error (and the replay), for a test
// that expects one.
func tryRun(t *testing.T, tr trace.Trace, opts replay.Options, b replay.Backend) (*replay.Replay, *replay.Result, *sinks, error) {
	t.Helper()
	rp, err := replay.New(tr, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Prepare(context.Background(), &rp.Plan().Layout); err != nil {
		t.Fatal(err)
	}
	s := newSinks()
	res, err := rp.Run(context.Background(), b, s.out(""))
	return rp, res, s, err
}

// TestReplayTwoPhaseCounts replays an 8-rank astro3d-like trace through
// POSIX as fast as possible and checks that the replay's trace has the
// same calls and bytes per op as the input.
func TestReplayTwoPhaseCounts(t *testing.T) {
	in := tracegen.TwoPhase(8, 2, 3, 8, 4096, 1)
	dir := t.TempDir()
	be, err := posix.New(posix.Options{Target: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	res, s := run(t, in, replay.Options{Timing: replay.AFAP}, be)
	if res.Failures() != 0 || res.Skipped() != 0 || res.Unmatched != 0 {
		var b strings.Builder
		report.ReplayOf(res.PerRank).WriteText(&b)
		t.Fatalf("failures, skips or unmatched calls:\n%s", b.String())
	}
	a, err := report.Compute(in, report.Options{Detail: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := report.Compute(s.trace(), report.Options{Detail: true})
	if err != nil {
		t.Fatal(err)
	}
	c := report.Compare(a, b)
	if m := c.Mismatches(); len(m) > 0 {
		t.Fatalf("counts differ in %v", m)
	}
	for _, row := range c.Rows {
		if row.A.Bytes != row.B.Bytes {
			t.Errorf("%s: %d bytes in the trace, %d in the replay", row.Op, row.A.Bytes, row.B.Bytes)
		}
	}
	if a.Events != b.Events || b.Ranks != 8 {
		t.Fatalf("events %d → %d, ranks %d", a.Events, b.Events, b.Ranks)
	}
}

// barrierTrace: rank 0 works (a write that takes slow) before a barrier;
// every other rank enters the barrier at once and writes after it.
func barrierTrace(ranks int) *trace.MemTrace {
	m := trace.NewMemTrace()
	f := m.Paths.Intern("/x/f")
	for r := uint32(0); r < uint32(ranks); r++ {
		m.Add(trace.Event{Rank: r, Op: trace.OpOpen, Path: f, Flags: trace.ORdwr | trace.OCreat, FD: 3, Ret: 3, Start: 0, Dur: 1000})
		if r == 0 {
			m.Add(trace.Event{Rank: r, Op: trace.OpPwrite, FD: 3, Size: 10, Ret: 10, Start: 1 * ms, Dur: 40 * ms})
		}
		m.Add(trace.Event{Rank: r, Op: trace.OpMPIBarrier, Start: 45 * ms, Dur: ms},
			trace.Event{Rank: r, Op: trace.OpPwrite, FD: 3, Offset: 100, Size: 10, Ret: 10, Start: 47 * ms, Dur: 1000})
	}
	return m
}

// TestBarrierOrdersRanks checks, in every timing mode, that no rank
// leaves a barrier before the slow rank has entered it.
func TestBarrierOrdersRanks(t *testing.T) {
	slow := &fakeBackend{delay: func(e *trace.Event) time.Duration {
		if e.Op == trace.OpPwrite && e.Dur > ms {
			return 30 * time.Millisecond
		}
		return 0
	}}
	for _, tm := range []replay.Timing{replay.AFAP, replay.Think, replay.Original} {
		t.Run(tm.String(), func(t *testing.T) {
			_, s := run(t, barrierTrace(4), replay.Options{Timing: tm}, slow)
			r0 := s.rank(0)
			enter := r0[2].Start // rank 0's barrier
			for r := uint32(1); r < 4; r++ {
				evs := s.rank(r)
				if evs[1].Op != trace.OpMPIBarrier {
					t.Fatalf("rank %d: event 1 is %v", r, evs[1].Op)
				}
				if left := evs[1].Start + evs[1].Dur; left < enter {
					t.Fatalf("rank %d left the barrier at %d, before rank 0 entered it at %d", r, left, enter)
				}
				if evs[2].Start < enter {
					t.Fatalf("rank %d wrote after the barrier at %d, before rank 0 entered it at %d", r, evs[2].Start, enter)
				}
			}
		})
	}
}

// msgTrace: rank 0 works, then sends; rank 1 receives, then writes. With
// nonblocking calls, rank 1 posts an Irecv first and waits for it later.
func msgTrace(nonblocking bool) *trace.MemTrace {
	m := trace.NewMemTrace()
	m.Add(
		trace.Event{Rank: 0, Op: trace.OpPwrite, FD: 3, Size: 1, Ret: 1, Dur: 20 * ms},
		trace.Event{Rank: 0, Op: trace.OpMPISend, Peer: 1, Tag: 7, Bytes: 4096, Start: 21 * ms},
	)
	if nonblocking {
		m.Add(
			trace.Event{Rank: 1, Op: trace.OpMPIIrecv, Peer: 0, Tag: 7, Bytes: 4096},
			trace.Event{Rank: 1, Op: trace.OpMPIIsend, Peer: 0, Tag: 8, Bytes: 16, Start: 1000},
			trace.Event{Rank: 1, Op: trace.OpMPIWaitall, Count: 2, Start: 2000},
		)
		m.Add(trace.Event{Rank: 0, Op: trace.OpMPIRecv, Peer: 1, Tag: 8, Start: 22 * ms})
	} else {
		m.Add(trace.Event{Rank: 1, Op: trace.OpMPIRecv, Peer: 0, Tag: 7, Bytes: 4096})
	}
	m.Add(trace.Event{Rank: 1, Op: trace.OpPwrite, FD: 3, Size: 1, Ret: 1, Start: 22 * ms})
	return m
}

func TestReceiveWaitsForSend(t *testing.T) {
	slow := &fakeBackend{delay: func(e *trace.Event) time.Duration {
		if e.Dur >= 20*ms {
			return 20 * time.Millisecond
		}
		return 0
	}}
	for _, nb := range []bool{false, true} {
		for _, tm := range []replay.Timing{replay.AFAP, replay.Think, replay.Original} {
			res, s := run(t, msgTrace(nb), replay.Options{Timing: tm}, slow)
			sent := s.rank(0)[1].Start
			r1 := s.rank(1)
			last := r1[len(r1)-1]
			if last.Start < sent {
				t.Fatalf("nonblocking %v, %v: rank 1 went on at %d, before rank 0 sent at %d", nb, tm, last.Start, sent)
			}
			if res.Unmatched != 0 {
				t.Fatalf("unmatched calls: %+v", res.Notes)
			}
		}
	}
}

// TestSubCommunicator checks that a collective on a communicator waits
// only for the ranks that use it.
func TestSubCommunicator(t *testing.T) {
	m := trace.NewMemTrace()
	m.Add(trace.Event{Rank: 0, Op: trace.OpPwrite, Size: 1, Ret: 1, Dur: 500 * ms})
	for _, r := range []uint32{1, 2} {
		m.Add(trace.Event{Rank: r, Op: trace.OpMPIAllreduce, Comm: 9, Bytes: 8})
	}
	slow := &fakeBackend{delay: func(e *trace.Event) time.Duration { return time.Duration(e.Dur) }}
	start := time.Now()
	res, s := run(t, m, replay.Options{Timing: replay.AFAP}, slow)
	for _, r := range []uint32{1, 2} {
		if end := s.rank(r)[0].Start + s.rank(r)[0].Dur; end > 300*ms {
			t.Fatalf("rank %d waited %d ns in a collective rank 0 is not part of", r, end)
		}
	}
	if res.Unmatched != 0 || time.Since(start) > 2*time.Second {
		t.Fatalf("unmatched %d", res.Unmatched)
	}
}

// TestUnmatchedReceive checks that a receive no rank sends to ends in a
// count, not a hang, and fails the replay under --strict.
func TestUnmatchedReceive(t *testing.T) {
	m := trace.NewMemTrace()
	m.Add(trace.Event{Rank: 0, Op: trace.OpPwrite, Size: 1, Ret: 1},
		trace.Event{Rank: 1, Op: trace.OpMPIRecv, Peer: 0, Tag: 3},
		trace.Event{Rank: 1, Op: trace.OpPwrite, Size: 1, Ret: 1})
	res, s := run(t, m, replay.Options{Timing: replay.AFAP}, &fakeBackend{})
	if res.Unmatched != 1 || len(s.rank(1)) != 2 {
		t.Fatalf("unmatched %d, rank 1 recorded %d events", res.Unmatched, len(s.rank(1)))
	}
	rp, err := replay.New(m, replay.Options{Timing: replay.AFAP, Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = rp.Run(context.Background(), &fakeBackend{}, replay.Output{})
	if err == nil || !strings.Contains(err.Error(), "rank 1, event 1 (MPI_Recv") {
		t.Fatalf("strict: got %v", err)
	}
}

// gapTrace is one rank of n calls whose starts are gap apart, each taking
// dur.
func gapTrace(n int, gap, dur int64) *trace.MemTrace {
	m := trace.NewMemTrace()
	for i := 0; i < n; i++ {
		m.Add(trace.Event{Op: trace.OpPwrite, FD: 3, Size: 8, Ret: 8, Start: 5*ms + int64(i)*gap, Dur: dur})
	}
	return m
}

// TestOriginalTiming replays n calls 1 ms apart. Whatever the load, no
// call starts before its time, and the issue lag the replay reports is
// the lateness its own trace shows. On time is checked against what the
// machine allows right then (how late a plain nanosleep of 1 ms wakes,
// measured after the replay): the median call is late by at most half a
// millisecond more than the median wake-up, and the last call (the run
// time) by at most 5 % more than the slowest wake-ups. A machine
// overloaded while it ran gets a second try.
func TestOriginalTiming(t *testing.T) {
	const n = 100
	for _, speed := range []float64{1, 2} {
		loadcheck.Retry(t, func() string {
			res, s := run(t, gapTrace(n, ms, 100_000), replay.Options{Timing: replay.Original, Speed: speed}, &fakeBackend{})
			wake50, wake99 := wakeLateness(50, time.Millisecond)
			evs := s.rank(0)
			if len(evs) != n || res.Lag.Count() != n {
				t.Fatalf("speed %v: %d calls replayed, lag of %d", speed, len(evs), res.Lag.Count())
			}
			// The replay's clock starts at 0 with the first call.
			var worst int64
			for i, e := range evs {
				want := int64(float64(int64(i)*ms) / speed)
				if e.Start < want {
					t.Fatalf("speed %v: call %d started at %d ns, before its time %d", speed, i, e.Start, want)
				}
				worst = max(worst, e.Start-want)
			}
			if got := res.Lag.Max(); got < worst-10_000 || got > worst+10_000 {
				t.Fatalf("speed %v: reported lag max %d ns, but the trace shows a call %d ns late", speed, got, worst)
			}
			want := int64(float64((n-1)*ms) / speed)
			if last := evs[n-1].Start; last > want+want/20+int64(wake99) {
				return fmt.Sprintf("speed %v: %d gaps of %v took %v (a 1 ms sleep wakes up to %v late here)",
					speed, n-1, time.Duration(float64(ms)/speed), time.Duration(last), wake99)
			}
			if p50 := time.Duration(res.Lag.Quantile(0.5)); p50 > time.Millisecond/2+wake50 {
				return fmt.Sprintf("speed %v: issue lag p50 %v over %d calls (a 1 ms sleep wakes %v late here)", speed, p50, n, wake50)
			}
			return ""
		})
	}
}

// TestOriginalTimingKeepsRankDelay: rank 0 made its first call 300 ms
// after rank 1 (the trace's times are on one clock). Original timing
// counts from the trace's first call, so rank 0 waits those 300 ms
// before its first call; think timing starts every rank at once.
func TestOriginalTimingKeepsRankDelay(t *testing.T) {
	m := trace.NewMemTrace()
	for i := int64(0); i < 3; i++ {
		m.Add(trace.Event{Op: trace.OpPwrite, Rank: 1, FD: 3, Size: 8, Ret: 8, Start: 20*ms + i*ms, Dur: 1000},
			trace.Event{Op: trace.OpPwrite, Rank: 0, FD: 3, Size: 8, Ret: 8, Start: 320*ms + i*ms, Dur: 1000})
	}
	loadcheck.Retry(t, func() string {
		_, s := run(t, m, replay.Options{Timing: replay.Original}, &fakeBackend{})
		d := s.rank(0)[0].Start - s.rank(1)[0].Start
		if d < 300*ms-ms || d > 300*ms+ms {
			return fmt.Sprintf("original: rank 0's first call %v after rank 1's, want 300ms ± 1ms", time.Duration(d))
		}
		if st := s.rank(1)[0].Start; st > 2*ms {
			return fmt.Sprintf("original: the trace's first call started %v after the replay's start", time.Duration(st))
		}
		return ""
	})
	_, s := run(t, m, replay.Options{Timing: replay.Think}, &fakeBackend{})
	if d := s.rank(0)[0].Start - s.rank(1)[0].Start; d > 100*ms || d < -100*ms {
		t.Errorf("think: rank 0's first call %v after rank 1's; think timing starts the ranks together", time.Duration(d))
	}
}

// wakeLateness sleeps n times for d and returns the median and 99th
// percentile of how late nanosleep woke.
func wakeLateness(n int, d time.Duration) (p50, p99 time.Duration) {
	late := make([]time.Duration, n)
	ts := unix.NsecToTimespec(int64(d))
	for i := range late {
		t0 := time.Now()
		unix.Nanosleep(&ts, nil)
		late[i] = max(0, time.Since(t0)-d)
	}
	slices.Sort(late)
	return late[n/2], late[n*99/100]
}

// TestLongWaitsSleep checks that a rank waiting for a call 300 ms ahead
// sleeps instead of spinning: the process uses far less processor time
// than the wait lasts, and the call still starts on time.
func TestLongWaitsSleep(t *testing.T) {
	m := trace.NewMemTrace()
	m.Add(trace.Event{Op: trace.OpPwrite, FD: 3, Size: 8, Ret: 8},
		trace.Event{Op: trace.OpPwrite, FD: 3, Size: 8, Ret: 8, Start: 300 * ms})
	var before, after unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &before)
	res, s := run(t, m, replay.Options{Timing: replay.Original}, &fakeBackend{})
	unix.Getrusage(unix.RUSAGE_SELF, &after)
	cpu := time.Duration(unix.TimevalToNsec(after.Utime)+unix.TimevalToNsec(after.Stime)) -
		time.Duration(unix.TimevalToNsec(before.Utime)+unix.TimevalToNsec(before.Stime))
	if cpu > 100*time.Millisecond {
		t.Fatalf("a wait of 300 ms used %v of processor time", cpu)
	}
	if st := s.rank(0)[1].Start; st < 300*ms || res.Lag.Count() != 2 {
		t.Fatalf("the call started at %d ns, before its time (lag counted for %d calls)", st, res.Lag.Count())
	}
}

// TestThinkTiming checks that think timing keeps the gap after each
// call's end, whatever the call takes in the replay; original timing
// keeps start offsets instead.
func TestThinkTiming(t *testing.T) {
	const n = 20
	// Recorded: calls of 5 ms, 2 ms apart (end to start). Replayed: the
	// calls take no time.
	tr := gapTrace(n, 7*ms, 5*ms)
	loadcheck.Retry(t, func() string {
		_, s := run(t, tr, replay.Options{Timing: replay.Think}, &fakeBackend{})
		evs := s.rank(0)
		for i := 1; i < n; i++ {
			if gap := evs[i].Start - evs[i-1].End(); gap < 2*ms {
				t.Fatalf("think: gap %d is %d ns, less than the recorded 2 ms", i, gap)
			}
		}
		// Original timing would keep the 7 ms from start to start (133
		// ms); think keeps 2 ms gaps (38 ms), with room for a busy
		// machine.
		if span := evs[n-1].Start - evs[0].Start; span > int64(n-1)*5*ms {
			return fmt.Sprintf("think: %d gaps of 2 ms took %v", n-1, time.Duration(span))
		}
		return ""
	})
	loadcheck.Retry(t, func() string {
		_, s := run(t, tr, replay.Options{Timing: replay.AFAP}, &fakeBackend{})
		evs := s.rank(0)
		if span := evs[n-1].Start - evs[0].Start; span > int64(n-1)*2*ms {
			return fmt.Sprintf("afap: %d calls took %v", n, time.Duration(span))
		}
		return ""
	})
}

func TestFailuresCountedAndStrict(t *testing.T) {
	tr := gapTrace(10, 0, 0)
	tr.Events[0][3].Ret = -5 // failed in the original too
	be := &fakeBackend{ret: func(e *trace.Event) int64 { return -5 }}
	res, _ := run(t, tr, replay.Options{}, be)
	var expected, failed int64
	for _, e := range res.Errors {
		if e.Errno != "EIO" || e.Op != "pwrite" {
			t.Fatalf("error %+v", e)
		}
		if e.Expected {
			expected += e.Count
		} else {
			failed += e.Count
		}
	}
	if expected != 1 || failed != 9 || res.Failures() != 9 {
		t.Fatalf("expected %d failed %d", expected, failed)
	}
	rp, _ := replay.New(tr, replay.Options{Strict: true})
	_, err := rp.Run(context.Background(), be, replay.Output{})
	if err == nil || err.Error() != "rank 0, event 1 (pwrite fd 3 offset 0 size 8): EIO" {
		t.Fatalf("strict: %v", err)
	}
}

func TestInterrupt(t *testing.T) {
	tr := gapTrace(100, 50*ms, 0)
	rp, err := replay.New(tr, replay.Options{Timing: replay.Original})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Millisecond)
	defer cancel()
	s := newSinks()
	start := time.Now()
	res, err := rp.Run(ctx, &fakeBackend{}, s.out(""))
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > time.Second {
		t.Fatalf("the stop took %v", time.Since(start))
	}
	if !res.Interrupted {
		t.Fatal("not marked interrupted")
	}
	if n := len(s.rank(0)); n < 2 || n > 4 || res.Events != int64(n) {
		t.Fatalf("recorded %d events, result says %d", n, res.Events)
	}
	if !strings.Contains(report.ReplayOf(res.PerRank).Progress(), "of 100 events replayed") {
		t.Fatalf("progress: %s", report.ReplayOf(res.PerRank).Progress())
	}
	if res.PerRank[0].Stopped != "" {
		t.Errorf("a deadline is not a reason of its own: stopped %q", res.PerRank[0].Stopped)
	}

	// Stopped with a cause (a team that lost a process): the ranks say why.
	rp, err = replay.New(tr, replay.Options{Timing: replay.Original})
	if err != nil {
		t.Fatal(err)
	}
	cctx, stop := context.WithCancelCause(context.Background())
	time.AfterFunc(60*time.Millisecond, func() { stop(errors.New("process 3 on host b has not answered for 10s")) })
	res, err = rp.Run(cctx, &fakeBackend{}, newSinks().out(""))
	if err != nil || !res.Interrupted {
		t.Fatalf("stopped with a cause: %v, interrupted %v", err, res.Interrupted)
	}
	var b strings.Builder
	report.ReplayOf(res.PerRank).WriteText(&b)
	if !strings.Contains(b.String(), "interrupted: process 3 on host b has not answered for 10s: ") {
		t.Errorf("the summary does not say why the replay stopped:\n%s", b.String())
	}
}

// TestManyRanks runs a thousand ranks with barriers.
func TestManyRanks(t *testing.T) {
	m := trace.NewMemTrace()
	for r := uint32(0); r < 1000; r++ {
		for i := 0; i < 30; i++ {
			if i%10 == 0 {
				m.Add(trace.Event{Rank: r, Op: trace.OpMPIBarrier})
			}
			m.Add(trace.Event{Rank: r, Op: trace.OpPwrite, FD: 3, Size: 8, Ret: 8})
		}
	}
	res, s := run(t, m, replay.Options{Timing: replay.AFAP}, &fakeBackend{})
	if res.Events != 33000 || len(s.by) != 1000 || res.Unmatched != 0 {
		t.Fatalf("events %d, ranks %d, unmatched %d", res.Events, len(s.by), res.Unmatched)
	}
}

// TestSharedPointers: the POSIX backend replays MPI_File_write_ordered and
// MPI_File_write_shared where the shared file pointer puts them (the trace
// records 0: where they land depends on the other ranks), not all at
// offset 0: four ranks write 100 bytes ordered twice, then 10 bytes each
// through the shared pointer, through a view that skips 50 bytes.
func TestSharedPointers(t *testing.T) {
	m := trace.NewMemTrace()
	f := m.Paths.Intern("/s/shared.dat")
	for r := uint32(0); r < 4; r++ {
		start := int64(r) // rank 3 reaches the shared calls last
		m.Add(
			trace.Event{Rank: r, Op: trace.OpMPIFileOpen, FD: 1, Path: f, Flags: trace.MPIModeCreate | trace.MPIModeRdwr, Start: start},
			trace.Event{Rank: r, Op: trace.OpMPIFileSetView, FD: 1, Offset: 50, Start: start + 10},
			trace.Event{Rank: r, Op: trace.OpMPIFileWriteOrdered, FD: 1, Size: 100, Ret: 100, Start: 100 - start},
			trace.Event{Rank: r, Op: trace.OpMPIFileWriteOrdered, FD: 1, Size: 100, Ret: 100, Start: 200 - start},
			trace.Event{Rank: r, Op: trace.OpMPIBarrier, Start: 300},
			trace.Event{Rank: r, Op: trace.OpMPIFileWriteShared, FD: 1, Size: 10, Ret: 10, Start: 400 + start},
			trace.Event{Rank: r, Op: trace.OpMPIFileClose, FD: 1, Start: 500},
		)
	}
	dir := t.TempDir()
	be, err := posix.New(posix.Options{Target: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	res, s := run(t, m, replay.Options{Timing: replay.AFAP}, be)
	if res.Failures() != 0 || res.Skipped() != 0 {
		var b strings.Builder
		report.ReplayOf(res.PerRank).WriteText(&b)
		t.Fatalf("failures or skips:\n%s", b.String())
	}
	for r := uint32(0); r < 4; r++ {
		var offs []int64
		for _, e := range s.rank(r) {
			if e.Op.Info().Addr == trace.AddrShared {
				offs = append(offs, e.Offset)
			}
		}
		want := []int64{int64(r) * 100, 400 + int64(r)*100, 800 + int64(r)*10}
		if !slices.Equal(offs, want) {
			t.Errorf("rank %d wrote at %v, want %v", r, offs, want)
		}
	}
	var st unix.Stat_t
	if err := unix.Stat(dir+"/shared.dat", &st); err != nil || st.Size != 50+840 {
		t.Fatalf("the shared file has %d bytes (%v), want 890", st.Size, err)
	}
}

// replayRanksAFAP replays m as fast as possible five times, each in a
// new target, and fails the test unless every run made every call with
// no skip and no failure but the want failures the trace shows too. It
// returns the targets.
func replayRanksAFAP(t *testing.T, m trace.Trace, want int64) []string {
	t.Helper()
	var dirs []string
	for try := 0; try < 5; try++ {
		dir := t.TempDir()
		be, err := posix.New(posix.Options{Target: dir})
		if err != nil {
			t.Fatal(err)
		}
		res, _ := run(t, m, replay.Options{Timing: replay.AFAP}, be)
		be.Close()
		var expected int64
		for _, e := range res.Errors {
			if e.Expected {
				expected += e.Count
			}
		}
		if res.Failures() != 0 || res.Skipped() != 0 || expected != want {
			var b strings.Builder
			report.ReplayOf(res.PerRank).WriteText(&b)
			t.Fatalf("try %d: %d failures, %d skips, %d failures as traced (want %d):\n%s", try, res.Failures(), res.Skipped(), expected, want, b.String())
		}
		dirs = append(dirs, dir)
	}
	return dirs
}

// busyRank is a rank kept busy at first: 3000 writes of another file.
func busyRank(rank uint32, other trace.PathID) []trace.Event {
	evs := []trace.Event{{Rank: rank, Op: trace.OpOpen, Path: other, Flags: trace.OWronly | trace.OCreat | trace.OTrunc, Ret: 3, Start: 1}}
	for i := int64(0); i < 3000; i++ {
		evs = append(evs, trace.Event{Rank: rank, Op: trace.OpPwrite, FD: 3, Offset: i * 4096, Size: 4096, Ret: 4096, Start: 10 + i})
	}
	return evs
}

// TestRanksWaitForFilesOthersMake: a trace without MPI calls (ptrace sees
// none) where rank 1 opens a file rank 0 created earlier: as fast as
// possible, rank 1 would open it before rank 0 has made it; it waits for
// the create, as it came after it in the traced run.
func TestRanksWaitForFilesOthersMake(t *testing.T) {
	m := trace.NewMemTrace()
	other, shared := m.Paths.Intern("/s/other"), m.Paths.Intern("/s/shared")
	var evs []trace.Event
	evs = append(evs, trace.Event{Rank: 0, Op: trace.OpOpen, Path: other, Flags: trace.OWronly | trace.OCreat | trace.OTrunc, Ret: 3, Start: 1})
	for i := int64(0); i < 3000; i++ {
		evs = append(evs, trace.Event{Rank: 0, Op: trace.OpPwrite, FD: 3, Offset: i * 4096, Size: 4096, Ret: 4096, Start: 10 + i})
	}
	evs = append(evs,
		trace.Event{Rank: 0, Op: trace.OpOpen, Path: shared, Flags: trace.OWronly | trace.OCreat | trace.OExcl, Ret: 4, Start: 5000},
		trace.Event{Rank: 0, Op: trace.OpPwrite, FD: 4, Size: 100, Ret: 100, Start: 5001},
		trace.Event{Rank: 0, Op: trace.OpClose, FD: 4, Start: 5002},
		trace.Event{Rank: 1, Op: trace.OpStat, Path: shared, Start: 6000},
		trace.Event{Rank: 1, Op: trace.OpOpen, Path: shared, Flags: trace.ORdonly, Ret: 3, Start: 6001},
		trace.Event{Rank: 1, Op: trace.OpPread, FD: 3, Size: 100, Ret: 100, Start: 6002},
	)
	m.Add(evs...)
	replayRanksAFAP(t, m, 0)
}

// TestRanksWaitForFilesOthersMakeClockSkew: as above, but the trace's
// clocks put rank 1's open before rank 0's create, as a ptrace capture on
// a loaded machine does (each process's times are read by its own tracer,
// late by as long as it waited for a processor). Rank 0 saw the name
// absent before: rank 1 could only find it once rank 0 made it, and waits
// for that create.
func TestRanksWaitForFilesOthersMakeClockSkew(t *testing.T) {
	m := trace.NewMemTrace()
	other, shared := m.Paths.Intern("/s/other"), m.Paths.Intern("/s/shared")
	var evs []trace.Event
	evs = append(evs,
		trace.Event{Rank: 0, Op: trace.OpAccess, Path: shared, Ret: -2, Start: 0},
		trace.Event{Rank: 0, Op: trace.OpOpen, Path: other, Flags: trace.OWronly | trace.OCreat | trace.OTrunc, Ret: 3, Start: 1})
	for i := int64(0); i < 3000; i++ {
		evs = append(evs, trace.Event{Rank: 0, Op: trace.OpPwrite, FD: 3, Offset: i * 4096, Size: 4096, Ret: 4096, Start: 10 + i})
	}
	evs = append(evs,
		trace.Event{Rank: 1, Op: trace.OpOpen, Path: shared, Flags: trace.ORdwr, Ret: 3, Start: 4990, Dur: 4},
		trace.Event{Rank: 1, Op: trace.OpPwrite, FD: 3, Offset: 100, Size: 100, Ret: 100, Start: 6002},
		trace.Event{Rank: 1, Op: trace.OpClose, FD: 3, Start: 6003},
		trace.Event{Rank: 0, Op: trace.OpOpen, Path: shared, Flags: trace.ORdwr | trace.OCreat, Ret: 4, Start: 5000},
		trace.Event{Rank: 0, Op: trace.OpPwrite, FD: 4, Size: 100, Ret: 100, Start: 5001},
		trace.Event{Rank: 0, Op: trace.OpClose, FD: 4, Start: 5002},
	)
	m.Add(evs...)
	replayRanksAFAP(t, m, 1) // rank 0's access: ENOENT, as traced
}

// TestRemovalsWaitForOtherRanksUses: Open MPI's close of a file opened
// with MPI_MODE_DELETE_ON_CLOSE, as a ptrace capture sees it: rank 1
// opens, writes and closes the file, then its unlink fails (rank 0 had
// removed it); rank 0 creates it, writes, closes and removes it. Rank 1's
// clock puts all of its calls first, and nothing else orders the ranks.
// As fast as possible rank 0 would remove the file before rank 1, busy
// with another file first, opened it: the removal waits for rank 1's
// open, and rank 1's failed unlink for the removal, as in the traced run.
func TestRemovalsWaitForOtherRanksUses(t *testing.T) {
	m := trace.NewMemTrace()
	other, shared := m.Paths.Intern("/s/other"), m.Paths.Intern("/s/shared")
	evs := busyRank(1, other)
	evs = append(evs,
		trace.Event{Rank: 1, Op: trace.OpOpen, Path: shared, Flags: trace.ORdwr, Ret: 4, Start: 3100},
		trace.Event{Rank: 1, Op: trace.OpPwrite, FD: 4, Offset: 100, Size: 100, Ret: 100, Start: 3101},
		trace.Event{Rank: 1, Op: trace.OpClose, FD: 4, Start: 3102},
		trace.Event{Rank: 1, Op: trace.OpUnlink, Path: shared, Ret: -2, Start: 3103},
		trace.Event{Rank: 0, Op: trace.OpOpen, Path: shared, Flags: trace.ORdwr | trace.OCreat, Ret: 3, Start: 5000},
		trace.Event{Rank: 0, Op: trace.OpPwrite, FD: 3, Size: 100, Ret: 100, Start: 5001},
		trace.Event{Rank: 0, Op: trace.OpClose, FD: 3, Start: 5002},
		trace.Event{Rank: 0, Op: trace.OpUnlink, Path: shared, Start: 5003},
	)
	m.Add(evs...)
	for _, dir := range replayRanksAFAP(t, m, 1) { // rank 1's unlink: ENOENT, as traced
		if err := unix.Access(dir+"/shared", unix.F_OK); err != unix.ENOENT {
			t.Fatalf("the file outlived its removal in %s: %v", dir, err)
		}
	}
}

// TestRemovalsAgainstTheClocks: the same close as above, the other way
// round and with the clocks wrong both ways. Rank 1 (busy with another
// file first) opens the file, then removes it; rank 0 creates it, looks
// at it and fails to remove it (ENOENT). Rank 1's clock puts its open
// before rank 0's create, and rank 0's look after rank 1's removal,
// though the look succeeded: it came before the removal, and rank 0's
// failed removal after it.
func TestRemovalsAgainstTheClocks(t *testing.T) {
	m := trace.NewMemTrace()
	other, shared := m.Paths.Intern("/s/other"), m.Paths.Intern("/s/shared")
	evs := busyRank(1, other)
	evs = append(evs,
		trace.Event{Rank: 1, Op: trace.OpOpen, Path: shared, Flags: trace.ORdwr, Ret: 4, Start: 3100},
		trace.Event{Rank: 1, Op: trace.OpPwrite, FD: 4, Offset: 100, Size: 100, Ret: 100, Start: 3101},
		trace.Event{Rank: 1, Op: trace.OpClose, FD: 4, Start: 3102},
		trace.Event{Rank: 0, Op: trace.OpOpen, Path: shared, Flags: trace.ORdwr | trace.OCreat, Ret: 3, Start: 3200},
		trace.Event{Rank: 0, Op: trace.OpPwrite, FD: 3, Size: 100, Ret: 100, Start: 3201},
		trace.Event{Rank: 0, Op: trace.OpClose, FD: 3, Start: 3202},
		trace.Event{Rank: 1, Op: trace.OpUnlink, Path: shared, Start: 3300},
		trace.Event{Rank: 0, Op: trace.OpStat, Path: shared, Start: 3400},
		trace.Event{Rank: 0, Op: trace.OpUnlink, Path: shared, Ret: -2, Start: 3500},
	)
	m.Add(evs...)
	replayRanksAFAP(t, m, 1) // rank 0's unlink: ENOENT, as traced
}

// TestRemovalsBeforeTheirCreateByTheClocks: the close of
// MPI_MODE_DELETE_ON_CLOSE once more, with rank 1's clock so early that
// all of its calls — open, write, close, the removal — come before rank
// 0's create. Rank 0's own removal failed (ENOENT) after it had made and
// looked at the name: rank 1's removal, the only one, came after rank
// 0's look, and rank 0's failed removal after it.
func TestRemovalsBeforeTheirCreateByTheClocks(t *testing.T) {
	m := trace.NewMemTrace()
	shared := m.Paths.Intern("/s/shared")
	m.Add(
		trace.Event{Rank: 1, Op: trace.OpOpen, Path: shared, Flags: trace.ORdwr, Ret: 3, Start: 100},
		trace.Event{Rank: 1, Op: trace.OpPwrite, FD: 3, Offset: 100, Size: 100, Ret: 100, Start: 101},
		trace.Event{Rank: 1, Op: trace.OpClose, FD: 3, Start: 102},
		trace.Event{Rank: 1, Op: trace.OpUnlink, Path: shared, Start: 103},
		trace.Event{Rank: 0, Op: trace.OpOpen, Path: shared, Flags: trace.ORdwr | trace.OCreat, Ret: 3, Start: 200},
		trace.Event{Rank: 0, Op: trace.OpStat, Path: shared, Start: 201},
		trace.Event{Rank: 0, Op: trace.OpPwrite, FD: 3, Size: 100, Ret: 100, Start: 202},
		trace.Event{Rank: 0, Op: trace.OpClose, FD: 3, Start: 203},
		trace.Event{Rank: 0, Op: trace.OpUnlink, Path: shared, Ret: -2, Start: 204},
	)
	for _, dir := range replayRanksAFAP(t, m, 1) { // rank 0's unlink: ENOENT, as traced
		if err := unix.Access(dir+"/shared", unix.F_OK); err != unix.ENOENT {
			t.Fatalf("the file outlived its removal in %s: %v", dir, err)
		}
	}
}

// timedSink notes when each of its writes came.
type timedSink struct {
	mu     *sync.Mutex
	writes *[]time.Time
	n      *int
	paths  *trace.Paths
}

func (s timedSink) WriteEvents(evs []trace.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.writes = append(*s.writes, time.Now())
	*s.n += len(evs)
	return nil
}
func (s timedSink) Intern(p string) trace.PathID { return s.paths.Intern(p) }

// TestHoldWritesAfterTheRanks: with Output.Hold (a predicting replay) the
// ranks' events reach their sinks and the observer only once every rank
// has ended, all of them; without it they are written as the ranks go.
func TestHoldWritesAfterTheRanks(t *testing.T) {
	const n = 100
	tr := gapTrace(n, 0, 1000)
	be := &fakeBackend{delay: func(*trace.Event) time.Duration { return time.Millisecond }}
	// replay returns how many writes came before the ranks ended, of how
	// many.
	replayOnce := func(hold bool) (early, all int) {
		var mu sync.Mutex
		var writes []time.Time
		var written, observed int
		out := replay.Output{Hold: hold,
			Record:  func(uint32) trace.Sink { return timedSink{&mu, &writes, &written, trace.NewPaths()} },
			Observe: func(_ uint32, evs []trace.Event) { observed += len(evs) }}
		rp, err := replay.New(tr, replay.Options{Timing: replay.AFAP, Batch: 8})
		if err != nil {
			t.Fatal(err)
		}
		res, err := rp.Run(context.Background(), be, out)
		if err != nil {
			t.Fatal(err)
		}
		if written != n || observed != n {
			t.Fatalf("hold %v: %d events written, %d observed, want %d", hold, written, observed, n)
		}
		end := res.Epoch.Add(res.Elapsed)
		for _, w := range writes {
			if w.Before(end) {
				early++
			}
		}
		return early, len(writes)
	}
	if early, all := replayOnce(true); early > 0 {
		t.Errorf("hold: %d of %d writes before the ranks ended", early, all)
	}
	loadcheck.Retry(t, func() string {
		if early, all := replayOnce(false); early == 0 {
			return fmt.Sprintf("without hold: all %d writes after the ranks ended (%d ms of calls, batches of 8)", all, n)
		}
		return ""
	})
}

// skipBackend is fakeBackend with skips: the calls on descriptor 9 are skipped
// (as a descriptor the trace never opened).
type skipBackend struct{ fakeBackend }

func (b *skipBackend) Rank(uint32, int) (replay.Executor, error) {
	return &skipExec{fakeExec{&b.fakeBackend}}, nil
}

type skipExec struct{ fakeExec }

func (x *skipExec) Do(c *replay.Call) (int64, replay.Skip) {
	if c.Ev.FD == 9 {
		return 0, replay.SkipUnknownFD
	}
	return x.fakeExec.Do(c)
}

// TestDirectPathAgrees replays the same data calls — made, failed as in
// the trace, failed where the trace's did not, skipped, among calls the
// engine takes the long way (a marker, a communication call, a call with
// a path) — as fast as possible (the short way of batchRun) and with
// think timing (the long way): the counts, the failures, the skips and
// the recorded events agree.
func TestDirectPathAgrees(t *testing.T) {
	m := trace.NewMemTrace()
	f := m.Paths.Intern("/d/f")
	m.Add(
		trace.Event{Op: trace.OpOpen, Path: f, Flags: trace.OCreat | trace.OWronly, FD: 3, Ret: 3, Start: 1},
		trace.Event{Op: trace.OpPwrite, FD: 3, Size: 8, Ret: 8, Start: 2},
		trace.Event{Op: trace.OpWrite, FD: 9, Size: 8, Ret: 8, Start: 3},
		trace.Event{Op: trace.OpPwrite, FD: 3, Size: 8, Ret: -5, Start: 4},
		trace.Event{Op: trace.OpPread, FD: 3, Size: 4, Ret: 4, Start: 5},
		trace.Event{Op: trace.OpMPIBarrier, Start: 6},
		trace.Event{Op: trace.OpRead, FD: 3, Size: 7, Ret: 7, Path: f, Start: 7},
		trace.Event{Op: trace.OpPwrite, FD: 3, Size: 1 << 20, Ret: 1 << 20, Start: 8},
	)
	be := &skipBackend{fakeBackend{ret: func(e *trace.Event) int64 {
		if e.Op == trace.OpPread || e.Size == 1<<20 {
			return -5 // fails, where the trace's call did not
		}
		return e.Ret
	}}}
	type outcome struct {
		events, io int64
		errors     []replay.ErrorCount
		skips      []replay.SkipCount
		rec        []trace.Event
	}
	get := func(tm replay.Timing) outcome {
		res, s := run(t, m, replay.Options{Timing: tm}, be)
		o := outcome{events: res.Events, errors: res.Errors, skips: res.Skips}
		slices.SortFunc(o.errors, func(a, b replay.ErrorCount) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
		for _, e := range s.rank(0) {
			if e.Dur < 0 || e.Start < 0 {
				t.Errorf("%v: %v recorded at %d for %d ns", tm, e.Op, e.Start, e.Dur)
			}
			if e.Op.Class() == trace.ClassPOSIX || e.Op.Class() == trace.ClassMeta {
				o.io += e.Dur
			}
			e.Start, e.Dur = 0, 0
			o.rec = append(o.rec, e)
		}
		if o.io > res.PerRank[0].IOTime {
			t.Errorf("%v: the calls' time %d is more than the rank's I/O time %d", tm, o.io, res.PerRank[0].IOTime)
		}
		o.io = 0
		return o
	}
	short, long := get(replay.AFAP), get(replay.Think)
	if !reflect.DeepEqual(short, long) {
		t.Fatalf("as fast as possible:\n%+v\nthink:\n%+v", short, long)
	}
	if short.events != 8 || len(short.rec) != 7 || len(short.skips) != 1 || len(short.errors) != 3 {
		t.Fatalf("%+v", short)
	}
}

// TestMovedCountsData: the bytes a replay says it moved (its progress
// line) are those its reads and writes moved, in every timing: not the
// offset an lseek returns, nor a dup's descriptor.
func TestMovedCountsData(t *testing.T) {
	m := trace.NewMemTrace()
	m.Add(trace.Event{Op: trace.OpOpen, Path: m.Paths.Intern("/f"), FD: 3, Ret: 3, Flags: trace.OWronly | trace.OCreat, Start: 0})
	m.Add(trace.Event{Op: trace.OpWrite, FD: 3, Size: 100, Ret: 100, Offset: -1, Start: 10})
	m.Add(trace.Event{Op: trace.OpLseek, FD: 3, Offset: 1 << 30, Ret: 1 << 30, Start: 20})
	m.Add(trace.Event{Op: trace.OpDup, FD: 3, Ret: 7, Start: 30})
	m.Add(trace.Event{Op: trace.OpClose, FD: 7, Start: 40})
	m.Add(trace.Event{Op: trace.OpClose, FD: 3, Start: 50})
	for _, timing := range []replay.Timing{replay.AFAP, replay.Think} {
		be, err := posix.New(posix.Options{Target: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		rp, err := replay.New(m, replay.Options{Timing: timing})
		if err != nil {
			t.Fatal(err)
		}
		if err := be.Prepare(context.Background(), &rp.Plan().Layout); err != nil {
			t.Fatal(err)
		}
		res, err := rp.Run(context.Background(), be, newSinks().out(""))
		be.Close()
		if err != nil || res.Failures() != 0 {
			t.Fatalf("%v: %v, %d failures", timing, err, res.Failures())
		}
		if got := rp.Moved(); got != 100 {
			t.Errorf("%v: moved %d bytes, want 100", timing, got)
		}
	}
}
