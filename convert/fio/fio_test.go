package fio

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/target"
	"github.com/iotrace/iotrace/trace/tracegen"
)

// needFio returns the fio binary; without it the test is skipped, except
// under CI, where it fails.
func needFio(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("fio")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("fio is required under CI (.ci/run installs it): %v", err)
		}
		t.Skip("fio not installed (apt-get install fio); skipping the runs of exported jobs")
	}
	return p
}

// fioTotals are the sums over the rank jobs of fio's JSON output.
type fioTotals struct {
	Reads, Writes         int64
	ReadBytes, WriteBytes int64
	Jobs                  int
}

// runFio runs the job in its directory and sums fio's counts over the
// jobs named rank*.
func runFio(t *testing.T, fio, job string, extra ...string) fioTotals {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := append([]string{"--output-format=json"}, extra...)
	args = append(args, filepath.Base(job))
	cmd := exec.CommandContext(ctx, fio, args...)
	cmd.Dir = filepath.Dir(job)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("fio %s: %v\nstderr:\n%s\nstdout:\n%.2000s", job, err, stderr.String(), out)
	}
	// fio may print notes before the JSON document.
	if i := strings.IndexByte(string(out), '{'); i > 0 {
		out = out[i:]
	}
	var res struct {
		Jobs []struct {
			Jobname string `json:"jobname"`
			Error   int    `json:"error"`
			Read    struct {
				TotalIOs int64 `json:"total_ios"`
				IOBytes  int64 `json:"io_bytes"`
			} `json:"read"`
			Write struct {
				TotalIOs int64 `json:"total_ios"`
				IOBytes  int64 `json:"io_bytes"`
			} `json:"write"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("fio's JSON: %v\n%.2000s", err, out)
	}
	var tot fioTotals
	for _, j := range res.Jobs {
		if j.Error != 0 {
			t.Errorf("fio job %s: error %d\n%s", j.Jobname, j.Error, stderr.String())
		}
		if !strings.HasPrefix(j.Jobname, "rank") {
			continue
		}
		tot.Jobs++
		tot.Reads += j.Read.TotalIOs
		tot.Writes += j.Write.TotalIOs
		tot.ReadBytes += j.Read.IOBytes
		tot.WriteBytes += j.Write.IOBytes
	}
	return tot
}

// traceTotals counts the reads and writes of a trace that moved data.
func traceTotals(t *testing.T, tr trace.Trace) fioTotals {
	t.Helper()
	var tot fioTotals
	for _, r := range tr.Ranks() {
		src, _ := tr.Rank(r)
		evs, err := trace.ReadAll(src)
		if err != nil {
			t.Fatal(err)
		}
		moved := false
		for _, e := range evs {
			if e.Ret <= 0 {
				continue
			}
			switch e.Op.Dir() {
			case trace.DirRead:
				tot.Reads++
				tot.ReadBytes += e.Ret
				moved = true
			case trace.DirWrite:
				tot.Writes++
				tot.WriteBytes += e.Ret
				moved = true
			}
		}
		if moved {
			tot.Jobs++
		}
	}
	return tot
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestExportIOR exports an IOR-like trace (write then read back, each
// rank its own file) and checks the job file and the iologs line by line
// against the trace.
func TestExportIOR(t *testing.T) {
	dir := t.TempDir()
	tr := tracegen.IOR(3, 5, 1)
	job := filepath.Join(dir, "ior.fio")
	s, err := Export(tr, job, ExportOptions{Source: "ior"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Jobs != 3 || s.Writes != 15 || s.Reads != 15 || s.WriteBytes != 15*4096 || s.LeftOut() != 0 || len(s.Prepared) != 0 {
		t.Fatalf("summary %+v", s)
	}
	if s.Note() != "" {
		t.Errorf("note %q for a trace fio expresses whole", s.Note())
	}
	j := readFile(t, job)
	for _, want := range []string{"[global]\nioengine=psync\nreplay_time_scale=100\n;replay_no_stall=1\n", "[rank0]\nread_iolog=ior-rank0.iolog\n", "[rank2]\nread_iolog=ior-rank2.iolog\n"} {
		if !strings.Contains(j, want) {
			t.Errorf("job file lacks %q:\n%s", want, j)
		}
	}
	if strings.Contains(j, "[prepare]") || strings.Contains(j, "stonewall") {
		t.Errorf("a prepare job for a trace that writes what it reads:\n%s", j)
	}
	log := readFile(t, filepath.Join(dir, "ior-rank1.iolog"))
	lines := strings.Split(strings.TrimSpace(log), "\n")
	if lines[0] != headerV3 {
		t.Fatalf("header %q", lines[0])
	}
	// The common prefix /scratch/ior goes; names stay relative.
	if !strings.HasPrefix(lines[1], "1 testFile.00000001 add") {
		t.Errorf("first line %q: want the add at 1 µs", lines[1])
	}
	var writes, reads, opens, closes int
	var prev int64
	for i, l := range lines[1:] {
		f := strings.Fields(l)
		if f[1] != "testFile.00000001" {
			t.Errorf("line %d names %q", i+2, f[1])
		}
		ts := mustInt(t, f[0])
		if ts < prev {
			t.Errorf("line %d: timestamp %d after %d", i+2, ts, prev)
		}
		prev = ts
		switch f[2] {
		case "write", "read":
			off := mustInt(t, f[3])
			if f[4] != "4096" || off%4096 != 0 || off >= 5*4096 {
				t.Errorf("line %d: %q", i+2, l)
			}
			if f[2] == "write" {
				writes++
			} else {
				reads++
			}
		case "open":
			opens++
		case "close":
			closes++
		}
	}
	if writes != 5 || reads != 5 || opens != 2 || closes != 2 {
		t.Errorf("rank 1: %d writes, %d reads, %d opens, %d closes:\n%s", writes, reads, opens, closes, log)
	}
	// Timestamps follow the trace: the last read is issued when the
	// rank's last read started.
	src, _ := tr.Rank(1)
	evs, _ := trace.ReadAll(src)
	src0, _ := tr.Rank(0)
	evs0, _ := trace.ReadAll(src0)
	t0 := min(evs[0].Start, evs0[0].Start)
	var lastRead int64
	for _, e := range evs {
		if e.Op == trace.OpRead {
			lastRead = e.Start
		}
	}
	var logRead int64
	for _, l := range lines {
		if f := strings.Fields(l); len(f) == 5 && f[2] == "read" {
			logRead = mustInt(t, f[0])
		}
	}
	if want := (lastRead-t0)/1000 + 1; logRead != want {
		t.Errorf("last read at %d µs, want %d", logRead, want)
	}
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	var v int64
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("%q is not a number", s)
		}
		v = v*10 + int64(c-'0')
	}
	return v
}

// TestExportRunsInFio is the acceptance test of the fio export: fio runs
// the exported job of generated traces as is, and issues as many reads
// and writes, of as many bytes, as the traces hold.
func TestExportRunsInFio(t *testing.T) {
	fio := needFio(t)
	for _, c := range []struct {
		name    string
		tr      trace.Trace
		opts    ExportOptions
		prepare bool
	}{
		{"ior", tracegen.IOR(4, 200, 7), ExportOptions{NoStall: true}, false},
		// Alltoalls and seeks have no iolog form; the writes stay.
		{"twophase", tracegen.TwoPhase(3, 2, 2, 8, 4096, 3), ExportOptions{NoStall: true, Target: "out"}, false},
		// Reads of a file nobody writes: the prepare job makes it.
		{"reads", readsTrace(), ExportOptions{Speed: 4, Target: "it's here"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			job := filepath.Join(dir, c.name+".fio")
			s, err := Export(c.tr, job, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(s.Prepared) > 0; got != c.prepare {
				t.Errorf("prepared %v", s.Prepared)
			}
			want := traceTotals(t, c.tr)
			if s.Reads != want.Reads || s.Writes != want.Writes || s.ReadBytes != want.ReadBytes || s.WriteBytes != want.WriteBytes {
				t.Errorf("summary %+v, trace %+v", s, want)
			}
			if c.opts.Target != "" {
				// The job makes its directories: it runs where it is copied.
				os.RemoveAll(filepath.Join(dir, strings.ReplaceAll(c.opts.Target, " ", "_")))
			}
			got := runFio(t, fio, job)
			if got != want {
				t.Errorf("fio issued %+v, the trace holds %+v\njob:\n%s", got, want, readFile(t, job))
			}
			if c.opts.Target != "" {
				ents, _ := os.ReadDir(filepath.Join(dir, strings.ReplaceAll(c.opts.Target, " ", "_")))
				if len(ents) == 0 {
					t.Errorf("nothing written under --target %s", c.opts.Target)
				}
			}
		})
	}
}

// readsTrace: two ranks read a file that exists before the run (the
// trace does not create it), with a gap of 20 ms between calls.
func readsTrace() trace.Trace {
	m := trace.NewMemTrace()
	m.M.Ranks = 2
	in := m.Paths.Intern("/data/input.dat")
	for r := uint32(0); r < 2; r++ {
		t := int64(1000)
		add := func(e trace.Event) {
			e.Rank, e.Start, e.Dur = r, t, 1000
			t += 20e6
			m.Add(e)
		}
		add(trace.Event{Op: trace.OpOpen, Path: in, Flags: trace.ORdonly, Ret: 3})
		for i := int64(0); i < 4; i++ {
			add(trace.Event{Op: trace.OpPread, FD: 3, Offset: (int64(r)*4 + i) * 65536, Size: 65536, Ret: 65536})
		}
		add(trace.Event{Op: trace.OpStat, Path: in})
		add(trace.Event{Op: trace.OpMPIBarrier})
		add(trace.Event{Op: trace.OpClose, FD: 3})
	}
	return m
}

// TestExportLeftOut: what fio cannot express is counted, by call, and
// the job file says so; paths never leave the target.
func TestExportLeftOut(t *testing.T) {
	dir := t.TempDir()
	m := trace.NewMemTrace()
	f := m.Paths.Intern("/abs/dir/f")
	esc := m.Paths.Intern("/abs/dir/../../../etc/passwd")
	dev := m.Paths.Intern("/dev/null")
	m.Add(
		trace.Event{Op: trace.OpOpen, Path: f, Flags: trace.OWronly | trace.OCreat, Ret: 3, Start: 10},
		trace.Event{Op: trace.OpPwrite, FD: 3, Size: 100, Ret: 100, Start: 20},
		trace.Event{Op: trace.OpPwrite, FD: 3, Size: 100, Ret: -28, Start: 25}, // ENOSPC
		trace.Event{Op: trace.OpFsync, FD: 3, Start: 30},
		trace.Event{Op: trace.OpFtruncate, FD: 3, Size: 10, Start: 40},
		trace.Event{Op: trace.OpClose, FD: 3, Start: 50},
		trace.Event{Op: trace.OpFsync, FD: 3, Start: 55, Ret: -9},
		trace.Event{Op: trace.OpUnlink, Path: f, Start: 60},
		trace.Event{Op: trace.OpMPIBarrier, Start: 70},
		trace.Event{Op: trace.OpRegionBegin, Path: m.Paths.Intern("phase"), Start: 80},
		trace.Event{Op: trace.OpOpen, Path: esc, Flags: trace.OWronly | trace.OCreat, Ret: 4, Start: 90},
		trace.Event{Op: trace.OpWrite, FD: 4, Size: 7, Ret: 7, Start: 100},
		trace.Event{Op: trace.OpOpen, Path: dev, Flags: trace.OWronly, Ret: 5, Start: 110},
		trace.Event{Op: trace.OpWrite, FD: 5, Size: 7, Ret: 7, Start: 120},
		trace.Event{Op: trace.OpWrite, FD: 9, Size: 7, Ret: 7, Start: 130},
		trace.Event{Op: trace.OpMkdir, Path: f, Start: 140, Rank: 1},
	)
	job := filepath.Join(dir, "j.fio")
	s, err := Export(m, job, ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{
		leftFailed: 2, "ftruncate": 1, "unlink": 1, "MPI_Barrier": 1, "region_begin": 1,
		leftSpecial: 1, leftUnknown: 1, "mkdir": 1,
	}
	for k, v := range want {
		if s.Left[k] != v {
			t.Errorf("left %q: %d, want %d (all: %v)", k, s.Left[k], v, s.Left)
		}
	}
	if len(s.Left) != len(want) {
		t.Errorf("left %v", s.Left)
	}
	if s.Writes != 2 || s.Syncs != 1 || fmt.Sprint(s.NoJob) != "[1]" {
		t.Errorf("summary %+v", s)
	}
	if n := s.Note(); !strings.Contains(n, "9 of 16 events have no fio iolog form") || !strings.Contains(n, "1 ranks have no read or write") {
		t.Errorf("note %q", n)
	}
	log := readFile(t, filepath.Join(dir, "j-rank0.iolog"))
	for _, l := range strings.Split(log, "\n")[1:] {
		if f := strings.Fields(l); len(f) > 1 && (strings.HasPrefix(f[1], "/") || strings.Contains(f[1], "..")) {
			t.Errorf("a name outside the target: %q", l)
		}
	}
	// The escaping path stays inside: /abs/dir/../../../etc/passwd → etc/passwd.
	if !strings.Contains(log, " etc/passwd write 0 7") || !strings.Contains(log, " abs/dir/f sync 0 0") {
		t.Errorf("iolog:\n%s", log)
	}
	if _, err := os.Stat(filepath.Join(dir, "etc")); err != nil {
		t.Errorf("the directory of etc/passwd was not made under the job's directory: %v", err)
	}
	j := readFile(t, job)
	if !strings.Contains(j, "; Left out, no iolog form (9 events):") {
		t.Errorf("job file:\n%s", j)
	}
}

// TestExportMPIIOView: an MPI-IO write through a strided view becomes
// one entry per block, at the file offsets the view gives.
func TestExportMPIIOView(t *testing.T) {
	dir := t.TempDir()
	m := trace.NewMemTrace()
	f := m.Paths.Intern("/x/shared")
	m.Add(
		trace.Event{Op: trace.OpMPIFileOpen, Path: f, FD: 1, Flags: trace.MPIModeCreate | trace.MPIModeWronly, Start: 1},
		trace.Event{Op: trace.OpMPIFileSetView, FD: 1, Offset: 100, Size: 10, Stride: 40, Start: 2},
		trace.Event{Op: trace.OpMPIFileWriteAtAll, FD: 1, Offset: 5, Size: 25, Ret: 25, Start: 3},
		trace.Event{Op: trace.OpMPIFileClose, FD: 1, Start: 4},
	)
	s, err := Export(m, filepath.Join(dir, "v.fio"), ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	log := readFile(t, filepath.Join(dir, "v-rank0.iolog"))
	for _, want := range []string{"shared write 105 5\n", "shared write 140 10\n", "shared write 180 10\n", "shared close\n"} {
		if !strings.Contains(log, want) {
			t.Errorf("iolog lacks %q:\n%s", want, log)
		}
	}
	if s.Split != 1 || s.Writes != 3 || s.WriteBytes != 25 {
		t.Errorf("summary %+v", s)
	}
}

// TestExportLeavesMPIInternalCalls: the POSIX calls an MPI library made
// inside an MPI-IO call (recorded by the preload shim) are not exported
// again beside the MPI-IO call: every byte once.
func TestExportLeavesMPIInternalCalls(t *testing.T) {
	dir := t.TempDir()
	m := trace.NewMemTrace()
	f := m.Paths.Intern("/x/ior")
	in := trace.InMPIIO
	m.Add(
		trace.Event{Op: trace.OpMPIFileOpen, Path: f, FD: 1, Flags: trace.MPIModeCreate | trace.MPIModeRdwr, Start: 1},
		trace.Event{Op: trace.OpOpenat, Path: f, Flags: trace.ORdwr | trace.OCreat | in, Ret: 7, Start: 2},
		trace.Event{Op: trace.OpMPIFileWriteAt, FD: 1, Offset: 0, Size: 1 << 20, Ret: 1 << 20, Start: 3},
		trace.Event{Op: trace.OpPwrite, FD: 7, Offset: 0, Size: 1 << 20, Ret: 1 << 20, Flags: in, Start: 4},
		trace.Event{Op: trace.OpMPIFileReadAt, FD: 1, Offset: 0, Size: 1 << 20, Ret: 1 << 20, Start: 5},
		trace.Event{Op: trace.OpPread, FD: 7, Offset: 0, Size: 1 << 20, Ret: 1 << 20, Flags: in, Start: 6},
		trace.Event{Op: trace.OpClose, FD: 7, Flags: in, Start: 7},
		trace.Event{Op: trace.OpMPIFileClose, FD: 1, Start: 8},
	)
	s, err := Export(m, filepath.Join(dir, "m.fio"), ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Writes != 1 || s.WriteBytes != 1<<20 || s.Reads != 1 || s.ReadBytes != 1<<20 {
		t.Errorf("summary %+v: want one write and one read of 1 MiB", s)
	}
	if s.Left[leftInMPIIO] != 4 {
		t.Errorf("left out %v, want the 4 calls inside MPI-IO", s.Left)
	}
}

// TestExportRoundTrip reads the exported iologs back: the same calls at
// the same offsets, sizes and (µs) times.
func TestExportRoundTrip(t *testing.T) {
	dir := t.TempDir()
	tr := tracegen.IOR(2, 50, 9)
	if _, err := Export(tr, filepath.Join(dir, "rt.fio"), ExportOptions{Map: []target.MapRule{{Old: "/scratch", New: "s"}}}); err != nil {
		t.Fatal(err)
	}
	t0, err := firstStart(tr)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range tr.Ranks() {
		f, err := os.Open(filepath.Join(dir, fmt.Sprintf("rt-rank%d.iolog", r)))
		if err != nil {
			t.Fatal(err)
		}
		rd := NewReader(f, f.Name(), r, nil)
		got, err := trace.ReadAll(rd)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		src, _ := tr.Rank(r)
		orig, _ := trace.ReadAll(src)
		var gi int
		for _, e := range orig {
			if e.Op != trace.OpRead && e.Op != trace.OpWrite {
				continue
			}
			for gi < len(got) && got[gi].Op != trace.OpPread && got[gi].Op != trace.OpPwrite {
				gi++
			}
			if gi == len(got) {
				t.Fatalf("rank %d: the iolog ends before %+v", r, e)
			}
			g := got[gi]
			gi++
			if g.Op.Dir() != e.Op.Dir() || g.Offset != e.Offset || g.Size != e.Ret || g.Rank != r {
				t.Fatalf("rank %d: %+v, want %+v", r, g, e)
			}
			if want := ((e.Start-t0)/1000 + 1) * 1000; g.Start != want {
				t.Fatalf("rank %d: start %d, want %d", r, g.Start, want)
			}
			if p := rd.Path(g.Path); p != fmt.Sprintf("s/ior/testFile.%08d", r) {
				t.Fatalf("path %q", p)
			}
		}
	}
}
