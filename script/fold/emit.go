package fold

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/trace"
)

// emitter writes the merged program as a script syntax tree.
type emitter struct {
	nranks int
	keep   float64 // gaps at least this long (ns) stay where they are
	min    float64 // pooled think time below this (ns) is dropped
	groups map[uint32][]int
	used   map[int]bool // loop variables used by the expressions made
	// onFirst and onSize are the first rank and the size of the group
	// of the on block being written; onFirst is -1 outside on blocks.
	onFirst int
	onSize  int
	level   int // nesting of the list being written (1: the top)
	nvars   int // string variables made
	mg      *merger
	dir     string // a directory prefix written as the parameter dir
	colors  map[int64]splitColor
	err     error
}

// loopVar names the variable of the loop at depth d.
func loopVar(d int) string {
	names := []string{"i", "j", "k", "m", "n", "p", "q", "s", "t", "u"}
	if d < len(names) {
		return names[d]
	}
	return "i" + strconv.Itoa(d)
}

func groupName(c uint32) string { return "comm" + strconv.FormatUint(uint64(c), 10) }

func ident(s string) *script.Ident { return &script.Ident{Name: s} }

func bin(op string, x, y script.Expr) script.Expr { return &script.BinaryExpr{Op: op, X: x, Y: y} }

func neg(x script.Expr) script.Expr { return &script.UnaryExpr{Op: "-", X: x} }

var errnoName = sync.OnceValue(func() map[int64]string {
	m := map[int64]string{}
	for _, n := range trace.ErrnoNames() {
		v, _ := trace.ParseErrno(n)
		m[v] = n
	}
	return m
})

var fcntlNames = map[int64]string{trace.FDupfd: "F_DUPFD", trace.FGetfd: "F_GETFD", trace.FSetfd: "F_SETFD",
	trace.FGetfl: "F_GETFL", trace.FSetfl: "F_SETFL", trace.FDupfdCloexec: "F_DUPFD_CLOEXEC"}

// atFlagsExpr writes the AT_ flags of an *at call by name, the other
// bits (the mark of calls inside MPI-IO) in hex.
func atFlagsExpr(v int64) script.Expr {
	var x script.Expr
	rest := v
	for _, f := range []struct {
		name string
		bit  int64
	}{{"AT_SYMLINK_NOFOLLOW", 0x100}, {"AT_REMOVEDIR", 0x200}, {"AT_SYMLINK_FOLLOW", 0x400}, {"AT_EMPTY_PATH", 0x1000}} {
		if rest&f.bit != 0 {
			rest &^= f.bit
			if x == nil {
				x = ident(f.name)
			} else {
				x = bin("|", x, ident(f.name))
			}
		}
	}
	if rest != 0 || x == nil {
		h := &script.NumLit{Raw: "0x" + strconv.FormatInt(rest, 16), Value: rest}
		if x == nil {
			return h
		}
		return bin("|", x, h)
	}
	return x
}

// lit writes a constant the way its kind reads best.
func lit(v int64, k hkind) script.Expr {
	if v < 0 && v != math.MinInt64 {
		switch k {
		case kPeer, kAny:
			if v == -1 {
				return ident("any")
			}
			if v == int64(trace.ProcNull) && k == kPeer {
				return ident("none")
			}
		case kRet:
			if n, ok := errnoName()[-v]; ok {
				return neg(ident(n))
			}
		}
		if k != kOFlags && k != kAmode && k != kPerm && k != kHex && k != kFcntl && k != kAtFlags && k != kStatusFlags {
			return neg(lit(-v, k))
		}
	}
	switch k {
	case kSize, kRet:
		return script.Size(v)
	case kOFlags:
		return flagsExpr(trace.FormatOpenFlags(uint32(v)))
	case kAmode:
		return flagsExpr(trace.FormatMPIMode(uint32(v)))
	case kPerm:
		return &script.NumLit{Raw: "0o" + strconv.FormatInt(v, 8), Value: v}
	case kHex:
		return &script.NumLit{Raw: "0x" + strconv.FormatInt(v, 16), Value: v}
	case kFcntl:
		if n, ok := fcntlNames[v]; ok {
			return ident(n)
		}
	case kAtFlags:
		return atFlagsExpr(v)
	case kStatusFlags:
		if s := strings.TrimPrefix(trace.FormatOpenFlags(uint32(v)), "O_RDONLY|"); s != "O_RDONLY" {
			return flagsExpr(s)
		}
	}
	return script.Int(v)
}

// flagsExpr turns "O_WRONLY|O_CREAT|0x100000" into an expression the
// script language reads: names it knows, hex for the rest.
func flagsExpr(s string) script.Expr {
	var x script.Expr
	var rest int64
	for _, p := range strings.Split(s, "|") {
		var e script.Expr
		switch {
		case strings.HasPrefix(p, "0x"):
			v, _ := strconv.ParseInt(p[2:], 16, 64)
			rest |= v
			continue
		case p == "0":
			continue
		case script.Reserved(p):
			e = ident(p)
		default:
			v, err := trace.ParseFlags(p)
			if err != nil {
				continue
			}
			rest |= int64(v)
			continue
		}
		if x == nil {
			x = e
		} else {
			x = bin("|", x, e)
		}
	}
	if rest != 0 {
		h := &script.NumLit{Raw: "0x" + strconv.FormatInt(rest, 16), Value: rest}
		if x == nil {
			return h
		}
		return bin("|", x, h)
	}
	if x == nil {
		return script.Int(0)
	}
	return x
}

