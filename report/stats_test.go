package report

import (
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

const us, ms = int64(1000), int64(1000000)

// handTrace is a small trace whose numbers are worked out by hand in
// TestComputeByHand.
//
// rank 0: open /d/a → fd 3; region "dump" around write and pwrite of 1 MiB
// (2 ms each) and a region "inner" around an fsync; lseek, close, a
// barrier, and 12 bytes to stdout.
// rank 1: openat /d/b → fd 4, dup 4 → 7, pread 4 KiB via 7, a failed open
// of /d/missing, close 7, a short read via 4 (100 of 4096 bytes), a failed
// write via 4, close 4, a bcast of 24 bytes, a barrier.
// rank 2: one long barrier (9 ms).
// rank 3: MPI-IO open, write_at_all, close of /d/c in a region "dump"
// that is never closed.
func handTrace() *trace.MemTrace {
	m := trace.NewMemTrace()
	a, b, c := m.Paths.Intern("/d/a"), m.Paths.Intern("/d/b"), m.Paths.Intern("/d/c")
	miss, dump, inner := m.Paths.Intern("/d/missing"), m.Paths.Intern("dump"), m.Paths.Intern("inner")
	m.Add(
		trace.Event{Rank: 0, Op: trace.OpOpen, Path: a, Ret: 3, Flags: trace.OWronly | trace.OCreat, Start: 0, Dur: 1 * us},
		trace.Event{Rank: 0, Op: trace.OpRegionBegin, Path: dump, Start: 2 * us},
		trace.Event{Rank: 0, Op: trace.OpWrite, FD: 3, Size: 1 << 20, Ret: 1 << 20, Start: 3 * us, Dur: 2 * ms},
		trace.Event{Rank: 0, Op: trace.OpPwrite, FD: 3, Offset: 1 << 20, Size: 1 << 20, Ret: 1 << 20, Start: 3*us + 2*ms, Dur: 2 * ms},
		trace.Event{Rank: 0, Op: trace.OpRegionBegin, Path: inner, Start: 4100 * us},
		trace.Event{Rank: 0, Op: trace.OpFsync, FD: 3, Start: 4200 * us, Dur: 100 * us},
		trace.Event{Rank: 0, Op: trace.OpRegionEnd, Path: inner, Start: 4400 * us},
		trace.Event{Rank: 0, Op: trace.OpRegionEnd, Path: dump, Start: 5 * ms},
		trace.Event{Rank: 0, Op: trace.OpLseek, FD: 3, Start: 6 * ms, Dur: 500},
		trace.Event{Rank: 0, Op: trace.OpClose, FD: 3, Start: 7 * ms, Dur: 2 * us},
		trace.Event{Rank: 0, Op: trace.OpMPIBarrier, Start: 8 * ms, Dur: 5 * us},
		trace.Event{Rank: 0, Op: trace.OpWrite, FD: 1, Size: 12, Ret: 12, Start: 8100 * us, Dur: 1 * us},

		trace.Event{Rank: 1, Op: trace.OpOpenat, FD: -100, Path: b, Ret: 4, Start: 0, Dur: 3 * us},
		trace.Event{Rank: 1, Op: trace.OpDup, FD: 4, Ret: 7, Start: 4 * us, Dur: 100},
		trace.Event{Rank: 1, Op: trace.OpPread, FD: 7, Offset: 8192, Size: 4096, Ret: 4096, Start: 5 * us, Dur: 10 * us},
		trace.Event{Rank: 1, Op: trace.OpOpen, Path: miss, Ret: -2, Start: 20 * us, Dur: 2 * us},
		trace.Event{Rank: 1, Op: trace.OpClose, FD: 7, Start: 30 * us, Dur: 1 * us},
		trace.Event{Rank: 1, Op: trace.OpRead, FD: 4, Size: 4096, Ret: 100, Start: 40 * us, Dur: 5 * us},
		trace.Event{Rank: 1, Op: trace.OpWrite, FD: 4, Size: 512, Ret: -9, Start: 50 * us, Dur: 3 * us},
		trace.Event{Rank: 1, Op: trace.OpClose, FD: 4, Start: 60 * us, Dur: 1 * us},
		trace.Event{Rank: 1, Op: trace.OpMPIBcast, Bytes: 24, Start: 70 * us, Dur: 7 * us},
		trace.Event{Rank: 1, Op: trace.OpMPIBarrier, Start: 8 * ms, Dur: 1 * us},

		trace.Event{Rank: 2, Op: trace.OpMPIBarrier, Start: 0, Dur: 9 * ms},

		trace.Event{Rank: 3, Op: trace.OpRegionBegin, Path: dump, Start: 1 * ms},
		trace.Event{Rank: 3, Op: trace.OpMPIFileOpen, Path: c, FD: 1, Start: 1 * ms, Dur: 20 * us},
		trace.Event{Rank: 3, Op: trace.OpMPIFileWriteAtAll, FD: 1, Size: 8192, Ret: 8192, Start: 1100 * us, Dur: 300 * us},
		trace.Event{Rank: 3, Op: trace.OpMPIFileClose, FD: 1, Start: 1500 * us, Dur: 4 * us},
	)
	return m
}

func compute(t *testing.T, tr trace.Trace, opts Options) *Stats {
	t.Helper()
	s, err := Compute(tr, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func findRow(t *testing.T, rows []*OpRow, op string) *OpRow {
	t.Helper()
	for _, r := range rows {
		if r.Op == op {
			return r
		}
	}
	t.Fatalf("no row %q", op)
	return nil
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// within reports whether got is within the histogram's error of want.
func within(got, want int64) bool { return math.Abs(float64(got-want)) <= float64(want)*0.004+1 }

func opNames(rows []*OpRow) string {
	var s []string
	for _, r := range rows {
		s = append(s, r.Op)
	}
	return strings.Join(s, " ")
}

func TestComputeByHand(t *testing.T) {
	s := compute(t, handTrace(), Options{})
	if s.Ranks != 4 || s.Events != 27 || s.Start != 0 || s.End != 9*ms || s.Duration() != 0.009 {
		t.Fatalf("header: %d ranks %d events %d..%d", s.Ranks, s.Events, s.Start, s.End)
	}
	want := "open close read write seek sync dup MPI_File_write_at_all MPI_File_open MPI_File_close MPI_Barrier MPI_Bcast"
	if got := opNames(s.Ops); got != want {
		t.Fatalf("rows %q\nwant %q", got, want)
	}
	type exp struct {
		count, total, bytes, errors int64
	}
	for op, w := range map[string]exp{
		"open":                  {3, 6 * us, 0, 1},
		"close":                 {3, 4 * us, 0, 0},
		"read":                  {2, 15 * us, 4196, 0},
		"write":                 {4, 4*ms + 4*us, 2<<20 + 12, 1},
		"seek":                  {1, 500, 0, 0},
		"sync":                  {1, 100 * us, 0, 0},
		"dup":                   {1, 100, 0, 0},
		"MPI_File_open":         {1, 20 * us, 0, 0},
		"MPI_File_write_at_all": {1, 300 * us, 8192, 0},
		"MPI_File_close":        {1, 4 * us, 0, 0},
		"MPI_Barrier":           {3, 9*ms + 6*us, 0, 0},
		"MPI_Bcast":             {1, 7 * us, 24, 0},
	} {
		r := findRow(t, s.Ops, op)
		if r.Count != w.count || r.Total != w.total || r.Bytes != w.bytes || r.Errors != w.errors {
			t.Errorf("%s: count %d total %d bytes %d errors %d, want %+v", op, r.Count, r.Total, r.Bytes, r.Errors, w)
		}
		// Time per rank divides by all 4 ranks, whoever made the calls.
		if !near(r.AvgPerRank(), float64(w.total)/1e9/4) {
			t.Errorf("%s: time per rank %g", op, r.AvgPerRank())
		}
	}
	// Bandwidth: bytes ÷ 10^6 ÷ time per rank.
	if rd := findRow(t, s.Ops, "read"); !near(rd.Bandwidth(), 4196/1e6/(15e-6/4)) {
		t.Errorf("read bandwidth %g", rd.Bandwidth())
	}
	w := findRow(t, s.Ops, "write")
	if !near(w.Bandwidth(), float64(2<<20+12)/1e6/(4.004e-3/4)) {
		t.Errorf("write bandwidth %g", w.Bandwidth())
	}
	if findRow(t, s.Ops, "open").Bandwidth() != 0 {
		t.Error("open has a bandwidth")
	}
	// Latencies of write: 1 µs, 3 µs, 2 ms, 2 ms.
	if w.Lat.Min() != 1*us || w.Lat.Max() != 2*ms || !within(w.Lat.Quantile(0.5), 3*us) || !within(w.Lat.Quantile(0.99), 2*ms) {
		t.Errorf("write min %d p50 %d p99 %d max %d", w.Lat.Min(), w.Lat.Quantile(0.5), w.Lat.Quantile(0.99), w.Lat.Max())
	}
	tot := s.Total
	if tot.Count != 22 || tot.Bytes != 4196+2<<20+12+8192 || tot.Errors != 2 || tot.Total != 13_466_600 || tot.Lat.Count() != 22 {
		t.Errorf("TOTAL %+v", tot)
	}
	// Sizes: requested sizes, exact (few distinct); barriers have none.
	var sizes []string
	for _, r := range s.Sizes {
		if !r.Exact() {
			t.Errorf("bucket %+v", r)
		}
		sizes = append(sizes, r.Op+":"+itoa(r.Min)+"×"+itoa(r.Count))
	}
	if got := strings.Join(sizes, " "); got != "read:4096×2 write:12×1 write:512×1 write:1048576×2 MPI_File_write_at_all:8192×1 MPI_Bcast:24×1" {
		t.Errorf("sizes %s", got)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestDetail(t *testing.T) {
	s := compute(t, handTrace(), Options{Detail: true})
	want := "open openat close pread read write pwrite lseek fsync dup MPI_File_write_at_all MPI_File_open MPI_File_close MPI_Barrier MPI_Bcast"
	if got := opNames(s.Ops); got != want {
		t.Fatalf("rows %q\nwant %q", got, want)
	}
	if r := findRow(t, s.Ops, "write"); r.Count != 3 || r.Family != "write" {
		t.Errorf("write %+v", r)
	}
	if r := findRow(t, s.Ops, "pwrite"); r.Count != 1 || r.Bytes != 1<<20 {
		t.Errorf("pwrite %+v", r)
	}
	if r := findRow(t, s.Ops, "open"); r.Count != 2 || r.Errors != 1 {
		t.Errorf("open %+v", r)
	}
}

func TestRanksAndStragglers(t *testing.T) {
	s := compute(t, handTrace(), Options{})
	type exp struct {
		events, openClose, read, write, seek, sync, mpiio, comm, io, bytes, comm_ int64
	}
	want := []exp{
		{12, 3 * us, 0, 4*ms + 1*us, 500, 100 * us, 0, 5 * us, 4*ms + 104*us + 500, 2<<20 + 12, 0},
		{10, 7*us + 100, 15 * us, 3 * us, 0, 0, 0, 8 * us, 25*us + 100, 4196, 24},
		{1, 0, 0, 0, 0, 0, 0, 9 * ms, 0, 0, 0},
		{4, 0, 0, 0, 0, 0, 324 * us, 0, 324 * us, 8192, 0},
	}
	for i, r := range s.ByRank {
		w := want[i]
		got := exp{r.Events, r.Time("open/close"), r.Time("read"), r.Time("write"), r.Time("seek"), r.Time("sync"),
			r.Time("mpi-io"), r.Time("comm"), r.IOTime(), r.Bytes(), r.CommBytes()}
		if got != w || r.Rank != uint32(i) {
			t.Errorf("rank %d: %+v\nwant    %+v", r.Rank, got, w)
		}
	}
	if s.ByRank[0].End != 8101*us || s.ByRank[3].Start != 1*ms {
		t.Errorf("rank times %d %d", s.ByRank[0].End, s.ByRank[3].Start)
	}
	// I/O times 4.1045 ms, 25.1 µs, 0, 324 µs: median 174.55 µs, MAD
	// 162 µs, so only rank 0 is above 1.5 × median and median + 3 × MAD
	// (rank 3 is above the first bound only; rank 2's long barrier is
	// communication).
	if !slices.Equal(s.Stragglers, []uint32{0}) || !s.ByRank[0].Straggler || s.ByRank[3].Straggler {
		t.Fatalf("stragglers %v", s.Stragglers)
	}

	// Eight ranks of ~1 µs, one of 5 µs.
	m := trace.NewMemTrace()
	for r := uint32(0); r < 8; r++ {
		d := 1000 + 10*int64(r)
		if r == 5 {
			d = 5000
		}
		m.Add(trace.Event{Rank: r, Op: trace.OpWrite, Size: 1, Ret: 1, Dur: d})
	}
	if s := compute(t, m, Options{}); !slices.Equal(s.Stragglers, []uint32{5}) {
		t.Fatalf("stragglers %v", s.Stragglers)
	}
	// Even ranks: no straggler; two ranks: never.
	for r := uint32(0); r < 8; r++ {
		m.Events[r][0].Dur = 1000
	}
	if s := compute(t, m, Options{}); len(s.Stragglers) != 0 {
		t.Fatalf("even ranks: stragglers %v", s.Stragglers)
	}
	two := trace.NewMemTrace()
	two.Add(trace.Event{Rank: 0, Op: trace.OpWrite, Dur: 1}, trace.Event{Rank: 1, Op: trace.OpWrite, Dur: 1000})
	if s := compute(t, two, Options{}); len(s.Stragglers) != 0 {
		t.Fatalf("two ranks: stragglers %v", s.Stragglers)
	}
}

func TestFiles(t *testing.T) {
	s := compute(t, handTrace(), Options{})
	type exp struct {
		ranks                                                       int
		opens, reads, readBytes, writes, writeBytes, other, errs, t int64
	}
	want := map[string]exp{
		"/d/a":       {1, 1, 0, 0, 2, 2 << 20, 2, 0, 4*ms + 103*us + 500},
		"/d/c":       {1, 1, 0, 0, 1, 8192, 0, 0, 324 * us},
		"/d/b":       {1, 1, 2, 4196, 1, 0, 1, 1, 23*us + 100},
		"/d/missing": {1, 1, 0, 0, 0, 0, 0, 1, 2 * us},
		"<stdout>":   {1, 0, 0, 0, 1, 12, 0, 0, 1 * us},
	}
	var order []string
	for _, f := range s.Files {
		order = append(order, f.Path)
		got := exp{f.Ranks, f.Opens(), f.Reads(), f.ReadBytes(), f.Writes(), f.WriteBytes(), f.Other(), f.Errors(), f.Time()}
		if got != want[f.Path] {
			t.Errorf("%s: %+v\nwant %+v", f.Path, got, want[f.Path])
		}
	}
	if got := strings.Join(order, " "); got != "/d/a /d/c /d/b /d/missing <stdout>" {
		t.Errorf("files in order %q", got)
	}
}

// TestDescriptors follows descriptors through dup2 onto an open one,
// close_range (and one that only sets close-on-exec), fopen, reuse of a number after close, and several ranks.
func TestDescriptors(t *testing.T) {
	m := trace.NewMemTrace()
	x, y, z := m.Paths.Intern("/x"), m.Paths.Intern("/y"), m.Paths.Intern("/z")
	rd := func(rank uint32, fd int32) trace.Event {
		return trace.Event{Rank: rank, Op: trace.OpRead, FD: fd, Size: 10, Ret: 10, Dur: 1}
	}
	m.Add(
		trace.Event{Rank: 0, Op: trace.OpOpen, Path: x, Ret: 3},
		trace.Event{Rank: 0, Op: trace.OpOpen, Path: y, Ret: 4},
		trace.Event{Rank: 0, Op: trace.OpDup2, FD: 3, Ret: 4}, // 4 now /x
		rd(0, 4),
		trace.Event{Rank: 0, Op: trace.OpCloseRange, FD: 3, Size: 10},
		rd(0, 3), // closed: unknown
		trace.Event{Rank: 0, Op: trace.OpCreat, Path: z, Ret: 3},
		rd(0, 3), // /z
		trace.Event{Rank: 0, Op: trace.OpCloseRange, FD: 0, Size: 10, Flags: trace.CloseRangeCloexec}, // closes nothing
		rd(0, 3), // still /z
		trace.Event{Rank: 0, Op: trace.OpFopen, Path: y, FD: 5},
		trace.Event{Rank: 0, Op: trace.OpFread, FD: 5, Size: 10, Ret: 10},
		rd(1, 4), // rank 1 never opened 4
		trace.Event{Rank: 1, Op: trace.OpOpen, Path: x, Ret: 9},
		rd(1, 9),
		trace.Event{Rank: 1, Op: trace.OpFstat, FD: 9},
		trace.Event{Rank: 1, Op: trace.OpStat, Path: y},
	)
	s := compute(t, m, Options{})
	got := map[string][3]int64{} // reads, ranks, other
	for _, f := range s.Files {
		got[f.Path] = [3]int64{f.Reads(), int64(f.Ranks), f.Other()}
	}
	want := map[string][3]int64{
		"/x":           {2, 2, 2}, // rank 0 via dup'ed 4, rank 1 via 9; the dup2 and the fstat
		"/y":           {1, 2, 1}, // fread via fopen's descriptor; stat by path
		"/z":           {2, 1, 0},
		"<unknown fd>": {2, 2, 0},
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: reads, ranks, other = %v, want %v", p, got[p], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("files %v", got)
	}
	if f := s.Files[slices.IndexFunc(s.Files, func(f *FileRow) bool { return f.Path == "/y" })]; f.Opens() != 2 {
		t.Errorf("/y opens %d", f.Opens())
	}
}

func TestRegions(t *testing.T) {
	s := compute(t, handTrace(), Options{})
	if len(s.Regions) != 2 || s.Regions[0].Label != "dump" || s.Regions[1].Label != "inner" {
		t.Fatalf("regions %v", s.Regions)
	}
	d, in := s.Regions[0], s.Regions[1]
	// dump: rank 0 from 2 µs to 5 ms, rank 3 from 1 ms to its last end
	// (1.504 ms) as it never closes it.
	if d.Count != 2 || d.Ranks != 2 || d.Time != 4998*us+504*us || d.Wall != 4998*us || !near(d.AvgPerRank(), 5.502e-3/4) {
		t.Errorf("dump: %+v", d)
	}
	// Inclusive: the fsync of "inner" counts for "dump" too.
	if got := opNames(d.Ops); got != "write sync MPI_File_write_at_all MPI_File_open MPI_File_close" {
		t.Errorf("dump rows %q", got)
	}
	if w := findRow(t, d.Ops, "write"); w.Count != 2 || w.Bytes != 2<<20 || w.Total != 4*ms || !within(w.Lat.Quantile(0.5), 2*ms) {
		t.Errorf("dump write %+v", w)
	}
	if in.Count != 1 || in.Ranks != 1 || in.Time != 300*us || in.Wall != 300*us || opNames(in.Ops) != "sync" {
		t.Errorf("inner: %+v", in)
	}

	// A region nested in itself counts once; an end closes the regions
	// opened inside it; an end without a begin is ignored.
	m := trace.NewMemTrace()
	L, M := m.Paths.Intern("L"), m.Paths.Intern("M")
	m.Add(
		trace.Event{Op: trace.OpRegionEnd, Path: M, Start: 0},
		trace.Event{Op: trace.OpRegionBegin, Path: L, Start: 10},
		trace.Event{Op: trace.OpRegionBegin, Path: L, Start: 20},
		trace.Event{Op: trace.OpRegionBegin, Path: M, Start: 30},
		trace.Event{Op: trace.OpWrite, Start: 40, Dur: 5},
		trace.Event{Op: trace.OpRegionEnd, Path: L, Start: 50}, // closes M and the inner L
		trace.Event{Op: trace.OpRead, Start: 60, Dur: 5},
		trace.Event{Op: trace.OpRegionEnd, Path: L, Start: 100},
	)
	s = compute(t, m, Options{})
	l, mm := s.Regions[0], s.Regions[1]
	if l.Count != 2 || l.Time != 90 || opNames(l.Ops) != "read write" || findRow(t, l.Ops, "write").Count != 1 {
		t.Errorf("L: %+v %s", l, opNames(l.Ops))
	}
	if mm.Count != 1 || mm.Time != 20 || opNames(mm.Ops) != "write" {
		t.Errorf("M: %+v", mm)
	}
}

func TestUnknownOp(t *testing.T) {
	m := trace.NewMemTrace()
	m.Add(trace.Event{Op: trace.Op(999), Dur: 5, Ret: -1}, trace.Event{Op: trace.Op(5000), Dur: 7},
		trace.Event{Op: trace.OpWrite, Size: 1, Ret: 1, Dur: 1})
	s := compute(t, m, Options{})
	if r := findRow(t, s.Ops, "unknown"); r.Count != 2 || r.Total != 12 || r.Errors != 0 || s.Ops[len(s.Ops)-1] != r {
		t.Fatalf("unknown row %+v, rows %s", r, opNames(s.Ops))
	}
	d := compute(t, m, Options{Detail: true})
	if got := opNames(d.Ops); got != "write op#5000 op#999" {
		t.Fatalf("detail rows %q", got)
	}
	if d.ByRank[0].IOTime() != 1 {
		t.Errorf("unknown ops in I/O time: %d", d.ByRank[0].IOTime())
	}
}

// TestThakurTable1 reproduces the averages of Table 1 of Thakur et al.
// (8 processors): average time per process = total time ÷ processes.
func TestThakurTable1(t *testing.T) {
	m := trace.NewMemTrace()
	rows := []struct {
		op    trace.Op
		count int
		total float64 // seconds, all processes
		avg   float64 // seconds per process, as printed
	}{
		{trace.OpOpen, 200, 31.35, 3.919}, {trace.OpClose, 200, 1.693, 0.217 /* sic: 1.693/8 = 0.212 */},
		{trace.OpRead, 49, 4.001, 0.500}, {trace.OpWrite, 536, 52.67, 6.584}, {trace.OpLseek, 1225, 0.052, 0.006},
	}
	for _, r := range rows {
		per := int64(r.total*1e9) / int64(r.count)
		for i := 0; i < r.count; i++ {
			d := per
			if i == 0 {
				d += int64(r.total*1e9) - per*int64(r.count)
			}
			m.Add(trace.Event{Rank: uint32(i % 8), Op: r.op, Dur: d})
		}
	}
	s := compute(t, m, Options{})
	if got := opNames(s.Ops); got != "open close read write seek" {
		t.Fatalf("rows %q", got)
	}
	for i, r := range s.Ops {
		want := rows[i]
		if r.Count != int64(want.count) || !near(float64(r.Total)/1e9, want.total) {
			t.Errorf("%s: %d calls, %d ns", r.Op, r.Count, r.Total)
		}
		if math.Abs(r.AvgPerRank()-want.avg) > 0.0005 && r.Op != "close" {
			t.Errorf("%s: %g per process, the paper says %g", r.Op, r.AvgPerRank(), want.avg)
		}
	}
}

// TestMemoryBounded checks that what Compute keeps does not grow with the
// number of events.
func TestMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 1.2 million events")
	}
	retained := func(calls int) uint64 {
		// randomTrace has 256 distinct sizes and measured durations.
		tr := randomTrace(2, calls)
		before := heapAlloc()
		s := compute(t, tr, Options{})
		after := heapAlloc()
		runtime.KeepAlive(s)
		return after - min(after, before)
	}
	small, large := retained(50_000), retained(500_000)
	t.Logf("retained %d bytes for 100k events, %d for 1M", small, large)
	if large > small+512<<10 {
		t.Errorf("retained memory grows with events: %d → %d bytes", small, large)
	}
}

func heapAlloc() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
