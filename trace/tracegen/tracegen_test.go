package tracegen

import "testing"

// TestDists reads jitter.txt, which is no longer read when the binary
// starts (dists panics on a bad line or a missing series): each series
// the generators use is there, with counts that add up.
func TestDists(t *testing.T) {
	ds := dists()
	for _, k := range []string{"wgap", "wdur", "rgap", "rdur"} {
		d := ds[k]
		if d == nil || len(d.vals) == 0 || len(d.vals) != len(d.cum) {
			t.Fatalf("series %s: %+v", k, d)
		}
		for i := 1; i < len(d.cum); i++ {
			if d.cum[i] < d.cum[i-1] {
				t.Fatalf("series %s: cumulative count %d after %d", k, d.cum[i], d.cum[i-1])
			}
		}
		if d.cum[len(d.cum)-1] == 0 {
			t.Errorf("series %s: no counts", k)
		}
	}
}
