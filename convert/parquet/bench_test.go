package parquet

import (
	"io"
	"testing"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
	"github.com/iotrace/iotrace/trace/tracegen"
)

// countingWriter counts the bytes written.
type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// benchTrace is a million-event trace held in memory (so that the
// benchmarks time the writers, not the generator).
func benchTrace(b *testing.B, kind string) *memTrace {
	b.Helper()
	g := tracegen.IOR(4, 125_000, 1)
	if kind == "random" {
		g = tracegen.Random(4, 250_000, 1)
	}
	m := &memTrace{meta: g.Meta(), paths: g.Paths(), evs: map[uint32][]trace.Event{}}
	for _, r := range g.Ranks() {
		src, _ := g.Rank(r)
		evs, err := trace.ReadAll(src)
		if err != nil {
			b.Fatal(err)
		}
		m.evs[r] = evs
		m.ranks = append(m.ranks, r)
		m.n += len(evs)
	}
	return m
}

type memTrace struct {
	meta  trace.Meta
	paths *trace.Paths
	ranks []uint32
	evs   map[uint32][]trace.Event
	n     int
}

func (m *memTrace) Meta() trace.Meta            { return m.meta }
func (m *memTrace) Ranks() []uint32             { return m.ranks }
func (m *memTrace) Path(id trace.PathID) string { return m.paths.Lookup(id) }
func (m *memTrace) Close() error                { return nil }
func (m *memTrace) Rank(r uint32) (trace.Source, error) {
	return &memSource{evs: m.evs[r], paths: m.paths}, nil
}

type memSource struct {
	evs   []trace.Event
	paths *trace.Paths
}

func (s *memSource) ReadEvents(evs []trace.Event) (int, error) {
	if len(s.evs) == 0 {
		return 0, io.EOF
	}
	n := copy(evs, s.evs)
	s.evs = s.evs[n:]
	return n, nil
}
func (s *memSource) Path(id trace.PathID) string { return s.paths.Lookup(id) }

// BenchmarkWrite writes a million events (IOR-like: every rank writes and
// reads its file sequentially; random: preads and pwrites at random
// offsets of a shared file) as Parquet and as iotrace's binary trace, side
// by side; bytes/event is the file's size per event.
func BenchmarkWrite(b *testing.B) {
	for _, kind := range []string{"ior", "random"} {
		tr := benchTrace(b, kind)
		b.Run(kind+"/parquet", func(b *testing.B) {
			var size int64
			for range b.N {
				var w countingWriter
				if _, err := WriteTrace(&w, tr); err != nil {
					b.Fatal(err)
				}
				size = w.n
			}
			report(b, size, tr.n)
		})
		b.Run(kind+"/binary", func(b *testing.B) {
			var size int64
			for range b.N {
				var w countingWriter
				fw, err := format.NewWriter(&w, tr.Meta())
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range tr.Ranks() {
					src, _ := tr.Rank(r)
					if _, err := trace.Copy(fw.Rank(r), src); err != nil {
						b.Fatal(err)
					}
				}
				if err := fw.Close(); err != nil {
					b.Fatal(err)
				}
				size = w.n
			}
			report(b, size, tr.n)
		})
	}
}

func report(b *testing.B, size int64, n int) {
	b.ReportMetric(float64(size)/float64(n), "bytes/event")
	b.ReportMetric(float64(size), "file-bytes")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/event")
}
