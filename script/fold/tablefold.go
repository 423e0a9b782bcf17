package fold

import "strings"

// Table folding: a look, per rank, for runs of blocks that do the same
// with other files. A dump of astro3d writes an analysis file, four
// visualisation files (a loop) and a restart file, each opened, written
// array by array and closed the same way, with other names, array counts
// and sizes. The blocks become one loop: the file's path is chosen by the
// iteration (a string variable set by an if chain), values that follow no
// progression become tables (lists indexed by the iteration, once ranks
// are merged), a block without a loop where the others have one is that
// loop run once, and a small loop of such blocks is unrolled into them.
// It only folds blocks whose files differ: blocks on the same files were
// folded, if they could be, as the calls streamed.

// tableFold folds the lists of one rank's program, bodies first; d is the
// depth of a loop made at this level.
func tableFold(list []*stmt, d int) []*stmt {
	for _, s := range list {
		switch s.kind {
		case tLoop:
			s.body = tableFold(s.body, s.depth+1)
		case tRegion:
			s.body = tableFold(s.body, s.depth)
		}
	}
	var out []*stmt
	for i := 0; i < len(list); {
		bestSave, bestEnd := 0, 0
		var bestBody []*stmt
		var bestK int
		for m := 1; m <= 12 && i+m <= len(list); m++ {
			a := list[i : i+m]
			if !hasPath(a) {
				continue
			}
			insts, end := collect(a, list, i+m)
			if len(insts) < 3 || !pathsDiffer(insts) {
				continue
			}
			body, ok := combineTable(insts, d)
			if !ok {
				continue
			}
			save := textSize(list[i:end]) - textSize(body) - 2 - 6
			if save > bestSave {
				bestSave, bestEnd, bestBody, bestK = save, end, body, len(insts)
			}
		}
		if bestBody == nil {
			out = append(out, list[i])
			i++
			continue
		}
		out = append(out, loopStmt(bestBody, d, int64(bestK)))
		i = bestEnd
	}
	return out
}

// collect gathers, after reference block a, the blocks of list from j on
// that are a's with other values: runs of statements, and the iterations
// of small loops of them.
func collect(a, list []*stmt, j int) ([][]*stmt, int) {
	insts := [][]*stmt{a}
	for j < len(list) {
		if b, n := matchRun(a, list[j:]); n > 0 {
			insts = append(insts, b)
			j += n
			continue
		}
		s := list[j]
		if s.kind == tLoop {
			if k, ok := s.count().constant(); ok && k >= 1 && k <= maxUnroll && !choosesPath(s.body, s.depth) {
				var bs [][]*stmt
				for c := int64(0); c < k; c++ {
					it := unrollIteration(s, c)
					b, n := matchRun(a, it)
					if n != len(it) {
						bs = nil
						break
					}
					bs = append(bs, b)
				}
				if bs != nil {
					insts = append(insts, bs...)
					j++
					continue
				}
			}
		}
		break
	}
	return insts, j
}

// unrollIteration is iteration c of loop s: its body with its variable
// set to c.
func unrollIteration(s *stmt, c int64) []*stmt {
	d := s.depth
	out := make([]*stmt, len(s.body))
	for j, b := range s.body {
		u := mapStmt(b, d+1, -1, func(p poly) poly { return substPoly(p, d, c) })
		if k, ok := s.count().constant(); ok {
			u.gaps = splitGaps(b.gaps, k)
		}
		out[j] = u
	}
	return out
}

// matchRun makes a block like a from the start of rest: where a has a
// loop and rest does not, the statements of its body run once. It returns
// the block and how many statements of rest it took, 0 if rest does not
// start with a block like a.
func matchRun(a, rest []*stmt) ([]*stmt, int) {
	var b []*stmt
	p := 0
	for _, x := range a {
		if p >= len(rest) {
			return nil, 0
		}
		if n := len(x.body); x.kind == tLoop && p+n <= len(rest) &&
			(rest[p].kind != tLoop || skeleton(rest[p:p+1]) != skeleton(a[len(b):len(b)+1])) &&
			skeleton(rest[p:p+n]) == skeleton(x.body) {
			body := make([]*stmt, n)
			for i, s := range rest[p : p+n] {
				body[i] = mapStmt(s, x.depth, 1, func(q poly) poly { return shiftPoly(q, x.depth, 1) })
			}
			b = append(b, loopStmt(body, x.depth, 1))
			p += n
			continue
		}
		b = append(b, rest[p])
		p++
	}
	if skeleton(a) != skeleton(b) {
		return nil, 0
	}
	return b, p
}

