// Package access counts access patterns the way Darshan does: for every
// file and rank, the counters of Darshan's POSIX module (operation counts,
// bytes, the size histogram, sequential and consecutive accesses, the
// four most common access sizes and strides, alignment, read/write
// switches, first and last times) and of its MPI-IO module (independent,
// collective, split and non-blocking calls, the aggregate size histogram,
// the common access sizes), and Darshan's reduction of the records of a
// file every rank opened into one shared record (rank -1).
//
// It is the one definition of these counters in iotrace: the report's
// access-pattern columns (iotrace stats --by file) and the Darshan
// importer's check that a script re-derives its log's counters both count
// with it. The rules are those of darshan-runtime 3.x
// (lib/darshan-posix.c, lib/darshan-mpiio.c, lib/darshan-common.[ch]):
//
//   - an open (not a dup) resets the record's file offset and its last
//     byte read and written to 0;
//   - a read (write) at offset o of n bytes is sequential when o is above
//     the last byte read (written) before, and consecutive when o is that
//     byte + 1; its stride is o − last − 1 when o > 0, o > last and
//     last ≠ 0, else 0; then last = o + n − 1;
//   - a failed call (Ret < 0) counts nothing;
//   - common values (access sizes, strides) are kept for the first 32
//     distinct values of a record; 0 is never one; the four kept are those
//     of the highest counts, ties broken by the larger value;
//   - the size histograms have Darshan's ten buckets, each up to and
//     including its upper bound: 0–100, 101–1Ki, –10Ki, –100Ki, –1Mi,
//     –4Mi, –10Mi, –100Mi, –1Gi bytes, and above (DARSHAN_BUCKET_INC);
//   - an MPI_File_open on a communicator of more than one rank is a
//     collective open, on one rank an independent one.
package access

import (
	"cmp"
	"slices"

	"github.com/iotrace/iotrace/trace"
)

// Buckets are the lowest sizes of Darshan's size histogram buckets: a
// bucket holds the sizes from its lowest to the next one's, less one.
var Buckets = [10]int64{0, 101, 1025, 10241, 102401, 1048577, 4194305, 10485761, 104857601, 1073741825}

// BucketNames are the suffixes Darshan gives the buckets
// (POSIX_SIZE_READ_0_100 …).
var BucketNames = [10]string{"0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M", "1M_4M",
	"4M_10M", "10M_100M", "100M_1G", "1G_PLUS"}

// Bucket returns the histogram bucket of an access of n bytes.
func Bucket(n int64) int {
	for i := len(Buckets) - 1; i > 0; i-- {
		if n >= Buckets[i] {
			return i
		}
	}
	return 0
}

// MaxCommonValues is how many distinct values Darshan tracks per record
// for its common-value counters (DARSHAN_COMMON_VAL_MAX_RUNTIME_COUNT).
const MaxCommonValues = 32

// Common is one of the four most common values of a record and its count.
type Common struct{ Value, Count int64 }

// Commons is the four most common values of a record, in Darshan's order:
// highest count first, ties by the larger value; unused slots are zero.
type Commons [4]Common

// add puts value v with count n into c as Darshan's
// DARSHAN_UPDATE_COMMON_VAL_COUNTERS does: with sum, n is added to the
// count c already holds for v.
func (c *Commons) add(v, n int64, sum bool) {
	if v == 0 {
		return
	}
	if !sum {
		// fast path: v is listed and its new count keeps its place
		for i := range c {
			if c[i].Value == v && c[i].Count <= n {
				if i == 0 || c[i-1].Count > n || (c[i-1].Count == n && c[i-1].Value > v) {
					c[i].Count = n
					return
				}
				break
			}
		}
	}
	total := n
	if sum {
		for _, e := range c {
			if e.Value == v {
				total += e.Count
				break
			}
		}
	}
	var out Commons
	k, i := 0, 0
	for ; i < 4; i++ {
		if c[i].Count > total || (c[i].Count == total && c[i].Value > v) {
			out[k] = c[i]
			k++
		} else {
			break
		}
	}
	if k == 4 {
		return
	}
	out[k] = Common{v, total}
	k++
	for ; k < 4 && i < 4; i++ {
		if c[i].Value != v {
			out[k] = c[i]
			k++
		}
	}
	*c = out
}

