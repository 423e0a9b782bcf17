package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/internal/browsertest"
	"github.com/iotrace/iotrace/trace"
)

// beffTrace is a run of b_eff_io on 2 ranks whose pattern types reach the
// bandwidths bw[method][type] (MB/s): in each region "b_eff_io METHOD type
// N" each rank moves half of bw × 10⁶ bytes; rank 0 spends 1 s in it, rank
// 1 half a second, so the time of the type is 1 s. Communication bytes in
// the regions must not count, and neither must calls outside them.
func beffTrace(bw [3][5]float64, skip func(m, t int) bool) *trace.MemTrace {
	mt := trace.NewMemTrace()
	methods := []string{"first write", "rewrite", "read"}
	f := mt.Paths.Intern("beff")
	const s = int64(1e9)
	for m, name := range methods {
		for ty := 0; ty < 5; ty++ {
			if skip != nil && skip(m, ty) {
				continue
			}
			label := mt.Paths.Intern(fmt.Sprintf("b_eff_io %s type %d", name, ty))
			pattern := mt.Paths.Intern(fmt.Sprintf("b_eff_io %s type %d pattern %d", name, ty, 7+ty))
			start := int64(m*5+ty) * 2 * s
			half := int64(bw[m][ty] * 1e6 / 2)
			op := trace.OpMPIFileWriteAll
			if m == 2 {
				op = trace.OpMPIFileReadAll
			}
			for r := uint32(0); r < 2; r++ {
				d := s >> r // 1 s on rank 0, 0.5 s on rank 1
				mt.Add(
					trace.Event{Rank: r, Op: trace.OpRegionBegin, Path: label, Start: start},
					trace.Event{Rank: r, Op: trace.OpMPIFileOpen, Path: f, FD: 1, Start: start, Dur: 1000},
					trace.Event{Rank: r, Op: trace.OpRegionBegin, Path: pattern, Start: start + 1000},
					// The pattern: a quarter of the type's bytes in a tenth of its time.
					trace.Event{Rank: r, Op: op, FD: 1, Size: half / 4, Ret: half / 4, Start: start + 1000, Dur: d / 10},
					trace.Event{Rank: r, Op: trace.OpRegionEnd, Path: pattern, Start: start + 1000 + d/10},
					trace.Event{Rank: r, Op: op, FD: 1, Size: half - half/4, Ret: half - half/4, Start: start + 2000 + d/10, Dur: d / 2},
					trace.Event{Rank: r, Op: trace.OpMPIBcast, Bytes: 1 << 30, Start: start + d/2 + d/10 + 3000, Dur: 1000},
					trace.Event{Rank: r, Op: trace.OpMPIFileClose, FD: 1, Start: start + d - 1000, Dur: 1000},
					trace.Event{Rank: r, Op: trace.OpRegionEnd, Path: label, Start: start + d},
					// Outside every region.
					trace.Event{Rank: r, Op: trace.OpMPIFileWrite, FD: 1, Size: 1 << 30, Ret: 1 << 30, Start: start + s + 1000, Dur: 1000},
				)
			}
		}
	}
	return mt
}

var beffBW = [3][5]float64{
	{100, 50, 80, 40, 60},     // first write: (2·100 + 50 + 80 + 40 + 60) / 6 = 71.67
	{200, 100, 100, 100, 100}, // rewrite: 800 / 6 = 133.33
	{300, 150, 300, 300, 300}, // read: (2·300 + 150 + 3·300) / 6 = 275
}

