package fold

import (
	"math/big"
	"slices"
	"sort"
)

// Sibling folding: a second look for loops, across the ranks of a group.
//
// A rank folds its calls alone, so a loop whose values follow no
// progression on a rank stays unrolled — BTIO's loop over the cells of a
// process, whose offsets depend on (rank % q + c) % q. Ranks with the
// same structure are folded again together: consecutive runs of equal
// statements become a loop when each value is, over the iterations c and
// the ranks r of the group, a function of a few features of (c, r) (see
// fitMix). Small loops the ranks folded differently are unrolled first
// (unroll), so that the ranks agree on the structure.

// table is the value of a monomial in each iteration of the loop of depth
// d: vals[c] in iteration c.
type table struct {
	d    int
	vals []int64
}

// mix is a value as a function of a loop variable v (depth d) and the
// rank: Σ coefs[f] · feature f (see features).
type mix struct {
	d     int
	q     int64 // the modulus of the modular features
	coefs []int64
}

// The features a mix uses, by index.
const (
	fOne    = iota // 1
	fV             // v
	fRank          // rank
	fRmod          // rank % q
	fRdiv          // rank / q
	fRmodPV        // (rank % q + v) % q
	fRmodMV        // (rank % q + q - v) % q
	fRdivPV        // (rank / q + v) % (nranks / q)
	fRdivMV        // (rank / q + nranks / q - v) % (nranks / q)
	nFeatures
)

func feature(f int, v, r, q, n int64) int64 {
	switch f {
	case fOne:
		return 1
	case fV:
		return v
	case fRank:
		return r
	case fRmod:
		return r % q
	case fRdiv:
		return r / q
	case fRmodPV:
		return (r%q + v) % q
	case fRmodMV:
		return (r%q + q - v) % q
	case fRdivPV:
		return (r/q + v) % (n / q)
	case fRdivMV:
		return (r/q + n/q - v) % (n / q)
	}
	return 0
}

func (x *mix) eval(v, r int64, n int64) int64 {
	var s int64
	for f, c := range x.coefs {
		if c != 0 {
			s += c * feature(f, v, r, x.q, n)
		}
	}
	return s
}

// fitMix finds a mix that gives vals[i][c] on rank ranks[i] in iteration
// c, with the fewest features.
func fitMix(ranks []int, vals [][]int64, d, nranks int) (*mix, bool) {
	k := len(vals[0])
	n := int64(nranks)
	type pt struct{ v, r, val int64 }
	var pts []pt
	for i, r := range ranks {
		for c, x := range vals[i] {
			pts = append(pts, pt{int64(c), int64(r), x})
		}
	}
	try := func(q int64, fs []int) (*mix, bool) {
		rows := make([][]int64, len(pts))
		ys := make([]int64, len(pts))
		for i, p := range pts {
			row := make([]int64, len(fs))
			for j, f := range fs {
				row[j] = feature(f, p.v, p.r, q, n)
			}
			rows[i], ys[i] = row, p.val
		}
		if len(pts) < len(fs)+2 {
			return nil, false // too few points to tell
		}
		sol, ok := solveExact(rows, ys)
		if !ok {
			return nil, false
		}
		m := &mix{d: d, q: q, coefs: make([]int64, nFeatures)}
		for j, f := range fs {
			m.coefs[f] = sol[j]
		}
		for _, p := range pts {
			if m.eval(p.v, p.r, n) != p.val {
				return nil, false
			}
		}
		return m, true
	}
	if m, ok := try(1, []int{fOne, fV, fRank}); ok {
		return m, true
	}
	var qs []int64
	for q := int64(2); q < n; q++ {
		if n%q == 0 && int64(k) <= q {
			qs = append(qs, q)
		}
	}
	extra := []int{fRmod, fRdiv, fRmodPV, fRmodMV, fRdivPV, fRdivMV}
	for size := 1; size <= 3; size++ {
		for _, q := range qs {
			var pick func(start int, fs []int) (*mix, bool)
			pick = func(start int, fs []int) (*mix, bool) {
				if len(fs) == 2+size {
					return try(q, fs)
				}
				for i := start; i < len(extra); i++ {
					if m, ok := pick(i+1, append(fs, extra[i])); ok {
						return m, true
					}
				}
				return nil, false
			}
			if m, ok := pick(0, []int{fOne, fV}); ok {
				return m, true
			}
		}
	}
	return nil, false
}

