package replay_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/replay/posix"
	"github.com/iotrace/iotrace/trace"
)

// perCall is a backend whose executors make every call through Do: it
// hides a RunExecutor, so the engine takes its per-call way.
type perCall struct{ replay.Backend }

func (b perCall) Rank(r uint32, n int) (replay.Executor, error) {
	x, err := b.Backend.Rank(r, n)
	if err != nil {
		return nil, err
	}
	if _, ok := x.(replay.RunExecutor); !ok {
		return nil, fmt.Errorf("the POSIX executor makes no runs")
	}
	return struct{ replay.Executor }{x}, nil
}

// runsTrace is a rank's calls that end runs in every way the engine and
// the POSIX executor know (RunExecutor): a call on a descriptor never
// opened and on one the replay skipped (a device), a call inside an
// MPI-IO call, one of another thread, calls that fail as the trace's did
// and as it did not, calls at the file position and at offsets, a path
// new to the replay's trace, a call that is not a read or write, among
// runs long enough to span batches. For a strict replay, without the
// skips (each would end it).
func runsTrace(strict bool) *trace.MemTrace {
	m := trace.NewMemTrace()
	f, g, ro, null := m.Paths.Intern("/d/f"), m.Paths.Intern("/d/g"), m.Paths.Intern("/d/ro"), m.Paths.Intern("/dev/null")
	var t int64
	add := func(e trace.Event) {
		t += 10
		e.Start, e.Dur = t, 5
		m.Add(e)
	}
	pw := func(fd int32, path trace.PathID, n int, ret int64) {
		for i := range n {
			add(trace.Event{Op: trace.OpPwrite, FD: fd, Path: path, Size: 4096, Offset: int64(i%7) * 4096, Ret: ret})
		}
	}
	add(trace.Event{Op: trace.OpOpen, Path: f, Flags: trace.OCreat | trace.ORdwr, FD: 3, Ret: 3})
	add(trace.Event{Op: trace.OpOpen, Path: ro, Flags: trace.OCreat | trace.ORdonly, FD: 4, Ret: 4})
	if !strict {
		add(trace.Event{Op: trace.OpOpen, Path: null, Flags: trace.OWronly, FD: 5, Ret: 5})
	}
	pw(3, f, 5, 4096)
	add(trace.Event{Op: trace.OpWrite, FD: 3, Size: 100, Offset: -1, Ret: 100})
	add(trace.Event{Op: trace.OpWrite, FD: 3, Size: 100, Offset: -1, Ret: 100})
	add(trace.Event{Op: trace.OpPread, FD: 3, Path: f, Size: 4096, Offset: 0, Ret: 4096})
	pw(3, 0, 3, 4096)
	if !strict {
		add(trace.Event{Op: trace.OpWrite, FD: 9, Size: 8, Offset: -1, Ret: 8}) // never opened
		pw(3, f, 2, 4096)
		add(trace.Event{Op: trace.OpWrite, FD: 5, Path: null, Size: 8, Offset: -1, Ret: 8}) // a device: skipped
		add(trace.Event{Op: trace.OpWrite, FD: 5, Path: null, Size: 8, Offset: -1, Ret: 8})
	}
	pw(4, ro, 2, -9) // fails as the trace's did
	pw(3, f, 2, 4096)
	pw(4, ro, 1, 4096) // read-only: fails where the trace's did not (a strict replay ends)
	pw(3, f, 2, 4096)
	add(trace.Event{Op: trace.OpPwrite, FD: 3, Size: 8, Offset: 0, Ret: 8, Flags: trace.InMPIIO})
	pw(3, f, 1, 4096)
	add(trace.Event{Op: trace.OpPwrite, FD: 3, Path: g, Size: 64, Offset: 0, Ret: 64})   // a path new to the record
	pw(3, f, 1500, 4000)                                                                 // the trace's calls wrote less
	add(trace.Event{Op: trace.OpPwrite, FD: 3, Thread: 7, Size: 64, Offset: 0, Ret: 64}) // another thread
	add(trace.Event{Op: trace.OpLseek, FD: 3, Offset: 0, Ret: 0})
	pw(3, f, 1500, 4096)
	add(trace.Event{Op: trace.OpClose, FD: 3})
	pw(3, f, 3, 4096) // closed
	return m
}

// TestRunsAgree replays runsTrace as fast as possible through the POSIX
// backend twice, once in runs (RunExecutor) and once a call at a time,
// with and without Strict: the counts, the failures, the skips, the bytes
// moved, the recorded events (but their times), the error that ends a
// strict replay and the files in the target agree.
func TestRunsAgree(t *testing.T) {
	type outcome struct {
		events, moved int64
		err           string
		errors        []replay.ErrorCount
		skips         []replay.SkipCount
		rec           []trace.Event
		paths         []string
		files         map[string]string
	}
	get := func(m *trace.MemTrace, strict, runs bool) outcome {
		dir := t.TempDir()
		be, err := posix.New(posix.Options{Target: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer be.Close()
		var b replay.Backend = be
		if !runs {
			b = perCall{be}
		}
		rp, res, s, err := tryRun(t, m, replay.Options{Timing: replay.AFAP, Strict: strict, Batch: 1024}, b)
		var o outcome
		if err != nil {
			o.err = err.Error()
		}
		if res != nil {
			o.events, o.errors, o.skips = res.Events, res.Errors, res.Skips
		}
		o.moved = rp.Moved()
		slices.SortFunc(o.errors, func(a, b replay.ErrorCount) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
		for i, e := range s.rank(0) {
			if e.Dur < 0 || e.Start < 0 || i > 0 && e.Start < s.rank(0)[i-1].Start+s.rank(0)[i-1].Dur {
				t.Errorf("runs %v: %v recorded at %d for %d ns", runs, e.Op, e.Start, e.Dur)
			}
			e.Start, e.Dur = 0, 0
			o.rec = append(o.rec, e)
			if e.Path != 0 {
				o.paths = append(o.paths, s.paths.Lookup(e.Path))
			}
		}
		o.files = map[string]string{}
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b, _ := os.ReadFile(p)
				o.files[strings.TrimPrefix(p, dir)] = fmt.Sprintf("%d bytes, %x", len(b), b[:min(len(b), 64)])
			}
			return nil
		})
		return o
	}
	for _, strict := range []bool{false, true} {
		m := runsTrace(strict)
		runs, calls := get(m, strict, true), get(m, strict, false)
		if !reflect.DeepEqual(runs, calls) {
			for i := range min(len(runs.rec), len(calls.rec)) {
				if runs.rec[i] != calls.rec[i] {
					t.Errorf("strict %v: recorded event %d: %+v in runs, %+v a call at a time", strict, i, runs.rec[i], calls.rec[i])
					break
				}
			}
			runs.rec, calls.rec, runs.paths, calls.paths = runs.rec[:0], calls.rec[:0], nil, nil
			t.Fatalf("strict %v: in runs:\n%+v\na call at a time:\n%+v", strict, runs, calls)
		}
		t.Logf("strict %v: %d events, %d recorded, %d errors, %d skips, %q", strict, runs.events, len(runs.rec), len(runs.errors), len(runs.skips), runs.err)
		if strict {
			if !strings.Contains(runs.err, "pwrite fd 4") || runs.events >= int64(len(m.Events[0])) || len(runs.rec) < 10 {
				t.Fatalf("strict: no error, %d events", runs.events)
			}
			continue
		}
		if runs.err != "" || len(runs.errors) != 2 || len(runs.skips) < 3 || runs.events != int64(len(m.Events[0])) {
			runs.rec = nil
			t.Fatalf("%+v", runs)
		}
	}
}
