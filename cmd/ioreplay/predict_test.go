package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
)

// predictTrace is two ranks of an MPI-IO application as the preload shim
// captures it: each opens a shared file in 40 ms (its open(2) inside took
// 0.1 ms), writes 64 KiB collectively (the pwrite inside took 1 ms of the
// call's 2 ms), computes for 20 ms and closes the file.
func predictTrace() *trace.MemTrace {
	const ms = int64(1e6)
	m := trace.NewMemTrace()
	f := m.Paths.Intern("/scratch/app/out.dat")
	for r := uint32(0); r < 2; r++ {
		off := int64(r) << 16
		m.Add(
			trace.Event{Rank: r, Op: trace.OpMPIFileOpen, FD: 1, Path: f, Comm: trace.CommWorld, Flags: trace.MPIModeCreate | trace.MPIModeWronly, Start: 0, Dur: 40 * ms},
			trace.Event{Rank: r, Op: trace.OpOpen, FD: 5, Ret: 5, Path: f, Flags: trace.InMPIIO | trace.OCreat | trace.OWronly, Start: 35 * ms, Dur: ms / 10},
			trace.Event{Rank: r, Op: trace.OpMPIFileWriteAtAll, FD: 1, Offset: off, Size: 1 << 16, Ret: 1 << 16, Start: 41 * ms, Dur: 2 * ms},
			trace.Event{Rank: r, Op: trace.OpPwrite, FD: 5, Offset: off, Size: 1 << 16, Ret: 1 << 16, Flags: trace.InMPIIO, Start: 42 * ms, Dur: ms},
			trace.Event{Rank: r, Op: trace.OpMPIFileClose, FD: 1, Start: 63 * ms, Dur: ms},
			trace.Event{Rank: r, Op: trace.OpClose, FD: 5, Flags: trace.InMPIIO, Start: 63 * ms, Dur: ms / 100},
		)
	}
	return m
}

// TestPredict runs ioreplay --predict on an MPI-IO trace through the
// POSIX backend: think timing, the MPI library's cost kept at the MPI-IO
// calls, and the application's I/O time (its slowest rank's) predicted
// beside the captured one, in the text summary, the JSON summary and the
// replay's own trace: its I/O span on the rebuilt timelines (the first
// MPI-IO call to the last) and the I/O time of its slowest rank.
func TestPredict(t *testing.T) {
	dir := t.TempDir()
	tf := filepath.Join(dir, "app.iot")
	writeTrace(t, tf, predictTrace())
	sum := filepath.Join(dir, "summary.json")
	rec := filepath.Join(dir, "replay.iot")
	out, errOut, code := runBin(t, "--predict", "--target", filepath.Join(dir, "target"), "--summary", sum, "--record", rec, tf)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	text := out + errOut
	for _, want := range []string{"timing think", "MPI-IO library cost kept: 6 calls", "predicted application I/O time (first file call to last, every rank): ", ", captured 64ms, ", "captured 43ms (slowest rank 0)"} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
	var v struct {
		Timing  string  `json:"timing"`
		Elapsed float64 `json:"elapsed_seconds"`
		Predict bool    `json:"predict"`
		IOTime  *struct {
			Replay   float64 `json:"replay_seconds"`
			Captured float64 `json:"captured_seconds"`
		} `json:"io_time"`
		Lib *struct {
			Calls   int64   `json:"calls"`
			Seconds float64 `json:"seconds"`
		} `json:"mpiio_library_cost"`
		IOSpan *struct {
			Predicted float64 `json:"predicted_seconds"`
			Captured  float64 `json:"captured_seconds"`
		} `json:"io_span"`
	}
	b, err := os.ReadFile(sum)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if v.Timing != "think" || !v.Predict || v.IOTime == nil || v.Lib == nil || v.IOSpan == nil {
		t.Fatalf("summary %s", b)
	}
	// Captured: 40 + 2 + 1 ms of MPI-IO calls per rank (the POSIX calls
	// inside are not counted twice).
	if d := v.IOTime.Captured - 0.043; d < -1e-9 || d > 1e-9 {
		t.Errorf("captured I/O time %v s, want 0.043", v.IOTime.Captured)
	}
	// Kept per rank: 39.9 ms at the open, 1 ms at the write, 0.99 ms at
	// the close.
	if v.Lib.Calls != 6 || v.Lib.Seconds < 0.0837 || v.Lib.Seconds > 0.0839 {
		t.Errorf("library cost kept: %d calls, %v s; want 6, 0.0838", v.Lib.Calls, v.Lib.Seconds)
	}
	// The prediction holds the library's cost and the target's calls:
	// at least what was kept per rank; the run the 20 ms of compute too.
	if v.IOTime.Replay < 0.0419 {
		t.Errorf("predicted I/O time %v s, want at least the 41.9 ms kept per rank", v.IOTime.Replay)
	}
	// The span: the open's kept 39.9 ms, the write's 1 ms, 20 ms of
	// compute and the close's 0.99 ms at least, and the target's calls
	// (well under the 0.1 s allowed for a loaded machine); captured, the
	// first open's start to the last close's end.
	if v.IOSpan.Predicted < 0.0618 || v.IOSpan.Predicted > 0.1618 {
		t.Errorf("predicted I/O span %v s, want 61.8 ms and the target's calls", v.IOSpan.Predicted)
	}
	if d := v.IOSpan.Captured - 0.064; d < -1e-9 || d > 1e-9 {
		t.Errorf("captured I/O span %v s, want 0.064", v.IOSpan.Captured)
	}
	if v.Elapsed < 0.0619 {
		t.Errorf("replay took %v s, want at least 61.9 ms (kept cost and compute)", v.Elapsed)
	}
	// A dry run says what the replay will keep.
	dry := mustRun(t, "--predict", "--dry-run", tf)
	if !strings.Contains(dry, "timing think") || !strings.Contains(dry, "MPI-IO library cost in the capture, beyond its POSIX calls: 6 calls, 83.78ms (kept by the POSIX backend") {
		t.Errorf("dry run:\n%s", dry)
	}
	st := stats(t, rec)
	if st.Replay == nil || !st.Replay.Predict || st.Replay.LibCalls != 6 || st.Replay.CapturedIOTime != 43e6 ||
		st.Replay.IOSpan != int64(v.IOSpan.Predicted*1e9+0.5) || st.Replay.CapturedIOSpan != 64e6 {
		t.Errorf("the replay's trace says %+v", st.Replay)
	}
}

