//go:build linux && (amd64 || arm64)

package ptrace

import (
	"os"
	"syscall"
	"testing"
	"time"

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
	time.Sleep(50 * time.Millisecond)
	wait(pid)
	if w.misses != 0 {
		t.Fatalf("a child done before the wait counted a miss (%d)", w.misses)
	}
	// Children that take longer than the window.
	for i, want := range []int{1, 2, spinMisses, spinMisses} {
		wait(startChild(t, "sleep 0.02"))
		if w.misses != want {
			t.Fatalf("after %d slow waits, %d misses; want %d", i+1, w.misses, want)
		}
	}
	// Up to the probe: the waits block at once; the probe polls, and a
	// child already done resets the count.
	for w.n%spinProbe != spinProbe-1 {
		wait(startChild(t, "sleep 0.02"))
	}
	pid = startChild(t, "exit 0")
	time.Sleep(50 * time.Millisecond)
	wait(pid)
	if w.misses != 0 {
		t.Fatalf("the probe did not poll: %d misses", w.misses)
	}
	// Not a child: the error wait4 gives, from the poll.
	if _, err := w.wait(1<<30, &ws); err != unix.ECHILD {
		t.Fatalf("wait for no child: %v, want ECHILD", err)
	}
}
