// Package textutil holds what the text importers and exporters of
// convert/ share: decimal seconds read exactly, and counts listed for the
// notes users read.
package textutil

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Seconds reads a non-negative decimal number of seconds ("12", "0.0041",
// "1700000000.123456789") as ns, exactly: at most 9 decimals.
func Seconds(s string) (int64, bool) {
	sec, frac, _ := strings.Cut(s, ".")
	v, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || v < 0 || v > (1<<62)/1_000_000_000 || sec == "" || sec[0] == '+' {
		return 0, false
	}
	f, ok := Fraction(frac)
	if !ok {
		return 0, false
	}
	return v*1_000_000_000 + f, true
}

// Fraction reads the digits after a decimal point (at most 9) as ns.
func Fraction(s string) (int64, bool) {
	if len(s) > 9 {
		return 0, false
	}
	var v int64
	for i := 0; i < 9; i++ {
		v *= 10
		if i < len(s) {
			c := s[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			v += int64(c - '0')
		}
	}
	return v, true
}

// CountList renders counts as "name n, name n, …", the largest first (then
// by name), at most limit of them and "k more kinds" after.
func CountList(m map[string]int64, limit int) string {
	type kv struct {
		k string
		v int64
	}
	var l []kv
	for k, v := range m {
		l = append(l, kv{k, v})
	}
	slices.SortFunc(l, func(a, b kv) int {
		if a.v != b.v {
			if a.v > b.v {
				return -1
			}
			return 1
		}
		return strings.Compare(a.k, b.k)
	})
	var parts []string
	for i, e := range l {
		if i == limit {
			parts = append(parts, fmt.Sprintf("%d more kinds", len(l)-limit))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d", e.k, e.v))
	}
	return strings.Join(parts, ", ")
}
