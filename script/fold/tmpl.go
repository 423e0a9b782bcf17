package fold

import (
	"strconv"
	"strings"
	"sync"
)

// hkind says what a hole holds: how it folds and how it is printed.
type hkind uint8

const (
	kInt         hkind = iota // a plain int
	kSize                     // bytes: sizes, offsets, byte counts (printed with units)
	kOFlags                   // open flags
	kAmode                    // MPI access mode
	kPerm                     // permission bits (octal)
	kHex                      // other flags (hex)
	kRet                      // a result: negative ones are errno names
	kPeer                     // a peer: -1 is any
	kAny                      // a tag: -1 is any
	kDigits                   // the value of a run of digits in a string
	kWidth                    // the format of a run of digits: see meetWidth
	kCount                    // a repeat count
	kPeerX                    // a peer as xor(rank, x): x (the alternative of a kPeer hole)
	kAlt                      // which of a peer's two forms still hold: bit 1 the plain value, bit 2 the xor
	kFcntl                    // an fcntl command
	kAtFlags                  // AT_ flags of *at calls
	kStatusFlags              // open flags without the access mode (F_SETFL)
)

// altBit is the bit of an alternative hole in its mask hole.
func altBit(k hkind) int64 {
	if k == kPeerX {
		return 2
	}
	return 1
}

// meet reports whether a hole of kind k combines rather than follows a
// progression (formats of digit runs, masks of alternatives).
func (k hkind) meet() bool { return k == kWidth || k == kAlt }

// operand kinds of a leaf command.
type opnd uint8

const (
	oNone   opnd = iota
	oPath        // a string (path) operand
	oHandle      // a handle operand
	oInt         // an int operand (byte count)
	oLabel       // a string label (mark)
)

// strT is the template of a string: literal parts with runs of digits
// between them. Run i has its value in hole base+2i and its format in
// hole base+2i+1.
type strT struct {
	lits []string // len(lits) == runs+1
	base int
	k    string // key(), made once
}

func (s *strT) runs() int { return len(s.lits) - 1 }

func (s *strT) key() string {
	if s == nil {
		return "-"
	}
	if s.k == "" {
		s.k = strconv.Itoa(s.base) + ":" + strings.Join(s.lits, "\x00")
	}
	return s.k
}

// argT is a keyword argument of a leaf command.
type argT struct {
	key  string
	hole int    // the hole of its value; -1 for a word or a bare flag
	word string // the word ("from end", "call openat"); "" for a flag
	// When the value is the default, the argument is left out: a
	// constant (hasDef, def), another hole's value (defHole >= 0), or
	// for the mode of an open, what its flags imply (defMode).
	hasDef  bool
	def     int64
	defHole int
	defMode bool
	// A peer has two forms: the value (hole) and xor(rank, x) (altHole),
	// with maskHole saying which still hold.
	altHole, maskHole int
}

// leafT is the template of one command: everything but the values of its
// holes.
type leafT struct {
	cmd     string
	operand opnd
	path    *strT // oPath, oLabel
	handle  string
	intHole int // oInt
	path2   *strT
	args    []argT
	comm    uint32 // the group communicator the command runs in (>= 2), or 0
	world   bool   // the command runs on all ranks' communicator (outside any on block)
	opens   string // the handle name a successful open (dup, inherit) takes
	handle2 string // dup: the name of the new handle; copy: the handle written
	closes  string // the handle names the command releases, joined by commas
	text2   bool   // path2 is text, not a path (a symlink's target)
	// commName is the communicator made by split the command runs on
	// (comm NAME): its peers and roots are ranks of it.
	commName string
	// hidden is the first of the holes no argument shows (a split's
	// parent and sequence number, for splitColors), -1 none.
	hidden int
	mpi    bool // the handle is an MPI file handle
	events int  // events the command makes
}

func (l *leafT) key() string { return string(l.appendKey(nil, nil)) }

