package record

import (
	"os/exec"
	"slices"
	"testing"
	"time"
)

// TestChildren: children lists a child that runs, reaps it once it has
// ended, and then, with no child left (wait4's ECHILD), lists none.
func TestChildren(t *testing.T) {
	if pids := children(); len(pids) != 0 {
		t.Skipf("this test process has children already: %v", pids)
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	pid := cmd.Process.Pid
	if pids := children(); !slices.Equal(pids, []int{pid}) {
		cmd.Process.Kill()
		t.Fatalf("children() = %v with sleep (pid %d) running", pids, pid)
	}
	cmd.Process.Kill()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := children()
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("children() = %v 10 s after pid %d was killed", pids, pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Reaped by children, not by Wait.
	if err := cmd.Wait(); err == nil {
		t.Errorf("Wait of pid %d after children() reaped it: no error", pid)
	}
}
