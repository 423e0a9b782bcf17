package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// handTrace is a small trace whose numbers are computed by hand below.
//
// rank 0: open /d/a (fd 3, 1 µs), 2 × write 1 MiB at 0 and 1 MiB (2 ms
// each), lseek, close; a region "dump" around the writes; barrier (5 µs).
// rank 1: open /d/b (fd 4, 3 µs), dup fd 4 → 7, pread 4 KiB via fd 7
// (10 µs), a failed open of /d/missing (-ENOENT, 2 µs), close 7, barrier
// (1 µs).
// rank 2: one barrier (9 ms): a straggler only for comm, not for I/O.
func handTrace() *trace.MemTrace {
	m := trace.NewMemTrace()
	a, b := m.Paths.Intern("/d/a"), m.Paths.Intern("/d/b")
	miss, dump := m.Paths.Intern("/d/missing"), m.Paths.Intern("dump")
	const us, ms = 1000, 1000000
	m.Add(
		trace.Event{Rank: 0, Op: trace.OpOpen, Path: a, Ret: 3, Flags: trace.OWronly | trace.OCreat, Start: 0, Dur: 1 * us},
		trace.Event{Rank: 0, Op: trace.OpRegionBegin, Path: dump, Start: 2 * us},
		trace.Event{Rank: 0, Op: trace.OpWrite, FD: 3, Offset: 0, Size: 1 << 20, Ret: 1 << 20, Start: 3 * us, Dur: 2 * ms},
		trace.Event{Rank: 0, Op: trace.OpPwrite, FD: 3, Offset: 1 << 20, Size: 1 << 20, Ret: 1 << 20, Start: 3*us + 2*ms, Dur: 2 * ms},
		trace.Event{Rank: 0, Op: trace.OpRegionEnd, Path: dump, Start: 5 * ms},
		trace.Event{Rank: 0, Op: trace.OpLseek, FD: 3, Offset: 0, Ret: 0, Start: 6 * ms, Dur: 500},
		trace.Event{Rank: 0, Op: trace.OpClose, FD: 3, Start: 7 * ms, Dur: 2 * us},
		trace.Event{Rank: 0, Op: trace.OpMPIBarrier, Start: 8 * ms, Dur: 5 * us},

		trace.Event{Rank: 1, Op: trace.OpOpenat, Path: b, Ret: 4, Start: 0, Dur: 3 * us},
		trace.Event{Rank: 1, Op: trace.OpDup, FD: 4, Ret: 7, Start: 4 * us, Dur: 100},
		trace.Event{Rank: 1, Op: trace.OpPread, FD: 7, Offset: 8192, Size: 4096, Ret: 4096, Start: 5 * us, Dur: 10 * us},
		trace.Event{Rank: 1, Op: trace.OpOpen, Path: miss, Ret: -2, Start: 20 * us, Dur: 2 * us},
		trace.Event{Rank: 1, Op: trace.OpClose, FD: 7, Start: 30 * us, Dur: 1 * us},
		trace.Event{Rank: 1, Op: trace.OpMPIBarrier, Start: 8 * ms, Dur: 1 * us},

		trace.Event{Rank: 2, Op: trace.OpMPIBarrier, Start: 0, Dur: 9 * ms},
	)
	return m
}

