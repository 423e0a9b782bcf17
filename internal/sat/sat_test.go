package sat

import (
	"math"
	"testing"
)

func TestBounds(t *testing.T) {
	const max, min = math.MaxInt64, math.MinInt64
	for _, c := range []struct {
		op   string
		f    func(a, b int64) int64
		a, b int64
		want int64
	}{
		{"add", Add, 2, 3, 5},
		{"add", Add, 5, -3, 2},
		{"add", Add, 0, 0, 0},
		{"add", Add, max, 1, max},
		{"add", Add, 1 << 62, 1 << 62, max},
		{"add", Add, min, -1, min},
		{"add", Add, max, min, -1},
		{"sub", Sub, 5, 3, 2},
		{"sub", Sub, max, -1, max},
		{"sub", Sub, min, 1, min},
		{"sub", Sub, max, min, max},
		{"sub", Sub, 0, min, max},
		{"sub", Sub, -1, max, min},
		{"mul", Mul, 3, 4, 12},
		{"mul", Mul, 0, max, 0},
		{"mul", Mul, 1 << 32, 1 << 32, max},
		{"mul", Mul, max, 1, max},
	} {
		if got := c.f(c.a, c.b); got != c.want {
			t.Errorf("%s(%d, %d) = %d, want %d", c.op, c.a, c.b, got, c.want)
		}
	}
}
