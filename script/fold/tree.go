package fold

import (
	"sort"
	"strconv"
	"strings"
)

// A poly is a polynomial over loop variables with int coefficients: the
// value of a hole as a function of the loops around it. Loop variable d
// is the variable of the loop at depth d (0 the outermost). A monomial is
// a string of variable numbers in increasing order ("" the constant).
type poly []term

type term struct {
	m   string
	c   int64
	tab *table // the value varies with a loop variable as no progression does (sibling folding); c unused
}

func constPoly(c int64) poly {
	if c == 0 {
		return nil
	}
	return poly{{c: c}}
}

func (p poly) constant() (int64, bool) {
	switch len(p) {
	case 0:
		return 0, true
	case 1:
		if p[0].m == "" && p[0].tab == nil {
			return p[0].c, true
		}
	}
	return 0, false
}

func (p poly) coef(m string) int64 {
	for _, t := range p {
		if t.m == m && t.tab == nil {
			return t.c
		}
	}
	return 0
}

func addPoly(a, b poly) poly {
	out := make(poly, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || i < len(a) && a[i].m < b[j].m:
			out = append(out, a[i])
			i++
		case i == len(a) || b[j].m < a[i].m:
			out = append(out, b[j])
			j++
		default:
			if c := a[i].c + b[j].c; c != 0 {
				out = append(out, term{m: a[i].m, c: c})
			}
			i++
			j++
		}
	}
	return out
}

// mulVar multiplies p by loop variable v.
func mulVar(p poly, v int) poly {
	out := make(poly, len(p))
	for i, t := range p {
		b := []byte(t.m + string(rune(v)))
		sort.Slice(b, func(x, y int) bool { return b[x] < b[y] })
		out[i] = term{m: string(b), c: t.c}
	}
	sort.Slice(out, func(x, y int) bool { return out[x].m < out[y].m })
	return out
}

func (p poly) uses(v int) bool {
	for _, t := range p {
		if strings.IndexByte(t.m, byte(v)) >= 0 || t.tab != nil && t.tab.d == v {
			return true
		}
	}
	return false
}

// stmt is one rank's folded program as a tree: each hole a poly.
type stmt struct {
	kind  tkind
	t     *tmpl
	holes []poly // leaf: its holes; region: its label's
	depth int    // loop: its variable
	body  []*stmt
	gaps  []gap // leaf: before it; region: before it and at its end
	// paths: the path of the leaf in each iteration of the loop of depth
	// pathVar, when it is no template with values (table folding: dump
	// files named analysis, viz1 … restart); nil otherwise.
	paths   []pathAlt
	pathVar int
}

// pathAlt is a path: a template and the values of its holes.
type pathAlt struct {
	s     *strT
	holes []poly
}

func (s *stmt) count() poly { return s.holes[0] }

// tree turns folded nodes into statements.
func tree(nodes []*node, depth int) []*stmt {
	out := make([]*stmt, len(nodes))
	for i, n := range nodes {
		h := make([]poly, len(n.h))
		for q, v := range n.h {
			h[q] = constPoly(v)
		}
		out[i] = build(n.t, h, n.g, depth)
	}
	return out
}

func build(t *tmpl, h []poly, g []gap, depth int) *stmt {
	switch t.kind {
	case tLeaf:
		return &stmt{kind: tLeaf, t: t, holes: h, gaps: g}
	case tLoop:
		s := &stmt{kind: tLoop, t: t, holes: h[:1], depth: depth, gaps: g[:1]}
		for c, ct := range t.body {
			off := 1 + 2*t.hoff[c]
			ch := make([]poly, ct.nh)
			for q, k := range ct.kinds {
				if k.meet() {
					ch[q] = h[off+2*q]
					continue
				}
				ch[q] = addPoly(h[off+2*q], mulVar(h[off+2*q+1], depth))
			}
			s.body = append(s.body, build(ct, ch, g[t.goff[c]:t.goff[c]+ct.ng], depth+1))
		}
		return s
	}
	nl := 2 * t.label.runs()
	s := &stmt{kind: tRegion, t: t, holes: h[:nl], depth: depth, gaps: []gap{g[0], g[len(g)-1]}}
	for c, ct := range t.body {
		s.body = append(s.body, build(ct, h[t.hoff[c]:t.hoff[c]+ct.nh], g[t.goff[c]:t.goff[c]+ct.ng], depth))
	}
	return s
}

// sig is the structure of a list of statements, without hole values.
func sig(ss []*stmt) string {
	var b strings.Builder
	var walk func([]*stmt)
	walk = func(ss []*stmt) {
		for _, s := range ss {
			switch s.kind {
			case tLeaf:
				b.WriteString("l")
				b.WriteString(itoa(s.t.id))
				if s.paths != nil {
					b.WriteString("P" + itoa(s.pathVar))
					for _, p := range s.paths {
						b.WriteString("|" + p.s.key())
					}
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
			b.WriteByte(',')
		}
	}
	walk(ss)
	return b.String()
}

func itoa(n int) string { return strconv.Itoa(n) }
