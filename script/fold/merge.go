package fold

import (
	"sort"
)

// rfun is a value as a function of the rank: one of
//
//	a                                   (rConst)
//	a + b·rank                          (rAffine)
//	a + b·(rank % m) + c·(rank / m)     (rGrid: a 2-D decomposition)
//	(a + b·rank) % m                    (rRing: neighbours in a ring, m = nranks or the statement's ranks)
type rfun struct {
	kind    uint8
	a, b, c int64
	m       int64
}

const (
	rConst uint8 = iota
	rAffine
	rGrid
	rRing
)

func (f rfun) eval(r int64) (int64, bool) {
	switch f.kind {
	case rConst:
		return f.a, true
	case rAffine:
		return mulAdd(f.a, f.b, r)
	case rGrid:
		v, ok := mulAdd(f.a, f.b, r%f.m)
		if !ok {
			return 0, false
		}
		return mulAdd(v, f.c, r/f.m)
	}
	v, ok := mulAdd(f.a, f.b, r)
	if !ok {
		return 0, false
	}
	return ((v % f.m) + f.m) % f.m, true
}

func (f rfun) fits(ranks []int, vals []int64) bool {
	for i, r := range ranks {
		if v, ok := f.eval(int64(r)); !ok || v != vals[i] {
			return false
		}
	}
	return true
}

// fitRank finds an rfun that gives vals[i] on ranks[i].
func fitRank(ranks []int, vals []int64, nranks int, two bool) (rfun, bool) {
	same := true
	for _, v := range vals[1:] {
		same = same && v == vals[0]
	}
	if same {
		return rfun{kind: rConst, a: vals[0]}, true
	}
	r0, v0 := int64(ranks[0]), vals[0]
	r1, v1 := int64(ranks[1]), vals[1]
	// Two values always lie on a line: that says something only when
	// they are all the ranks there are, or all that run a statement.
	if len(ranks) == 2 && nranks > 2 && !two {
		return rfun{}, false
	}
	if d, ok := sub(v1, v0); ok && d%(r1-r0) == 0 {
		b := d / (r1 - r0)
		if a, ok := mulAdd(v0, -b, r0); ok {
			f := rfun{kind: rAffine, a: a, b: b}
			if f.fits(ranks, vals) {
				return f, true
			}
		}
	}
	// Rings of all ranks, or of the ranks of the statement (a group's,
	// whose peers are group ranks).
	for i, n := range []int64{int64(nranks), int64(len(ranks))} {
		if n <= 1 || len(ranks) <= 2 || i == 1 && n == int64(nranks) {
			continue
		}
		for _, b := range []int64{1, -1} {
			f := rfun{kind: rRing, a: ((v0-b*r0)%n + n) % n, b: b, m: n}
			if f.fits(ranks, vals) {
				return f, true
			}
		}
	}
	// 2-D decompositions: divisors of the rank count first. Three
	// coefficients need more than four ranks to mean anything.
	if len(ranks) <= 4 {
		return rfun{}, false
	}
	var ms []int64
	for m := int64(2); m < int64(nranks); m++ {
		if int64(nranks)%m == 0 {
			ms = append(ms, m)
		}
	}
	if len(ranks) <= 4096 {
		for m := int64(2); m < int64(nranks); m++ {
			if int64(nranks)%m != 0 {
				ms = append(ms, m)
			}
		}
	}
	for _, m := range ms {
		if f, ok := fitGrid(ranks, vals, m); ok {
			return f, true
		}
	}
	return rfun{}, false
}

func fitGrid(ranks []int, vals []int64, m int64) (rfun, bool) {
	r0, v0 := int64(ranks[0]), vals[0]
	x0, y0 := r0%m, r0/m
	var b, c int64
	bi, ci := -1, -1
	for i, r := range ranks {
		x, y := int64(r)%m, int64(r)/m
		if bi < 0 && y == y0 && x != x0 {
			d, ok := sub(vals[i], v0)
			if !ok || d%(x-x0) != 0 {
				return rfun{}, false
			}
			b, bi = d/(x-x0), i
		}
		if ci < 0 && x == x0 && y != y0 {
			d, ok := sub(vals[i], v0)
			if !ok || d%(y-y0) != 0 {
				return rfun{}, false
			}
			c, ci = d/(y-y0), i
		}
	}
	if bi < 0 || ci < 0 {
		return rfun{}, false
	}
	a, ok := mulAdd(v0, -b, x0)
	if ok {
		a, ok = mulAdd(a, -c, y0)
	}
	if !ok {
		return rfun{}, false
	}
	f := rfun{kind: rGrid, a: a, b: b, c: c, m: m}
	return f, f.fits(ranks, vals)
}