// An atom is a factor of a term: a loop variable or a function of the
// rank.
type atom struct {
	key  string // sorts loop variables (by depth) before rank terms
	expr script.Expr
}

type eterm struct {
	c     int64
	atoms []atom
}

func (t eterm) key() string {
	ks := make([]string, len(t.atoms))
	for i, a := range t.atoms {
		ks[i] = a.key
	}
	return strings.Join(ks, "*")
}

// expr writes a hole.
func (em *emitter) expr(p rpoly, k hkind) script.Expr {
	if v, ok := p.constant(); ok {
		return lit(v, k)
	}
	elemKind := k // elements of tables are constants: written as their kind reads
	if k == kOFlags || k == kAmode || k == kPerm || k == kHex || k == kFcntl || k == kAtFlags || k == kStatusFlags {
		k = kInt
	}
	var terms []eterm
	for _, t := range p {
		var vars []atom
		for i := 0; i < len(t.m); i++ {
			d := int(t.m[i])
			em.used[d] = true
			vars = append(vars, atom{key: fmt.Sprintf("a%03d", d), expr: ident(loopVar(d))})
		}
		with := func(a atom) []atom { return append(append([]atom{}, vars...), a) }
		rank := atom{key: "r", expr: ident("rank")}
		if t.mix != nil {
			terms = append(terms, em.mixTerms(t.mix, vars)...)
			continue
		}
		if t.list != nil {
			// A table: [e0, e1, …][v].
			l := &script.ListLit{}
			for _, f := range t.list {
				l.Elems = append(l.Elems, em.expr(rpoly{{f: f}}, elemKind))
			}
			em.used[t.listVar] = true
			x := &script.IndexExpr{X: l, Index: ident(loopVar(t.listVar))}
			terms = append(terms, eterm{1, append(append([]atom{}, vars...), atom{key: "t" + strconv.Itoa(len(terms)), expr: x})})
			continue
		}
		f := t.f
		switch f.kind {
		case rConst:
			terms = append(terms, eterm{f.a, vars})
		case rAffine:
			if em.onFirst >= 0 {
				// In an on block, grank: a + b·rank = (a + b·first) + b·grank.
				a, ok := mulAdd(f.a, f.b, int64(em.onFirst))
				if ok {
					terms = append(terms, eterm{a, vars}, eterm{f.b, with(atom{key: "r", expr: ident("grank")})})
					break
				}
			}
			terms = append(terms, eterm{f.a, vars}, eterm{f.b, with(rank)})
		case rGrid:
			ms := script.Int(f.m)
			terms = append(terms, eterm{f.a, vars},
				eterm{f.b, with(atom{key: "r%" + strconv.FormatInt(f.m, 10), expr: &script.ParenExpr{X: bin("%", ident("rank"), ms)}})},
				eterm{f.c, with(atom{key: "r/" + strconv.FormatInt(f.m, 10), expr: &script.ParenExpr{X: bin("/", ident("rank"), ms)}})})
		case rRing:
			n, r, a := ident("nranks"), ident("rank"), f.a
			if em.onFirst >= 0 && f.m == int64(em.onSize) {
				// A ring of the group: rank = first + grank.
				n, r = ident("gsize"), ident("grank")
				a = ((a+f.b*int64(em.onFirst))%f.m + f.m) % f.m
			} else if f.m != int64(em.nranks) {
				n = nil
			}
			var in script.Expr
			if f.b == 1 {
				in = r
				if a != 0 {
					in = bin("+", in, script.Int(a))
				}
			} else {
				var m script.Expr = script.Int(f.m)
				if n != nil {
					m = n
				}
				in = bin("-", bin("+", script.Int(a), m), r)
			}
			var m script.Expr = script.Int(f.m)
			if n != nil {
				m = n
			}
			terms = append(terms, eterm{1, with(atom{key: "rr" + strconv.FormatInt(f.a, 10), expr: &script.ParenExpr{X: bin("%", in, m)}})})
		}
	}
	// Gather equal terms.
	byKey := map[string]int{}
	var out []eterm
	for _, t := range terms {
		if t.c == 0 {
			continue
		}
		sort.Slice(t.atoms, func(i, j int) bool { return t.atoms[i].key < t.atoms[j].key })
		if i, ok := byKey[t.key()]; ok {
			out[i].c += t.c
			continue
		}
		byKey[t.key()] = len(out)
		out = append(out, t)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if (len(out[i].atoms) == 0) != (len(out[j].atoms) == 0) {
			return len(out[i].atoms) == 0
		}
		return out[i].key() < out[j].key()
	})
	var konst script.Expr
	var out0 int64
	if len(out) > 0 && len(out[0].atoms) == 0 {
		if out[0].c != 0 {
			konst, out0 = lit(out[0].c, k), out[0].c
		}
		out = out[1:]
	}
	var x script.Expr
	// Factor out a common size: 24 + (i * 8 + rank) * 512KiB.
	if k == kSize && len(out) >= 2 {
		g := int64(0)
		for _, t := range out {
			g = gcd(g, abs64(t.c))
		}
		small := true
		for _, t := range out {
			small = small && abs64(t.c/g) <= int64(max(em.nranks, 16))
		}
		if g >= 1024 && g%1024 == 0 && small {
			x = bin("*", &script.ParenExpr{X: sumTerms(out, g, kInt)}, script.Size(g))
		}
	}
	if x == nil {
		if konst != nil && k == kSize && out0 > 0 {
			return addTerms(konst, out, 1, k)
		}
		x = sumTerms(out, 1, k)
	}
	if konst == nil {
		if p, ok := x.(*script.ParenExpr); ok {
			return p.X
		}
		return x
	}
	if u, ok := x.(*script.UnaryExpr); ok && u.Op == "-" {
		return bin("-", konst, u.X)
	}
	// A size reads best as base + offset (header + i * chunk); anything
	// else as i + 1, rank - 2.
	if c := out0; k != kSize || c < 0 {
		if c < 0 {
			return bin("-", x, lit(-c, k))
		}
		return bin("+", x, konst)
	}
	return bin("+", konst, x)
}

