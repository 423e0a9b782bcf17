package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

var (
	ioreplayOnce sync.Once
	ioreplayBin  string
	ioreplayErr  error
)

// ioreplay builds the ioreplay command once, next to the iotrace binary.
func ioreplay(t *testing.T) string {
	t.Helper()
	ioreplayOnce.Do(func() {
		ioreplayBin = filepath.Join(filepath.Dir(iotraceBin), "ioreplay")
		out, err := exec.Command("go", "build", "-o", ioreplayBin, "../ioreplay").CombinedOutput()
		if err != nil {
			ioreplayErr = err
			ioreplayBin = string(out)
		}
	})
	if ioreplayErr != nil {
		t.Fatalf("building ioreplay: %v\n%s", ioreplayErr, ioreplayBin)
	}
	return ioreplayBin
}

var dxtSamples = []string{"ior-posix-fpp-2ranks-256k.txt", "ior-mpiio-4ranks-64k.txt"}

// dxtLayers are the layers each sample is replayed with. The MPI-IO
// sample's rank 0 also wrote Open MPI's files under /dev/shm through
// POSIX, which the replay prepares in the target like any files.
var dxtLayers = map[string][]string{
	"ior-posix-fpp-2ranks-256k.txt": {"auto", "all"},
	"ior-mpiio-4ranks-64k.txt":      {"auto", "posix", "mpiio", "all"},
}

// TestConvertDXTReplays: the shared Darshan DXT samples import through the
// CLI (the form guessed from the text), say once that the text has 0.1 ms
// resolution, and the imported traces replay with ioreplay, every event,
// without failures.
func TestConvertDXTReplays(t *testing.T) {
	dir := t.TempDir()
	for _, name := range dxtSamples {
		for _, layer := range dxtLayers[name] {
			t.Run(name+"/"+layer, func(t *testing.T) {
				in := filepath.Join("..", "..", "convert", "dxt", "testdata", name)
				out := filepath.Join(dir, strings.TrimSuffix(name, ".txt")+"-"+layer+".iot")
				_, stderr, code := run(t, "convert", "--layer", layer, "-o", out, in)
				if code != 0 {
					t.Fatalf("convert: exit %d: %s", code, stderr)
				}
				if strings.Count(stderr, "0.1 ms") != 1 {
					t.Errorf("the resolution note is not there once:\n%s", stderr)
				}
				r, evs := readTrace(t, out)
				if m := r.Meta(); m.Ranks == 0 || m.Creator != "iotrace convert --from dxt" || len(m.Command) == 0 {
					t.Errorf("meta %+v", m)
				}
				summary := filepath.Join(dir, "summary.json")
				cmd := exec.Command(ioreplay(t), "--quiet", "--timing", "afap", "--strict", "--target", filepath.Join(dir, "target-"+layer), "--summary", summary, out)
				if b, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("ioreplay: %v\n%s", err, b)
				}
				var s struct {
					Ranks     int
					Events    int64
					Errors    []any
					Skips     []any
					Unmatched int
				}
				b, _ := os.ReadFile(summary)
				if err := json.Unmarshal(b, &s); err != nil {
					t.Fatal(err)
				}
				if s.Events != int64(len(evs)) || len(s.Errors) != 0 || len(s.Skips) != 0 || s.Unmatched != 0 || s.Ranks != len(r.Ranks()) {
					t.Errorf("replay summary %s for %d events", b, len(evs))
				}
			})
		}
	}
}

