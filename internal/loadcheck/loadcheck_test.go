package loadcheck

import (
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