// rpoly is a poly whose coefficients are functions of the rank.
type rpoly []rterm

type rterm struct {
	m   string
	f   rfun
	mix *mix // instead of f: a function of the rank and a loop variable (sibling folding)
	// list, instead of f: the value in each iteration of the loop of
	// depth listVar, each a function of the rank (a table).
	list    []rfun
	listVar int
}

func (p rpoly) constant() (int64, bool) {
	switch len(p) {
	case 0:
		return 0, true
	case 1:
		if p[0].m == "" && p[0].f.kind == rConst && p[0].mix == nil && p[0].list == nil {
			return p[0].f.a, true
		}
	}
	return 0, false
}

func (p rpoly) uses(v int) bool {
	for _, t := range p {
		if containsByte(t.m, byte(v)) || t.mix != nil && t.mix.d == v || t.list != nil && t.listVar == v {
			return true
		}
	}
	return false
}

func containsByte(s string, b byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return true
		}
	}
	return false
}

// fitPolys fits the value of one hole on every rank.
func fitPolys(ranks []int, ps []poly, kind hkind, nranks int, two bool) (rpoly, bool) {
	if kind == kWidth {
		w, _ := ps[0].constant()
		for _, p := range ps[1:] {
			v, _ := p.constant()
			var ok bool
			if w, ok = meetWidth(w, v); !ok {
				return nil, false
			}
		}
		return rpoly{{f: rfun{a: w}}}, true
	}
	var ms []string
	seen := map[string]bool{}
	tabVar := -1
	for _, p := range ps {
		for _, t := range p {
			if t.tab != nil {
				if tabVar >= 0 && tabVar != t.tab.d {
					return nil, false
				}
				tabVar = t.tab.d
				continue
			}
			if !seen[t.m] {
				seen[t.m] = true
				ms = append(ms, t.m)
			}
		}
	}
	if tabVar >= 0 {
		return fitTables(ranks, ps, tabVar, nranks, two)
	}
	sort.Strings(ms)
	out := make(rpoly, 0, len(ms))
	vals := make([]int64, len(ps))
	for _, m := range ms {
		for i, p := range ps {
			vals[i] = p.coef(m)
		}
		var f rfun
		if len(ranks) == 1 {
			f = rfun{a: vals[0]}
		} else {
			var ok bool
			if f, ok = fitRank(ranks, vals, nranks, two); !ok {
				return nil, false
			}
		}
		if f.kind == rConst && f.a == 0 {
			continue
		}
		out = append(out, rterm{m: m, f: f})
	}
	return out, true
}