// solveExact solves rows·x = ys for integer x: it picks independent rows
// and solves them exactly; the caller checks the rest.
func solveExact(rows [][]int64, ys []int64) ([]int64, bool) {
	n := len(rows[0])
	var a [][]*big.Rat
	var b []*big.Rat
	// Gaussian elimination over the rows, keeping n independent ones.
	for i := range rows {
		if len(a) == n {
			break
		}
		row := make([]*big.Rat, n)
		for j, v := range rows[i] {
			row[j] = new(big.Rat).SetInt64(v)
		}
		y := new(big.Rat).SetInt64(ys[i])
		// Reduce by the kept rows.
		for k, kr := range a {
			p := pivot(kr)
			if row[p].Sign() == 0 {
				continue
			}
			f := new(big.Rat).Quo(row[p], kr[p])
			for j := range row {
				row[j].Sub(row[j], new(big.Rat).Mul(f, kr[j]))
			}
			y.Sub(y, new(big.Rat).Mul(f, b[k]))
		}
		if pivot(row) < 0 {
			continue
		}
		a, b = append(a, row), append(b, y)
	}
	if len(a) < n {
		return nil, false
	}
	// Back substitution: a row is zero at the pivots of the rows kept
	// before it, so the last one has its pivot alone.
	x := make([]*big.Rat, n)
	for i := n - 1; i >= 0; i-- {
		p := pivot(a[i])
		s := new(big.Rat).Set(b[i])
		for j := range a[i] {
			if j != p && a[i][j].Sign() != 0 {
				if x[j] == nil {
					return nil, false
				}
				s.Sub(s, new(big.Rat).Mul(a[i][j], x[j]))
			}
		}
		x[p] = s.Quo(s, a[i][p])
	}
	out := make([]int64, n)
	for j, v := range x {
		if v == nil || !v.IsInt() || !v.Num().IsInt64() {
			return nil, false
		}
		out[j] = v.Num().Int64()
	}
	return out, true
}

func pivot(row []*big.Rat) int {
	for j, v := range row {
		if v.Sign() != 0 {
			return j
		}
	}
	return -1
}

// shiftPoly renumbers loop variables d and deeper by by.
func shiftPoly(p poly, d, by int) poly {
	out := make(poly, len(p))
	for i, t := range p {
		b := []byte(t.m)
		for j := range b {
			if int(b[j]) >= d {
				b[j] = byte(int(b[j]) + by)
			}
		}
		t.m = string(b)
		if t.tab != nil && t.tab.d >= d {
			t.tab = &table{d: t.tab.d + by, vals: t.tab.vals}
		}
		out[i] = t
	}
	return out
}

// substPoly sets loop variable d to c and renumbers the deeper ones one
// up.
func substPoly(p poly, d int, c int64) poly {
	var out poly
	for _, t := range p {
		if t.tab != nil {
			if t.tab.d == d {
				out = addPoly(out, shiftPoly(poly{{m: t.m, c: t.tab.vals[c]}}, d+1, -1))
				continue
			}
			out = append(out, shiftPoly(poly{t}, d+1, -1)...)
			continue
		}
		v := t.c
		var m []byte
		for i := 0; i < len(t.m); i++ {
			if int(t.m[i]) == d {
				v *= c
				continue
			}
			m = append(m, t.m[i])
		}
		if v == 0 {
			continue
		}
		out = addPoly(out, shiftPoly(poly{{m: string(m), c: v}}, d+1, -1))
	}
	return out
}

// mapStmt copies s with f applied to every poly and the loops at depth
// from and deeper moved by by.
func mapStmt(s *stmt, from, by int, f func(poly) poly) *stmt {
	c := *s
	c.holes = make([]poly, len(s.holes))
	for i, p := range s.holes {
		c.holes[i] = f(p)
	}
	if c.kind == tLoop && c.depth >= from {
		c.depth += by
	}
	if c.kind == tRegion && c.depth >= from {
		c.depth += by
	}
	if s.paths != nil {
		c.paths = make([]pathAlt, len(s.paths))
		for i, a := range s.paths {
			hs := make([]poly, len(a.holes))
			for q, p := range a.holes {
				hs[q] = f(p)
			}
			c.paths[i] = pathAlt{s: a.s, holes: hs}
		}
		if c.pathVar >= from {
			c.pathVar += by
		}
	}
	c.body = make([]*stmt, len(s.body))
	for i, b := range s.body {
		c.body[i] = mapStmt(b, from, by, f)
	}
	return &c
}

