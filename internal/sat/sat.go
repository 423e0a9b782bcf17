// Package sat is int64 arithmetic held at the bounds rather than
// wrapping: a trace may say anything (a write of 2^62 bytes twice, a
// call lasting 2^63−1 ns), and a total past what an int64 holds is the
// largest, never a negative number.
package sat

import "math"

// Add is a + b, held at the int64 bounds.
func Add(a, b int64) int64 {
	c := a + b
	if (c > a) == (b > 0) {
		return c
	}
	if b > 0 {
		return math.MaxInt64
	}
	return math.MinInt64
}

// Sub is a − b, held at the int64 bounds.
func Sub(a, b int64) int64 {
	c := a - b
	if (c < a) == (b > 0) {
		return c
	}
	if b > 0 {
		return math.MinInt64
	}
	return math.MaxInt64
}

// Mul is a × b for a, b ≥ 0, held at the largest int64.
func Mul(a, b int64) int64 {
	if a > 0 && b > 0 && a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}