// fitTables fits a hole whose value, on some ranks, is a table over the
// iterations of the loop of depth d (sibling folding): for each monomial
// of the other variables, its coefficient over (iteration, rank) is either
// a line in the iteration with coefficients functions of the rank, or a
// mix.
func fitTables(ranks []int, ps []poly, d, nranks int, two bool) (rpoly, bool) {
	k := 0
	for _, p := range ps {
		for _, t := range p {
			if t.tab != nil {
				k = len(t.tab.vals)
			}
		}
	}
	// The monomials without d, and the values of each on every rank and
	// iteration.
	vals := map[string][][]int64{}
	var bases []string
	for i, p := range ps {
		for _, t := range p {
			base, pow := t.m, 0
			for containsByte(base, byte(d)) {
				j := 0
				for base[j] != byte(d) {
					j++
				}
				base, pow = base[:j]+base[j+1:], pow+1
			}
			if vals[base] == nil {
				vals[base] = make([][]int64, len(ps))
				for r := range vals[base] {
					vals[base][r] = make([]int64, k)
				}
				bases = append(bases, base)
			}
			for c := 0; c < k; c++ {
				if t.tab != nil {
					vals[base][i][c] += t.tab.vals[c]
					continue
				}
				x := t.c
				for e := 0; e < pow; e++ {
					x *= int64(c)
				}
				vals[base][i][c] += x
			}
		}
	}
	sort.Strings(bases)
	var out rpoly
	for _, base := range bases {
		v := vals[base]
		// A line in the iteration on every rank?
		line := true
		as, bs := make([]int64, len(v)), make([]int64, len(v))
		for i, row := range v {
			as[i] = row[0]
			if k > 1 {
				bs[i] = row[1] - row[0]
			}
			for c := 2; c < k && line; c++ {
				line = row[c]-row[c-1] == bs[i]
			}
		}
		if line {
			fa, ok1 := fitRankOrConst(ranks, as, nranks, two)
			fb, ok2 := fitRankOrConst(ranks, bs, nranks, two)
			if ok1 && ok2 {
				if !(fa.kind == rConst && fa.a == 0) {
					out = append(out, rterm{m: base, f: fa})
				}
				if !(fb.kind == rConst && fb.a == 0) {
					m := []byte(base + string(rune(d)))
					sort.Slice(m, func(x, y int) bool { return m[x] < m[y] })
					out = append(out, rterm{m: string(m), f: fb})
				}
				continue
			}
		}
		if x, ok := fitMix(ranks, v, d, nranks); ok {
			out = append(out, rterm{m: base, mix: x})
			continue
		}
		// A table: in each iteration, a function of the rank.
		fs := make([]rfun, k)
		col := make([]int64, len(v))
		for c := 0; c < k; c++ {
			for i := range v {
				col[i] = v[i][c]
			}
			f, ok := fitRankOrConst(ranks, col, nranks, two)
			if !ok {
				return nil, false
			}
			fs[c] = f
		}
		out = append(out, rterm{m: base, list: fs, listVar: d})
	}
	return out, true
}

func fitRankOrConst(ranks []int, vals []int64, nranks int, two bool) (rfun, bool) {
	if len(ranks) == 1 {
		return rfun{a: vals[0]}, true
	}
	return fitRank(ranks, vals, nranks, two)
}

// mstmt is a statement of the merged program: what a set of ranks do, with
// holes as functions of the rank and the loops.
type mstmt struct {
	kind  tkind
	t     *tmpl // a statement of one rank (leaf template; region: its label)
	ranks []int
	per   []*stmt // the statement of each rank, as ranks
	holes []rpoly // leaf holes, region label holes, or [count]
	depth int
	body  []*mstmt
	paths []pathAltR // a leaf's path by iteration (table folding), nil otherwise
}

// pathAltR is a path with the values of its holes as functions of the
// rank.
type pathAltR struct {
	s     *strT
	holes []rpoly
}

// fitPaths fits the paths by iteration of a leaf of table folding.
func (mg *merger) fitPaths(ranks []int, per []*stmt) ([]pathAltR, bool) {
	if per[0].paths == nil {
		for _, s := range per {
			if s.paths != nil {
				return nil, false
			}
		}
		return nil, true
	}
	for _, s := range per {
		if len(s.paths) != len(per[0].paths) || s.pathVar != per[0].pathVar {
			return nil, false
		}
		for c, alt := range s.paths {
			if alt.s.key() != per[0].paths[c].s.key() {
				return nil, false
			}
		}
	}
	out := make([]pathAltR, len(per[0].paths))
	ps := make([]poly, len(per))
	for c, alt := range per[0].paths {
		out[c].s = alt.s
		out[c].holes = make([]rpoly, len(alt.holes))
		for q := range alt.holes {
			for i, s := range per {
				ps[i] = s.paths[c].holes[q]
			}
			rp, ok := fitPolys(ranks, ps, kDigits+hkind(q%2), mg.nranks, true)
			if !ok {
				return nil, false
			}
			out[c].holes[q] = rp
		}
	}
	return out, true
}

type merger struct {
	nranks int
	// maxAlign bounds the alignment of two lists (their lengths'
	// product); longer lists are put one after the other.
	maxAlign int
}

