// Package report computes statistics over any trace — a captured run, a
// replay, an expanded script — and renders them as tables: per operation
// (in the manner of Table 1 of Thakur et al.), size distributions (their
// Table 2), per rank with stragglers, per file and per labelled region, in
// text, CSV, Markdown and JSON. Compare puts two traces side by side.
//
// Compute reads each rank once, streaming, and keeps per-row totals and
// log-linear latency histograms (Hist), so its memory does not grow with
// the number of events.
package report

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"sort"

	"github.com/iotrace/iotrace/trace"
)

// Options choose what Compute gathers.
type Options struct {
	// Detail splits the op families (read = read+pread+readv+…) into
	// their calls.
	Detail bool
}

// Stats is what Compute found.
type Stats struct {
	Ranks    int   // ranks with events
	Events   int64 // events, markers included
	Start    int64 // earliest start, ns from the trace epoch
	End      int64 // latest end
	Ops      []*OpRow
	Sizes    []SizeRow
	ByRank   []*RankRow
	Files    []*FileRow
	Regions  []*RegionRow
	Straggle []uint32 // ranks whose I/O time is far above the median (see Stragglers)
}

// Duration is the wall time the trace spans, in seconds.
func (s *Stats) Duration() float64 { return float64(s.End-s.Start) / 1e9 }

// OpRow is one row of the per-operation table.
type OpRow struct {
	Op     string      // family ("read") or, with Detail, call ("pread")
	Class  trace.Class // class of its calls
	Count  int64       // calls over all ranks
	Bytes  int64       // bytes moved (data) or sent (communication)
	Errors int64       // calls that failed (negative result)
	Total  int64       // ns, summed over all ranks
	ranks  int         // ranks of the trace, for the per-rank average
	Lat    Hist        // call durations
	sizes  *sizeDist
}

// AvgPerRank is the time per rank: total time over the trace's ranks (the
// papers' "average time per process"), in seconds.
func (r *OpRow) AvgPerRank() float64 {
	if r.ranks == 0 {
		return 0
	}
	return float64(r.Total) / 1e9 / float64(r.ranks)
}

// Bandwidth is the aggregate bandwidth in MB/s (10^6 bytes): total bytes
// over the average time per rank, as Thakur et al. define it.
func (r *OpRow) Bandwidth() float64 {
	t := r.AvgPerRank()
	if t == 0 || r.Bytes == 0 {
		return 0
	}
	return float64(r.Bytes) / 1e6 / t
}

// SizeRow is one row of a size distribution: a size, or (for ops with many
// sizes) a power-of-two bucket [Min, Max].
type SizeRow struct {
	Op       string
	Min, Max int64 // equal for an exact size
	Count    int64
}

// Exact reports whether the row is one size rather than a bucket.
func (r SizeRow) Exact() bool { return r.Min == r.Max }

// sizeDist counts the sizes of one op row: exactly while they are few.
type sizeDist struct {
	exact map[int64]int64 // nil once there are too many sizes
	pow2  [65]int64       // bucket k: [2^(k-1), 2^k), bucket 0: size 0
}

// maxExactSizes is how many distinct sizes a table shows before it turns to
// power-of-two buckets.
const maxExactSizes = 16

func (d *sizeDist) add(v int64) {
	if v < 0 {
		v = 0
	}
	d.pow2[bits.Len64(uint64(v))]++
	if d.exact != nil {
		d.exact[v]++
		if len(d.exact) > maxExactSizes {
			d.exact = nil
		}
	}
}

// Stragglers: a rank is a straggler when its I/O time exceeds both 1.5 ×
// the median over ranks and the median + 3 × the median absolute deviation.
const (
	stragglerFactor = 1.5
	stragglerMADs   = 3
)

// Columns of the per-rank table: the time of each group of calls.
var rankGroups = []string{"open/close", "read", "write", "seek", "sync", "meta", "mpi-io", "comm"}

