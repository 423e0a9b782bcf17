package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseSize reads a byte count: a number with an optional binary unit,
// k/K/KiB (2^10), m/M/MiB, g/G/GiB, t/T/TiB, and an optional "B": "4096",
// "4k", "64KiB", "1.5M".
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "i")
	mult := 1.0
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k', 'K':
			mult = 1 << 10
		case 'm', 'M':
			mult = 1 << 20
		case 'g', 'G':
			mult = 1 << 30
		case 't', 'T':
			mult = 1 << 40
		}
		if mult != 1 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || math.IsNaN(v) || v*mult > 1<<62 {
		return 0, fmt.Errorf("bad size %q (want bytes, or a number with k, M, G or T)", s)
	}
	return int64(v * mult), nil
}
