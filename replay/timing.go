package replay

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Timing is when a rank issues its calls.
type Timing uint8

const (
	// AFAP issues each call as soon as the previous one returns.
	AFAP Timing = iota
	// Original issues each call at its recorded offset from the trace's
	// first call (of any rank: a rank that started later keeps its
	// delay), divided by the speed (open loop: a late call does not
	// delay the ones after it).
	Original
	// Think keeps the recorded gap between the end of one call and the
	// start of the next, divided by the speed (closed loop).
	Think
)

var timingNames = []string{"afap", "original", "think"}

func (t Timing) String() string {
	if int(t) < len(timingNames) {
		return timingNames[t]
	}
	return fmt.Sprintf("timing(%d)", uint8(t))
}

// ParseTiming reads "original", "think" or "afap".
func ParseTiming(s string) (Timing, error) {
	for i, n := range timingNames {
		if s == n {
			return Timing(i), nil
		}
	}
	return 0, fmt.Errorf("--timing %q: want original, think or afap", s)
}

// coarseSlack is how much earlier than a deadline a runtime sleep
// (time.Sleep, a timer) should end: the runtime's timers wake up to a
// millisecond late when the process is otherwise idle.
const coarseSlack = 1500 * time.Microsecond

// waiter waits for deadlines on the replay's clock. Waits longer than
// coarseSlack sleep on a runtime timer (interruptible); with precise
// waits the rest sleeps in nanosleep(2) until margin before the deadline
// and spins from there. Without precise waits (many more ranks than
// CPUs, where spinning would starve the others) the rest sleeps on the
// runtime timer too, at millisecond resolution.
type waiter struct {
	clk     clock
	margin  int64
	precise bool
	own     bool // the rank has a processor of its own: spin, never yield
	stop    *atomic.Bool
	ctx     context.Context
	timer   *time.Timer
	calm    int // waits left that sleep up to the deadline: a spin was preempted
}

// A spin that sees the clock jump by more than preemptedGap between two
// readings lost its processor. If the kernel took it away to run another
// thread (an involuntary context switch of the rank's thread, for a rank
// with a thread of its own), the machine is busier than the calibration
// saw: spinning then only makes the kernel treat the rank as a processor
// hog and queue it behind the others, while a sleeper is woken promptly;
// so the next calmWaits waits sleep in nanosleep(2) up to the deadline.
// A jump without a context switch is the hypervisor running another
// guest: sleeping would not help (the wake-up also waits for the virtual
// processor) and costs a guest's timer latency on every call, so the
// rank keeps spinning.
const (
	preemptedGap = 100_000
	calmWaits    = 1000
)

// now returns the ns since the replay's start.
func (w *waiter) now() int64 { return w.clk.now() }

// until waits for target (ns on the replay's clock); now is a recent
// reading of the clock. It returns the clock when it stopped waiting —
// the start of the call that waited — or false if the replay was
// stopped meanwhile.
func (w *waiter) until(target, now int64) (int64, bool) {
	margin := w.margin
	if w.calm > 0 {
		w.calm--
		margin = 0
	}
	read := false           // now is a reading of this call's
	var switches int64 = -1 // involuntary context switches when the spin began
	for {
		d := target - now
		if d <= 0 {
			return now, true
		}
		if w.stop.Load() {
			return now, false
		}
		switch {
		case d > int64(2*coarseSlack) || !w.precise && d > int64(50*time.Microsecond):
			sl := time.Duration(d)
			if w.precise {
				sl -= coarseSlack
			}
			if w.timer == nil {
				w.timer = time.NewTimer(sl)
			} else {
				w.timer.Reset(sl)
			}
			select {
			case <-w.timer.C:
			case <-w.ctx.Done():
				w.timer.Stop()
				return now, false
			}
		case !w.precise:
			runtime.Gosched()
		case d > margin:
			ts := unix.NsecToTimespec(d - margin)
			unix.Nanosleep(&ts, nil)
		case d > 20_000 && !w.own:
			runtime.Gosched()
		default:
			// The last microseconds: spin.
			if w.own && switches < 0 {
				switches = involuntarySwitches()
			}
			prev := now
			if now = w.now(); read && now-prev > preemptedGap && (!w.own || involuntarySwitches() != switches) {
				w.calm, margin = calmWaits, 0
			}
			read = true
			continue
		}
		now, read = w.now(), true
	}
}

// involuntarySwitches returns how many times the kernel has taken the
// processor away from the calling thread to run another (0 if it cannot
// tell).
func involuntarySwitches() int64 {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) != nil {
		return 0
	}
	return ru.Nivcsw
}

// calibrate measures how late nanosleep(2) wakes up on this machine and
// returns the margin before a deadline at which a waiter stops sleeping
// and spins: the 90th percentile of the overshoot plus 20 µs, within
// [30 µs, 1 ms]. With fine, it measures as a rank with a processor of its
// own sleeps (see fineSlack).
func calibrate(fine bool) int64 {
	if fine {
		defer fineSlack()()
	}
	const n, d = 15, 200_000
	over := make([]int64, 0, n)
	ts := unix.NsecToTimespec(d)
	for i := 0; i < n; i++ {
		t := time.Now()
		unix.Nanosleep(&ts, nil)
		over = append(over, int64(time.Since(t))-d)
	}
	slices.Sort(over)
	m := over[n*9/10] + 20_000
	return min(max(m, 30_000), 1_000_000)
}

// fineSlack locks the calling goroutine to its thread and sets the
// thread's timer slack to 1 ns, so that nanosleep(2) wakes it when asked
// rather than up to 50 µs later (the default slack); it returns the
// function that undoes both.
func fineSlack() (undo func()) {
	runtime.LockOSThread()
	old, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil || unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0) != nil {
		return runtime.UnlockOSThread
	}
	return func() {
		unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(old), 0, 0, 0)
		runtime.UnlockOSThread()
	}
}
