package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/trace/target"
)

// TestProgressLine checks what the progress line says: the share done,
// the time elapsed, the time left at the pace so far, the rate.
func TestProgressLine(t *testing.T) {
	got := progressLine(250, 1000, 50<<20, 10*time.Second)
	want := " 25.0 % (250 of 1000 events), 10s elapsed, ETA 30s, 5 MiB/s"
	if got != want {
		t.Errorf("progressLine = %q, want %q", got, want)
	}
	if got := progressLine(0, 1000, 0, 2*time.Second); got != "  0.0 % (0 of 1000 events), 2s elapsed, ETA -, 0 B/s" {
		t.Errorf("at the start: %q", got)
	}
}

// TestMakeTarget checks that a target is made as its last component only.
func TestMakeTarget(t *testing.T) {
	dir := t.TempDir()
	if err := makeTarget(filepath.Join(dir, "a", "b")); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("a target whose parent is missing: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); err == nil {
		t.Error("the parent was made")
	}
	if err := makeTarget(filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	if err := makeTarget(filepath.Join(dir, "a")); err != nil {
		t.Errorf("an existing target: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "f"), nil, 0o644)
	if err := makeTarget(filepath.Join(dir, "f")); err == nil {
		t.Error("a file as the target")
	}
}

// TestInTheWay checks that files at the places of the trace's paths are
// in the way, directories are not.
func TestInTheWay(t *testing.T) {
	dir := t.TempDir()
	l := &target.Layout{Paths: []target.PathEntry{{Trace: "/d/x", Target: "x"}, {Trace: "/d/sub", Target: "sub"}, {Trace: "/dev/null"}}}
	if err := inTheWay(dir, l); err != nil {
		t.Errorf("an empty target: %v", err)
	}
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	if err := inTheWay(dir, l); err != nil {
		t.Errorf("a directory in the way: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "x"), nil, 0o644)
	if err := inTheWay(dir, l); err == nil || !strings.Contains(err.Error(), "1 file the replay would overwrite or remove (x): give --force") {
		t.Errorf("a file in the way: %v", err)
	}
}
