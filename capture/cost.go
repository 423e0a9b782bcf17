package capture

import (
	"fmt"
	"math"

	"github.com/iotrace/iotrace/internal/sat"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
	"slices"
	"sort"
)

// Cost is what a recorder costs a program per call, as it measures it at
// start-up (ns): for ptrace the tracer's stops and resumes, which the
// program spends waiting (ptrace.Calibrate); for the preload shim its
// clock readings and the writing of its records. An Account takes it out
// of the times recorded, so that durations and the gaps between calls are
// the program's own (docs/FORMAT.md, "The recorder's cost").
type Cost struct {
	// InCall is added to the measured duration of each recorded call:
	// from the tracer letting the call go to the call's work starting,
	// and from its end to the tracer reading its result.
	InCall int64
	// Between is added to the time from a recorded call's end to the
	// program's next call: resuming the program after the exit stop, and
	// stopping it at its next call until the tracer stamps its start;
	// for the preload shim, the part of its time between calls that no
	// record measures (the entry into the next wrapper: the rest comes
	// with each record, Account.Over).
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
	// Stopped is, for ptrace, how long the tracer keeps a thread stopped
	// at a recorded call's entry stop, as the thread's own schedstat
	// shows it (neither on a processor nor runnable): part of Between,
	// which holds the thread's resuming and stopping too. The waits for
	// mapped pages take it out of a gap's sleep (docs/FORMAT.md, "Waits
	// for mapped pages"). 0: not measured.
	Stopped int64
	// Image is, for the preload shim, its cost per process image that no
	// record carries (loading the library, unmapping the spool at exit:
	// preload.ImageCost), taken out of the gap before the first event of
	// each image a forked child of the rank exec'd; Replace the same for
	// an image that replaced one with records of its own (a child that
	// set up its streams before its exec), whose spool the exec unmapped.
	// 0: not measured.
	Image, Replace int64
}

// Corrections counts what an Account took out of a run's times.
type Corrections struct {
	Calls      int64 // recorded calls whose times were corrected
	Stops      int64 // stops of calls not recorded (and their exit stops)
	ClampedDur int64 // calls that lasted less than Cost.InCall: duration 0
	ClampedGap int64 // gaps shorter than the cost they held: gap 0
	Limited    int64 // calls whose costs were scaled down to the recent calls' (see account)
	Removed    int64 // ns taken out in all
	// Measured are the cheap calls whose cost was measured (EndedOn),
	// Followed the recorded calls whose in-call share came from their
	// thread's recent cheap calls, FollowedGaps the gaps whose cost was
	// scaled to them.
	Measured, Followed, FollowedGaps int64
	// FollowedStops are the stops of calls not recorded whose cost came
	// from the tracer's time on them and their thread's round trips
	// (StopTook), StopOut what they added to the gaps in all (ns).
	FollowedStops, StopOut int64
	// InCall and Between are what was taken out of the recorded calls'
	// durations and of the gaps before them, in all (ns).
	InCall, Between int64
	// Images and Replaced are the process images Cost.Image and
	// Cost.Replace were taken out for.
	Images, Replaced int64
}

// Account keeps a recorder's cost out of the times it records: event
// times are on a clock that runs behind the real one by the cost the
// program has paid so far (debt). Each recorded call's duration loses
// Cost.InCall; the gap before the next recorded call loses what the
// calls since cost between them (Between after a recorded call, Stop
// for each call stopped at but not recorded), never more than the gap.
// One account per rank: a rank whose threads make calls at the same
// time has them all taken from one timeline, at most each gap.
//
// The cost follows the run where the recorder says which calls are
// cheap (EndedOn). A calibration made while the machine was busier than
// during the run would take out more than the tracer cost: so the in-call share is at
// most the shortest of the last recentCalls recorded durations less
// Cost.Call (no call is faster than the calibration's), and the costs
// between calls are scaled down in the same proportion.
type Account struct {
	C       Cost      // the cost to take out
	recent  minWindow // raw durations of the latest recentCalls recorded calls
	nrecent int
	scale   float64 // the costs between calls in use: Cost × scale
	Debt    int64   // ns removed so far: the times run this much behind the real clock
	pending int64   // cost since the latest recorded call, for the next gap
	lastEnd int64   // real end of the latest recorded call
	marks   []mark
	N       Corrections // what was taken out

	lastStart int64 // of the latest event (Event)
	events    bool  // Event has seen one

	threads map[uint32]*window // each thread's recent cheap calls' costs (EndedOn)
	pendTh  uint32             // the thread whose costs are pending
}

