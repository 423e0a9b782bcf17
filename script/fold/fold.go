package fold

import (
	"fmt"
	"math"
)

// A folder folds one rank's stream of commands into loops, online.
//
// It keeps a sequence of nodes per open region (frame). After each new
// node it looks at the end of the sequence for a repetition: the last L
// nodes equal to the L before them (a loop of 2 with nothing changing),
// or the last 3·L nodes three runs whose holes follow arithmetic
// progressions (a loop of 3, each hole base + stride·i); and for a loop
// L nodes back whose next iteration the last L nodes are (the loop grows
// by one). Loops are nodes like the others, so loops of loops form the
// same way. Once the last node is a loop, the incoming commands are
// compared one by one with what its next iteration would make, so a loop
// of a million iterations grows in constant memory and time per command;
// at the first difference the commands held for the unfinished iteration
// are folded the ordinary way. Only the last win nodes are ever compared,
// so the work per command is bounded.
type folder struct {
	in     *interner
	win    int
	frames []*frame
	err    error
	free   []*node // leaves an iteration of a loop has taken, to reuse
}

// newNode returns a leaf node with nh holes and one gap slot.
func (f *folder) newNode(nh int) *node {
	if n := len(f.free); n > 0 {
		x := f.free[n-1]
		f.free = f.free[:n-1]
		if cap(x.h) >= nh {
			x.h = x.h[:nh]
			x.g = x.g[:1]
			return x
		}
	}
	return &node{h: make([]int64, nh), g: make([]gap, 1)}
}

type frame struct {
	seq   []*node
	label *label // nil for the top frame
	ext   *ext
}

// ext is the extension of the last node of a frame, a loop, by its next
// iteration.
type ext struct {
	x *node
	// counts are the counts of the loops like x before it: when x reaches
	// one, it may make an outer loop with them.
	counts map[int64]bool
	w      walker
	buf    []*node
	slots  [][2]int // gap slots in x of each node of buf: of its slot 0, of the rest
	whole  int      // how many nodes of buf are whole elements of x's body (not inside its inner loops)
	narrow []widthNarrow
}

// widthNarrow narrows a hole that combines (a format of digits, a mask
// of alternatives) to what a new iteration allows too.
type widthNarrow struct {
	at   int
	v    int64
	kind hkind
}

func (n widthNarrow) apply(h []int64) {
	if n.kind == kAlt {
		h[n.at] &= n.v
	} else if m, ok := meetWidth(h[n.at], n.v); ok {
		h[n.at] = m
	}
}

// matchHoles reports whether the holes got continue the holes want of a
// template: equal, but formats of digits need only be compatible, and of
// a peer's two forms one is enough. It returns how the combining holes
// narrow (by hole).
func matchHoles(t *tmpl, want, got []int64) ([]widthNarrow, bool) {
	var out []widthNarrow
	var masks map[int]int64
	for q, k := range t.kinds {
		switch {
		case k == kWidth:
			m, ok := meetWidth(want[q], got[q])
			if !ok {
				return nil, false
			}
			if m != want[q] {
				out = append(out, widthNarrow{at: q, v: m, kind: k})
			}
		case k == kAlt:
		case t.alt[q] >= 0:
			mi, bit := t.alt[q], altBit(k)
			if want[mi]&got[mi]&bit == 0 || want[q] != got[q] {
				if masks == nil {
					masks = map[int]int64{}
				}
				cur, ok := masks[mi]
				if !ok {
					cur = want[mi] & got[mi]
				}
				masks[mi] = cur &^ bit
			}
		default:
			if want[q] != got[q] {
				return nil, false
			}
		}
	}
	for q, k := range t.kinds {
		if k != kAlt {
			continue
		}
		m := want[q] & got[q]
		if v, ok := masks[q]; ok {
			m = v
		}
		if m == 0 {
			return nil, false
		}
		if m != want[q] {
			out = append(out, widthNarrow{at: q, v: m, kind: k})
		}
	}
	return out, true
}

func newFolder(in *interner, win int) *folder {
	return &folder{in: in, win: win, frames: []*frame{{}}}
}

func (f *folder) top() *frame { return f.frames[len(f.frames)-1] }

func (f *folder) leaf(n *node) error {
	f.push(f.top(), n)
	return nil
}

func (f *folder) begin(l *label) error {
	f.frames = append(f.frames, &frame{label: l})
	return nil
}

