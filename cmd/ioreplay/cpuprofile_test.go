package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --cpuprofile writes a CPU profile of the replay (gzip-compressed
// protocol buffers, as runtime/pprof writes them); a file it cannot
// create is one line of error before anything is replayed.
func TestCPUProfile(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "cpu.pprof")
	target := filepath.Join(dir, "target")
	mustRun(t, "--timing", "afap", "--quiet", "--target", target, "--cpuprofile", prof, "astro3d-small")
	raw, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("the profile is not gzip data: %v", err)
	}
	body, err := io.ReadAll(zr)
	if err != nil || len(body) == 0 {
		t.Fatalf("the profile is empty or damaged: %d bytes, %v", len(body), err)
	}
	// The profile names the functions it sampled, or at least the
	// program's own (its mappings and the sample type "cpu").
	if !bytes.Contains(body, []byte("cpu")) || !bytes.Contains(body, []byte("nanoseconds")) {
		t.Errorf("the profile does not look like a CPU profile (%d bytes)", len(body))
	}

	bad := filepath.Join(dir, "missing", "cpu.pprof")
	target2 := filepath.Join(dir, "target2")
	_, errOut, code := runBin(t, "--timing", "afap", "--quiet", "--target", target2, "--cpuprofile", bad, "astro3d-small")
	if code == 0 || !strings.HasPrefix(errOut, "ioreplay: --cpuprofile: ") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("unwritable profile: exit %d, stderr %q", code, errOut)
	}
	if _, err := os.Stat(target2); !os.IsNotExist(err) {
		t.Errorf("the replay ran although its profile could not be written (target: %v)", err)
	}
}