// merge reduces two records' common values as Darshan's shared-record
// reduction does: counts of values both hold are summed, then both sets
// are put into a new one.
func mergeCommons(a, b Commons) Commons {
	for j := range a {
		for k := range b {
			if a[j].Value == b[k].Value {
				a[j].Count += b[k].Count
				b[k] = Common{}
			}
		}
	}
	var out Commons
	for _, e := range a {
		out.add(e.Value, e.Count, true)
	}
	for _, e := range b {
		out.add(e.Value, e.Count, true)
	}
	return out
}

// tracker keeps the frequencies of up to MaxCommonValues distinct values
// and the four most common of them.
type tracker struct {
	vals []Common // value and frequency, in the order first seen
	last int      // index of the last value added
	top  Commons
}

func (t *tracker) add(v int64) {
	i := -1
	if t.last < len(t.vals) && t.vals[t.last].Value == v {
		i = t.last
	} else {
		for j := range t.vals {
			if t.vals[j].Value == v {
				i = j
				break
			}
		}
	}
	if i < 0 {
		if len(t.vals) >= MaxCommonValues {
			return
		}
		t.vals = append(t.vals, Common{Value: v})
		i = len(t.vals) - 1
	}
	t.last = i
	t.vals[i].Count++
	if v != 0 {
		t.top.add(v, t.vals[i].Count, false)
	}
}

// Times are a record's first and last times and cumulative times, in
// seconds from the trace's epoch (Darshan: from the job's start).
type Times struct {
	OpenStart, ReadStart, WriteStart, CloseStart float64
	OpenEnd, ReadEnd, WriteEnd, CloseEnd         float64
	ReadTime, WriteTime, MetaTime                float64
	MaxReadTime, MaxWriteTime                    float64
	MaxReadTimeSize, MaxWriteTimeSize            int64
}

// Posix is a record of Darshan's POSIX module: one file and one rank, or
// (Rank -1) a file every rank used, reduced.
type Posix struct {
	File string
	Rank int

	Opens, Filenos, Dups, Reads, Writes, Seeks, Stats int64
	Fsyncs, Fdsyncs, RenameSources, RenameTargets     int64
	Mode                                              int64
	BytesRead, BytesWritten                           int64
	MaxByteRead, MaxByteWritten                       int64
	ConsecReads, ConsecWrites, SeqReads, SeqWrites    int64
	RWSwitches                                        int64
	FileNotAligned, FileAlignment                     int64
	SizeRead, SizeWrite                               [10]int64
	Strides, Accesses                                 Commons
	Times

	RankExtremes

	// Aligned4K, Aligned1M count the reads and writes whose offset is a
	// multiple of 4 KiB and of 1 MiB (not Darshan counters: the report's).
	Aligned4K, Aligned1M int64

	// running state
	offset, lastRead, lastWritten int64
	lastIO                        trace.Dir
	access, stride                tracker
	lastReadEnd, lastWriteEnd     float64
	lastMetaEnd                   float64
}

// MPIIO is a record of Darshan's MPI-IO module.
type MPIIO struct {
	File string
	Rank int

	IndepOpens, CollOpens                          int64
	IndepReads, IndepWrites, CollReads, CollWrites int64
	SplitReads, SplitWrites, NBReads, NBWrites     int64
	Syncs, Views, Mode                             int64
	BytesRead, BytesWritten                        int64
	RWSwitches                                     int64
	SizeReadAgg, SizeWriteAgg                      [10]int64
	Accesses                                       Commons
	Times

	RankExtremes

	lastIO                                 trace.Dir
	access                                 tracker
	lastReadEnd, lastWriteEnd, lastMetaEnd float64
}