// choosesPath reports whether a statement of ss picks its path by the
// variable of depth d: such a loop cannot be unrolled.
func choosesPath(ss []*stmt, d int) bool {
	for _, s := range ss {
		if s.paths != nil && s.pathVar == d || choosesPath(s.body, d) {
			return true
		}
	}
	return false
}

// maxUnroll is the largest count of a loop unrolled so that the ranks
// agree on the structure.
const maxUnroll = 8

// unrollList unrolls the loops of a list that run a constant, small
// number of times.
func unrollList(list []*stmt) []*stmt {
	var out []*stmt
	for _, s := range list {
		if s.kind != tLoop {
			out = append(out, s)
			continue
		}
		k, ok := s.count().constant()
		if !ok || k < 1 || k > maxUnroll || choosesPath(s.body, s.depth) {
			out = append(out, s)
			continue
		}
		d := s.depth
		for c := int64(0); c < k; c++ {
			for j, b := range s.body {
				u := mapStmt(b, d+1, -1, func(p poly) poly { return substPoly(p, d, c) })
				u.gaps = splitGaps(b.gaps, k)
				if c == 0 && j == 0 && len(u.gaps) > 0 && len(s.gaps) > 0 {
					u.gaps[0].add(s.gaps[0])
				}
				out = append(out, u)
			}
		}
	}
	return out
}

func splitGaps(gs []gap, k int64) []gap {
	out := make([]gap, len(gs))
	for i, g := range gs {
		out[i] = gap{sum: g.sum / k, n: max(g.n/k, 1)}
	}
	return out
}

// siblingFold folds, in the lists of a group of ranks with the same
// structure, runs of equal statements into loops of depth d (see the top
// of this file).
func (mg *merger) siblingFold(ranks []int, lists [][]*stmt, d int) [][]*stmt {
	n := len(lists[0])
	out := make([][]*stmt, len(lists))
	for i := 0; i < n; {
		bestSave, bestM, bestK := 0, 0, 0
		var bestBody [][]*stmt
		for m := 1; m <= 16 && i+2*m <= n; m++ {
			first := sig(lists[0][i : i+m])
			k := 1
			for i+(k+1)*m <= n && sig(lists[0][i+k*m:i+(k+1)*m]) == first {
				k++
			}
			if k < 2 {
				continue
			}
			lines := 0
			for _, s := range lists[0][i : i+m] {
				lines += s.t.leaves
			}
			save := (k-1)*lines - 2
			if save <= bestSave {
				continue
			}
			if body, ok := mg.tryFold(ranks, lists, i, m, k, d); ok {
				bestSave, bestM, bestK, bestBody = save, m, k, body
			}
		}
		if bestM == 0 {
			for r := range lists {
				out[r] = append(out[r], lists[r][i])
			}
			i++
			continue
		}
		for r := range lists {
			out[r] = append(out[r], loopStmt(bestBody[r], d, int64(bestK)))
		}
		i += bestM * bestK
	}
	return out
}

// loopStmt makes a loop of count k over body.
func loopStmt(body []*stmt, d int, k int64) *stmt {
	t := &tmpl{kind: tLoop, leaves: 1}
	for _, b := range body {
		t.body = append(t.body, b.t)
		t.leaves += b.t.leaves
	}
	t.eff = seqEffect(t.body)
	return &stmt{kind: tLoop, t: t, holes: []poly{constPoly(k)}, depth: d, body: body, gaps: []gap{{}}}
}

// tryFold folds the k runs of m statements from i of every rank's list
// into a loop body, if every value fits.
func (mg *merger) tryFold(ranks []int, lists [][]*stmt, i, m, k, d int) ([][]*stmt, bool) {
	bodies := make([][]*stmt, len(lists))
	for r, l := range lists {
		inst := make([][]*stmt, k)
		for c := range inst {
			inst[c] = l[i+c*m : i+(c+1)*m]
		}
		body, ok := combine(inst, d)
		if !ok {
			return nil, false
		}
		if len(seqEffect(templatesOf(body))) != 0 {
			return nil, false
		}
		bodies[r] = body
	}
	// Every value must fit over the group's ranks, as merging will ask.
	var check func(ss [][]*stmt) bool
	check = func(ss [][]*stmt) bool {
		for pos := range ss[0] {
			per := make([]*stmt, len(ss))
			for r := range ss {
				per[r] = ss[r][pos]
			}
			if _, ok := mg.fit(ranks, per, true); !ok {
				return false
			}
			if len(per[0].body) > 0 {
				sub := make([][]*stmt, len(ss))
				for r := range ss {
					sub[r] = per[r].body
				}
				if !check(sub) {
					return false
				}
			}
		}
		return true
	}
	if !check(bodies) {
		return nil, false
	}
	return bodies, true
}