// fit fits the holes of the statements of a set of ranks. It fails when a
// hole is no function of the rank it knows. two allows a line through
// two ranks: when they are all the ranks at that point of the program.
func (mg *merger) fit(ranks []int, per []*stmt, two ...bool) ([]rpoly, bool) {
	s0 := per[0]
	kinds := s0.t.kinds
	if s0.kind == tLoop {
		kinds = []hkind{kCount}
	}
	out := make([]rpoly, len(s0.holes))
	ps := make([]poly, len(per))
	var clear map[int]int64
	for q := range s0.holes {
		if kinds[q] == kAlt {
			continue
		}
		for i, s := range per {
			ps[i] = s.holes[q]
		}
		rp, ok := fitPolys(ranks, ps, kinds[q], mg.nranks, len(two) > 0 && two[0])
		if !ok {
			if s0.kind == tLeaf && s0.t.alt[q] >= 0 {
				// One of a peer's forms: the other may do.
				if clear == nil {
					clear = map[int]int64{}
				}
				clear[s0.t.alt[q]] |= altBit(kinds[q])
				continue
			}
			return nil, false
		}
		out[q] = rp
	}
	for q := range s0.holes {
		if kinds[q] != kAlt {
			continue
		}
		m := int64(3)
		for _, s := range per {
			v, _ := s.holes[q].constant()
			m &= v
		}
		m &^= clear[q]
		if m == 0 {
			return nil, false
		}
		out[q] = rpoly{{f: rfun{a: m}}}
	}
	if _, ok := mg.fitPaths(ranks, per); !ok {
		return nil, false
	}
	return out, true
}

// items makes merged statements of one position of a group of ranks with
// the same structure: one statement, or several for subsets of the ranks
// when a hole is no function of the rank over all of them.
func (mg *merger) items(ranks []int, per []*stmt) []*mstmt {
	if h, ok := mg.fit(ranks, per, true); ok {
		if paths, ok := mg.fitPaths(ranks, per); ok {
			return []*mstmt{{kind: per[0].kind, t: per[0].t, ranks: ranks, per: per, holes: h, depth: per[0].depth, paths: paths}}
		}
	}
	// Split: greedily in rank order, and with the first rank alone.
	try := func(first bool) [][]int {
		var parts [][]int
		var cur []int
		var curS []*stmt
		for i, r := range ranks {
			if len(cur) > 0 && !(first && len(parts) == 0 && len(cur) == 1) {
				if _, ok := mg.fit(append(cur[:len(cur):len(cur)], r), append(curS[:len(curS):len(curS)], per[i])); ok {
					cur, curS = append(cur, r), append(curS, per[i])
					continue
				}
			}
			if len(cur) > 0 {
				parts = append(parts, cur)
			}
			cur, curS = []int{r}, []*stmt{per[i]}
		}
		return append(parts, cur)
	}
	a, b := try(false), try(true)
	if len(b) < len(a) {
		a = b
	}
	idx := map[int]int{}
	for i, r := range ranks {
		idx[r] = i
	}
	var out []*mstmt
	for _, part := range a {
		ps := make([]*stmt, len(part))
		for i, r := range part {
			ps[i] = per[idx[r]]
		}
		h, _ := mg.fit(part, ps)
		paths, _ := mg.fitPaths(part, ps)
		out = append(out, &mstmt{kind: ps[0].kind, t: ps[0].t, ranks: part, per: ps, holes: h, depth: ps[0].depth, paths: paths})
	}
	return out
}

