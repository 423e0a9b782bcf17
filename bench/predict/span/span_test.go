package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
)

// TestMeasure: the span runs from the first file call of any rank to the
// end of the last one; process events, communication and markers outside
// it are lead and tail; busy is the busiest rank's time in file calls,
// without the POSIX calls an MPI library made inside an MPI-IO call.
func TestMeasure(t *testing.T) {
	const us = int64(1000)
	path := filepath.Join(t.TempDir(), "t.iot")
	w, err := format.Create(path, trace.Meta{Ranks: 2, Clock: "nominal", Creator: "span test"})
	if err != nil {
		t.Fatal(err)
	}
	f := w.Intern("/data/f")
	ranks := [][]trace.Event{
		{
			{Op: trace.OpExec, Start: 0, Path: w.Intern("/bin/app")},
			{Op: trace.OpOpen, Start: 100 * us, Dur: 10 * us, Path: f, FD: 3, Ret: 3},
			{Op: trace.OpPwrite, Start: 200 * us, Dur: 50 * us, FD: 3, Size: 4096, Ret: 4096},
			{Op: trace.OpMPIBarrier, Start: 300 * us, Dur: 400 * us},
			{Op: trace.OpClose, Start: 800 * us, Dur: 5 * us, FD: 3},
			{Op: trace.OpMPIBarrier, Start: 900 * us, Dur: 100 * us},
			{Op: trace.OpExit, Start: 1200 * us},
		},
		{
			{Op: trace.OpMPIBarrier, Start: 20 * us, Dur: 30 * us},
			{Op: trace.OpMPIFileOpen, Start: 60 * us, Dur: 20 * us, Path: f, FD: 1},
			{Op: trace.OpMPIFileWriteAtAll, Start: 300 * us, Dur: 500 * us, FD: 1, Size: 1 << 20, Ret: 1 << 20},
			{Op: trace.OpPwrite, Start: 310 * us, Dur: 480 * us, FD: 7, Size: 1 << 20, Ret: 1 << 20, Flags: trace.InMPIIO},
			{Op: trace.OpMPIFileClose, Start: 850 * us, Dur: 30 * us, FD: 1},
			{Op: trace.OpMPIBarrier, Start: 900 * us, Dur: 100 * us},
		},
	}
	for r, evs := range ranks {
		for i := range evs {
			evs[i].Rank = uint32(r)
		}
		if err := w.Rank(uint32(r)).WriteEvents(evs); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := measure(path)
	if err != nil {
		t.Fatal(err)
	}
	want := result{
		span:  880*us - 60*us, // rank 1's MPI_File_open to the end of its close
		busy:  20*us + 500*us + 30*us,
		lead:  60 * us,
		tail:  1200*us - 880*us,
		calls: 7,
		first: trace.OpMPIFileOpen,
		last:  trace.OpMPIFileClose,
	}
	if got != want {
		t.Errorf("measure = %+v, want %+v", got, want)
	}

	// A trace without file calls has no span.
	empty := filepath.Join(t.TempDir(), "e.iot")
	w, err = format.Create(empty, trace.Meta{Ranks: 1, Clock: "nominal"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Rank(0).WriteEvents([]trace.Event{{Op: trace.OpMPIBarrier, Start: 5, Dur: 5}}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if _, err := measure(empty); err == nil || !strings.Contains(err.Error(), "no file calls") {
		t.Errorf("measure of a trace without file calls: %v", err)
	}
}

// TestDryRun runs "run.sh --dry-run": it builds every helper of the
// benchmark (iotrace, ioreplay, ioreplay with -tags mpi for an @mpirun
// mode, this program, and ior.c and mdtest.c with mpicc), checks that the
// programs it drives are installed, and prints the plan. The benchmark
// itself needs root and a quarter of an hour.
func TestDryRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the benchmark's helpers")
	}
	for _, tool := range []string{"bash", "go", "cc", "mpicc", "mpirun", "sqlite3", "fio", "git", "tar"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is missing", tool)
			}
			t.Skipf("%s is missing", tool)
		}
	}
	cmd := exec.Command("bash", "../run.sh", "--dry-run")
	cmd.Env = append(os.Environ(), "REPS=3", "MODES=original think afap cold=--timing=think,--cache=cold,@oneshot mpi=@mpirun,--timing=think")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run.sh --dry-run: %v\n%s", err, out)
	}
	s := string(out)
	for _, want := range []string{
		"ior-posix", "ior-direct", "ior-mpiio", "mdtest-fsync", "h5py", "sqlite", "fio", "tar-sync", "git",
		"targets: tmpfs disk slow",
		"cold (--timing=think --cache=cold, one-shot)",
		"mpi (--timing=think, under mpirun)",
		// 10 applications × 3 targets × 3 repetitions; replays: 4 modes
		// for all of them, the @mpirun mode for the 6 MPI ones, × 2
		// captures; a capture per repetition on each of 2 file systems.
		"runs: 60 captures, 90 real runs and 828 replays (3 repetitions); up to 11 repetitions (and captures) where the runs take under 0.1 s",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the plan lacks %q:\n%s", want, s)
		}
	}

	// The sizes: one table gives the commands run and those printed.
	if !strings.Contains(s, "mpirun -np 2 ior -a POSIX -F -e -b 8m -t 256k -o DIR/testFile") {
		t.Errorf("the default sizes are not the small ones:\n%s", s)
	}
	cmd = exec.Command("bash", "../run.sh", "--dry-run")
	cmd.Env = append(os.Environ(), "SIZES=large", "APPS=ior-posix mdtest h5py")
	out, err = cmd.CombinedOutput()
	for _, want := range []string{"ior -a POSIX -F -e -b 64m -t 256k -o DIR/testFile", "mdtest -n 2000 -d DIR", "h5.py DIR/field.h5 16 262144"} {
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("SIZES=large: %v, the plan lacks %q:\n%s", err, want, out)
		}
	}
	cmd = exec.Command("bash", "../run.sh", "--dry-run")
	cmd.Env = append(os.Environ(), "SIZES=huge")
	if out, err = cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "SIZES is large or small") {
		t.Errorf("run.sh accepted SIZES=huge: %v\n%s", err, out)
	}

	// A mode is ioreplay flags and procedures; anything else is an error.
	cmd = exec.Command("bash", "../run.sh", "--dry-run")
	cmd.Env = append(os.Environ(), "MODES=think bad=timing")
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "mode bad=timing") {
		t.Errorf("run.sh accepted a bad mode: %v\n%s", err, out)
	}
}

