package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
	"github.com/iotrace/iotrace/trace/tracegen"
)

// writeGenerated writes a generated trace to path, ranks in [first, first+n).
func writeGenerated(t testing.TB, path string, ranks []uint32, calls int) {
	t.Helper()
	g := tracegen.IOR(int(ranks[len(ranks)-1])+1, calls, 1)
	w, err := format.CreateOptions(path, g.Meta(), format.Options{BlockEvents: 256})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ranks {
		src, err := g.Rank(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := trace.Copy(w.Rank(r), src); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestCheckAndMergeE2E(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.iot"), filepath.Join(dir, "b.iot")
	writeGenerated(t, a, []uint32{0, 1}, 500)
	writeGenerated(t, b, []uint32{2, 3}, 500)

	out := mustRun(t, "check", a, b)
	if !regexp.MustCompile(`a\.iot: ok: \d+ bytes, \d+ blocks, 2008 events, 2 ranks \[0-1\]`).MatchString(out) {
		t.Fatalf("check output:\n%s", out)
	}

	// Several files, or their directory, are one trace.
	both := mustRun(t, "stats", a, b)
	if !strings.Contains(both, "4 ranks, 4016 events") || mustRun(t, "stats", dir) != both {
		t.Fatalf("stats of two files / their directory:\n%s", both)
	}

	merged := filepath.Join(dir, "merged.iot")
	_, errOut, code := run(t, "merge", "-o", merged, a, b)
	if code != 0 || !strings.Contains(errOut, "4 ranks") {
		t.Fatalf("merge: exit %d, %s", code, errOut)
	}
	out = mustRun(t, "check", merged)
	if !strings.Contains(out, "4016 events, 4 ranks [0-3]") {
		t.Fatalf("check of merged file:\n%s", out)
	}
	// The merged file holds the same events: dump of it, of the two files
	// and of their directory agree.
	d := mustRun(t, "dump", "--format", "jsonl", a, b)
	if mustRun(t, "dump", "--format", "jsonl", merged) != d {
		t.Fatal("the merged file's events differ from its inputs'")
	}
	os.Remove(merged)
	if mustRun(t, "dump", "--format", "jsonl", dir) != d {
		t.Fatal("dump of the directory differs from dump of its files")
	}
	// A directory is one trace too; the same rank twice is refused.
	_, errOut, code = run(t, "merge", "-o", filepath.Join(dir, "x.iot"), a, a)
	if code != 1 || !strings.Contains(errOut, "rank 0 is in both") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Fatalf("merge of a rank twice: exit %d, stderr %q", code, errOut)
	}

	// Truncate: check says so and fails; a cut inside the header is damage too.
	data, _ := os.ReadFile(a)
	cut := filepath.Join(dir, "cut.iot")
	os.WriteFile(cut, data[:len(data)*2/3], 0o644)
	out, _, code = run(t, "check", cut)
	if code != 1 || !strings.Contains(out, "TRUNCATED") || !strings.Contains(out, "truncated: the file ends inside the block at offset") {
		t.Fatalf("check of a cut file: exit %d\n%s", code, out)
	}
	// Damage a byte in the middle: reported with its offset.
	bad := filepath.Join(dir, "bad.iot")
	data2 := append([]byte(nil), data...)
	data2[len(data2)/2] ^= 0xff
	os.WriteFile(bad, data2, 0o644)
	out, _, code = run(t, "check", "--salvage", bad)
	if code != 1 || !regexp.MustCompile(`DAMAGED[^\n]*\n  damaged: offset \d+: block CRC mismatch`).MatchString(out) {
		t.Fatalf("check of a damaged file: exit %d\n%s", code, out)
	}
	// The index still lists the damaged block: check says what it held.
	if !regexp.MustCompile(`index: the index lists 1 event block not recovered: \d+ events \(\d+ of rank \d\)`).MatchString(out) {
		t.Fatalf("check of a damaged file does not say what was lost:\n%s", out)
	}
	// Other commands: one line naming the file and the offset, exit 1.
	_, errOut, code = run(t, "stats", bad)
	if code != 1 || strings.Count(errOut, "\n") != 1 || !regexp.MustCompile(`bad\.iot: offset \d+: block CRC mismatch`).MatchString(errOut) {
		t.Fatalf("stats of a damaged file: exit %d, stderr %q", code, errOut)
	}
	os.WriteFile(filepath.Join(dir, "junk.iot"), []byte("hello"), 0o644)
	out, _, code = run(t, "check", filepath.Join(dir, "junk.iot"))
	if code != 1 || !strings.Contains(out, "DAMAGED") {
		t.Fatalf("check of junk: exit %d\n%s", code, out)
	}
	// Missing file: one line, exit 1.
	_, errOut, code = run(t, "check", filepath.Join(dir, "nope.iot"))
	if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "nope.iot") {
		t.Fatalf("missing file: exit %d, stderr %q", code, errOut)
	}
}

func TestBadFlagE2E(t *testing.T) {
	_, errOut, code := run(t, "check", "--no-such-flag", "x")
	if code == 0 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "--no-such-flag") {
		t.Fatalf("bad flag: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = run(t, "no-such-command")
	if code == 0 || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("bad command: exit %d, stderr %q", code, errOut)
	}
}

func TestGenerateE2E(t *testing.T) {
	dir := t.TempDir()
	for _, w := range []string{"ior", "twophase", "random"} {
		out := filepath.Join(dir, w+".iot")
		_, errOut, code := run(t, "generate", w, "--ranks", "3", "--calls", "5", "-o", out)
		if code != 0 || !strings.Contains(errOut, "of 3 ranks") {
			t.Fatalf("generate %s: exit %d %q", w, code, errOut)
		}
		if s := mustRun(t, "stats", out); !strings.Contains(s, "3 ranks") {
			t.Fatalf("stats of %s:\n%s", w, s)
		}
	}
	a := mustRun(t, "dump", "--format", "jsonl", filepath.Join(dir, "ior.iot"))
	mustRun(t, "generate", "ior", "--ranks", "3", "--calls", "5", "-o", filepath.Join(dir, "again.iot"))
	if b := mustRun(t, "dump", "--format", "jsonl", filepath.Join(dir, "again.iot")); a != b {
		t.Fatal("the same seed gave a different trace")
	}
	if _, _, code := run(t, "generate", "nope", "-o", filepath.Join(dir, "x.iot")); code != 1 {
		t.Fatal("unknown workload accepted")
	}
}

// TestOutputFilesE2E: the trace files commands write get a new file's
// permissions, appear whole or not at all (no temporary file left), and
// an output may replace one of the inputs.
func TestOutputFilesE2E(t *testing.T) {
	dir := t.TempDir()
	umask := syscall.Umask(0)
	syscall.Umask(umask)
	want := os.FileMode(0o666 &^ umask)
	gen := filepath.Join(dir, "g.iot")
	mustRun(t, "generate", "ior", "--ranks", "2", "--calls", "10", "-o", gen)
	jl := filepath.Join(dir, "g.jsonl")
	os.WriteFile(jl, []byte(mustRun(t, "dump", "--format", "jsonl", gen)), 0o644)
	conv := filepath.Join(dir, "c.iot")
	mustRun(t, "convert", "--from", "jsonl", "-o", conv, jl)
	toIot := filepath.Join(dir, "t.iot")
	mustRun(t, "convert", "--to", "iot", "-o", toIot, gen)
	mustRun(t, "merge", "-o", gen, gen) // in place
	for _, f := range []string{gen, conv, toIot} {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", filepath.Base(f), st.Mode().Perm(), want)
		}
	}
	if out := mustRun(t, "check", gen); !strings.Contains(out, "ok: ") || !strings.Contains(out, "48 events") {
		t.Fatalf("merged in place:\n%s", out)
	}
	// A failed conversion leaves nothing.
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"rank":0,"op":"write"}`+"\n"+`{"rank":0,"op":"write","sise":1}`+"\n"), 0o644)
	if _, errOut, code := run(t, "convert", "--from", "jsonl", "-o", filepath.Join(dir, "bad.iot"), bad); code != 1 || !strings.Contains(errOut, "bad.jsonl:2:") {
		t.Fatalf("bad JSON lines: exit %d, %q", code, errOut)
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if fmt.Sprint(names) != "[bad.jsonl c.iot g.iot g.jsonl t.iot]" {
		t.Fatalf("files left: %v", names)
	}
	// An output in a missing directory: one line naming it.
	_, errOut, code := run(t, "merge", "-o", filepath.Join(dir, "no", "m.iot"), gen)
	if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "no/m.iot") {
		t.Fatalf("output in a missing directory: exit %d, %q", code, errOut)
	}
}