func nearly(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

// TestBeffIOByHand: 25 % of 71.67 + 25 % of 133.33 + 50 % of 275 = 188.75.
func TestBeffIOByHand(t *testing.T) {
	st := compute(t, beffTrace(beffBW, nil), Options{})
	b, err := st.BeffIO()
	if err != nil {
		t.Fatal(err)
	}
	if !nearly(b.Value, 188.75) || len(b.Missing) != 0 {
		t.Errorf("b_eff_io %v MB/s (missing %v), want 188.75", b.Value, b.Missing)
	}
	wantMethods := []float64{430.0 / 6, 800.0 / 6, 275}
	if len(b.Methods) != 3 {
		t.Fatalf("%d access methods", len(b.Methods))
	}
	for m, meth := range b.Methods {
		if !nearly(meth.Bandwidth, wantMethods[m]) || meth.Weight != []float64{0.25, 0.25, 0.5}[m] {
			t.Errorf("%s: %v MB/s weight %v, want %v", meth.Name, meth.Bandwidth, meth.Weight, wantMethods[m])
		}
		for ty, typ := range meth.Types {
			if typ.Type != ty || typ.Time != 1e9 || !nearly(typ.Bandwidth(), beffBW[m][ty]) || typ.Weight != 1+b2i(ty == 0) {
				t.Errorf("%s type %d: %+v, %v MB/s", meth.Name, ty, typ, typ.Bandwidth())
			}
			// The pattern: a quarter of the bytes in a tenth of the time.
			if len(typ.Patterns) != 1 || typ.Patterns[0].Pattern != 7+ty || typ.Patterns[0].Time != 1e8 ||
				typ.Patterns[0].Bytes != 2*(int64(beffBW[m][ty]*1e6/2)/4) {
				t.Errorf("%s type %d patterns: %+v", meth.Name, ty, typ.Patterns)
			}
		}
	}
}

// TestBeffIOMissing: without every type of every access method there is
// no value, only the parts; without b_eff_io regions, an error.
func TestBeffIOMissing(t *testing.T) {
	st := compute(t, beffTrace(beffBW, func(m, ty int) bool { return m == 1 && ty == 3 || m == 2 }), Options{})
	b, err := st.BeffIO()
	if err != nil {
		t.Fatal(err)
	}
	want := "rewrite type 3,read type 0,read type 1,read type 2,read type 3,read type 4"
	if b.Value != 0 || strings.Join(b.Missing, ",") != want || len(b.Methods) != 2 {
		t.Errorf("value %v, missing %v, %d methods", b.Value, b.Missing, len(b.Methods))
	}
	// The rewrite averages the types it has: (400 + 100 + 100 + 100) / 5.
	if !nearly(b.Methods[1].Bandwidth, 140) {
		t.Errorf("rewrite %v MB/s, want 140", b.Methods[1].Bandwidth)
	}
	var buf bytes.Buffer
	if err := Render(&buf, st, "beffio", "text"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "\nNo b_eff_io value: the trace lacks rewrite type 3, read type 0, read type 1, read type 2, read type 3, read type 4.\n") {
		t.Errorf("text:\n%s", buf.String())
	}

	if _, err := compute(t, handTrace(), Options{}).BeffIO(); !errors.Is(err, ErrNoBeffIO) {
		t.Errorf("a trace without b_eff_io regions: %v", err)
	}
}

// TestBeffIORender: the text view has a row per type, the averages and the
// value; --detail adds the patterns; JSON holds the same numbers.
func TestBeffIORender(t *testing.T) {
	tr := beffTrace(beffBW, nil)
	var buf bytes.Buffer
	if err := Render(&buf, compute(t, tr, Options{}), "beffio", "text"); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	for _, want := range []string{
		"first write    0 scatter, collective",
		"read           1 shared pointer, collective",
		"rewrite        average",
		"133.33    25 %",
		"275.00    50 %",
		"b_eff_io ",
		"188.75",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "pattern 7") || strings.Count(text, "\n") != 2+1+1+3*6+1+2 {
		t.Errorf("text without --detail:\n%s", text)
	}
	buf.Reset()
	Render(&buf, compute(t, tr, Options{Detail: true}), "beffio", "text")
	if n := strings.Count(buf.String(), "\n"); n != 2+1+1+3*11+1+2 {
		t.Errorf("detail: %d lines:\n%s", n, buf.String())
	}
	buf.Reset()
	Render(&buf, compute(t, tr, Options{}), "beffio", "csv")
	if !strings.HasPrefix(buf.String(), "method,type,pattern,bytes,seconds,bandwidth_mb_s,weight\nfirst write,\"0 scatter, collective\",,100000000,1,") {
		t.Errorf("csv:\n%s", buf.String())
	}
	buf.Reset()
	if err := Render(&buf, compute(t, tr, Options{}), "beffio", "json"); err != nil {
		t.Fatal(err)
	}
	var js struct {
		BeffIO struct {
			Value   float64 `json:"value_mb_s"`
			Methods []struct {
				Method    string
				Bandwidth float64 `json:"bandwidth_mb_s"`
				Types     []struct {
					Type     int
					Weight   int
					Bytes    int64
					Seconds  float64
					Patterns []struct{ Pattern int }
				}
			}
			Missing []string
		} `json:"beffio"`
	}
	if err := json.Unmarshal(buf.Bytes(), &js); err != nil {
		t.Fatal(err)
	}
	b := js.BeffIO
	if !nearly(b.Value, 188.75) || len(b.Methods) != 3 || b.Methods[2].Method != "read" || !nearly(b.Methods[2].Bandwidth, 275) ||
		b.Methods[0].Types[0].Weight != 2 || b.Methods[0].Types[0].Seconds != 1 || b.Methods[0].Types[0].Bytes != 100e6 ||
		b.Methods[0].Types[4].Patterns[0].Pattern != 11 || b.Missing == nil {
		t.Errorf("json: %+v", b)
	}
}

// TestBeffIOHTML: the HTML page of a b_eff_io run has the b_eff_io table;
// a page of another trace has none.
func TestBeffIOHTML(t *testing.T) {
	page := renderHTML(t, compute(t, beffTrace(beffBW, nil), Options{}), HTMLOptions{})
	selfContained(t, page)
	rows := browsertest.Rows(browsertest.Element(t, page, "table-beffio"))
	if len(rows) != 1+3*6+1 || rows[len(rows)-1][0] != "b_eff_io" || rows[len(rows)-1][5] != "188.75" {
		t.Errorf("b_eff_io table: %q", rows)
	}
	if strings.Contains(renderHTML(t, compute(t, handTrace(), Options{}), HTMLOptions{}), "table-beffio") {
		t.Error("a trace without b_eff_io regions has a b_eff_io table")
	}
}