// Stdio is a record of Darshan's STDIO module (fopen, fread, fwrite,
// fseek, fflush, fclose on a file).
type Stdio struct {
	File string
	Rank int

	Opens, Fdopens, Reads, Writes, Seeks, Flushes int64
	BytesRead, BytesWritten                       int64
	MaxByteRead, MaxByteWritten                   int64
	Times
}

// Options configure a Tracker.
type Options struct {
	// FileAlignment is the file system's block size, the alignment
	// FileNotAligned counts against (Darshan: the block size of the file
	// system the file is on); 0 means 4096.
	FileAlignment int64
	// Alignment, when set, gives a file's alignment instead (as a Darshan
	// log records it per file).
	Alignment func(file string) int64
	// Mode, when set, gives the mode Darshan records for a file (an
	// importer's files are created with the log's mode).
	Mode func(file string) int64
}

// Tracker counts the calls of one rank.
type Tracker struct {
	rank      int
	opts      Options
	posix     map[string]*Posix
	mpiio     map[string]*MPIIO
	stdio     map[string]*Stdio
	lastPosix *Posix // the record of the call before: most calls are on it
}

// NewTracker returns a tracker for rank.
func NewTracker(rank int, opts Options) *Tracker {
	return &Tracker{rank: rank, opts: opts, posix: map[string]*Posix{}, mpiio: map[string]*MPIIO{}, stdio: map[string]*Stdio{}}
}

func (t *Tracker) posixRec(file string) *Posix {
	if r := t.lastPosix; r != nil && r.File == file {
		return r
	}
	r := t.posix[file]
	if r == nil {
		al := t.opts.FileAlignment
		if t.opts.Alignment != nil {
			al = t.opts.Alignment(file)
		}
		if al == 0 {
			al = 4096
		}
		r = &Posix{File: file, Rank: t.rank, FileAlignment: al, RankExtremes: RankExtremes{FastestRank: t.rank, SlowestRank: t.rank}}
		t.posix[file] = r
	}
	t.lastPosix = r
	return r
}

func (t *Tracker) mpiioRec(file string) *MPIIO {
	r := t.mpiio[file]
	if r == nil {
		r = &MPIIO{File: file, Rank: t.rank, RankExtremes: RankExtremes{FastestRank: t.rank, SlowestRank: t.rank}}
		t.mpiio[file] = r
	}
	return r
}

func secs(ns int64) float64 { return float64(ns) / 1e9 }

// noOverlap adds the part of [t1, t2] after last to *sum, as Darshan's
// DARSHAN_TIMER_INC_NO_OVERLAP.
func noOverlap(sum *float64, t1, t2 float64, last *float64) {
	if t1 > *last {
		*sum += t2 - t1
	} else {
		*sum += t2 - *last
	}
	if t2 > *last {
		*last = t2
	}
}

func first(v *float64, t float64) {
	if *v == 0 || *v > t {
		*v = t
	}
}

// Add counts event e of the tracker's rank on file (the file the call
// reached, as the caller's trace/state follower resolved it; "" for calls
// that reached none). off is the file offset of a data call (for MPI-IO
// calls, the view's offset mapped to the file), commSize the number of
// ranks of the communicator of an MPI_File_open.
func (t *Tracker) Add(file string, e *trace.Event, off int64, commSize int) {
	if file == "" || e.Ret < 0 {
		return
	}
	info := e.Op.Info()
	t1, t2 := secs(e.Start), secs(e.Start+max(e.Dur, 0))
	switch info.Class {
	case trace.ClassPOSIX, trace.ClassMeta:
		t.addPosix(file, e, info, off, t1, t2)
	case trace.ClassMPIIO:
		t.addMPIIO(file, e, info, commSize, t1, t2)
	}
}

