package replay

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/target"
)

// slowBackend's executors count the calls in Do at once, each taking a
// little time, as a blocking system call holds a thread.
type slowBackend struct{ now, most, calls atomic.Int64 }

func (b *slowBackend) Prepare(context.Context, *target.Layout) error { return nil }
func (b *slowBackend) Rank(uint32, int) (Executor, error)            { return slowExec{b}, nil }
func (b *slowBackend) Close() error                                  { return nil }

type slowExec struct{ b *slowBackend }

func (e slowExec) Do(c *Call) (int64, Skip) {
	n := e.b.now.Add(1)
	for {
		m := e.b.most.Load()
		if n <= m || e.b.most.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(100 * time.Microsecond)
	e.b.now.Add(-1)
	e.b.calls.Add(1)
	return c.Ev.Ret, 0
}
func (e slowExec) Close() error { return nil }

// TestCallsBoundedByThreads: a process replaying more ranks than it has
// threads for (memlimit.Threads: a blocking call holds one; past the
// limits, the runtime aborts) lets that many calls run at once, and every
// call still runs; with threads enough, the ranks are not held back.
func TestCallsBoundedByThreads(t *testing.T) {
	const ranks, calls = 64, 20
	m := trace.NewMemTrace()
	for r := range uint32(ranks) {
		for i := range int64(calls) {
			m.Add(trace.Event{Rank: r, Op: trace.OpFsync, FD: 0, Start: i * 1000, Dur: 100})
		}
	}
	defer func(f func() int) { threadBudget = f }(threadBudget)
	for _, budget := range []int{3, 1000} {
		threadBudget = func() int { return budget }
		rp, err := New(m, Options{Timing: AFAP})
		if err != nil {
			t.Fatal(err)
		}
		b := &slowBackend{}
		if _, err := rp.Run(context.Background(), b, Output{Target: t.TempDir()}); err != nil {
			t.Fatal(err)
		}
		if got := b.calls.Load(); got != ranks*calls {
			t.Fatalf("budget %d: %d calls made, want %d", budget, got, ranks*calls)
		}
		most := b.most.Load()
		switch {
		case budget < ranks && most > int64(budget):
			t.Fatalf("budget %d: %d calls at once", budget, most)
		case budget >= ranks && most <= 3:
			t.Fatalf("budget %d: never more than %d calls at once: the ranks were held back", budget, most)
		}
	}
}