func (f *folder) end(l *label) error {
	fr := f.top()
	if fr.label == nil {
		return fmt.Errorf("the end of region %q, which did not begin", l.text)
	}
	if fr.label.text != l.text {
		return fmt.Errorf("the end of region %q inside region %q (regions must nest)", l.text, fr.label.text)
	}
	f.flush(fr)
	f.frames = f.frames[:len(f.frames)-1]
	body := make([]*tmpl, len(fr.seq))
	for i, n := range fr.seq {
		body[i] = n.t
	}
	lb := fr.label
	t := f.in.region(lb.s, len(lb.h), lb.kinds, body)
	n := &node{t: t, h: make([]int64, 0, t.nh), g: make([]gap, 0, t.ng)}
	n.h = append(n.h, lb.h...)
	n.g = append(n.g, gap{sum: lb.gap, n: 1})
	for _, c := range fr.seq {
		n.h = append(n.h, c.h...)
		n.g = append(n.g, c.g...)
	}
	n.g = append(n.g, gap{sum: l.gap, n: 1})
	f.push(f.top(), n)
	return nil
}

// finish ends the stream and returns the top sequence.
func (f *folder) finish() ([]*node, error) {
	if len(f.frames) > 1 {
		return nil, fmt.Errorf("region %q has no end", f.top().label.text)
	}
	fr := f.top()
	f.flush(fr)
	return fr.seq, nil
}

// flush gives up the extension of a frame: the nodes it holds join the
// sequence.
func (f *folder) flush(fr *frame) { f.abandon(fr) }

func (f *folder) push(fr *frame, x *node) {
	if fr.ext != nil {
		if f.extStep(fr, x) {
			return
		}
		f.abandon(fr)
	}
	f.append(fr, x, true)
}

// abandon ends the extension of the last loop of fr. The nodes held for
// its unfinished iteration begin that iteration: the loop rotates so that
// they end its last one instead (a loop starts as late as it can, so that
// ranks whose calls before it differ get the same loop), and whatever it
// cannot take joins the sequence.
func (f *folder) abandon(fr *frame) {
	e := fr.ext
	if e == nil {
		return
	}
	fr.ext = nil
	buf := e.buf
	for m := e.whole; m > 0; m-- {
		if f.rotate(fr, e.x, buf[:m]) {
			buf = buf[m:]
			break
		}
	}
	for _, b := range buf {
		f.append(fr, b, false)
	}
}

// rotate turns loop X, the last node of fr, followed by taken (its body's
// first len(taken) nodes of the iteration after its last), into those
// nodes of its first iteration followed by X with its body rotated left.
func (f *folder) rotate(fr *frame, X *node, taken []*node) bool {
	m := len(taken)
	t := X.t
	L := len(t.body)
	if m >= L || fr.seq[len(fr.seq)-1] != X {
		return false
	}
	body := append(append([]*tmpl{}, t.body[m:]...), t.body[:m]...)
	if len(seqEffect(body)) != 0 {
		return false
	}
	nt := f.in.loop(body)
	x := &node{t: nt, h: make([]int64, nt.nh), g: make([]gap, nt.ng)}
	x.h[0] = X.h[0]
	var pre []*node
	for c := 0; c < L; c++ {
		ct := t.body[c]
		nc := (c - m + L) % L // its place in the new body
		off, noff := 1+2*t.hoff[c], 1+2*nt.hoff[nc]
		for q, kind := range ct.kinds {
			base, stride := X.h[off+2*q], X.h[off+2*q+1]
			if c < m && !kind.meet() {
				var ok bool
				if base, ok = mulAdd(base, stride, 1); !ok {
					return false
				}
			}
			x.h[noff+2*q], x.h[noff+2*q+1] = base, stride
		}
		copy(x.g[nt.goff[nc]:nt.goff[nc]+ct.ng], X.g[t.goff[c]:t.goff[c]+ct.ng])
		if c < m {
			n := &node{t: ct, h: make([]int64, ct.nh), g: make([]gap, ct.ng)}
			for q := range ct.kinds {
				n.h[q] = X.h[off+2*q]
			}
			for s, g := range taken[c].g {
				x.g[nt.goff[nc]+s].add(g)
			}
			pre = append(pre, n)
		}
	}
	pre[0].g[0] = X.g[0]
	seq := append(fr.seq[:len(fr.seq)-1:len(fr.seq)-1], pre...)
	fr.seq = append(seq, x)
	return true
}

func (f *folder) append(fr *frame, x *node, extend bool) {
	fr.seq = append(fr.seq, x)
	for f.reduce(fr) {
	}
	if extend {
		f.startExt(fr)
	}
}