// stdio calls are Darshan's STDIO module, not its POSIX one.
func stdio(op trace.Op) bool {
	switch op {
	case trace.OpFopen, trace.OpFclose, trace.OpFread, trace.OpFwrite, trace.OpFseek, trace.OpFflush:
		return true
	}
	return false
}

func (t *Tracker) addStdio(file string, e *trace.Event, off int64, t1, t2 float64) {
	r := t.stdio[file]
	if r == nil {
		r = &Stdio{File: file, Rank: t.rank}
		t.stdio[file] = r
	}
	switch e.Op {
	case trace.OpFopen:
		r.Opens++
		first(&r.OpenStart, t1)
		r.OpenEnd = t2
		r.MetaTime += t2 - t1
	case trace.OpFclose:
		first(&r.CloseStart, t1)
		r.CloseEnd = t2
		r.MetaTime += t2 - t1
	case trace.OpFread:
		r.Reads++
		r.BytesRead += e.Ret
		if e.Ret > 0 {
			r.MaxByteRead = max(r.MaxByteRead, off+e.Ret-1)
		}
		first(&r.ReadStart, t1)
		r.ReadEnd = t2
		r.ReadTime += t2 - t1
	case trace.OpFwrite:
		r.Writes++
		r.BytesWritten += e.Ret
		if e.Ret > 0 {
			r.MaxByteWritten = max(r.MaxByteWritten, off+e.Ret-1)
		}
		first(&r.WriteStart, t1)
		r.WriteEnd = t2
		r.WriteTime += t2 - t1
	case trace.OpFseek:
		r.Seeks++
		r.MetaTime += t2 - t1
	case trace.OpFflush:
		r.Flushes++
		r.WriteTime += t2 - t1
	}
}

func (t *Tracker) addPosix(file string, e *trace.Event, info trace.OpInfo, off int64, t1, t2 float64) {
	if stdio(e.Op) {
		t.addStdio(file, e, off, t1, t2)
		return
	}
	switch {
	case info.Dir == trace.DirRead || info.Dir == trace.DirWrite:
		r := t.posixRec(file)
		r.data(e, info.Dir, off, t1, t2)
	case info.FD == trace.FDOpen && info.NS == trace.NSOpen:
		r := t.posixRec(file)
		if t.opts.Mode != nil {
			if m := t.opts.Mode(file); m != 0 {
				r.Mode = m
			}
		} else if e.Mode != 0 {
			r.Mode = int64(e.Mode)
		}
		r.offset, r.lastRead, r.lastWritten = 0, 0, 0
		r.Opens++
		first(&r.OpenStart, t1)
		r.OpenEnd = t2
		noOverlap(&r.MetaTime, t1, t2, &r.lastMetaEnd)
	case info.FD == trace.FDDup:
		if e.Op == trace.OpFcntl && e.Flags != trace.FDupfd && e.Flags != trace.FDupfdCloexec {
			return
		}
		r := t.posixRec(file)
		r.Opens++
		r.Dups++
		first(&r.OpenStart, t1)
		r.OpenEnd = t2
		noOverlap(&r.MetaTime, t1, t2, &r.lastMetaEnd)
	case info.FD == trace.FDClose:
		r := t.posixRec(file)
		first(&r.CloseStart, t1)
		r.CloseEnd = t2
		noOverlap(&r.MetaTime, t1, t2, &r.lastMetaEnd)
	case e.Op == trace.OpLseek:
		r := t.posixRec(file)
		r.offset = e.Ret
		r.Seeks++
		noOverlap(&r.MetaTime, t1, t2, &r.lastMetaEnd)
	case info.Family == "stat" && e.Op != trace.OpAccess && e.Op != trace.OpReadlink && e.Op != trace.OpReadlinkat:
		r := t.posixRec(file)
		r.Stats++
		noOverlap(&r.MetaTime, t1, t2, &r.lastMetaEnd)
	case e.Op == trace.OpFsync:
		r := t.posixRec(file)
		r.Fsyncs++
		noOverlap(&r.WriteTime, t1, t2, &r.lastWriteEnd)
	case e.Op == trace.OpFdatasync:
		r := t.posixRec(file)
		r.Fdsyncs++
		noOverlap(&r.WriteTime, t1, t2, &r.lastWriteEnd)
	}
}

