package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./report -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s (go test ./report -update rewrites it):\n%s", name, path, got)
	}
}

func render(t *testing.T, s *Stats, view, format string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, s, view, format); err != nil {
		t.Fatalf("%s/%s: %v", view, format, err)
	}
	return buf.Bytes()
}

// bucketTrace has an op with 40 distinct sizes (power-of-two buckets) and
// one with 3 (exact).
func bucketTrace() *trace.MemTrace {
	m := trace.NewMemTrace()
	for i := int64(1); i <= 40; i++ {
		m.Add(trace.Event{Op: trace.OpRead, Size: i * 100, Ret: i * 100, Dur: i * 1000})
	}
	for _, sz := range []int64{0, 24, 24, 1 << 40} {
		m.Add(trace.Event{Op: trace.OpWrite, Size: sz, Ret: sz, Dur: 10})
	}
	return m
}

// TestGolden pins every view in text, and the views in every format.
func TestGolden(t *testing.T) {
	s := compute(t, handTrace(), Options{Access: true})
	for _, v := range Views {
		if v == "beffio" {
			continue // below, on a trace that has b_eff_io regions
		}
		golden(t, v+".txt", render(t, s, v, "text"))
		golden(t, v+".csv", render(t, s, v, "csv"))
	}
	beff := compute(t, beffTrace(beffBW, nil), Options{Detail: true})
	golden(t, "beffio.txt", render(t, beff, "beffio", "text"))
	golden(t, "beffio.csv", render(t, beff, "beffio", "csv"))
	golden(t, "beffio.json", render(t, compute(t, beffTrace(beffBW, func(m, ty int) bool { return m > 0 }), Options{}), "beffio", "json"))
	golden(t, "nobeffio.txt", render(t, s, "beffio", "text"))
	golden(t, "op.md", render(t, s, "op", "markdown"))
	golden(t, "rank.md", render(t, s, "rank", "markdown"))
	for _, v := range []string{"op", "rank", "file", "region"} {
		golden(t, v+".json", render(t, s, v, "json"))
	}
	golden(t, "detail.txt", render(t, compute(t, handTrace(), Options{Detail: true}), "op", "text"))
	golden(t, "buckets.txt", render(t, compute(t, bucketTrace(), Options{}), "size", "text"))
	golden(t, "empty.txt", render(t, compute(t, trace.NewMemTrace(), Options{}), "op", "text"))
	golden(t, "noregion.txt", render(t, compute(t, bucketTrace(), Options{}), "region", "text"))
}

func TestSizeBuckets(t *testing.T) {
	s := compute(t, bucketTrace(), Options{})
	var reads, writes []SizeRow
	for _, r := range s.Sizes {
		switch r.Op {
		case "read":
			reads = append(reads, r)
		case "write":
			writes = append(writes, r)
		}
	}
	// 100…4000 in steps of 100: buckets [64,127] holds 100, [2048,4095]
	// holds 2100…4000 (20 sizes).
	var total int64
	for _, r := range reads {
		if r.Exact() || r.Max != 2*r.Min-1 || r.Min&(r.Min-1) != 0 {
			t.Fatalf("not a power-of-two bucket: %+v", r)
		}
		total += r.Count
	}
	if total != 40 || reads[0] != (SizeRow{"read", 64, 127, 1}) || reads[len(reads)-1] != (SizeRow{"read", 2048, 4095, 20}) {
		t.Fatalf("read buckets %+v", reads)
	}
	want := []SizeRow{{"write", 0, 0, 1}, {"write", 24, 24, 2}, {"write", 1 << 40, 1 << 40, 1}}
	if !slices.Equal(writes, want) {
		t.Fatalf("write sizes %+v", writes)
	}
	// Exactly MaxExactSizes distinct sizes stay exact; one more does not.
	m := trace.NewMemTrace()
	for i := int64(0); i < MaxExactSizes; i++ {
		m.Add(trace.Event{Op: trace.OpWrite, Size: 1000 + i})
	}
	if s := compute(t, m, Options{}); len(s.Sizes) != MaxExactSizes || !s.Sizes[0].Exact() {
		t.Fatalf("%d sizes: %+v", MaxExactSizes, s.Sizes)
	}
	m.Add(trace.Event{Op: trace.OpWrite, Size: 5000})
	if s := compute(t, m, Options{}); len(s.Sizes) != 2 || s.Sizes[0] != (SizeRow{"write", 512, 1023, 16}) || s.Sizes[1] != (SizeRow{"write", 4096, 8191, 1}) {
		t.Fatalf("%d sizes: %+v", MaxExactSizes+1, s.Sizes)
	}
}