// startExt starts extending the last node of fr if it is a loop.
func (f *folder) startExt(fr *frame) {
	n := len(fr.seq)
	last := fr.seq[n-1]
	if last.t.kind != tLoop {
		return
	}
	e := &ext{x: last}
	for i := n - 2; i >= max(0, n-1-3*f.win); i-- {
		if fr.seq[i].t == last.t {
			if e.counts == nil {
				e.counts = map[int64]bool{}
			}
			e.counts[fr.seq[i].h[0]] = true
		}
	}
	e.w.start(last)
	fr.ext = e
}

// extStep compares x with the next node of the loop's next iteration. It
// reports false when they differ.
func (f *folder) extStep(fr *frame, x *node) bool {
	e := fr.ext
	outer := len(e.w.stack) == 1 // x would be an element of X's body itself
	t, h, orig, slot, first, ok := e.w.next()
	if !ok || t != x.t {
		return false
	}
	nar, ok := matchHoles(t, h, x.h)
	if !ok {
		return false
	}
	for _, n := range nar {
		e.narrow = append(e.narrow, widthNarrow{at: orig[n.at], v: n.v, kind: t.kinds[n.at]})
	}
	if outer && e.whole == len(e.buf) {
		e.whole++
	}
	e.buf = append(e.buf, x)
	e.slots = append(e.slots, [2]int{first, slot})
	if !e.w.done() {
		return true
	}
	// The iteration is complete: the loop has one more.
	X := e.x
	X.h[0]++
	for i, b := range e.buf {
		X.g[e.slots[i][0]].add(b.g[0])
		if e.slots[i][0] != e.slots[i][1] {
			X.g[e.slots[i][1]].n += b.g[0].n // the run counts where the sleep would be
		}
		for s, g := range b.g[1:] {
			X.g[e.slots[i][1]+1+s].add(g)
		}
	}
	for _, n := range e.narrow {
		n.apply(X.h)
	}
	for _, b := range e.buf {
		if b.t.kind == tLeaf && len(f.free) < 1024 {
			f.free = append(f.free, b)
		}
	}
	e.buf, e.slots, e.narrow, e.whole = e.buf[:0], e.slots[:0], e.narrow[:0], 0
	if e.counts[X.h[0]] {
		// X is now as long as a loop like it before: they may fold.
		n := len(fr.seq)
		for f.reduce(fr) {
		}
		if len(fr.seq) != n || fr.seq[len(fr.seq)-1] != X {
			fr.ext = nil
			f.startExt(fr)
			return true
		}
	}
	e.w.start(X)
	return true
}

// reduce folds the end of the sequence once; it reports whether it did.
func (f *folder) reduce(fr *frame) bool {
	s := fr.seq
	n := len(s)
	last := s[n-1]
	for L := 1; L <= f.win && L < n; L++ {
		// The last L nodes are the next iteration of a loop before them.
		if p := s[n-1-L]; p.t.kind == tLoop && len(p.t.body) == L && p.t.body[L-1] == last.t {
			if extendNodes(p, s[n-L:]) {
				fr.seq = s[:n-L]
				return true
			}
		}
		if 2*L > n || s[n-1-L].t != last.t {
			continue
		}
		if masks, ok := runCheck(s[n-2*L:], L, 2, false); ok && balanced(s[n-L:]) {
			fr.seq = append(s[:n-2*L], f.makeLoop(s[n-2*L:], L, 2, masks))
			return true
		}
		if 3*L > n || s[n-1-2*L].t != last.t {
			continue
		}
		if masks, ok := runCheck(s[n-3*L:], L, 3, true); ok && balanced(s[n-L:]) {
			fr.seq = append(s[:n-3*L], f.makeLoop(s[n-3*L:], L, 3, masks))
			return true
		}
	}
	return false
}

// balanced reports whether a loop body opens and closes its own handles:
// every handle it opens it closes, and it closes none it did not open.
func balanced(body []*node) bool {
	for _, n := range body {
		if len(n.t.eff) > 0 {
			ts := make([]*tmpl, len(body))
			for i, b := range body {
				ts[i] = b.t
			}
			return len(seqEffect(ts)) == 0
		}
	}
	return true
}

