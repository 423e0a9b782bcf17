package samples

import (
	"fmt"
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
// parameters. Everything after the parameters must be the same text.
func TestAstro3dSameProgram(t *testing.T) {
	small, _ := Get("astro3d-small")
	large, _ := Get("astro3d-large")
	body := func(s Sample) (params []string, rest string) {
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
	ps, bs := body(small)
	pl, bl := body(large)
	if !slices.Equal(ps, pl) || bs != bl {
		t.Errorf("astro3d-large.iop is no longer astro3d-small.iop with other parameters:\nparams %v vs %v", ps, pl)
	}
	// And the small program run with the large case's parameters gives
	// the large case's counts.
	st := stats(t, "astro3d-small", 64, map[string]string{"nx": "256", "ny": "256", "nz": "128", "pz": "4", "iterations": "5"})
	if got := opCounts(st); got["seek"] != 3235 || commCalls(st) != 109888 {
		t.Errorf("small program with the large parameters: seek %d, comm %d", got["seek"], commCalls(st))
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
