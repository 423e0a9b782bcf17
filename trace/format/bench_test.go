package format

import (
	"bytes"
	"errors"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/tracegen"
)

// workloads of issue 2's benchmarks: (a) IOR-like, (b) two-phase strided
// dump, (c) uniformly random offsets and sizes.
// scale multiplies the calls of a workload; size is measured at scale 1,
// speed at a scale where a run holds about a million events, as a long
// capture does (the writer's buffers are warm, blocks are full).
var workloads = []struct {
	name string
	mk   func(scale int) *tracegen.Trace
}{
	{"ior", func(s int) *tracegen.Trace { return tracegen.IOR(4, 2048*s, 1) }},
	{"twophase", func(s int) *tracegen.Trace { return tracegen.TwoPhase(8, 4*s, 6, 64, 512<<10, 1) }},
	{"random", func(s int) *tracegen.Trace { return tracegen.Random(4, 4096*s, 1) }},
}

const speedScale = 64

// materialise reads a generated trace into memory, per rank.
func materialise(tb testing.TB, t trace.Trace) (map[uint32][]trace.Event, int) {
	out := map[uint32][]trace.Event{}
	n := 0
	for _, r := range t.Ranks() {
		src, err := t.Rank(r)
		if err != nil {
			tb.Fatal(err)
		}
		evs, err := trace.ReadAll(src)
		if err != nil {
			tb.Fatal(err)
		}
		out[r] = evs
		n += len(evs)
	}
	return out, n
}

// cpuTime is the CPU time (user + system) this process has used. With
// GOMAXPROCS=1 the events per CPU-second are what one core does, and hardly
// change when other processes load the machine, unlike wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// encode writes a generated trace. The writer's path table is filled in
// the generator's id order first, so events need no translation.
func encode(tb testing.TB, t *tracegen.Trace, byRank map[uint32][]trace.Event, buf *bytes.Buffer) {
	w, err := NewWriter(buf, t.Meta())
	if err != nil {
		tb.Fatal(err)
	}
	for id := 1; id < t.Paths().Len(); id++ {
		if got := w.Intern(t.Path(trace.PathID(id))); got != trace.PathID(id) {
			tb.Fatalf("path id %d became %d", id, got)
		}
	}
	for _, r := range t.Ranks() {
		if err := w.Rank(r).WriteEvents(byRank[r]); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
}

func decodeAll(tb testing.TB, data []byte) int {
	r, err := NewReader(bytes.NewReader(data), int64(len(data)), "bench", ReadOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	buf := make([]trace.Event, trace.BatchSize)
	n := 0
	for _, rk := range r.Ranks() {
		src, _ := r.Rank(rk)
		for {
			k, err := src.ReadEvents(buf)
			n += k
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				tb.Fatal(err)
			}
		}
	}
	r.Close()
	return n
}

func BenchmarkEncode(b *testing.B) {
	for _, wl := range workloads {
		b.Run(wl.name, func(b *testing.B) {
			t := wl.mk(speedScale)
			byRank, n := materialise(b, t)
			var buf bytes.Buffer
			b.ResetTimer()
			cpu := cpuTime()
			for i := 0; i < b.N; i++ {
				buf.Reset()
				encode(b, t, byRank, &buf)
			}
			b.StopTimer()
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mevents/s")
			b.ReportMetric(float64(n)*float64(b.N)/(cpuTime()-cpu).Seconds()/1e6, "Mevents/cpu-s")
		})
	}
}

// BenchmarkSize reports the bytes per event of each workload at its
// specified size: (a) 4 ranks × 2,048 writes then reads, (b) 8 ranks, 4
// dumps of 6 arrays of 64 × 512 KiB chunks per rank, (c) 4 ranks × 4,096
// random calls.
func BenchmarkSize(b *testing.B) {
	for _, wl := range workloads {
		b.Run(wl.name, func(b *testing.B) {
			t := wl.mk(1)
			byRank, n := materialise(b, t)
			var buf bytes.Buffer
			for i := 0; i < b.N; i++ {
				buf.Reset()
				encode(b, t, byRank, &buf)
			}
			b.ReportMetric(float64(buf.Len())/float64(n), "bytes/event")
			b.ReportMetric(float64(n), "events")
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, wl := range workloads {
		b.Run(wl.name, func(b *testing.B) {
			t := wl.mk(speedScale)
			byRank, n := materialise(b, t)
			var buf bytes.Buffer
			encode(b, t, byRank, &buf)
			b.ResetTimer()
			cpu := cpuTime()
			for i := 0; i < b.N; i++ {
				if got := decodeAll(b, buf.Bytes()); got != n {
					b.Fatalf("decoded %d events, want %d", got, n)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mevents/s")
			b.ReportMetric(float64(n)*float64(b.N)/(cpuTime()-cpu).Seconds()/1e6, "Mevents/cpu-s")
		})
	}
}