// TestConvertForms runs the other forms through the CLI: fio out and
// back, Chrome JSON, the guessed forms, and the mistakes users make.
func TestConvertForms(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "tp.iot")
	mustRun(t, "generate", "twophase", "--ranks", "3", "--calls", "2", "-o", tr)
	_, orig := readTrace(t, tr)

	// fio: the job and its iologs; the note counts the alltoalls.
	job := filepath.Join(dir, "out", "tp.fio")
	os.Mkdir(filepath.Dir(job), 0o755)
	_, stderr, code := run(t, "convert", "--timing", "afap", "-o", job, tr)
	if code != 0 || !strings.Contains(stderr, "MPI_Alltoall") {
		t.Fatalf("--to fio: exit %d: %s", code, stderr)
	}
	jf, _ := os.ReadFile(job)
	if !strings.Contains(string(jf), "\nreplay_no_stall=1\n") || !strings.Contains(string(jf), "[rank2]\nread_iolog=tp-rank2.iolog") {
		t.Errorf("job:\n%s", jf)
	}
	// Back from the iologs (the form guessed from their first line).
	back := filepath.Join(dir, "back.iot")
	logs, _ := filepath.Glob(filepath.Join(dir, "out", "tp-rank*.iolog"))
	if _, stderr, code := run(t, append([]string{"convert", "-o", back}, logs...)...); code != 0 {
		t.Fatalf("--from fio: %s", stderr)
	}
	_, evs := readTrace(t, back)
	var ow, bw int64
	for _, e := range orig {
		if e.Op.Dir() == trace.DirWrite {
			ow += e.Ret
		}
	}
	for _, e := range evs {
		if e.Op.Dir() == trace.DirWrite {
			bw += e.Ret
		}
	}
	if ow == 0 || ow != bw {
		t.Errorf("bytes written: trace %d, from the iologs %d", ow, bw)
	}

	// Chrome JSON, to a file and to standard output.
	cj := filepath.Join(dir, "tp.json")
	mustRun(t, "convert", "-o", cj, tr)
	var doc struct{ TraceEvents []map[string]any }
	b, _ := os.ReadFile(cj)
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.TraceEvents) < len(orig) {
		t.Errorf("chrome: %v, %d events for %d", err, len(doc.TraceEvents), len(orig))
	}
	if out := mustRun(t, "convert", "--to", "chrome", "-o", "-", tr); out != string(b) {
		t.Error("chrome on standard output differs from the file")
	}

	// CSV: one row per event, a header first.
	csvOut := mustRun(t, "convert", "--to", "csv", "-o", "-", tr)
	if n := strings.Count(csvOut, "\n"); n != len(orig)+1 {
		t.Errorf("csv: %d lines for %d events", n, len(orig))
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"convert", "--layer", "all", "-o", filepath.Join(dir, "x.csv"), tr}, "--layer is an option of --from/--to dxt, not of this conversion (iot to csv)"},
		{[]string{"convert", "--to", "pdf", "-o", "x", tr}, `--to "pdf": want one of chrome, csv, fio, iot, jsonl`},
		{[]string{"convert", "--from", "chrome", "-o", "x.iot", tr}, `--from "chrome": want one of`},
		{[]string{"convert", "--to", "fio", "-o", "-", tr}, "--to fio is not written to standard output"},
		{[]string{"convert", "--to", "fio", "-o", filepath.Join(dir, "job.txt"), tr}, "name the job file NAME.fio"},
		{[]string{"convert", "--timing", "think", "-o", filepath.Join(dir, "t.fio"), tr}, "--timing think: fio has no think-time replay"},
		{[]string{"convert", "--from", "strace", "-o", filepath.Join(dir, "s.iot"), filepath.Join(dir, "nothing")}, "no such file, nor"},
		{[]string{"convert", "--from", "dxt", "-o", filepath.Join(dir, "d.iot"), tr}, "not a line of darshan-dxt-parser output"},
	} {
		_, stderr, code := run(t, c.args...)
		if code != 1 || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, %q, want %q", c.args, code, stderr, c.want)
		}
	}
	for _, f := range []string{"x.csv", "s.iot", "d.iot", "t.fio"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("a failed conversion left %s", f)
		}
	}
}

// TestConvertFioRunsInFio is the fio acceptance test through the CLI: the
// job exported from a generated trace runs in fio as is, which issues as
// many reads and writes, of as many bytes, as the trace holds.
func TestConvertFioRunsInFio(t *testing.T) {
	fio := recNeedTool(t, "fio")
	dir := t.TempDir()
	tr := filepath.Join(dir, "ior.iot")
	mustRun(t, "generate", "ior", "--ranks", "4", "--calls", "300", "-o", tr)
	job := filepath.Join(dir, "ior.fio")
	mustRun(t, "convert", "--timing", "afap", "-o", job, tr)
	cmd := exec.Command(fio, "--output-format=json", "ior.fio")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("fio: %v\n%s", err, out)
	}
	if i := strings.IndexByte(string(out), '{'); i > 0 {
		out = out[i:]
	}
	var res struct {
		Jobs []struct {
			Jobname string
			Error   int
			Read    fioDir `json:"read"`
			Write   fioDir `json:"write"`
		}
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	var reads, writes, rb, wb int64
	for _, j := range res.Jobs {
		if j.Error != 0 {
			t.Errorf("job %s: error %d", j.Jobname, j.Error)
		}
		reads += j.Read.TotalIOs
		writes += j.Write.TotalIOs
		rb += j.Read.IOBytes
		wb += j.Write.IOBytes
	}
	_, evs := readTrace(t, tr)
	var tReads, tWrites, tRB, tWB int64
	for _, e := range evs {
		switch e.Op.Dir() {
		case trace.DirRead:
			tReads++
			tRB += e.Ret
		case trace.DirWrite:
			tWrites++
			tWB += e.Ret
		}
	}
	if len(res.Jobs) != 4 || reads != tReads || writes != tWrites || rb != tRB || wb != tWB {
		t.Errorf("fio: %d jobs, %d reads (%d B), %d writes (%d B); trace: %d reads (%d B), %d writes (%d B)",
			len(res.Jobs), reads, rb, writes, wb, tReads, tRB, tWrites, tWB)
	}
}

// fioDir is one direction of a fio job in its JSON output.
type fioDir struct {
	TotalIOs int64 `json:"total_ios"`
	IOBytes  int64 `json:"io_bytes"`
}
