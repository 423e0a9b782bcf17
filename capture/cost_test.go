package capture

import (
	"math/rand/v2"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// TestAccount: a program whose calls take 300 ns and that thinks 1 µs
// between them, recorded by a recorder that adds 5 µs to each call and
// 8 µs between calls, reads back as it ran: the durations and gaps are
// the program's, the starts on a clock that the cost no longer moves.
func TestAccount(t *testing.T) {
	const in, between, call, think = 5_000, 8_000, 300, 1_000
	a := Account{C: Cost{InCall: in, Between: between, Call: 100, Samples: 200}}
	var evs []trace.Event
	s := int64(1_000_000)
	for i := 0; i < 100; i++ {
		evs = append(evs, trace.Event{Op: trace.OpRead, Start: s, Dur: in + call})
		s += in + call + between + think
	}
	for i := range evs {
		a.Event(&evs[i])
	}
	for i, e := range evs {
		if e.Dur != call {
			t.Fatalf("call %d lasts %d ns, want %d", i, e.Dur, call)
		}
		if i > 0 {
			if gap := e.Start - (evs[i-1].Start + evs[i-1].Dur); gap != think {
				t.Fatalf("gap before call %d: %d ns, want %d", i, gap, think)
			}
		}
	}
	if evs[0].Start != 1_000_000 {
		t.Errorf("the first call moved to %d", evs[0].Start)
	}
	if n := a.N; n.Calls != 100 || n.ClampedDur != 0 || n.ClampedGap != 0 || n.Removed != 100*in+99*between {
		t.Errorf("corrections %+v", n)
	}
	// A real time during the run maps onto the corrected clock within

	// the cost paid in the last markEvery of real time, which is less.
	if v, exact := a.Virtual(s), s-a.Debt; v < exact || v > exact+markEvery {
		t.Errorf("Virtual(%d) = %d, want %d to %d", s, v, exact, exact+markEvery)
	}
}

// TestAccountClamps: a call shorter than the in-call share lasts 0 and
// a gap shorter than the cost between calls is 0, both counted, and
// calls that overlap keep their order.
func TestAccountClamps(t *testing.T) {
	a := Account{C: Cost{InCall: 5_000, Between: 8_000, Samples: 200}}
	evs := []trace.Event{
		{Op: trace.OpRead, Start: 0, Dur: 6_000},
		{Op: trace.OpRead, Start: 10_000, Dur: 6_000}, // gap 4 µs < 8 µs
		{Op: trace.OpFork, Start: 20_000},
		{Op: trace.OpRead, Start: 20_000, Dur: 50_000}, // overlaps the next
		{Op: trace.OpRead, Start: 21_000, Dur: 3_000},
	}
	for i := range evs {
		a.Event(&evs[i])
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].Start < evs[i-1].Start {
			t.Errorf("event %d starts at %d, before event %d at %d", i, evs[i].Start, i-1, evs[i-1].Start)
		}
	}
	if evs[1].Start != evs[0].Start+evs[0].Dur {
		t.Errorf("the short gap is %d", evs[1].Start-evs[0].Start-evs[0].Dur)
	}
	if a.N.ClampedGap == 0 {
		t.Errorf("no gap clamped: %+v", a.N)
	}
	if evs[4].Dur < 0 || evs[4].Dur > 3_000 {
		t.Errorf("the last call lasts %d", evs[4].Dur)
	}
}

// TestAccountLimited: a calibration dearer than the run (made in a burst
// of load) takes out no more than the shortest recent call allows, and
// scales the cost between calls the same way.
func TestAccountLimited(t *testing.T) {
	a := Account{C: Cost{InCall: 20_000, Between: 20_000, Call: 100, Samples: 200}}
	var evs []trace.Event
	s := int64(0)
	for i := 0; i < 10; i++ {
		evs = append(evs, trace.Event{Op: trace.OpRead, Start: s, Dur: 5_100})
		s += 5_100 + 30_000
	}
	for i := range evs {
		a.Event(&evs[i])
	}
	for i, e := range evs {
		if e.Dur != 100 {
			t.Errorf("call %d lasts %d, want 100 (its 5.1 µs less the 5 µs the shortest call allows)", i, e.Dur)
		}
		if i > 0 {
			// 20 µs between scaled by 5/20: 5 µs of the 30 µs gap.
			if gap := e.Start - evs[i-1].Start - evs[i-1].Dur; gap != 25_000 {
				t.Errorf("gap before call %d: %d, want 25000", i, gap)
			}
		}
	}
	if a.N.Limited != 10 {
		t.Errorf("limited %d calls, want 10", a.N.Limited)
	}
}

// TestAccountNone: without a cost, times are as measured.
func TestAccountNone(t *testing.T) {
	var a Account
	evs := []trace.Event{{Op: trace.OpRead, Start: 5, Dur: 7}, {Op: trace.OpWrite, Start: 20, Dur: 3}}
	want := append([]trace.Event(nil), evs...)
	for i := range evs {
		a.Event(&evs[i])
	}
	if evs[0] != want[0] || evs[1] != want[1] || a.N != (Corrections{}) {
		t.Errorf("events %+v, corrections %+v", evs, a.N)
	}
}

