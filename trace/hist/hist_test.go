package hist

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestHistBuckets(t *testing.T) {
	prev := -1
	for v := int64(0); v < 1<<20; v++ {
		b := bucketOf(v)
		if b < prev || b > prev+1 {
			t.Fatalf("bucket of %d is %d after %d", v, b, prev)
		}
		prev = b
		if mid := bucketMid(b); math.Abs(float64(mid-v)) > float64(v)/256+1 {
			t.Fatalf("value %d in bucket %d with middle %d", v, b, mid)
		}
	}
	if b := bucketOf(math.MaxInt64); b != maxBuckets-1 {
		t.Fatalf("bucket of MaxInt64 = %d, want %d", b, maxBuckets-1)
	}
	var h Hist
	h.Add(math.MaxInt64)
	h.Add(-5) // counts as 0
	if len(h.counts) > maxBuckets || h.Min() != 0 || h.Max() != math.MaxInt64 || h.Quantile(0.5) != 0 {
		t.Fatalf("extremes: %d buckets, min %d max %d", len(h.counts), h.Min(), h.Max())
	}
}

func TestHistQuantiles(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h Hist
	var vals []int64
	for i := 0; i < 100000; i++ {
		v := int64(math.Exp(r.NormFloat64()*2 + 8)) // log-normal, ~3 µs
		vals = append(vals, v)
		h.Add(v)
	}
	slices.Sort(vals)
	for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 0.999} {
		want := vals[int(math.Ceil(q*float64(len(vals))))-1]
		got := h.Quantile(q)
		if math.Abs(float64(got-want)) > float64(want)*0.005+1 {
			t.Errorf("q%.3f = %d, want %d ±0.5%%", q, got, want)
		}
	}
	for _, q := range []float64{0, 0.00001} {
		if h.Quantile(q) != vals[0] {
			t.Errorf("q%g = %d, want the minimum %d", q, h.Quantile(q), vals[0])
		}
	}
	if h.Max() != vals[len(vals)-1] || h.Min() != vals[0] || h.Quantile(1) != h.Max() {
		t.Errorf("max %d min %d", h.Max(), h.Min())
	}
	var g Hist
	g.Merge(&h)
	if g.Quantile(0.5) != h.Quantile(0.5) || g.Count() != h.Count() {
		t.Error("merge lost counts")
	}
}

// TestHistSmall checks the nearest-rank definition on a few values.
func TestHistSmall(t *testing.T) {
	var h Hist
	for _, v := range []int64{1000, 3000, 2_000_000, 2_000_000} {
		h.Add(v)
	}
	for q, want := range map[float64]int64{0.25: 1000, 0.5: 3000, 0.51: 2_000_000, 0.99: 2_000_000, 1: 2_000_000} {
		if got := h.Quantile(q); math.Abs(float64(got-want)) > float64(want)/256 {
			t.Errorf("q%g = %d, want %d", q, got, want)
		}
	}
	var empty Hist
	if empty.Quantile(0.5) != 0 || empty.Max() != 0 || empty.Count() != 0 {
		t.Error("empty histogram")
	}
}

// TestSparse: a histogram holds only the buckets between its values
// (one value: one counter), and merging histograms whose buckets lie
// apart, in either order, is adding their values to one: same encoding,
// same quantiles.
func TestSparse(t *testing.T) {
	var one Hist
	one.Add(1_000_000_000)
	if len(one.counts) != 1 {
		t.Fatalf("one value holds %d counters", len(one.counts))
	}
	groups := [][]int64{{5, 7, 300}, {1e9, 2e9, 3e9}, {40_000, 41_000}, {0, 1 << 62}}
	var all Hist
	for _, g := range groups {
		for _, v := range g {
			all.Add(v)
		}
	}
	want, _ := all.MarshalBinary()
	for _, order := range [][]int{{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 0, 3, 2}, {2, 3, 0, 1}} {
		var m Hist
		for _, i := range order {
			var h Hist
			for _, v := range groups[i] {
				h.Add(v)
			}
			m.Merge(&h)
		}
		got, _ := m.MarshalBinary()
		if string(got) != string(want) {
			t.Fatalf("order %v: encoding %x, want %x", order, got, want)
		}
		var back Hist
		if err := back.UnmarshalBinary(got); err != nil {
			t.Fatal(err)
		}
		for _, q := range []float64{0, 0.1, 0.3, 0.5, 0.7, 0.9, 1} {
			if a, b, c := m.Quantile(q), all.Quantile(q), back.Quantile(q); a != b || c != b {
				t.Fatalf("order %v: q%v = %d, decoded %d, want %d", order, q, a, c, b)
			}
		}
	}
}
