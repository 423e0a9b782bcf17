package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/iotrace/iotrace/trace/units"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/access"
	"github.com/iotrace/iotrace/trace/state"
)

// Access patterns, as Darshan users read them, per file and per rank:
// counted by trace/access, Darshan's own rules and the one definition
// of these counters in iotrace.

// BlockSize is the alignment AccessRow.NotAlignedBlock counts against
// when Options.BlockSize is not set: a trace does not record the block
// size of the file system it ran on.
const BlockSize = 4096

// AccessRow is the access pattern of one file on one rank, or (Rank -1)
// over every rank that used it, folded as Darshan folds a shared file's
// records (sums; the common sizes and strides of each rank merged).
type AccessRow struct {
	Path string
	Rank int // -1: the file over its ranks
	// Layer is the calls counted: "posix" (POSIX calls, those an MPI-IO
	// library made included), or "mpiio" for a file with MPI-IO data
	// calls only (their offsets mapped through the view), counted by the
	// same rules.
	Layer string
	Ranks int // ranks with calls on the file
	// Shared: every rank of the trace (more than one) used the file, as
	// Darshan's rank -1 records; else the file is unique to its ranks.
	Shared                      bool
	Reads, Writes               int64
	ReadBytes, WriteBytes       int64
	SeqReads, SeqWrites         int64 // at an offset above the last byte read (written) before
	ConsecReads, ConsecWrites   int64 // right after the last byte read (written) before
	Sizes, Strides              access.Commons
	Aligned4K, Aligned1M        int64 // accesses at an offset that is a multiple of 4 KiB, of 1 MiB
	NotAlignedBlock, BlockSize  int64 // accesses at an offset that is not a multiple of the block size
	RWSwitches                  int64
	MaxByteRead, MaxByteWritten int64
	SlowestRank                 int     // the rank with the most time in calls on the file
	SlowestTime                 float64 // its seconds in reads, writes and metadata calls (without overlap)
	OverlapBytes                int64   // bytes of the file both read and written (file rows only)
}

// accessState is what Compute keeps for access patterns.
type accessState struct {
	blockSize int64
	// per rank: POSIX calls, and MPI-IO data calls counted as if they
	// were POSIX ones (for files with no POSIX data calls)
	posix, mpi []*access.Posix
	// byte extents read and written of each file, per layer
	ext      map[string]*[4]extents
	lastFile string // the file of the call before, and its extents
	lastExt  *[4]extents
}

func newAccessState(bs int64) *accessState {
	if bs <= 0 {
		bs = BlockSize
	}
	return &accessState{blockSize: bs, ext: map[string]*[4]extents{}}
}

// rankAccess is one rank's trackers.
type rankAccess struct{ posix, mpi *access.Tracker }

func (a *accessState) rank(r uint32) *rankAccess {
	o := access.Options{FileAlignment: a.blockSize}
	return &rankAccess{posix: access.NewTracker(int(r), o), mpi: access.NewTracker(int(r), o)}
}

// add counts e, a call on file, with its rank's handle table f.
func (a *accessState) add(ra *rankAccess, f *state.Follower[struct{}, struct{}], file string, e *trace.Event, info *opInfo) {
	switch info.Class {
	case trace.ClassPOSIX, trace.ClassMeta:
		ra.posix.Add(file, e, e.Offset, 0)
		if e.Ret > 0 && (info.Dir == trace.DirRead || info.Dir == trace.DirWrite) {
			a.extentsOf(file, info.Dir, 0).add(e.Offset, e.Offset+e.Ret)
		}
	case trace.ClassMPIIO:
		off := e.Offset
		if h := f.Handle(e.FD); h != nil {
			off = h.View.FileOffset(e.Offset)
		}
		// the MPI-IO calls as POSIX ones: opens reset, reads and writes
		var as trace.Event
		switch {
		case e.Op == trace.OpMPIFileOpen:
			as = trace.Event{Op: trace.OpOpen, Start: e.Start, Dur: e.Dur}
		case e.Op == trace.OpMPIFileClose:
			as = trace.Event{Op: trace.OpClose, Start: e.Start, Dur: e.Dur}
		case info.Dir == trace.DirRead:
			as = trace.Event{Op: trace.OpPread, Start: e.Start, Dur: e.Dur, Offset: off, Size: e.Size, Ret: e.Ret}
		case info.Dir == trace.DirWrite:
			as = trace.Event{Op: trace.OpPwrite, Start: e.Start, Dur: e.Dur, Offset: off, Size: e.Size, Ret: e.Ret}
		default:
			return
		}
		ra.mpi.Add(file, &as, off, 0)
		if e.Ret > 0 && as.Ret > 0 {
			// a view's blocks: the range from the first byte to the last
			first, end := off, off+e.Ret
			if h := f.Handle(e.FD); h != nil {
				first, end = h.View.Range(e.Offset, e.Ret)
			}
			a.extentsOf(file, info.Dir, 1).add(first, end)
		}
	}
}

