// Package report computes statistics over any trace — a captured run, a
// replay, an expanded script — and renders them as tables: per operation
// (in the manner of Table 1 of Thakur et al.), size distributions (their
// Table 2), per rank with stragglers, per file and per labelled region, in
// text, CSV, Markdown and JSON, and all of them with charts as one HTML
// page. Compare puts two traces side by side.
//
// Every table is built by one mechanism: a set of op rows (count, time,
// bytes, errors, and where wanted latency and sizes) kept for a group of
// events — the whole trace, one rank, one file, one region. The views
// differ only in how they print a group's rows.
package report

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"sync"

	"github.com/iotrace/iotrace/internal/sat"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/hist"
	"github.com/iotrace/iotrace/trace/state"
)

// Options choose what Compute gathers.
type Options struct {
	// Detail splits the op families (read = read, pread, readv, preadv…)
	// into their calls: rows are keyed by Op.Info().Name instead of
	// Op.Info().Family.
	Detail bool
	// Access computes the access patterns (Stats.Access, AccessByRank:
	// the file and access views, the HTML report). They cost a tracker per
	// file and rank and the byte ranges of every file (for the read/write
	// overlap), so they are counted only when asked for.
	Access bool
	// BlockSize is the file system block size the access patterns count
	// unaligned accesses against; 0 is BlockSize (4 KiB).
	BlockSize int64
}

// For returns the options with what a view of Render and an HTML page
// need: the access patterns for the file and access views and the page.
func (o Options) For(view string, html bool) Options {
	o.Access = o.Access || view == "file" || view == "access" || html
	return o
}

// Stats is what Compute found.
type Stats struct {
	Ranks      int   // ranks with events: the divisor of every per-rank average
	Events     int64 // events, markers included
	Start      int64 // earliest start, ns from the trace epoch
	End        int64 // latest end (start + duration)
	Ops        []*OpRow
	Total      *OpRow // every row of Ops summed (see Sum)
	Sizes      []SizeRow
	ByRank     []*RankRow
	Stragglers []uint32 // ranks whose IOTime is > 1.5 × the median and > median + 3 × MAD (≥ 3 ranks)
	Files      []*FileRow
	Regions    []*RegionRow
	Detail     bool // computed with Options.Detail
	// Times says how the trace's times were taken when that matters to
	// reading them: corrected for the recorder's own cost, or not
	// (trace.Meta.TimesNote); "" otherwise.
	Times string
	// Activity is the whole trace's calls over time: time in each
	// activity and bytes moved, summed over ranks, in at most MaxBins bins.
	Activity Series
	// Timeline is the same per rank (one row per rank, or per group of
	// consecutive ranks beyond MaxTimelineRows ranks), every row on the
	// bins of Activity.
	Timeline []*TimelineRow
	// Replay is how the replay went, when the trace is a replay's own
	// (trace.Replayed); nil otherwise.
	Replay *Replay
	// Access is the access pattern of every file with data calls, over
	// its ranks (patterns.go); AccessByRank the same per file and rank.
	Access        []*AccessRow
	AccessByRank  []*AccessRow
	AccessCounted bool // computed with Options.Access
	// What Events holds besides the calls TOTAL counts: markers (regions,
	// marks), process events (fork, exec, exit, inherit), and the POSIX
	// calls made inside MPI-IO calls (rows apart, left out of TOTAL).
	Markers, ProcEvents, InMPIIO int64
}

// Duration is the wall time the trace spans, in seconds: latest end −
// earliest start.
func (s *Stats) Duration() float64 { return float64(s.RunTime()) / 1e9 }

// RunTime is End − Start, ns (the largest int64 when a trace's times span
// more).
func (s *Stats) RunTime() int64 { return sat.Sub(s.End, s.Start) }

// OpRow is one row of an operation table: the calls of one family (or,
// with Options.Detail, one call) within a group of events.
type OpRow struct {
	Op     string      // family ("read"), call ("pread") with Detail, "TOTAL" for a sum
	Family string      // family of the row's calls
	Class  trace.Class // class of the row's calls
	Dir    trace.Dir   // data direction of the row's calls
	Count  int64       // calls, over all ranks
	Bytes  int64       // bytes moved (data calls) or sent/received (communication)
	Errors int64       // calls with a negative result (POSIX, metadata and MPI-IO calls)
	Total  int64       // ns spent in the calls, summed over all ranks
	// InMPIIO says the row holds POSIX calls an MPI library made inside
	// MPI-IO calls (trace.InMPIIO): their I/O is already in the MPI-IO
	// rows, so they are shown apart ("write (in MPI-IO)") and left out of
	// every sum (TOTAL, per-rank times, file bytes).
	InMPIIO bool
	// Lat holds the calls' durations: percentiles within 0.4 %, exact
	// minimum and maximum. It is kept for the rows of the whole trace and
	// of regions, not for the rows of a rank or a file (it stays empty).
	Lat   hist.Hist
	ranks int // ranks of the trace: the divisor of AvgPerRank
	sizes *sizeDist
	// ioTotal is, in a TOTAL row (sum), the ns of its I/O calls alone:
	// the time Bandwidth divides its bytes by (communication moves no
	// file data; its time would lower the figure).
	ioTotal int64
	sum     bool
}

