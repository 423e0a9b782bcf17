package replay

import (
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// TestOpCounts: the in-place counts and their map give what a count in a
// map gives, whatever the mix of ops (one op, a few alternating, many).
func TestOpCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, kinds := range []int{1, 2, 4, 5, 12} {
		var c opCounts
		got, want := map[trace.Op]int64{}, map[trace.Op]int64{}
		for range 10_000 {
			op := trace.Op(1 + rng.IntN(kinds))
			c.add(op, got)
			want[op]++
		}
		c.flush(got)
		if !maps.Equal(got, want) {
			t.Errorf("%d ops: counted %v, want %v", kinds, got, want)
		}
	}
}
