package hist

import (
	"math/rand/v2"
	"testing"
)

func TestHistBinaryRoundTrip(t *testing.T) {
	var h Hist
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 5000; i++ {
		h.Add(r.Int64N(1 << uint(r.IntN(40))))
	}
	b, err := h.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var g Hist
	if err := g.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	for _, q := range []float64{0, 0.1, 0.5, 0.9, 0.99, 1} {
		if h.Quantile(q) != g.Quantile(q) {
			t.Errorf("quantile %v: %d after the round trip, want %d", q, g.Quantile(q), h.Quantile(q))
		}
	}
	if g.Count() != h.Count() || g.Min() != h.Min() || g.Max() != h.Max() {
		t.Errorf("count/min/max %d/%d/%d, want %d/%d/%d", g.Count(), g.Min(), g.Max(), h.Count(), h.Min(), h.Max())
	}
	var empty Hist
	if b, _ := empty.MarshalBinary(); g.UnmarshalBinary(b) != nil || g.Count() != 0 {
		t.Error("empty histogram does not round-trip")
	}
	for _, bad := range [][]byte{nil, {5, 0, 0}, {1, 0, 0, 0xff}, {1, 0, 0, 0, 2}} {
		if err := g.UnmarshalBinary(bad); err == nil {
			t.Errorf("%x: no error", bad)
		}
	}
}
