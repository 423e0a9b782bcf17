package report

import "math"

// addSat is a + b, held at the int64 bounds rather than wrapping: a trace
// may say anything (a write of 2^62 bytes twice, a call lasting 2^63−1
// ns), and a total past what an int64 holds is shown as the largest, never
// as a negative number.
func addSat(a, b int64) int64 {
	c := a + b
	if (c > a) == (b > 0) {
		return c
	}
	if b > 0 {
		return math.MaxInt64
	}
	return math.MinInt64
}

// subSat is a − b, held at the int64 bounds.
func subSat(a, b int64) int64 {
	c := a - b
	if (c < a) == (b > 0) {
		return c
	}
	if b > 0 {
		return math.MinInt64
	}
	return math.MaxInt64
}
