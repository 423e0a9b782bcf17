package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iotrace/iotrace/internal/loadcheck"
	"github.com/iotrace/iotrace/internal/mpitest"
	"github.com/iotrace/iotrace/internal/pagecache"
	"github.com/iotrace/iotrace/report"
	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
	"github.com/iotrace/iotrace/trace/tracegen"
	"golang.org/x/sys/unix"
)

// bin is the ioreplay binary built for the end-to-end tests.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ioreplay-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "ioreplay")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building ioreplay: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	mpitest.Cleanup()
	os.Exit(code)
}

// run runs ioreplay and returns stdout, stderr and the exit code.
func runBin(t testing.TB, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running ioreplay %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}

func mustRun(t testing.TB, args ...string) string {
	t.Helper()
	out, errOut, code := runBin(t, args...)
	if code != 0 {
		t.Fatalf("ioreplay %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errOut)
	}
	return out
}

// writeTrace writes every rank of t to a trace file.
func writeTrace(t testing.TB, path string, tr trace.Trace) {
	t.Helper()
	w, err := format.Create(path, tr.Meta())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range tr.Ranks() {
		src, err := tr.Rank(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := trace.Copy(w.Rank(r), src); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func stats(t testing.TB, path string) *report.Stats {
	t.Helper()
	r, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if w := r.Warnings(); len(w) > 0 {
		t.Fatalf("%s: %v", path, w)
	}
	st, err := report.Compute(r, report.Options{Detail: true})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestAFAPReplayKeepsCountsAndBytes replays an 8-rank astro3d-like trace
// (two-phase strided dumps with MPI_Alltoall) as fast as possible and
// checks that the replay's own trace has the input's calls and bytes, op
// by op.
func TestAFAPReplayKeepsCountsAndBytes(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "astro.iot")
	writeTrace(t, in, tracegen.TwoPhase(8, 2, 6, 16, 4096, 7))
	rec := filepath.Join(dir, "replay.iot")
	out := mustRun(t, "--timing", "afap", "--record", rec, "--format", "json", "--quiet", in)
	var js struct {
		Ops []struct {
			Op    string `json:"op"`
			Count int64  `json:"count"`
		} `json:"ops"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil || len(js.Ops) == 0 {
		t.Fatalf("report is not the JSON of stats: %v\n%s", err, out)
	}
	a, b := stats(t, in), stats(t, rec)
	if a.Ranks != 8 || b.Ranks != 8 || a.Events != b.Events {
		t.Fatalf("ranks %d → %d, events %d → %d", a.Ranks, b.Ranks, a.Events, b.Events)
	}
	c := report.Compare(a, b)
	if m := c.Mismatches(); len(m) > 0 {
		t.Fatalf("counts differ in %v", m)
	}
	for _, row := range c.Rows {
		if row.A.Bytes != row.B.Bytes || row.B.Errors != 0 {
			t.Errorf("%s: %d bytes → %d, %d errors", row.Op, row.A.Bytes, row.B.Bytes, row.B.Errors)
		}
	}
	// The same with --compare, in text.
	out = mustRun(t, "--timing", "afap", "--compare", in)
	if !strings.Contains(out, "All counts match.") || !strings.Contains(out, "run time b/a") {
		t.Fatalf("--compare output:\n%s", out)
	}
}

// TestAstro3dSampleReplays replays the astro3d-small sample (Thakur et
// al.'s two-phase dumps: 8 ranks, 4 dumps, about 230 MB) with 8 ranks as
// fast as possible; the replay's own trace has the script's calls and
// bytes, op by op, and no failure.
func TestAstro3dSampleReplays(t *testing.T) {
	src := filepath.Join("..", "..", "samples", "astro3d-small.iop")
	rec := filepath.Join(t.TempDir(), "replay.iot")
	mustRun(t, "--ranks", "8", "--timing", "afap", "--record", rec, "--quiet", src)
	prog, err := script.Load(src)
	if err != nil {
		t.Fatal(err)
	}
	exp, err := script.Expand(prog, script.Config{Ranks: 8})
	if err != nil {
		t.Fatal(err)
	}
	a, err := report.Compute(exp, report.Options{Detail: true})
	if err != nil {
		t.Fatal(err)
	}
	b := stats(t, rec)
	if b.Ranks != 8 || a.Events != b.Events {
		t.Fatalf("ranks %d, events %d → %d", b.Ranks, a.Events, b.Events)
	}
	c := report.Compare(a, b)
	if m := c.Mismatches(); len(m) > 0 {
		t.Fatalf("counts differ in %v", m)
	}
	var bytes int64
	for _, row := range c.Rows {
		if row.A.Bytes != row.B.Bytes || row.B.Errors != 0 {
			t.Errorf("%s: %d bytes → %d, %d errors", row.Op, row.A.Bytes, row.B.Bytes, row.B.Errors)
		}
		bytes += row.B.Bytes
	}
	if bytes < 200<<20 {
		t.Fatalf("the replay moved %d bytes; the sample moves about 230 MB", bytes)
	}
}

// TestOriginalTimingKeepsRecordedTime replays 300 calls recorded 1 ms
// apart and checks that the replay takes the recorded time within 3 %.
func TestOriginalTimingKeepsRecordedTime(t *testing.T) {
	dir := t.TempDir()
	m := trace.NewMemTrace()
	f := m.Paths.Intern("/data/out")
	m.Add(trace.Event{Op: trace.OpOpen, Path: f, Flags: trace.OWronly | trace.OCreat, FD: 3, Ret: 3, Dur: 20_000})
	const n = 300
	for i := 1; i <= n; i++ {
		m.Add(trace.Event{Op: trace.OpPwrite, FD: 3, Offset: int64(i%16) * 4096, Size: 4096, Ret: 4096, Start: int64(i) * 1_000_000, Dur: 5_000})
	}
	in, rec := filepath.Join(dir, "gaps.iot"), filepath.Join(dir, "replay.iot")
	writeTrace(t, in, m)
	sum := filepath.Join(dir, "summary.json")
	a := stats(t, in)
	ra := a.End - a.Start
	// The time from the replay's start to its last call's end: never
	// shorter than recorded, and at most 3 % longer (an overloaded machine
	// gets a second try).
	loadcheck.Retry(t, func() string {
		out := mustRun(t, "--timing", "original", "--record", rec, "--summary", sum, in)
		if !strings.Contains(out, "issue lag: p50") {
			t.Fatalf("no issue lag in the report:\n%s", out)
		}
		b := stats(t, rec)
		rb := b.End // the replay's trace counts from its start
		js, _ := os.ReadFile(sum)
		var s struct {
			Elapsed float64 `json:"elapsed_seconds"`
		}
		if err := json.Unmarshal(js, &s); err != nil {
			t.Fatal(err)
		}
		r := float64(rb) / float64(ra)
		msg := fmt.Sprintf("recorded %v, replayed in %v (ratio %.3f; summary: %.3fs)", time.Duration(ra), time.Duration(rb), r, s.Elapsed)
		if r < 0.99 {
			t.Fatal(msg)
		}
		if r > 1.03 {
			return msg
		}
		return ""
	})
}

// snapshot describes every entry below dir.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %v %d %d", strings.TrimPrefix(p, dir), fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			line += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			l, _ := os.Readlink(p)
			line += " -> " + l
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestNothingOutsideTargetChanges feeds a trace full of escapes — "..",
// absolute paths naming the sentinel directory, symlinks planted in the
// target, /dev and /proc, the standard streams — and checks that the
// sentinel directory is unchanged.
func TestNothingOutsideTargetChanges(t *testing.T) {
	for _, walk := range []bool{false, true} {
		t.Run(fmt.Sprintf("walk=%v", walk), func(t *testing.T) {
			base := t.TempDir()
			sentinel, target := filepath.Join(base, "sentinel"), filepath.Join(base, "target")
			for _, d := range []string{sentinel, filepath.Join(sentinel, "sub"), target} {
				os.Mkdir(d, 0o755)
			}
			victim := filepath.Join(sentinel, "victim")
			os.WriteFile(victim, []byte("precious"), 0o644)
			os.WriteFile(filepath.Join(sentinel, "sub", "keep"), []byte("keep"), 0o644)
			// Traps planted in the target, named as the trace's paths map.
			os.Symlink(sentinel, filepath.Join(target, "link"))
			os.Symlink("../sentinel/victim", filepath.Join(target, "rel"))
			os.Link(victim, filepath.Join(target, "hard"))
			before := snapshot(t, sentinel)

			m := trace.NewMemTrace()
			var evs []trace.Event
			fd := int32(10)
			wr := uint32(trace.ORdwr | trace.OCreat | trace.OTrunc)
			hit := func(path string) {
				id := m.Paths.Intern(path)
				fd++
				evs = append(evs,
					trace.Event{Op: trace.OpOpen, Path: id, Flags: wr, Mode: 0o644, FD: fd, Ret: int64(fd)},
					trace.Event{Op: trace.OpWrite, FD: fd, Size: 64, Ret: 64},
					trace.Event{Op: trace.OpFtruncate, FD: fd, Size: 1},
					trace.Event{Op: trace.OpClose, FD: fd},
					trace.Event{Op: trace.OpTruncate, Path: id},
					trace.Event{Op: trace.OpMkdir, Path: m.Paths.Intern(path + "/d")},
					trace.Event{Op: trace.OpRename, Path: id, Path2: m.Paths.Intern(path + ".moved")},
					trace.Event{Op: trace.OpUnlink, Path: id},
					trace.Event{Op: trace.OpRmdir, Path: id},
				)
			}
			for _, p := range []string{
				"/data/run/link/victim", "/data/run/link/sub/keep", "/data/run/link/new", "/data/run/rel", "/data/run/hard",
				"/data/run/link", "/data/run/../../../" + victim, victim, "../../" + victim,
				"/data/run/../../../../../../" + sentinel + "/sub/keep",
				"/dev/null", "/dev/zero", "/proc/self/status", "/sys/kernel/x",
			} {
				hit(p)
			}
			// The standard streams.
			evs = append(evs,
				trace.Event{Op: trace.OpWrite, FD: 1, Size: 100, Ret: 100},
				trace.Event{Op: trace.OpWrite, FD: 2, Size: 100, Ret: 100},
				trace.Event{Op: trace.OpRead, FD: 0, Size: 100, Ret: 100},
				trace.Event{Op: trace.OpFtruncate, FD: 1},
				trace.Event{Op: trace.OpClose, FD: 2},
			)
			for i := range evs {
				evs[i].Start = int64(i) * 1000
			}
			m.Add(evs...)
			in := filepath.Join(base, "evil.iot")
			writeTrace(t, in, m)
			// --force: the traps in the target are where the trace's paths go.
			args := []string{"--timing", "afap", "--force", "--target", target, "--map", "/data/run=/", in}
			if walk {
				args = append([]string{"--no-openat2"}, args...)
			}
			out, errOut, code := runBin(t, args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			if after := snapshot(t, sentinel); after != before {
				t.Fatalf("the sentinel changed:\nbefore:\n%s\nafter:\n%s\nreplay:\n%s", before, after, out)
			}
			for _, want := range []string{"standard stream", "special path", "path leads out of the target"} {
				if !strings.Contains(out, want) {
					t.Errorf("summary lacks %q:\n%s", want, out)
				}
			}
			if strings.ContainsRune(out, 0) {
				t.Fatal("pattern bytes reached standard output")
			}
		})
	}
}

// TestDryRunTouchesNothing checks that --dry-run prints the plan and
// creates nothing, not even the target.
func TestDryRunTouchesNothing(t *testing.T) {
	dir := t.TempDir()
	m := trace.NewMemTrace()
	in, out := m.Paths.Intern("/proj/in/mesh.dat"), m.Paths.Intern("/proj/out/result.dat")
	m.Add(
		trace.Event{Rank: 0, Op: trace.OpOpen, Path: in, Flags: trace.ORdonly, FD: 3, Ret: 3},
		trace.Event{Rank: 0, Op: trace.OpPread, FD: 3, Offset: 8192, Size: 4096, Ret: 4096, Start: 10},
		trace.Event{Rank: 1, Op: trace.OpOpen, Path: out, Flags: trace.OWronly | trace.OCreat | trace.OTrunc, FD: 3, Ret: 3},
		trace.Event{Rank: 1, Op: trace.OpWrite, FD: 3, Size: 100, Ret: 100, Start: 10},
		trace.Event{Rank: 1, Op: trace.OpMPIBarrier, Start: 20},
	)
	tf := filepath.Join(dir, "t.iot")
	writeTrace(t, tf, m)
	target := filepath.Join(dir, "target")
	o := mustRun(t, "--dry-run", "--target", target, tf)
	for _, want := range []string{
		`"/proj/in/mesh.dat" -> "in/mesh.dat"`, `"/proj/out/result.dat" -> "out/result.dat"`,
		`"in/mesh.dat" 12288 bytes`, "rank 0: 2 events: open 1, pread 1", "rank 1: 3 events: open 1, write 1, MPI_Barrier 1",
		"common prefix /proj",
	} {
		if !strings.Contains(o, want) {
			t.Errorf("dry run lacks %q:\n%s", want, o)
		}
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("dry run created the target: %v", err)
	}
	// --prepare-only makes the file the trace reads, and stops.
	o = mustRun(t, "--prepare-only", "--target", target, tf)
	fi, err := os.Stat(filepath.Join(target, "in", "mesh.dat"))
	if err != nil || fi.Size() != 12288 {
		t.Fatalf("prepared file: %v, %v\n%s", fi, err, o)
	}
	if _, err := os.Stat(filepath.Join(target, "out", "result.dat")); !os.IsNotExist(err) {
		t.Fatal("prepare created a file the trace creates itself")
	}
}

// TestPrepareLeavesCreatedFilesToTheTrace: the prepare phase makes the
// file a trace only reads, with the size it reads, and not the files the
// trace creates itself and then reads back (O_CREAT without O_TRUNC, and
// MPI_MODE_CREATE, as b_eff_io opens its files).
func TestPrepareLeavesCreatedFilesToTheTrace(t *testing.T) {
	dir := t.TempDir()
	m := trace.NewMemTrace()
	in, out, mf := m.Paths.Intern("/p/in.dat"), m.Paths.Intern("/p/out.dat"), m.Paths.Intern("/p/beff_io.0")
	const MiB = 1 << 20
	m.Add(
		trace.Event{Rank: 0, Op: trace.OpOpen, Path: in, Flags: trace.ORdonly, Ret: 3},
		trace.Event{Rank: 0, Op: trace.OpPread, FD: 3, Offset: MiB, Size: MiB, Ret: MiB, Start: 10},
		trace.Event{Rank: 0, Op: trace.OpOpen, Path: out, Flags: trace.ORdwr | trace.OCreat, Ret: 4, Start: 20},
		trace.Event{Rank: 0, Op: trace.OpPwrite, FD: 4, Offset: 0, Size: 2 * MiB, Ret: 2 * MiB, Start: 30},
		trace.Event{Rank: 0, Op: trace.OpPread, FD: 4, Offset: 0, Size: 2 * MiB, Ret: 2 * MiB, Start: 40},
		trace.Event{Rank: 0, Op: trace.OpMPIFileOpen, Path: mf, FD: 1, Flags: trace.MPIModeCreate | trace.MPIModeWronly, Start: 50},
		trace.Event{Rank: 0, Op: trace.OpMPIFileWriteAt, FD: 1, Offset: 0, Size: MiB, Ret: MiB, Start: 60},
		trace.Event{Rank: 0, Op: trace.OpMPIFileClose, FD: 1, Start: 70},
		trace.Event{Rank: 0, Op: trace.OpMPIFileOpen, Path: mf, FD: 1, Flags: trace.MPIModeRdonly, Start: 80},
		trace.Event{Rank: 0, Op: trace.OpMPIFileReadAt, FD: 1, Offset: 0, Size: MiB, Ret: MiB, Start: 90},
	)
	tf := filepath.Join(dir, "t.iot")
	writeTrace(t, tf, m)
	o := mustRun(t, "--dry-run", tf)
	if !strings.Contains(o, "files to prepare: 1 (2 MiB)") || !strings.Contains(o, `"in.dat" 2097152 bytes`) {
		t.Errorf("dry run should prepare in.dat (2 MiB) only:\n%s", o)
	}
	target := filepath.Join(dir, "target")
	o = mustRun(t, "--prepare-only", "--target", target, tf)
	ents, err := os.ReadDir(target)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	fi, err := os.Stat(filepath.Join(target, "in.dat"))
	if len(names) != 1 || err != nil || fi.Size() != 2*MiB {
		t.Fatalf("prepared %v (in.dat: %v, %v), want in.dat of 2 MiB only\n%s", names, fi, err, o)
	}
}

// TestInterruptLeavesReadableTrace sends SIGINT to a long replay and
// checks the message and the partial replay trace.
func TestInterruptLeavesReadableTrace(t *testing.T) {
	dir := t.TempDir()
	m := trace.NewMemTrace()
	for r := uint32(0); r < 4; r++ {
		for i := 0; i < 200; i++ {
			m.Add(trace.Event{Rank: r, Op: trace.OpMark, Start: int64(i) * 50_000_000})
		}
	}
	in, rec := filepath.Join(dir, "long.iot"), filepath.Join(dir, "partial.iot")
	writeTrace(t, in, m)
	// The interrupt comes once the replay shows its progress (after 2 s
	// of its 10 s), so that it has started, however slowly the machine
	// started it.
	master, slave := openPty(t)
	cmd := exec.Command(bin, "--record", rec, in)
	cmd.Stderr = slave
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	var stderr bytes.Buffer
	progress := make(chan struct{})
	done := make(chan struct{})
	go func() { // ends with EIO when the child exits
		defer close(done)
		buf := make([]byte, 4096)
		seen := false
		for {
			n, err := master.Read(buf)
			stderr.Write(buf[:n])
			if !seen && strings.Contains(stderr.String(), "% (") {
				seen = true
				close(progress)
			}
			if err != nil {
				return
			}
		}
	}()
	select {
	case <-progress:
	case <-done:
	case <-time.After(60 * time.Second):
	}
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	master.Close()
	<-done
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v\n%s", err, stderr.String())
	}
	msg := stderr.String()
	if !strings.Contains(msg, "interrupted:") || !strings.Contains(msg, "of 800 events replayed") || !strings.Contains(msg, rec) {
		t.Fatalf("message: %s", msg)
	}
	st := stats(t, rec)
	if st.Events == 0 || st.Events >= 800 || st.Ranks != 4 {
		t.Fatalf("partial trace: %d events of %d ranks", st.Events, st.Ranks)
	}
}

// TestUserErrorsAreOneLine checks that mistakes print one line and exit
// non-zero.
func TestUserErrorsAreOneLine(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "g.iot")
	writeTrace(t, good, tracegen.IOR(1, 4, 1))
	bad := filepath.Join(dir, "bad.iot")
	os.WriteFile(bad, []byte("not a trace at all"), 0o644)
	for _, args := range [][]string{
		{filepath.Join(dir, "missing.iot")},
		{bad},
		{"--timing", "fast", good},
		{"--speed", "0", good},
		{"--cache", "hot", good},
		{"--map", "nothing", good},
		{"--split", "4Q", good},
		{"--order", "hash", good},
		{"--layout", "mixed", good},
		{"--rank-subset", "5", good},
		{"--ops", "frobnicate", good},
		{"--format", "xml", good},
		{"--target", "/", good},
		{"--record", "-", good},
		{"--peer-timeout", "0s", good},
		{"x.iop"},
		{"--ranks", "2", "astro3d-small", good},
		{"--param", "novalue", "astro3d-small"},
		{"--group", "=3", "--ranks", "2", "astro3d-small"},
		{"--bogus", good},
	} {
		_, errOut, code := runBin(t, args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code == 0 || len(lines) != 1 || !strings.HasPrefix(lines[0], "ioreplay: ") || strings.Contains(errOut, "goroutine") {
			t.Errorf("%v: exit %d, stderr:\n%s", args, code, errOut)
		}
	}
}

// TestTransformsEndToEnd runs a trace through the layout and split
// transforms and checks the replay's calls.
func TestTransformsEndToEnd(t *testing.T) {
	dir := t.TempDir()
	in, rec := filepath.Join(dir, "ior.iot"), filepath.Join(dir, "r.iot")
	writeTrace(t, in, tracegen.IOR(4, 8, 3))
	target := filepath.Join(dir, "t")
	mustRun(t, "--timing", "afap", "--layout", "shared", "--split", "1KiB", "--order", "hash", "--servers", "4",
		"--target", target, "--record", rec, in)
	// One shared file instead of four.
	ents, _ := os.ReadDir(target)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) != 1 || names[0] != "testFile.shared" {
		t.Fatalf("target holds %v, want the one shared file", names)
	}
	st := stats(t, rec)
	var writes, reads int64
	for _, o := range st.Ops {
		switch o.Op {
		case "pwrite":
			writes = o.Count
		case "pread":
			reads = o.Count
		}
	}
	// 4 ranks × 8 writes of 4 KiB, each in 4 blocks of 1 KiB; same for reads.
	if writes != 128 || reads != 128 {
		t.Fatalf("%d pwrites, %d preads; want 128 each\n%+v", writes, reads, st.Ops)
	}
}

// TestScriptRunsLive replays a pattern script with 4 ranks: its
// time-driven loop runs for the real 300 ms (not the nominal iteration
// count of an expansion), and every rank leaves it at the same
// iteration although the ranks write different amounts.
func TestScriptRunsLive(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "loop.iop")
	os.WriteFile(src, []byte(`
param t = 300ms
open "/s/f.$rank" as f flags O_WRONLY | O_CREAT
repeat for t as i {
    write f at (i % 8) * 64KiB size 64KiB * (rank + 1)
}
close f
barrier
`), 0o644)
	rec := filepath.Join(dir, "r.iot")
	start := time.Now()
	mustRun(t, "--ranks", "4", "--timing", "afap", "--record", rec, "--quiet", src)
	if el := time.Since(start); el < 300*time.Millisecond || el > 5*time.Second {
		t.Fatalf("a loop of 300 ms ran in %v", el)
	}
	r, err := format.Open(rec)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var writes [4]int
	for rk := uint32(0); rk < 4; rk++ {
		s, err := r.Rank(rk)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]trace.Event, 256)
		for {
			n, err := s.ReadEvents(buf)
			for _, e := range buf[:n] {
				if e.Op.Dir() == trace.DirWrite {
					writes[rk]++
				}
			}
			if err != nil {
				break
			}
		}
	}
	if writes[0] < 10 || writes[0] != writes[1] || writes[0] != writes[2] || writes[0] != writes[3] {
		t.Fatalf("writes per rank: %v", writes)
	}
	// The dry run shows the nominal run of the script.
	out := mustRun(t, "--ranks", "4", "--dry-run", src)
	if !strings.Contains(out, "dry run: 4 ranks") {
		t.Fatalf("dry run of a script:\n%s", out)
	}
}

// TestScriptGroupPeersReplay runs a script whose second group, ranks
// 4 … 7, exchanges and broadcasts: peers and roots are group ranks in the
// script and world ranks in the events the replay's communication layer
// matches, so every call completes, with the peers of the world. (The
// sendrecv has a tag of its own: the replay receives its half from any
// source, replay/rank.go.)
func TestScriptGroupPeersReplay(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "groups.iop")
	os.WriteFile(src, []byte(`
group low = 4
group high = 4
on high {
    repeat 3 as i {
        sendrecv 8 with xor(grank, 1) tag 100
        send 16 to (grank + 1) % gsize tag i
        recv 16 from (grank + gsize - 1) % gsize tag i
        bcast 32 root 1
    }
}
`), 0o644)
	rec := filepath.Join(dir, "r.iot")
	out, errOut, code := runBin(t, "--ranks", "8", "--timing", "afap", "--record", rec, "--quiet", src)
	if code != 0 || strings.Contains(out+errOut, "unmatched") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	r, err := format.Open(rec)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for rk := uint32(4); rk < 8; rk++ {
		s, err := r.Rank(rk)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := trace.ReadAll(s)
		if err != nil {
			t.Fatal(err)
		}
		want := map[trace.Op]int32{trace.OpMPISendrecv: int32(rk ^ 1), trace.OpMPISend: int32(4 + (rk-3)%4),
			trace.OpMPIRecv: int32(4 + (rk-1)%4), trace.OpMPIBcast: 5}
		if len(evs) != 12 {
			t.Fatalf("rank %d: %d events, want 12", rk, len(evs))
		}
		for _, e := range evs {
			if e.Ret < 0 || e.Peer != want[e.Op] {
				t.Errorf("rank %d: %s peer %d ret %d, want peer %d", rk, e.Op, e.Peer, e.Ret, want[e.Op])
			}
		}
	}
}

// openPty returns the two ends of a new pseudo-terminal.
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Skipf("ptsname: %v", err)
	}
	sl, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("open the terminal: %v", err)
	}
	return m, sl
}

// TestProgressOnATerminal replays for about three seconds with standard
// error on a terminal: a progress line appears after two seconds; with
// --quiet, or off a terminal, it does not.
func TestProgressOnATerminal(t *testing.T) {
	dir := t.TempDir()
	m := trace.NewMemTrace()
	for i := 0; i < 60; i++ {
		m.Add(trace.Event{Op: trace.OpMark, Start: int64(i) * 50_000_000})
	}
	in := filepath.Join(dir, "slow.iot")
	writeTrace(t, in, m)
	for _, quiet := range []bool{false, true} {
		t.Run(fmt.Sprintf("quiet=%v", quiet), func(t *testing.T) {
			t.Parallel()
			master, slave := openPty(t)
			args := []string{in}
			if quiet {
				args = append([]string{"--quiet"}, args...)
			}
			cmd := exec.Command(bin, args...)
			cmd.Stderr = slave
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			slave.Close()
			var got bytes.Buffer
			done := make(chan struct{})
			go func() { got.ReadFrom(master); close(done) }() // ends with EIO when the child exits
			if err := cmd.Wait(); err != nil {
				t.Fatal(err)
			}
			master.Close()
			<-done
			shown := strings.Contains(got.String(), "ioreplay: ") && strings.Contains(got.String(), "% (")
			if shown && !regexp.MustCompile(`of 60 events\), \d+s elapsed, ETA \S+, \S+ B/s`).MatchString(got.String()) {
				t.Errorf("the progress line lacks the time elapsed, the time left or the rate: %q", got.String())
			}
			if shown == quiet {
				t.Errorf("terminal got %q", got.String())
			}
		})
	}
}

// TestReplaySampleByName replays a built-in sample named on the command
// line, with its paper's ranks, and records it: the recording has the
// sample's op mix (the OLAP index workload, 3 indexes).
func TestReplaySampleByName(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "olap.iot")
	mustRun(t, "--quiet", "--timing", "afap", "--param", "indexes=3", "--target", filepath.Join(dir, "target"), "--record", rec, "olap-index")
	st := stats(t, rec)
	counts := map[string]int64{}
	for _, r := range st.Ops {
		counts[r.Op] = r.Count
	}
	if st.Ranks != 1 || counts["mkdir"] != 13 || counts["rmdir"] != 6 || counts["rename"] != 24 || counts["access"] != 9 {
		t.Errorf("replay of olap-index: %d ranks, %v", st.Ranks, counts)
	}
	for _, r := range st.Ops {
		if r.Errors != 0 {
			t.Errorf("%s: %d errors", r.Op, r.Errors)
		}
	}
}

// TestDefaultTiming: without --timing a trace replays with original
// timing and a script with think timing, which keeps the script's sleeps
// (its only gaps) and runs its calls at the file system's speed; --help
// and the dry run say so.
func TestDefaultTiming(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "ior.iot")
	writeTrace(t, tr, tracegen.IOR(1, 4, 1))
	src := filepath.Join(dir, "sleepy.iop")
	os.WriteFile(src, []byte(`
open "/s/f.$rank" as f flags O_WRONLY | O_CREAT | O_TRUNC
write f size 4KiB
sleep 150ms
write f size 4KiB
close f
`), 0o644)
	timingOf := func(args ...string) string {
		sum := filepath.Join(dir, "sum.json")
		mustRun(t, append([]string{"--quiet", "--summary", sum}, args...)...)
		var s struct{ Timing string }
		b, err := os.ReadFile(sum)
		if err != nil || json.Unmarshal(b, &s) != nil {
			t.Fatalf("summary: %v\n%s", err, b)
		}
		return s.Timing
	}
	if got := timingOf(tr); got != "original" {
		t.Errorf("a trace replayed with %s timing, want original", got)
	}
	rec := filepath.Join(dir, "r.iot")
	if got := timingOf("--ranks", "2", "--record", rec, src); got != "think" {
		t.Errorf("a script replayed with %s timing, want think", got)
	}
	if got := timingOf("--ranks", "2", "--timing", "afap", src); got != "afap" {
		t.Errorf("--timing afap on a script: %s", got)
	}
	// The sleep is kept between the two writes of each rank.
	r, err := format.Open(rec)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for rk := uint32(0); rk < 2; rk++ {
		evs, err := trace.ReadAll(mustRank(t, r, rk))
		if err != nil {
			t.Fatal(err)
		}
		var w []trace.Event
		for _, e := range evs {
			if e.Op.Dir() == trace.DirWrite {
				w = append(w, e)
			}
		}
		if len(w) != 2 || w[1].Start-w[0].End() < int64(150*time.Millisecond) {
			t.Errorf("rank %d: writes %+v: want 2, 150 ms apart", rk, w)
		}
	}
	if out := mustRun(t, "--ranks", "2", "--dry-run", src); !strings.Contains(out, "timing think") {
		t.Errorf("dry run of a script does not say think timing:\n%s", out)
	}
	if out := mustRun(t, "--help"); !strings.Contains(out, "original for a trace, think for a script") {
		t.Errorf("--help does not give the default timing:\n%s", out)
	}
}

func mustRank(t *testing.T, tr trace.Trace, r uint32) trace.Source {
	t.Helper()
	s, err := tr.Rank(r)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCacheFlag: the page cache the timed phase starts in. The trace only
// opens and stats an input the target holds already, so what its pages
// are after the replay is what --cache made of them: cold drops them,
// warm reads them in, as-captured leaves them as they were.
func TestCacheFlag(t *testing.T) {
	dir := pagecache.Dir(t)
	m := trace.NewMemTrace()
	in := m.Paths.Intern("/proj/in.dat")
	m.Add(
		trace.Event{Op: trace.OpOpen, Path: in, Flags: trace.ORdonly, FD: 3, Ret: 3},
		trace.Event{Op: trace.OpFstat, FD: 3, Start: 10},
		trace.Event{Op: trace.OpClose, FD: 3, Start: 20},
	)
	tf := filepath.Join(dir, "t.iot")
	writeTrace(t, tf, m)
	target := filepath.Join(dir, "target")
	os.Mkdir(target, 0o755)
	p := filepath.Join(target, "in.dat")
	if err := os.WriteFile(p, bytes.Repeat([]byte("x"), 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	const pages = (1 << 20) / 4096
	replay := func(cache string) int {
		mustRun(t, "--quiet", "--timing", "afap", "--force", "--target", target, "--cache", cache, tf)
		return pagecache.Resident(t, p)
	}
	if n := replay("as-captured"); n != pages {
		t.Errorf("--cache as-captured: %d of %d pages cached after writing the file", n, pages)
	}
	if n := replay("cold"); n != 0 {
		t.Errorf("--cache cold: %d pages still cached", n)
	}
	if n := replay("warm"); n != pages {
		t.Errorf("--cache warm: %d of %d pages cached", n, pages)
	}
	pagecache.Evict(t, p)
	if n := replay("as-captured"); n != 0 {
		t.Errorf("--cache as-captured read %d pages in", n)
	}
	// The default is cold.
	replay("warm")
	mustRun(t, "--quiet", "--timing", "afap", "--force", "--target", target, tf)
	if n := pagecache.Resident(t, p); n != 0 {
		t.Errorf("no --cache: %d pages still cached, want cold", n)
	}
}

// TestCacheColdAfterPrepare: a one-shot replay prepares its inputs and
// replays at once; by default (--cache cold) the pages prepare wrote are
// written back and dropped before the timed phase, so the replay's reads
// go to the device as the real program's did (issue 22: tar replayed in
// 0.05 s from the cache, 0.22 s cold, 0.25 s for real). The trace reads
// only the last page of its 1 MiB input: what else of the file is
// cached after the replay was left there by prepare.
func TestCacheColdAfterPrepare(t *testing.T) {
	dir := pagecache.Dir(t)
	m := trace.NewMemTrace()
	in := m.Paths.Intern("/proj/in.dat")
	m.Add(
		trace.Event{Op: trace.OpOpen, Path: in, Flags: trace.ORdonly, FD: 3, Ret: 3},
		trace.Event{Op: trace.OpPread, FD: 3, Start: 10, Offset: 1<<20 - 4096, Size: 4096, Ret: 4096},
		trace.Event{Op: trace.OpClose, FD: 3, Start: 20},
	)
	tf := filepath.Join(dir, "t.iot")
	writeTrace(t, tf, m)
	const pages = (1 << 20) / 4096
	replay := func(name string, flags ...string) int {
		target := filepath.Join(dir, name)
		mustRun(t, append([]string{"--quiet", "--timing", "afap", "--target", target}, append(flags, tf)...)...)
		p := filepath.Join(target, "in.dat")
		if st, err := os.Stat(p); err != nil || st.Size() != 1<<20 {
			t.Fatalf("prepared input: %v %v", st, err)
		}
		return pagecache.Resident(t, p)
	}
	asCaptured := replay("as-captured", "--cache", "as-captured")
	if asCaptured < pages/2 {
		t.Fatalf("prepare left %d of %d pages cached as captured: the test shows nothing (pagecache.Dir is to give a file system with a page cache)", asCaptured, pages)
	}
	n := replay("cold")
	t.Logf("pages of the prepared input cached after the replay: %d as captured, %d cold, of %d", asCaptured, n, pages)
	if n > pages/8 {
		t.Errorf("one-shot replay, default --cache cold: %d of %d pages of the prepared input cached (as-captured: %d)", n, pages, asCaptured)
	}
}

// TestOutputsBeforeReplay: the files ioreplay writes at its end are
// opened before it replays. A name that cannot be written fails the
// command with one line before the target is made (not after the
// replay's hours); at most one output goes to standard output ("-", or
// the report without --output), there as asked; a run that fails leaves
// no file and no temporary one next to where they would have gone.
func TestOutputsBeforeReplay(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "ior.iot")
	writeTrace(t, in, tracegen.IOR(1, 4, 1))
	target := filepath.Join(dir, "target")
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "no", "such")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--summary", filepath.Join(missing, "s.json")}, "--summary: create " + missing},
		{[]string{"--summary", filepath.Join(out, "s.json"), "--html", filepath.Join(missing, "r.html")}, "--html: create " + missing},
		{[]string{"--output", filepath.Join(missing, "r.txt")}, "--output: create " + missing},
		{[]string{"--summary", out}, "is a directory"},
		{[]string{"--summary", "-"}, "--summary -: standard output carries the report"},
		{[]string{"--html", "-"}, "--html -: standard output carries the report"},
		{[]string{"--output", "-", "--summary", "-"}, "would both go to standard output"},
		{[]string{"--output", filepath.Join(out, "x"), "--summary", filepath.Join(out, "x")}, "name the same file"},
	} {
		args := append(append([]string{"--timing", "afap", "--target", target}, c.args...), in)
		_, errOut, code := runBin(t, args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code == 0 || len(lines) != 1 || !strings.Contains(lines[0], c.want) {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant one line with %q", c.args, code, errOut, c.want)
		}
		if _, err := os.Stat(target); err == nil {
			t.Errorf("%v: the target was made before the outputs were checked", c.args)
			os.RemoveAll(target)
		}
		if ents, _ := os.ReadDir(out); len(ents) != 0 {
			t.Errorf("%v: left %v behind", c.args, ents)
		}
	}
	// The summary to standard output, the report to a file.
	report := filepath.Join(out, "report.txt")
	stdout := mustRun(t, "--timing", "afap", "--quiet", "--target", target, "--summary", "-", "--output", report, in)
	var sum struct {
		Events int64 `json:"events"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil || sum.Events == 0 {
		t.Errorf("--summary -: standard output is not the summary: %v\n%s", err, stdout)
	}
	if b, err := os.ReadFile(report); err != nil || !strings.Contains(string(b), "TOTAL") {
		t.Errorf("--output %s: %v\n%s", report, err, b)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 1 {
		t.Errorf("after the replay %s holds %v, want the report alone", out, ents)
	}
}
