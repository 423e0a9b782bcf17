package replay

import (
	"cmp"
	"maps"
	"slices"

	"github.com/iotrace/iotrace/internal/sat"
	"github.com/iotrace/iotrace/trace"
)

// The prediction of ioreplay --predict: the application's timeline
// rebuilt from two measurements, each taken where it is true.
//
// A replay on file system B measures how long each call takes there, but
// the wall-clock span of the replay also holds the engine's own work
// between calls (following descriptors, mapping paths, recording) and
// the wake-ups of ranks that are goroutines rather than processes. On a
// run of a few milliseconds that is most of the span (mdtest on tmpfs:
// 2.3 ms for the application, 5 ms for its replay), and the prediction
// was that much too long. So a predicting replay keeps, for each call of
// each rank, the think time before it as the capture recorded it and the
// time the call took in the replay — the time of the system calls that
// did the program's work, where the executor times them (SysTime), else
// from just before the backend was asked to make it to its return (the
// runner's predict) — and after the replay the ranks' timelines are
// rebuilt from these alone: each call starts its think time after the
// previous one ended and takes its replayed time; a collective ends for
// every member when the last one has arrived plus the collective's own
// cost (the shortest of its members' times: the last to arrive did not
// wait; for the communication layer's, the captured ones: the MPI
// library's cost) — except a collective MPI-IO call whose every member's
// time is its own work (its system calls, predOwn), which holds no member
// for another (each ends its own time after it arrived); where only some
// members' are, those leave their own time after the last arrival. A
// call the replay skipped (a write to a terminal, a call on a pipe) keeps
// its captured duration: the application spent it. The predicted I/O time is the span of the rebuilt timelines from the start
// of the first file call (POSIX, metadata, MPI-IO) of any rank to the end
// of the last, as the capture's is measured.
//
// Point-to-point messages do not synchronise the rebuilt timelines: a
// receive keeps the time it took in the replay, its wait for the sender
// included.

// predRec is a stretch of a rank's rebuilt timeline: the calls between
// two collectives, summed, then the collective that ends it (the last
// stretch of a rank ends with none). So the timeline takes memory in
// proportion to the rank's collectives, not its calls.
type predRec struct {
	pre         int64 // the calls before the collective, think times included, ns
	first, last int64 // from the stretch's start to its first file call's start and its last one's end; first -1: none
	gap         int64 // think time before the collective, captured
	dur         int64 // the collective's time in the replay
	comm        uint32
	fl          uint8 // the collective's: predSync (none at the end of a rank), predFile, predFileDomain
}

// predStretch accumulates the calls of a stretch as they are replayed.
type predStretch struct{ pre, first, last int64 }

func newStretch() predStretch { return predStretch{first: -1} }

// add adds a call that synchronises with no other rank.
func (s *predStretch) add(gap, dur int64, file bool) {
	start := sat.Add(s.pre, gap)
	s.pre = sat.Add(start, max(dur, 0))
	if file {
		if s.first < 0 {
			s.first = start
		}
		s.last = s.pre
	}
}

// end ends the stretch with a collective (fl 0: the rank's end).
func (s *predStretch) end(gap, dur int64, comm uint32, fl uint8) predRec {
	r := predRec{pre: s.pre, first: s.first, last: s.last, gap: gap, dur: max(dur, 0), comm: comm, fl: fl}
	*s = newStretch()
	return r
}

const (
	predFile       uint8 = 1 << iota // a file call: opens or extends the span
	predSync                         // a collective: ends when every member has arrived
	predFileDomain                   // a collective MPI-IO call (its own matching, as comm.DomainFile)
	predOwn                          // a collective whose dur is the member's own work: it ends at the last arrival plus it
)

// predSpan is a rank's share of the prediction: the start of its first
// file call and the end of its last, ns from the ranks' common start on
// the rebuilt timeline; ok false if it made none.
type predSpan struct {
	first, last int64
	ok          bool
}

