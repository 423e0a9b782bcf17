package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iotrace/iotrace/trace"
)

// waitingRanks writes a trace of n ranks that meet in a barrier, which
// rank 0 enters a minute after the others (original timing): a replay of
// it has n−1 ranks waiting in the barrier for as long as the test needs.
func waitingRanks(t *testing.T, path string, n int) {
	t.Helper()
	m := trace.NewMemTrace()
	m.Add(trace.Event{Rank: 0, Op: trace.OpMark, Start: 1})
	m.Add(trace.Event{Rank: 0, Op: trace.OpMPIBarrier, Start: int64(time.Minute), Dur: 1000})
	for r := uint32(1); r < uint32(n); r++ {
		m.Add(trace.Event{Rank: r, Op: trace.OpMPIBarrier, Start: 1, Dur: 1000})
	}
	writeTrace(t, path, m)
}

// interruptRun is a replay started on a terminal (so that it shows its
// progress), to be interrupted once it runs.
type interruptRun struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	stderr bytes.Buffer
	done   chan struct{}
	tmp    string // its TMPDIR
}

// leftInTmp fails the test if the replay left anything in its TMPDIR
// (its temporary target, trace or parts).
func (r *interruptRun) leftInTmp(t *testing.T) {
	t.Helper()
	if left, _ := os.ReadDir(r.tmp); len(left) > 0 {
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		t.Errorf("left in TMPDIR: %v", names)
	}
}

// startOnPty starts ioreplay with args, its standard error on a
// pseudo-terminal, and returns once the replay shows its progress (it
// runs): at most after a minute, which fails the test.
func startOnPty(t *testing.T, args ...string) *interruptRun {
	t.Helper()
	master, slave := openPty(t)
	r := &interruptRun{cmd: exec.Command(bin, args...), done: make(chan struct{}), tmp: t.TempDir()}
	r.cmd.Env = append(os.Environ(), "TMPDIR="+r.tmp)
	r.cmd.Stderr = slave
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	t.Cleanup(func() { r.cmd.Process.Kill(); master.Close() })
	progress := make(chan struct{})
	go func() { // ends with EIO when the child exits
		defer close(r.done)
		buf := make([]byte, 4096)
		seen := false
		for {
			n, err := master.Read(buf)
			r.mu.Lock()
			r.stderr.Write(buf[:n])
			s := r.stderr.String()
			r.mu.Unlock()
			if !seen && strings.Contains(s, "% (") {
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
	case <-r.done:
		t.Fatalf("ioreplay ended before it showed its progress:\n%s", r.text())
	case <-time.After(time.Minute):
		t.Fatalf("no progress after a minute:\n%s", r.text())
	}
	return r
}

func (r *interruptRun) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stderr.String()
}

// wait waits for the process's end (at most two minutes) and returns
// its exit status and how long it took from since.
func (r *interruptRun) wait(t *testing.T, since time.Time) (int, time.Duration) {
	t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- r.cmd.Wait() }()
	var err error
	select {
	case err = <-ch:
	case <-time.After(2 * time.Minute):
		t.Fatalf("ioreplay still runs two minutes after the interrupt:\n%s", r.text())
	}
	took := time.Since(since)
	<-r.done
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("exit: %v, want status 130\n%s", err, r.text())
	}
	return ee.ExitCode(), took
}

// TestInterruptManyRanks: a Ctrl-C stops a replay of 20,000 ranks that
// wait in a barrier in about a second, every rank noticing the cancelled
// context in its wait (100,000 ranks took 22 s, 10,000 several seconds:
// each rank that left the barrier took the layer's lock to look for a
// deadlock among the others). The bound is generous: a loaded machine.
func TestInterruptManyRanks(t *testing.T) {
	dir := t.TempDir()
	in, rec := filepath.Join(dir, "wait.iot"), filepath.Join(dir, "partial.iot")
	n := 20000
	if v, err := strconv.Atoi(os.Getenv("IOREPLAY_INTERRUPT_RANKS")); err == nil && v > 1 {
		n = v // to measure: docs/REPLAY.md has 100,000
	}
	waitingRanks(t, in, n)
	r := startOnPty(t, "--record", rec, in)
	sent := time.Now()
	r.cmd.Process.Signal(syscall.SIGINT)
	code, took := r.wait(t, sent)
	t.Logf("stopped %v after SIGINT", took)
	msg := r.text()
	if code != 130 {
		t.Fatalf("exit %d, want 130:\n%s", code, msg)
	}
	if took > 20*time.Second {
		t.Fatalf("took %v to stop after SIGINT, want a few seconds", took)
	}
	if !strings.Contains(msg, "ioreplay: interrupted: ") || !strings.Contains(msg, fmt.Sprintf("of %d events replayed", n+1)) {
		t.Fatalf("message:\n%s", msg)
	}
	if strings.Contains(msg, "goroutine ") || strings.Contains(msg, "unmatched") {
		t.Fatalf("the stop reported more than the interrupt:\n%s", msg)
	}
	st := stats(t, rec)
	if st.Ranks != n || st.Replay == nil || !st.Replay.Interrupted {
		t.Fatalf("partial trace: %d ranks, replay %+v", st.Ranks, st.Replay)
	}
	r.leftInTmp(t)
}

// TestInterruptTwice: a second Ctrl-C while the first one's stop is
// under way ends ioreplay at once: status 130, one line that says so, no
// stack, and nothing left of its temporary target.
func TestInterruptTwice(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "wait.iot")
	waitingRanks(t, in, 20000)
	r := startOnPty(t, "--record", filepath.Join(dir, "partial.iot"), in)
	sent := time.Now()
	r.cmd.Process.Signal(syscall.SIGINT)
	// Then again every 20 ms until it ends: signals sent while none of the
	// process's threads ran (a loaded machine) are one pending signal to
	// the kernel, and a second one alone could merge with the first. The
	// first stop writes 20,000 ranks' records, far longer.
	go func() {
		for {
			select {
			case <-r.done:
				return
			case <-time.After(20 * time.Millisecond):
				r.cmd.Process.Signal(syscall.SIGINT)
			}
		}
	}()
	code, took := r.wait(t, sent)
	t.Logf("ended %v after the first SIGINT", took)
	msg := r.text()
	if code != 130 {
		t.Fatalf("exit %d, want 130:\n%s", code, msg)
	}
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	last := lines[len(lines)-1]
	if i := strings.LastIndex(last, "\x1b[K"); i >= 0 { // the progress line, cleared
		last = last[i+len("\x1b[K"):]
	}
	if !strings.HasPrefix(last, "ioreplay: interrupted twice: stopped at once") {
		t.Fatalf("last line %q, want the second interrupt's:\n%s", last, msg)
	}
	if strings.Contains(msg, "goroutine ") || strings.Count(msg, "interrupted") != 1 {
		t.Fatalf("want one line of ioreplay's:\n%s", msg)
	}
	r.leftInTmp(t) // the temporary target, though it stopped at once
}