// skeleton is the structure of a block without its values, file names
// and handle names (handles are numbered in order of appearance).
func skeleton(ss []*stmt) string {
	names := map[string]string{}
	canon := func(h string) string {
		if h == "" {
			return ""
		}
		if c, ok := names[h]; ok {
			return c
		}
		c := "H" + itoa(len(names))
		names[h] = c
		return c
	}
	var b strings.Builder
	var walk func([]*stmt)
	walk = func(ss []*stmt) {
		for _, s := range ss {
			switch s.kind {
			case tLeaf:
				l := *s.t.leaf
				if l.path != nil {
					l.path = &strT{k: "P"}
				}
				l.handle, l.opens, l.handle2 = canon(l.handle), canon(l.opens), canon(l.handle2)
				if l.closes != "" {
					cs := strings.Split(l.closes, ",")
					for i, c := range cs {
						cs[i] = canon(c)
					}
					l.closes = strings.Join(cs, ",")
				}
				l.intHole = -1
				args := make([]argT, len(l.args))
				for i, a := range l.args {
					a.hole = kindOf(s.t, a.hole)
					if a.maskHole > 0 {
						a.altHole, a.maskHole = kindOf(s.t, a.altHole), kindOf(s.t, a.maskHole)
					}
					a.defHole = -1
					args[i] = a
				}
				l.args = args
				b.WriteString("l" + string(l.appendKey(nil, nil)))
				if s.paths != nil {
					b.WriteString("T")
				}
			case tLoop:
				b.WriteString("L(")
				walk(s.body)
				b.WriteString(")")
			default:
				b.WriteString("R" + s.t.label.key() + "(")
				walk(s.body)
				b.WriteString(")")
			}
			b.WriteByte(';')
		}
	}
	walk(ss)
	return b.String()
}

// kindOf stands for a hole by its kind in a skeleton.
func kindOf(t *tmpl, h int) int {
	if h < 0 || h >= len(t.kinds) {
		return -1
	}
	return 100 + int(t.kinds[h])
}

func hasPath(ss []*stmt) bool {
	for _, s := range ss {
		if s.kind == tLeaf && s.t.leaf.path != nil && s.t.leaf.operand == oPath || hasPath(s.body) {
			return true
		}
	}
	return false
}

// pathsDiffer reports whether the blocks name different path templates.
func pathsDiffer(insts [][]*stmt) bool {
	k0 := pathKeys(insts[0])
	for _, in := range insts[1:] {
		if pathKeys(in) != k0 {
			return true
		}
	}
	return false
}

func pathKeys(ss []*stmt) string {
	var b strings.Builder
	for _, s := range ss {
		if s.kind == tLeaf && s.t.leaf.path != nil {
			b.WriteString(s.t.leaf.path.key() + ";")
		}
		b.WriteString(pathKeys(s.body))
	}
	return b.String()
}

func textSize(ss []*stmt) int {
	n := 0
	for _, s := range ss {
		n++
		if s.kind != tLeaf {
			n += 1 + textSize(s.body)
		}
		if s.paths != nil {
			// The path variable: its let, and an if chain with a test
			// and an assignment per other template (emitter.pathVar
			// groups paths of one template whose values line up).
			keys := map[string]bool{}
			for _, p := range s.paths {
				keys[p.s.key()] = true
			}
			n++
			if len(keys) > 1 {
				n += 2*(len(keys)-1) + 1
			}
		}
	}
	return n
}