// mixTerms writes a mix (sibling folding) as terms.
func (em *emitter) mixTerms(x *mix, vars []atom) []eterm {
	v := func() script.Expr {
		em.used[x.d] = true
		return ident(loopVar(x.d))
	}
	q, nq := script.Int(x.q), script.Int(int64(em.nranks)/max(x.q, 1))
	paren := func(e script.Expr) script.Expr { return &script.ParenExpr{X: e} }
	rmod := func() script.Expr { return bin("%", ident("rank"), q) }
	rdiv := func() script.Expr { return bin("/", ident("rank"), q) }
	var out []eterm
	for f, c := range x.coefs {
		if c == 0 {
			continue
		}
		var a *atom
		switch f {
		case fV:
			a = &atom{key: fmt.Sprintf("a%03d", x.d), expr: v()}
		case fRank:
			a = &atom{key: "r", expr: ident("rank")}
		case fRmod:
			a = &atom{key: "r1", expr: paren(rmod())}
		case fRdiv:
			a = &atom{key: "r2", expr: paren(rdiv())}
		case fRmodPV:
			a = &atom{key: "r3", expr: paren(bin("%", bin("+", rmod(), v()), q))}
		case fRmodMV:
			a = &atom{key: "r4", expr: paren(bin("%", bin("-", bin("+", rmod(), q), v()), q))}
		case fRdivPV:
			a = &atom{key: "r5", expr: paren(bin("%", bin("+", rdiv(), v()), nq))}
		case fRdivMV:
			a = &atom{key: "r6", expr: paren(bin("%", bin("-", bin("+", rdiv(), nq), v()), nq))}
		}
		atoms := append([]atom{}, vars...)
		if a != nil {
			atoms = append(atoms, *a)
		}
		out = append(out, eterm{c, atoms})
	}
	return out
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// sumTerms writes terms, each coefficient divided by g.
func sumTerms(ts []eterm, g int64, k hkind) script.Expr { return addTerms(nil, ts, g, k) }

// addTerms adds terms to x (nil: none yet), left to right.
func addTerms(x script.Expr, ts []eterm, g int64, k hkind) script.Expr {
	for _, t := range ts {
		c := t.c / g
		var e script.Expr
		for _, a := range t.atoms {
			if e == nil {
				e = a.expr
			} else {
				e = bin("*", e, a.expr)
			}
		}
		negative := c < 0
		if negative {
			c = -c
		}
		if c != 1 {
			e = bin("*", e, lit(c, k))
		}
		switch {
		case x == nil && negative:
			x = neg(e)
		case x == nil:
			x = e
		case negative:
			x = bin("-", x, e)
		default:
			x = bin("+", x, e)
		}
	}
	return x
}

// str writes a string template.
func (em *emitter) str(s *strT, holes []rpoly, dirOK bool) script.Expr {
	sl := &script.StringLit{}
	addLit := func(t string) {
		if t == "" {
			return
		}
		if n := len(sl.Parts); n > 0 && sl.Parts[n-1].Expr == nil {
			sl.Parts[n-1].Lit += t
			return
		}
		sl.Parts = append(sl.Parts, script.StrPart{Lit: t})
	}
	first := s.lits[0]
	if dirOK && em.dir != "" && strings.HasPrefix(first, em.dir+"/") {
		sl.Parts = append(sl.Parts, script.StrPart{Expr: ident("dir")})
		first = first[len(em.dir):]
	}
	addLit(first)
	for i := 0; i < s.runs(); i++ {
		v, w := holes[s.base+2*i], holes[s.base+2*i+1]
		width, _ := w.constant()
		if c, ok := v.constant(); ok {
			txt := strconv.FormatInt(c, 10)
			if width > 0 && len(txt) < int(width) {
				txt = strings.Repeat("0", int(width)-len(txt)) + txt
			}
			addLit(txt)
		} else {
			x := em.expr(v, kInt)
			if width > 0 {
				x = &script.CallExpr{Fun: ident("pad"), Args: []script.Expr{x, script.Int(width)}}
			}
			sl.Parts = append(sl.Parts, script.StrPart{Expr: x})
		}
		addLit(s.lits[i+1])
	}
	return sl
}

// pathVar writes the path of a leaf of table folding, chosen by the
// iteration: a string variable and the if chain that sets it. It returns
// the variable's name and the statements.
func (em *emitter) pathVar(m *mstmt) (string, []script.Stmt) {
	d := m.per[0].pathVar
	// Group the iterations whose paths are one template with values in a
	// progression over them.
	type group struct {
		iters []int
		expr  script.Expr
	}
	var groups []*group
	pathExpr := func(iters []int) (script.Expr, bool) {
		a := m.paths[iters[0]]
		for _, c := range iters {
			if m.paths[c].s.key() != a.s.key() {
				return nil, false
			}
		}
		holes := make([]rpoly, len(a.holes))
		for q := range a.holes {
			var vals []int64
			for _, c := range iters {
				alt := m.paths[c]
				if alt.s.key() != a.s.key() {
					return nil, false
				}
				v, ok := alt.holes[q].constant()
				if !ok {
					if len(iters) > 1 && !equalR(alt.holes[q], a.holes[q]) {
						return nil, false
					}
				}
				vals = append(vals, v)
			}
			holes[q] = a.holes[q]
			if _, ok := a.holes[q].constant(); !ok || len(iters) == 1 || q%2 == 1 {
				continue
			}
			// A line over the iterations: v0 + stride·(j - iters[0]).
			stride := int64(0)
			if len(vals) > 1 {
				stride = (vals[1] - vals[0]) / int64(iters[1]-iters[0])
			}
			for i, c := range iters {
				if vals[i] != vals[0]+stride*int64(c-iters[0]) {
					return nil, false
				}
			}
			base := vals[0] - stride*int64(iters[0])
			holes[q] = rpoly{{f: rfun{a: base}}}
			if base == 0 {
				holes[q] = nil
			}
			if stride != 0 {
				holes[q] = append(holes[q], rterm{m: string(rune(d)), f: rfun{a: stride}})
			}
		}
		return em.str(a.s, holes, true), true
	}
	for c := range m.paths {
		placed := false
		for _, g := range groups {
			if x, ok := pathExpr(append(append([]int{}, g.iters...), c)); ok {
				g.iters = append(g.iters, c)
				g.expr = x
				placed = true
				break
			}
		}
		if !placed {
			x, _ := pathExpr([]int{c})
			groups = append(groups, &group{iters: []int{c}, expr: x})
		}
	}
	def := 0
	for i, g := range groups {
		if len(g.iters) > len(groups[def].iters) {
			def = i
		}
	}
	em.nvars++
	name := "file"
	if em.nvars > 1 {
		name += strconv.Itoa(em.nvars)
	}
	out := []script.Stmt{&script.LetStmt{Name: ident(name), Value: groups[def].expr}}
	all := make([]int, len(m.paths))
	for i := range all {
		all[i] = i
	}
	var head, cur *script.IfStmt
	for i, g := range groups {
		if i == def {
			continue
		}
		em.used[d] = true // the chain tests the loop's iteration
		n := &script.IfStmt{Cond: condOn(ident(loopVar(d)), g.iters, all),
			Then: &script.Block{Stmts: []script.Stmt{&script.AssignStmt{Name: ident(name), Value: g.expr}}}}
		if cur == nil {
			head = n
		} else {
			cur.ElseIf = n
		}
		cur = n
	}
	if head != nil {
		out = append(out, head)
	}
	return name, out
}

// command writes a leaf.
func (em *emitter) command(m *mstmt) script.Stmt {
	l := m.t.leaf
	if l.commName != "" && em.onFirst >= 0 {
		// On a communicator split made (comm NAME), grank and gsize are
		// its own: the command's values are written with the rank.
		first := em.onFirst
		em.onFirst = -1
		defer func() { em.onFirst = first }()
	}
	c := &script.CommandStmt{Name: l.cmd}
	switch l.operand {
	case oPath:
		c.Operand = em.str(l.path, m.holes, true)
	case oLabel:
		c.Operand = em.str(l.path, m.holes, false)
	case oHandle:
		c.Operand = ident(l.handle)
	case oInt:
		c.Operand = em.expr(m.holes[l.intHole], m.t.kinds[l.intHole])
	}
	switch l.cmd {
	case "open", "mpiopen", "inherit", "split":
		c.Args = append(c.Args, &script.Arg{Key: "as", Name: ident(l.handle)})
	case "dup":
		c.Args = append(c.Args, &script.Arg{Key: "as", Name: ident(l.handle2)})
	case "copy":
		c.Args = append(c.Args, &script.Arg{Key: "to", Name: ident(l.handle2)})
	}
	if l.path2 != nil {
		if l.text2 {
			c.Args = append(c.Args, &script.Arg{Key: "target", Value: em.str(l.path2, m.holes, false)})
		} else {
			c.Args = append(c.Args, &script.Arg{Key: "to", Value: em.str(l.path2, m.holes, true)})
		}
	}
	for _, a := range l.args {
		arg := &script.Arg{Key: a.key, Word: a.word}
		switch {
		case a.maskHole > 0:
			// A peer: its value, or xor(rank, x) — xor(grank, x) in a
			// group, whose peers are group ranks (groupPeers).
			mask, _ := m.holes[a.maskHole].constant()
			_, one := m.holes[a.hole].constant()
			_, oneX := m.holes[a.altHole].constant()
			if mask&2 != 0 && !one && oneX {
				mask = 2 // xor(rank, 1) reads better than a function of the rank
			}
			if mask&1 != 0 {
				arg.Value = em.expr(m.holes[a.hole], kPeer)
			} else {
				r := "rank"
				if l.comm >= 2 || l.commName != "" {
					r = "grank"
				}
				arg.Value = &script.CallExpr{Fun: ident("xor"), Args: []script.Expr{ident(r), em.expr(m.holes[a.altHole], kInt)}}
			}
		case a.hole >= 0:
			if omit(l, a, m.holes) {
				continue
			}
			if k, ok := m.holes[a.hole].constant(); ok && l.cmd == "split" && a.key == "color" {
				// The color of every rank of the split's parent, as each
				// rank computes it (splitColors).
				if c, ok := em.colors[k]; ok {
					arg.Value = em.color(c)
					break
				}
			}
			arg.Value = em.expr(m.holes[a.hole], m.t.kinds[a.hole])
		}
		c.Args = append(c.Args, arg)
	}
	return c
}

// color writes the color of a split: a function of the rank, or a list
// indexed by the rank.
func (em *emitter) color(c splitColor) script.Expr {
	if c.list == nil {
		return em.expr(rpoly{{f: c.f}}, kInt)
	}
	l := &script.ListLit{}
	for _, v := range c.list {
		l.Elems = append(l.Elems, lit(v, kInt))
	}
	return &script.IndexExpr{X: l, Index: ident("rank")}
}

// omit reports whether an argument of l has its default value.
func omit(l *leafT, a argT, holes []rpoly) bool {
	p := holes[a.hole]
	switch {
	case a.hasDef:
		v, ok := p.constant()
		return ok && v == a.def
	case a.defHole >= 0:
		return equalR(p, holes[a.defHole])
	case a.defMode:
		// The mode of an open: 0644 when it creates a file, 0 otherwise.
		v, ok := p.constant()
		for _, f := range l.args {
			if f.key == "flags" {
				fl, fok := holes[f.hole].constant()
				creates := fl&(trace.OCreat|0x400000) != 0
				return ok && fok && (creates && v == 0o644 || !creates && v == 0)
			}
		}
	}
	return false
}

func equalR(a, b rpoly) bool {
	return slices.EqualFunc(a, b, func(x, y rterm) bool {
		return x.m == y.m && x.f == y.f && x.mix == y.mix && x.listVar == y.listVar && slices.Equal(x.list, y.list)
	})
}

// meanGap is the mean think time of a gap slot over the ranks of m, ns.
func meanGap(m *mstmt, slot int) float64 {
	var g gap
	for _, s := range m.per {
		g.add(s.gaps[slot])
	}
	if g.n == 0 {
		return 0
	}
	return float64(g.sum) / float64(g.n)
}

// roundDur rounds a duration to three significant digits.
func roundDur(ns float64) int64 {
	if ns < 1000 {
		return int64(math.Round(ns))
	}
	e := math.Pow(10, math.Floor(math.Log10(ns))-2)
	return int64(math.Round(ns/e) * e)
}

type lister struct {
	em   *emitter
	out  []script.Stmt
	pool float64
}

func (ls *lister) flush() {
	if ls.pool >= ls.em.min && ls.pool >= 1 {
		ls.out = append(ls.out, &script.CommandStmt{Name: "sleep", Operand: script.Duration(roundDur(ls.pool))})
	}
	ls.pool = 0
}

// think places the think time before a statement.
func (ls *lister) think(ns float64, block bool) {
	switch {
	case ns >= ls.em.keep:
		// The pooled time joins it.
		ls.pool += ns
		ls.flush()
	default:
		ls.pool += ns
		if block {
			ls.flush()
		}
	}
}

func sameRanks(a, b []int) bool { return slices.Equal(a, b) }

// reqs is what a statement needs of the communicator it runs on: 0 for
// all ranks (MPI_COMM_WORLD), c >= 2 for group c.
func reqs(m *mstmt) map[uint32]bool {
	out := map[uint32]bool{}
	var walk func(t *tmpl)
	walk = func(t *tmpl) {
		if t.kind == tLeaf {
			if t.leaf.world {
				out[0] = true
			}
			if t.leaf.comm >= 2 {
				out[t.leaf.comm] = true
			}
			return
		}
		for _, c := range t.body {
			walk(c)
		}
	}
	for _, s := range m.per {
		walk(s.t)
	}
	return out
}

func subset(a, b []int) bool {
	i := 0
	for _, x := range a {
		for i < len(b) && b[i] < x {
			i++
		}
		if i == len(b) || b[i] != x {
			return false
		}
	}
	return true
}

// list writes a list of statements run by the ranks parent; inOn is the
// group of an enclosing on block, or 0.
func (em *emitter) list(items []*mstmt, parent []int, inOn uint32, endGap float64) []script.Stmt {
	ls := &lister{em: em}
	em.level++
	defer func() { em.level-- }()
	spans := em.spans(items, parent)
	for i := 0; i < len(items); {
		m := items[i]
		if hi, ok := spans[i]; ok {
			ls.flush()
			ls.out = append(ls.out, em.branches(items[i:hi], parent, inOn, em.level == 1 && hi == len(items))...)
			i = hi
			continue
		}
		// A run of statements of group c goes in an on block.
		if inOn == 0 {
			if r := reqs(m); len(r) == 1 && !r[0] {
				var c uint32
				for c = range r {
				}
				members := em.groups[c]
				j, last := i, i
				for j < len(items) && subset(items[j].ranks, members) {
					if _, ok := spans[j]; ok && j > i {
						break
					}
					rj := reqs(items[j])
					if len(rj) > 1 || len(rj) == 1 && !rj[c] {
						break
					}
					if rj[c] || !balancedItems(items[i:last+1]) {
						last = j
					}
					j++
				}
				if !balancedItems(items[i : last+1]) {
					em.fail(fmt.Errorf("ranks %s open a file on communicator %d and use it with calls on another communicator; the script language cannot say so", rankList(items[i].ranks), c))
				}
				ls.flush()
				ls.out = append(ls.out, em.on(c, items[i:last+1]))
				i = last + 1
				continue
			}
		}
		if sameRanks(m.ranks, parent) {
			ls.stmt(m, parent, inOn)
			i++
			continue
		}
		// Statements of some of the ranks: if blocks.
		j := i
		for j < len(items) && !sameRanks(items[j].ranks, parent) {
			j++
		}
		ls.flush()
		ls.out = append(ls.out, em.ifs(items[i:j], parent, inOn)...)
		i = j
	}
	ls.pool += endGap
	ls.flush()
	return ls.out
}

func (em *emitter) fail(err error) {
	if em.err == nil {
		em.err = err
	}
}

func balancedItems(items []*mstmt) bool { return len(seqEffect(templates(items))) == 0 }

func templates(items []*mstmt) []*tmpl {
	ts := make([]*tmpl, len(items))
	for i, m := range items {
		ts[i] = m.per[0].t
	}
	return ts
}

// spans finds the stretches of a list where statements of some of the
// ranks open or close a handle that statements outside them use: an if
// block around them would hide the handle's name. Each stretch is
// written as one if chain with a branch for each set of ranks that run
// the same statements in it (see branches). It returns their ends by
// their starts.
func (em *emitter) spans(items []*mstmt, parent []int) map[int]int {
	out := map[int]int{}
	for i := 0; i < len(items); {
		if sameRanks(items[i].ranks, parent) {
			i++
			continue
		}
		j := i
		for j < len(items) && !sameRanks(items[j].ranks, parent) {
			j++
		}
		if clusterBalanced(items[i:j], em.level == 1 && j == len(items)) {
			i = j
			continue
		}
		lo, hi := 0, len(items)
		if len(items) <= 200 {
		search:
			for l := i; l >= 0; l-- {
				for h := j; h <= len(items); h++ {
					if spanBalanced(items[l:h], parent, em.level == 1 && h == len(items)) {
						lo, hi = l, h
						break search
					}
				}
			}
		}
		// Merge with the stretches it overlaps.
		for s, e := range out {
			if s < hi && e > lo {
				lo, hi = min(lo, s), max(hi, e)
				delete(out, s)
			}
		}
		out[lo] = hi
		i = hi
	}
	return out
}

// clusterBalanced reports whether the statements of each set of ranks in
// a run of statements of subsets are balanced on their own.
func clusterBalanced(items []*mstmt, atEnd bool) bool {
	var sets [][]int
	for _, m := range items {
		found := false
		for _, s := range sets {
			found = found || sameRanks(s, m.ranks)
		}
		if !found {
			sets = append(sets, m.ranks)
		}
	}
	for _, s := range sets {
		var ts []*tmpl
		for _, m := range items {
			if subset(s, m.ranks) || sameRanks(s, m.ranks) {
				ts = append(ts, m.per[0].t)
			} else if intersects(s, m.ranks) {
				return false
			}
		}
		if !effOK(seqEffect(ts), atEnd) {
			return false
		}
	}
	return true
}

// effOK reports whether the handle effect of a block is harmless: it
// opens and closes its own handles, or at the end of the script leaves
// some open.
func effOK(eff []string, atEnd bool) bool {
	for _, e := range eff {
		if e[0] == '-' || !atEnd {
			return false
		}
	}
	return true
}

func intersects(a, b []int) bool {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			return true
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return false
}

// classes splits parent into the sets of ranks that run the same
// statements of items.
func classes(items []*mstmt, parent []int) [][]int {
	byKey := map[string]int{}
	var out [][]int
	for _, r := range parent {
		key := make([]byte, len(items))
		for i, m := range items {
			if _, ok := sortSearch(m.ranks, r); ok {
				key[i] = 1
			}
		}
		k := string(key)
		if _, ok := byKey[k]; !ok {
			byKey[k] = len(out)
			out = append(out, nil)
		}
		out[byKey[k]] = append(out[byKey[k]], r)
	}
	return out
}

func sortSearch(rs []int, r int) (int, bool) {
	i := sort.SearchInts(rs, r)
	return i, i < len(rs) && rs[i] == r
}

func spanBalanced(items []*mstmt, parent []int, atEnd bool) bool {
	for _, c := range classes(items, parent) {
		var ts []*tmpl
		for _, m := range items {
			if _, ok := sortSearch(m.ranks, c[0]); ok {
				ts = append(ts, m.per[0].t)
			}
		}
		if !effOK(seqEffect(ts), atEnd) {
			return false
		}
	}
	return true
}

// restrict returns what m does on the ranks s, nil if none of them runs
// it.
func restrict(mg *merger, m *mstmt, s []int) *mstmt {
	c := *m
	c.ranks, c.per = nil, nil
	for i, r := range m.ranks {
		if _, ok := sortSearch(s, r); ok {
			c.ranks = append(c.ranks, r)
			c.per = append(c.per, m.per[i])
		}
	}
	if len(c.ranks) == 0 {
		return nil
	}
	if len(c.ranks) < len(m.ranks) {
		// Fewer ranks may need fewer terms (one rank: none).
		if h, ok := mg.fit(c.ranks, c.per); ok {
			c.holes = h
			c.paths, _ = mg.fitPaths(c.ranks, c.per)
		}
	}
	c.body = nil
	for _, b := range m.body {
		if x := restrict(mg, b, c.ranks); x != nil {
			c.body = append(c.body, x)
		}
	}
	return &c
}

// branches writes a stretch of statements as an if chain with one branch
// per set of ranks that run the same statements.
func (em *emitter) branches(items []*mstmt, parent []int, inOn uint32, atEnd bool) []script.Stmt {
	cs := classes(items, parent)
	covered := 0
	var sets [][]int
	var bodies [][]*mstmt
	for _, c := range cs {
		var its []*mstmt
		for _, m := range items {
			if x := restrict(em.mg, m, c); x != nil {
				its = append(its, x)
			}
		}
		if len(its) == 0 {
			continue
		}
		if !effOK(seqEffect(templates(its)), atEnd) {
			em.fail(fmt.Errorf("ranks %s open file %s in a block and use it outside; the script language cannot say so", rankList(c), seqEffect([]*tmpl{its[0].per[0].t})))
		}
		sets, bodies = append(sets, c), append(bodies, its)
		covered += len(c)
	}
	if head := em.chain(sets, bodies, parent, inOn, covered == len(parent)); head != nil {
		return []script.Stmt{head}
	}
	return nil
}

func (ls *lister) stmt(m *mstmt, parent []int, inOn uint32) {
	em := ls.em
	switch m.kind {
	case tLeaf:
		ls.think(meanGap(m, 0), false)
		if m.paths != nil {
			name, pre := em.pathVar(m)
			ls.out = append(ls.out, pre...)
			c := em.command(m).(*script.CommandStmt)
			c.Operand = ident(name)
			ls.out = append(ls.out, c)
			break
		}
		ls.out = append(ls.out, em.command(m))
	case tLoop:
		ls.think(meanGap(m, 0), true)
		body := em.list(m.body, m.ranks, inOn, 0)
		r := &script.RepeatStmt{Count: em.expr(m.holes[0], kCount), Body: &script.Block{Stmts: body}}
		if em.used[m.depth] {
			r.As = ident(loopVar(m.depth))
			delete(em.used, m.depth)
		}
		ls.out = append(ls.out, r)
	case tRegion:
		if eff := m.per[0].t.eff; len(eff) > 0 {
			em.fail(fmt.Errorf("ranks %s open or close file %s in region %q and use it outside the region; the script language cannot say so",
				rankList(m.ranks), eff[0][1:], m.per[0].t.label.lits[0]))
		}
		ls.think(meanGap(m, 0), true)
		body := em.list(m.body, m.ranks, inOn, meanGap(m, 1))
		ls.out = append(ls.out, &script.TimeStmt{Label: em.str(m.t.label, m.holes, false), Body: &script.Block{Stmts: body}})
	}
}

// on writes statements of group c in an on block.
func (em *emitter) on(c uint32, items []*mstmt) script.Stmt {
	members := em.groups[c]
	em.onFirst, em.onSize = members[0], len(members)
	body := em.list(items, members, c, 0)
	em.onFirst = -1
	return &script.OnStmt{Group: ident(groupName(c)), Body: &script.Block{Stmts: body}}
}

// groupOf returns the group whose ranks are s, when statements of s can
// run in an on block of it: they need no other communicator.
func (em *emitter) groupOf(s []int, items []*mstmt) (uint32, bool) {
	for c, members := range em.groups {
		if !sameRanks(s, members) {
			continue
		}
		for _, m := range items {
			for r := range reqs(m) {
				if r != c {
					return 0, false
				}
			}
		}
		return c, true
	}
	return 0, false
}

// ifs writes statements of subsets of the ranks.
func (em *emitter) ifs(items []*mstmt, parent []int, inOn uint32) []script.Stmt {
	// Pairwise disjoint sets: one if/else chain, each set's statements
	// together (no rank runs two of them, so their order across sets does
	// not matter).
	var sets [][]int
	var bodies [][]*mstmt
	disjoint := true
	seen := map[int]int{}
	for _, m := range items {
		k := -1
		for i, s := range sets {
			if sameRanks(s, m.ranks) {
				k = i
			}
		}
		if k < 0 {
			for _, r := range m.ranks {
				if _, ok := seen[r]; ok {
					disjoint = false
				}
				seen[r] = len(sets)
			}
			sets = append(sets, m.ranks)
			bodies = append(bodies, nil)
			k = len(sets) - 1
		}
		bodies[k] = append(bodies[k], m)
	}
	if !disjoint {
		// Runs of equal sets, one if each.
		var out []script.Stmt
		for i := 0; i < len(items); {
			j := i
			for j < len(items) && sameRanks(items[j].ranks, items[i].ranks) {
				j++
			}
			out = append(out, em.ifs(items[i:j], parent, inOn)...)
			i = j
		}
		return out
	}
	var out []script.Stmt
	// Sets that are groups are on blocks; the others an if chain.
	covered := 0
	var rest [][]int
	var restBodies [][]*mstmt
	for i, s := range sets {
		if c, ok := em.groupOf(s, bodies[i]); ok && inOn == 0 {
			out = append(out, em.on(c, bodies[i]))
			continue
		}
		rest, restBodies = append(rest, s), append(restBodies, bodies[i])
		covered += len(s)
	}
	if head := em.chain(rest, restBodies, parent, inOn, covered == len(parent)); head != nil {
		out = append(out, head)
	}
	return out
}

// chain writes statements of disjoint sets of ranks as one if chain, the
// last an else when the sets cover parent. nil when there are none.
func (em *emitter) chain(sets [][]int, bodies [][]*mstmt, parent []int, inOn uint32, all bool) script.Stmt {
	var head, cur *script.IfStmt
	for i, s := range sets {
		body := &script.Block{Stmts: em.list(bodies[i], s, inOn, 0)}
		if i == len(sets)-1 && all && cur != nil {
			cur.Else = body
			break
		}
		n := &script.IfStmt{Cond: em.cond(s, parent), Then: body}
		if cur == nil {
			head = n
		} else {
			cur.ElseIf = n
		}
		cur = n
	}
	if head == nil {
		return nil
	}
	return head
}

func rankList(rs []int) string {
	var parts []string
	for i := 0; i < len(rs); {
		j := i
		for j+1 < len(rs) && rs[j+1] == rs[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(rs[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", rs[i], rs[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// cond writes a condition that holds on the ranks s among parent.
func (em *emitter) cond(s, parent []int) script.Expr { return condOn(ident("rank"), s, parent) }

// condOn writes a condition on x (rank, a loop variable) that holds for
// the values s among parent.
func condOn(v script.Expr, s, parent []int) script.Expr {
	rank := func() script.Expr { return v }
	eq := func(op string, v int) script.Expr { return bin(op, rank(), script.Int(int64(v))) }
	if len(s) == 1 {
		return eq("==", s[0])
	}
	if len(parent)-len(s) == 1 {
		for i, r := range parent {
			if i >= len(s) || s[i] != r {
				return eq("!=", r)
			}
		}
	}
	// Ranges of consecutive members of parent.
	pos := map[int]int{}
	for i, r := range parent {
		pos[r] = i
	}
	type rng struct{ lo, hi int }
	var rs []rng
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && pos[s[j+1]] == pos[s[j]]+1 {
			j++
		}
		rs = append(rs, rng{s[i], s[j]})
		i = j + 1
	}
	// An arithmetic progression: rank % step == c.
	if len(s) > 2 && len(rs) > 2 {
		step := s[1] - s[0]
		ok := step > 1
		for i := 1; i < len(s) && ok; i++ {
			ok = s[i]-s[i-1] == step
		}
		if ok {
			n := 0
			for _, r := range parent {
				if r >= s[0] && r <= s[len(s)-1] && (r-s[0])%step == 0 {
					n++
				}
			}
			if n == len(s) {
				x := bin("==", bin("%", rank(), script.Int(int64(step))), script.Int(int64(s[0]%step)))
				if s[0] >= step {
					x = bin("&&", eq(">=", s[0]), x)
				}
				if last := s[len(s)-1]; last+step <= parent[len(parent)-1] {
					x = bin("&&", x, eq("<=", last))
				}
				return x
			}
		}
	}
	var x script.Expr
	for _, r := range rs {
		var c script.Expr
		switch {
		case r.lo == r.hi:
			c = eq("==", r.lo)
		case r.lo == parent[0]:
			c = eq("<=", r.hi)
		case r.hi == parent[len(parent)-1]:
			c = eq(">=", r.lo)
		default:
			c = bin("&&", eq(">=", r.lo), eq("<=", r.hi))
		}
		if x == nil {
			x = c
		} else {
			if b, ok := c.(*script.BinaryExpr); ok && b.Op == "&&" {
				c = &script.ParenExpr{X: c}
			}
			if b, ok := x.(*script.BinaryExpr); ok && b.Op == "&&" {
				x = &script.ParenExpr{X: x}
			}
			x = bin("||", x, c)
		}
	}
	return x
}
