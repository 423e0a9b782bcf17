package replay

import (
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// call is one call of a test timeline: think time, duration, and what it is.
type call struct {
	gap, dur int64
	file     bool
	sync     bool // a collective on comm
	comm     uint32
	fileDom  bool
}

// timeline turns calls into a rank's stretches, as a predicting runner
// does while it replays.
func timeline(calls ...call) []predRec {
	var recs []predRec
	s := newStretch()
	for _, c := range calls {
		if !c.sync {
			s.add(c.gap, c.dur, c.file)
			continue
		}
		fl := predSync
		if c.file {
			fl |= predFile
		}
		if c.fileDom {
			fl |= predFileDomain
		}
		recs = append(recs, s.end(c.gap, c.dur, c.comm, fl))
	}
	return append(recs, s.end(0, 0, 0, 0))
}

func span(t *testing.T, spans []predSpan) int64 {
	t.Helper()
	all := spanOf(spans)
	if !all.ok {
		t.Fatal("no file call in the rebuilt timelines")
	}
	return all.last - all.first
}

// TestRebuildBarrier: a barrier ends for both ranks when the later one
// arrives, plus its own cost (the shorter of the two measured times: the
// later rank's, which did not wait); the calls before the first file call
// are outside the span.
func TestRebuildBarrier(t *testing.T) {
	ranks := []uint32{0, 1}
	recs := [][]predRec{
		timeline(
			call{gap: 0, dur: 50},                                        // a barrier skipped, say: no file call
			call{gap: 10, dur: 100, file: true},                          // 60–160
			call{gap: 1000, dur: 900, sync: true, comm: trace.CommWorld}, // arrives 1160, waited 900 in the replay
			call{gap: 5, dur: 20, file: true},                            // after the barrier
		),
		timeline(
			call{gap: 0, dur: 2000, file: true},                       // 0–2000
			call{gap: 100, dur: 7, sync: true, comm: trace.CommWorld}, // arrives 2100, last
			call{gap: 0, dur: 30, file: true},                         // after
		),
	}
	spans := rebuild(ranks, nil, recs)
	// The barrier ends at 2100 + 7 for both; rank 0's last call then
	// ends at 2107+5+20 = 2132, rank 1's at 2137; the first file call is
	// rank 1's at 0.
	if spans[0].first != 60 || spans[0].last != 2132 || spans[1].first != 0 || spans[1].last != 2137 {
		t.Fatalf("spans %+v", spans)
	}
	if got := span(t, spans); got != 2137 {
		t.Errorf("span %d, want 2137", got)
	}
}

// TestRebuildGroups: a collective waits for the members of its
// communicator only; a rank outside it, and CommSelf, go on.
func TestRebuildGroups(t *testing.T) {
	ranks := []uint32{0, 1, 2}
	groups := map[uint32][]uint32{7: {0, 1}}
	recs := [][]predRec{
		timeline(call{gap: 0, dur: 10, file: true}, call{gap: 0, dur: 1, sync: true, comm: 7}, call{dur: 10, file: true}),
		timeline(call{gap: 500, dur: 10, file: true}, call{gap: 0, dur: 1, sync: true, comm: 7}, call{dur: 10, file: true}),
		timeline(call{gap: 0, dur: 10, file: true}, call{gap: 0, dur: 1, sync: true, comm: 7}, call{dur: 3, sync: true, comm: trace.CommSelf}, call{dur: 10, file: true}),
	}
	spans := rebuild(ranks, groups, recs)
	// Ranks 0 and 1 leave the collective at 510 + 1; rank 2, outside
	// communicator 7, does not wait.
	if spans[0].last != 521 || spans[1].last != 521 || spans[2].last != 24 {
		t.Fatalf("spans %+v", spans)
	}
}

// TestRebuildUnmatched: a collective a member never reaches (its trace
// ended) is released when every other rank waits, as the replay's
// communication layer does; the ranks go on from the latest arrival.
func TestRebuildUnmatched(t *testing.T) {
	ranks := []uint32{0, 1, 2}
	recs := [][]predRec{
		timeline(call{gap: 0, dur: 10, file: true}, call{gap: 0, dur: 4, sync: true, comm: trace.CommWorld}, call{dur: 10, file: true}),
		timeline(call{gap: 0, dur: 90, file: true}, call{gap: 0, dur: 2, sync: true, comm: trace.CommWorld}, call{dur: 10, file: true}),
		timeline(call{gap: 0, dur: 5, file: true}),
	}
	spans := rebuild(ranks, nil, recs)
	if spans[0].last != 102 || spans[1].last != 102 || spans[2].last != 5 {
		t.Fatalf("spans %+v", spans)
	}
}

// TestRebuildFileCollective: a collective MPI-IO call is a file call
// that synchronises its members apart from the communication
// collectives of the same communicator.
func TestRebuildFileCollective(t *testing.T) {
	ranks := []uint32{0, 1}
	recs := [][]predRec{
		timeline(call{gap: 100, dur: 50, file: true, sync: true, comm: 0, fileDom: true}),
		timeline(call{gap: 300, dur: 20, file: true, sync: true, comm: 0, fileDom: true}),
	}
	spans := rebuild(ranks, nil, recs)
	// Both leave at 300 + 20; rank 0's call spans its wait, from 100.
	if spans[0].first != 100 || spans[0].last != 320 || spans[1].first != 300 || spans[1].last != 320 {
		t.Fatalf("spans %+v", spans)
	}
}

// TestStretchMemory: a rank's timeline keeps one record per collective,
// however many calls lie between them.
func TestStretchMemory(t *testing.T) {
	var calls []call
	for i := 0; i < 10000; i++ {
		calls = append(calls, call{gap: 1, dur: 2, file: true})
		if i%1000 == 999 {
			calls = append(calls, call{dur: 1, sync: true})
		}
	}
	recs := timeline(calls...)
	if len(recs) != 11 {
		t.Fatalf("%d records for 10 collectives", len(recs))
	}
	spans := rebuild([]uint32{0}, nil, [][]predRec{recs})
	// One rank: its collectives wait for no one. The first file call
	// starts at 1 (its think time), the last ends at 10,000 × 3 + 9 × 1
	// (the tenth collective comes after it).
	if got := span(t, spans); got != 30008 {
		t.Errorf("span %d, want 30008", got)
	}
}

// TestSysTimeTotal: a call's looks at its name count as the slower of
// them and the call (the second resolution finds the first's work
// cached), its directories' resolution adds, and a nil SysTime counts
// nothing.
func TestSysTimeTotal(t *testing.T) {
	for _, c := range []struct{ ticks, look, dirs, want int64 }{
		{ticks: 10, want: 10},
		{ticks: 10, look: 4, want: 10},          // tmpfs: the look cheap, the open dear
		{ticks: 10, look: 5000, want: 5000},     // a cold disk: the look read the inode
		{ticks: 10, look: 4, dirs: 7, want: 17}, // a directory resolved too
	} {
		s := SysTime{ticks: c.ticks, look: c.look, dirs: c.dirs}
		if got := s.total(); got != c.want {
			t.Errorf("%+v: total %d, want %d", c, got, c.want)
		}
	}
	var s *SysTime
	s.Stop(s.Start())
	s.StopLook(s.Start())
	s.StopDir(s.Start())
	var z SysTime
	t0 := z.Start()
	z.StopLook(t0)
	z.StopDir(t0)
	if z.calls != 0 || z.ticks != 0 {
		t.Errorf("looks and directories counted as calls: %+v", z)
	}
	z.Stop(z.Start())
	if z.calls != 1 {
		t.Errorf("one call stopped, %d counted", z.calls)
	}
}

// TestRebuildOwnTimes: a collective MPI-IO call whose members' times
// are all their own work (predOwn: the system calls they made for it,
// no waiting in them) holds no member for another: each ends its own
// time after it arrived. Where some member's time is not its own work
// (a member that made no system call keeps its captured time, waits
// included), the call synchronises: everyone leaves from the last
// arrival, a member of its own work after that work, the others after
// the least of their times.
func TestRebuildOwnTimes(t *testing.T) {
	coll := func(gap, dur int64, own bool) []predRec {
		fl := predSync | predFile | predFileDomain
		if own {
			fl |= predOwn
		}
		s := newStretch()
		return []predRec{s.end(gap, dur, 0, fl), s.end(0, 0, 0, 0)}
	}
	spans := rebuild([]uint32{0, 1}, nil, [][]predRec{coll(100, 50, true), coll(300, 900, true)})
	if spans[0].first != 100 || spans[0].last != 150 || spans[1].first != 300 || spans[1].last != 1200 {
		t.Fatalf("every member's own work: spans %+v", spans)
	}
	spans = rebuild([]uint32{0, 1, 2}, nil, [][]predRec{coll(100, 50, true), coll(300, 900, false), coll(200, 20, false)})
	if spans[0].last != 350 || spans[1].last != 320 || spans[2].last != 320 || spans[0].first != 100 {
		t.Fatalf("one member's own work: spans %+v", spans)
	}
}