// side points at the counters of one direction (reads or writes) of a
// record: what every read or write updates, in both modules.
type side struct {
	ops, bytes, maxSize *int64
	hist                *[10]int64
	start, end, time    *float64
	maxTime, lastEnd    *float64
}

// call counts a call of n bytes from t1 to t2.
func (s side) call(n int64, t1, t2 float64) {
	*s.ops++
	*s.bytes += n
	s.hist[Bucket(n)]++
	first(s.start, t1)
	*s.end = t2
	if el := t2 - t1; *s.maxTime < el {
		*s.maxTime, *s.maxSize = el, n
	}
	noOverlap(s.time, t1, t2, s.lastEnd)
}

func (r *Posix) side(dir trace.Dir) side {
	if dir == trace.DirRead {
		return side{&r.Reads, &r.BytesRead, &r.MaxReadTimeSize, &r.SizeRead, &r.ReadStart, &r.ReadEnd, &r.ReadTime, &r.MaxReadTime, &r.lastReadEnd}
	}
	return side{&r.Writes, &r.BytesWritten, &r.MaxWriteTimeSize, &r.SizeWrite, &r.WriteStart, &r.WriteEnd, &r.WriteTime, &r.MaxWriteTime, &r.lastWriteEnd}
}

func (r *Posix) data(e *trace.Event, dir trace.Dir, off int64, t1, t2 float64) {
	n := e.Ret
	last, seqs, consecs, maxByte := &r.lastRead, &r.SeqReads, &r.ConsecReads, &r.MaxByteRead
	if dir == trace.DirWrite {
		last, seqs, consecs, maxByte = &r.lastWritten, &r.SeqWrites, &r.ConsecWrites, &r.MaxByteWritten
	}
	if off > *last {
		*seqs++
	}
	if off == *last+1 {
		*consecs++
	}
	var stride int64
	if off > 0 && off > *last && *last != 0 {
		stride = off - *last - 1
	}
	*last = off + n - 1
	r.offset = off + n
	*maxByte = max(*maxByte, off+n-1)
	r.side(dir).call(n, t1, t2)
	if r.lastIO != trace.DirNone && r.lastIO != dir {
		r.RWSwitches++
	}
	r.lastIO = dir
	r.access.add(n)
	r.Accesses = r.access.top
	r.stride.add(stride)
	r.Strides = r.stride.top
	if r.FileAlignment > 0 && off%r.FileAlignment != 0 {
		r.FileNotAligned++
	}
	if off%4096 == 0 {
		r.Aligned4K++
	}
	if off%(1<<20) == 0 {
		r.Aligned1M++
	}
}