// rebuild rebuilds the timelines of ranks (recs[i] the calls of
// ranks[i]: its stretches, in order) and returns each rank's span. groups gives the
// members of communicators other than CommWorld and CommSelf, as
// Plan.Groups; a communicator it does not name has every rank. A
// collective that some member never reaches (the replay found it
// unmatched) ends when the members that reached it have all arrived, as
// the replay's communication layer releases it.
func rebuild(ranks []uint32, groups map[uint32][]uint32, recs [][]predRec) []predSpan {
	n := len(ranks)
	index := make(map[uint32]int, n)
	for i, r := range ranks {
		index[r] = i
	}
	members := map[uint32][]int{} // communicator → member indexes, sorted
	// size returns how many members a collective of rank i on comm
	// waits for: 1 where it waits for none (CommSelf, a communicator of
	// one, a rank outside it), as the replay's communication layer.
	size := func(comm uint32, i int) int {
		if comm == trace.CommSelf {
			return 1
		}
		m, ok := members[comm]
		if !ok {
			if g, named := groups[comm]; named {
				for _, r := range g {
					if j, ok := index[r]; ok {
						m = append(m, j)
					}
				}
				slices.Sort(m)
				m = slices.Compact(m)
			} else {
				m = make([]int, n)
				for j := range m {
					m[j] = j
				}
			}
			members[comm] = m
		}
		if _, in := slices.BinarySearch(m, i); !in {
			return 1
		}
		return len(m)
	}
	type key struct {
		file bool
		comm uint32
	}
	type inst struct {
		waiting []int // ranks arrived, in order
		arrive  int64 // latest arrival
		cost    int64 // shortest replayed time of the members whose time is not their own work (-1: none yet)
		own     int   // members whose time is their own work (predOwn)
	}
	open := map[key]*inst{}
	pos := make([]int, n)
	now := make([]int64, n)
	spans := make([]predSpan, n)
	file := func(i int, start, end int64) {
		s := &spans[i]
		if !s.ok {
			s.first, s.last, s.ok = start, end, true
			return
		}
		s.first, s.last = min(s.first, start), max(s.last, end)
	}
	// finish ends a collective for the ranks waiting in it (now holds
	// each one's arrival).
	finish := func(k key, in *inst, run *[]int) {
		delete(open, k)
		for _, j := range in.waiting {
			r := recs[j][pos[j]]
			var end int64
			switch {
			case in.own == len(in.waiting):
				// Every member's time is its own work: none waited
				// for another.
				end = sat.Add(now[j], r.dur)
			case r.fl&predOwn != 0:
				end = sat.Add(in.arrive, r.dur)
			default:
				end = sat.Add(in.arrive, max(in.cost, 0))
			}
			if r.fl&predFile != 0 {
				file(j, now[j], end)
			}
			now[j] = end
			pos[j]++
			*run = append(*run, j)
		}
	}
	run := make([]int, 0, n)
	for i := n - 1; i >= 0; i-- {
		run = append(run, i)
	}
	for {
		for len(run) > 0 {
			i := run[len(run)-1]
			run = run[:len(run)-1]
			for pos[i] < len(recs[i]) {
				r := recs[i][pos[i]]
				if r.first >= 0 {
					file(i, sat.Add(now[i], r.first), sat.Add(now[i], r.last))
				}
				now[i] = sat.Add(now[i], r.pre)
				start := sat.Add(now[i], r.gap)
				m := 1
				if r.fl&predSync != 0 {
					m = size(r.comm, i)
				}
				if m > 1 {
					// Arrived: wait for the others (now holds the
					// arrival until the collective ends).
					now[i] = start
					k := key{r.fl&predFileDomain != 0, r.comm}
					in := open[k]
					if in == nil {
						in = &inst{cost: -1}
						open[k] = in
					}
					in.waiting = append(in.waiting, i)
					in.arrive = max(in.arrive, start)
					switch {
					case r.fl&predOwn != 0:
						in.own++
					case in.cost < 0 || r.dur < in.cost:
						in.cost = r.dur
					}
					if len(in.waiting) >= m {
						finish(k, in, &run)
					}
					goto next
				}
				end := sat.Add(start, r.dur)
				if r.fl&predFile != 0 {
					file(i, start, end)
				}
				now[i] = end
				pos[i]++
			}
		next:
		}
		if len(open) == 0 {
			break
		}
		// Every rank left waits in a collective no running rank will
		// complete: release them, the earliest arrival first.
		k := slices.MinFunc(slices.Collect(maps.Keys(open)), func(a, b key) int {
			return cmp.Or(cmp.Compare(open[a].arrive, open[b].arrive), cmp.Compare(a.comm, b.comm), cmp.Compare(b2i(a.file), b2i(b.file)))
		})
		finish(k, open[k], &run)
	}
	return spans
}

// spanOf is the span of the application's file calls over ranks' spans.
func spanOf(spans []predSpan) predSpan {
	var all predSpan
	for _, s := range spans {
		switch {
		case !s.ok:
		case !all.ok:
			all = s
		default:
			all.first, all.last = min(all.first, s.first), max(all.last, s.last)
		}
	}
	return all
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