// combineTable makes one body of blocks of equal skeleton: values in a
// progression over the blocks become lines in the new loop variable d,
// others tables; paths that differ become the leaf's paths by iteration.
func combineTable(insts [][]*stmt, d int) ([]*stmt, bool) {
	shifted := make([][]*stmt, len(insts))
	for c, l := range insts {
		shifted[c] = make([]*stmt, len(l))
		for j, s := range l {
			shifted[c][j] = mapStmt(s, d, 1, func(p poly) poly { return shiftPoly(p, d, 1) })
		}
	}
	body, ok := combineRoles(shifted, d)
	if !ok || len(seqEffect(templatesOf(body))) != 0 {
		return nil, false
	}
	return body, true
}

// combineRoles is combineShifted for statements whose templates may
// differ in their paths and handle names: their values are matched by
// role (the i-th argument, the operand).
func combineRoles(inst [][]*stmt, d int) ([]*stmt, bool) {
	out := make([]*stmt, len(inst[0]))
	for j, s0 := range inst[0] {
		same := true
		for c := range inst {
			same = same && inst[c][j].t == s0.t && inst[c][j].paths == nil
		}
		if same || s0.kind != tLeaf {
			n, ok := combineOne(inst, j, d)
			if !ok {
				return nil, false
			}
			if s0.kind != tLeaf {
				sub := make([][]*stmt, len(inst))
				for c := range inst {
					sub[c] = inst[c][j].body
				}
				b, ok := combineRoles(sub, d)
				if !ok {
					return nil, false
				}
				n.body = b
			}
			out[j] = n
			continue
		}
		n := *s0
		l0 := s0.t.leaf
		if l0.path2 != nil {
			return nil, false // renames of files named by the iteration: not written
		}
		n.holes = append([]poly(nil), s0.holes...)
		role := func(hole func(l *leafT) int) bool {
			h0 := hole(l0)
			if h0 < 0 {
				return true
			}
			ps := make([]poly, len(inst))
			for c := range inst {
				ps[c] = inst[c][j].holes[hole(inst[c][j].t.leaf)]
			}
			p, ok := combinePolys(ps, d, s0.t.kinds[h0])
			n.holes[h0] = p
			return ok
		}
		if l0.operand == oInt && !role(func(l *leafT) int { return l.intHole }) {
			return nil, false
		}
		for a := range l0.args {
			for _, h := range []func(l *leafT) int{
				func(l *leafT) int { return l.args[a].hole },
				func(l *leafT) int {
					if l.args[a].maskHole > 0 {
						return l.args[a].altHole
					}
					return -1
				},
				func(l *leafT) int {
					if l.args[a].maskHole > 0 {
						return l.args[a].maskHole
					}
					return -1
				},
			} {
				if !role(h) {
					return nil, false
				}
			}
		}
		if l0.path != nil {
			n.pathVar = d
			n.paths = make([]pathAlt, len(inst))
			for c := range inst {
				s := inst[c][j]
				pt := s.t.leaf.path
				n.paths[c] = pathAlt{s: pt, holes: s.holes[pt.base : pt.base+2*pt.runs()]}
			}
		}
		n.gaps = make([]gap, len(s0.gaps))
		for c := range inst {
			for g := range n.gaps {
				n.gaps[g].add(inst[c][j].gaps[g])
			}
		}
		out[j] = &n
	}
	return out, true
}

// combineOne combines the statements at position j of instances whose
// templates are the same.
func combineOne(inst [][]*stmt, j, d int) (*stmt, bool) {
	s0 := inst[0][j]
	n := *s0
	kinds := n.t.kinds
	if n.kind == tLoop {
		kinds = []hkind{kCount}
	}
	n.holes = make([]poly, len(s0.holes))
	for q := range s0.holes {
		ps := make([]poly, len(inst))
		for c := range inst {
			ps[c] = inst[c][j].holes[q]
		}
		p, ok := combinePolys(ps, d, kinds[q])
		if !ok {
			return nil, false
		}
		n.holes[q] = p
	}
	n.gaps = make([]gap, len(s0.gaps))
	for c := range inst {
		for g := range n.gaps {
			n.gaps[g].add(inst[c][j].gaps[g])
		}
	}
	return &n, true
}
