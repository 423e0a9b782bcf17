package preload

import (
	"math/rand/v2"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// testStream is a stream of given events of one priority that makes them
// in chunks of a given length (as procIter does).
type testStream struct {
	evs   []trace.Event
	overs []int64
	p     int8
	chunk int
	pos   int // the current event is evs[pos-1]
	end   int // of the chunk made
}

func (s *testStream) next() bool {
	if s.pos >= len(s.evs) {
		return false
	}
	if s.pos >= s.end {
		s.end = min(s.end+s.chunk, len(s.evs))
	}
	s.pos++
	return true
}
func (s *testStream) current() *trace.Event { return &s.evs[s.pos-1] }
func (s *testStream) ahead() ([]trace.Event, []int64) {
	return s.evs[s.pos-1 : s.end], s.overs[s.pos-1 : s.end]
}
func (s *testStream) skip(n int)   { s.pos += n }
func (s *testStream) prio() int8   { return s.p }
func (s *testStream) error() error { return nil }

// oneByOne is the merge of the streams an event at a time: the order
// merge's runs must give.
func oneByOne(its []stream) (evs []trace.Event, overs []int64) {
	h := iterHeap{}
	for _, p := range its {
		if p.next() {
			h.push(p)
		}
	}
	for len(h) > 0 {
		p := h[0].s
		a, o := p.ahead()
		evs, overs = append(evs, a[0]), append(overs, o[0])
		if p.next() {
			h.fix()
		} else {
			h.pop()
		}
	}
	return evs, overs
}

// TestMergeRuns: the runs merge takes from each stream give the events
// in the order that taking them one at a time does, ties of start and
// priority included.
func TestMergeRuns(t *testing.T) {
	events, runs := 0, 0
	for round := range 300 {
		streams := func() []stream {
			rng := rand.New(rand.NewPCG(uint64(round), 3))
			var its []stream
			for k := range 1 + rng.IntN(5) {
				s := &testStream{p: int8(rng.IntN(3)), chunk: 1 + rng.IntN(8)}
				if k == 0 {
					s.p = prioCall
				}
				start := int64(rng.IntN(4))
				for i := range rng.IntN(40) {
					start += int64(rng.IntN(3)) // ties within and across streams
					s.evs = append(s.evs, trace.Event{Start: start, Thread: uint32(k), Offset: int64(i)})
					s.overs = append(s.overs, int64(k*1000+i))
				}
				its = append(its, s)
			}
			return its
		}
		want, wantOvers := oneByOne(streams())
		var got []trace.Event
		var gotOvers []int64
		if _, err := merge(streams(), func(evs []trace.Event, overs []int64) error {
			if len(evs) == 0 || len(evs) != len(overs) {
				t.Fatalf("round %d: a run of %d events and %d overs", round, len(evs), len(overs))
			}
			got, gotOvers = append(got, evs...), append(gotOvers, overs...)
			runs++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("round %d: %d events, want %d", round, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] || gotOvers[i] != wantOvers[i] {
				t.Fatalf("round %d: event %d is %+v (over %d), want %+v (over %d)", round, i, got[i], gotOvers[i], want[i], wantOvers[i])
			}
		}
		events += len(want)
	}
	if runs > events*3/4 {
		t.Errorf("%d runs of %d events: few runs longer than one", runs, events)
	}
}
