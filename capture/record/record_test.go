package record

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/capture/preload"
	"github.com/iotrace/iotrace/capture/ptrace"
	"github.com/iotrace/iotrace/launcher"
	"github.com/iotrace/iotrace/trace/format"
)

// The ptrace recorder runs this test binary as its helper.
func init() { ptrace.HelperMain() }

func TestPtrace(t *testing.T) {
	if !ptrace.Supported {
		t.Skip("no ptrace recorder on this platform")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "sh.iot")
	var log bytes.Buffer
	o := Options{Out: out, Include: []string{dir}, Log: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	res, err := Ptrace(o, []string{sh, "-c", "echo x > " + filepath.Join(dir, "f") + "; exit 3"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != 3 || len(res.Files) != 1 || res.Files[0] != out {
		t.Fatalf("result %+v", res)
	}
	r, err := format.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Meta().Creator != "iotrace record" || len(r.Ranks()) != 1 {
		t.Errorf("meta %+v, ranks %v", r.Meta(), r.Ranks())
	}
	if !strings.Contains(log.String(), "exit status 3") {
		t.Errorf("no summary at the debug level: %s", log.String())
	}
	if !strings.Contains(log.String(), "level=INFO msg=\""+out+": 6 events, 1 file, 0 B read, 2 B written; recorded only under "+dir) {
		t.Errorf("no summary line at the info level: %s", log.String())
	}
	if _, err := Ptrace(Options{Out: filepath.Join(dir, "x.iot")}, []string{"no-such-program-xyz"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("a missing program: %v, want ErrNotFound", err)
	}
	bad := uint32(5)
	t.Setenv("OMPI_COMM_WORLD_SIZE", "2")
	t.Setenv("OMPI_COMM_WORLD_RANK", "0")
	if _, err := Ptrace(Options{Out: filepath.Join(dir, "y.iot"), Rank: &bad}, []string{sh}); err == nil || !strings.Contains(err.Error(), "not below the number of ranks 2") {
		t.Errorf("--rank 5 of 2: %v", err)
	}
}

func TestFromSpoolEmpty(t *testing.T) {
	dir := t.TempDir()
	procs := runtime.GOMAXPROCS(0)
	if _, err := FromSpool(Options{Out: filepath.Join(dir, "x.iot")}, dir, true); err == nil || !strings.Contains(err.Error(), "no process wrote a spool") {
		t.Errorf("an empty spool directory: %v", err)
	}
	if n := runtime.GOMAXPROCS(0); n != procs {
		t.Errorf("GOMAXPROCS %d after the encode, %d before", n, procs)
	}
}

// TestOneP: oneP runs the scheduler on one P, and what it returns sets
// back the P count there was.
func TestOneP(t *testing.T) {
	prev := runtime.GOMAXPROCS(3)
	defer runtime.GOMAXPROCS(prev)
	restore := oneP()
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Errorf("GOMAXPROCS %d under oneP", n)
	}
	restore()
	if n := runtime.GOMAXPROCS(0); n != 3 {
		t.Errorf("GOMAXPROCS %d after oneP's restore, 3 before", n)
	}
}

// lines is a slog handler that hands each message to a channel.
type lines chan string

func (l lines) Enabled(context.Context, slog.Level) bool { return true }
func (l lines) Handle(_ context.Context, r slog.Record) error {
	l <- r.Message
	return nil
}
func (l lines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l lines) WithGroup(string) slog.Handler      { return l }

// TestSayBuilding checks that a build of the shim that takes a while
// (the first) is said, once, by rank 0 alone, and that one that returns
// at once (the cache) is not.
func TestSayBuilding(t *testing.T) {
	msgs := make(lines, 4)
	log := slog.New(msgs)
	// A build that ends only once it was said: the wait is the point.
	slow := func() (preload.Libs, error) {
		select {
		case m := <-msgs:
			if !strings.Contains(m, "building the preload shim with cc into") {
				t.Errorf("said %q", m)
			}
		case <-time.After(time.Minute):
			t.Error("a slow build was not said")
		}
		return preload.Libs{}, nil
	}
	if _, err := sayBuilding(log, launcher.Rank{}, time.Millisecond, slow); err != nil {
		t.Fatal(err)
	}
	fast := func() (preload.Libs, error) { return preload.Libs{}, nil }
	sayBuilding(log, launcher.Rank{}, time.Hour, fast)
	other := func() (preload.Libs, error) { time.Sleep(20 * time.Millisecond); return preload.Libs{}, nil }
	sayBuilding(log, launcher.Rank{Rank: 1}, time.Millisecond, other)
	select {
	case m := <-msgs:
		t.Errorf("said %q for a build from the cache, or by rank 1", m)
	default:
	}
}
