package ptrace

import (
	"slices"
	"sort"
)

// Cost is what tracing costs a program per call, as Calibrate measures
// it (ns): the tracer's stops and resumes, which the program spends
// waiting. Run takes it out of the times it records (Config.Cost), so
// that durations and the gaps between calls are the program's own.
type Cost struct {
	// InCall is added to the measured duration of each recorded call:
	// from the tracer letting the call go to the call's work starting,
	// and from its end to the tracer reading its result.
	InCall int64
	// Between is added to the time from a recorded call's end to the
	// program's next call: resuming the program after the exit stop, and
	// stopping it at its next call until the tracer stamps its start.
	Between int64
	// Stop is the cost of a call the tracer stops at but does not record
	// (a read of a pipe, a file the path rules leave out): it lies in the
	// gap before the next recorded call.
	Stop int64
	// Spread is half the interquartile range of the calibration's
	// per-call costs: how much one call's cost varies around InCall +
	// Between.
	Spread int64
	// Call is the duration of the calibration's call untraced (a 1-byte
	// read of /dev/zero): the least a call takes.
	Call int64
	// Samples is the number of calls each part was measured on.
	Samples int
}

// Corrections counts what Run took out of a run's times.
type Corrections struct {
	Calls      int64 // recorded calls whose times were corrected
	Stops      int64 // stops of calls not recorded (and their exit stops)
	ClampedDur int64 // calls that lasted less than Cost.InCall: duration 0
	ClampedGap int64 // gaps shorter than the cost they held: gap 0
	Limited    int64 // calls whose costs were scaled down to the recent calls' (see account)
	Removed    int64 // ns taken out in all
}

// account keeps the tracer's cost out of the times it records: event
// times are on a clock that runs behind the real one by the cost the
// program has paid so far (debt). Each recorded call's duration loses
// Cost.InCall; the gap before the next recorded call loses what the
// calls since cost between them (Between after a recorded call, Stop
// for each call stopped at but not recorded), never more than the gap.
// One account per rank: a rank whose threads make calls at the same
// time has them all taken from one timeline, at most each gap.
//
// A calibration made while the machine was busier than during the run
// would take out more than the tracer cost: so the in-call share is at
// most the shortest of the last recentCalls recorded durations less
// Cost.Call (no call is faster than the calibration's), and the costs
// between calls are scaled down in the same proportion.
type account struct {
	c       Cost
	recent  [recentCalls]int64 // raw durations of the latest recorded calls
	nrecent int
	scale   float64 // the costs between calls in use: Cost × scale
	debt    int64   // ns removed so far
	pending int64   // cost since the latest recorded call, for the next gap
	lastEnd int64   // real end of the latest recorded call
	marks   []mark
	n       Corrections
}

const recentCalls = 64

// mark says that from real time at on, the debt was at least debt.
type mark struct{ at, debt int64 }

// markEvery is how often (ns of real time) the account notes its debt,
// for Virtual.
const markEvery = 1_000_000

// take returns the cost the gap of a recorded call starting at s (real)
// can give: the pending cost, at most the gap since the latest recorded
// call's end; all of a gap that is no longer than the pending cost
// within the calibration's spread (what is left of it is the cost's
// error, not the program's time).
func (a *account) take(s int64) int64 {
	gap := max(s-a.lastEnd, 0)
	if a.pending > 0 && gap <= a.pending+a.between(a.c.Spread) {
		return gap
	}
	return min(a.pending, gap)
}

// started commits the take of a recorded call starting at s.
func (a *account) started(s, take int64) {
	if take < a.pending {
		a.n.ClampedGap++
	}
	a.debt += take
	a.n.Removed += take
	a.pending = 0
	if n := len(a.marks); n == 0 || s-a.marks[n-1].at >= markEvery {
		a.marks = append(a.marks, mark{s, a.debt})
	}
}

// bookkeeping takes out d, the time the tracer spent on a recorded
// call at its entry, when its own account says so (a Cost was given).
func (a *account) bookkeeping(d int64) {
	if a.c.Samples > 0 {
		a.debt += d
		a.n.Removed += d
	}
}

// stop counts a stop at a call the tracer does not record.
func (a *account) stop() {
	a.pending += a.between(a.c.Stop)
	if a.c.Stop > 0 {
		a.n.Stops++
	}
}

// ended returns the duration to record of a call that ran from s to e
// (real): the measured one less the tracer's share. A call the tracer
// saw end but does not record (it learnt a descriptor) leaves its cost
// for the next gap.
func (a *account) ended(s, e int64, rec bool) int64 {
	d := e - s
	if !rec {
		a.pending += a.between(a.c.InCall + a.c.Between)
		if a.c.InCall > 0 {
			a.n.Stops++
		}
		return d
	}
	in := a.inCall(d)
	rm := min(in, max(d, 0))
	if rm < in {
		a.n.ClampedDur++
	}
	if a.c.InCall > 0 || a.c.Between > 0 {
		a.n.Calls++
	}
	a.debt += rm
	a.n.Removed += rm
	a.lastEnd = e
	a.pending += a.between(a.c.Between)
	return d - rm
}

// inCall notes the raw duration d of a recorded call and returns the
// in-call share to take out of it: Cost.InCall, at most the shortest
// recent duration less Cost.Call; it sets the scale of the costs
// between calls to match.
func (a *account) inCall(d int64) int64 {
	a.recent[a.nrecent%recentCalls] = d
	a.nrecent++
	short := d
	for _, x := range a.recent[:min(a.nrecent, recentCalls)] {
		short = min(short, x)
	}
	in := a.c.InCall
	if lim := max(short-a.c.Call, 0); lim < in {
		in = lim
		a.n.Limited++
	}
	a.scale = 1
	if a.c.InCall > 0 {
		a.scale = float64(in) / float64(a.c.InCall)
	}
	return in
}

// between returns cost c scaled as the in-call share was.
func (a *account) between(c int64) int64 {
	if a.nrecent == 0 || a.scale >= 1 {
		return c
	}
	return int64(float64(c) * a.scale)
}

// virtual returns the time on the corrected clock of real time t (both
// ns from the trace's time 0), for times measured outside the tracer
// (the clock library's readings): within the debt paid in markEvery.
func (a *account) virtual(t int64) int64 {
	i := sort.Search(len(a.marks), func(i int) bool { return a.marks[i].at > t })
	if i == 0 {
		return t
	}
	return t - a.marks[i-1].debt
}

// median returns the median of v (sorted in place); 0 for none.
func median(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// trimmedMean returns the mean of v without its lowest and highest
// twentieth (sorted in place); 0 for none.
func trimmedMean(v []int64) int64 {
	slices.Sort(v)
	v = v[len(v)/20 : len(v)-len(v)/20]
	if len(v) == 0 {
		return 0
	}
	var sum int64
	for _, x := range v {
		sum += x
	}
	return sum / int64(len(v))
}

// quartiles returns the first and third quartiles of v (sorted in
// place).
func quartiles(v []int64) (int64, int64) {
	if len(v) == 0 {
		return 0, 0
	}
	slices.Sort(v)
	return v[len(v)/4], v[len(v)*3/4]
}