// TestReport runs "run.sh --report" on a kept run of two repetitions and
// two captures per file system, and checks the errors it derives: a
// prediction against the real run of its repetition, and a self-replay
// also against the capture it replays (repetition r, capture r).
func TestReport(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	meta := `declare -- start="2026-11-29 10:00 UTC"
declare -- load_start="0.1 0.1 0.1"
declare -- load_end="0.1 0.1 0.1"
declare -- minutes="1"
declare -- commit="test"
declare -- host_s="2 cores"
declare -x APPS="sqlite"
declare -x TARGETS="tmpfs disk"
declare -- CAPTURE_FS="tmpfs disk"
declare -- RECORDER="preload"
declare -x REPS="2"
declare -- CAPTURES="2"
declare -- FAST="0.1"
declare -- FAST_REPS="3"
declare -- SLOW_IOPS="300"
declare -- SLOW_MBPS="50"
declare -- SETTLE="0.3"
declare -- mode_names_s="predict"
`
	rows := []string{
		// kind app capture-fs target mode rep value ...
		"capture\tsqlite\ttmpfs\t-\t-\t1\t0.010\t-\t0.5\t0.1\tspan=0.010",
		"capture\tsqlite\ttmpfs\t-\t-\t2\t0.020\t-\t0.5\t0.1\tspan=0.020",
		"capture\tsqlite\tdisk\t-\t-\t1\t0.040\t-\t0.5\t0.1\tspan=0.040",
		"capture\tsqlite\tdisk\t-\t-\t2\t0.040\t-\t0.5\t0.1\tspan=0.040",
		"real\tsqlite\ttmpfs\t-\t-\t1\t0.010\t0.5\t0.002\t0.1",
		"real\tsqlite\ttmpfs\t-\t-\t2\t0.010\t0.5\t0.002\t0.1",
		"real\tsqlite\tdisk\t-\t-\t1\t0.040\t0.5\t0.002\t0.1",
		"real\tsqlite\tdisk\t-\t-\t2\t0.040\t0.5\t0.002\t0.1",
		// self-replay on tmpfs: 0.011 of capture 1 (0.010), 0.022 of
		// capture 2 (0.020): +10 % against each capture; against the
		// real runs (0.010) +10 % and +120 %: median +65 %.
		"replay\tsqlite\ttmpfs\ttmpfs\tpredict\t1\t0.011\t0.1\t0\t0\t0.1\t",
		"replay\tsqlite\ttmpfs\ttmpfs\tpredict\t2\t0.022\t0.1\t0\t0\t0.1\t",
		// disk to tmpfs: 0.0095 and 0.0105 of 0.010: -5 % and +5 %.
		"replay\tsqlite\ttmpfs\tdisk\tpredict\t1\t0.0095\t0.1\t0\t0\t0.1\t",
		"replay\tsqlite\ttmpfs\tdisk\tpredict\t2\t0.0105\t0.1\t0\t0\t0.1\t",
	}
	if err := os.WriteFile(filepath.Join(dir, "meta.sh"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "results.tsv"), []byte(strings.Join(rows, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", "../run.sh", "--report", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("run.sh --report: %v\n%s", err, out)
	}
	s := string(out)
	for _, want := range []string{
		"| sqlite | disk | tmpfs | 0.0100 |",
		// The interval of the median of 2 errors is their range.
		" 0.0100, +0.0 % (-5.0…+5.0) |",
		"| sqlite | tmpfs | tmpfs | 0.0100 |",
		" 0.0165, **+65.0 %** (+10.0…+120.0) | **+10.0 %** (+10.0…+10.0) |",
		"| predict, prediction | 1 | 0.0 % | 1 | 1 | 0 | 0 | sqlite disk→tmpfs +0.0 % |",
		"| predict, self-replay | 1 | 65.0 % | 0 | 0 | 1 | 0 | sqlite tmpfs→tmpfs +65.0 % |",
		"| predict, self-replay against its capture | 1 | 10.0 % | 0 | 1 | 1 | 0 | sqlite tmpfs→tmpfs +10.0 % |",
		"2 paired repetitions, 3 where the real runs' median is under 0.1 s,",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the report lacks %q:\n%s", want, s)
		}
	}

	// 21 repetitions whose errors are 0, 1, …, 20 %: the median 10 %,
	// its 95 % interval the 6th and 16th of them (97.3 %; the 7th and
	// 15th would hold it 92.2 % of the time).
	dir21 := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir21, "meta.sh"), []byte(strings.Replace(strings.Replace(meta, `REPS="2"`, `REPS="21"`, 1), `TARGETS="tmpfs disk"`, `TARGETS="tmpfs"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	var r21 []string
	for r := 1; r <= 21; r++ {
		r21 = append(r21,
			fmt.Sprintf("capture\tsqlite\ttmpfs\t-\t-\t%d\t0.010\t-\t0.5\t0.1\tspan=0.010", r),
			fmt.Sprintf("real\tsqlite\ttmpfs\t-\t-\t%d\t0.010\t0.5\t0.002\t0.1", r),
			fmt.Sprintf("replay\tsqlite\ttmpfs\ttmpfs\tpredict\t%d\t%.4f\t0.1\t0\t0\t0.1\t", r, 0.010*(1+float64((r*8)%21)/100)))
	}
	if err := os.WriteFile(filepath.Join(dir21, "results.tsv"), []byte(strings.Join(r21, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command("bash", "../run.sh", "--report", dir21).CombinedOutput()
	if err != nil {
		t.Fatalf("run.sh --report: %v\n%s", err, out)
	}
	for _, want := range []string{
		" 0.0110, +10.0 % (+5.0…+15.0) | **+10.0 %** (+5.0…+15.0) |",
		"| predict, self-replay | 1 | 10.0 % | 0 | 1 | 0 | 0 |",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the report of 21 repetitions lacks %q:\n%s", want, out)
		}
	}

	// --write puts a new section before the sections of other runs,
	// not inside their markers.
	doc := filepath.Join(dir, "doc.md")
	old := "# Benchmarks\n\n<!-- bench/predict old -->\n## Prediction (old)\n<!-- /bench/predict old -->\n\n## Other\n"
	if err := os.WriteFile(doc, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "../run.sh", "--report", dir, "--write", "new")
	cmd.Env = append(os.Environ(), "DOC="+doc)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run.sh --report --write: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(doc)
	got := string(b)
	n, e, o := strings.Index(got, "<!-- bench/predict new -->"), strings.Index(got, "<!-- /bench/predict new -->"), strings.Index(got, "<!-- bench/predict old -->")
	if n < 0 || e < n || o < e || !strings.HasSuffix(got, "<!-- /bench/predict old -->\n\n## Other\n") {
		t.Errorf("the new section is not before the old one:\n%s", got)
	}
}