func (t *Tracker) addMPIIO(file string, e *trace.Event, info trace.OpInfo, commSize int, t1, t2 float64) {
	r := t.mpiioRec(file)
	switch {
	case e.Op == trace.OpMPIFileOpen:
		if commSize > 1 {
			r.CollOpens++
		} else {
			r.IndepOpens++
		}
		if e.Flags != 0 {
			r.Mode = int64(e.Flags)
		}
		first(&r.OpenStart, t1)
		r.OpenEnd = t2
		noOverlap(&r.MetaTime, t1, t2, &r.lastMetaEnd)
	case e.Op == trace.OpMPIFileClose:
		first(&r.CloseStart, t1)
		r.CloseEnd = t2
		noOverlap(&r.MetaTime, t1, t2, &r.lastMetaEnd)
	case e.Op == trace.OpMPIFileSync:
		r.Syncs++
		noOverlap(&r.WriteTime, t1, t2, &r.lastWriteEnd)
	case e.Op == trace.OpMPIFileSetView:
		r.Views++
		noOverlap(&r.MetaTime, t1, t2, &r.lastMetaEnd)
	case info.Dir == trace.DirRead || info.Dir == trace.DirWrite:
		n := e.Ret
		nb := e.Op == trace.OpMPIFileIreadAt || e.Op == trace.OpMPIFileIwriteAt ||
			e.Op == trace.OpMPIFileIread || e.Op == trace.OpMPIFileIwrite
		sd := side{&r.IndepReads, &r.BytesRead, &r.MaxReadTimeSize, &r.SizeReadAgg, &r.ReadStart, &r.ReadEnd, &r.ReadTime, &r.MaxReadTime, &r.lastReadEnd}
		coll, nbs := &r.CollReads, &r.NBReads
		if info.Dir == trace.DirWrite {
			sd = side{&r.IndepWrites, &r.BytesWritten, &r.MaxWriteTimeSize, &r.SizeWriteAgg, &r.WriteStart, &r.WriteEnd, &r.WriteTime, &r.MaxWriteTime, &r.lastWriteEnd}
			coll, nbs = &r.CollWrites, &r.NBWrites
		}
		switch {
		case nb:
			sd.ops = nbs
		case info.Collective:
			sd.ops = coll
		}
		sd.call(n, t1, t2)
		if r.lastIO != trace.DirNone && r.lastIO != info.Dir {
			r.RWSwitches++
		}
		r.lastIO = info.Dir
		r.access.add(n)
		r.Accesses = r.access.top
	}
}

// StdioRecords returns the tracker's STDIO records, by file.
func (t *Tracker) StdioRecords() []*Stdio {
	var s []*Stdio
	for _, r := range t.stdio {
		s = append(s, r)
	}
	slices.SortFunc(s, func(a, b *Stdio) int { return cmp.Compare(a.File, b.File) })
	return s
}

// Records returns the tracker's records, by file.
func (t *Tracker) Records() ([]*Posix, []*MPIIO) {
	var p []*Posix
	for _, r := range t.posix {
		p = append(p, r)
	}
	var m []*MPIIO
	for _, r := range t.mpiio {
		m = append(m, r)
	}
	slices.SortFunc(p, func(a, b *Posix) int { return cmp.Compare(a.File, b.File) })
	slices.SortFunc(m, func(a, b *MPIIO) int { return cmp.Compare(a.File, b.File) })
	for _, r := range p {
		r.set(r.BytesRead+r.BytesWritten, r.ReadTime+r.WriteTime+r.MetaTime)
	}
	for _, r := range m {
		r.set(r.BytesRead+r.BytesWritten, r.ReadTime+r.WriteTime+r.MetaTime)
	}
	return p, m
}

// RankExtremes are the fastest and slowest ranks of a shared record (one
// that several ranks' records were reduced into), by read + write + meta
// time, with their bytes and times. A rank's own record is both.
type RankExtremes struct {
	FastestRank, SlowestRank           int
	FastestRankBytes, SlowestRankBytes int64
	FastestRankTime, SlowestRankTime   float64
}

// set makes a rank's own record its fastest and slowest.
func (x *RankExtremes) set(bytes int64, seconds float64) {
	x.FastestRankBytes, x.SlowestRankBytes = bytes, bytes
	x.FastestRankTime, x.SlowestRankTime = seconds, seconds
}

// reduce keeps the faster and the slower of x's and b's ranks.
func (x *RankExtremes) reduce(b *RankExtremes) {
	if b.FastestRankTime < x.FastestRankTime {
		x.FastestRank, x.FastestRankBytes, x.FastestRankTime = b.FastestRank, b.FastestRankBytes, b.FastestRankTime
	}
	if b.SlowestRankTime > x.SlowestRankTime {
		x.SlowestRank, x.SlowestRankBytes, x.SlowestRankTime = b.SlowestRank, b.SlowestRankBytes, b.SlowestRankTime
	}
}
