package replay

import (
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// BenchmarkPlan plans one rank of 200,000 pwrites: the time the plan adds
// to every replay before its first call, per event.
func BenchmarkPlan(b *testing.B) {
	m := trace.NewMemTrace()
	f := m.Paths.Intern("/x/y")
	m.Add(trace.Event{Op: trace.OpOpen, Path: f, Flags: trace.OWronly | trace.OCreat | trace.OTrunc, Ret: 3})
	evs := make([]trace.Event, 200000)
	for i := range evs {
		evs[i] = trace.Event{Op: trace.OpPwrite, FD: 3, Offset: int64(i%256) * 4096, Size: 4096, Ret: 4096}
	}
	m.Add(evs...)
	b.ResetTimer()
	for range b.N {
		if _, err := makePlan(m, nil, nil, false); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(evs)), "ns/event")
}
