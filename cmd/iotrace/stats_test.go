package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStatsDumpConvertE2E runs stats in every format on the sample, and
// dump → convert → dump round trips through JSON lines.
func TestStatsDumpConvertE2E(t *testing.T) {
	sample := filepath.Join("..", "..", "samples", "ior-4x2048.iot")
	out := mustRun(t, "stats", sample)
	for _, want := range []string{"4 ranks, 16400 events", "write       8192", "read        8192", "TOTAL      16400"} {
		if !strings.Contains(out, want) {
			t.Fatalf("stats lacks %q:\n%s", want, out)
		}
	}
	js := mustRun(t, "stats", "--format", "json", sample)
	var v struct {
		Ranks  int
		Events int64
		Ops    []struct {
			Op    string
			Count int64
			Bytes int64
		}
		Sizes []struct {
			Op    string
			Size  int64
			Count int64
		}
	}
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatal(err)
	}
	if v.Ranks != 4 || v.Events != 16400 || len(v.Ops) != 4 || len(v.Sizes) != 2 || v.Sizes[0].Size != 4096 || v.Sizes[0].Count != 8192 {
		t.Fatalf("json: %+v", v)
	}
	for _, by := range []string{"size", "rank", "file", "region"} {
		for _, f := range []string{"text", "csv", "markdown", "json"} {
			mustRun(t, "stats", "--by", by, "--format", f, sample)
		}
	}
	_, errOut, code := run(t, "stats", "--by", "colour", sample)
	if code != 1 || !strings.Contains(errOut, `--by "colour"`) {
		t.Fatalf("bad --by: %d %q", code, errOut)
	}

	dir := t.TempDir()
	jl := filepath.Join(dir, "s.jsonl")
	dump := mustRun(t, "dump", "--format", "jsonl", sample)
	os.WriteFile(jl, []byte(dump), 0o644)
	back := filepath.Join(dir, "back.iot")
	mustRun(t, "convert", "--from", "jsonl", "-o", back, jl)
	if again := mustRun(t, "dump", "--format", "jsonl", back); again != dump {
		t.Fatal("JSON lines → trace → JSON lines changed the events")
	}
	if a, b := mustRun(t, "stats", sample), mustRun(t, "stats", back); a != b {
		t.Fatalf("stats differ after the round trip:\n%s\n%s", a, b)
	}
	// CSV has a header and a row per event.
	csvOut := mustRun(t, "dump", "--format", "csv", sample)
	if n := strings.Count(csvOut, "\n"); n != 16401 || !strings.HasPrefix(csvOut, "rank,thread,op,path") {
		t.Fatalf("csv: %d lines", n)
	}
	// A bad JSON line: one error line with the line number, no output file.
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"rank":0,"op":"open","path":"/x","ret":3}`+"\n"+`{"rank":0,"op":"write","sise":4}`+"\n"), 0o644)
	_, errOut, code = run(t, "convert", "-o", filepath.Join(dir, "bad.iot"), bad)
	if code != 1 || strings.TrimSpace(errOut) != "iotrace: "+bad+`:2: unknown field "sise"` {
		t.Fatalf("bad jsonl: exit %d, %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.iot")); err == nil {
		t.Fatal("a failed conversion left its output")
	}
	// Damaged trace: stats fails naming the offset; --salvage reads past it.
	data, _ := os.ReadFile(sample)
	data[len(data)/3] ^= 0xff
	dmg := filepath.Join(dir, "dmg.iot")
	os.WriteFile(dmg, data, 0o644)
	_, errOut, code = run(t, "stats", dmg)
	if code != 1 || !strings.Contains(errOut, "offset") || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("damaged: exit %d, %q", code, errOut)
	}
	out, errOut, code = run(t, "stats", "--salvage", dmg)
	if code != 0 || !strings.Contains(errOut, "warning:") || !strings.Contains(out, "TOTAL") {
		t.Fatalf("salvage: exit %d, %q", code, errOut)
	}
}

// TestReportOutputOpenedFirst: stats and compare open -o before they read
// their traces (which may take minutes): a name that cannot be written
// is the error even when the input is bad too, and a report that fails
// leaves nothing behind; written, the file holds the report.
func TestReportOutputOpenedFirst(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.iot")
	if err := os.WriteFile(bad, []byte("not a trace"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "no", "such.txt")
	for _, args := range [][]string{
		{"stats", "-o", missing, bad},
		{"compare", "-o", missing, bad, bad},
	} {
		_, stderr, code := run(t, args...)
		if code == 0 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "create "+missing) {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant one line about %s", args, code, stderr, missing)
		}
		out := filepath.Join(dir, "report.txt")
		if _, _, code := run(t, args[0], "-o", out, bad, bad); code == 0 {
			t.Errorf("%s of a bad trace succeeded", args[0])
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("%v: left %v behind", args, ents)
		}
	}
	good := filepath.Join(dir, "good.iot")
	mustRun(t, "generate", "ior", "-o", good)
	out := filepath.Join(dir, "report.txt")
	mustRun(t, "stats", "-o", out, good)
	if b, err := os.ReadFile(out); err != nil || !strings.Contains(string(b), "TOTAL") {
		t.Errorf("stats -o: %v\n%s", err, b)
	}
}
