package hostile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplaySpace: a read at offset 2^62 (4 EiB to prepare) and a write
// of 2^63−1 bytes are refused before anything is written, with one line
// naming the flag that overrides the check; the dry run shows the bytes
// the replay takes.
func TestReplaySpace(t *testing.T) {
	dir := t.TempDir()
	for i, lines := range []string{
		`{"rank":0,"op":"open","path":"/in","flags":"O_RDONLY","ret":3,"start_ns":1,"dur_ns":1}` + "\n" +
			`{"rank":0,"op":"pread","fd":3,"offset":4611686018427387904,"size":4096,"ret":4096,"start_ns":2,"dur_ns":1}` + "\n",
		`{"rank":0,"op":"open","path":"/out","flags":"O_WRONLY|O_CREAT","mode":"0644","ret":3,"start_ns":1,"dur_ns":1}` + "\n" +
			`{"rank":0,"op":"write","fd":3,"offset":0,"size":9223372036854775807,"ret":9223372036854775807,"start_ns":2,"dur_ns":1}` + "\n",
	} {
		in := write(t, dir, "big"+string(rune('0'+i))+".jsonl", lines)
		r := run(t, dir, 0, ioreplay, "--dry-run", in)
		wantOK(t, r)
		if !strings.Contains(r.stdout, "space: up to") || !strings.Contains(r.stdout, "EiB") {
			t.Fatalf("dry run does not show the space:\n%s", clip(r.stdout))
		}
		target := filepath.Join(dir, "target"+string(rune('0'+i)))
		if err := os.Mkdir(target, 0o755); err != nil {
			t.Fatal(err)
		}
		wantError(t, run(t, dir, 0, ioreplay, "--timing", "afap", "--target", target, in),
			`does not fit in .*refused before writing anything .*--no-space-check`)
		if ents, _ := os.ReadDir(target); len(ents) != 0 {
			t.Fatalf("the refused replay left %d entries in its target", len(ents))
		}
		count("trace: disk space", 1)
	}
}

// TestReplayFlags: numbers a flag cannot mean, and targets that are the
// root directory under another name: one line each, before any work.
func TestReplayFlags(t *testing.T) {
	dir := t.TempDir()
	in := write(t, dir, "t.jsonl",
		`{"rank":0,"op":"open","path":"/out","flags":"O_WRONLY|O_CREAT","mode":"0644","ret":3,"start_ns":1,"dur_ns":1}`+"\n"+
			`{"rank":0,"op":"write","fd":3,"offset":0,"size":1099511627776,"ret":1099511627776,"start_ns":2,"dur_ns":1}`+"\n")
	root := filepath.Join(dir, "root")
	if err := os.Symlink("/", root); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--speed", "NaN"}, `--speed NaN: want a positive, finite factor`},
		{[]string{"--speed", "+Inf"}, `--speed \+Inf: want a positive, finite factor`},
		{[]string{"--speed", "-1"}, `--speed -1: want a positive, finite factor`},
		{[]string{"--scale-size", "NaN"}, `--scale-size NaN`},
		{[]string{"--split", "64KiB", "--servers", "2000000000"}, `--servers 2000000000: want 1 to 65536`},
		{[]string{"--target", root}, `is the root directory; refusing to replay into it`},
		{[]string{"--target", "/proc/self/root"}, `is the root directory; refusing to replay into it`},
		{[]string{"--target", "/proc/self/root/tmp/../"}, `is the root directory; refusing to replay into it`},
	} {
		wantError(t, run(t, dir, 0, ioreplay, append(c.args, in)...), c.want)
		count("flag", 1)
	}
}

// TestOutputIsInput: every output flag pointed at the command's input —
// by its name or through a symbolic link — is one line, and the input
// is left byte for byte as it was (ioreplay --record t.iot t.iot made a
// 2,468-byte trace 163 bytes).
func TestOutputIsInput(t *testing.T) {
	dir := t.TempDir()
	src := write(t, dir, "t.jsonl",
		`{"rank":0,"op":"open","path":"/out","flags":"O_WRONLY|O_CREAT","mode":"0644","ret":3,"start_ns":1,"dur_ns":1}`+"\n"+
			`{"rank":0,"op":"write","fd":3,"offset":0,"size":100,"ret":100,"start_ns":2,"dur_ns":1}`+"\n")
	tr := filepath.Join(dir, "t.iot")
	wantOK(t, run(t, dir, 0, iotrace, "convert", "-o", tr, src))
	link := filepath.Join(dir, "link.iot")
	if err := os.Symlink(tr, link); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(tr)
	for _, out := range []string{tr, link} {
		for _, c := range [][]string{
			{ioreplay, "--timing", "afap", "--record", out, tr},
			{ioreplay, "--timing", "afap", "--summary", out, tr},
			{ioreplay, "--timing", "afap", "-o", out, tr},
			{ioreplay, "--timing", "afap", "--html", out, tr},
			{iotrace, "stats", "-o", out, tr},
			{iotrace, "compare", "-o", out, tr, tr},
			{iotrace, "convert", "-o", out, tr},
		} {
			wantError(t, run(t, dir, 0, c[0], c[1:]...), `: is (an input|the input .*); writing it would destroy it`)
			if after, _ := os.ReadFile(tr); string(after) != string(before) {
				t.Fatalf("%v changed its input", c)
			}
			count("output onto an input", 1)
		}
	}
}

// TestManyPaths: one rank creating 1,000,000 files is planned within
// 1,300,000 KiB of data (ulimit -d): the plan kept a copy of every mapped
// path and, for one rank, which rank made each file, and the heap grew
// to twice what was live (1,070 MB peak RSS). Now 874 MB unbounded, and
// the Go memory limit ioreplay sets from the process's limit makes the
// collector keep it under: under ulimit -d 1000000, 795 MB of RSS, 549 MB
// live at the peak of planning (gctrace). That limit passed on a quiet
// machine and failed one run in four on a loaded one ("runtime: cannot
// allocate memory": ulimit -d counts address space — the heap's mapped
// arenas, freed or not, and 8 MiB per thread stack — and a collector
// starved of CPU lets the heap run past its limit), so the test leaves
// the margin a loaded machine needs; the figure to keep is the peak.
func TestManyPaths(t *testing.T) {
	dir := t.TempDir()
	s := write(t, dir, "files.iop", "repeat 1000000 as i {\n    create \"d/f$i\"\n}\n")
	tr := filepath.Join(dir, "files.iot")
	wantOK(t, run(t, dir, 0, iotrace, "convert", "--ranks", "1", "-o", tr, s))
	r := run(t, dir, 1_300_000, ioreplay, "--dry-run", tr)
	wantOK(t, r)
	if !strings.Contains(r.stdout, "1000000") {
		t.Fatalf("the dry run does not show the files:\n%s", clip(r.stdout))
	}
	count("trace: many paths", 1)
}
