//go:build linux && (amd64 || arm64)

package ptrace

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/iotrace/iotrace/capture"
	"github.com/iotrace/iotrace/trace"
	"golang.org/x/sys/unix"
)

// startChild starts "sh -c SCRIPT" as a child of this process (no
// os/exec: the test waits for it itself) and returns its pid.
func startChild(t *testing.T, script string) int {
	t.Helper()
	pid, err := syscall.ForkExec("/bin/sh", []string{"sh", "-c", script}, &syscall.ProcAttr{Files: []uintptr{0, 1, 2}, Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// exited waits until child pid has ended, leaving it to be reaped.
func exited(t *testing.T, pid int) {
	t.Helper()
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
}

// TestStopWaiter checks the waiter's policy on children's exits: a wait
// whose child is done before the poll window ends returns without
// blocking and counts no miss; waits that outlast the window count
// misses, and after spinMisses of them the waiter blocks at once (the
// count stays) but for every spinProbe-th wait, which polls again.
func TestStopWaiter(t *testing.T) {
	var w stopWaiter
	var ws unix.WaitStatus
	wait := func(pid int) {
		t.Helper()
		got, err := w.wait(pid, &ws)
		if err != nil || got != pid || !ws.Exited() {
			t.Fatalf("wait(%d) = %d, %v, status %v", pid, got, err, ws)
		}
	}
	// Done before the wait: the first poll finds it.
	pid := startChild(t, "exit 0")
	exited(t, pid)
	wait(pid)
	if w.misses != 0 {
		t.Fatalf("a child done before the wait counted a miss (%d)", w.misses)
	}
	// Children that take far longer than the window (100 ms: a poll
	// preempted on a loaded machine still ends before they do).
	for i, want := range []int{1, 2, spinMisses, spinMisses} {
		wait(startChild(t, "sleep 0.1"))
		if w.misses != want {
			t.Fatalf("after %d slow waits, %d misses; want %d", i+1, w.misses, want)
		}
	}
	// Up to the probe: the waits block at once; the probe polls, and a
	// child already done resets the count.
	for w.n%spinProbe != spinProbe-1 {
		wait(startChild(t, "sleep 0.1"))
	}
	pid = startChild(t, "exit 0")
	exited(t, pid)
	wait(pid)
	if w.misses != 0 {
		t.Fatalf("the probe did not poll: %d misses", w.misses)
	}
	// Not a child: the error wait4 gives, from the poll.
	if _, err := w.wait(1<<30, &ws); err != unix.ECHILD {
		t.Fatalf("wait for no child: %v, want ECHILD", err)
	}
}

// TestStopsFollowRoundTrips: the stops of a shell's children at the
// calls the rules leave out (their loaders' opens, maps and closes) cost
// what the tracer saw them cost — its time on each and the thread's round
// trips — once a child has made followMin of them; the calibration's
// figure only before.
func TestStopsFollowRoundTrips(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cost := capture.Cost{InCall: 5_000, Between: 5_000, Stop: 5_000, Call: 200, Samples: 200}
	res, evs, _ := record(t, Config{Argv: []string{"/bin/sh", "-c", `for i in 1 2 3 4 5; do cat "$0" >/dev/null; done`, file}, Dir: dir, Rules: mustRules(t, dir), Cost: cost})
	if res.Status() != 0 {
		t.Fatalf("status %d", res.Status())
	}
	reads := 0
	for _, e := range evs {
		if e.Op == trace.OpRead {
			reads++
		}
	}
	n := res.Corrections
	if reads < 5 || n.Stops == 0 || n.FollowedStops == 0 || n.FollowedStops >= n.Stops {
		t.Errorf("%d reads; corrections %+v: want stops, most of them followed, not all", reads, n)
	}
}