// runCheck checks k runs of L nodes: equal templates, and each hole
// equal in every run (or, with affine, in arithmetic progression). Formats
// of digits need only be compatible; of a peer's two forms one is enough.
// It returns the masks of the peers' forms the loop keeps, by position and
// hole.
func runCheck(s []*node, L, k int, affine bool) (map[[2]int]int64, bool) {
	var masks map[[2]int]int64
	for c := 0; c < L; c++ {
		t := s[c].t
		for r := 1; r < k; r++ {
			if s[r*L+c].t != t {
				return nil, false
			}
		}
		var clear map[int]int64
		for q, kind := range t.kinds {
			switch {
			case kind == kWidth:
				m := s[c].h[q]
				for r := 1; r < k; r++ {
					var ok bool
					if m, ok = meetWidth(m, s[r*L+c].h[q]); !ok {
						return nil, false
					}
				}
				continue
			case kind == kAlt:
				continue
			}
			good := true
			d, ok := sub(s[L+c].h[q], s[c].h[q])
			good = ok && (affine || d == 0)
			for r := 2; r < k && good; r++ {
				d2, ok := sub(s[r*L+c].h[q], s[(r-1)*L+c].h[q])
				good = ok && d2 == d
			}
			if mi := t.alt[q]; mi >= 0 {
				bit := altBit(kind)
				for r := 0; r < k; r++ {
					good = good && s[r*L+c].h[mi]&bit != 0
				}
				if !good {
					if clear == nil {
						clear = map[int]int64{}
					}
					clear[mi] |= bit
				}
				continue
			}
			if !good {
				return nil, false
			}
		}
		for q, kind := range t.kinds {
			if kind != kAlt {
				continue
			}
			m := s[c].h[q]
			for r := 1; r < k; r++ {
				m &= s[r*L+c].h[q]
			}
			m &^= clear[q]
			if m == 0 {
				return nil, false
			}
			if masks == nil {
				masks = map[[2]int]int64{}
			}
			masks[[2]int{c, q}] = m
		}
	}
	return masks, true
}

func sub(a, b int64) (int64, bool) {
	d := a - b
	return d, (a >= b) == (d >= 0) && !(b == math.MinInt64 && a >= 0)
}

func mulAdd(base, stride, k int64) (int64, bool) {
	if stride == 0 || k == 0 {
		return base, true
	}
	p := stride * k
	if p/k != stride {
		return 0, false
	}
	v := base + p
	if (p > 0 && v < base) || (p < 0 && v > base) {
		return 0, false
	}
	return v, true
}

// makeLoop folds k runs of L nodes into a loop.
func (f *folder) makeLoop(s []*node, L, k int, masks map[[2]int]int64) *node {
	body := make([]*tmpl, L)
	for i := range body {
		body[i] = s[i].t
	}
	t := f.in.loop(body)
	x := &node{t: t, h: make([]int64, t.nh), g: make([]gap, t.ng)}
	x.h[0] = int64(k)
	for c, ct := range body {
		off := 1 + 2*t.hoff[c]
		for q, kind := range ct.kinds {
			switch kind {
			case kWidth:
				m := s[c].h[q]
				for r := 1; r < k; r++ {
					m, _ = meetWidth(m, s[r*L+c].h[q])
				}
				x.h[off+2*q] = m
				continue
			case kAlt:
				x.h[off+2*q] = masks[[2]int{c, q}]
				continue
			}
			x.h[off+2*q] = s[c].h[q]
			x.h[off+2*q+1] = s[L+c].h[q] - s[c].h[q]
		}
		for r := 0; r < k; r++ {
			for sl, g := range s[r*L+c].g {
				if r == 0 && c == 0 && sl == 0 {
					// The think time before the loop; the body's first
					// slot still counts the run (a sleep there runs every
					// iteration: its mean is over the iterations).
					x.g[0] = g
					x.g[t.goff[c]].n += g.n
					continue
				}
				x.g[t.goff[c]+sl].add(g)
			}
		}
	}
	return x
}

// extendNodes adds tail, a run of nodes, to loop p if it is p's next
// iteration.
func extendNodes(p *node, tail []*node) bool {
	k := p.h[0]
	var narrow []widthNarrow
	for c, ct := range p.t.body {
		x := tail[c]
		if x.t != ct {
			return false
		}
		off := 1 + 2*p.t.hoff[c]
		want := make([]int64, ct.nh)
		for q, kind := range ct.kinds {
			base, stride := p.h[off+2*q], p.h[off+2*q+1]
			if kind.meet() {
				want[q] = base
				continue
			}
			v, ok := mulAdd(base, stride, k)
			if !ok {
				return false
			}
			want[q] = v
		}
		nar, ok := matchHoles(ct, want, x.h)
		if !ok {
			return false
		}
		for _, n := range nar {
			n.at = off + 2*n.at
			narrow = append(narrow, n)
		}
	}
	p.h[0]++
	for _, n := range narrow {
		n.apply(p.h)
	}
	for c, x := range tail {
		for sl, g := range x.g {
			p.g[p.t.goff[c]+sl].add(g)
		}
	}
	return true
}