// AvgPerRank is the row's time per rank in seconds: the total time over
// the number of ranks of the trace — the papers' "average time per
// process" — whether or not every rank made such calls.
func (r *OpRow) AvgPerRank() float64 {
	if r.ranks == 0 {
		return 0
	}
	return float64(r.Total) / 1e9 / float64(r.ranks)
}

// Bandwidth is the aggregate bandwidth in MB/s (MB = 10^6 bytes): total
// bytes over the average time per rank, as Thakur et al. define it. For
// a TOTAL row (Sum) the time is that of the I/O calls alone: its bytes
// are file data, and the time of communication calls moved none. It is 0
// when the row has no time.
func (r *OpRow) Bandwidth() float64 {
	t := r.AvgPerRank()
	if r.sum && r.ranks > 0 {
		t = float64(r.ioTotal) / 1e9 / float64(r.ranks)
	}
	if t == 0 {
		return 0
	}
	return float64(r.Bytes) / 1e6 / t
}

// Sum returns a TOTAL row over rows: counts, times, errors and latencies
// of all of them; bytes of the data rows only (communication bytes are a
// different quantity and are left out), and its bandwidth over the time
// of the I/O calls alone.
func Sum(rows []*OpRow) *OpRow {
	t := &OpRow{Op: "TOTAL", Family: "TOTAL", sum: true}
	for _, r := range rows {
		if r.InMPIIO {
			continue
		}
		t.Count += r.Count
		if r.Class != trace.ClassComm {
			t.Bytes = sat.Add(t.Bytes, r.Bytes)
			t.ioTotal = sat.Add(t.ioTotal, r.Total)
		}
		t.Errors += r.Errors
		t.Total = sat.Add(t.Total, r.Total)
		t.ranks = r.ranks
		t.Lat.Merge(&r.Lat)
	}
	return t
}

// SizeRow is one row of a size distribution: an exact size (Min == Max),
// or a power-of-two bucket [Min, Max] = [2^k, 2^(k+1)−1].
type SizeRow struct {
	Op       string
	Min, Max int64
	Count    int64
}

// Exact reports whether the row is one size rather than a bucket.
func (r SizeRow) Exact() bool { return r.Min == r.Max }

// MaxExactSizes is how many distinct sizes an op may have for its size
// distribution to list them exactly; beyond it, the distribution is in
// power-of-two buckets.
const MaxExactSizes = 16

// sizeDist counts the requested sizes of one row: exactly while they are
// few, and always in power-of-two buckets.
type sizeDist struct {
	exact []sizeCount // nil once there are more than MaxExactSizes sizes
	many  bool        // there are
	pow2  [64]int64   // bucket 0: size 0; bucket k ≥ 1: [2^(k−1), 2^k)
}

type sizeCount struct{ size, n int64 }

func (d *sizeDist) add(v int64) {
	d.pow2[bits.Len64(uint64(v))]++
	if d.many {
		return
	}
	for i := range d.exact {
		if d.exact[i].size == v {
			d.exact[i].n++
			return
		}
	}
	if len(d.exact) == MaxExactSizes {
		d.exact, d.many = nil, true
		return
	}
	d.exact = append(d.exact, sizeCount{v, 1})
}

func (d *sizeDist) rows(op string) []SizeRow {
	var rows []SizeRow
	if !d.many {
		for _, e := range d.exact {
			rows = append(rows, SizeRow{Op: op, Min: e.size, Max: e.size, Count: e.n})
		}
		slices.SortFunc(rows, func(a, b SizeRow) int { return cmp.Compare(a.Min, b.Min) })
		return rows
	}
	for k, c := range d.pow2 {
		if c == 0 {
			continue
		}
		lo, hi := int64(0), int64(0)
		if k > 0 {
			lo = int64(1) << (k - 1)
			hi = lo + (lo - 1) // 2^k − 1 without overflow at k = 63
		}
		rows = append(rows, SizeRow{Op: op, Min: lo, Max: hi, Count: c})
	}
	return rows
}

// RankRow is one rank's op rows (no latencies) and times.
type RankRow struct {
	Rank       uint32
	Events     int64 // events of the rank, markers included
	Start, End int64 // first start, last end
	Ops        []*OpRow
	Straggler  bool
	set        rowSet
}