// followWindow is how many of a thread's recent cheap calls its
// estimate is the median of; followMin how many it needs before it
// replaces the start-up calibration.
const (
	followWindow = 32
	followMin    = 8
)

// window keeps a thread's latest followWindow cheap calls' costs and
// their median, and its latest round trips (RoundTrip) and their lower
// decile.
type window struct {
	cheap ring
	rt    ring
}

// add adds a cheap call's cost.
func (w *window) add(x int64) { w.cheap.add(x, 2, 1) }

// ready says whether the window has enough cheap calls for an estimate.
func (w *window) ready() bool { return w.cheap.n >= followMin }

// ring keeps the latest followWindow values and, once it has followMin,
// est: the one at a 1/frac of their sorted order, sorted again at every
// every-th value once the ring is full (a round trip comes with every
// stop, cheap calls seldom).
type ring struct {
	v   [followWindow]int64
	n   int
	est int64
}

func (r *ring) add(x int64, frac, every int) {
	r.v[r.n%followWindow] = x
	r.n++
	if r.n >= followMin && (r.n <= followWindow || r.n%every == 0) {
		var s [followWindow]int64
		k := copy(s[:], r.v[:min(r.n, followWindow)])
		slices.Sort(s[:k])
		r.est = s[k/frac]
	}
}

func (a *Account) thread(th uint32) *window {
	if a.threads == nil {
		a.threads = map[uint32]*window{}
	}
	t := a.threads[th]
	if t == nil {
		t = &window{}
		a.threads[th] = t
	}
	return t
}

// Cheap says whether a call's own cost is known to be tiny, as a 1-byte
// read of /dev/zero (Cost.Call) is: it touches the descriptor table or
// the file's position, no data and no storage. The recorded duration
// of such a call less Cost.Call is what the recorder cost it.
func Cheap(e *trace.Event) bool {
	switch e.Op {
	case trace.OpLseek:
		return e.Whence == 0 || e.Whence == 1 // SEEK_SET, SEEK_CUR: no size to ask
	case trace.OpDup, trace.OpDup2, trace.OpDup3, trace.OpFcntl, trace.OpFstat:
		return true
	}
	return false
}

// ordered returns start, or just after the latest event's start if that
// is not earlier. Events must keep the order in which their calls started:
// the costs taken out of one rank's timeline come from all its processes
// and threads, so where calls overlap (tar and the gzip it forked) the
// debt grows faster than real time, and a later call's start less the
// debt could fall before an earlier one's. Readers order a rank's events
// by start: a child's calls sorted before its fork, or a close before its
// open, would be another program. Starts are therefore strictly
// increasing (by 1 ns where they would tie or go back).
func (a *Account) ordered(start int64) int64 {
	if a.events {
		start = max(start, a.lastStart+1)
	}
	a.lastStart, a.events = start, true
	return start
}

// Order returns the start to record for a call or event that starts (on
// the corrected clock) at start, in the order the recorder saw them
// start: see ordered.
func (a *Account) Order(start int64) int64 { return a.ordered(start) }

const recentCalls = 64

// minWindow is the least of the latest recentCalls values. The values
// come in blocks of recentCalls: the window is the start of the block
// being filled and the end of the one before it, whose least values from
// each position on are made once, when it is full. Adding a value costs
// no branch on the values (a queue of the candidates, the least first,
// mispredicted its comparisons on call durations: 15 ns a call).
type minWindow struct {
	v   [recentCalls]int64     // the block being filled (from 0 to i), over the one before
	suf [recentCalls + 1]int64 // suf[k]: the least of the block before from k on
	pre int64                  // the least of the block being filled
	i   int
}

