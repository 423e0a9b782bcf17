package report

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

type span struct {
	start, end int64
	act        Activity
	rd, wr     int64
}

// bruteBins spreads the calls over the bins of grid by hand.
func bruteBins(grid *Series, calls []span) []Bin {
	bins := make([]Bin, len(grid.Bins))
	for _, c := range calls {
		if c.end == c.start {
			i := (c.start - grid.Start) / grid.Width
			bins[i].Read += float64(c.rd)
			bins[i].Written += float64(c.wr)
			continue
		}
		for i := range bins {
			lo := grid.Start + int64(i)*grid.Width
			part := min(lo+grid.Width, c.end) - max(lo, c.start)
			if part <= 0 {
				continue
			}
			f := float64(part) / float64(c.end-c.start)
			bins[i].Busy[c.act] += float64(part)
			bins[i].Read += f * float64(c.rd)
			bins[i].Written += f * float64(c.wr)
		}
	}
	return bins
}

func sameBins(t *testing.T, got, want []Bin) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d bins, want %d", len(got), len(want))
	}
	close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }
	for i := range got {
		g, w := got[i], want[i]
		ok := close(g.Read, w.Read) && close(g.Written, w.Written)
		for a := range g.Busy {
			ok = ok && close(g.Busy[a], w.Busy[a])
		}
		if !ok {
			t.Fatalf("bin %d: %+v, want %+v", i, g, w)
		}
	}
}

func randomSpans(r *rand.Rand, n int, origin, spread int64) []span {
	calls := make([]span, n)
	for i := range calls {
		start := origin + r.Int64N(spread)
		dur := r.Int64N(spread/20 + 1)
		if r.IntN(10) == 0 {
			dur = 0
		}
		calls[i] = span{start, start + dur, Activity(r.IntN(int(NumActivities))), r.Int64N(1 << 20), r.Int64N(1 << 20)}
	}
	return calls
}

// TestSeries checks that a series built by streaming calls in any order
// holds what spreading them by hand over its final bins gives, within
// MaxBins bins that span them.
func TestSeries(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		origin := r.Int64N(1<<40) - 1<<39
		spread := int64(1) << (4 + r.IntN(36))
		calls := randomSpans(r, 1+r.IntN(300), origin, spread)
		var s Series
		for _, c := range calls {
			s.add(c.start, c.end, c.act, c.rd, c.wr)
		}
		if len(s.Bins) == 0 || len(s.Bins) > MaxBins || s.Width&(s.Width-1) != 0 || s.Start%s.Width != 0 {
			t.Fatalf("trial %d: %d bins of %d ns from %d", trial, len(s.Bins), s.Width, s.Start)
		}
		lo, hi := calls[0].start, calls[0].end
		for _, c := range calls {
			lo, hi = min(lo, c.start), max(hi, c.end)
		}
		if s.Start > lo || s.End() < hi {
			t.Fatalf("trial %d: bins [%d, %d) do not span the calls [%d, %d]", trial, s.Start, s.End(), lo, hi)
		}
		// Not wider than needed: bins of half the width would not hold
		// the span (from the first start to the last ns in a call).
		last := lo
		for _, c := range calls {
			last = max(last, c.start, c.end-1)
		}
		if half := s.shift - 1; s.shift > 0 && last>>half-lo>>half < MaxBins {
			t.Fatalf("trial %d: width %d for a span of %d ns", trial, s.Width, hi-lo)
		}
		sameBins(t, s.Bins, bruteBins(&s, calls))
	}
}

// TestSeriesMerge checks that merging series of parts of the calls, then
// aligning the parts on the merged grid, gives the series of all calls.
func TestSeriesMerge(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 100 {
		var parts [3]Series
		var all []span
		for i := range parts {
			// Parts far apart and of different scales.
			calls := randomSpans(r, 1+r.IntN(100), r.Int64N(1<<30), int64(1)<<(8+r.IntN(20)))
			for _, c := range calls {
				parts[i].add(c.start, c.end, c.act, c.rd, c.wr)
			}
			all = append(all, calls...)
		}
		var m Series
		for i := range parts {
			m.merge(&parts[i])
		}
		if len(m.Bins) > MaxBins {
			t.Fatalf("%d bins", len(m.Bins))
		}
		sameBins(t, m.Bins, bruteBins(&m, all))
		for i := range parts {
			parts[i].align(&m)
			if parts[i].Start != m.Start || parts[i].Width != m.Width || len(parts[i].Bins) != len(m.Bins) {
				t.Fatalf("part %d not on the grid", i)
			}
		}
	}
}

