package replay

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// TestSpace: the plan adds up what the trace's files take on a disk —
// what the reads need prepared and what the writes, truncates and
// extensions make, each file once with its largest size, rounded to
// blocks — and refuses a replay that does not fit before it writes
// anything: a read at 2^62 (4 EiB to prepare) and a write of 2^63−1 bytes
// are refused on any file system, a small trace is not.
func TestSpace(t *testing.T) {
	plan := func(evs ...trace.Event) *Plan {
		t.Helper()
		m := trace.NewMemTrace()
		a, b := m.Paths.Intern("/d/a"), m.Paths.Intern("/d/b")
		for i := range evs {
			switch evs[i].Path {
			case 1:
				evs[i].Path = a
			case 2:
				evs[i].Path = b
			}
		}
		m.Add(evs...)
		rp, err := New(m, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return rp.Plan()
	}
	small := plan(
		trace.Event{Op: trace.OpOpen, Path: 1, Flags: trace.ORdwr, Ret: 3},
		trace.Event{Op: trace.OpPread, FD: 3, Offset: 0, Size: 100, Ret: 100}, // 100 bytes before the trace
		trace.Event{Op: trace.OpPwrite, FD: 3, Offset: 5000, Size: 100, Ret: 100},
		trace.Event{Op: trace.OpOpen, Path: 2, Flags: trace.OWronly | trace.OCreat, Ret: 4},
		trace.Event{Op: trace.OpWrite, FD: 4, Offset: 0, Size: 10, Ret: 10},
		trace.Event{Op: trace.OpFtruncate, FD: 4, Size: 9000},
		trace.Event{Op: trace.OpFtruncate, FD: 4, Size: 0},
	)
	if got, want := small.Space.Bytes, int64(8192+12288); got != want || small.Space.Files != 2 {
		t.Errorf("space %+v, want %d bytes in 2 files (a: 5100 → 8 KiB, b: 9000 at its largest → 12 KiB)", small.Space, want)
	}
	if got, want := small.Space.Written, int64(8192+12288); got != want {
		t.Errorf("written %d, want %d", got, want)
	}
	dir := t.TempDir()
	if err := small.CheckSpace(dir, false); err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]*Plan{
		"read at 2^62": plan(
			trace.Event{Op: trace.OpOpen, Path: 1, Ret: 3},
			trace.Event{Op: trace.OpPread, FD: 3, Offset: 1 << 62, Size: 4096, Ret: 4096}),
		"write of 2^63-1": plan(
			trace.Event{Op: trace.OpOpen, Path: 1, Flags: trace.OWronly | trace.OCreat, Ret: 3},
			trace.Event{Op: trace.OpPwrite, FD: 3, Offset: 1 << 40, Size: math.MaxInt64, Ret: math.MaxInt64}),
	} {
		err := p.CheckSpace(dir, false)
		var se *SpaceError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), "refused before writing anything") || !strings.Contains(err.Error(), "--no-space-check") {
			t.Errorf("%s: CheckSpace = %v, want a SpaceError naming --no-space-check", name, err)
		}
	}
	// A replay run again in the same target reuses its files: what the
	// target holds counts as there.
	if err := os.WriteFile(filepath.Join(dir, "a"), make([]byte, 20000), 0o644); err != nil {
		t.Fatal(err)
	}
	if need, files := small.SpaceNeed(dir, false); need != 0 || files != 1 {
		t.Errorf("need with 20 kB held: %d bytes, %d files; want 0 and 1", need, files)
	}
}