func rankGroup(op trace.Op) int {
	info := op.Info()
	switch info.Class {
	case trace.ClassMPIIO:
		return 6
	case trace.ClassComm:
		return 7
	case trace.ClassMeta:
		return 5
	case trace.ClassPOSIX:
		switch info.Family {
		case "open", "close", "dup":
			return 0
		case "read":
			return 1
		case "write":
			return 2
		case "seek":
			return 3
		case "sync":
			return 4
		}
		return 5
	}
	return -1
}

// RankRow is one rank's time per group of calls.
type RankRow struct {
	Rank      uint32
	Events    int64
	Time      [8]int64 // ns per rankGroups entry
	Bytes     int64    // bytes read and written (POSIX and MPI-IO)
	Start     int64
	End       int64
	Straggler bool
}

// IOTime is the rank's time in calls other than communication, ns.
func (r *RankRow) IOTime() int64 {
	var t int64
	for _, v := range r.Time[:7] {
		t += v
	}
	return t
}

// FileRow is what happened to one file.
type FileRow struct {
	Path       string
	Opens      int64
	Reads      int64
	ReadBytes  int64
	Writes     int64
	WriteBytes int64
	Other      int64 // seeks, syncs, metadata calls
	Time       int64 // ns in calls on the file
	ranks      map[uint32]bool
	RankCount  int
}

// RegionRow is one labelled region: events between a region_begin and its
// region_end of the same label count for the innermost open region.
type RegionRow struct {
	Label string
	Count int64 // occurrences, over all ranks
	Time  int64 // ns between begin and end, summed over ranks and occurrences
	Ops   []*OpRow
	ops   map[string]*OpRow
	ranks int
}

// AvgPerRank is the region's time per rank, in seconds.
func (r *RegionRow) AvgPerRank() float64 {
	if r.ranks == 0 {
		return 0
	}
	return float64(r.Time) / 1e9 / float64(r.ranks)
}