// TestAccountKeepsStartOrder: two processes of one rank make long calls
// that overlap (tar and the gzip it forked, each blocked on their pipe):
// the in-call costs of both come out of one timeline, faster than real
// time passes, yet the corrected starts keep the order the calls started
// in, strictly (readers order a rank's events by start: a child's call
// sorted before its fork, or a close before its open, is another program).
func TestAccountKeepsStartOrder(t *testing.T) {
	a := Account{C: Cost{InCall: 20_000, Between: 10_000, Call: 100, Samples: 200}}
	var evs []trace.Event
	s := int64(1_000_000)
	for i := 0; i < 200; i++ {
		// each call lasts 50 µs; a new one starts every 1 µs (the other
		// processes' calls overlap it)
		evs = append(evs, trace.Event{Op: trace.OpRead, Start: s, Dur: 50_000})
		s += 1_000
	}
	for i := range evs {
		a.Event(&evs[i])
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].Start <= evs[i-1].Start {
			t.Fatalf("call %d starts at %d, not after call %d at %d", i, evs[i].Start, i-1, evs[i-1].Start)
		}
	}
	if a.Debt <= s-1_000_000 {
		t.Errorf("debt %d ns: the overlap should take out more than the %d ns that passed", a.Debt, s-1_000_000)
	}
}

// TestAccountFollows: the tracer's cost rises from the 5 µs the
// calibration measured to 40 µs during the run; once a thread has made
// followMin cheap calls, the in-call share of its other calls is what
// its cheap calls cost (their durations less Cost.Call), and the costs
// between calls rise in proportion; another thread keeps the start-up
// figure until its own cheap calls say otherwise.
func TestAccountFollows(t *testing.T) {
	const in, between, call, read = 5_000, 8_000, 200, 300
	a := Account{C: Cost{InCall: in, Between: between, Call: call, Samples: 200}}
	s := int64(0)
	var d int64
	for i := 0; i < 40; i++ {
		// An lseek (cheap: Call) and a read (300 ns), each with 40 µs of
		// the tracer's in it.
		s += 100_000
		d = a.EndedOn(0, s, s+40_000+call, true, true)
		s += 100_000
		d = a.EndedOn(0, s, s+40_000+read, true, false)
	}
	if d != read {
		t.Errorf("read after the cheap calls: %d ns, want %d", d, read)
	}
	if got := a.betweenOn(0, between); got != between*8 {
		t.Errorf("cost between calls %d, want %d", got, between*8)
	}
	if d := a.EndedOn(1, s, s+40_000+read, true, false); d != 40_000+read-in {
		t.Errorf("another thread's read: %d ns, want the start-up share out: %d", d, 40_000+read-in)
	}
	if a.N.Measured != 40 || a.N.Followed != 2*(40-followMin+1) {
		t.Errorf("corrections %+v", a.N)
	}
	// Without cheap calls nothing follows: Ended is as before.
	b := Account{C: Cost{InCall: in, Between: between, Call: call, Samples: 200}}
	if d := b.Ended(0, 40_000+read, true); d != 40_000+read-in {
		t.Errorf("Ended: %d", d)
	}
}

// TestAccountOver: the recorder's time each record measured in the gap
// before its call (Over: the preload shim resolving a relative path,
// copying a long one) comes out of that gap beside the calibrated cost
// between calls, so that calls with costs of their own read back with
// the program's think time; a capture without a calibration (--raw-times)
// keeps the gap as measured.
func TestAccountOver(t *testing.T) {
	const in, between, call, think = 30, 40, 300, 1_000
	overs := []int64{0, 700, 90, 2_500, 0}
	for _, raw := range []bool{false, true} {
		a := Account{C: Cost{InCall: in, Between: between, Call: 100, Samples: 200}}
		if raw {
			a = Account{}
		}
		var evs []trace.Event
		s := int64(1_000_000)
		for i, o := range overs {
			if i > 0 {
				s += o + between + think
			}
			evs = append(evs, trace.Event{Op: trace.OpOpen, Start: s, Dur: in + call})
			s += in + call
		}
		for i := range evs {
			a.Over(overs[i])
			a.Event(&evs[i])
		}
		for i := 1; i < len(evs); i++ {
			gap := evs[i].Start - (evs[i-1].Start + evs[i-1].Dur)
			want := int64(think)
			if raw {
				want = overs[i] + between + think
			}
			if gap != want {
				t.Errorf("raw %v: gap before call %d: %d ns, want %d", raw, i, gap, want)
			}
		}
	}
}