// appendKey appends the key of l, and of the kinds of its holes, to b.
func (l *leafT) appendKey(b []byte, kinds []hkind) []byte {
	b = append(b, l.cmd...)
	b = append(b, '|', byte('0'+l.operand))
	b = append(b, l.path.key()...)
	b = append(b, '|')
	b = append(b, l.handle...)
	b = append(b, '|')
	b = strconv.AppendInt(b, int64(l.intHole), 10)
	b = append(b, l.path2.key()...)
	for _, a := range l.args {
		b = append(b, '|')
		b = append(b, a.key...)
		b = append(b, '=')
		b = strconv.AppendInt(b, int64(a.hole), 10)
		b = append(b, ':')
		b = append(b, a.word...)
		if a.hasDef {
			b = append(b, '?')
			b = strconv.AppendInt(b, a.def, 10)
		}
		if a.defHole >= 0 {
			b = append(b, "?h"...)
			b = strconv.AppendInt(b, int64(a.defHole), 10)
		}
		if a.defMode {
			b = append(b, "?mode"...)
		}
		if a.maskHole > 0 {
			b = append(b, "?alt"...)
			b = strconv.AppendInt(b, int64(a.altHole), 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(a.maskHole), 10)
		}
	}
	b = append(b, '|')
	b = strconv.AppendUint(b, uint64(l.comm), 10)
	b = append(b, '|')
	b = append(b, l.opens...)
	b = append(b, '|')
	b = append(b, l.closes...)
	b = append(b, '|')
	b = append(b, l.handle2...)
	if l.commName != "" {
		b = append(b, "|c:"...)
		b = append(b, l.commName...)
	}
	if l.hidden >= 0 {
		b = append(b, "|h"...)
		b = strconv.AppendInt(b, int64(l.hidden), 10)
	}
	if l.text2 {
		b = append(b, "|text2"...)
	}
	if l.world {
		b = append(b, "|world"...)
	}
	if l.mpi {
		b = append(b, "|mpi"...)
	}
	b = append(b, '|')
	b = strconv.AppendInt(b, int64(l.events), 10)
	b = append(b, '|')
	for _, k := range kinds {
		b = append(b, byte('a'+k))
	}
	return b
}

type tkind uint8

const (
	tLeaf tkind = iota
	tLoop
	tRegion
)

// tmpl is the shape of a node: a command, a loop over a body, or a
// labelled region. Templates are interned: equal shapes are one pointer.
//
// Holes: a leaf has its own. A loop has [count, base0, stride0, base1,
// stride1, …] for the holes of its body in order: body hole q of
// iteration i is base_q + stride_q·i. A region has its label's holes,
// then its body's. Gap slots: a leaf has one (the think time before it);
// a loop one before it (the gap before its first call), then its body's
// (summed over the iterations, but for the first call of the first);
// a region one before it, its body's, one at its end. Slot 0 of every
// node is the think time before it.
type tmpl struct {
	id    int
	kind  tkind
	leaf  *leafT
	label *strT   // region
	body  []*tmpl // loop, region
	hoff  []int   // hole offset of each body element (among the body holes)
	goff  []int   // gap slot of each body element
	nh    int
	ng    int
	kinds []hkind
	alt   []int // for each hole of an alternative (kPeer, kPeerX), its mask hole; -1 otherwise
	key   string
	// eff is what the node does to handles: the opens and closes that are
	// not matched inside it, in order ("+name", "-name").
	eff    []string
	events int64 // events of one run of the body (leaf: its events; loop: one iteration)
	leaves int   // leaf commands in its text (for scoring)
}

// interner makes templates unique. It is safe for concurrent use.
type interner struct {
	mu sync.Mutex
	m  map[string]*tmpl
}

func newInterner() *interner { return &interner{m: map[string]*tmpl{}} }

func (in *interner) get(key string, mk func() *tmpl) *tmpl {
	in.mu.Lock()
	defer in.mu.Unlock()
	if t, ok := in.m[key]; ok {
		return t
	}
	t := mk()
	t.id = len(in.m) + 1
	t.key = key
	in.m[key] = t
	return t
}

func (in *interner) leaf(l *leafT, kinds []hkind) *tmpl {
	key := "l" + string(l.appendKey(nil, kinds))
	return in.get(key, func() *tmpl {
		t := &tmpl{kind: tLeaf, leaf: l, nh: len(kinds), ng: 1, kinds: append([]hkind(nil), kinds...),
			events: int64(l.events), leaves: 1}
		t.alt = make([]int, len(kinds))
		for i := range t.alt {
			t.alt[i] = -1
		}
		for _, a := range l.args {
			if a.maskHole > 0 {
				t.alt[a.hole], t.alt[a.altHole] = a.maskHole, a.maskHole
			}
		}
		// A command releases names before it takes one (dup2 onto an
		// open descriptor).
		if l.closes != "" {
			for _, n := range strings.Split(l.closes, ",") {
				t.eff = append(t.eff, "-"+n)
			}
		}
		if l.opens != "" {
			t.eff = append(t.eff, "+"+l.opens)
		}
		return t
	})
}