// FileRow is one file's op rows (no latencies). Calls name a file by
// their path, or by a descriptor or MPI file handle that an earlier open
// of the same rank returned. Data calls on a descriptor no open of the
// trace explains are gathered under "<stdin>", "<stdout>", "<stderr>"
// (descriptors 0–2) or "<unknown fd>".
type FileRow struct {
	Path  string
	Ranks int // ranks with calls on the file
	Ops   []*OpRow
	set   rowSet
}

// RegionRow is one labelled region. A region runs from a region_begin
// marker to the next region_end of the same label on the same rank (per
// rank, a stack: regions nest). A region_end closes the innermost open
// region of its label and any region opened inside it that is still
// open; a region still open at the end of a rank's stream closes at the
// rank's last end; a region_end with no open region of its label is
// ignored.
//
// A region's op rows hold every call made while it is open, including
// the calls inside regions nested in it (inclusive, like its time). A
// region nested in itself (label L inside L) counts its calls and time
// once.
type RegionRow struct {
	Label string
	Count int64 // occurrences over all ranks
	Ranks int   // ranks with at least one occurrence
	Time  int64 // ns inside the region, summed over occurrences and ranks
	Wall  int64 // ns inside the region on the rank that spent the most there
	Ops   []*OpRow
	set   rowSet
	ranks int // ranks of the trace
}

// AvgPerRank is the region's time per rank, in seconds: Time over the
// ranks of the trace.
func (r *RegionRow) AvgPerRank() float64 {
	if r.ranks == 0 {
		return 0
	}
	return float64(r.Time) / 1e9 / float64(r.ranks)
}

// rowSet is the one grouping mechanism: op rows of one group of events.
type rowSet struct {
	byIdx []*OpRow // by opInfo.idx, for the first maxIdx keys
	byKey map[string]*OpRow
	lat   bool // keep latency histograms
	sizes bool // keep size distributions
}

// maxIdx bounds rowSet.byIdx: a trace with thousands of distinct unknown
// ops finds their rows by key.
const maxIdx = 256

func newRowSet(lat, sizes bool) rowSet {
	return rowSet{byKey: map[string]*OpRow{}, lat: lat, sizes: sizes}
}

// call is one event as the row sets see it.
type call struct {
	info  *opInfo
	dur   int64 // ns, negative durations read as 0
	moved int64 // bytes moved
	size  int64 // requested size, -1 for none
	fail  bool  // counts as an error
}

func (s *rowSet) add(c *call) {
	var r *OpRow
	if c.info.idx < len(s.byIdx) {
		r = s.byIdx[c.info.idx]
	}
	if r == nil {
		r = s.row(c)
	}
	r.Count++
	r.Total = sat.Add(r.Total, c.dur)
	r.Bytes = sat.Add(r.Bytes, c.moved)
	if c.fail {
		r.Errors++
	}
	if s.lat {
		r.Lat.Add(c.dur)
	}
	if s.sizes && c.size >= 0 {
		if r.sizes == nil {
			r.sizes = &sizeDist{}
		}
		r.sizes.add(c.size)
	}
}

func (s *rowSet) row(c *call) *OpRow {
	r := s.byKey[c.info.key]
	if r == nil {
		r = &OpRow{Op: c.info.key, Family: c.info.Family, Class: c.info.Class, Dir: c.info.Dir, InMPIIO: c.info.inMPIIO}
		s.byKey[c.info.key] = r
	}
	// A family may span classes (ftruncate is POSIX, truncate metadata):
	// the row takes the first in table order.
	r.Class = min(r.Class, c.info.Class)
	if i := c.info.idx; i < maxIdx {
		if i >= len(s.byIdx) {
			s.byIdx = append(s.byIdx, make([]*OpRow, i+1-len(s.byIdx))...)
		}
		s.byIdx[i] = r
	}
	return r
}

// sorted returns the rows in table order (see sortOps), each told the
// number of ranks of the trace.
func (s *rowSet) sorted(ranks int) []*OpRow {
	rows := make([]*OpRow, 0, len(s.byKey))
	for _, r := range s.byKey {
		r.ranks = ranks
		rows = append(rows, r)
	}
	sortOps(rows)
	return rows
}

// familyOrder is the order of the POSIX families in tables: that of
// Table 1 of Thakur et al. (open, close, read, write, seek), then sync
// and flush (fflush, which makes nothing durable: no sync).
var familyOrder = map[string]int{"open": 0, "close": 1, "read": 2, "write": 3, "seek": 4, "sync": 5, "flush": 6}

