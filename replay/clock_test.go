package replay

import (
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestClockFollowsMonotonic reads the clock in a busy loop for 30 ms and
// checks that it never goes back and stays within a few microseconds of
// CLOCK_MONOTONIC — with the time-stamp counter where the processor
// allows it (then it must have calibrated and still be on), and without.
func TestClockFollowsMonotonic(t *testing.T) {
	for _, tsc := range []bool{false, true} {
		if tsc && !tscUsable() {
			t.Log("no constant_tsc+nonstop_tsc here: only the real clock is tested")
			continue
		}
		c := newClock(time.Now())
		c.tsc = tsc
		var prev, worst int64
		reads := 0
		for c.real() < 30e6 {
			n := c.now()
			if n < prev {
				t.Fatalf("tsc %v: the clock went back from %d to %d", tsc, prev, n)
			}
			prev = n
			reads++
			if reads%1000 == 0 {
				// Between a read of the real clock before and one after.
				a := c.real()
				n := c.now()
				b := c.real()
				if b-a > 20_000 {
					continue // preempted in between: no verdict
				}
				worst = max(worst, a-n, n-b)
			}
		}
		if worst > 5_000 {
			t.Errorf("tsc %v: %d ns off CLOCK_MONOTONIC", tsc, worst)
		}
		if tsc && (!c.tsc || c.nsPerTck == 0) {
			t.Errorf("the counter was turned off (%v) or never calibrated (%v ns per tick)", !c.tsc, c.nsPerTck)
		}
		t.Logf("tsc %v: %d reads, worst offset %d ns, %.4f ns per tick", tsc, reads, worst, c.nsPerTck)
	}
}

// TestClockDropsABadCounter feeds the clock an anchor that disagrees with
// the real clock, as a counter that jumped would, and checks that it
// stops using the counter.
func TestClockDropsABadCounter(t *testing.T) {
	if !tscUsable() {
		t.Skip("no constant_tsc+nonstop_tsc here")
	}
	c := newClock(time.Now())
	for c.nsPerTck == 0 {
		c.now()
	}
	c.n0 -= 10 * tscTolerance // the counter now reads 200 µs late
	c.t0 -= c.limit           // and the next read anchors
	c.now()
	if c.tsc {
		t.Fatal("the clock kept a counter 200 µs off the real clock")
	}
	if n, r := c.now(), c.real(); r-n > 1000 || n > r {
		t.Fatalf("after falling back: %d against the real %d", n, r)
	}
	// A predicting replay times the system calls by the counter
	// (SysTime) still: their ticks convert at the rate calibrated so
	// far, not into "unknown", which made it take the whole call, the
	// engine's work included, for the rest of the run.
	// The real clock brackets the counter's readings, and the sleep is
	// the least they span: a preemption only widens the bracket.
	const sleep = 2 * time.Millisecond
	r0 := c.real()
	a := SysClock()
	time.Sleep(sleep)
	b := SysClock()
	r1 := c.real()
	if got := c.ticksNS(b - a); got < int64(sleep)*9/10 || got > (r1-r0)*11/10 {
		t.Errorf("after falling back, ticksNS: %d ns for at least %v and at most %d ns of the real clock", got, sleep, r1-r0)
	}
}

func TestCPUFlags(t *testing.T) {
	info := "processor\t: 0\nflags\t\t: fpu tsc constant_tsc rep_good nonstop_tsc\n\nprocessor\t: 1\nflags\t\t: fpu\n"
	if !cpuFlags(info, "constant_tsc", "nonstop_tsc") {
		t.Error("flags of the first processor not found")
	}
	if cpuFlags(info, "constant_tsc", "invariant") || cpuFlags("model name: x\n", "tsc") {
		t.Error("a missing flag was found")
	}
}

// TestClockCalibratedFromTheStart: a clock made once the process is a
// few milliseconds old (as a replay's are, after planning) reads the
// counter, calibrated, from its first read — on the process's first
// anchor — and converts SysClock differences to the real clock's ns.
func TestClockCalibratedFromTheStart(t *testing.T) {
	if !tscUsable() {
		t.Skip("no constant_tsc+nonstop_tsc here")
	}
	if d := 3*time.Millisecond - time.Since(procAnchor.at); d > 0 {
		time.Sleep(d)
	}
	c := newClock(time.Now())
	a := c.real()
	n := c.now()
	b := c.real()
	if c.nsPerTck == 0 || !c.tsc {
		t.Fatalf("first read: calibrated %v, counter on %v", c.nsPerTck != 0, c.tsc)
	}
	if b-a < 20_000 && (n < a-5_000 || n > b+5_000) {
		t.Errorf("first read %d, the real clock %d–%d", n, a, b)
	}
	// A counter reading beside a real one, read within 10 µs of each
	// other (a preemption between them would say nothing of the rate).
	pair := func() (int64, int64) {
		for {
			a := SysClock()
			r := c.real()
			if b := SysClock(); c.ticksNS(b-a) < 10_000 {
				return a + (b-a)/2, r
			}
		}
	}
	t0, r0 := pair()
	time.Sleep(2 * time.Millisecond)
	t1, r1 := pair()
	got, want := c.ticksNS(t1-t0), r1-r0
	if d := got - want; d > want/100+10_000 || -d > want/100+10_000 {
		t.Errorf("ticksNS: %d ns for %d ns of the real clock", got, want)
	}
}

// TestClockDoesNotStepAtAnchors times 400,000 pairs of getppid calls
// (about 100 ms: a hundred anchors) and checks that no pair measures
// much less than the shortest hundredth: an anchor's error (the real
// clock's read is not instant) must not land in the call that spans it.
// Stepping to each anchor measured some pairs as 0 ns in two runs of
// three, and as 92 ns in the third. Load only lengthens calls.
func TestClockDoesNotStepAtAnchors(t *testing.T) {
	if !tscUsable() {
		t.Skip("no constant_tsc+nonstop_tsc here")
	}
	c := newClock(time.Now())
	d := make([]int64, 400_000)
	for i := range d {
		t0 := c.now()
		syscall.Getppid()
		syscall.Getppid()
		d[i] = c.now() - t0
	}
	if !c.tsc {
		t.Fatal("the counter was turned off")
	}
	slices.Sort(d)
	if p1 := d[len(d)/100]; d[0] < p1/2 {
		t.Errorf("shortest pair of calls %d ns, the shortest hundredth %d ns", d[0], p1)
	}
	t.Logf("shortest %d ns, p1 %d, median %d", d[0], d[len(d)/100], d[len(d)/2])
}

// TestClockAt: At converts a counter reading as Now would (between a
// reading of Now before and one after, never going back), declines while
// the clock is not calibrated or reads the real clock, and Now goes on
// from where At left.
func TestClockAt(t *testing.T) {
	if !tscUsable() {
		t.Skip("no constant_tsc+nonstop_tsc here")
	}
	c := newClock(time.Now())
	c.nsPerTck, c.limit, c.anchored = 0, 0, false // not calibrated yet
	if _, ok := c.At(rdtsc()); ok {
		t.Fatal("At converted before the clock was calibrated")
	}
	converted := 0
	for start := c.real(); c.real()-start < 20e6; {
		a := c.Now()
		n, ok := c.At(rdtsc())
		b := c.Now()
		if ok {
			converted++
			if n < a || n > b {
				t.Fatalf("At: %d, not between Now's %d and %d", n, a, b)
			}
		}
	}
	if converted == 0 {
		t.Fatal("At never converted")
	}
	c.n0 -= 10 * tscTolerance // the counter now reads 200 µs late (TestClockDropsABadCounter)
	c.t0 -= c.limit           // and the next read anchors, dropping it
	c.now()
	if c.tsc {
		t.Fatal("the clock kept a counter 200 µs off the real clock")
	}
	if _, ok := c.At(rdtsc()); ok {
		t.Fatal("At converted a counter the clock dropped")
	}
	t.Logf("%d readings converted", converted)
}
