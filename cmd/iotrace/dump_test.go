package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
)

// TestDumpE2E runs dump in every format, with filters, and on a JSON-lines
// file, the way a user does.
func TestDumpE2E(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "t.iot")
	writeGenerated(t, tr, []uint32{0, 1, 2}, 50)
	r, err := format.Open(tr)
	if err != nil {
		t.Fatal(err)
	}
	all, err := trace.ReadAll(trace.All(r))
	r.Close()
	if err != nil {
		t.Fatal(err)
	}

	txt := mustRun(t, "dump", tr)
	lines := strings.Split(strings.TrimSuffix(txt, "\n"), "\n")
	if len(lines) != len(all) {
		t.Fatalf("%d text lines for %d events", len(lines), len(all))
	}
	for i, l := range lines {
		want := "rank " + string(rune('0'+all[i].Rank)) + " "
		if !strings.HasPrefix(l, want) || !strings.Contains(l, " "+all[i].Op.String()+" ") {
			t.Fatalf("line %d %q for %+v", i+1, l, all[i])
		}
	}

	// Filters: ranks and ops, repeated or as comma lists.
	for _, c := range []struct {
		args  []string
		ranks map[uint32]bool
	}{
		{[]string{"--rank", "1"}, map[uint32]bool{1: true}},
		{[]string{"--rank", "1,2"}, map[uint32]bool{1: true, 2: true}},
		{[]string{"--rank", "2", "--rank", "0"}, map[uint32]bool{0: true, 2: true}},
		{[]string{"--rank", "0-1"}, map[uint32]bool{0: true, 1: true}},
	} {
		out := mustRun(t, append(append([]string{"dump"}, c.args...), tr)...)
		var want []string
		for i, e := range all {
			if c.ranks[e.Rank] {
				want = append(want, lines[i])
			}
		}
		if got := strings.TrimSuffix(out, "\n"); got != strings.Join(want, "\n") {
			t.Fatalf("dump %v: %d lines, want %d", c.args, strings.Count(out, "\n"), len(want))
		}
	}
	out := mustRun(t, "dump", "--op", "write", "--op", "close", tr)
	want := 0
	for _, e := range all {
		if e.Op.Info().Family == "write" || e.Op == trace.OpClose {
			want++
		}
	}
	if n := strings.Count(out, "\n"); n != want || want == 0 {
		t.Fatalf("--op write,close: %d lines, want %d", n, want)
	}

	// CSV: a header and a row per event.
	csvOut := mustRun(t, "dump", "--format", "csv", tr)
	if n := strings.Count(csvOut, "\n"); n != len(all)+1 || !strings.HasPrefix(csvOut, "rank,thread,op,path,path2,label,fd,") {
		t.Fatalf("csv: %d lines", n)
	}

	// JSON lines: dumping the .jsonl file prints what dumping the trace
	// does; converting it back gives the same trace.
	js := mustRun(t, "dump", "--format", "jsonl", tr)
	jl := filepath.Join(dir, "t.jsonl")
	if err := os.WriteFile(jl, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := mustRun(t, "dump", jl); got != txt {
		t.Fatal("dump of the JSON lines differs from dump of the trace")
	}
	cv := filepath.Join(dir, "t.csv")
	if err := os.WriteFile(cv, []byte(csvOut), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := mustRun(t, "dump", "--format", "jsonl", cv); got != js {
		t.Fatal("dump of the CSV differs from dump of the trace")
	}
	back := filepath.Join(dir, "back.iot")
	if err := convertFile(t, jl, back); err != nil {
		t.Fatal(err)
	}
	if got := mustRun(t, "dump", "--format", "jsonl", back); got != js {
		t.Fatal("trace → JSON lines → trace changed the events")
	}

	// Errors: one line, exit 1.
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"rank":0,"op":"open","path":"/x","ret":3}`+"\n"+`{"rank":0,"op":"write","sise":4}`+"\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"dump", "--format", "xml", tr}, `iotrace: --format "xml": want text, jsonl or csv`},
		{[]string{"dump", "--rank", "7", tr}, `iotrace: --rank 7: the trace has no rank 7 (its ranks: 0-2)`},
		{[]string{"dump", "--op", "frobnicate", tr}, `iotrace: --op: "frobnicate" is no call, family or class`},
		{[]string{"dump", bad}, `iotrace: ` + bad + `:2: unknown field "sise"`},
		{[]string{"dump", jl, tr}, `iotrace: ` + jl + ` is read alone, not with other inputs`},
		{[]string{"dump", filepath.Join(dir, "none.iot")}, `none.iot`},
	} {
		_, errOut, code := run(t, c.args...)
		if code != 1 || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, %q, want %q", c.args, code, errOut, c.want)
		}
	}
	// The lines before a bad one are printed.
	if out, _, _ := run(t, "dump", bad); !strings.Contains(out, " open ") || strings.Count(out, "\n") != 1 {
		t.Errorf("dump of a bad file printed %q", out)
	}
}

// TestConvertFromJSONL streams interleaved ranks into a trace file, and
// leaves nothing behind when a line is bad.
func TestConvertFromJSONL(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte(`# made by hand
{"rank":1,"op":"open","path":"/d/f1","ret":3,"flags":"O_RDONLY","start_ns":5,"dur_ns":1}
{"rank":0,"op":"open","path":"/d/f0","ret":3,"flags":"O_WRONLY|O_CREAT","mode":"0600","start_ns":1,"dur_ns":2}
{"rank":0,"op":"pwrite","fd":3,"offset":0,"size":10,"ret":10,"start_ns":3,"dur_ns":1}
{"rank":1,"op":"read","fd":3,"size":10,"ret":-5,"errno":"EIO","start_ns":7,"dur_ns":1}
{"rank":0,"op":"rename","path":"/d/f0","path2":"/d/f1","ret":0,"start_ns":9,"dur_ns":1}
{"rank":1,"op":"MPI_Barrier","start_ns":20,"dur_ns":3}
{"rank":0,"op":"MPI_Barrier","start_ns":19,"dur_ns":4}
`), 0o644)
	out := filepath.Join(dir, "out.iot")
	if err := convertFile(t, in, out); err != nil {
		t.Fatal(err)
	}
	r, err := format.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if m := r.Meta(); m.Creator != "iotrace convert --from jsonl" {
		t.Fatalf("meta %+v", m)
	}
	if rs := r.Ranks(); len(rs) != 2 || rs[0] != 0 || rs[1] != 1 {
		t.Fatalf("ranks %v", rs)
	}
	got := map[uint32][]string{}
	for _, rk := range r.Ranks() {
		src, _ := r.Rank(rk)
		evs, err := trace.ReadAll(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			got[rk] = append(got[rk], e.Op.String()+" "+r.Path(e.Path)+" "+r.Path(e.Path2)+" "+trace.Errno(e.Ret))
		}
	}
	want := map[uint32]string{
		0: "open /d/f0  |pwrite   |rename /d/f0 /d/f1 |MPI_Barrier   ",
		1: "open /d/f1  |read   EIO|MPI_Barrier   ",
	}
	for rk, w := range want {
		if g := strings.Join(got[rk], "|"); g != w {
			t.Errorf("rank %d: %q, want %q", rk, g, w)
		}
	}

	// A bad line: the error names it, and neither the output nor a
	// temporary file is left.
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"rank":0,"op":"open"}`+"\n\n"+`{"rank":0,"op":"write","size":-4}`+"\n"), 0o644)
	badOut := filepath.Join(dir, "bad.iot")
	err = convertFile(t, bad, badOut)
	if err == nil || err.Error() != bad+`:3: field "size": negative (-4)` {
		t.Fatalf("err = %v", err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if name := e.Name(); name != "in.jsonl" && name != "out.iot" && name != "bad.jsonl" {
			t.Errorf("left behind: %s", name)
		}
	}
	if err := convertFile(t, filepath.Join(dir, "missing.jsonl"), badOut); err == nil {
		t.Fatal("no error for a missing input")
	}

	// CSV converts the same way.
	csvIn := filepath.Join(dir, "in.csv")
	os.WriteFile(csvIn, []byte("rank,op,path,size,ret\n2,write,/w,8,8\n"), 0o644)
	csvOut := filepath.Join(dir, "csv.iot")
	if err := convertFile(t, csvIn, csvOut); err != nil {
		t.Fatal(err)
	}
	if out := mustRun(t, "dump", csvOut); !strings.HasPrefix(out, "rank 2 ") || !strings.Contains(out, "write        fd=0 /w off=0 size=8 = 8") {
		t.Fatalf("csv: %q", out)
	}
}

