package samples

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/report"
	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/trace"
)

// stats expands a sample with nranks and params and computes its report,
// as "iotrace stats --ranks N" does.
func stats(t *testing.T, name string, nranks int, params map[string]string) *report.Stats {
	t.Helper()
	x, err := Open(name, nranks, params, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := report.Compute(x, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// opCounts returns the count of every op row.
func opCounts(st *report.Stats) map[string]int64 {
	m := map[string]int64{}
	for _, r := range st.Ops {
		m[r.Op] = r.Count
	}
	return m
}

// opRow returns the row of op, or an empty one.
func opRow(st *report.Stats, op string) *report.OpRow {
	for _, r := range st.Ops {
		if r.Op == op {
			return r
		}
	}
	return &report.OpRow{Op: op}
}

// sizes returns the exact size distribution of op: size → count.
func sizes(t *testing.T, st *report.Stats, op string) map[int64]int64 {
	t.Helper()
	m := map[int64]int64{}
	for _, r := range st.Sizes {
		if r.Op != op {
			continue
		}
		if !r.Exact() {
			t.Fatalf("%s: size bucket %d–%d, want exact sizes", op, r.Min, r.Max)
		}
		m[r.Min] = r.Count
	}
	return m
}

// commCalls sums the communication rows: Thakur et al.'s "communication
// (for I/O)".
func commCalls(st *report.Stats) int64 {
	var n int64
	for _, r := range st.Ops {
		if r.Class == trace.ClassComm {
			n += r.Count
		}
	}
	return n
}

func TestEverySampleCompiles(t *testing.T) {
	all := List()
	if len(all) == 0 {
		t.Fatal("no samples embedded")
	}
	for _, s := range all {
		if s.Ranks <= 0 {
			t.Errorf("%s: no ranks in the table of samples.go", s.Name)
		}
		if s.Summary == "" || len(s.Summary) > 100 {
			t.Errorf("%s: summary %q: the first line of the script must say what it is in at most 100 characters", s.Name, s.Summary)
		}
		if _, err := s.Compile(); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
		// Canonical formatting, so that "iotrace samples show" prints what
		// "iotrace fmt" would.
		f, err := script.Parse(s.File(), s.Source)
		if err != nil {
			t.Fatal(err)
		}
		if got := script.Format(f); string(got) != string(s.Source) {
			t.Errorf("%s is not formatted canonically (run iotrace fmt -w samples)", s.Name)
		}
	}
	// The table names only samples that exist.
	for name := range ranks {
		if _, ok := Get(name); !ok {
			t.Errorf("ranks names %s, which is not a sample", name)
		}
	}
	// The embedded files are the ones of the directory.
	onDisk, _ := filepath.Glob("*.iop")
	var names []string
	for _, s := range all {
		names = append(names, s.File())
	}
	if !slices.Equal(onDisk, names) {
		t.Errorf("embedded %v, directory has %v", names, onDisk)
	}
	if _, ok := Get("../samples/astro3d-small"); ok {
		t.Error("Get accepted a path")
	}
	if _, err := Open("nosuch", 1, nil, nil); err == nil || !strings.Contains(err.Error(), "astro3d-small") {
		t.Errorf("Open of an unknown sample: %v", err)
	}
}

// astro3dCase is one column of Thakur et al.'s Tables 1–4.
type astro3dCase struct {
	name     string
	ranks    int
	ops      map[string]int64 // Table 1 / 3: counts of the POSIX rows
	comm     int64            // communication (for I/O)
	reads    map[int64]int64  // Table 2 / 4: size → count
	writes   map[int64]int64
	readMiB  int64 // total data transferred, "≈ 24 MB": MiB, as the sizes are
	writeMiB int64
}

var astro3dCases = []astro3dCase{
	{
		name: "astro3d-small", ranks: 8,
		ops:   map[string]int64{"open": 200, "close": 200, "read": 49, "write": 536, "seek": 1225},
		comm:  5608,
		reads: map[int64]int64{24: 1, 512 << 10: 48}, writes: map[int64]int64{24: 24, 128 << 10: 128, 512 << 10: 384},
		readMiB: 24, writeMiB: 208,
	},
	{
		name: "astro3d-large", ranks: 64,
		ops:   map[string]int64{"open": 448, "close": 448, "read": 385, "write": 1030, "seek": 3235},
		comm:  109888,
		reads: map[int64]int64{24: 1, 512 << 10: 384}, writes: map[int64]int64{24: 6, 128 << 10: 256, 512 << 10: 768},
		readMiB: 192, writeMiB: 416,
	},
}

// TestAstro3dTables checks the astro3d samples against Tables 1–4 of
// Thakur et al.: every count, the size distributions, the data totals.
func TestAstro3dTables(t *testing.T) {
	for _, c := range astro3dCases {
		t.Run(c.name, func(t *testing.T) {
			s, _ := Get(c.name)
			if s.Ranks != c.ranks {
				t.Errorf("sample ranks %d, paper %d", s.Ranks, c.ranks)
			}
			st := stats(t, c.name, c.ranks, nil)
			if st.Ranks != c.ranks {
				t.Errorf("%d ranks with events, want %d", st.Ranks, c.ranks)
			}
			got := opCounts(st)
			for op, n := range c.ops {
				if got[op] != n {
					t.Errorf("%s: %d calls, paper %d", op, got[op], n)
				}
			}
			for _, r := range st.Ops {
				if r.Class != trace.ClassComm && c.ops[r.Op] == 0 {
					t.Errorf("row %s (%d calls): the paper's tables have no such operation", r.Op, r.Count)
				}
			}
			if n := commCalls(st); n != c.comm {
				t.Errorf("communication for I/O: %d calls, paper %d", n, c.comm)
			}
			if r, w := sizes(t, st, "read"), sizes(t, st, "write"); !mapsEqual(r, c.reads) || !mapsEqual(w, c.writes) {
				t.Errorf("sizes: read %v write %v, paper read %v write %v", r, w, c.reads, c.writes)
			}
			// The totals follow from the sizes; the paper rounds them to MB.
			rb, wb := opRow(st, "read").Bytes, opRow(st, "write").Bytes
			if want := weighted(c.reads); rb != want {
				t.Errorf("read %d bytes, want %d", rb, want)
			}
			if want := weighted(c.writes); wb != want {
				t.Errorf("wrote %d bytes, want %d", wb, want)
			}
			if rb>>20 != c.readMiB || wb>>20 != c.writeMiB {
				t.Errorf("data: read %d MiB, wrote %d MiB; paper ≈ %d and ≈ %d", rb>>20, wb>>20, c.readMiB, c.writeMiB)
			}
		})
	}
}

func weighted(m map[int64]int64) int64 {
	var n int64
	for size, count := range m {
		n += size * count
	}
	return n
}

func mapsEqual[K comparable](a, b map[K]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestAstro3dSameProgram: the large case is the small one with other
// parameters.
func TestAstro3dSameProgram(t *testing.T) {
	sameProgram(t, "astro3d-small", "astro3d-large")
	// And the small program run with the large case's parameters gives
	// the large case's counts.
	st := stats(t, "astro3d-small", 64, map[string]string{"nx": "256", "ny": "256", "nz": "128", "pz": "4", "iterations": "5"})
	if got := opCounts(st); got["seek"] != 3235 || commCalls(st) != 109888 {
		t.Errorf("small program with the large parameters: seek %d, comm %d", got["seek"], commCalls(st))
	}
}

// sameProgram checks that samples a and b are one program with other
// parameter values: the same parameters, and everything after them the
// same text.
func sameProgram(t *testing.T, a, b string) {
	t.Helper()
	body := func(name string) (params []string, rest string) {
		s, ok := Get(name)
		if !ok {
			t.Fatalf("no sample %s", name)
		}
		lines := strings.Split(string(s.Source), "\n")
		last := -1
		for i, l := range lines {
			if strings.HasPrefix(l, "param ") {
				name, _, _ := strings.Cut(strings.TrimPrefix(l, "param "), " ")
				params = append(params, name)
				last = i
			}
		}
		return params, strings.Join(lines[last+1:], "\n")
	}
	pa, ba := body(a)
	pb, bb := body(b)
	if !slices.Equal(pa, pb) || ba != bb {
		t.Errorf("%s.iop is no longer %s.iop with other parameters (params %v, %v)", b, a, pa, pb)
	}
}

// TestAstro3dLayout checks where the data lands: every rank writes its
// slab of every array at the place of column-major order after the header,
// and the slabs of the ranks tile each array exactly once.
func TestAstro3dLayout(t *testing.T) {
	x, err := Open("astro3d-small", 8, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	type piece struct{ off, size int64 }
	written := map[string][]piece{}
	for _, r := range x.Ranks() {
		src, err := x.Rank(r)
		if err != nil {
			t.Fatal(err)
		}
		pos := map[int32]int64{} // file position per descriptor
		path := map[int32]string{}
		opens := map[string]int{} // a file written in several dumps: its k-th version
		buf := make([]trace.Event, 256)
		for {
			n, err := src.ReadEvents(buf)
			for _, e := range buf[:n] {
				switch e.Op {
				case trace.OpOpen:
					p := src.Path(e.Path)
					pos[int32(e.Ret)], path[int32(e.Ret)] = 0, fmt.Sprintf("%s#%d", p, opens[p])
					opens[p]++
				case trace.OpLseek:
					pos[e.FD] = e.Offset
				case trace.OpWrite:
					if e.Offset != pos[e.FD] {
						t.Fatalf("rank %d: write at %d, file position %d", r, e.Offset, pos[e.FD])
					}
					written[path[e.FD]] = append(written[path[e.FD]], piece{e.Offset, e.Size})
					pos[e.FD] += e.Size
				case trace.OpRead:
					pos[e.FD] += e.Size
				}
			}
			if err != nil {
				break
			}
		}
	}
	for name, ps := range written {
		slices.SortFunc(ps, func(a, b piece) int { return int(a.off - b.off) })
		end := int64(0)
		for _, p := range ps {
			if p.off != end {
				t.Fatalf("%s: a gap or overlap at %d (next piece at %d)", name, end, p.off)
			}
			end += p.size
		}
		want := int64(24 + 6*128*128*64*4)
		if strings.HasPrefix(name, "viz") {
			want = 24 + 128*128*64
		}
		if end != want {
			t.Errorf("%s: %d bytes, want %d", name, end, want)
		}
	}
	if len(written) != 4*6 {
		t.Errorf("%d files written, want 24 (4 dumps × 6)", len(written))
	}
}

// regionOps returns, per region label, the count of each op row.
func regionOps(st *report.Stats) map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	for _, r := range st.Regions {
		m := map[string]int64{}
		for _, o := range r.Ops {
			m[o.Op] = o.Count
		}
		out[r.Label] = m
	}
	return out
}

// wantOps compares the op rows of st with want (op → count, and op →
// bytes for the ops in bytes).
func wantOps(t *testing.T, what string, st *report.Stats, want, bytes map[string]int64) {
	t.Helper()
	got := opCounts(st)
	if !mapsEqual(got, want) {
		t.Errorf("%s: ops %v\nwant %v", what, got, want)
	}
	for op, b := range bytes {
		if r := opRow(st, op); r.Bytes != b {
			t.Errorf("%s: %s moved %d bytes, want %d", what, op, r.Bytes, b)
		}
	}
}

// TestParabenchListing2: writers append 100 × 10 MiB to files of their own
// and write 100 × 10 MiB each of the shared file at level 3; readers read
// both back. The groups split the ranks (half each, or --group).
func TestParabenchListing2(t *testing.T) {
	const mib10 = 10 << 20
	for _, c := range []struct {
		ranks, writers int
		groups         map[string]string
	}{
		{4, 2, nil},
		{5, 3, nil}, // groups without a size share the ranks, the first gets one more
		{8, 6, map[string]string{"writers": "6"}},
	} {
		x, err := Open("parabench-listing2", c.ranks, nil, c.groups)
		if err != nil {
			t.Fatal(err)
		}
		st, err := report.Compute(x, report.Options{Detail: true})
		if err != nil {
			t.Fatal(err)
		}
		w, r := int64(c.writers), int64(c.ranks-c.writers)
		what := fmt.Sprintf("%d ranks, %d writers", c.ranks, c.writers)
		wantOps(t, what, st, map[string]int64{
			// append: open, write at the end, close; readers open once.
			"open": 100*w + r, "close": 100*w + r, "write": 100 * w, "read": 100 * r,
			"MPI_File_open": w + r, "MPI_File_set_view": w + r, "MPI_File_close": w + r,
			"MPI_File_write_all": 100 * w, "MPI_File_read_all": 100 * r,
			"MPI_Barrier": int64(c.ranks),
		}, map[string]int64{
			"write": 100 * w * mib10, "read": 100 * r * mib10,
			"MPI_File_write_all": 100 * w * mib10, "MPI_File_read_all": 100 * r * mib10,
		})
		regions := regionOps(st)
		if regions["write"]["write"] != 100*w || regions["pwrite"]["MPI_File_write_all"] != 100*w ||
			regions["read"]["read"] != 100*r || regions["pread"]["MPI_File_read_all"] != 100*r {
			t.Errorf("%s: regions %v", what, regions)
		}
	}
	// The events of the first writer and the first reader.
	x, _ := Open("parabench-listing2", 4, nil, nil)
	ev := func(rank uint32) []trace.Event {
		src, _ := x.Rank(rank)
		evs, err := trace.ReadAll(src)
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
	w1 := ev(1)
	var appends, off int64
	for _, e := range w1 {
		if e.Op == trace.OpWrite {
			if x.Path(e.Path) != "file.1" || e.Offset != off {
				t.Fatalf("writer 1 appends to %s at %d, want file.1 at %d", x.Path(e.Path), e.Offset, off)
			}
			off += e.Size
			appends++
		}
		if e.Op == trace.OpMPIFileSetView && (e.Offset != mib10 || e.Size != mib10 || e.Stride != 2*mib10) {
			t.Errorf("writer 1 view: disp %d block %d stride %d", e.Offset, e.Size, e.Stride)
		}
	}
	if appends != 100 {
		t.Errorf("writer 1 appended %d times", appends)
	}
	for _, e := range ev(3) {
		if e.Op == trace.OpOpen && (x.Path(e.Path) != "file.1" || e.Flags != trace.ORdwr) {
			t.Errorf("reader 1 opens %s flags %#x, want file.1 read-write", x.Path(e.Path), e.Flags)
		}
	}
}

// TestParabenchListing3: every rank writes and reads 100 MiB per level
// (0–3) and granularity (102400 × 1 KiB, 10 × 10 MiB), with the view and
// the calls of each level.
func TestParabenchListing3(t *testing.T) {
	const ranks = 4 // the paper's client nodes
	const mib100 = 100 << 20
	st := stats(t, "parabench-listing3", ranks, nil)
	perRank := int64(2 * (102400 + 10)) // two levels of each call, two granularities
	wantOps(t, "listing 3", st, map[string]int64{
		"MPI_File_write": ranks * perRank, "MPI_File_write_all": ranks * perRank,
		"MPI_File_read": ranks * perRank, "MPI_File_read_all": ranks * perRank,
		"MPI_File_open": ranks * 16, "MPI_File_set_view": ranks * 16, "MPI_File_close": ranks * 16,
		"MPI_Barrier": ranks * 4,
	}, map[string]int64{
		"MPI_File_write": ranks * 4 * mib100, "MPI_File_write_all": ranks * 4 * mib100,
		"MPI_File_read": ranks * 4 * mib100, "MPI_File_read_all": ranks * 4 * mib100,
	})
	regions := regionOps(st)
	if len(regions) != 16 {
		t.Errorf("%d regions, want 16", len(regions))
	}
	for _, g := range []struct {
		name string
		n    int64
	}{{"102400*1k", 102400}, {"10*10m", 10}} {
		for level := 0; level < 4; level++ {
			call := map[bool]string{false: "", true: "_all"}[level%2 == 1]
			w := regions[fmt.Sprintf("Write %s L%d", g.name, level)]
			r := regions[fmt.Sprintf("Read %s L%d", g.name, level)]
			if w["MPI_File_write"+call] != ranks*g.n || r["MPI_File_read"+call] != ranks*g.n || len(w) != 4 || len(r) != 4 {
				t.Errorf("%s level %d: write region %v, read region %v", g.name, level, w, r)
			}
		}
	}
	// The views: contiguous levels give rank i the i-th 100 MiB of the
	// file, non-contiguous ones every nranks-th element.
	x, _ := Open("parabench-listing3", ranks, map[string]string{"fine": "4"}, nil)
	src, _ := x.Rank(2)
	evs, err := trace.ReadAll(src)
	if err != nil {
		t.Fatal(err)
	}
	var views []string
	for _, e := range evs {
		if e.Op == trace.OpMPIFileSetView {
			views = append(views, fmt.Sprintf("%s %d/%d/%d", x.Path(e.Path), e.Offset, e.Size, e.Stride))
		}
	}
	want := []string{
		"lvl0 8192/0/0", "lvl1 8192/0/0", "lvl2 2048/1024/4096", "lvl3 2048/1024/4096", // write, 4 × 1 KiB
		"lvl0 8192/0/0", "lvl1 8192/0/0", "lvl2 2048/1024/4096", "lvl3 2048/1024/4096", // read
		"lvl0 209715200/0/0", "lvl1 209715200/0/0", "lvl2 20971520/10485760/41943040", "lvl3 20971520/10485760/41943040",
		"lvl0 209715200/0/0", "lvl1 209715200/0/0", "lvl2 20971520/10485760/41943040", "lvl3 20971520/10485760/41943040",
	}
	if !slices.Equal(views, want) {
		t.Errorf("views of rank 2:\n%v\nwant\n%v", views, want)
	}
}

// beffPattern is a row of Table 2 of Rabenseifner and Koniges (2001):
// pattern number, type, chunk l, memory buffer L, time units U.
type beffPattern struct {
	n, typ int
	l, L   int64
	U      int64
}

// beffTable is Table 2 with MPART = max(2 MB, 1 GiB / 128) = 8 MiB (the
// sample's default memory of 1 GiB per process). Patterns 33 and 42 fill
// up the segments (U = 0, size given by the run).
func beffTable() []beffPattern {
	const k, m, mpart = 1 << 10, 1 << 20, 8 << 20
	t := []beffPattern{
		{0, 0, m, m, 0}, {1, 0, mpart, mpart, 4}, {2, 0, m, 2 * m, 4}, {3, 0, m, m, 4}, {4, 0, 32 * k, m, 2},
		{5, 0, k, m, 2}, {6, 0, 32*k + 8, m + 256, 2}, {7, 0, k + 8, m + 8*k, 2}, {8, 0, m + 8, m + 8, 2},
	}
	chunks := []int64{m, mpart, m, 32 * k, k, 32*k + 8, k + 8, m + 8}
	u1 := []int64{0, 4, 2, 1, 1, 1, 1, 2}
	u2 := []int64{0, 2, 2, 1, 1, 1, 1, 2}
	for i, l := range chunks {
		t = append(t, beffPattern{9 + i, 1, l, l, u1[i]})
	}
	for typ, first := range []int{17, 25, 34} {
		for i, l := range chunks {
			t = append(t, beffPattern{first + i, 2 + typ, l, l, u2[i]})
		}
	}
	return t
}

const mpiModeUniqueOpen = 32 // MPI_MODE_UNIQUE_OPEN

// beffRun is what one rank did in one pattern region of one access method.
type beffRun struct {
	calls      int64
	sizes      map[int64]int64 // data call sizes
	ops        map[trace.Op]int64
	start, end int64
	view       [3]int64 // disp, block, stride of the last set_view before or in it
}

// beffRuns expands beffio.iop and returns rank r's pattern runs by
// "METHOD pattern N", and the open flags by "METHOD type N".
func beffRuns(t *testing.T, x trace.Trace, r uint32) (map[string]*beffRun, map[string]uint32) {
	t.Helper()
	src, err := x.Rank(r)
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]*beffRun{}
	flags := map[string]uint32{}
	var cur *beffRun
	var typeLabel string
	var view [3]int64
	buf := make([]trace.Event, 1024)
	for {
		n, err := src.ReadEvents(buf)
		for _, e := range buf[:n] {
			switch {
			case e.Op == trace.OpRegionBegin:
				label := strings.TrimPrefix(src.Path(e.Path), "b_eff_io ")
				if strings.Contains(label, " pattern ") {
					method, num, _ := strings.Cut(label, " type ")
					_, num, _ = strings.Cut(num, " pattern ")
					cur = &beffRun{sizes: map[int64]int64{}, ops: map[trace.Op]int64{}, start: e.Start, view: view}
					runs[method+" pattern "+num] = cur
				} else {
					typeLabel = label
				}
			case e.Op == trace.OpRegionEnd:
				if cur != nil {
					cur.end = e.Start
				}
				cur = nil
			case e.Op == trace.OpMPIFileOpen:
				flags[typeLabel] = e.Flags
			case e.Op == trace.OpMPIFileSetView:
				view = [3]int64{e.Offset, e.Size, e.Stride}
				if cur != nil {
					cur.view = view
				}
			case cur != nil:
				cur.ops[e.Op]++
				if e.Op.Dir() != trace.DirNone {
					cur.calls++
					cur.sizes[e.Size]++
				}
			}
		}
		if err != nil {
			break
		}
	}
	return runs, flags
}

// TestBeffIOPatternTable pins beffio.iop to Table 2: the types, the chunk
// and buffer sizes, the time units (each pattern runs for T/3 · U/ΣU of
// the scheduled time, at least once), the calls of each type, the segments
// of types 3 and 4, and the flags of the three access methods.
func TestBeffIOPatternTable(t *testing.T) {
	table := beffTable()
	var sumU int64
	for _, p := range table {
		sumU += p.U
	}
	if sumU != 64 {
		t.Fatalf("ΣU = %d in the test's table", sumU)
	}
	const ranks = 2
	T := int64(3e9)
	x, err := Open("beffio", ranks, map[string]string{"T": "3s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	runs, flags := beffRuns(t, x, 1)
	wantOp := map[int]trace.Op{0: trace.OpMPIFileWriteAll, 1: trace.OpMPIFileWriteOrdered, 2: trace.OpMPIFileWrite,
		3: trace.OpMPIFileWrite, 4: trace.OpMPIFileWriteAll}
	readOp := map[trace.Op]trace.Op{trace.OpMPIFileWriteAll: trace.OpMPIFileReadAll, trace.OpMPIFileWriteOrdered: trace.OpMPIFileReadOrdered,
		trace.OpMPIFileWrite: trace.OpMPIFileRead}
	reps := map[int]int64{} // pattern → calls in the first write
	for _, method := range []string{"first write", "rewrite", "read"} {
		var done [3]int64 // bytes per rank of the earlier patterns of types 0–2
		for _, p := range table {
			run := runs[fmt.Sprintf("%s pattern %d", method, p.n)]
			if run == nil {
				t.Fatalf("%s: no region for pattern %d", method, p.n)
			}
			op := wantOp[p.typ]
			if method == "read" {
				op = readOp[op]
			}
			if run.ops[op] != run.calls || len(run.sizes) != 1 || run.sizes[p.L] != run.calls {
				t.Errorf("%s pattern %d: calls %v sizes %v, want %s of %d bytes", method, p.n, run.ops, run.sizes, op, p.L)
			}
			if method == "first write" {
				reps[p.n] = run.calls
			} else if run.calls != reps[p.n] {
				t.Errorf("%s pattern %d: %d calls, the first write made %d", method, p.n, run.calls, reps[p.n])
			}
			if p.typ >= 3 {
				if run.calls != reps[p.n-8-9*(p.typ-3)] {
					t.Errorf("%s pattern %d: %d calls, want as many as type 2's pattern %d", method, p.n, run.calls, p.n-8-9*(p.typ-3))
				}
				continue
			}
			// Time-driven: at least once; U = 0 exactly once; otherwise as
			// long as T/3 · U/64, give or take the last iteration.
			budget := T * p.U / 64 / 3
			took := run.end - run.start
			if p.U == 0 && run.calls != 1 || run.calls < 1 || p.U > 0 && (took < budget || took > budget+budget/run.calls*2+1e6) {
				t.Errorf("%s pattern %d (U = %d): %d calls in %d ns, budget %d ns", method, p.n, p.U, run.calls, took, budget)
			}
			// Type 0: a view of chunks l, every nranks-th, after the
			// earlier patterns.
			if p.typ == 0 && run.view != [3]int64{ranks*done[0] + p.l, p.l, ranks * p.l} {
				t.Errorf("%s pattern %d: view %v", method, p.n, run.view)
			}
			done[p.typ] += run.calls * p.L
		}
		// Types 3 and 4: one segment per rank, type 2's bytes rounded up
		// to a MiB, filled up by patterns 33 and 42.
		used := done[2]
		segment := (used + 1<<20 - 1) >> 20 << 20
		for _, fill := range []int{33, 42} {
			run := runs[fmt.Sprintf("%s pattern %d", method, fill)]
			if run.view != [3]int64{segment, 0, 0} || run.calls != 1 || run.sizes[segment-used] != 1 {
				t.Errorf("%s pattern %d: view %v, sizes %v; want the segment at %d filled up by %d bytes",
					method, fill, run.view, run.sizes, segment, segment-used)
			}
		}
	}
	for typ := 0; typ < 5; typ++ {
		ty := fmt.Sprintf(" type %d", typ)
		if flags["first write"+ty] != trace.MPIModeCreate|trace.MPIModeWronly|mpiModeUniqueOpen ||
			flags["rewrite"+ty] != trace.MPIModeWronly|mpiModeUniqueOpen || flags["read"+ty] != trace.MPIModeRdonly|mpiModeUniqueOpen {
			t.Errorf("type %d: open flags %v", typ, flags)
		}
	}
	// The b_eff_io view finds every type of every access method.
	st, err := report.Compute(x, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.BeffIO()
	if err != nil || len(b.Missing) != 0 || b.Value <= 0 {
		t.Fatalf("b_eff_io of the expansion: %v, %+v", err, b)
	}
}

// TestBeffIOWrap runs beffio.iop with a decider that lets the rewrite and
// the read run longer than the first write (3, 5 and 7 iterations per
// pattern): they must go back to the start of each pattern's data and never
// read or write past what the first write wrote.
func TestBeffIOWrap(t *testing.T) {
	s, _ := Get("beffio")
	p, err := s.Compile()
	if err != nil {
		t.Fatal(err)
	}
	in, err := p.Instantiate(script.Config{Ranks: 1})
	if err != nil {
		t.Fatal(err)
	}
	loops := 0
	dec := script.DeciderFunc(func(c script.LoopCheck) (bool, error) {
		if c.Iter == 0 {
			loops++
		}
		pass := (loops - 1) / 25 // 25 time-driven loops per access method
		return c.Iter < []int64{3, 5, 7}[pass], nil
	})
	paths := trace.NewPaths()
	src, err := in.Source(0, paths, dec)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := trace.ReadAll(src)
	if err != nil {
		t.Fatal(err)
	}
	if loops != 75 {
		t.Fatalf("%d time-driven loops, want 75", loops)
	}
	// Per pattern of type 2, the data of the first write; later passes stay
	// inside.
	start, extent := map[string]int64{}, map[string]int64{}
	pass := map[string]int{}
	var region string
	seeks := map[string]int{}
	for _, e := range evs {
		path := paths.Lookup(e.Path)
		switch {
		case e.Op == trace.OpRegionBegin:
			region = paths.Lookup(e.Path)
		case e.Op == trace.OpMPIFileOpen:
			pass[path]++
		case e.Op == trace.OpMPIFileSeek || e.Op == trace.OpMPIFileSeekShared:
			seeks[region]++
		case e.Op.Dir() != trace.DirNone && strings.HasPrefix(path, "beff_io.2"):
			// The pattern's data: [start, end) of its first write.
			_, pat, _ := strings.Cut(region, " type ")
			end := e.Offset + e.Size
			if pass[path] == 1 {
				if _, ok := extent[pat]; !ok {
					start[pat] = e.Offset
				}
				extent[pat] = max(extent[pat], end)
			} else if e.Offset < start[pat] || end > extent[pat] {
				t.Errorf("%s pass %d: %s at %d+%d outside the pattern's data [%d, %d)", region, pass[path], e.Op, e.Offset, e.Size, start[pat], extent[pat])
			}
		}
	}
	// Type 2, pattern 21 (1 KiB): the rewrite seeks to the pattern's start
	// before it and after its 3rd iteration; the read before it and after
	// its 3rd and 6th. Type 0 seeks only to wrap.
	for label, want := range map[string]int{
		"b_eff_io first write type 2 pattern 21": 0, "b_eff_io rewrite type 2 pattern 21": 2, "b_eff_io read type 2 pattern 21": 3,
		"b_eff_io rewrite type 0 pattern 5": 1, "b_eff_io read type 0 pattern 5": 2, "b_eff_io read type 1 pattern 13": 3,
	} {
		if seeks[label] != want {
			t.Errorf("%s: %d seeks, want %d", label, seeks[label], want)
		}
	}
	if len(extent) != 8 || extent["2 pattern 24"] == 0 {
		t.Errorf("type 2's patterns: %v", extent)
	}
}

// btioClasses are the BTIO classes of Isaila et al. §7.2: grid side, bytes
// of one I/O step (40·N³: 5 doubles per point) and the paper's totals of 40
// steps in MB. (The paper's text gives 42.2 MB per step for class B, which
// its own total contradicts: 1697.93 / 40 = 42.45 MB.)
var btioClasses = []struct {
	name    string
	n       int64
	step    int64
	totalMB float64
}{
	{"btio-a", 64, 10485760, 419.43},
	{"btio-b", 102, 42448320, 1697.93},
	{"btio-c", 162, 170061120, 6802.44},
}

// TestBTIOBytesPerStep: 40 write steps and 40 read steps of 40·N³ bytes on
// 9 processes (the default square), the paper's 10.5 / 42.4 / 170 MB, and
// totals of 419.43 / 1697.93 / 6802.44 MB.
func TestBTIOBytesPerStep(t *testing.T) {
	for i, c := range btioClasses {
		if i > 0 {
			sameProgram(t, btioClasses[0].name, c.name)
		}
		s, _ := Get(c.name)
		if s.Ranks != 9 {
			t.Errorf("%s: %d ranks, want 9", c.name, s.Ranks)
		}
		if c.step != 40*c.n*c.n*c.n || math.Abs(float64(40*c.step)/1e6-c.totalMB) > 0.005 {
			t.Fatalf("%s: the test's numbers disagree with the paper", c.name)
		}
		st := stats(t, c.name, 9, nil)
		regions := 0
		for _, r := range st.Regions {
			var k int
			var dir string
			if n, _ := fmt.Sscanf(r.Label, "%s step %d", &dir, &k); n != 2 {
				continue
			}
			regions++
			op := map[string]string{"write": "MPI_File_write_all", "read": "MPI_File_read_all"}[dir]
			var bytes int64
			for _, o := range r.Ops {
				if o.Op == op {
					bytes = o.Bytes
				}
			}
			if bytes != c.step || r.Ranks != 9 {
				t.Errorf("%s %s: %d bytes on %d ranks, want %d", c.name, r.Label, bytes, r.Ranks, c.step)
			}
		}
		if regions != 80 {
			t.Errorf("%s: %d step regions, want 40 writes and 40 reads", c.name, regions)
		}
		if w, r := opRow(st, "MPI_File_write_all").Bytes, opRow(st, "MPI_File_read_all").Bytes; w != 40*c.step || r != 40*c.step {
			t.Errorf("%s: wrote %d, read %d bytes", c.name, w, r)
		}
	}
}

// btioBlocks maps the writes of one rank to file byte ranges through its
// vector views, per I/O step ([2]int64{offset, length}); and returns the
// block lengths of its views.
func btioBlocks(t *testing.T, x trace.Trace, r uint32, step int64) (map[int64][][2]int64, map[int64]bool) {
	t.Helper()
	src, err := x.Rank(r)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := trace.ReadAll(src)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64][][2]int64{}
	blocks := map[int64]bool{}
	var disp, block, stride int64
	for _, e := range evs {
		switch e.Op {
		case trace.OpMPIFileSetView:
			disp, block, stride = e.Offset, e.Size, e.Stride
			blocks[block] = true
		case trace.OpMPIFileWriteAll:
			if e.Offset%block != 0 || e.Size%block != 0 {
				t.Fatalf("rank %d: write of %d at %d in a view of blocks of %d", r, e.Size, e.Offset, block)
			}
			for b := e.Offset / block; b < (e.Offset+e.Size)/block; b++ {
				off := disp + b*stride
				out[off/step] = append(out[off/step], [2]int64{off, block})
			}
		}
	}
	return out, blocks
}

// TestBTIOLayout: in every I/O step the cells of the ranks tile the step's
// part of the file exactly (class A on 9 processes: 64 is not a multiple
// of 3, so the cells are 22 and 21 points), and the rows — the access
// granularity — are 40·N/q bytes: 3240 bytes for class C on 4 processes,
// the paper's number.
func TestBTIOLayout(t *testing.T) {
	const step = 10485760
	x, err := Open("btio-a", 9, map[string]string{"steps": "10"}, nil) // 2 I/O steps
	if err != nil {
		t.Fatal(err)
	}
	perStep := map[int64][][2]int64{}
	for r := uint32(0); r < 9; r++ {
		got, _ := btioBlocks(t, x, r, step)
		for k, rs := range got {
			perStep[k] = append(perStep[k], rs...)
		}
	}
	if len(perStep) != 2 {
		t.Fatalf("I/O steps %d, want 2", len(perStep))
	}
	for k, rs := range perStep {
		slices.SortFunc(rs, func(a, b [2]int64) int { return int(a[0] - b[0]) })
		end := k * step
		for _, r := range rs {
			if r[0] != end {
				t.Fatalf("step %d: a gap or an overlap at %d (next block at %d)", k, end, r[0])
			}
			end += r[1]
		}
		if end != (k+1)*step {
			t.Errorf("step %d ends at %d, want %d", k, end, (k+1)*step)
		}
	}
	for _, c := range []struct {
		ranks int
		rows  []int64
	}{{4, []int64{3240}}, {9, []int64{2160}}} {
		x, err := Open("btio-c", c.ranks, map[string]string{"steps": "5"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, blocks := btioBlocks(t, x, 0, 170061120)
		if len(blocks) != 1 || !blocks[c.rows[0]] {
			t.Errorf("class C on %d ranks: rows of %v bytes, want %d", c.ranks, blocks, c.rows[0])
		}
	}
	if _, err := Open("btio-c", 8, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := stats1(Open("btio-c", 8, nil, nil)); err == nil || !strings.Contains(err.Error(), "btio-c.iop:") ||
		!strings.Contains(err.Error(), "BTIO runs on a square number of processes, not 8") {
		t.Errorf("8 ranks: %v", err)
	}
}

// stats1 computes the report of an expansion, for its error.
func stats1(x *script.Expansion, err error) (*report.Stats, error) {
	if err != nil {
		return nil, err
	}
	return report.Compute(x, report.Options{})
}

// TestIsailaSynthetic: 8 processes write, then read, 32 MiB each of one
// shared file, contiguously: 256 MiB each way, the regions tiling the file.
func TestIsailaSynthetic(t *testing.T) {
	const mib32 = 32 << 20
	for _, c := range []struct {
		params map[string]string
		calls  int64
	}{{nil, 1}, {map[string]string{"request": "1MiB", "runs": "2"}, 64}} {
		x, err := Open("isaila-synthetic", 8, c.params, nil)
		if err != nil {
			t.Fatal(err)
		}
		runs := c.calls / 32
		if runs == 0 {
			runs = 1
		}
		for r := uint32(0); r < 8; r++ {
			src, _ := x.Rank(r)
			evs, err := trace.ReadAll(src)
			if err != nil {
				t.Fatal(err)
			}
			var wrote, read, calls int64
			for _, e := range evs {
				switch e.Op {
				case trace.OpMPIFileWriteAt, trace.OpMPIFileReadAt:
					if x.Path(e.Path) != "synthetic.dat" || e.Offset < int64(r)*mib32 || e.Offset+e.Size > int64(r+1)*mib32 {
						t.Fatalf("rank %d: %s at %d+%d outside its region", r, e.Op, e.Offset, e.Size)
					}
					calls++
					if e.Op == trace.OpMPIFileWriteAt {
						wrote += e.Size
					} else {
						read += e.Size
					}
				}
			}
			if wrote != runs*mib32 || read != runs*mib32 || calls != 2*c.calls {
				t.Errorf("%v rank %d: wrote %d, read %d in %d calls", c.params, r, wrote, read, calls)
			}
		}
	}
	st := stats(t, "isaila-synthetic", 8, nil)
	regions := regionOps(st)
	if regions["write"]["MPI_File_write_at"] != 8 || regions["read"]["MPI_File_read_at"] != 8 ||
		opRow(st, "MPI_File_write_at").Bytes != 256<<20 || opRow(st, "MPI_File_read_at").Bytes != 256<<20 {
		t.Errorf("regions %v", regions)
	}
	if _, err := stats1(Open("isaila-synthetic", 8, map[string]string{"request": "5MiB"}, nil)); err == nil ||
		!strings.Contains(err.Error(), "must be a multiple of the request size") {
		t.Errorf("a request size that does not divide the region: %v", err)
	}
}

// TestOLAPIndexMix: creating and deleting 100 indexes makes exactly the op
// mix of Table 2 of the Parabench paper, and every operation is valid on a
// real file system — the script keeps a namespace a replay can run: no
// create of an existing file, no read, append, lookup, delete or rename of
// a missing one, no rmdir of a directory that is not empty — and leaves no
// file behind.
func TestOLAPIndexMix(t *testing.T) {
	x, err := Open("olap-index", 1, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	src, _ := x.Rank(0)
	evs, err := trace.ReadAll(src)
	if err != nil {
		t.Fatal(err)
	}
	mix := map[string]int{}
	files, dirs := map[string]bool{}, map[string]bool{}
	parentOK := func(p string) bool {
		i := strings.LastIndex(p, "/")
		return i < 0 || dirs[p[:i]]
	}
	fds := map[int32]uint32{} // open flags by descriptor
	fail := func(e trace.Event, why string) {
		t.Fatalf("%s %s: %s", e.Op, x.Path(e.Path), why)
	}
	for _, e := range evs {
		p := x.Path(e.Path)
		switch e.Op {
		case trace.OpMkdir:
			mix["mkdir"]++
			if dirs[p] || files[p] || !parentOK(p) {
				fail(e, "exists, or no parent")
			}
			dirs[p] = true
		case trace.OpRmdir:
			mix["rmdir"]++
			for q := range files {
				if strings.HasPrefix(q, p+"/") {
					fail(e, "not empty: "+q)
				}
			}
			for q := range dirs {
				if strings.HasPrefix(q, p+"/") {
					fail(e, "not empty: "+q)
				}
			}
			if !dirs[p] {
				fail(e, "no such directory")
			}
			delete(dirs, p)
		case trace.OpCreat:
			mix["create"]++
			if files[p] || !parentOK(p) {
				fail(e, "exists, or no parent")
			}
			files[p] = true
			fds[int32(e.Ret)] = e.Flags
		case trace.OpOpen:
			if e.Flags&trace.OCreat == 0 || e.Flags&trace.OAppend != 0 {
				if !files[p] {
					fail(e, "no such file")
				}
			} else if !parentOK(p) {
				fail(e, "no parent")
			}
			files[p] = true
			fds[int32(e.Ret)] = e.Flags
		case trace.OpWrite, trace.OpPwrite:
			if fds[e.FD]&trace.OAppend != 0 {
				mix["append"]++
			} else {
				mix["write"]++
			}
		case trace.OpRead, trace.OpPread:
			mix["read"]++
		case trace.OpAccess:
			mix["lookup"]++
			if !files[p] {
				fail(e, "no such file")
			}
		case trace.OpUnlink:
			mix["delete"]++
			if !files[p] {
				fail(e, "no such file")
			}
			delete(files, p)
		case trace.OpRename:
			mix["rename"]++
			to := x.Path(e.Path2)
			if !files[p] || files[to] || !parentOK(to) {
				fail(e, "no source, or the target exists")
			}
			delete(files, p)
			files[to] = true
		case trace.OpClose, trace.OpRegionBegin, trace.OpRegionEnd:
		default:
			t.Fatalf("unexpected %s", e.Op)
		}
	}
	want := map[string]int{"write": 2900, "append": 1700, "read": 500, "lookup": 300, "delete": 3300,
		"mkdir": 401, "rmdir": 200, "create": 1200, "rename": 800}
	if fmt.Sprint(mix) != fmt.Sprint(want) {
		t.Errorf("op mix %v\nTable 2  %v", mix, want)
	}
	if len(files) != 0 || len(dirs) != 201 {
		t.Errorf("left behind: %d files, %d directories (want 0 and 201)", len(files), len(dirs))
	}
}