// sortOps orders rows by class — POSIX, metadata, MPI-IO, communication,
// unknown — and within POSIX in familyOrder (other families after it);
// rows of the same place by decreasing total time, then by name.
func sortOps(rows []*OpRow) {
	pos := func(r *OpRow) int {
		if p, ok := familyOrder[r.Family]; ok && r.Class == trace.ClassPOSIX {
			return p
		}
		return len(familyOrder)
	}
	classRank := func(c trace.Class) int {
		if c == trace.ClassUnknown {
			return 99
		}
		return int(c)
	}
	slices.SortFunc(rows, func(a, b *OpRow) int {
		return cmp.Or(
			cmp.Compare(classRank(a.Class), classRank(b.Class)),
			compareBool(a.InMPIIO, b.InMPIIO),
			cmp.Compare(pos(a), pos(b)),
			cmp.Compare(b.Total, a.Total),
			cmp.Compare(a.Op, b.Op))
	})
}

// compareBool orders false before true.
func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// Straggler rule: a rank is a straggler when its I/O time (IOTime) is
// above both stragglerFactor × the median over ranks and the median +
// stragglerMADs × the median absolute deviation. With fewer than 3 ranks
// no rank is flagged.
const (
	stragglerFactor = 1.5
	stragglerMADs   = 3
)

// isStraggler applies the straggler rule to one I/O time against the
// median and median absolute deviation of all ranks' I/O times.
func isStraggler(ioTime, median, mad int64) bool {
	t := float64(ioTime)
	return t > stragglerFactor*float64(median) && t > float64(median)+stragglerMADs*float64(mad)
}

// Compute reads every rank of t once, streaming, and returns its
// statistics. Memory grows with the number of distinct rows, ranks,
// files and region labels, never with the number of events: latency
// percentiles come from hist.Hist, a histogram of log-spaced buckets (128 per
// power of two, at most 7,296 counters) whose percentiles are within
// 0.4 % of the exact ones, so 50 million calls cost no more than 50;
// activity over time is kept in at most MaxBins bins per timeline row
// (see Series).
func Compute(t trace.Trace, opts Options) (*Stats, error) {
	c := newComputer(t.Path, opts)
	st := &Stats{Detail: opts.Detail, Replay: replayOfTrace(t), Times: t.Meta().TimesNote()}
	ranks := t.Ranks()
	st.Ranks = len(ranks)
	buf := make([]trace.Event, trace.BatchSize)
	var series Series
	for i, r := range ranks {
		series.reset()
		rs := c.begin(r, &series)
		if err := c.read(t, rs, buf); err != nil {
			// An error that points at its spot (a script's file:line:col,
			// a trace file's FILE: offset N) is one line as it is.
			var located interface{ Location() string }
			if errors.As(err, &located) || errors.Is(err, trace.ErrMalformed) {
				return nil, err
			}
			return nil, fmt.Errorf("rank %d: %w", r, err)
		}
		c.end(rs)
		st.addRank(i, rs)
	}
	c.finish(st)
	return st, nil
}

// A Live computes the statistics of a trace while its events are made —
// a replay's, as its ranks replay them — instead of reading the trace
// afterwards: what Compute would find in the trace the events are
// written to. Its ranks add their events from goroutines of their own.
// Memory grows with the ranks (each keeps what Compute keeps for the rank
// it reads), not with the events.
type Live struct {
	mu    sync.Mutex
	c     *computer
	ranks map[uint32]*rankState
}

// NewLive returns a Live for events whose paths path names (the ids of
// the trace they are written to).
func NewLive(path func(trace.PathID) string, opts Options) *Live {
	return &Live{c: newComputer(path, opts), ranks: map[uint32]*rankState{}}
}

// Add counts evs, the next events of rank r. It is safe for concurrent
// use; each rank's events must come in their order.
func (l *Live) Add(r uint32, evs []trace.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rs := l.ranks[r]
	if rs == nil {
		rs = l.c.begin(r, &Series{})
		l.ranks[r] = rs
	}
	for i := range evs {
		l.c.event(rs, &evs[i])
	}
}

// Stats returns the statistics of ranks (those of the trace, in order,
// with or without events), once every event is in; replay says how the
// replay went (Stats.Replay). The Live is spent.
func (l *Live) Stats(ranks []uint32, replay *Replay) *Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := &Stats{Detail: l.c.opts.Detail, Replay: replay, Ranks: len(ranks)}
	for i, r := range ranks {
		rs := l.ranks[r]
		if rs == nil {
			rs = l.c.begin(r, &Series{})
		}
		l.c.end(rs)
		st.addRank(i, rs)
	}
	l.c.finish(st)
	l.ranks = nil
	return st
}

