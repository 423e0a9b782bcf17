package posix

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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

// threadCPU returns the processor time (user and system) of the calling
// thread, in ns: what a call costs itself, without the waits for a
// processor that a loaded machine adds to its wall time.
func threadCPU() int64 {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_THREAD, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkPathCalls measures what the replay adds to calls on paths, in
// /dev/shm, each sequence side by side as a program makes it (syscall:
// the bare calls, on names relative to the target's descriptor) and as
// the backend's executor replays it (replay): open+close of a file that
// exists (O_RDONLY); create+close+unlink of a new file
// (O_CREAT|O_WRONLY|O_TRUNC); stat, lstat; mkdir+rmdir; rename there and
// back. The files sit one directory deep, as in mdtest's trees. The
// replay runs with and without KeepDirs (the directory of the latest
// calls kept open), which a standalone ioreplay sets. Besides the wall
// time per sequence (ns/op) it reports the thread's processor time
// (cpu-ns/op), which stays comparable on a loaded machine.
func BenchmarkPathCalls(b *testing.B) {
	dir := benchDir(b)
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "d", "f"), []byte("data"), 0o644); err != nil {
		b.Fatal(err)
	}
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(dfd)
	exec := func(keep bool) *rankExec {
		be, err := New(Options{Target: dir, KeepDirs: keep})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { be.Close() })
		x, _ := be.Rank(0, 1)
		b.Cleanup(func() { x.Close() })
		return x.(*rankExec)
	}
	execs := []*rankExec{exec(false), exec(true)}
	var x *rankExec  // the executor of the sub-benchmark
	var failed error // the first failure of a sub-benchmark's loop
	must := func(ret int64, skip replay.Skip) {
		if (ret < 0 || skip != replay.NotSkipped) && failed == nil {
			failed = fmt.Errorf("%d (%s), skip %v", ret, trace.Errno(ret), skip)
		}
	}
	must2 := func(err error) {
		if err != nil && failed == nil {
			failed = err
		}
	}
	const oCloexec = 0x80000 // the trace's (Linux x86-64) O_CLOEXEC
	var st unix.Stat_t
	for _, c := range []struct {
		name    string
		syscall func()
		replay  func()
	}{
		{"open-existing", func() {
			fd, err := unix.Openat(dfd, "d/f", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			must2(err)
			unix.Close(fd)
		}, func() {
			must(do(x, trace.Event{Op: trace.OpOpenat, Flags: trace.ORdonly | oCloexec, Ret: 3}, "d/f", ""))
			must(do(x, trace.Event{Op: trace.OpClose, FD: 3}, "", ""))
		}},
		{"create-close-unlink", func() {
			fd, err := unix.Openat(dfd, "d/new", unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
			must2(err)
			unix.Close(fd)
			must2(unix.Unlinkat(dfd, "d/new", 0))
		}, func() {
			must(do(x, trace.Event{Op: trace.OpOpenat, Flags: trace.OWronly | trace.OCreat | trace.OTrunc | oCloexec, Mode: 0o644, Ret: 3}, "d/new", ""))
			must(do(x, trace.Event{Op: trace.OpClose, FD: 3}, "", ""))
			must(do(x, trace.Event{Op: trace.OpUnlink}, "d/new", ""))
		}},
		{"stat", func() {
			must2(unix.Fstatat(dfd, "d/f", &st, 0))
		}, func() {
			must(do(x, trace.Event{Op: trace.OpStat}, "d/f", ""))
		}},
		{"lstat", func() {
			must2(unix.Fstatat(dfd, "d/f", &st, unix.AT_SYMLINK_NOFOLLOW))
		}, func() {
			must(do(x, trace.Event{Op: trace.OpLstat}, "d/f", ""))
		}},
		{"mkdir-rmdir", func() {
			must2(unix.Mkdirat(dfd, "d/m", 0o755))
			must2(unix.Unlinkat(dfd, "d/m", unix.AT_REMOVEDIR))
		}, func() {
			must(do(x, trace.Event{Op: trace.OpMkdir, Mode: 0o755}, "d/m", ""))
			must(do(x, trace.Event{Op: trace.OpRmdir}, "d/m", ""))
		}},
		{"rename-back", func() {
			must2(unix.Renameat(dfd, "d/f", dfd, "d/g"))
			must2(unix.Renameat(dfd, "d/g", dfd, "d/f"))
		}, func() {
			must(do(x, trace.Event{Op: trace.OpRename}, "d/f", "d/g"))
			must(do(x, trace.Event{Op: trace.OpRename}, "d/g", "d/f"))
		}},
	} {
		for _, side := range []struct {
			name string
			f    func()
			x    *rankExec
		}{{"syscall", c.syscall, nil}, {"replay", c.replay, execs[0]}, {"replay-keepdirs", c.replay, execs[1]}} {
			b.Run(c.name+"/"+side.name, func(b *testing.B) {
				x = side.x
				failed = nil
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				cpu0 := threadCPU()
				for range b.N {
					side.f()
				}
				b.ReportMetric(float64(threadCPU()-cpu0)/float64(b.N), "cpu-ns/op")
				if failed != nil {
					b.Fatal(failed)
				}
			})
		}
	}
}
