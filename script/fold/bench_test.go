package fold

import (
	"github.com/iotrace/iotrace/trace"
	"testing"

	"github.com/iotrace/iotrace/trace/tracegen"
)

// BenchmarkConvert folds an IOR-like trace of 4 ranks × 2 × calls
// events (write then read back 4 KiB blocks, with measured timing jitter);
// b.N conversions. ns/op divided by the events is the cost per event.
func BenchmarkConvertIOR(b *testing.B) {
	const ranks, calls = 4, 250_000
	tr := tracegen.IOR(ranks, calls, 1)
	events := float64(ranks * (2*calls + 4))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Convert(tr, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/events, "ns/event")
}

func BenchmarkConvertTwoPhase(b *testing.B) {
	tr := tracegen.TwoPhase(8, 8, 6, 1024, 512<<10, 1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Convert(tr, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadIOR is the cost of generating the trace BenchmarkConvertIOR
// reads, to subtract.
func BenchmarkReadIOR(b *testing.B) {
	tr := tracegen.IOR(4, 250_000, 1)
	buf := make([]trace.Event, trace.BatchSize)
	for i := 0; i < b.N; i++ {
		for _, r := range tr.Ranks() {
			s, _ := tr.Rank(r)
			for {
				n, err := s.ReadEvents(buf)
				if n == 0 || err != nil {
					break
				}
			}
		}
	}
}
