package convert

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
	"github.com/iotrace/iotrace/trace/format"
)

const fioLog = `fio version 3 iolog
146 /data/f add
710 /data/f open
718 /data/f write 0 4096
10691 /data/f write 4096 4096
23923 /data/f read 0 4096
30000 /data/f close
`

const jsonLines = `{"rank":1,"op":"open","path":"/d/f1","ret":3,"flags":"O_RDONLY","start_ns":5,"dur_ns":1}
{"rank":0,"op":"open","path":"/d/f0","ret":3,"flags":"O_WRONLY|O_CREAT","mode":"0600","start_ns":1,"dur_ns":2}
{"rank":0,"op":"pwrite","fd":3,"offset":0,"size":10,"ret":10,"start_ns":3,"dur_ns":1}
{"rank":1,"op":"read","fd":3,"size":10,"ret":10,"start_ns":7,"dur_ns":1}
`

// inputs writes one input of each importable form into dir and returns
// them by form.
func inputs(t *testing.T, dir string) map[string]string {
	t.Helper()
	in := map[string]string{
		"strace":   "strace/testdata/cp.strace",
		"dxt":      "dxt/testdata/ior-posix-fpp-2ranks-256k.txt",
		"darshan":  "darshan/testdata/ior-posix-shared.darshan-parser.txt",
		"recorder": "recorder/testdata/ior-posix-2ranks", // a directory
	}
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	in["fio"] = write("rank0.log", fioLog)
	in["jsonl"] = write("events.jsonl", jsonLines)
	in["csv"] = write("events.csv", "rank,op,path,size,ret,start_ns,dur_ns\n2,write,/w,8,8,1,1\n0,open,/w,0,3,0,1\n")
	return in
}

// TestGuessBinaryByItsMagic: a trace file is known by its magic before
// the text forms look at its head, which holds the command line and
// paths uncompressed: a trace of 'sh -c' running a script that mentions
// DXT's record marker was taken for darshan-dxt-parser text.
func TestGuessBinaryByItsMagic(t *testing.T) {
	m := trace.NewMemTrace()
	m.M.Command = []string{"sh", "-c", "grep -c '\n# DXT, file_id: ' run.dxt"}
	m.Add(trace.Event{Op: trace.OpOpen, Path: m.Paths.Intern("/in/run.dxt"), Ret: 3})
	name := filepath.Join(t.TempDir(), "t.iot")
	if _, err := WriteTrace(name, m); err != nil {
		t.Fatal(err)
	}
	if got := Guess(name); got != Binary {
		t.Errorf("Guess(a trace whose command line names DXT's marker) = %s, want %s", got, Binary)
	}
}

func TestGuess(t *testing.T) {
	for form, name := range inputs(t, t.TempDir()) {
		if got := Guess(name); got != form {
			t.Errorf("Guess(%s) = %s, want %s", name, got, form)
		}
	}
	if got := Guess(t.TempDir()); got != Binary {
		t.Errorf("Guess(a directory) = %s, want %s (of trace files)", got, Binary)
	}
	for out, want := range map[string]string{"x.iot": Binary, "x": Binary, "x.jsonl": "jsonl", "x.csv": "csv", "job.fio": "fio", "t.json": "chrome",
		"x.parquet": "parquet", "s.iop": "script", "x.txt": "", "out.d/x": Binary, "x.gz": ""} {
		if got := GuessOut(out); got != want {
			t.Errorf("GuessOut(%s) = %s, want %s", out, got, want)
		}
	}
}

// events reads every event of t, rank by rank, as text.
func events(t *testing.T, tr trace.Trace) string {
	t.Helper()
	var b bytes.Buffer
	lw, _ := NewLineWriter("jsonl", &b)
	if err := WriteLines(lw, tr); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestOpenImports: an Opener opens a file of every importable form as a
// trace, the same trace convert writes of it.
func TestOpenImports(t *testing.T) {
	dir := t.TempDir()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	for form, name := range inputs(t, dir) {
		var notes bytes.Buffer
		o := &Opener{Warn: &notes}
		tr, err := o.Open([]string{name})
		if err != nil {
			t.Fatalf("%s: %v", form, err)
		}
		got := events(t, tr)
		if err := tr.Close(); err != nil {
			t.Fatalf("%s: close: %v", form, err)
		}
		if strings.Count(got, "\n") < 2 {
			t.Fatalf("%s: %d events", form, strings.Count(got, "\n"))
		}
		out := filepath.Join(dir, form+".iot")
		c := &Conversion{Opener: &Opener{}, Output: out, Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}
		if err := c.Run([]string{name}); err != nil {
			t.Fatalf("%s: convert: %v", form, err)
		}
		r, err := format.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		if want := events(t, r); got != want {
			t.Errorf("%s: opened\n%s\nconverted\n%s", form, got, want)
		}
		r.Close()
	}
	// Nothing is left behind.
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("left behind in the temporary directory: %v", left)
	}
}

