package replay

import (
	"path/filepath"
	"testing"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
)

// pwrites is the trace of bench/replay: one rank opens a file and makes
// 200,000 pwrites of 4 KiB at (i mod 256) × 4 KiB.
func pwrites() *trace.MemTrace {
	m := trace.NewMemTrace()
	f := m.Paths.Intern("/x/y")
	m.Add(trace.Event{Op: trace.OpOpen, Path: f, Flags: trace.OWronly | trace.OCreat | trace.OTrunc, Ret: 3})
	evs := make([]trace.Event, 200000)
	for i := range evs {
		evs[i] = trace.Event{Op: trace.OpPwrite, FD: 3, Offset: int64(i%256) * 4096, Size: 4096, Ret: 4096}
	}
	m.Add(evs...)
	return m
}

// BenchmarkPlan plans one rank of 200,000 pwrites: the time the plan adds
// to every replay before its first call, per event.
func BenchmarkPlan(b *testing.B) {
	m := pwrites()
	b.ResetTimer()
	for range b.N {
		if _, err := makePlan(m, nil, nil, false); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/200000, "ns/event")
}

// BenchmarkPlanFile is BenchmarkPlan from a trace file, as ioreplay plans
// it: the events decoded from the file's blocks, the file opened each time.
// Sub-benchmarks read the one rank straight (as makePlan does) and through
// a Merger (as it did).
func BenchmarkPlanFile(b *testing.B) {
	name := filepath.Join(b.TempDir(), "pwrite.iot")
	w, err := format.Create(name, trace.Meta{})
	if err != nil {
		b.Fatal(err)
	}
	m := pwrites()
	src, _ := m.Rank(0)
	if _, err := trace.Copy(w.Rank(0), src); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	for _, how := range []string{"lone", "merger"} {
		b.Run(how, func(b *testing.B) {
			planLone = how == "lone"
			defer func() { planLone = true }()
			for range b.N {
				r, err := format.Open(name)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := makePlan(r, nil, nil, false); err != nil {
					b.Fatal(err)
				}
				r.Close()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/200000, "ns/event")
		})
	}
}
