package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
)

// writeThinkTrace writes a trace of ranks ranks that each open a file,
// make calls 4 KiB pwrites with about think ns of think time before each
// (±20 %, uniform), meet in a barrier every 25 calls, and close the file.
// It returns the trace's duration: the longest rank's, from its first
// call's start to its last call's end.
func writeThinkTrace(t *testing.T, name string, ranks, calls int, think int64) int64 {
	t.Helper()
	w, err := format.Create(name, trace.Meta{Ranks: ranks, Clock: "CLOCK_MONOTONIC (generated)", Creator: "script timing test"})
	if err != nil {
		t.Fatal(err)
	}
	// Collective calls end at the same time on every rank: the ranks'
	// clocks advance together, the slowest deciding.
	type rankState struct {
		evs  []trace.Event
		now  int64
		path trace.PathID
	}
	rs := make([]*rankState, ranks)
	rng := rand.New(rand.NewPCG(1, 2))
	for r := range rs {
		rs[r] = &rankState{path: w.Intern(fmt.Sprintf("/scratch/think/out.%d", r))}
	}
	add := func(r int, e trace.Event, gap, dur int64) {
		s := rs[r]
		s.now += gap
		e.Rank, e.Start, e.Dur = uint32(r), s.now, dur
		s.now += dur
		s.evs = append(s.evs, e)
	}
	for r, s := range rs {
		add(r, trace.Event{Op: trace.OpOpen, Path: s.path, Flags: trace.OWronly | trace.OCreat | trace.OTrunc, Mode: 0o644, Ret: 3}, 0, 30_000)
	}
	for i := 0; i < calls; i++ {
		for r, s := range rs {
			gap := think*8/10 + rng.Int64N(think*4/10+1)
			add(r, trace.Event{Op: trace.OpPwrite, FD: 3, Path: s.path, Offset: int64(i) * 4096, Size: 4096, Ret: 4096}, gap, 20_000)
		}
		if (i+1)%25 == 0 {
			end := int64(0)
			for _, s := range rs {
				end = max(end, s.now+10_000)
			}
			for r, s := range rs {
				add(r, trace.Event{Op: trace.OpMPIBarrier}, 0, end-s.now)
			}
		}
	}
	var dur int64
	for r, s := range rs {
		add(r, trace.Event{Op: trace.OpClose, FD: 3, Path: s.path}, 0, 10_000)
		if err := w.Rank(uint32(r)).WriteEvents(s.evs); err != nil {
			t.Fatal(err)
		}
		dur = max(dur, s.now-s.evs[0].Start)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dur
}

// replayElapsed replays args with ioreplay and returns the run time it
// reports.
func replayElapsed(t *testing.T, dir string, args ...string) float64 {
	t.Helper()
	sum := filepath.Join(dir, "summary.json")
	args = append([]string{"--quiet", "--summary", sum, "--target", filepath.Join(dir, "target")}, args...)
	if out, errOut, code := runBin(t, args...); code != 0 {
		t.Fatalf("ioreplay %v: exit %d\n%s\n%s", args, code, out, errOut)
	}
	b, err := os.ReadFile(sum)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Elapsed float64 `json:"elapsed_seconds"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(dir, "target"))
	return s.Elapsed
}

// TestConvertedScriptKeepsThinkTime converts a trace with regular think
// time to a script (iotrace convert --to script, the built binary): the
// script keeps the think time as sleeps, so that its nominal run (iotrace
// stats of the script: no clock involved) lasts as long as the trace,
// within 10 %, and a replay of it with --timing think waits them out: it
// lasts at least 90 % of the trace. How much longer a replay lasts on a
// loaded machine is not the script's doing (a test asserts behaviour;
// timing belongs in benchmarks): only a gross excess, three times the
// trace, fails.
func TestConvertedScriptKeepsThinkTime(t *testing.T) {
	dir := t.TempDir()
	iotrace := filepath.Join(dir, "iotrace")
	if out, err := exec.Command("go", "build", "-o", iotrace, "../iotrace").CombinedOutput(); err != nil {
		t.Fatalf("building iotrace: %v\n%s", err, out)
	}
	tr := filepath.Join(dir, "think.iot")
	dur := writeThinkTrace(t, tr, 2, 100, 10_000_000)
	iop := filepath.Join(dir, "think.iop")
	if out, err := exec.Command(iotrace, "convert", tr, "-o", iop).CombinedOutput(); err != nil {
		t.Fatalf("iotrace convert: %v\n%s", err, out)
	}
	src, _ := os.ReadFile(iop)
	if !strings.Contains(string(src), "sleep") || strings.Count(string(src), "\n") > 20 {
		t.Errorf("the script should be short and keep the think time as sleeps:\n%s", src)
	}
	want := float64(dur) / 1e9
	out, err := exec.Command(iotrace, "stats", "--format", "json", "--ranks", "2", iop).Output()
	if err != nil {
		t.Fatalf("iotrace stats of the script: %v", err)
	}
	var nominal struct {
		Duration float64 `json:"duration_seconds"`
	}
	if err := json.Unmarshal(out, &nominal); err != nil {
		t.Fatal(err)
	}
	if nominal.Duration < 0.9*want || nominal.Duration > 1.1*want {
		t.Errorf("the script's nominal run lasts %.3fs, the trace %.3fs: more than 10 %% apart\n%s", nominal.Duration, want, src)
	}
	got := replayElapsed(t, dir, "--ranks", "2", "--timing", "think", iop)
	t.Logf("trace %.3fs, script nominally %.3fs, replayed with --timing think %.3fs (%+.1f %%)", want, nominal.Duration, got, 100*(got-want)/want)
	if got < 0.9*want || got > 3*want {
		t.Errorf("the script replays in %.3fs, the trace lasts %.3fs: its think time is not waited out", got, want)
	}
}
