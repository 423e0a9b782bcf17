package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// importables writes or names one input of each form iotrace imports.
func importables(t *testing.T, dir string) map[string]string {
	t.Helper()
	in := map[string]string{
		"strace": "../../convert/strace/testdata/cp.strace",
		"dxt":    "../../convert/dxt/testdata/ior-mpiio-4ranks-64k.txt",
	}
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	in["fio"] = write("rank0.log", "fio version 3 iolog\n146 /data/f add\n710 /data/f open\n718 /data/f write 0 4096\n10691 /data/f write 4096 4096\n23923 /data/f read 0 4096\n30000 /data/f close\n")
	in["jsonl"] = write("events.jsonl", `{"rank":1,"op":"open","path":"/d/f1","ret":3,"flags":"O_RDONLY","start_ns":5,"dur_ns":1}
{"rank":0,"op":"open","path":"/d/f0","ret":3,"flags":"O_WRONLY|O_CREAT","mode":"0600","start_ns":1,"dur_ns":2}
{"rank":0,"op":"pwrite","fd":3,"offset":0,"size":10,"ret":10,"start_ns":3,"dur_ns":1}
{"rank":1,"op":"read","fd":3,"size":10,"ret":10,"start_ns":7,"dur_ns":1}
`)
	in["csv"] = write("events.csv", "rank,op,path,size,ret,start_ns,dur_ns\n0,open,/w,0,3,0,1\n0,write,/w,8,8,1,1\n")
	return in
}

// TestReadsImportableInputs: stats, dump and compare take strace output,
// DXT text, fio iologs, JSON lines and CSV directly, as the trace that
// convert makes of them.
func TestReadsImportableInputs(t *testing.T) {
	dir := t.TempDir()
	for form, in := range importables(t, dir) {
		conv := filepath.Join(dir, form+".iot")
		mustRun(t, "convert", "-o", conv, in)
		if got, want := mustRun(t, "stats", "--by", "file", in), mustRun(t, "stats", "--by", "file", conv); got != want {
			t.Errorf("stats %s:\n%s\nwant (of the converted trace):\n%s", form, got, want)
		}
		if form != "jsonl" && form != "csv" { // those print in the order of their lines
			if got, want := mustRun(t, "dump", in), mustRun(t, "dump", conv); got != want {
				t.Errorf("dump %s:\n%s\nwant:\n%s", form, got, want)
			}
		}
		if out := mustRun(t, "compare", "--check", in, conv); !strings.Contains(out, "TOTAL") {
			t.Errorf("compare %s: %s", form, out)
		}
		if out := mustRun(t, "dump", "--format", "jsonl", "--from", form, in); !strings.Contains(out, `"op":`) {
			t.Errorf("dump --from %s: %s", form, out)
		}
	}
	// A form's input error is one line naming the file and line.
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"rank":0,"op":"nosuchcall"}`+"\n"), 0o644)
	if _, errOut, code := run(t, "stats", bad); code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, bad+":1:") {
		t.Errorf("stats of a bad file: exit %d, %q", code, errOut)
	}
}