// addRank adds the i-th rank of the trace (of st.Ranks), once read.
func (st *Stats) addRank(i int, rs *rankState) {
	rr := rs.row
	perRow := (st.Ranks + MaxTimelineRows - 1) / MaxTimelineRows
	if i%perRow == 0 {
		st.Timeline = append(st.Timeline, &TimelineRow{First: rr.Rank})
	}
	row := st.Timeline[len(st.Timeline)-1]
	row.Last = rr.Rank
	row.Ranks++
	row.merge(rs.series)
	if rr.Events > 0 {
		if st.Events == 0 || rr.Start < st.Start {
			st.Start = rr.Start
		}
		st.End = max(st.End, rr.End)
	}
	st.Events += rr.Events
	st.ByRank = append(st.ByRank, rr)
}

// finish computes what comes of every rank: the sums, the orders, the
// access patterns.
func (c *computer) finish(st *Stats) {
	for _, row := range st.Timeline {
		st.Activity.merge(&row.Series)
	}
	for _, row := range st.Timeline {
		row.align(&st.Activity)
	}
	if c.acc != nil {
		st.Access, st.AccessByRank = c.acc.rows(st.Ranks)
		st.AccessCounted = true
	}
	st.Markers, st.ProcEvents, st.InMPIIO = c.counts.Markers, c.counts.ProcEvents, c.counts.InMPIIO
	st.Ops = c.all.sorted(st.Ranks)
	st.Total = Sum(st.Ops)
	st.Total.ranks = st.Ranks
	for _, r := range st.Ops {
		if r.sizes != nil {
			st.Sizes = append(st.Sizes, r.sizes.rows(r.Op)...)
		}
	}
	for _, rr := range st.ByRank {
		rr.Ops = rr.set.sorted(st.Ranks)
	}
	st.Stragglers = markStragglers(st.ByRank)
	for _, f := range c.files {
		f.Ops = f.set.sorted(st.Ranks)
		st.Files = append(st.Files, f)
	}
	slices.SortFunc(st.Files, func(a, b *FileRow) int {
		return cmp.Or(cmp.Compare(sumTotal(b.Ops), sumTotal(a.Ops)), cmp.Compare(a.Path, b.Path))
	})
	for _, reg := range c.regions {
		reg.ranks = st.Ranks
		reg.Ops = reg.set.sorted(st.Ranks)
		st.Regions = append(st.Regions, reg)
	}
	slices.SortFunc(st.Regions, func(a, b *RegionRow) int { return cmp.Compare(a.Label, b.Label) })
}

// newComputer returns a computer for events whose paths path names.
func newComputer(path func(trace.PathID) string, opts Options) *computer {
	c := &computer{
		path:      path,
		opts:      opts,
		all:       newRowSet(true, true),
		files:     map[string]*FileRow{},
		fileByID:  map[trace.PathID]*FileRow{},
		regions:   map[string]*RegionRow{},
		regByID:   map[trace.PathID]*RegionRow{},
		unknownOp: map[trace.Op]*opInfo{},
		inner:     map[trace.Op]*opInfo{},
		keys:      map[string]int{},
	}
	if opts.Access {
		c.acc = newAccessState(opts.BlockSize)
	}
	return c
}

// computer holds what Compute (or a Live) keeps between events.
type computer struct {
	path      func(trace.PathID) string
	opts      Options
	all       rowSet
	files     map[string]*FileRow
	fileByID  map[trace.PathID]*FileRow
	regions   map[string]*RegionRow
	regByID   map[trace.PathID]*RegionRow
	unknownOp map[trace.Op]*opInfo
	infos     [1024]*opInfo
	inner     map[trace.Op]*opInfo // ops of calls made inside MPI-IO calls
	keys      map[string]int       // row key → opInfo.idx
	acc       *accessState         // access patterns (patterns.go)
	counts    struct{ Markers, ProcEvents, InMPIIO int64 }
}

// opInfo is an op's description, its row key, and the index of that key
// among the keys seen, which row sets use to find a row without a map.
type opInfo struct {
	trace.OpInfo
	key     string
	idx     int
	act     Activity // activityOf(OpInfo)
	inMPIIO bool     // the POSIX calls of the op made inside MPI-IO calls
}

// inMPIIOSuffix names the rows of POSIX calls made inside MPI-IO calls.
const inMPIIOSuffix = " (in MPI-IO)"

func (c *computer) info(op trace.Op) *opInfo {
	if int(op) < len(c.infos) && c.infos[op] != nil {
		return c.infos[op]
	}
	if p := c.unknownOp[op]; p != nil {
		return p
	}
	p := &opInfo{OpInfo: op.Info()}
	p.act = activityOf(p.OpInfo)
	p.key = p.Family
	if c.opts.Detail {
		p.key = p.Name
	}
	if i, ok := c.keys[p.key]; ok {
		p.idx = i
	} else {
		p.idx = len(c.keys)
		c.keys[p.key] = p.idx
	}
	if int(op) < len(c.infos) {
		c.infos[op] = p
	} else {
		c.unknownOp[op] = p
	}
	return p
}

