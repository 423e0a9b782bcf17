package report

import "github.com/iotrace/iotrace/trace"

// Activity is what the activity series and the timeline tell calls
// apart by.
type Activity int

const (
	ActRead       Activity = iota // data calls that read (POSIX and MPI-IO)
	ActWrite                      // data calls that write
	ActOther                      // other I/O: opens, closes, seeks, syncs, metadata, MPI-IO calls without data
	ActComm                       // communication: barriers, collectives, messages
	NumActivities                 // a power of two: add masks an activity with NumActivities-1
)

var activityNames = [NumActivities]string{"read", "write", "other I/O", "communication"}

func (a Activity) String() string {
	if a >= 0 && a < NumActivities {
		return activityNames[a]
	}
	return "none"
}

// activityOf is the activity of calls of info, or -1 for events that are
// not calls (markers) or are calls of ops this build does not know.
func activityOf(info trace.OpInfo) Activity {
	switch {
	case info.Class == trace.ClassMarker || info.Class == trace.ClassUnknown:
		return -1
	case info.Dir == trace.DirRead:
		return ActRead
	case info.Dir == trace.DirWrite:
		return ActWrite
	case info.Class == trace.ClassComm:
		return ActComm
	}
	return ActOther
}

// MaxBins bounds the bins of a Series.
const MaxBins = 256

// MaxTimelineRows bounds Stats.Timeline: a trace with more ranks gets one
// row per group of consecutive ranks.
const MaxTimelineRows = 128

// Bin is one time bin of a Series. A call that spans several bins counts
// in each for the part of its duration inside it, and its bytes are
// spread over its duration the same way (a call of no duration counts in
// the bin of its start).
type Bin struct {
	Busy    [NumActivities]float64 // ns spent in calls of each activity, summed over ranks
	Read    float64                // bytes read
	Written float64                // bytes written
}

func (b *Bin) add(o *Bin) {
	for i := range b.Busy {
		b.Busy[i] += o.Busy[i]
	}
	b.Read += o.Read
	b.Written += o.Written
}

// Series is activity over time in at most MaxBins bins of equal width:
// Bins[i] covers [Start + i·Width, Start + (i+1)·Width) ns from the trace
// epoch. It is built while the events stream by, in memory that does not
// grow with their number: the bins start narrow and double their width
// (merging pairs) whenever a call falls outside the span they cover. Bin
// edges are multiples of the width, a power of two of ns, so series of
// different ranks merge exactly.
type Series struct {
	Start int64 // ns from the trace epoch where Bins[0] begins
	Width int64 // ns per bin, a power of two
	Bins  []Bin
	shift uint  // Width = 1 << shift
	first int64 // Start >> shift: index of Bins[0] on the time axis
}

// End is where the last bin ends.
func (s *Series) End() int64 { return s.Start + int64(len(s.Bins))*s.Width }

// Event times are clamped to ±2^61 ns (±73 years), which keeps every bin
// edge and width far from overflowing.
const seriesLimit = int64(1) << 61

func clampTime(t int64) int64 { return min(max(t, -seriesLimit), seriesLimit) }

// add counts a call of activity act from start to end (ns) that read rd
// and wrote wr bytes. The common case, a call inside one bin, is small
// enough to be inlined; addSlow does the rest.
func (s *Series) add(start, end int64, act Activity, rd, wr int64) {
	i := uint64(start-s.Start) >> s.shift
	if end > start && start >= s.Start && i == uint64(end-1-s.Start)>>s.shift && i < uint64(len(s.Bins)) {
		b := &s.Bins[i]
		b.Busy[act&(NumActivities-1)] += float64(end - start)
		b.Read += float64(rd)
		b.Written += float64(wr)
		return
	}
	s.addSlow(start, end, act, rd, wr)
}

