package replay

import (
	"context"
	"io"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
)

type nopBackend struct{}

func (nopBackend) Prepare(context.Context, *Plan) error { return nil }
func (nopBackend) Rank(uint32, int) (Executor, error)   { return nopExec{}, nil }
func (nopBackend) Close() error                         { return nil }

// BenchmarkEngineOverhead replays 4 KiB pwrites, read from a trace file,
// through an executor that does nothing, recording them: the engine's own
// cost per call, which ioreplay adds to every call of a replay.
func BenchmarkEngineOverhead(b *testing.B) {
	for _, rec := range []bool{false, true} {
		name := "norecord"
		if rec {
			name = "record"
		}
		b.Run(name, func(b *testing.B) {
			m := trace.NewMemTrace()
			f := m.Paths.Intern("/bench/replay.dat")
			evs := make([]trace.Event, 0, b.N+2)
			evs = append(evs, trace.Event{Op: trace.OpOpen, Path: f, Flags: trace.OWronly | trace.OCreat, FD: 3, Ret: 3})
			for i := 0; i < b.N; i++ {
				evs = append(evs, trace.Event{Op: trace.OpPwrite, FD: 3, Offset: int64(i%256) * 4096, Size: 4096, Ret: 4096, Start: int64(i+1) * 1500, Dur: 1000})
			}
			m.Add(evs...)
			in := filepath.Join(b.TempDir(), "in.iot")
			w, err := format.Create(in, m.Meta())
			if err != nil {
				b.Fatal(err)
			}
			src, _ := m.Rank(0)
			trace.Copy(w.Rank(0), src)
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			t, err := format.Open(in)
			if err != nil {
				b.Fatal(err)
			}
			defer t.Close()
			rp, err := New(t, Options{Timing: AFAP})
			if err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			out := Output{}
			var rw *format.Writer
			if rec {
				rw, _ = format.NewWriter(io.Discard, trace.Meta{Ranks: 1})
				out.Record = func(r uint32) trace.Sink { return rw.Rank(r) }
			}
			b.ResetTimer()
			res, err := rp.Run(context.Background(), nopBackend{}, out)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(res.Elapsed.Nanoseconds())/float64(b.N), "loop-ns/call")
			if rw != nil {
				rw.Close()
			}
		})
	}
}