// TestPredictFlagConflicts: --predict sets think timing and a cold cache
// and keeps the captured compute time; a flag that says otherwise, or a
// script (no capture to predict), is refused with one line.
func TestPredictFlagConflicts(t *testing.T) {
	dir := t.TempDir()
	tf := filepath.Join(dir, "app.iot")
	writeTrace(t, tf, predictTrace())
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--timing", "afap"}, "drop --timing afap"},
		{[]string{"--timing", "original"}, "drop --timing original"},
		{[]string{"--cache", "warm"}, "drop --cache warm"},
		{[]string{"--cache", "as-captured"}, "drop --cache as-captured"},
		{[]string{"--speed", "2"}, "drop --speed 2"},
	} {
		_, errOut, code := runBin(t, append(append([]string{"--predict"}, c.args...), tf)...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code == 0 || len(lines) != 1 || !strings.HasPrefix(lines[0], "ioreplay: --predict") || !strings.Contains(errOut, c.want) {
			t.Errorf("--predict %v: exit %d, stderr:\n%s", c.args, code, errOut)
		}
	}
	_, errOut, code := runBin(t, "--predict", "--ranks", "2", "astro3d-small")
	if lines := strings.Split(strings.TrimSpace(errOut), "\n"); code == 0 || len(lines) != 1 || !strings.Contains(errOut, "pattern script has no capture") {
		t.Errorf("--predict on a script: exit %d, stderr:\n%s", code, errOut)
	}
	// What it sets anyway is no conflict.
	mustRun(t, "--predict", "--quiet", "--timing", "think", "--cache", "cold", "--target", filepath.Join(dir, "t2"), tf)
}

// TestPredictRecordHolds: --record under --predict, with no processor to
// spare (here one, for two ranks), writes the replay's whole trace (its 6
// MPI-IO calls) — after its ranks end, which the engine's
// TestHoldWritesAfterTheRanks checks — and says nothing of it: the
// warning is for a trace longer than what a replay holds back
// (replay.HoldEvents).
func TestPredictRecordHolds(t *testing.T) {
	dir := t.TempDir()
	tf := filepath.Join(dir, "app.iot")
	writeTrace(t, tf, predictTrace())
	rec := filepath.Join(dir, "r.iot")
	cmd := exec.Command(bin, "--predict", "--target", filepath.Join(dir, "t"), "--record", rec, tf)
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if strings.Contains(string(out), "--record under --predict") {
		t.Errorf("warned of a trace of 12 events:\n%s", out)
	}
	r, err := format.Open(rec)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var events int64
	for _, rs := range r.Summary() {
		events += rs.Events
	}
	if events != 6 {
		t.Errorf("the recorded trace holds %d events, want the replay's 6 (its MPI-IO calls)", events)
	}
}