func (s *Series) addSlow(start, end int64, act Activity, rd, wr int64) {
	start, end = clampTime(start), clampTime(end)
	end = max(end, start)
	last := end
	if end > start {
		last = end - 1 // the call covers [start, end)
	}
	s.cover(start, last)
	i0, i1 := start>>s.shift-s.first, last>>s.shift-s.first
	if i0 == i1 {
		b := &s.Bins[i0]
		b.Busy[act] += float64(end - start)
		b.Read += float64(rd)
		b.Written += float64(wr)
		return
	}
	d := float64(end - start)
	for i := i0; i <= i1; i++ {
		lo := (s.first + i) << s.shift
		part := float64(min(lo+s.Width, end) - max(lo, start))
		b := &s.Bins[i]
		b.Busy[act] += part
		b.Read += part / d * float64(rd)
		b.Written += part / d * float64(wr)
	}
}

// cover makes the bins span the ns lo to hi (inclusive, lo ≤ hi, both
// within ±seriesLimit), widening them as needed.
func (s *Series) cover(lo, hi int64) {
	if len(s.Bins) == 0 {
		s.shift = 0
		for hi>>s.shift-lo>>s.shift >= MaxBins {
			s.shift++
		}
		s.first = lo >> s.shift
		s.Bins = make([]Bin, hi>>s.shift-s.first+1, MaxBins)
		s.sync()
		return
	}
	if lo>>s.shift >= s.first && hi>>s.shift < s.first+int64(len(s.Bins)) {
		return // the common case: inside
	}
	for min(s.first, lo>>s.shift)+MaxBins <= max(s.first+int64(len(s.Bins))-1, hi>>s.shift) {
		s.coarsen()
	}
	if a := lo >> s.shift; a < s.first {
		bins := make([]Bin, s.first-a+int64(len(s.Bins)), MaxBins)
		copy(bins[s.first-a:], s.Bins)
		s.Bins, s.first = bins, a
	}
	if b := hi >> s.shift; b >= s.first+int64(len(s.Bins)) {
		s.Bins = append(s.Bins, make([]Bin, b-s.first-int64(len(s.Bins))+1)...)
	}
	s.sync()
}

// coarsen doubles the width of the bins, merging them by pairs.
func (s *Series) coarsen() {
	nf := s.first >> 1
	n := (s.first+int64(len(s.Bins))-1)>>1 - nf + 1
	bins := make([]Bin, n, MaxBins)
	for i := range s.Bins {
		bins[(s.first+int64(i))>>1-nf].add(&s.Bins[i])
	}
	s.Bins, s.first = bins, nf
	s.shift++
	s.sync()
}

func (s *Series) sync() {
	s.Width = int64(1) << s.shift
	s.Start = s.first << s.shift
}

// merge adds the bins of o to s. It may widen the bins of o.
func (s *Series) merge(o *Series) {
	if len(o.Bins) == 0 {
		return
	}
	if len(s.Bins) == 0 {
		*s = Series{Bins: append(make([]Bin, 0, MaxBins), o.Bins...), shift: o.shift, first: o.first}
		s.sync()
		return
	}
	for s.shift < o.shift {
		s.coarsen()
	}
	s.cover(o.Start, o.End()-1)
	for o.shift < s.shift {
		o.coarsen()
	}
	off := o.first - s.first
	for i := range o.Bins {
		s.Bins[off+int64(i)].add(&o.Bins[i])
	}
}

// align puts s on the grid of g, which must span it with bins at least as
// wide (g is the merge of s and others).
func (s *Series) align(g *Series) {
	for s.shift < g.shift && len(s.Bins) > 0 {
		s.coarsen()
	}
	bins := make([]Bin, len(g.Bins))
	if len(s.Bins) > 0 {
		copy(bins[s.first-g.first:], s.Bins)
	}
	s.Bins, s.shift, s.first = bins, g.shift, g.first
	s.sync()
}

// reset empties s for reuse.
func (s *Series) reset() { *s = Series{} }

// TimelineRow is the activity of one rank, or of a group of consecutive
// ranks when the trace has more than MaxTimelineRows ranks. Its bins sum
// over the ranks of the row.
type TimelineRow struct {
	First, Last uint32 // first and last rank of the row (equal for one rank)
	Ranks       int    // ranks in the row
	Series
}
