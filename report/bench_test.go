package report

import (
	"errors"
	"io"
	"testing"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/tracegen"
)

// randomTrace is tracegen's random access pattern: preads and pwrites of
// 256 distinct sizes with measured durations.
func randomTrace(ranks, calls int) trace.Trace { return tracegen.Random(ranks, calls, 1) }

// loopTrace serves the first n events of each rank of a generated trace
// reps times over, so that a benchmark measures Compute and not the
// generator, without holding a million events.
type loopTrace struct {
	*trace.MemTrace
	reps int
}

func newLoopTrace(t trace.Trace, n, reps int) *loopTrace {
	m := trace.NewMemTrace()
	m.Paths = trace.NewPaths()
	buf := make([]trace.Event, n)
	for _, r := range t.Ranks() {
		src, _ := t.Rank(r)
		got := 0
		for got < n {
			k, err := src.ReadEvents(buf[got:])
			got += k
			if errors.Is(err, io.EOF) {
				break
			}
		}
		for _, e := range buf[:got] {
			e.Path = m.Paths.Intern(t.Path(e.Path))
			m.Add(e)
		}
	}
	return &loopTrace{m, reps}
}

func (l *loopTrace) Rank(r uint32) (trace.Source, error) {
	return &loopSource{evs: l.Events[r], reps: l.reps}, nil
}

type loopSource struct {
	evs       []trace.Event
	pos, reps int
}

func (s *loopSource) ReadEvents(evs []trace.Event) (int, error) {
	if s.pos == len(s.evs) {
		s.pos, s.reps = 0, s.reps-1
	}
	if s.reps <= 0 || len(s.evs) == 0 {
		return 0, io.EOF
	}
	n := copy(evs, s.evs[s.pos:])
	s.pos += n
	return n, nil
}

func (s *loopSource) Path(id trace.PathID) string { return "" }

// BenchmarkCompute runs Compute over about a million events (8 ranks ×
// 16 × 8,192 events of generated workloads) and reports events per
// second.
func BenchmarkCompute(b *testing.B) {
	for _, bc := range []struct {
		name string
		tr   trace.Trace
	}{
		{"ior", tracegen.IOR(8, 10_000, 1)},
		{"random", tracegen.Random(8, 10_000, 1)},
		{"twophase", tracegen.TwoPhase(8, 10, 5, 2_000, 64<<10, 1)},
	} {
		for _, o := range []Options{{}, {Detail: true}, {Access: true}} {
			name := bc.name
			if o.Detail {
				name += "/detail"
			}
			if o.Access {
				name += "/access" // access patterns (stats --by file, HTML)
			}
			tr := newLoopTrace(bc.tr, 8192, 16)
			b.Run(name, func(b *testing.B) {
				var events int64
				for b.Loop() {
					s, err := Compute(tr, o)
					if err != nil {
						b.Fatal(err)
					}
					events += s.Events
				}
				b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
			})
		}
	}
}