// TestMinWindow: the window's least value is the least of the latest
// recentCalls values, for values that rise, fall and jump about.
func TestMinWindow(t *testing.T) {
	var w minWindow
	var all []int64
	x := int64(12345)
	for i := range 5000 {
		switch {
		case i < 300:
			x = int64(i) // rising
		case i < 600:
			x = int64(1000 - i) // falling
		default:
			x = (x*1103515245 + 12345) % 2147483648 % 1000
		}
		all = append(all, x)
		got := w.add(x)
		want := x
		for _, v := range all[max(0, len(all)-recentCalls):] {
			want = min(want, v)
		}
		if got != want {
			t.Fatalf("value %d: least %d, want %d", i, got, want)
		}
	}
}

// TestAccountEventInOne: Event gives the times and the account that
// Take, Started, Order and Ended in turn give: for calls that are clamped, limited by the recent durations,
// overlap, with the shim's own time between them or none, beside process
// events; and, with thread 0's cheap calls followed, the general way.
func TestAccountEventInOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	for round := range 200 {
		c := Cost{InCall: int64(rng.IntN(3000)), Between: int64(rng.IntN(3000)), Spread: int64(rng.IntN(500)),
			Call: int64(rng.IntN(200)), Samples: rng.IntN(2) * 100}
		follow := round%4 == 0
		if follow {
			c.Samples = 100
		}
		a, b := Account{C: c}, Account{C: c}
		if follow { // thread 0 follows its cheap calls
			for i := range 10 {
				a.EndedOn(0, int64(i)*10, int64(i)*10+int64(rng.IntN(2000)), true, true)
			}
			b = a
			b.threads = map[uint32]*window{0: new(*a.threads[0])}
		}
		s := int64(rng.IntN(1000))
		for i := range 300 {
			e := trace.Event{Op: trace.OpPwrite, Start: s, Dur: int64(rng.IntN(4000))}
			if rng.IntN(20) == 0 {
				e = trace.Event{Op: trace.OpFork, Start: s}
			}
			over := int64(rng.IntN(3)) * int64(rng.IntN(2000))
			s += int64(rng.IntN(6000)) - 500 // calls overlap at times
			got, want := e, e
			a.Over(over)
			a.Event(&got)
			b.Over(over)
			if c := want.Op.Class(); c == trace.ClassProcess {
				want.Start = b.Order(want.Start - b.Debt)
			} else {
				take := b.Take(want.Start)
				b.Started(want.Start, take)
				want.Start, want.Dur = b.Order(want.Start-b.Debt), b.Ended(want.Start, want.Start+want.Dur, true)
			}
			if got != want {
				t.Fatalf("round %d, event %d: %+v, want %+v", round, i, got, want)
			}
		}
		if a.N != b.N || a.Debt != b.Debt || a.pending != b.pending || a.lastEnd != b.lastEnd || len(a.marks) != len(b.marks) {
			t.Fatalf("round %d: account %+v, want %+v", round, a, b)
		}
	}
}

// TestAccountStopTook: a stop at a call not recorded costs the program
// the calibration's Stop until its thread has followMin round trips;
// then the tracer's time on the stop and the lower decile of the
// thread's round trips (less Cost.Call), whatever the calibration said
// — a helper on the tracer's processor calibrates 7 µs a stop, a
// program on the other one pays three times that.
func TestAccountStopTook(t *testing.T) {
	const stop, call = 7_000, 200
	a := Account{C: Cost{InCall: 7_000, Between: 8_000, Stop: stop, Call: call, Samples: 200}}
	a.StopTook(0, 15_000)
	if a.pending != stop || a.N.FollowedStops != 0 {
		t.Fatalf("before any round trip: pending %d (want %d), %+v", a.pending, stop, a.N)
	}
	// Round trips of 20 µs and more: the decile of 30 values, the 4th.
	for i := range 30 {
		a.RoundTrip(0, 20_000+int64(i)*1_000)
	}
	a.pending = 0
	a.StopTook(0, 15_000)
	if want := int64(15_000 + 23_000 - call); a.pending != want || a.N.FollowedStops != 1 || a.N.Stops != 2 {
		t.Errorf("after 30 round trips: pending %d, want %d; %+v", a.pending, want, a.N)
	}
	// Another thread has none of them.
	a.pending = 0
	a.StopTook(1, 15_000)
	if a.pending != stop {
		t.Errorf("another thread's stop: %d, want %d", a.pending, stop)
	}
	// Round trips change nothing of recorded calls: they follow cheap
	// calls only (a round trip holds the program's own work too).
	if d := a.EndedOn(0, 0, 40_000, true, false); d != 40_000-7_000 {
		t.Errorf("a recorded call: %d, want the calibration's share out: %d", d, 40_000-7_000)
	}
	// A capture without calibration (--raw-times) takes nothing out.
	b := Account{}
	for range 30 {
		b.RoundTrip(0, 20_000)
	}
	b.StopTook(0, 15_000)
	if b.pending != 0 {
		t.Errorf("raw times: pending %d", b.pending)
	}
}