// walker yields the nodes one iteration of a loop makes, descending into
// the loops of its body (but not into regions, which a frame receives
// whole).
type walker struct {
	stack []wframe
	ident []int   // 0, 1, 2, …: the origins of the top loop's holes
	h     []int64 // scratch holes of the node next returns
	orig  []int
}

type wframe struct {
	t     *tmpl
	h     []int64 // holes of this loop, concrete
	orig  []int   // where each hole's base lives in the top loop's holes
	gbase int     // gap slot of this loop in the top loop
	top   bool
	child int
	iter  int64
	n     int64
}

func (w *walker) start(x *node) {
	for len(w.ident) < len(x.h) {
		w.ident = append(w.ident, len(w.ident))
	}
	w.stack = append(w.stack[:0], wframe{t: x.t, h: x.h, orig: w.ident[:len(x.h)], top: true, iter: x.h[0], n: x.h[0] + 1})
	w.settle()
}

// settle pops finished frames and pushes the loops that come next, so
// that the top of the stack is about to yield a leaf or a region.
func (w *walker) settle() {
	for len(w.stack) > 0 {
		f := &w.stack[len(w.stack)-1]
		if f.child == len(f.t.body) {
			f.iter++
			f.child = 0
			if f.top || f.iter >= f.n {
				w.stack = w.stack[:len(w.stack)-1]
				if len(w.stack) > 0 {
					w.stack[len(w.stack)-1].child++
				}
				continue
			}
		}
		ct := f.t.body[f.child]
		if ct.kind != tLoop {
			return
		}
		h, orig, ok := f.childHoles(f.child, nil, nil)
		if !ok || h[0] <= 0 {
			f.child++
			continue
		}
		w.stack = append(w.stack, wframe{t: ct, h: h, orig: orig, gbase: f.gbase + f.t.goff[f.child], n: h[0]})
	}
}

func (w *walker) done() bool { return len(w.stack) == 0 }

// childHoles computes the holes of body element c at the frame's
// iteration, into h and orig if they are large enough.
func (f *wframe) childHoles(c int, h []int64, orig []int) ([]int64, []int, bool) {
	ct := f.t.body[c]
	if cap(h) >= ct.nh && cap(orig) >= ct.nh {
		h, orig = h[:ct.nh], orig[:ct.nh]
	} else {
		h, orig = make([]int64, ct.nh), make([]int, ct.nh)
	}
	off := 1 + 2*f.t.hoff[c]
	for q, kind := range ct.kinds {
		base, stride := f.h[off+2*q], f.h[off+2*q+1]
		orig[q] = f.orig[off+2*q]
		if kind.meet() {
			h[q] = base
			continue
		}
		v, ok := mulAdd(base, stride, f.iter)
		if !ok {
			return nil, nil, false
		}
		h[q] = v
	}
	return h, orig, true
}

// next returns the next node of the iteration: its template, holes, the
// origins of its holes, its gap slots, and the slot its think time before
// it goes to: its own, or when it is the first call of inner loops (in
// their first iteration), the outermost of those loops' slot 0.
func (w *walker) next() (*tmpl, []int64, []int, int, int, bool) {
	if len(w.stack) == 0 {
		return nil, nil, nil, 0, 0, false
	}
	top := len(w.stack) - 1
	f := &w.stack[top]
	c := f.child
	h, orig, ok := f.childHoles(c, w.h, w.orig)
	w.h, w.orig = h, orig
	if !ok {
		w.stack = w.stack[:0]
		return nil, nil, nil, 0, 0, false
	}
	t, slot := f.t.body[c], f.gbase+f.t.goff[c]
	first := slot
	if c == 0 && f.iter == 0 && !f.top {
		first = f.gbase
		for i := top - 1; i >= 0; i-- {
			p := &w.stack[i]
			if p.top || p.iter != 0 || p.child != 0 {
				break
			}
			first = p.gbase
		}
	}
	f.child++
	w.settle()
	return t, h, orig, slot, first, true
}