// add adds x and returns the least of the latest recentCalls values.
func (w *minWindow) add(x int64) int64 {
	switch w.i {
	case 0: // the first value: no block before it
		for k := range w.suf {
			w.suf[k] = math.MaxInt64
		}
		w.pre = math.MaxInt64
	case recentCalls: // the block is full: it becomes the one before
		for k := recentCalls - 1; k >= 0; k-- {
			w.suf[k] = min(w.v[k], w.suf[k+1])
		}
		w.i, w.pre = 0, math.MaxInt64
	}
	w.v[w.i] = x
	w.pre = min(w.pre, x)
	w.i++
	return min(w.pre, w.suf[w.i])
}

// mark says that from real time at on, the debt was at least debt.
type mark struct{ at, debt int64 }

// markEvery is how often (ns of real time) the account notes its debt,
// for Virtual.
const markEvery = 1_000_000

// Take returns the cost the gap of a recorded call starting at s (real)
// can give: the pending cost, at most the gap since the latest recorded
// call's end; all of a gap that is no longer than the pending cost
// within the calibration's spread (what is left of it is the cost's
// error, not the program's time).
func (a *Account) Take(s int64) int64 {
	gap := max(s-a.lastEnd, 0)
	if a.pending > 0 && gap <= a.pending+a.between(a.C.Spread) {
		return gap
	}
	return min(a.pending, gap)
}

// Started commits the take of a recorded call starting at s.
func (a *Account) Started(s, take int64) {
	if take < a.pending {
		a.N.ClampedGap++
	}
	a.Debt += take
	a.N.Removed += take
	a.N.Between += take
	if a.following(a.pendTh) != nil {
		a.N.FollowedGaps++
	}
	a.pending = 0
	// The gap is spent up to s: a call seen to its end but not recorded
	// (ptrace learning a descriptor) does not let the next take it again.
	a.lastEnd = max(a.lastEnd, s)
	if n := len(a.marks); n == 0 || s-a.marks[n-1].at >= markEvery {
		a.marks = append(a.marks, mark{s, a.Debt})
	}
}

// Settle takes the pending cost out of the gap before a process event
// at s (real) that passed a recorder's time on (an exec or an exit after
// calls the rules left out): that time lies before the event, which then
// starts after it, and the next call's gap begins there.
func (a *Account) Settle(s int64) {
	if a.pending > 0 {
		a.Started(s, a.Take(s))
	}
}

// Over adds d, the recorder's own time measured in the gap before the
// next recorded call (the preload shim's, from a call's end to the end
// of its wrapper: its RF_OVER), to what that gap gives up, beside the
// calibrated Between (then only what no record measures).
func (a *Account) Over(d int64) {
	if d > 0 && a.C.Samples > 0 { // a capture with --raw-times keeps its times as measured
		a.pending = sat.Add(a.pending, d)
	}
}

// Bookkeeping takes out d, the time the tracer spent on a recorded
// call at its entry, when its own account says so (a Cost was given).
func (a *Account) Bookkeeping(d int64) {
	if a.C.Samples > 0 {
		a.Debt += d
		a.N.Removed += d
	}
}

// Stop counts a stop at a call the tracer does not record.
func (a *Account) Stop() { a.StopOn(0) }

// StopOn counts a stop of thread th at a call the tracer does not
// record.
func (a *Account) StopOn(th uint32) {
	a.pending += a.betweenOn(th, a.C.Stop)
	if a.C.Stop > 0 {
		a.N.Stops++
	}
}

// StopTook counts a stop of thread th at a call the tracer does not
// record, where the tracer spent d on it: once the thread has round trips
// to follow (RoundTrip), the stop cost it d and the lower decile of its
// round trips (the tracer's resuming it, its waking, the tracer's
// noticing its next stop), else as StopOn. The calibration's helper
// stops at a read of /dev/zero, which the tracer looks at for 0.1 µs; a
// program's loader opens, maps and closes its libraries, and the tracer
// reads and rules on each path: 7–20 µs a stop (a shell's 200 cats).
func (a *Account) StopTook(th uint32, d int64) {
	if a.C.Samples > 0 && a.threads != nil {
		if t := a.threads[th]; t != nil && t.rt.n >= followMin {
			c := max(d, 0) + t.rt.est
			a.pending += c
			a.N.Stops++
			a.N.FollowedStops++
			a.N.StopOut += c
			return
		}
	}
	a.StopOn(th)
}

