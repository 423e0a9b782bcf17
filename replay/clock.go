package replay

import (
	"math"
	"os"
	"strings"
	"sync"
	"time"
)

// Clock is a rank's clock: nanoseconds since the replay's start, on
// CLOCK_MONOTONIC (through the Go runtime). The engine reads it once per
// call, so its cost is part of every call a replay measures: under a
// paravirtualised clock (kvm-clock) a read costs 30–70 ns, a tenth of a
// 4 KiB pwrite to tmpfs, and more right after a system call, when the
// pages of the vDSO have left the TLB.
//
// Where the processor's time-stamp counter is trustworthy (amd64 with
// constant_tsc and nonstop_tsc: it ticks at a fixed rate, in every power
// state), the clock reads the counter instead (about 10 ns) and converts
// it: the conversion is anchored on a reading of the real clock, taken
// again at least every reanchor nanoseconds, and its rate is calibrated
// over the whole run so far, from the first anchor to the latest. Until a
// millisecond has passed to calibrate on, every read is a real one.
//
// The clock does not step at an anchor: an anchor's pair of readings is
// only as exact as the real clock's read is short (100–200 ns here, up to
// microseconds after a system call), and a step of that size would land
// in the one call that spans the anchor — a 4 KiB pwrite measured as 0 ns.
// Instead the clock carries on from where the counter says it is and
// makes up the difference to the real clock over the next interval, at a
// rate that differs from the calibrated one by difference ÷ reanchor
// (10⁻⁴ for a 100 ns difference: a hundredth of a nanosecond in a 100 ns
// call). So it stays within an anchor's error of CLOCK_MONOTONIC, and a
// call's duration is the counter's. An anchor that finds the counter off
// the real clock by more than tscTolerance (a counter that stopped,
// jumped or differs between processors) turns the counter off for the
// rest of the replay: the clock then steps to the real clock, once.
type Clock struct {
	base time.Time
	tsc  bool // read the counter
	// anchored: tStart and nStart hold the first anchor
	anchored bool

	last     int64   // the latest reading (readings never go back)
	t0, n0   int64   // the anchor: counter and ns
	limit    int64   // counter ticks after t0 at which to anchor again
	tStart   int64   // the first anchor
	nStart   int64   //
	nsPerTck float64 // the calibrated rate, 0 until calibrated
	slew     float64 // the rate now() converts at: nsPerTck, slewed toward the real clock
}

const (
	reanchor     = int64(time.Millisecond)
	tscTolerance = int64(20 * time.Microsecond)
	// anchorSpan: counter readings this close (ns) around a real one
	// make an anchor good enough not to read another pair.
	anchorSpan = 300
)

// newClock returns a clock counting from base. Its rate is calibrated
// from the process's first anchor (procAnchor, taken when the package
// was initialised), so that a replay, which plans before it runs, has a
// calibrated clock from its first call on: none of its reads is then a
// real one only because the rank is young, and the rate rests on the
// whole life of the process rather than on a rank's first millisecond.
func newClock(base time.Time) Clock {
	c := Clock{base: base, tsc: tscUsable()}
	if c.tsc && procAnchor.ok {
		c.tStart, c.nStart, c.anchored = procAnchor.t, int64(procAnchor.at.Sub(base)), true
	}
	return c
}

// procAnchor is the process's first reading of the counter beside the
// real clock (the pair of four read in the fewest ticks).
var procAnchor = func() (a struct {
	t  int64
	at time.Time
	ok bool
}) {
	a.at = time.Now()
	if !haveTSC {
		return a
	}
	span := int64(math.MaxInt64)
	for range 4 {
		x := rdtsc()
		m := time.Now()
		y := rdtsc()
		if y-x < span {
			span, a.t, a.at = y-x, x+(y-x)/2, m
		}
	}
	a.ok = span > 0
	return a
}()

// SysClock reads the clock a backend times the system calls of a
// replayed call with (SysTime): the time-stamp counter where the
// replay's clocks read it, else CLOCK_MONOTONIC in ns.
func SysClock() int64 {
	if tscUsable() {
		return rdtsc()
	}
	return int64(time.Since(procAnchor.at))
}

// ticksNS converts a difference of SysClock readings into ns, or returns
// −1 where nothing can say (no rate measured yet over a millisecond).
// SysClock reads the counter wherever it is usable, even after the clock
// stopped reading it (an anchor found it off the real clock: on a loaded
// machine, a rate not yet settled or a preemption can do that): its ticks
// then convert at the rate calibrated so far, or else at the rate since
// the process's anchor. Returning −1 there made a predicting replay take
// the whole call, the engine's work around the system calls included,
// for the rest of the run (TestPredictTimesSystemCalls, under load).
func (c *Clock) ticksNS(d int64) int64 {
	switch {
	case !tscUsable():
		return d
	case c.nsPerTck > 0:
		return int64(float64(d) * c.nsPerTck)
	}
	if r := procRate(); r > 0 {
		return int64(float64(d) * r)
	}
	return -1
}