// mergeList merges the lists of statements of a set of ranks into one.
func (mg *merger) mergeList(ranks []int, lists [][]*stmt, depth int) []*mstmt {
	// Group the ranks by the structure of their lists.
	type group struct {
		ranks []int
		lists [][]*stmt
	}
	grouping := func(lists [][]*stmt) []*group {
		var groups []*group
		bySig := map[string]*group{}
		for i, r := range ranks {
			k := sig(lists[i])
			g := bySig[k]
			if g == nil {
				g = &group{}
				bySig[k] = g
				groups = append(groups, g)
			}
			g.ranks = append(g.ranks, r)
			g.lists = append(g.lists, lists[i])
		}
		return groups
	}
	groups := grouping(lists)
	if len(groups) > 1 {
		// Ranks may have folded a small loop differently: unrolled, they
		// may agree.
		un := make([][]*stmt, len(lists))
		for i, l := range lists {
			un[i] = unrollList(l)
		}
		if g2 := grouping(un); len(g2) < len(groups) {
			groups = g2
		}
	}
	for _, g := range groups {
		if len(g.ranks) >= 3 {
			g.lists = mg.siblingFold(g.ranks, g.lists, depth)
		}
	}
	var merged []*mstmt
	for gi, g := range groups {
		var its []*mstmt
		for pos := range g.lists[0] {
			per := make([]*stmt, len(g.ranks))
			for i, l := range g.lists {
				per[i] = l[pos]
			}
			its = append(its, mg.items(g.ranks, per)...)
		}
		if gi == 0 {
			merged = its
		} else {
			merged = mg.align(merged, its)
		}
	}
	for _, m := range merged {
		if m.kind == tLeaf {
			continue
		}
		bodies := make([][]*stmt, len(m.per))
		for i, s := range m.per {
			bodies[i] = s.body
		}
		d := m.depth
		if m.kind == tLoop {
			d++
		}
		m.body = mg.mergeList(m.ranks, bodies, d)
	}
	return merged
}

// union merges two statements of disjoint rank sets, if one statement can
// say what both do.
func (mg *merger) union(a, b *mstmt) (*mstmt, bool) {
	if a.kind != b.kind || a.depth != b.depth {
		return nil, false
	}
	switch a.kind {
	case tLeaf:
		if a.t != b.t {
			return nil, false
		}
	case tRegion:
		if a.t.label.key() != b.t.label.key() {
			return nil, false
		}
	}
	type rs struct {
		r int
		s *stmt
	}
	all := make([]rs, 0, len(a.ranks)+len(b.ranks))
	for i, r := range a.ranks {
		all = append(all, rs{r, a.per[i]})
	}
	for i, r := range b.ranks {
		all = append(all, rs{r, b.per[i]})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].r < all[j].r })
	ranks := make([]int, len(all))
	per := make([]*stmt, len(all))
	for i, x := range all {
		ranks[i], per[i] = x.r, x.s
	}
	h, ok := mg.fit(ranks, per)
	if !ok {
		return nil, false
	}
	paths, _ := mg.fitPaths(ranks, per)
	return &mstmt{kind: a.kind, t: a.t, ranks: ranks, per: per, holes: h, depth: a.depth, paths: paths}, true
}

func (m *mstmt) weight() int {
	if m.kind == tLeaf {
		return 1
	}
	return m.per[0].t.leaves
}

// align merges two lists of statements of disjoint rank sets: the longest
// common subsequence of statements that can be one (weighted by their
// size) becomes shared; the rest stays with its ranks.
func (mg *merger) align(a, b []*mstmt) []*mstmt {
	n, m := len(a), len(b)
	if n*m > mg.maxAlign {
		return append(append([]*mstmt{}, a...), b...)
	}
	type cell struct {
		score int
		u     *mstmt
	}
	dp := make([][]cell, n+1)
	for i := range dp {
		dp[i] = make([]cell, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			best := max(dp[i+1][j].score, dp[i][j+1].score)
			var u *mstmt
			if s := dp[i+1][j+1].score + a[i].weight(); s > best {
				if x, ok := mg.union(a[i], b[j]); ok {
					best, u = s, x
				}
			}
			dp[i][j] = cell{best, u}
		}
	}
	var out []*mstmt
	i, j := 0, 0
	var pa, pb []*mstmt
	for i < n && j < m {
		switch {
		case dp[i][j].u != nil && dp[i][j].score == dp[i+1][j+1].score+a[i].weight():
			out = append(append(append(out, pa...), pb...), dp[i][j].u)
			pa, pb = nil, nil
			i++
			j++
		case dp[i+1][j].score >= dp[i][j+1].score:
			pa = append(pa, a[i])
			i++
		default:
			pb = append(pb, b[j])
			j++
		}
	}
	out = append(append(out, pa...), pb...)
	return append(append(out, a[i:]...), b[j:]...)
}
