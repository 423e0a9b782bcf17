package posix

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
	"golang.org/x/sys/unix"
)

// benchDir is where the overhead benchmarks write: /dev/shm when it
// exists (the benchmark of docs/BENCHMARKS.md), else a temporary
// directory.
func benchDir(b *testing.B) string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		d, err := os.MkdirTemp("/dev/shm", "ioreplay-bench-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	return b.TempDir()
}

// pwriteTrace is one rank opening a file and writing n × 4 KiB at
// (i mod 256) × 4 KiB, as bench/replay/gentrace pwrite does.
func pwriteTrace(n int) *trace.MemTrace {
	m := trace.NewMemTrace()
	f := m.Paths.Intern("/bench/replay.dat")
	m.Add(trace.Event{Op: trace.OpOpen, Path: f, Flags: trace.OWronly | trace.OCreat | trace.OTrunc, Mode: 0o644, FD: 3, Ret: 3})
	for i := 0; i < n; i++ {
		m.Add(trace.Event{Op: trace.OpPwrite, FD: 3, Offset: int64(i%256) * 4096, Size: 4096, Ret: 4096, Start: int64(i+1) * 1500, Dur: 1000})
	}
	m.Add(trace.Event{Op: trace.OpClose, FD: 3, Start: int64(n+1) * 1500})
	return m
}

// BenchmarkPwrite4K measures one 4 KiB pwrite to a file in /dev/shm,
// per call: as a bare system call (hot: one buffer; pattern: the replay's
// data; timed: and two clock reads), through the backend's executor, and
// through the whole engine as ioreplay --timing afap runs it (reading the
// trace from a file, recording to a file).
func BenchmarkPwrite4K(b *testing.B) {
	dir := benchDir(b)
	pat := replay.NewPattern()
	open := func(b *testing.B) int {
		fd, err := unix.Open(filepath.Join(dir, "raw.dat"), unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	b.Run("syscall-hot", func(b *testing.B) {
		fd := open(b)
		buf := make([]byte, 4096)
		for i := range b.N {
			unix.Pwrite(fd, buf, int64(i%256)*4096)
		}
	})
	b.Run("syscall-pattern", func(b *testing.B) {
		fd := open(b)
		cur := pat.Cursor(0)
		for i := range b.N {
			unix.Pwrite(fd, cur.Next(4096, 1), int64(i%256)*4096)
		}
	})
	b.Run("syscall-pattern-timed", func(b *testing.B) {
		fd := open(b)
		cur := pat.Cursor(0)
		base := time.Now()
		var sum int64
		for i := range b.N {
			t0 := time.Since(base)
			unix.Pwrite(fd, cur.Next(4096, 1), int64(i%256)*4096)
			sum += int64(time.Since(base) - t0)
		}
		_ = sum
	})
	b.Run("executor", func(b *testing.B) {
		be, err := New(Options{Target: dir})
		if err != nil {
			b.Fatal(err)
		}
		defer be.Close()
		x, _ := be.Rank(0, 1)
		defer x.Close()
		ev := trace.Event{Op: trace.OpOpen, Flags: trace.OWronly | trace.OCreat | trace.OTrunc, Ret: 3}
		c := &replay.Call{Ev: &ev, Path: "exec.dat"}
		x.Do(c)
		evs := make([]trace.Event, 256)
		for i := range evs {
			evs[i] = trace.Event{Op: trace.OpPwrite, FD: 3, Offset: int64(i) * 4096, Size: 4096, Ret: 4096}
		}
		b.ResetTimer()
		for i := range b.N {
			c.Ev = &evs[i%256]
			x.Do(c)
		}
	})
	for _, rec := range []bool{false, true} {
		name := "engine"
		if rec {
			name = "engine-record"
		}
		b.Run(name, func(b *testing.B) {
			in := filepath.Join(dir, "in.iot")
			m := pwriteTrace(b.N)
			w, err := format.Create(in, m.Meta())
			if err != nil {
				b.Fatal(err)
			}
			src, _ := m.Rank(0)
			if _, err := trace.Copy(w.Rank(0), src); err != nil {
				b.Fatal(err)
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			t, err := format.Open(in)
			if err != nil {
				b.Fatal(err)
			}
			defer t.Close()
			rp, err := replay.New(t, replay.Options{Timing: replay.AFAP})
			if err != nil {
				b.Fatal(err)
			}
			be, err := New(Options{Target: dir})
			if err != nil {
				b.Fatal(err)
			}
			defer be.Close()
			if err := be.Prepare(context.Background(), &rp.Plan().Layout); err != nil {
				b.Fatal(err)
			}
			out := replay.Output{Target: dir}
			var rw *format.Writer
			if rec {
				rw, err = format.Create(filepath.Join(dir, "rec.iot"), trace.Meta{Ranks: 1})
				if err != nil {
					b.Fatal(err)
				}
				out.Record = func(r uint32) trace.Sink { return rw.Rank(r) }
			}
			b.ResetTimer()
			res, err := rp.Run(context.Background(), be, out)
			b.StopTimer()
			if err != nil || res.Failures() != 0 {
				b.Fatal(err, res.Errors)
			}
			b.ReportMetric(float64(res.Elapsed.Nanoseconds())/float64(b.N), "loop-ns/call")
			if rw != nil {
				rw.Close()
			}
		})
	}
}