// TestSeriesExtremes feeds times at the ends of int64 and calls of every
// length: no panic, bounded bins, nothing lost.
func TestSeriesExtremes(t *testing.T) {
	var s Series
	s.add(math.MaxInt64-5, math.MaxInt64, ActRead, 1, 0)
	s.add(math.MinInt64, math.MinInt64+1, ActWrite, 0, 1)
	s.add(0, 0, ActOther, 7, 7)
	s.add(-1, math.MaxInt64, ActComm, 0, 0)
	if len(s.Bins) > MaxBins {
		t.Fatalf("%d bins", len(s.Bins))
	}
	var rd, wr float64
	for _, b := range s.Bins {
		rd += b.Read
		wr += b.Written
	}
	if rd != 8 || wr != 8 {
		t.Fatalf("read %v, written %v, want 8 and 8", rd, wr)
	}
}

// TestTimeline checks the activity series and timeline rows Compute
// gathers: one row per rank, on one grid, each rank's busy time that of
// its calls, and rows of groups of ranks beyond MaxTimelineRows.
func TestTimeline(t *testing.T) {
	s := compute(t, handTrace(), Options{})
	if len(s.Timeline) != 4 {
		t.Fatalf("%d timeline rows, want 4", len(s.Timeline))
	}
	if s.Activity.Start > s.Start || s.Activity.End() < s.End {
		t.Fatalf("activity [%d, %d) does not span the trace [%d, %d]", s.Activity.Start, s.Activity.End(), s.Start, s.End)
	}
	var total Bin
	for i, row := range s.Timeline {
		if row.First != uint32(i) || row.Last != uint32(i) || row.Ranks != 1 {
			t.Fatalf("row %d: %+v", i, row)
		}
		if row.Start != s.Activity.Start || row.Width != s.Activity.Width || len(row.Bins) != len(s.Activity.Bins) {
			t.Fatalf("row %d is not on the grid of the activity", i)
		}
		var busy float64
		for _, b := range row.Bins {
			for _, v := range b.Busy {
				busy += v
			}
			total.add(&b)
		}
		if want := float64(sumTotal(s.ByRank[i].Ops)); math.Abs(busy-want) > 1e-6*want {
			t.Fatalf("rank %d busy %v ns, its calls took %v", i, busy, want)
		}
	}
	var act Bin
	for _, b := range s.Activity.Bins {
		act.add(&b)
	}
	read, written := dataBytes(s.Ops, trace.DirRead), dataBytes(s.Ops, trace.DirWrite)
	if !near(act.Read, float64(read)) || !near(act.Written, float64(written)) {
		t.Fatalf("activity %+v: read %d, written %d", act, read, written)
	}
	sameBins(t, []Bin{act}, []Bin{total}) // the activity is the sum of the rows
	// Rank 2's barrier: 9 ms of communication, nothing else.
	var comm float64
	for _, b := range s.Timeline[2].Bins {
		comm += b.Busy[ActComm]
	}
	if comm != 9e6 {
		t.Fatalf("rank 2 communication %v ns, want 9e6", comm)
	}

	// More ranks than rows: groups of consecutive ranks.
	m := trace.NewMemTrace()
	ranks := 2*MaxTimelineRows + 5
	for r := range ranks {
		m.Add(trace.Event{Rank: uint32(r), Op: trace.OpWrite, Size: 10, Ret: 10, Start: int64(r) * 1000, Dur: 500})
	}
	s = compute(t, m, Options{})
	if len(s.Timeline) > MaxTimelineRows {
		t.Fatalf("%d rows for %d ranks", len(s.Timeline), ranks)
	}
	n := 0
	for i, row := range s.Timeline {
		if int(row.First) != n || row.Ranks != int(row.Last-row.First)+1 || (i < len(s.Timeline)-1 && row.Ranks != 3) {
			t.Fatalf("row %d: ranks %d–%d (%d)", i, row.First, row.Last, row.Ranks)
		}
		n += row.Ranks
	}
	if n != ranks {
		t.Fatalf("rows hold %d ranks of %d", n, ranks)
	}
}