// TestJSONShape checks the names scripts depend on.
func TestJSONShape(t *testing.T) {
	s := compute(t, handTrace(), Options{})
	var v map[string]any
	if err := json.Unmarshal(render(t, s, "op", "json"), &v); err != nil {
		t.Fatal(err)
	}
	if v["ranks"] != 4.0 || v["events"] != 27.0 || v["duration_seconds"] != 0.009 {
		t.Fatalf("header fields: %v", v)
	}
	ops := v["ops"].([]any)
	if len(ops) != len(s.Ops) {
		t.Fatalf("%d ops", len(ops))
	}
	for _, o := range ops {
		op := o.(map[string]any)
		for _, k := range []string{"op", "count", "bytes", "total_seconds", "avg_seconds_per_rank", "bandwidth_mb_s", "p50_seconds", "p99_seconds", "max_seconds"} {
			if _, ok := op[k]; !ok {
				t.Fatalf("op row lacks %q: %v", k, op)
			}
		}
	}
	w := ops[3].(map[string]any)
	if w["op"] != "write" || w["count"] != 4.0 || w["bytes"] != float64(2<<20+12) || w["total_seconds"] != 0.004004 || w["max_seconds"] != 0.002 {
		t.Fatalf("write row %v", w)
	}
	for _, sz := range v["sizes"].([]any) {
		m := sz.(map[string]any)
		_, exact := m["size"]
		_, lo := m["size_min"]
		_, hi := m["size_max"]
		if exact == lo || lo != hi || m["op"] == nil || m["count"] == nil {
			t.Fatalf("size row %v", m)
		}
	}
	for _, k := range []string{"by_rank", "stragglers", "files", "regions"} {
		if _, ok := v[k]; ok {
			t.Errorf("op view has %q", k)
		}
	}
	for view, key := range map[string]string{"rank": "by_rank", "file": "files", "region": "regions", "beffio": "beffio"} {
		var v map[string]any
		if err := json.Unmarshal(render(t, s, view, "json"), &v); err != nil {
			t.Fatal(err)
		}
		if _, ok := v[key]; !ok || v["ops"] == nil || v["sizes"] == nil {
			t.Errorf("%s view lacks %s, ops or sizes", view, key)
		}
	}
}

// TestCSV checks that every view's CSV is rectangular and that its
// numbers are raw.
func TestCSV(t *testing.T) {
	s := compute(t, handTrace(), Options{Access: true})
	for _, v := range Views {
		s := s
		if v == "beffio" {
			s = compute(t, beffTrace(beffBW, nil), Options{})
		}
		recs, err := csv.NewReader(bytes.NewReader(render(t, s, v, "csv"))).ReadAll()
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if len(recs) < 2 {
			t.Fatalf("%s: %d records", v, len(recs))
		}
	}
	recs, _ := csv.NewReader(bytes.NewReader(render(t, s, "op", "csv"))).ReadAll()
	if strings.Join(recs[0][:6], ",") != "op,count,total_seconds,avg_seconds_per_rank,bytes,bandwidth_mb_s" ||
		strings.Join(recs[4][:5], ",") != "write,4,0.004004,0.001001,2097164" {
		t.Fatalf("op csv %q %q", recs[0], recs[4])
	}
	recs, _ = csv.NewReader(bytes.NewReader(render(t, s, "region", "csv"))).ReadAll()
	if recs[0][0] != "region" || recs[1][0] != "dump" || recs[len(recs)-1][0] != "inner" || recs[len(recs)-1][1] != "TOTAL" {
		t.Fatalf("region csv %q", recs)
	}
}

func TestRenderErrors(t *testing.T) {
	s := compute(t, handTrace(), Options{})
	var buf bytes.Buffer
	if err := Render(&buf, s, "colour", "text"); err == nil || !strings.Contains(err.Error(), `"colour"`) {
		t.Errorf("bad view: %v", err)
	}
	if err := Render(&buf, s, "op", "yaml"); err == nil || !strings.Contains(err.Error(), `"yaml"`) {
		t.Errorf("bad format: %v", err)
	}
	if err := Render(&buf, s, "", ""); err != nil || !strings.Contains(buf.String(), "TOTAL") {
		t.Errorf("defaults: %v", err)
	}
}