// Compute reads every rank of t and returns its statistics.
func Compute(t trace.Trace, opts Options) (*Stats, error) {
	st := &Stats{}
	ranks := t.Ranks()
	st.Ranks = len(ranks)
	ops := map[string]*OpRow{}
	files := map[string]*FileRow{}
	regions := map[string]*RegionRow{}
	first := true
	buf := make([]trace.Event, trace.BatchSize)
	for _, rk := range ranks {
		src, err := t.Rank(rk)
		if err != nil {
			return nil, err
		}
		rr := &RankRow{Rank: rk}
		fds := map[int32]string{}   // POSIX descriptors
		mpifh := map[int32]string{} // MPI file handles
		type open struct {
			label string
			start int64
		}
		var stack []open
		for {
			n, err := src.ReadEvents(buf)
			for i := range buf[:n] {
				e := &buf[i]
				st.Events++
				rr.Events++
				if first || e.Start < st.Start {
					st.Start = e.Start
				}
				if first || e.End() > st.End {
					st.End = e.End()
				}
				if rr.Events == 1 || e.Start < rr.Start {
					rr.Start = e.Start
				}
				rr.End = max(rr.End, e.End())
				first = false
				info := e.Op.Info()
				if info.Class == trace.ClassMarker {
					label := t.Path(e.Path)
					switch e.Op {
					case trace.OpRegionBegin:
						stack = append(stack, open{label, e.Start})
					case trace.OpRegionEnd:
						for j := len(stack) - 1; j >= 0; j-- {
							if stack[j].label == label {
								reg := regionRow(regions, label)
								reg.Count++
								reg.Time += e.End() - stack[j].start
								stack = stack[:j]
								break
							}
						}
					}
					continue
				}
				key := info.Family
				if opts.Detail {
					key = info.Name
				}
				moved := bytesOf(e, info)
				row := opRow(ops, key, info.Class)
				row.add(e, moved, info)
				if len(stack) > 0 {
					reg := regionRow(regions, stack[len(stack)-1].label)
					opRow(reg.ops, key, info.Class).add(e, moved, info)
				}
				if g := rankGroup(e.Op); g >= 0 {
					rr.Time[g] += e.Dur
				}
				if info.Dir != trace.DirNone {
					rr.Bytes += moved
				}
				// Files: by path, or by the descriptor's path.
				path := t.Path(e.Path)
				if info.Class == trace.ClassPOSIX {
					switch info.Family {
					case "open":
						if e.Ret >= 0 && e.Op != trace.OpFopen {
							fds[int32(e.Ret)] = path
						}
						if e.Op == trace.OpFopen && e.Ret >= 0 {
							fds[e.FD] = path
						}
					case "close":
						if path == "" {
							path = fds[e.FD]
						}
						if e.Op == trace.OpCloseRange {
							for fd := range fds {
								if int64(fd) >= int64(e.FD) && int64(fd) <= e.Size {
									delete(fds, fd)
								}
							}
						} else {
							delete(fds, e.FD)
						}
					case "dup":
						if e.Ret >= 0 {
							fds[int32(e.Ret)] = fds[e.FD]
						}
						path = fds[e.FD]
					default:
						if path == "" {
							path = fds[e.FD]
						}
					}
				}
				if info.Class == trace.ClassMPIIO {
					if e.Op == trace.OpMPIFileOpen && e.Ret >= 0 {
						mpifh[e.FD] = path
					}
					if path == "" {
						path = mpifh[e.FD]
					}
					if e.Op == trace.OpMPIFileClose {
						delete(mpifh, e.FD)
					}
				}
				if path != "" && info.Class != trace.ClassComm {
					f := files[path]
					if f == nil {
						f = &FileRow{Path: path, ranks: map[uint32]bool{}}
						files[path] = f
					}
					f.ranks[rk] = true
					f.Time += e.Dur
					switch {
					case info.Family == "open" || e.Op == trace.OpMPIFileOpen:
						f.Opens++
					case info.Dir == trace.DirRead:
						f.Reads++
						f.ReadBytes += moved
					case info.Dir == trace.DirWrite:
						f.Writes++
						f.WriteBytes += moved
					case info.Family != "close" && e.Op != trace.OpMPIFileClose:
						f.Other++
					}
				}
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				if c, ok := src.(io.Closer); ok {
					c.Close()
				}
				return nil, fmt.Errorf("rank %d: %w", rk, err)
			}
		}
		if c, ok := src.(io.Closer); ok {
			c.Close()
		}
		st.ByRank = append(st.ByRank, rr)
	}
	for _, r := range ops {
		r.ranks = st.Ranks
		st.Ops = append(st.Ops, r)
	}
	sortOps(st.Ops)
	for _, r := range st.Ops {
		st.Sizes = append(st.Sizes, r.sizeRows()...)
	}
	for _, f := range files {
		f.RankCount = len(f.ranks)
		st.Files = append(st.Files, f)
	}
	sort.Slice(st.Files, func(i, j int) bool {
		if st.Files[i].Time != st.Files[j].Time {
			return st.Files[i].Time > st.Files[j].Time
		}
		return st.Files[i].Path < st.Files[j].Path
	})
	for _, reg := range regions {
		reg.ranks = st.Ranks
		for _, r := range reg.ops {
			r.ranks = st.Ranks
			reg.Ops = append(reg.Ops, r)
		}
		sortOps(reg.Ops)
		st.Regions = append(st.Regions, reg)
	}
	sort.Slice(st.Regions, func(i, j int) bool { return st.Regions[i].Label < st.Regions[j].Label })
	st.Straggle = markStragglers(st.ByRank)
	return st, nil
}

func opRow(m map[string]*OpRow, key string, class trace.Class) *OpRow {
	r := m[key]
	if r == nil {
		r = &OpRow{Op: key, Class: class}
		m[key] = r
	}
	return r
}

func regionRow(m map[string]*RegionRow, label string) *RegionRow {
	r := m[label]
	if r == nil {
		r = &RegionRow{Label: label, ops: map[string]*OpRow{}}
		m[label] = r
	}
	return r
}

// bytesOf is the bytes an event moved: a data call's non-negative result,
// a communication call's byte count.
func bytesOf(e *trace.Event, info trace.OpInfo) int64 {
	switch {
	case info.Dir != trace.DirNone:
		return max(e.Ret, 0)
	case info.Class == trace.ClassComm:
		return e.Bytes
	}
	return 0
}