// TestOpenScripts: a script file or a built-in sample opens expanded, or
// through Script (as a replay runs it), with --ranks and --param.
func TestOpenScripts(t *testing.T) {
	o := &Opener{}
	tr, err := o.Open([]string{"astro3d-small"})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Ranks()) != 8 {
		t.Errorf("astro3d-small: %d ranks, want its paper's 8", len(tr.Ranks()))
	}
	tr.Close()
	var got *script.Instance
	o = &Opener{Ranks: 2, Script: func(in *script.Instance) trace.Trace { got = in; return in.Expand() }}
	if tr, err = o.Open([]string{"astro3d-small"}); err != nil || got == nil || got.Ranks() != 2 {
		t.Fatalf("Script: %v, %v", got, err)
	}
	tr.Close()
	if _, err := (&Opener{}).Open([]string{filepath.Join(t.TempDir(), "none.iop")}); err == nil {
		t.Error("a missing script opened")
	}
	if _, err := (&Opener{}).Open([]string{"astro3d-small", "x.iot"}); err == nil || !strings.Contains(err.Error(), "read alone") {
		t.Errorf("a script with another input: %v", err)
	}
	if _, err := (&Opener{Params: []string{"x"}}).Open([]string{"astro3d-small"}); err == nil || !strings.Contains(err.Error(), "--param") {
		t.Errorf("--param x: %v", err)
	}
}

// TestFormOptions: the forms' options are bound to one flag set; an
// option of a form that takes no part in a conversion is a mistake.
func TestFormOptions(t *testing.T) {
	dir := t.TempDir()
	in := inputs(t, dir)
	fs := flag.NewFlagSet("convert", flag.ContinueOnError)
	o := &Opener{}
	o.Forms = Bind(fs, o)
	o.AddSelectFlags(fs)
	if err := fs.Parse([]string{"--include", "/nowhere", "--rank-per-file"}); err != nil {
		t.Fatal(err)
	}
	tr, err := o.Open([]string{in["strace"]})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(events(t, tr), "\n"); n != 0 {
		// Process events stay; calls on paths outside /nowhere go.
		var b bytes.Buffer
		lw, _ := NewLineWriter("text", &b)
		WriteLines(lw, filter.Apply(tr, &filter.Selection{Ops: mustOps(t, "posix,meta")}))
		if b.Len() > 0 {
			t.Errorf("--include /nowhere kept calls:\n%s", b.String())
		}
	}
	tr.Close()
	if err := o.Forms.CheckOptions([]string{"rank-per-file"}, "dxt", Binary); err == nil || !strings.Contains(err.Error(), "--rank-per-file is an option of --from/--to strace") {
		t.Errorf("CheckOptions: %v", err)
	}
	if err := o.Forms.CheckOptions([]string{"include", "salvage"}, "strace", "jsonl"); err == nil {
		t.Error("--salvage with strace to jsonl accepted")
	}
	names := strings.Split(Names(true), ", ")
	if !slices.Contains(names, "strace") || slices.Contains(names, "chrome") {
		t.Errorf("Names(true) = %v", names)
	}
}

func mustOps(t *testing.T, s string) *filter.Ops {
	o, err := filter.ParseOps(s)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestDescribe: the help's lists of forms name every form read or
// written once, and every description starts in one column, whatever
// the longest name ("recorder").
func TestDescribe(t *testing.T) {
	for _, reads := range []bool{true, false} {
		var b bytes.Buffer
		Describe(&b, reads)
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		if want := len(strings.Split(Names(reads), ", ")); len(lines) != want {
			t.Fatalf("reads %v: %d lines, want %d:\n%s", reads, len(lines), want, b.String())
		}
		col := -1
		for _, l := range lines {
			name := strings.Fields(l)[0]
			at := strings.Index(l, name) + len(name)
			at += len(l[at:]) - len(strings.TrimLeft(l[at:], " "))
			if col == -1 {
				col = at
			}
			if at != col || l[at-1] != ' ' {
				t.Errorf("reads %v: %q: description at column %d, want %d", reads, l, at, col)
			}
		}
	}
}

// TestCodecNotLinked: a form whose codec lives in a package this program
// does not link (Parquet's, without convert/parquet, as in ioreplay) is
// listed, and converting to it says so instead of failing otherwise.
func TestCodecNotLinked(t *testing.T) {
	if f := Lookup("parquet"); f == nil || f.Bind != nil {
		t.Fatalf("parquet form %+v: want it listed without its codec (convert/parquet sets it)", f)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "t.jsonl")
	if err := os.WriteFile(in, []byte(`{"rank":0,"op":"open","path":"/f","fd":3,"ret":3}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "t.parquet")
	c := &Conversion{Opener: &Opener{}, Output: out, Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}
	err := c.Run([]string{in})
	if err == nil || !strings.Contains(err.Error(), "does not write it") {
		t.Fatalf("convert to parquet without its codec: %v", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s written", out)
	}
}
