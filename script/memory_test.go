package script

import (
	"runtime"
	"testing"
	"time"

	"github.com/iotrace/iotrace/trace"
)

// TestBillionIterations expands loops of a billion iterations per rank and
// reads the first millions of events: the expansion is made on demand, so
// the heap stays small, and Meta and Ranks answer at once.
func TestBillionIterations(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		read      int
	}{
		{"independent", `
repeat 1000000000 as i {
    write "out.$rank" at i * 4KiB size 4KiB
}
`, 3_000_000},
		// A barrier per iteration: the stream runs the other ranks along.
		{"collective", `
repeat 1000000000 as i {
    write "out.$rank" at i * 4KiB size 4KiB
    barrier
}
`, 1_000_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() {
				tc.read /= 10
			}
			p := mustCompile(t, tc.src)
			start := time.Now()
			x, err := Expand(p, Config{Ranks: 4})
			if err != nil {
				t.Fatal(err)
			}
			if len(x.Ranks()) != 4 || x.Meta().Ranks != 4 {
				t.Fatalf("ranks %v, meta %+v", x.Ranks(), x.Meta())
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("Expand, Ranks and Meta took %v", d)
			}
			src, err := x.Rank(0)
			if err != nil {
				t.Fatal(err)
			}
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			base := ms.HeapInuse
			buf := make([]trace.Event, trace.BatchSize)
			var n, peak uint64
			var last trace.Event
			for n < uint64(tc.read) {
				k, err := src.ReadEvents(buf)
				if err != nil {
					t.Fatal(err)
				}
				n += uint64(k)
				last = buf[k-1]
				if n%(1<<18) < uint64(k) {
					runtime.ReadMemStats(&ms)
					peak = max(peak, ms.HeapInuse)
				}
			}
			if peak > base+8<<20 {
				t.Errorf("heap grew from %d to %d bytes over %d events", base, peak, n)
			}
			if last.Rank != 0 || last.Start == 0 {
				t.Errorf("last event %+v", last)
			}
			t.Logf("%d events in %v, heap in use %d → %d KiB", n, time.Since(start).Round(time.Millisecond), base>>10, peak>>10)
		})
	}
}