func (r *OpRow) add(e *trace.Event, moved int64, info trace.OpInfo) {
	r.Count++
	r.Total += e.Dur
	r.Bytes += moved
	r.Lat.Add(e.Dur)
	if e.Ret < 0 && (info.Class == trace.ClassPOSIX || info.Class == trace.ClassMeta || info.Class == trace.ClassMPIIO) {
		r.Errors++
	}
	size := int64(-1)
	switch {
	case info.Dir != trace.DirNone:
		size = e.Size
	case info.Class == trace.ClassComm && e.Bytes > 0:
		size = e.Bytes
	}
	if size >= 0 {
		if r.sizes == nil {
			r.sizes = &sizeDist{exact: map[int64]int64{}}
		}
		r.sizes.add(size)
	}
}

func (r *OpRow) sizeRows() []SizeRow {
	d := r.sizes
	if d == nil {
		return nil
	}
	var rows []SizeRow
	if d.exact != nil {
		for s, c := range d.exact {
			rows = append(rows, SizeRow{Op: r.Op, Min: s, Max: s, Count: c})
		}
		slices.SortFunc(rows, func(a, b SizeRow) int { return int(a.Min - b.Min) })
		return rows
	}
	for k, c := range d.pow2 {
		if c == 0 {
			continue
		}
		if k == 0 {
			rows = append(rows, SizeRow{Op: r.Op, Min: 0, Max: 0, Count: c})
			continue
		}
		lo := int64(1) << (k - 1)
		hi := lo<<1 - 1
		if k == 64 {
			hi = 1<<63 - 1
		}
		rows = append(rows, SizeRow{Op: r.Op, Min: lo, Max: hi, Count: c})
	}
	return rows
}

// opOrder is the order of the POSIX families in tables: the order of
// Thakur et al.'s Table 1, then the rest.
var opOrder = map[string]int{"open": 0, "read": 1, "write": 2, "seek": 3, "close": 4, "sync": 5}

// sortOps orders rows: POSIX families in the papers' order (others after,
// by time), then metadata, MPI-IO and communication rows, each by
// decreasing total time.
func sortOps(rows []*OpRow) {
	classRank := func(c trace.Class) int {
		switch c {
		case trace.ClassPOSIX:
			return 0
		case trace.ClassMeta:
			return 1
		case trace.ClassMPIIO:
			return 2
		case trace.ClassComm:
			return 3
		}
		return 4
	}
	pos := func(r *OpRow) int {
		if p, ok := opOrder[r.Op]; ok && r.Class == trace.ClassPOSIX {
			return p
		}
		return len(opOrder)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if ca, cb := classRank(a.Class), classRank(b.Class); ca != cb {
			return ca < cb
		}
		if pa, pb := pos(a), pos(b); pa != pb {
			return pa < pb
		}
		if a.Total != b.Total {
			return a.Total > b.Total
		}
		return a.Op < b.Op
	})
}

func markStragglers(rows []*RankRow) []uint32 {
	if len(rows) < 3 {
		return nil
	}
	times := make([]int64, len(rows))
	for i, r := range rows {
		times[i] = r.IOTime()
	}
	med := median(times)
	dev := make([]int64, len(times))
	for i, t := range times {
		dev[i] = max(t-med, med-t)
	}
	mad := median(dev)
	var out []uint32
	for i, r := range rows {
		t := float64(times[i])
		if t > stragglerFactor*float64(med) && t > float64(med)+stragglerMADs*float64(mad) {
			r.Straggler = true
			out = append(out, r.Rank)
		}
	}
	return out
}

func median(v []int64) int64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Total returns a row summing rows (for a TOTAL line). Its bytes are the
// data bytes of I/O calls; communication bytes are not added to them.
func Total(rows []*OpRow) *OpRow {
	t := &OpRow{Op: "TOTAL"}
	for _, r := range rows {
		t.Count += r.Count
		if r.Class != trace.ClassComm {
			t.Bytes += r.Bytes
		}
		t.Errors += r.Errors
		t.Total += r.Total
		t.ranks = r.ranks
		t.Lat.Merge(&r.Lat)
	}
	return t
}
