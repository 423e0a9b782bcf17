package script_test

import (
	"testing"

	"github.com/iotrace/iotrace/samples"
	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/trace"
)

// barrierScript has ranks that meet often: a barrier every few writes and
// a time-driven loop, the two things every rank's stream must agree on
// with the other ranks.
const barrierScript = `
repeat 200 as i {
    write "f.$rank" at i * 4KiB size 4KiB
    barrier
}
repeat for 20ms {
    write "g.$rank" size 1KiB
    allreduce 8
}
`

// BenchmarkExpandAllRanks expands every rank of a script, one stream after
// the other, as iotrace stats reads a script: ns/event is the cost of an
// event with the ranks' agreement on collective calls and time-driven
// loops included.
func BenchmarkExpandAllRanks(b *testing.B) {
	for _, c := range []struct {
		name   string
		prog   func(b *testing.B) *script.Program
		ranks  int
		params map[string]string
	}{
		{"barrier-64", func(b *testing.B) *script.Program {
			p, err := script.Compile("barrier.iop", []byte(barrierScript))
			if err != nil {
				b.Fatal(err)
			}
			return p
		}, 64, nil},
		{"parabench-listing3-16", sample("parabench-listing3"), 16, map[string]string{"fine": "2048", "coarse": "4"}},
		{"beffio-8", sample("beffio"), 8, map[string]string{"T": "2s"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			p := c.prog(b)
			var events int64
			buf := make([]trace.Event, trace.BatchSize)
			for b.Loop() {
				x, err := script.Expand(p, script.Config{Ranks: c.ranks, Params: c.params})
				if err != nil {
					b.Fatal(err)
				}
				events = 0
				for _, r := range x.Ranks() {
					s, err := x.Rank(r)
					if err != nil {
						b.Fatal(err)
					}
					for {
						n, err := s.ReadEvents(buf)
						events += int64(n)
						if err != nil {
							break
						}
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(events), "ns/event")
			b.ReportMetric(float64(events), "events")
		})
	}
}

func sample(name string) func(b *testing.B) *script.Program {
	return func(b *testing.B) *script.Program {
		s, ok := samples.Get(name)
		if !ok {
			b.Fatalf("no sample %s", name)
		}
		p, err := s.Compile()
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
}