// innerInfo is info for the calls of op an MPI library made inside an
// MPI-IO call.
func (c *computer) innerInfo(op trace.Op) *opInfo {
	if p := c.inner[op]; p != nil {
		return p
	}
	p := *c.info(op)
	p.inMPIIO = true
	p.act = -1 // the MPI-IO call around it is in the timeline
	p.key += inMPIIOSuffix
	if i, ok := c.keys[p.key]; ok {
		p.idx = i
	} else {
		p.idx = len(c.keys)
		c.keys[p.key] = p.idx
	}
	c.inner[op] = &p
	return &p
}

// openRegion is an entry of a rank's region stack.
type openRegion struct {
	reg   *RegionRow
	start int64
	dup   bool // the same region is open further down the stack
}

// rankState is what one rank's stream keeps while it is read.
type rankState struct {
	row    *RankRow
	files  *state.Follower[struct{}, struct{}] // descriptors and handles → files
	stack  []openRegion
	inReg  map[*RegionRow]int64 // ns this rank spent in each region
	series *Series              // the rank's activity over time
	acc    *rankAccess          // the rank's access patterns
	// seen holds the files the rank made calls on (FileRow.Ranks);
	// last is the latest of them.
	seen map[*FileRow]bool
	last *FileRow
}

// begin starts the stream of rank r, whose activity goes to series.
func (c *computer) begin(r uint32, series *Series) *rankState {
	rr := &RankRow{Rank: r, set: newRowSet(false, false)}
	rs := &rankState{row: rr, files: state.New[struct{}, struct{}](nil), inReg: map[*RegionRow]int64{}, series: series,
		seen: map[*FileRow]bool{}}
	if c.acc != nil {
		rs.acc = c.acc.rank(r)
	}
	return rs
}