func templatesOf(ss []*stmt) []*tmpl {
	ts := make([]*tmpl, len(ss))
	for i, s := range ss {
		ts[i] = s.t
	}
	return ts
}

// combine makes one statement list of k instances of equal structure:
// each value a line in the new loop variable d, or a table. The instances'
// loops from depth d on move one deeper first.
func combine(inst [][]*stmt, d int) ([]*stmt, bool) {
	shifted := make([][]*stmt, len(inst))
	for c, l := range inst {
		shifted[c] = make([]*stmt, len(l))
		for j, s := range l {
			shifted[c][j] = mapStmt(s, d, 1, func(p poly) poly { return shiftPoly(p, d, 1) })
		}
	}
	return combineShifted(shifted, d)
}

// combineShifted is combine of statements whose variables are renumbered
// already.
func combineShifted(inst [][]*stmt, d int) ([]*stmt, bool) {
	out := make([]*stmt, len(inst[0]))
	for j, s0 := range inst[0] {
		for c := range inst {
			if !samePaths(inst[c][j], s0) {
				return nil, false // paths by iteration that differ: not folded
			}
		}
		n, ok := combineOne(inst, j, d)
		if !ok {
			return nil, false
		}
		if len(s0.body) > 0 {
			sub := make([][]*stmt, len(inst))
			for c := range inst {
				sub[c] = inst[c][j].body
			}
			b, ok := combineShifted(sub, d)
			if !ok {
				return nil, false
			}
			n.body = b
		}
		out[j] = n
	}
	return out, true
}

// combinePolys makes one poly of a hole's values in k iterations of the
// loop of depth d: per monomial, a constant, a line in v_d, or a table.
func combinePolys(ps []poly, d int, kind hkind) (poly, bool) {
	if kind.meet() {
		v, _ := ps[0].constant()
		for _, p := range ps[1:] {
			w, _ := p.constant()
			var ok bool
			if kind == kAlt {
				v &= w
				ok = v != 0
			} else {
				v, ok = meetWidth(v, w)
			}
			if !ok {
				return nil, false
			}
		}
		return constPoly(v), true
	}
	var ms []string
	seen := map[string]bool{}
	for _, p := range ps {
		for _, t := range p {
			if t.tab != nil {
				return nil, false // a table in a table
			}
			if !seen[t.m] {
				seen[t.m] = true
				ms = append(ms, t.m)
			}
		}
	}
	sort.Strings(ms)
	var out poly
	k := len(ps)
	for _, m := range ms {
		vals := make([]int64, k)
		for c, p := range ps {
			vals[c] = p.coef(m)
		}
		stride, line := int64(0), true
		if k > 1 {
			stride = vals[1] - vals[0]
		}
		for c := 2; c < k && line; c++ {
			line = vals[c]-vals[c-1] == stride
		}
		if !line {
			out = append(out, term{m: m, tab: &table{d: d, vals: vals}})
			continue
		}
		out = addPoly(out, constPoly0(m, vals[0]))
		out = addPoly(out, mulVar(constPoly0(m, stride), d))
	}
	return out, true
}

func constPoly0(m string, c int64) poly {
	if c == 0 {
		return nil
	}
	return poly{{m: m, c: c}}
}

// samePaths reports whether two statements choose the same paths by
// iteration (or none).
func samePaths(a, b *stmt) bool {
	if len(a.paths) != len(b.paths) || a.pathVar != b.pathVar {
		return false
	}
	for i := range a.paths {
		if a.paths[i].s.key() != b.paths[i].s.key() {
			return false
		}
		for q := range a.paths[i].holes {
			if !slices.Equal(a.paths[i].holes[q], b.paths[i].holes[q]) {
				return false
			}
		}
	}
	return true
}
