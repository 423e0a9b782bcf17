package format

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// TestCheckEmpty: a file of 0 bytes (a recording killed before it wrote
// its header) is empty, not damaged, and readers say so in one line.
func TestCheckEmpty(t *testing.T) {
	name := filepath.Join(t.TempDir(), "r.iot")
	if err := os.WriteFile(name, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Check(name, false)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rep.WriteText(&b)
	if !rep.Empty || rep.Damaged() || !strings.HasPrefix(b.String(), name+": EMPTY: 0 bytes") {
		t.Fatalf("check of an empty file: %+v\n%s", rep, b.String())
	}
	if _, err := Open(name); err == nil || !strings.Contains(err.Error(), "empty file (0 bytes)") {
		t.Fatalf("Open: %v", err)
	}

	// A header and nothing else (a recorder killed before its first
	// block, which flushed its header at once) is empty too.
	w, err := Create(name, trace.Meta{Clock: "CLOCK_MONOTONIC"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if rep, err = Check(name, false); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	rep.WriteText(&b)
	if !rep.Empty || rep.Damaged() || !strings.Contains(b.String(), ": EMPTY: ") || !strings.Contains(b.String(), "a trace header and nothing recorded") {
		t.Fatalf("check of a header-only file: %+v\n%s", rep, b.String())
	}
	// Closed, the same writer makes a trace with an index: ok, not empty.
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if rep, err = Check(name, false); err != nil || rep.Empty || rep.Damaged() {
		t.Fatalf("check of a finished trace of no event: %+v, %v", rep, err)
	}
}