// procRate is the counter's rate (ns a tick) from the process's anchor to
// now, once a millisecond has passed; 0 before, or without an anchor.
func procRate() float64 {
	if !procAnchor.ok {
		return 0
	}
	t, n := rdtsc(), time.Since(procAnchor.at)
	if n < time.Duration(reanchor) || t <= procAnchor.t {
		return 0
	}
	return float64(n) / float64(t-procAnchor.t)
}

// real reads CLOCK_MONOTONIC.
func (c *Clock) real() int64 { return int64(time.Since(c.base)) }

// Now returns the ns since the replay's start: what a RunExecutor
// times the calls of a run with.
func (c *Clock) Now() int64 { return c.now() }

// At returns what Now would return, given t, a reading of the
// time-stamp counter (rdtsc; 0 where there is none) taken just now,
// where Now would convert a reading of its own; otherwise it returns
// false (call Now). It is short enough to inline, so that a RunExecutor
// whose system call returns the counter (read one instruction after the
// call) makes no call to read the clock.
func (c *Clock) At(t int64) (int64, bool) {
	d := t - c.t0
	if d <= 0 || d > c.limit { // limit: 0 while Now reads the real clock or anchors
		return 0, false
	}
	n := c.n0 + int64(float64(d)*c.slew)
	if n < c.last {
		n = c.last
	}
	c.last = n
	return n, true
}

// now returns the ns since base.
func (c *Clock) now() int64 {
	if !c.tsc {
		return c.real()
	}
	d := rdtsc() - c.t0
	if c.nsPerTck == 0 || d < 0 || d > c.limit {
		return c.anchor()
	}
	n := c.n0 + int64(float64(d)*c.slew)
	if n < c.last {
		n = c.last
	}
	c.last = n
	return n
}

// anchor reads the real clock, between two reads of the counter, and
// makes that pair the new anchor; it returns the real clock.
func (c *Clock) anchor() int64 {
	// A pair read across a preemption is a poor anchor: of up to four
	// pairs, keep the one read in the fewest ticks (the first that took
	// under anchorSpan ns, once the rate is known). Before the rate is
	// known, all four are read: the first anchor is the base of the
	// calibration, and one off by a preemption's length would skew the
	// rate.
	var t, n int64
	span := int64(math.MaxInt64)
	for i := 0; i < 4; i++ {
		a := rdtsc()
		m := c.real()
		b := rdtsc()
		if b-a < span {
			span, t, n = b-a, a+(b-a)/2, m
		}
		if c.nsPerTck != 0 && float64(span)*c.nsPerTck < anchorSpan {
			break
		}
	}
	// at: where the clock stands at the counter's t, carrying on from
	// the previous anchor; the real clock where there is none.
	at := n
	switch {
	case !c.anchored:
		c.tStart, c.nStart, c.anchored = t, n, true
	case c.slew != 0:
		at = c.n0 + int64(float64(t-c.t0)*c.slew)
		if at-n > tscTolerance || n-at > tscTolerance || t < c.t0 {
			c.tsc, c.limit = false, 0 // not a counter to trust (At reads now)
			at = n
		}
	}
	if c.tsc && n-c.nStart >= reanchor && t > c.tStart {
		c.nsPerTck = float64(n-c.nStart) / float64(t-c.tStart)
		c.limit = int64(float64(reanchor) / c.nsPerTck)
		// Make up the difference to the real clock over the next
		// reanchor ns (tscTolerance at most: a rate within 2 %).
		c.slew = c.nsPerTck * (1 + float64(n-at)/float64(reanchor))
	}
	c.t0, c.n0 = t, at
	at = max(at, c.last)
	c.last = at
	return at
}

var tscOnce = sync.OnceValue(func() bool {
	if !haveTSC || os.Getenv("IOREPLAY_NO_TSC") != "" {
		return false
	}
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return false
	}
	return cpuFlags(string(b), "constant_tsc", "nonstop_tsc")
})

// tscUsable reports whether the clock may read the time-stamp counter.
func tscUsable() bool { return tscOnce() }

// cpuFlags reports whether the first "flags" line of cpuinfo lists every
// flag of want.
func cpuFlags(cpuinfo string, want ...string) bool {
	for line := range strings.SplitSeq(cpuinfo, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) != "flags" {
			continue
		}
		have := map[string]bool{}
		for _, f := range strings.Fields(v) {
			have[f] = true
		}
		for _, f := range want {
			if !have[f] {
				return false
			}
		}
		return true
	}
	return false
}
