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
// and spins from there, and a wait no longer than margin only spins:
// a nanosleep wakes up tens of microseconds late on a virtual machine,
// far more than such a wait keeps. Without precise waits (many more ranks
// than CPUs, where spinning would starve the others) the rest sleeps on
// the runtime timer too, at millisecond resolution.
//
// A closed-loop wait (think timing, gap) shorter than skip is not waited
// but owed: the next wait is that much longer, so the think time a rank
// keeps over the replay is the recorded one within skip, without paying
// the waiter's own cost on every tiny gap.
type waiter struct {
	clk     Clock
	margin  int64
	precise bool
	own     bool // the rank has a processor of its own: spin, never yield
	stop    *atomic.Bool
	ctx     context.Context
	timer   *time.Timer
	// skip is the shortest closed-loop wait the waiter waits (shorter
	// ones are owed); owed is what it owes now, 0 ≤ owed < skip.
	skip int64
	owed int64
	// calm is how many of the next waits longer than spinCheck sleep up
	// to the deadline instead of margin before it: a spin lost its
	// processor to another thread (see preemptedGap).
	calm int
	// switches is the thread's count of involuntary context switches
	// when the latest long spin began (see contended).
	switches int64
	stats    waitStats
}

// waitStats is the waiter's accounting: what it did with the waits it
// was given.
type waitStats struct {
	waits   int64 // waits asked for with the deadline still ahead
	skipped int64 // closed-loop waits shorter than skip, owed instead
	spins   int64 // waits that ended in a spin
	sleeps  int64 // nanosleep(2) calls
	timers  int64 // runtime timer sleeps
	calms   int64 // times a lost spin made the next waits longer than spinCheck sleep up to the deadline
}

// A spin that sees the clock jump by more than preemptedGap between two
// readings lost its processor. If the kernel took it away to run another
// thread (an involuntary context switch of the rank's thread, for a rank
// with a thread of its own), the machine is busier than the calibration
// saw: spinning then only makes the kernel treat the rank as a processor
// hog and queue it behind the others, while a sleeper is woken promptly;
// so the next calmWaits waits longer than spinCheck sleep in nanosleep(2)
// up to the deadline. Shorter waits still spin: a sleep would cost them
// more than they keep, and a spin that short is seldom preempted. A jump
// without a context switch is the hypervisor running another guest:
// sleeping would not help (the wake-up also waits for the virtual
// processor) and costs a guest's timer latency on every call, so the rank
// keeps spinning.
const (
	preemptedGap = 100_000
	calmWaits    = 1000
)

// now returns the ns since the replay's start.
func (w *waiter) now() int64 { return w.clk.now() }

// gap waits for target, a closed-loop deadline (the end of the previous
// call plus the recorded gap), with what earlier waits owe: it waits
// until target + owed unless that is less than skip ahead, and then owes
// the difference instead. now is a recent reading of the clock. It
// returns the clock when it stopped waiting and the deadline it waited
// for (target plus what it owed), or false if the replay was stopped.
func (w *waiter) gap(target, now int64) (start, due int64, ok bool) {
	due = target + w.owed
	d := due - now
	if d < w.skip {
		w.owed = max(d, 0)
		if d > 0 {
			w.stats.skipped++
		}
		return now, due, true
	}
	w.owed = 0
	start, ok = w.until(due, now)
	return start, due, ok
}

// until waits for target (ns on the replay's clock); now is a recent
// reading of the clock. It returns the clock when it stopped waiting —
// the start of the call that waited — or false if the replay was
// stopped meanwhile.
func (w *waiter) until(target, now int64) (int64, bool) {
	if target <= now {
		return now, true
	}
	w.stats.waits++
	margin := w.margin
	if w.calm > 0 && target-now > spinCheck {
		w.calm--
		margin = 0
	}
	read := false // now is a reading of this call's
	spun := false
	for {
		d := target - now
		if d <= 0 {
			if spun {
				w.stats.spins++
			}
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
			w.stats.timers++
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
			w.stats.sleeps++
			unix.Nanosleep(&ts, nil)
		case d > 20_000 && !w.own:
			runtime.Gosched()
		default:
			// The last microseconds: spin.
			if !spun && w.own && d >= spinCheck {
				w.switches = involuntarySwitches()
			}
			spun = true
			prev := now
			if now = w.now(); read && now-prev > preemptedGap && w.contended() {
				w.calm = calmWaits
				w.stats.calms++
			}
			read = true
			continue
		}
		now, read = w.now(), true
	}
}

// spinCheck is the shortest spin that reads the thread's involuntary
// context switches when it begins (a system call, a few microseconds on
// a virtual machine: too dear for shorter waits, which compare with the
// count of the latest long spin instead).
const spinCheck = 20_000

// contended reports, after a spin lost its processor, whether the kernel
// gave it to another thread: for a rank with a processor of its own,
// whether the thread was switched out involuntarily since the latest
// long spin began (or the rank started); for the others, always.
func (w *waiter) contended() bool {
	if !w.own {
		return true
	}
	n := involuntarySwitches()
	was := w.switches
	w.switches = n
	return n != was
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

// skipBelow returns the skip of a rank's waiter (see waiter): the
// shortest closed-loop wait worth waiting. With precise waits it is what
// the shortest wait costs the waiter itself — two readings of the clock,
// measured here on a calibrated clock, at least 50 ns — so that a gap
// shorter than the waiter's own reaction is owed rather than overshot.
// Without precise waits, a wait of up to 50 µs yields the processor to
// the other ranks and comes back after a round of them, so those waits
// are owed until they add up to more.
func skipBelow(precise bool) int64 {
	if !precise {
		return int64(50 * time.Microsecond)
	}
	c := newClock(time.Now())
	for c.real() < 2*reanchor && c.tsc && c.nsPerTck == 0 {
		c.now() // let the counter calibrate (the replay's clocks will be)
	}
	const n = 101
	d := make([]int64, n)
	for i := range d {
		a := c.now()
		d[i] = c.now() - a
	}
	slices.Sort(d)
	return max(2*d[n/2], 50)
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
