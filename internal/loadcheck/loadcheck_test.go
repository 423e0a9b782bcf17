package loadcheck

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestOverloadSeen keeps more threads busy than there are processors:
// tasks then wait for a processor, and the load says so. Without any
// stall counter the load is unknown and never overloaded.
func TestOverloadSeen(t *testing.T) {
	s := Now()
	if s.source == "" {
		if Since(s).Overloaded() {
			t.Fatal("overloaded without a stall counter")
		}
		t.Skip("no /proc/pressure/cpu nor schedstat: load unknown")
	}
	n := 3 * runtime.NumCPU()
	prev := runtime.GOMAXPROCS(n)
	defer runtime.GOMAXPROCS(prev)
	var wg sync.WaitGroup
	stop := time.Now().Add(300 * time.Millisecond)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			for time.Now().Before(stop) {
			}
		}()
	}
	wg.Wait()
	l := Since(s)
	if !l.Overloaded() {
		t.Fatalf("%d busy threads on %d processors: %v, not overloaded", n, runtime.NumCPU(), l)
	}
	t.Logf("%v", l)
}

// fakeTB records what Retry says and whether it failed the test.
type fakeTB struct {
	testing.TB
	logs   []string
	failed string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Logf(format string, args ...any) {
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
}

// TestRetry: a bound met passes at once; a bound missed on a machine that
// was not overloaded fails at once; missed on an overloaded machine it
// is tried again, and met then passes; missed on every try, each on an
// overloaded machine, it is logged as not judged, and does not fail.
func TestRetry(t *testing.T) {
	busy := Load{Wall: time.Second, Stall: time.Second, Source: "test"}
	idle := Load{Wall: time.Second, Source: "test"}
	for _, c := range []struct {
		name   string
		misses int    // tries that miss the bound before one meets it
		loads  []Load // the load of each try
		tries  int
		fails  bool
		logs   int
	}{
		{"met", 0, []Load{idle}, 1, false, 0},
		{"missed, idle", Tries, []Load{idle}, 1, true, 0},
		{"missed once, busy", 1, []Load{busy, idle}, 2, false, 1},
		{"missed, busy then idle", Tries, []Load{busy, idle}, 2, true, 1},
		{"missed, always busy", Tries, []Load{busy, busy, busy}, Tries, false, Tries},
	} {
		f := &fakeTB{}
		tries := 0
		retry(f, func() string {
			tries++
			if tries <= c.misses {
				return "too slow"
			}
			return ""
		}, func() func() Load {
			l := c.loads[min(tries, len(c.loads)-1)]
			return func() Load { return l }
		})
		if tries != c.tries || (f.failed != "") != c.fails || len(f.logs) != c.logs {
			t.Errorf("%s: %d tries, failed %q, logs %q; want %d tries, failed %v, %d logs", c.name, tries, f.failed, f.logs, c.tries, c.fails, c.logs)
		}
	}
}