func idsKey(prefix string, body []*tmpl) string {
	var b strings.Builder
	b.WriteString(prefix)
	for _, c := range body {
		b.WriteByte(',')
		b.WriteString(strconv.Itoa(c.id))
	}
	return b.String()
}

func (in *interner) loop(body []*tmpl) *tmpl {
	return in.get(idsKey("L", body), func() *tmpl {
		t := &tmpl{kind: tLoop, body: append([]*tmpl(nil), body...), leaves: 1, ng: 1}
		t.kinds = append(t.kinds, kCount)
		nb := 0
		for _, c := range body {
			t.hoff = append(t.hoff, nb)
			t.goff = append(t.goff, t.ng)
			nb += c.nh
			t.ng += c.ng
			t.events += c.events
			t.leaves += c.leaves
			for _, k := range c.kinds {
				if k.meet() {
					// A combining hole has no stride: its slot stays 0.
					t.kinds = append(t.kinds, k, kInt)
				} else {
					t.kinds = append(t.kinds, k, k)
				}
			}
		}
		t.nh = 1 + 2*nb
		t.alt = []int{-1}
		for c, ct := range body {
			for _, a := range ct.alt {
				m := -1
				if a >= 0 {
					m = 1 + 2*(t.hoff[c]+a)
				}
				t.alt = append(t.alt, m, m)
			}
		}
		t.eff = seqEffect(body)
		return t
	})
}

func (in *interner) region(label *strT, nlabel int, labelKinds []hkind, body []*tmpl) *tmpl {
	return in.get(idsKey("R"+label.key(), body), func() *tmpl {
		t := &tmpl{kind: tRegion, label: label, body: append([]*tmpl(nil), body...), leaves: 2}
		t.kinds = append(t.kinds, labelKinds...)
		nh := nlabel
		t.ng = 1
		for _, c := range body {
			t.hoff = append(t.hoff, nh)
			t.goff = append(t.goff, t.ng)
			nh += c.nh
			t.ng += c.ng
			t.events += c.events
			t.leaves += c.leaves
			t.kinds = append(t.kinds, c.kinds...)
		}
		t.ng++
		t.events += 2
		t.nh = nh
		for i := 0; i < nlabel; i++ {
			t.alt = append(t.alt, -1)
		}
		for c, ct := range body {
			for _, a := range ct.alt {
				if a >= 0 {
					a += t.hoff[c]
				}
				t.alt = append(t.alt, a)
			}
		}
		t.eff = seqEffect(body)
		return t
	})
}

// seqEffect is the handle effect of a sequence: opens and closes that do
// not cancel inside it.
func seqEffect(seq []*tmpl) []string {
	var out []string
	for _, t := range seq {
		for _, e := range t.eff {
			if e[0] == '-' {
				// A close cancels the latest open of the same name.
				if i := lastIndex(out, "+"+e[1:]); i >= 0 {
					out = append(out[:i], out[i+1:]...)
					continue
				}
			}
			out = append(out, e)
		}
	}
	return out
}

func lastIndex(s []string, x string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == x {
			return i
		}
	}
	return -1
}

// gap is think time: the sum of the gaps of n calls.
type gap struct {
	sum, n int64
}

func (g *gap) add(o gap) { g.sum += o.sum; g.n += o.n }

// node is a template with the values of its holes and its think time.
type node struct {
	t *tmpl
	h []int64
	g []gap
}

// Width holes record how a run of digits is written: as a plain number
// (natural) or zero-padded to a width. A text with a leading zero ("007")
// is padded: +len. A text without one may be either, when it is as long
// as the padding: -len. 0 is plain only. meetWidth combines two runs that
// must be written the same way.
func meetWidth(a, b int64) (int64, bool) {
	switch {
	case a == b:
		return a, true
	case a == 0:
		return 0, b <= 0
	case b == 0:
		return 0, a <= 0
	case a < 0 && b < 0:
		return 0, true
	case a < 0 && b > 0:
		return b, -a == b
	case a > 0 && b < 0:
		return a, -b == a
	}
	return 0, false
}

// widthOf returns the width hole of a run of digits.
func widthOf(text string) int64 {
	if len(text) > 1 && text[0] == '0' {
		return int64(len(text))
	}
	return -int64(len(text))
}