func row(t *testing.T, s *Stats, op string) *OpRow {
	t.Helper()
	for _, r := range s.Ops {
		if r.Op == op {
			return r
		}
	}
	t.Fatalf("no row %q", op)
	return nil
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestComputeByHand(t *testing.T) {
	s, err := Compute(handTrace(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Ranks != 3 || s.Events != 15 || s.Start != 0 || s.End != 9_000_000 {
		t.Fatalf("header: %d ranks %d events %d..%d", s.Ranks, s.Events, s.Start, s.End)
	}
	var order []string
	for _, r := range s.Ops {
		order = append(order, r.Op)
	}
	if got := strings.Join(order, " "); got != "open read write seek close dup MPI_Barrier" {
		t.Fatalf("row order %q", got)
	}
	open := row(t, s, "open")
	if open.Count != 3 || open.Total != 6000 || open.Errors != 1 || open.Bytes != 0 {
		t.Fatalf("open row %+v", open)
	}
	w := row(t, s, "write")
	if w.Count != 2 || w.Bytes != 2<<20 || w.Total != 4_000_000 {
		t.Fatalf("write row %+v", w)
	}
	// Time per rank is total over the 3 ranks; bandwidth is bytes over it.
	if !near(w.AvgPerRank(), 0.004/3) || !near(w.Bandwidth(), float64(2<<20)/1e6/(0.004/3)) {
		t.Fatalf("write avg %g bw %g", w.AvgPerRank(), w.Bandwidth())
	}
	if w.Lat.Quantile(0.5) < 1_990_000 || w.Lat.Quantile(0.5) > 2_010_000 || w.Lat.Max() != 2_000_000 {
		t.Fatalf("write p50 %d max %d", w.Lat.Quantile(0.5), w.Lat.Max())
	}
	rd := row(t, s, "read")
	if rd.Count != 1 || rd.Bytes != 4096 {
		t.Fatalf("read row %+v", rd)
	}
	bar := row(t, s, "MPI_Barrier")
	if bar.Count != 3 || bar.Total != 9_006_000 || bar.Class != trace.ClassComm {
		t.Fatalf("barrier row %+v", bar)
	}
	// Detail splits the write family.
	d, _ := Compute(handTrace(), Options{Detail: true})
	if r := row(t, d, "pwrite"); r.Count != 1 {
		t.Fatal("detail: pwrite")
	}
	if r := row(t, d, "openat"); r.Count != 1 {
		t.Fatal("detail: openat")
	}
	// Sizes: exact.
	want := map[string]int64{"read 4096": 1, "write 1048576": 2}
	for _, r := range s.Sizes {
		key := r.Op + " " + itoa(r.Min)
		if want[key] != r.Count || !r.Exact() {
			t.Errorf("size row %+v", r)
		}
		delete(want, key)
	}
	if len(want) != 0 {
		t.Errorf("missing size rows %v", want)
	}
	// Files: the pread through the dup'ed descriptor belongs to /d/b.
	files := map[string]*FileRow{}
	for _, f := range s.Files {
		files[f.Path] = f
	}
	if f := files["/d/b"]; f == nil || f.Reads != 1 || f.ReadBytes != 4096 || f.Opens != 1 {
		t.Fatalf("/d/b: %+v", f)
	}
	if f := files["/d/a"]; f == nil || f.Writes != 2 || f.WriteBytes != 2<<20 || f.Other != 1 || f.RankCount != 1 {
		t.Fatalf("/d/a: %+v", f)
	}
	// Region "dump" holds the two writes.
	if len(s.Regions) != 1 || s.Regions[0].Label != "dump" || s.Regions[0].Count != 1 || len(s.Regions[0].Ops) != 1 || s.Regions[0].Ops[0].Count != 2 {
		t.Fatalf("regions %+v", s.Regions)
	}
	if s.Regions[0].Time != 5_000_000-2000 {
		t.Fatalf("region time %d", s.Regions[0].Time)
	}
}

func itoa(n int64) string { return strings.TrimSpace(strings.Repeat(" ", 0)) + jsonNum(n) }

func jsonNum(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestSizeBuckets(t *testing.T) {
	m := trace.NewMemTrace()
	for i := int64(1); i <= 40; i++ { // 40 distinct sizes: buckets
		m.Add(trace.Event{Op: trace.OpRead, Size: i * 100, Ret: i * 100, Dur: 1})
	}
	s, _ := Compute(m, Options{})
	var total int64
	for _, r := range s.Sizes {
		if r.Exact() || r.Max != 2*r.Min-1 {
			t.Fatalf("not a power-of-two bucket: %+v", r)
		}
		total += r.Count
	}
	if total != 40 {
		t.Fatalf("buckets hold %d sizes", total)
	}
	// 100..127: one size (100) in [64,127]; 3900, 4000 in [2048,4095] and so on.
	if s.Sizes[0].Min != 64 || s.Sizes[0].Count != 1 {
		t.Fatalf("first bucket %+v", s.Sizes[0])
	}
}

func TestStragglers(t *testing.T) {
	m := trace.NewMemTrace()
	for r := uint32(0); r < 8; r++ {
		d := int64(1000 + 10*r)
		if r == 5 {
			d = 5000
		}
		m.Add(trace.Event{Rank: r, Op: trace.OpWrite, Size: 1, Ret: 1, Dur: d})
	}
	s, _ := Compute(m, Options{})
	if len(s.Straggle) != 1 || s.Straggle[0] != 5 {
		t.Fatalf("stragglers %v", s.Straggle)
	}
}

func TestUnknownOp(t *testing.T) {
	m := trace.NewMemTrace()
	m.Add(trace.Event{Op: trace.Op(999), Dur: 5}, trace.Event{Op: trace.OpWrite, Size: 1, Ret: 1})
	s, err := Compute(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r := row(t, s, "unknown"); r.Count != 1 {
		t.Fatalf("unknown row %+v", r)
	}
	d, _ := Compute(m, Options{Detail: true})
	if r := row(t, d, "op#999"); r.Count != 1 {
		t.Fatalf("op#999 row %+v", r)
	}
	for _, f := range Formats {
		for _, v := range Views {
			if err := Render(&bytes.Buffer{}, d, v, f); err != nil {
				t.Fatalf("%s/%s: %v", v, f, err)
			}
		}
	}
}

// TestGolden pins every view in text, and the op view in every format.
func TestGolden(t *testing.T) {
	s, err := Compute(handTrace(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][2]string{}
	for _, v := range Views {
		cases[v+".txt"] = [2]string{v, "text"}
	}
	cases["op.csv"] = [2]string{"op", "csv"}
	cases["op.md"] = [2]string{"op", "markdown"}
	cases["op.json"] = [2]string{"op", "json"}
	cases["rank.json"] = [2]string{"rank", "json"}
	for name, c := range cases {
		var buf bytes.Buffer
		if err := Render(&buf, s, c[0], c[1]); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", name+".golden")
		if *update {
			os.MkdirAll("testdata", 0o755)
			os.WriteFile(path, buf.Bytes(), 0o644)
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./report -update)", err)
		}
		if buf.String() != string(want) {
			t.Errorf("%s differs from %s:\n%s", name, path, buf.String())
		}
	}
}

func TestJSONShape(t *testing.T) {
	s, _ := Compute(handTrace(), Options{})
	var buf bytes.Buffer
	Render(&buf, s, "op", "json")
	var v struct {
		Ranks    *int     `json:"ranks"`
		Events   *int64   `json:"events"`
		Duration *float64 `json:"duration_seconds"`
		Ops      []map[string]any
		Sizes    []map[string]any
	}
	if err := json.Unmarshal(buf.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if v.Ranks == nil || v.Events == nil || v.Duration == nil || *v.Duration != 0.009 {
		t.Fatalf("header fields: %s", buf.String())
	}
	for _, op := range v.Ops {
		for _, k := range []string{"op", "count", "bytes", "total_seconds", "avg_seconds_per_rank", "bandwidth_mb_s", "p50_seconds", "p99_seconds", "max_seconds"} {
			if _, ok := op[k]; !ok {
				t.Fatalf("op row lacks %q: %v", k, op)
			}
		}
	}
	for _, sz := range v.Sizes {
		_, exact := sz["size"]
		_, lo := sz["size_min"]
		if exact == lo || sz["op"] == nil || sz["count"] == nil {
			t.Fatalf("size row %v", sz)
		}
	}
}
