package report

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
	if b := bucketOf(math.MaxInt64); b > 256+56<<subBits+128 {
		t.Fatalf("bucket of MaxInt64 = %d", b)
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
		want := vals[int(q*float64(len(vals)-1))]
		got := h.Quantile(q)
		if math.Abs(float64(got-want)) > float64(want)*0.005+1 {
			t.Errorf("q%.3f = %d, want %d ±0.5%%", q, got, want)
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
