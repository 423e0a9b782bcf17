// Package suggest finds the word a user probably meant: the "did you
// mean" of a sample name, an op name or a flag.
package suggest

import "strings"

// Closest returns the candidate nearest to word (case-insensitive edit
// distance), if it is near enough to be a likely typo: at most a third
// of the word's letters apart (at least 1, at most 3), or word is a
// prefix of it. It returns "" when nothing is close or when word is
// itself a candidate.
func Closest(word string, candidates []string) string {
	w := strings.ToLower(word)
	if w == "" {
		return ""
	}
	best, bestD := "", 1<<30
	limit := min(max(len([]rune(w))/3, 1), 3)
	for _, c := range candidates {
		lc := strings.ToLower(c)
		if lc == w {
			return ""
		}
		d := distance(w, lc)
		if strings.HasPrefix(lc, w) && len(w) >= 3 {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = c, d
		}
	}
	if bestD > limit {
		return ""
	}
	return best
}

// distance is the Levenshtein distance of a and b, with a transposition
// of two neighbouring letters counted as one edit.
func distance(a, b string) int {
	x, y := []rune(a), []rune(b)
	prev2 := make([]int, len(y)+1)
	prev := make([]int, len(y)+1)
	cur := make([]int, len(y)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(x); i++ {
		cur[0] = i
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(y)]
}
