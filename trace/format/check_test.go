package format

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
}
