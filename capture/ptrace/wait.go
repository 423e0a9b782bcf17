//go:build linux && (amd64 || arm64)

package ptrace

import (
	"time"

	"golang.org/x/sys/unix"
)

// A stop's cost is mostly wake-ups: the tracee stops and wakes the
// tracer, which resumes it and waits again. A tracer blocked in wait4
// leaves its processor idle, and on a virtual machine an idle processor
// halts: waking it goes through the hypervisor. Measured here (2 vCPUs,
// bench/record part 2: 100,000 recorded pwrites of 4 KiB, an entry and
// an exit stop each): 88 µs a call with the tracer blocking at every
// stop and the program on the other processor, 31 µs with it polling
// for up to 20 µs first, and less processor time (65 against 39 µs a
// call: a wake-up costs the kernel more than the polls); with the tracer
// and the program on one processor, where the poll yields it to the
// program between polls, 13.5 against 11.8 µs.
//
// stopWaiter waits for tracees' stops: it polls (wait4 with WNOHANG,
// yielding the processor between polls) for up to spinWindow, then
// blocks. A program that computes for longer than that between its
// calls would have the tracer poll in vain at each: after spinMisses
// waits in a row that outlasted the window, the waiter blocks at once,
// and polls again at every spinProbe-th wait to see whether the calls
// came closer.
type stopWaiter struct {
	misses int  // waits in a row that outlasted the window
	n      uint // waits
}

const (
	spinWindow = 20 * time.Microsecond
	spinMisses = 2
	spinProbe  = 8
)

// wait is wait4(pid, ws, __WALL) after the poll.
func (w *stopWaiter) wait(pid int, ws *unix.WaitStatus) (int, error) {
	w.n++
	if w.misses < spinMisses || w.n%spinProbe == 0 {
		end := time.Now().Add(spinWindow)
		for {
			tid, err := unix.Wait4(pid, ws, unix.WALL|unix.WNOHANG, nil)
			if tid != 0 || err != nil {
				w.misses = 0
				return tid, err
			}
			if time.Now().After(end) {
				break
			}
			unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		}
		w.misses++
	}
	return unix.Wait4(pid, ws, unix.WALL, nil)
}
