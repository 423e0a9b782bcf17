package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// TestConvertDarshan: a darshan-parser text is sniffed (and named with
// --from darshan), written as its script (-o X.iop) or as the script's
// expansion (-o X.iot); the DXT text with the same header stays DXT.
func TestConvertDarshan(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join("..", "..", "convert", "darshan", "testdata", "ior-posix-shared.darshan-parser.txt")
	sniffed := filepath.Join(dir, "a.iop")
	_, stderr, code := run(t, "convert", "-o", sniffed, in)
	if code != 0 {
		t.Fatalf("convert: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "the script gives back all") {
		t.Errorf("stderr: %s", stderr)
	}
	named := filepath.Join(dir, "b.iop")
	mustRun(t, "convert", "--from", "darshan", "-o", named, in)
	a, _ := os.ReadFile(sniffed)
	b, _ := os.ReadFile(named)
	if len(a) == 0 || string(a) != string(b) {
		t.Fatalf("sniffed and --from darshan scripts differ or are empty")
	}
	if !strings.HasPrefix(string(a), "# Made by iotrace convert from the Darshan log ior-posix-shared.darshan-parser.txt") {
		t.Errorf("script header:\n%s", a[:200])
	}
	gz := filepath.Join("..", "..", "convert", "darshan", "testdata", "mdtest.darshan-parser.txt.gz")
	out := filepath.Join(dir, "md.iot")
	mustRun(t, "convert", "-o", out, gz)
	_, evs := readTrace(t, out)
	ops := map[trace.Op]int{}
	for _, e := range evs {
		ops[e.Op]++
	}
	if ops[trace.OpOpen] != 800 || ops[trace.OpClose] != 800 || len(evs) != 1600 {
		t.Errorf("mdtest: ops %v", ops)
	}
	// The script runs as any script does.
	stdout := mustRun(t, "stats", "--ranks", "4", sniffed)
	if !strings.Contains(stdout, "write       1024") || !strings.Contains(stdout, "seek        2048") {
		t.Errorf("stats of the script:\n%s", stdout)
	}
	if _, stderr, code := run(t, "stats", "--ranks", "3", sniffed); code == 0 || !strings.Contains(stderr, "recorded with 4 processes") {
		t.Errorf("3 ranks: exit %d, %s", code, stderr)
	}
	// DXT text keeps going to the DXT importer.
	dxtIn := filepath.Join("..", "..", "convert", "dxt", "testdata", "ior-mpiio-4ranks-64k.txt")
	_, stderr, code = run(t, "convert", "-o", filepath.Join(dir, "d.iot"), dxtIn)
	if code != 0 || !strings.Contains(stderr, "DXT") {
		t.Errorf("dxt: exit %d: %s", code, stderr)
	}
	// A damaged log is one line naming file and line.
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, append(a[:0:0], []byte("# darshan log version: 3.41\n# nprocs: 2\n# description of columns:\nPOSIX\t0\t1\tPOSIX_OPENS\tx\t/a\t/\text4\n")...), 0o644)
	_, stderr, code = run(t, "convert", "-o", filepath.Join(dir, "x.iot"), bad)
	if code == 0 || !strings.Contains(stderr, "bad.txt:4: POSIX_OPENS: bad value") || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
		t.Errorf("bad log: exit %d: %q", code, stderr)
	}
}

// TestConvertRecorder: --from recorder reads a trace directory, and says
// what it kept as marks.
func TestConvertRecorder(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r.iot")
	in := filepath.Join("..", "..", "convert", "recorder", "testdata", "ior-posix-2ranks")
	_, stderr, code := run(t, "convert", "--from", "recorder", "-o", out, in)
	if code != 0 || !strings.Contains(stderr, "kept as marks labelled with their name: MPI_Comm_create 2") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	stdout := mustRun(t, "stats", out)
	counts := map[string]string{}
	for _, l := range strings.Split(stdout, "\n") {
		if f := strings.Fields(l); len(f) > 1 {
			counts[f[0]] = f[1]
		}
	}
	if counts["write"] != "32" || counts["read"] != "32" || counts["MPI_Barrier"] != "12" {
		t.Errorf("stats:\n%s", stdout)
	}
	if _, stderr, code := run(t, "convert", "--from", "recorder", "-o", out, filepath.Join(in, "0.cst")); code == 0 || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
		t.Errorf("a file, not a directory: exit %d, %q", code, stderr)
	}
}