// Ended returns the duration to record of a call that ran from s to e
// (real): the measured one less the tracer's share. A call the tracer
// saw end but does not record (it learnt a descriptor) leaves its cost
// for the next gap.
func (a *Account) Ended(s, e int64, rec bool) int64 {
	return a.EndedOn(0, s, e, rec, false)
}

// EndedOn is Ended for a call of thread th; cheap says the call's own
// cost is tiny (Cheap). The in-call share follows the run: it is the
// median of the costs of thread th's latest followWindow cheap calls
// (each its duration less Cost.Call), or Cost.InCall before the thread
// made followMin of them. The median, not a lower quantile: the cost of
// a stop varies from call to call (by tens of µs where a wake-up crosses
// processors), and what is taken out of each call is to leave the
// calls' typical durations and their sums as they were; calls shorter
// than it last 0 (counted). The recent durations' limit on Cost.InCall
// (inCall) does not apply: that guards against a calibration made at
// a busier time than the run, and this is measured on the run. The
// costs between calls follow in the same proportion.
func (a *Account) EndedOn(th uint32, s, e int64, rec, cheap bool) int64 {
	d := e - s
	a.pendTh = th
	if !rec {
		a.pending += a.betweenOn(th, a.C.InCall+a.C.Between)
		if a.C.InCall > 0 {
			a.N.Stops++
		}
		return d
	}
	if cheap && a.C.Samples > 0 {
		a.thread(th).add(max(d-a.C.Call, 0))
		a.N.Measured++
	}
	in := a.inCall(d)
	t := a.following(th)
	if t != nil {
		in = t.cheap.est
		a.N.Followed++
	}
	rm := min(in, max(d, 0))
	if rm < in {
		a.N.ClampedDur++
	}
	if a.C.InCall > 0 || a.C.Between > 0 {
		a.N.Calls++
	}
	a.Debt += rm
	a.N.Removed += rm
	a.N.InCall += rm
	a.lastEnd = e
	a.pending += a.scaled(t, a.C.Between)
	return d - rm
}

// following returns thread th's window when its costs come from its
// own measurements, else nil. Most accounts have no thread's (the
// preload shim's, ptrace's without cheap calls): no map to look in.
func (a *Account) following(th uint32) *window {
	if a.threads == nil {
		return nil
	}
	if t := a.threads[th]; t != nil && t.ready() {
		return t
	}
	return nil
}

// RoundTrip notes a round trip of thread th: rt ns from the tracer
// letting it run (after a stop at a call it did not record, or at a
// call's exit) to its next stop, as the tracer saw them. It holds the
// resume (a wake-up of the program's processor), the call it was let go
// into (if any), its own computation, its stopping and the tracer's
// noticing the stop: the lower decile of the thread's last followWindow
// round trips, less Cost.Call, is what a stop costs it beyond the
// tracer's time on it (StopTook), wherever the scheduler put the tracer
// and the program. The calibration's helper met either: here 7 µs a stop
// on one processor, 27 µs on two.
func (a *Account) RoundTrip(th uint32, rt int64) {
	if a.C.Samples > 0 && rt > 0 {
		a.thread(th).rt.add(max(rt-a.C.Call, 0), 10, 8)
	}
}

// Follow returns cost c (Cost.Stopped, say) of thread th as the run
// scales the costs between calls (betweenOn).
func (a *Account) Follow(th uint32, c int64) int64 { return a.betweenOn(th, c) }

// betweenOn returns cost c (Cost.Between or Cost.Stop) of thread th:
// scaled as its in-call share was (EndedOn) when it follows the run,
// else as between does. A stop costs the wake-ups of the program and of
// the tracer wherever it falls: what changes one changes the other.
func (a *Account) betweenOn(th uint32, c int64) int64 { return a.scaled(a.following(th), c) }