// convertFile runs iotrace convert -o out in and returns its error line.
func convertFile(t *testing.T, in, out string) error {
	t.Helper()
	_, stderr, code := run(t, "convert", "-o", out, in)
	if code != 0 {
		return errors.New(strings.TrimPrefix(strings.TrimSpace(stderr), "iotrace: "))
	}
	return nil
}

// TestDumpPathAndTime: --path and --time select calls by the file they
// name and by when they start.
func TestDumpPathAndTime(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte(`{"rank":0,"op":"open","path":"/data/a","ret":3,"start_ns":0,"dur_ns":1}
{"rank":0,"op":"open","path":"/home/b","ret":4,"start_ns":2000000000,"dur_ns":1}
{"rank":0,"op":"stat","path":"/data/c","ret":0,"start_ns":3000000000,"dur_ns":1}
`), 0o644)
	tr := filepath.Join(dir, "in.iot")
	mustRun(t, "convert", "-o", tr, in)
	if out := mustRun(t, "dump", "--path", "/data", tr); strings.Count(out, "\n") != 2 || strings.Contains(out, "/home/b") {
		t.Errorf("--path /data:\n%s", out)
	}
	if out := mustRun(t, "dump", "--time", "1s:2.5s", tr); strings.Count(out, "\n") != 1 || !strings.Contains(out, "/home/b") {
		t.Errorf("--time 1s:2.5s:\n%s", out)
	}
	if _, errOut, code := run(t, "dump", "--time", "2s:1s", tr); code != 1 || !strings.Contains(errOut, "--time: ") {
		t.Errorf("a bad window: exit %d, %q", code, errOut)
	}
}