func (a *accessState) extentsOf(file string, dir trace.Dir, layer int) *extents {
	x := a.lastExt
	if x == nil || a.lastFile != file {
		x = a.ext[file]
		if x == nil {
			x = &[4]extents{}
			a.ext[file] = x
		}
		a.lastFile, a.lastExt = file, x
	}
	i := layer * 2
	if dir == trace.DirWrite {
		i++
	}
	return &x[i]
}

func (a *accessState) done(ra *rankAccess) {
	p, _ := ra.posix.Records()
	m, _ := ra.mpi.Records()
	a.posix = append(a.posix, p...)
	a.mpi = append(a.mpi, m...)
}

func hasData(r *access.Posix) bool { return r.Reads+r.Writes > 0 }

// rows returns the per-file rows, then the per-(file, rank) rows.
func (a *accessState) rows(nranks int) (files, ranks []*AccessRow) {
	by := map[string][]*access.Posix{}
	mby := map[string][]*access.Posix{}
	for _, r := range a.posix {
		by[r.File] = append(by[r.File], r)
	}
	for _, r := range a.mpi {
		mby[r.File] = append(mby[r.File], r)
	}
	var names []string
	for f := range by {
		names = append(names, f)
	}
	for f := range mby {
		if by[f] == nil {
			names = append(names, f)
		}
	}
	for _, f := range names {
		recs, layer := by[f], "posix"
		if !slices.ContainsFunc(recs, hasData) && slices.ContainsFunc(mby[f], hasData) {
			recs, layer = mby[f], "mpiio"
		}
		if !slices.ContainsFunc(recs, hasData) {
			continue // no data calls: no access pattern
		}
		slices.SortFunc(recs, func(x, y *access.Posix) int { return cmp.Compare(x.Rank, y.Rank) })
		for _, r := range recs {
			if hasData(r) {
				ranks = append(ranks, a.row(r, layer, 1, nranks))
			}
		}
		all := access.Fold(recs)
		row := a.row(all, layer, len(recs), nranks)
		row.Shared = nranks > 1 && len(recs) == nranks
		row.SlowestRank, row.SlowestTime = -1, -1
		for _, r := range recs {
			if t := r.ReadTime + r.WriteTime + r.MetaTime; t > row.SlowestTime {
				row.SlowestRank, row.SlowestTime = r.Rank, t
			}
		}
		if x := a.ext[f]; x != nil {
			l := 0
			if layer == "mpiio" {
				l = 2
			}
			row.OverlapBytes = x[l].overlap(&x[l+1])
		}
		files = append(files, row)
	}
	slices.SortFunc(files, func(x, y *AccessRow) int {
		return cmp.Or(cmp.Compare(y.ReadBytes+y.WriteBytes, x.ReadBytes+x.WriteBytes), cmp.Compare(x.Path, y.Path))
	})
	order := map[string]int{}
	for i, f := range files {
		order[f.Path] = i
	}
	slices.SortStableFunc(ranks, func(x, y *AccessRow) int {
		return cmp.Or(cmp.Compare(order[x.Path], order[y.Path]), cmp.Compare(x.Rank, y.Rank))
	})
	return files, ranks
}

func (a *accessState) row(r *access.Posix, layer string, nr, nranks int) *AccessRow {
	return &AccessRow{Path: r.File, Rank: r.Rank, Layer: layer, Ranks: nr,
		Reads: r.Reads, Writes: r.Writes, ReadBytes: r.BytesRead, WriteBytes: r.BytesWritten,
		SeqReads: r.SeqReads, SeqWrites: r.SeqWrites, ConsecReads: r.ConsecReads, ConsecWrites: r.ConsecWrites,
		Sizes: r.Accesses, Strides: r.Strides, Aligned4K: r.Aligned4K, Aligned1M: r.Aligned1M,
		NotAlignedBlock: r.FileNotAligned, BlockSize: a.blockSize, RWSwitches: r.RWSwitches,
		MaxByteRead: r.MaxByteRead, MaxByteWritten: r.MaxByteWritten,
		SlowestRank: r.Rank, SlowestTime: r.ReadTime + r.WriteTime + r.MetaTime}
}

// extents is a set of byte ranges [lo, hi) of a file: a range that
// touches the last one extends it (sequential access costs nothing);
// others are appended, and the set is sorted and merged only when asked
// for the overlap (and only if the other set is not empty), or when it
// holds more than a million ranges and has doubled since it last was
// merged (memory stays at the distinct ranges).
type extents struct {
	r      [][2]int64
	merged int // length after the last merge
}