// scaled is betweenOn for the window t of the thread (nil: none ready).
func (a *Account) scaled(t *window, c int64) int64 {
	if t == nil || a.C.InCall <= 0 {
		return a.between(c)
	}
	return int64(float64(c) * float64(t.cheap.est) / float64(a.C.InCall))
}

// inCall notes the raw duration d of a recorded call and returns the
// in-call share to take out of it: Cost.InCall, at most the shortest
// recent duration less Cost.Call; it sets the scale of the costs
// between calls to match.
func (a *Account) inCall(d int64) int64 {
	a.nrecent++
	short := a.recent.add(d)
	in := a.C.InCall
	if lim := max(short-a.C.Call, 0); lim < in {
		in = lim
		a.N.Limited++
	}
	a.scale = 1
	if in < a.C.InCall {
		a.scale = float64(in) / float64(a.C.InCall)
	}
	return in
}

// between returns cost c scaled as the in-call share was.
func (a *Account) between(c int64) int64 {
	if a.nrecent == 0 || a.scale >= 1 {
		return c
	}
	return int64(float64(c) * a.scale)
}

// Virtual returns the time on the corrected clock of real time t (both
// ns from the trace's time 0), for times measured outside the tracer
// (the clock library's readings): within the debt paid in markEvery.
func (a *Account) Virtual(t int64) int64 {
	i := sort.Search(len(a.marks), func(i int) bool { return a.marks[i].at > t })
	if i == 0 {
		return t
	}
	return t - a.marks[i-1].debt
}

// Median returns the median of v (sorted in place); 0 for none.
func Median(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// TrimmedMean returns the mean of v without its lowest and highest
// twentieth (sorted in place); 0 for none.
func TrimmedMean(v []int64) int64 {
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

// Quartiles returns the first and third quartiles of v (sorted in
// place).
func Quartiles(v []int64) (int64, int64) {
	if len(v) == 0 {
		return 0, 0
	}
	slices.Sort(v)
	return v[len(v)/4], v[len(v)*3/4]
}

// Event takes the cost out of e, the next event of a rank in call order
// with times as measured: a call's start moves back by the cost taken
// before it, its duration loses the in-call share; any other event
// (process events, markers) only moves back.
func (a *Account) Event(e *trace.Event) {
	if c := e.Op.Class(); c == trace.ClassProcess || c == trace.ClassMarker {
		e.Start = a.ordered(e.Start - a.Debt)
		return
	}
	s, d := e.Start, e.Dur
	a.Started(s, a.Take(s))
	// Calls that overlap (a library call and the system calls it made,
	// threads) keep their order.
	e.Start = a.ordered(s - a.Debt)
	e.Dur = a.EndedOn(0, s, s+d, true, false)
}

// Format is what the trace's rank info says of the cost and of what was
// taken out.
func (c Cost) Format(n Corrections) format.Cost {
	return format.Cost{InCall: c.InCall, Between: c.Between, Stop: c.Stop, Spread: c.Spread,
		Calls: n.Calls, Stops: n.Stops, ClampedDur: n.ClampedDur, ClampedGap: n.ClampedGap,
		Measured: n.Measured, Followed: n.Followed, InCallOut: n.InCall, BetweenOut: n.Between,
		Image: c.Image, Images: n.Images, Replace: c.Replace, Replaced: n.Replaced,
		FollowedStops: n.FollowedStops, StopOut: n.StopOut}
}

// Note is how the trace header says the times were corrected
// (trace.Meta.Corrected), method naming the calibration.
func (c Cost) Note(method string) string {
	s := fmt.Sprintf("%s: %s of each call's duration, %s between calls", method, format.Nanos(c.InCall), format.Nanos(c.Between))
	if c.Image > 0 || c.Replace > 0 {
		s += fmt.Sprintf(", %s at each process start (%s where the exec replaced an image with records)", format.Nanos(c.Image), format.Nanos(c.Replace))
	}
	return s
}