// read reads the stream of rs's rank in t into it.
func (c *computer) read(t trace.Trace, rs *rankState, buf []trace.Event) error {
	src, err := t.Rank(rs.row.Rank)
	if err != nil {
		return err
	}
	if cl, ok := src.(io.Closer); ok {
		defer cl.Close()
	}
	for {
		n, err := src.ReadEvents(buf)
		for i := range buf[:n] {
			c.event(rs, &buf[i])
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// end ends the stream of rs's rank.
func (c *computer) end(rs *rankState) {
	c.closeRegions(rs, 0, rs.row.End)
	if c.acc != nil {
		c.acc.done(rs.acc)
	}
	for reg, ns := range rs.inReg {
		reg.Ranks++
		reg.Wall = max(reg.Wall, ns)
	}
}

func (c *computer) event(rs *rankState, e *trace.Event) {
	rr := rs.row
	dur := max(e.Dur, 0)
	if rr.Events == 0 || e.Start < rr.Start {
		rr.Start = e.Start
	}
	if end := sat.Add(e.Start, dur); rr.Events == 0 || end > rr.End {
		rr.End = end
	}
	rr.Events++
	info := c.info(e.Op)
	if e.Flags&trace.InMPIIO != 0 && (info.Class == trace.ClassPOSIX || info.Class == trace.ClassMeta) {
		info = c.innerInfo(e.Op)
	}
	switch info.Class {
	case trace.ClassMarker:
		c.counts.Markers++
		c.marker(rs, e, dur)
		return
	case trace.ClassProcess:
		// Processes starting and ending are no calls to count: the rank's
		// state follows them.
		c.counts.ProcEvents++
		rs.files.Apply(e)
		return
	}
	if info.inMPIIO {
		c.counts.InMPIIO++
	}
	cl := call{info: info, dur: dur, size: -1}
	switch {
	case info.Dir != trace.DirNone:
		cl.moved, cl.size = max(e.Ret, 0), max(e.Size, 0)
	case info.Class == trace.ClassComm:
		cl.moved = max(e.Bytes, 0)
		if e.Bytes > 0 {
			cl.size = e.Bytes
		}
	}
	switch info.Class {
	case trace.ClassPOSIX, trace.ClassMeta, trace.ClassMPIIO:
		cl.fail = e.Ret < 0
	}
	c.all.add(&cl)
	rr.set.add(&cl)
	if info.act >= 0 {
		var rd, wr int64
		switch info.Dir {
		case trace.DirRead:
			rd = cl.moved
		case trace.DirWrite:
			wr = cl.moved
		}
		rs.series.add(e.Start, sat.Add(e.Start, dur), info.act, rd, wr)
	}
	for _, o := range rs.stack {
		if !o.dup {
			o.reg.set.add(&cl)
		}
	}
	if f := c.fileOf(rs, e, info); f != nil {
		if c.acc != nil {
			c.acc.add(rs.acc, rs.files, f.Path, e, info)
		}
		f.set.add(&cl)
		if f != rs.last {
			// Counted per rank, not by a last rank of the file: a Live's
			// ranks add their events interleaved.
			if !rs.seen[f] {
				rs.seen[f] = true
				f.Ranks++
			}
			rs.last = f
		}
	}
}

// fileOf returns the file e works on, as the rank's state follower
// (trace/state) knows it: the file its descriptor or MPI file handle was
// opened on, or the path it names.
func (c *computer) fileOf(rs *rankState, e *trace.Event, info *opInfo) *FileRow {
	if d := rs.files.Data(e); d != nil {
		// A read or write on a descriptor the rank has open: the hot path.
		if d.Path != 0 {
			return c.file(d.Path)
		}
		if e.Path != 0 {
			return c.file(e.Path)
		}
		return c.pseudoFile(e.FD)
	}
	st := rs.files.Apply(e)
	switch info.Class {
	case trace.ClassPOSIX, trace.ClassMeta, trace.ClassMPIIO:
	default:
		return nil
	}
	if st.Path != 0 {
		return c.file(st.Path)
	}
	if info.Dir == trace.DirNone {
		return nil
	}
	if info.Class == trace.ClassMPIIO {
		return c.fileNamed("<unknown file handle>")
	}
	return c.pseudoFile(e.FD)
}

func (c *computer) pseudoFile(fd int32) *FileRow {
	switch fd {
	case 0:
		return c.fileNamed("<stdin>")
	case 1:
		return c.fileNamed("<stdout>")
	case 2:
		return c.fileNamed("<stderr>")
	}
	return c.fileNamed("<unknown fd>")
}

func (c *computer) file(id trace.PathID) *FileRow {
	if f := c.fileByID[id]; f != nil {
		return f
	}
	f := c.fileNamed(c.path(id))
	c.fileByID[id] = f
	return f
}

func (c *computer) fileNamed(path string) *FileRow {
	f := c.files[path]
	if f == nil {
		f = &FileRow{Path: path, set: newRowSet(false, false)}
		c.files[path] = f
	}
	return f
}

func (c *computer) marker(rs *rankState, e *trace.Event, dur int64) {
	switch e.Op {
	case trace.OpRegionBegin:
		reg := c.regByID[e.Path]
		if reg == nil {
			label := c.path(e.Path)
			reg = c.regions[label]
			if reg == nil {
				reg = &RegionRow{Label: label, set: newRowSet(true, false)}
				c.regions[label] = reg
			}
			c.regByID[e.Path] = reg
		}
		dup := slices.ContainsFunc(rs.stack, func(o openRegion) bool { return o.reg == reg })
		rs.stack = append(rs.stack, openRegion{reg: reg, start: e.Start, dup: dup})
	case trace.OpRegionEnd:
		label := c.path(e.Path)
		for i := len(rs.stack) - 1; i >= 0; i-- {
			if rs.stack[i].reg.Label == label {
				c.closeRegions(rs, i, sat.Add(e.Start, dur))
				break
			}
		}
	}
}

// closeRegions closes the regions from stack[i] up, at end.
func (c *computer) closeRegions(rs *rankState, i int, end int64) {
	for j := len(rs.stack) - 1; j >= i; j-- {
		o := rs.stack[j]
		o.reg.Count++
		if !o.dup {
			d := max(sat.Sub(end, o.start), 0)
			o.reg.Time = sat.Add(o.reg.Time, d)
			rs.inReg[o.reg] = sat.Add(rs.inReg[o.reg], d)
		}
	}
	rs.stack = rs.stack[:i]
}

// rankColumns are the groups of calls of the per-rank table, in order.
var rankColumns = []string{"open/close", "read", "write", "seek", "sync", "meta", "mpi-io", "comm"}

// rankColumn returns the rank-table column of r's calls, or "" for calls of
// unknown ops (counted in no column and not in I/O time).
func rankColumn(r *OpRow) string {
	switch r.Class {
	case trace.ClassPOSIX:
		switch r.Family {
		case "open", "close", "dup":
			return "open/close"
		case "read", "write", "seek", "sync":
			return r.Family
		}
		return "meta"
	case trace.ClassMeta:
		return "meta"
	case trace.ClassMPIIO:
		return "mpi-io"
	case trace.ClassComm:
		return "comm"
	}
	return ""
}

// Time returns the ns the rank spent in calls of rank-table column col
// ("open/close", "read", "write", "seek", "sync", "meta", "mpi-io", "comm").
func (r *RankRow) Time(col string) int64 {
	return sumIf(r.Ops, func(o *OpRow) bool { return rankColumn(o) == col }, func(o *OpRow) int64 { return o.Total })
}

// IOTime is the rank's time in POSIX, metadata and MPI-IO calls (all but
// communication and unknown ops), in ns. It is what the straggler rule
// looks at.
func (r *RankRow) IOTime() int64 {
	return sumIf(r.Ops, func(o *OpRow) bool { c := rankColumn(o); return c != "" && c != "comm" }, func(o *OpRow) int64 { return o.Total })
}

// Bytes is the bytes the rank's data calls moved (POSIX and MPI-IO).
func (r *RankRow) Bytes() int64 { return dataBytes(r.Ops, trace.DirNone) }

// CommBytes is the bytes of the rank's communication calls.
func (r *RankRow) CommBytes() int64 {
	return sumIf(r.Ops, func(o *OpRow) bool { return o.Class == trace.ClassComm }, func(o *OpRow) int64 { return o.Bytes })
}

func isOpen(o *OpRow) bool {
	return (o.Class == trace.ClassPOSIX && o.Family == "open") || o.Family == "MPI_File_open"
}

func isClose(o *OpRow) bool {
	return (o.Class == trace.ClassPOSIX && o.Family == "close") || o.Family == "MPI_File_close"
}

func count(o *OpRow) int64 { return o.Count }

// Opens is the number of open calls on the file (POSIX and MPI-IO),
// failed ones included.
func (f *FileRow) Opens() int64 { return sumIf(f.Ops, isOpen, count) }

// Reads is the number of read calls on the file.
func (f *FileRow) Reads() int64 {
	return sumIf(f.Ops, func(o *OpRow) bool { return o.Dir == trace.DirRead }, count)
}

// Writes is the number of write calls on the file.
func (f *FileRow) Writes() int64 {
	return sumIf(f.Ops, func(o *OpRow) bool { return o.Dir == trace.DirWrite }, count)
}

// ReadBytes is the bytes read from the file.
func (f *FileRow) ReadBytes() int64 { return dataBytes(f.Ops, trace.DirRead) }

// WriteBytes is the bytes written to the file.
func (f *FileRow) WriteBytes() int64 { return dataBytes(f.Ops, trace.DirWrite) }

// Other is the number of calls on the file that neither open, close, read
// nor write it: seeks, syncs, metadata calls, dups, set_view….
func (f *FileRow) Other() int64 {
	return sumIf(f.Ops, func(o *OpRow) bool { return o.Dir == trace.DirNone && !isOpen(o) && !isClose(o) }, count)
}

// Time is the ns spent in calls on the file, over all ranks.
func (f *FileRow) Time() int64 { return sumTotal(f.Ops) }

// Errors is the number of calls on the file that failed.
func (f *FileRow) Errors() int64 {
	return sumIf(f.Ops, func(*OpRow) bool { return true }, func(o *OpRow) int64 { return o.Errors })
}

// dataBytes sums the bytes of rows in direction dir (DirNone: both).
func dataBytes(rows []*OpRow, dir trace.Dir) int64 {
	return sumIf(rows, func(o *OpRow) bool {
		return o.Dir != trace.DirNone && (dir == trace.DirNone || o.Dir == dir)
	}, func(o *OpRow) int64 { return o.Bytes })
}

func sumTotal(rows []*OpRow) int64 {
	return sumIf(rows, func(*OpRow) bool { return true }, func(o *OpRow) int64 { return o.Total })
}

// sumIf sums val over the rows keep picks, leaving out the calls made
// inside MPI-IO calls (their I/O is in the MPI-IO rows already).
func sumIf(rows []*OpRow, keep func(*OpRow) bool, val func(*OpRow) int64) int64 {
	var s int64
	for _, r := range rows {
		if !r.InMPIIO && keep(r) {
			s = sat.Add(s, val(r))
		}
	}
	return s
}

// markStragglers flags the ranks the straggler rule picks.
func markStragglers(rows []*RankRow) []uint32 {
	if len(rows) < 3 {
		return nil
	}
	times := make([]int64, len(rows))
	for i, r := range rows {
		times[i] = r.IOTime()
	}
	med := median(slices.Clone(times))
	dev := make([]int64, len(times))
	for i, t := range times {
		dev[i] = max(t-med, med-t)
	}
	mad := median(dev)
	var out []uint32
	for i, r := range rows {
		if isStraggler(times[i], med, mad) {
			r.Straggler = true
			out = append(out, r.Rank)
		}
	}
	return out
}

// median of v (the mean of the middle two for an even count); v is
// reordered.
func median(v []int64) int64 {
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return v[n/2-1] + (v[n/2]-v[n/2-1])/2
}