func (x *extents) add(lo, hi int64) {
	if hi <= lo {
		return
	}
	if n := len(x.r); n > 0 && lo <= x.r[n-1][1] && hi >= x.r[n-1][0] {
		x.r[n-1][0] = min(x.r[n-1][0], lo)
		x.r[n-1][1] = max(x.r[n-1][1], hi)
		return
	}
	x.r = append(x.r, [2]int64{lo, hi})
	if len(x.r) > 1<<20 && len(x.r) > 2*x.merged {
		x.merge()
	}
}

func (x *extents) merge() {
	slices.SortFunc(x.r, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	out := x.r[:0]
	for _, e := range x.r {
		if n := len(out); n > 0 && e[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], e[1])
			continue
		}
		out = append(out, e)
	}
	x.r = out
	x.merged = len(out)
}

// overlap returns the bytes in both x and y.
func (x *extents) overlap(y *extents) int64 {
	if len(x.r) == 0 || len(y.r) == 0 {
		return 0
	}
	x.merge()
	y.merge()
	var n int64
	i, j := 0, 0
	for i < len(x.r) && j < len(y.r) {
		lo, hi := max(x.r[i][0], y.r[j][0]), min(x.r[i][1], y.r[j][1])
		if hi > lo {
			n += hi - lo
		}
		if x.r[i][1] < y.r[j][1] {
			i++
		} else {
			j++
		}
	}
	return n
}

// commonsText writes common values as "64 KiB ×2048, 1 KiB ×3".
func commonsText(c access.Commons, bytes bool) string {
	var parts []string
	for _, e := range c {
		if e.Count == 0 {
			continue
		}
		v := fmt.Sprint(e.Value)
		if bytes {
			v = units.Bytes(e.Value)
		}
		parts = append(parts, fmt.Sprintf("%s ×%d", v, e.Count))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// commonsRaw writes common values for CSV: "65536:2048 1024:3".
func commonsRaw(c access.Commons) string {
	var parts []string
	for _, e := range c {
		if e.Count > 0 {
			parts = append(parts, fmt.Sprintf("%d:%d", e.Value, e.Count))
		}
	}
	return strings.Join(parts, " ")
}

var accessColumns = []column{lcol("file", "path"), rcol("rank", "rank"), lcol("layer", "layer"), rcol("ranks", "ranks"),
	lcol("shared", "shared"), rcol("seq R", "seq_reads"), rcol("seq W", "seq_writes"),
	rcol("consec R", "consec_reads"), rcol("consec W", "consec_writes"), lcol("common sizes", "common_sizes"),
	lcol("common strides", "common_strides"), rcol("4K-aligned", "aligned_4k"), rcol("1M-aligned", "aligned_1m"),
	rcol("not block-aligned", "not_block_aligned"), rcol("R/W switches", "rw_switches"),
	rcol("slowest rank", "slowest_rank"), rcol("its time", "slowest_seconds"), rcol("R/W overlap", "rw_overlap_bytes")}

func accessCells(r *AccessRow) []cell {
	rank := cell{"all", "-1"}
	if r.Rank >= 0 {
		rank = num(int64(r.Rank))
	}
	shared := cell{"unique", "false"}
	if r.Shared {
		shared = cell{"shared", "true"}
	}
	if r.Rank >= 0 {
		shared = cell{"", ""}
	}
	overlap := bytesCell(r.OverlapBytes)
	if r.Rank >= 0 {
		overlap = cell{"", ""}
	}
	return []cell{str(r.Path), rank, str(r.Layer), num(int64(r.Ranks)), shared, num(r.SeqReads), num(r.SeqWrites),
		num(r.ConsecReads), num(r.ConsecWrites), {commonsText(r.Sizes, true), commonsRaw(r.Sizes)},
		{commonsText(r.Strides, true), commonsRaw(r.Strides)}, num(r.Aligned4K), num(r.Aligned1M),
		num(r.NotAlignedBlock), num(r.RWSwitches), num(int64(r.SlowestRank)), secCell(r.SlowestTime), overlap}
}

// accessTables are the file view's access-pattern tables: per file, and
// per file and rank.
func (s *Stats) accessTables() []table {
	note := fmt.Sprintf("Counted as Darshan's POSIX module counts (trace/access): an access is sequential when at an offset above the last byte "+
		"the rank read (wrote) in the file since it opened it, consecutive when right after it; strides are the gaps of sequential accesses; "+
		"the common sizes and strides are the four most frequent. Block size: %s. Shared: every rank used the file.", units.Bytes(s.accessBlock()))
	t := table{title: "Access patterns per file", cols: accessColumns, notes: []string{note}}
	for _, r := range s.Access {
		t.rows = append(t.rows, accessCells(r))
	}
	u := table{title: "Access patterns per file and rank", cols: accessColumns}
	for _, r := range s.AccessByRank {
		u.rows = append(u.rows, accessCells(r))
	}
	return []table{t, u}
}

func (s *Stats) accessBlock() int64 {
	for _, r := range s.Access {
		return r.BlockSize
	}
	return BlockSize
}
