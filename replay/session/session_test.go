package session

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/trace"
)

// TestRunInputError: an input that fails to open is the session's error,
// not a nil dereference in its clean-up (a failed session returns a nil
// Outcome, and the deferred clean-up must still close what it made).
func TestRunInputError(t *testing.T) {
	bad := errors.New("open in.iot: no such file or directory")
	out, err := Run(context.Background(), func(io.Writer) (trace.Trace, error) { return nil, bad }, Options{}, Alone{})
	if !errors.Is(err, bad) || out != nil {
		t.Fatalf("Run = %v, %v; want nil and %v", out, err, bad)
	}
}

// TestRunSetupErrors: a session whose setup fails returns the error, and
// removes what it made (a temporary target); it does not panic.
func TestRunSetupErrors(t *testing.T) {
	m := trace.NewMemTrace()
	m.Add(trace.Event{Op: trace.OpOpen, Path: m.Paths.Intern("/data/f"), Flags: trace.OCreat | trace.OWronly, Ret: 3})
	input := func(io.Writer) (trace.Trace, error) { return m, nil }
	bad := errors.New("no such input")
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", t.TempDir())
	for _, c := range []struct {
		what string
		in   Input
		o    Options
		want string
	}{
		{"unreadable input", func(io.Writer) (trace.Trace, error) { return nil, bad }, Options{}, bad.Error()},
		{"the root as target", input, Options{Target: "/"}, "--target /"},
		{"a target that cannot be made", input, Options{Target: file + "/dir"}, "--target " + file + "/dir"},
	} {
		out, err := Run(context.Background(), c.in, c.o, Alone{})
		if err == nil || !strings.Contains(err.Error(), c.want) || out != nil {
			t.Errorf("%s: outcome %v, error %v; want an error saying %q", c.what, out, err, c.want)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(os.Getenv("TMPDIR"), "*")); len(left) > 0 {
		t.Errorf("failed sessions left %v", left)
	}
}

// countingObserver counts the events it sees and names their paths.
type countingObserver struct {
	mu    sync.Mutex
	n     int
	paths map[string]bool
	path  func(trace.PathID) string
}

func (c *countingObserver) Add(rank uint32, evs []trace.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += len(evs)
	for _, e := range evs {
		if e.Path != 0 {
			c.paths[c.path(e.Path)] = true
		}
	}
}

// TestUnrecordedReplay: a replay whose report is computed while it runs
// (Observe) and whose trace nobody asked for (no Record) writes no trace
// at all — the observer still sees every event, with its path's name —
// while one without an observer records a temporary trace for the report
// to read, as before, and removes it.
func TestUnrecordedReplay(t *testing.T) {
	m := trace.NewMemTrace()
	m.Add(trace.Event{Op: trace.OpOpen, Path: m.Paths.Intern("/data/f"), Flags: trace.OCreat | trace.OWronly, Ret: 3, Start: 0, Dur: 10})
	for i := range 100 {
		m.Add(trace.Event{Op: trace.OpWrite, FD: 3, Size: 8, Ret: 8, Start: int64(20 + i*10), Dur: 5})
	}
	m.Add(trace.Event{Op: trace.OpClose, FD: 3, Start: 2000, Dur: 5})
	input := func(io.Writer) (trace.Trace, error) { return m, nil }
	for _, observe := range []bool{true, false} {
		tmp := t.TempDir()
		t.Setenv("TMPDIR", tmp)
		obs := &countingObserver{paths: map[string]bool{}}
		o := Options{Replay: replay.Options{Timing: replay.AFAP}, Target: filepath.Join(t.TempDir(), "target")}
		if observe {
			o.Observe = func(path func(trace.PathID) string) Observer { obs.path = path; return obs }
		}
		out, err := Run(context.Background(), input, o, Alone{})
		if err != nil {
			t.Fatalf("observe %v: %v", observe, err)
		}
		if observe {
			if out.Record != "" || !out.Observed {
				t.Errorf("observed replay: trace %q, observed %v; want none, true", out.Record, out.Observed)
			}
			if obs.n != 102 || !obs.paths[filepath.Join(out.Target, "f")] {
				t.Errorf("observer saw %d events, paths %v; want 102 and the target's f", obs.n, obs.paths)
			}
		} else if out.Record == "" || out.Observed {
			t.Errorf("unobserved replay: trace %q, observed %v; want a temporary trace", out.Record, out.Observed)
		} else if _, err := os.Stat(out.Record); err != nil {
			t.Errorf("unobserved replay: its trace: %v", err)
		}
		if seen, _ := filepath.Glob(filepath.Join(tmp, "ioreplay-*.iot")); observe && len(seen) != 0 {
			t.Errorf("observed replay wrote %v", seen)
		}
		out.Close()
		if left, _ := filepath.Glob(filepath.Join(tmp, "ioreplay-*.iot")); len(left) != 0 {
			t.Errorf("observe %v: left %v", observe, left)
		}
	}
}
