package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/convert"
	"github.com/iotrace/iotrace/report"
)

// TestReplaysImportableInputs: ioreplay takes strace output, DXT text,
// fio iologs, JSON lines and CSV directly, and replays them as the trace
// iotrace convert makes of them: the replay's own trace has the same
// calls.
func TestReplaysImportableInputs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for form, in := range map[string]string{
		"strace": "../../convert/strace/testdata/cp.strace",
		"dxt":    "../../convert/dxt/testdata/ior-posix-fpp-2ranks-256k.txt",
		"fio":    write("rank0.log", "fio version 3 iolog\n146 /data/f add\n710 /data/f open\n718 /data/f write 0 4096\n10691 /data/f write 4096 4096\n23923 /data/f read 0 4096\n30000 /data/f close\n"),
		"jsonl": write("events.jsonl", `{"rank":1,"op":"open","path":"/d/f1","ret":3,"flags":"O_RDWR|O_CREAT","mode":"0600","start_ns":5,"dur_ns":1}
{"rank":0,"op":"open","path":"/d/f0","ret":3,"flags":"O_WRONLY|O_CREAT","mode":"0600","start_ns":1,"dur_ns":2}
{"rank":0,"op":"pwrite","fd":3,"offset":0,"size":10,"ret":10,"start_ns":3,"dur_ns":1}
{"rank":1,"op":"pwrite","fd":3,"offset":0,"size":10,"ret":10,"start_ns":7,"dur_ns":1}
`),
		"csv": write("events.csv", "rank,op,path,flags,mode,fd,size,ret,start_ns,dur_ns\n0,open,/w,O_WRONLY|O_CREAT,0644,,0,3,0,1\n0,write,,,,3,8,8,1,1\n"),
	} {
		rec := filepath.Join(dir, form+"-replay.iot")
		out := mustRun(t, "--timing", "afap", "--record", rec, "--by", "op", in)
		if !strings.Contains(out, "TOTAL") {
			t.Errorf("%s: %s", form, out)
		}
		st := stats(t, rec)
		o := &convert.Opener{}
		tr, err := o.Open([]string{in})
		if err != nil {
			t.Fatal(err)
		}
		want, err := report.Compute(tr, report.Options{Detail: true})
		tr.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range []string{"write", "pwrite", "read", "pread"} {
			if g, w := opCount(st, op), opCount(want, op); g != w {
				t.Errorf("%s: %d %s calls replayed, want the input's %d", form, g, op, w)
			}
		}
		if form != "strace" && opCount(st, "write")+opCount(st, "pwrite") == 0 { // cp copies with copy_file_range
			t.Errorf("%s: no write replayed", form)
		}
	}
}

// opCount is the count of op's row in st, 0 without one.
func opCount(st *report.Stats, op string) int64 {
	for _, r := range st.Ops {
		if r.Family == op {
			return r.Count
		}
	}
	return 0
}
