package state

import (
	"math"
	"path"
	"slices"
	"strings"

	"github.com/iotrace/iotrace/internal/sat"
	"github.com/iotrace/iotrace/trace"
)

// Namespace follows the names a trace's calls create, use, rename and
// remove, and the files they name, across every rank that shares it. It
// learns the state before the trace from what the calls observed: a name
// that a call found and that no earlier call of the trace made existed
// before (Initial), with at least the size the trace's reads needed
// (Need); a name a call did not find did not exist. After the last event
// it holds the end state: which names exist, which the trace made or
// changed, which it removed, and the sizes of their files.
//
// Events of several ranks must come in one order that respects their
// dependencies (a replay plan merges the ranks by their collective
// calls, then by time).
type Namespace struct {
	path func(trace.PathID) string
	abs  *Node // "/"
	rel  *Node // the root of relative names (a script's "out.dat")
	byID map[trace.PathID]*Node
	gone []*Node // removed names the trace had seen exist
	// Anomalies counts names found to exist though the trace made them
	// nowhere it could know (an untraced call, another program): the
	// replay cannot prepare them.
	Anomalies int
}

// Kind is what a name names.
type Kind uint8

const (
	KindUnknown Kind = iota
	KindFile
	KindDir
	KindSymlink
)

func (k Kind) String() string {
	return [...]string{"unknown", "file", "directory", "symlink"}[k]
}

// Existence is what the namespace knows of a name now.
type Existence uint8

const (
	Unseen  Existence = iota // no call looked at it yet
	Present                  // it exists
	Absent                   // it does not
)

// Node is a name and the file it names.
type Node struct {
	name   string
	parent *Node
	kids   map[string]*Node

	Kind  Kind
	State Existence
	// Initial: the name existed before the trace (a call found it and no
	// call of the trace made it). Maybe: a create that does not fail on
	// an existing file (O_CREAT without O_EXCL) found or made it: it may
	// have existed.
	Initial, Maybe bool
	// Made: a call of the trace made the name (mkdir, an exclusive or
	// truncating create, rename or link onto it, symlink). Removed: the
	// trace removed it (it is no longer in the tree).
	Made, Removed bool
	// Appeared: a call found the name though the trace never made it and
	// could not have found it before (its directory was made by the
	// trace).
	Appeared bool
	// Target is a symbolic link's target, as the trace wrote it.
	Target string
	File   *File

	initParent *Node
	initName   string
}

// File is the content a name (or several, with hard links) refers to.
type File struct {
	// Size is its size as far as the trace shows: exact when Exact (the
	// trace made, truncated or saw the end of it), else a lower bound.
	Size  int64
	Exact bool
	// Need is the size the file must have before the trace, for its
	// reads of data the trace did not write; NeedExact: a read met the
	// end of the file there, so it had exactly Need bytes.
	Need      int64
	NeedExact bool
	// Changed: the trace wrote to it, truncated or extended it.
	Changed bool

	written int64 // the furthest end the trace wrote
	// grown is the largest size the trace's own calls gave the file
	// (writes, truncates, extensions): what it makes on a disk.
	grown int64
	keep  int64 // bytes of the content before the trace still there (math.MaxInt64: all)
	// appendAt is the lowest offset an append landed at while the content
	// from before the trace was all there (-1: none): the file had that
	// many bytes. The lowest, as the appends of several threads or
	// processes can come in any order in a trace.
	appendAt int64
	// The bytes the appends moved, the furthest end they reached, and
	// whether anything else wrote the file: when only appends did, the
	// file had appendEnd − appendBytes bytes, whatever order the trace
	// holds them in and whatever offsets a capture that raced with
	// another thread's append gave them.
	appendBytes, appendEnd int64
	otherWrites            bool
}

// NewNamespace returns an empty namespace; path resolves the path ids of
// the events it is given.
func NewNamespace(path func(trace.PathID) string) *Namespace {
	ns := &Namespace{path: path, byID: map[trace.PathID]*Node{}}
	ns.abs = &Node{name: "/", Kind: KindDir, State: Present, Initial: true}
	ns.rel = &Node{name: ".", Kind: KindDir, State: Present, Initial: true}
	return ns
}

func newFile() *File { return &File{keep: math.MaxInt64, appendAt: -1} }

// Path returns n's name now (for a removed name: where it was).
func (n *Node) Path() string { return n.pathOf(false) }

// InitialPath returns the name n had before the trace (for an Initial
// node).
func (n *Node) InitialPath() string { return n.pathOf(true) }

func (n *Node) pathOf(initial bool) string {
	var parts []string
	for m := n; m != nil; {
		var p *Node
		name := m.name
		if initial && m.initParent != nil {
			p, name = m.initParent, m.initName
		} else {
			p = m.parent
		}
		if p == nil {
			if name == "/" {
				return "/" + strings.Join(reverse(parts), "/")
			}
			return strings.Join(reverse(parts), "/")
		}
		parts = append(parts, name)
		m = p
	}
	return ""
}

func reverse(s []string) []string {
	slices.Reverse(s)
	if len(s) == 0 {
		return []string{""}
	}
	return s
}

// Lookup returns the node of trace path p (made unseen if new).
func (ns *Namespace) Lookup(p string) *Node { return ns.walk(p) }

// Node returns the node of path id (made unseen if new), or nil for id 0.
func (ns *Namespace) Node(id trace.PathID) *Node { return ns.node(id) }

func (ns *Namespace) node(id trace.PathID) *Node {
	if id == 0 {
		return nil
	}
	if n := ns.byID[id]; n != nil {
		return n
	}
	n := ns.walk(ns.path(id))
	if len(ns.byID) >= 1<<16 {
		clear(ns.byID)
	}
	ns.byID[id] = n
	return n
}

// walk finds or makes the node of p.
func (ns *Namespace) walk(p string) *Node {
	n := ns.rel
	if strings.HasPrefix(p, "/") {
		n = ns.abs
	}
	p = path.Clean(p)
	for _, part := range strings.Split(p, "/") {
		switch part {
		case "", ".":
			continue
		case "..":
			if n.parent != nil {
				n = n.parent
			}
			continue
		}
		k := n.kids[part]
		if k == nil {
			k = &Node{name: part, parent: n}
			if n.kids == nil {
				n.kids = map[string]*Node{}
			}
			n.kids[part] = k
			if n.Initial || n.State == Unseen {
				k.initParent, k.initName = n, part
			}
		}
		n = k
	}
	return n
}

// invalidate forgets the cached nodes of path ids after a name moved or
// went away.
func (ns *Namespace) invalidate() { clear(ns.byID) }

// present notes that a call found n.
func (ns *Namespace) present(n *Node, kind Kind) {
	if n == nil {
		return
	}
	if kind != KindUnknown && (n.Kind == KindUnknown || n.Kind == KindFile && kind == KindDir) {
		n.Kind = kind
	}
	switch n.State {
	case Present:
		return
	case Absent:
		n.Appeared = true
		ns.Anomalies++
	case Unseen:
		if n.couldExist() {
			n.Initial = true
		} else {
			n.Appeared = true
			ns.Anomalies++
		}
	}
	n.State = Present
	if n.File == nil {
		n.File = newFile()
	}
	ns.parentPresent(n)
}

// parentPresent notes that n's directory exists and is a directory.
func (ns *Namespace) parentPresent(n *Node) {
	p := n.parent
	switch {
	case p == nil:
	case p.State != Present:
		ns.present(p, KindDir)
	case p.Kind != KindDir && p.Kind != KindSymlink:
		p.Kind = KindDir
	}
}

// couldExist reports whether n may have existed before the trace: its
// directory did, or may have.
func (n *Node) couldExist() bool {
	return n.initParent != nil && (n.initParent.Initial || n.initParent.State == Unseen)
}

// maybe notes that a create that does not fail on an existing name found
// or made n.
func (ns *Namespace) maybe(n *Node, kind Kind) {
	n.State, n.Kind, n.Maybe = Present, kind, true
	if n.File == nil {
		n.File = newFile()
	}
	ns.parentPresent(n)
}

// absent notes that a call did not find n.
func (ns *Namespace) absent(n *Node) {
	if n != nil && n.State == Unseen {
		n.State = Absent
	}
}

// make notes that a call made n, which did not exist.
func (ns *Namespace) make(n *Node, kind Kind) {
	if n == nil {
		return
	}
	if n.State == Present && n.parent != nil {
		// Made again over a name it knew (an untraced removal came
		// between): a new file.
		ns.detach(n)
		n = ns.walkChild(n)
	}
	n.State, n.Kind, n.Made = Present, kind, true
	n.Appeared, n.Initial, n.Maybe = false, false, false
	n.File = newFile()
	n.File.Exact, n.File.keep = true, 0
	ns.parentPresent(n)
}

// walkChild returns a fresh node in the place of n (which was detached).
func (ns *Namespace) walkChild(n *Node) *Node {
	return ns.walk(n.Path())
}

// detach takes n out of the tree, leaving an absent name in its place.
func (ns *Namespace) detach(n *Node) *Node {
	p := n.parent
	if p == nil {
		return n
	}
	fresh := &Node{name: n.name, parent: p, State: Absent}
	p.kids[n.name] = fresh
	ns.invalidate()
	return fresh
}

// remove notes that a call removed n.
func (ns *Namespace) remove(n *Node, kind Kind) {
	if n == nil || n.parent == nil {
		return
	}
	ns.present(n, kind)
	ns.detach(n)
	n.Removed = true
	n.State = Absent
	ns.gone = append(ns.gone, n)
}

// rename moves the name a to b.
func (ns *Namespace) rename(a, b *Node, exchange bool) {
	if a == nil || b == nil || a.parent == nil || b.parent == nil || a == b {
		return
	}
	for p := b.parent; p != nil; p = p.parent {
		if p == a {
			return // into itself: the kernel refuses it (EINVAL), whatever the trace says
		}
	}
	if exchange {
		for p := a.parent; p != nil; p = p.parent {
			if p == b {
				return
			}
		}
	}
	ns.present(a, KindUnknown)
	if exchange {
		ns.present(b, KindUnknown)
		pa, na, pb, nb := a.parent, a.name, b.parent, b.name
		pa.kids[na], pb.kids[nb] = b, a
		a.parent, a.name, b.parent, b.name = pb, nb, pa, na
		a.Made, b.Made = true, true
		ns.invalidate()
		return
	}
	if b.State == Present {
		b.Removed, b.State = true, Absent
		ns.gone = append(ns.gone, b)
	}
	// a leaves its place; it takes b's.
	ns.detach(a)
	a.parent, a.name = b.parent, b.name
	b.parent.kids[b.name] = a
	a.Made = true
	ns.parentPresent(a)
	ns.invalidate()
}

// link makes b a new name of a's file.
func (ns *Namespace) link(a, b *Node) {
	if a == nil || b == nil {
		return
	}
	ns.present(a, KindFile)
	f := a.File
	ns.make(b, KindFile)
	b = ns.node0(b)
	b.File = f
	ns.invalidate()
}

// node0 returns the node now at n's place (make may have replaced n).
// follow notes, after a call followed the symbolic link n and found a
// file, that the file its target names exists: a link the trace made to
// a file it did not (a virtual environment's bin/python3 →
// /usr/bin/python3) has a target there before the trace, which a replay
// prepares. Links to links are followed, 8 at most (the kernel's 40
// would only make a loop longer).
func (ns *Namespace) follow(n *Node) {
	for range 8 {
		n = ns.node0(n)
		if n == nil || n.Kind != KindSymlink || n.Target == "" {
			return
		}
		t := n.Target
		if !strings.HasPrefix(t, "/") {
			t = path.Join(path.Dir(n.Path()), t)
		}
		n = ns.walk(t)
		if n.State == Unseen {
			ns.present(n, KindUnknown)
		}
		if n.State != Present {
			return // the trace saw it absent: not its to explain
		}
	}
}

// sized notes, at a rename or link whose recorder looked at the file it
// moves or links (trace.SizeSeen), that n, found, is a regular file of
// e.Size bytes.
func (ns *Namespace) sized(n *Node, e *trace.Event) {
	if e.Flags&trace.SizeSeen == 0 || n == nil {
		return
	}
	ns.present(n, KindFile)
	if n = ns.node0(n); n != nil && n.File != nil && n.Kind != KindSymlink {
		n.File.sawSize(e.Size, n.wasThere())
	}
}

func (ns *Namespace) node0(n *Node) *Node {
	if n != nil && n.parent != nil && n.parent.kids[n.name] != nil {
		return n.parent.kids[n.name]
	}
	return n
}

// open follows an open that succeeded (or failed) on n.
func (ns *Namespace) open(n *Node, e *trace.Event) *Node {
	if n == nil {
		return nil
	}
	fl := e.Flags
	creat := e.Op == trace.OpCreat || fl&trace.OCreat != 0
	excl := fl&trace.OExcl != 0
	trunc := e.Op == trace.OpCreat || fl&trace.OTrunc != 0 && fl&trace.OAccMode != trace.ORdonly
	const oDirectory = 0x10000
	const oTmpfile = 0x410000
	if e.Ret < 0 {
		switch e.Ret {
		case -2: // ENOENT
			ns.absent(n)
		case -17: // EEXIST
			ns.present(n, KindUnknown)
		}
		return nil
	}
	kind := KindFile
	if fl&oDirectory != 0 && fl&oTmpfile != oTmpfile {
		kind = KindDir
	}
	if fl&oTmpfile == oTmpfile {
		// An unnamed file in directory n.
		ns.present(n, KindDir)
		f := &Node{Kind: KindFile, State: Absent, Made: true, File: newFile()}
		f.File.Exact, f.File.keep = true, 0
		return f
	}
	switch {
	case creat && (excl || n.State == Absent):
		ns.make(n, kind)
		n = ns.node0(n)
	case creat && n.State == Unseen && !n.couldExist():
		ns.make(n, kind) // its directory is the trace's: it did not exist
		n = ns.node0(n)
	case creat && n.State == Unseen:
		ns.maybe(n, kind)
	default:
		ns.present(n, kind)
	}
	if trunc && n.File != nil {
		n.File.truncate(0)
	}
	return n
}

// inherited returns the node of a descriptor the trace never saw opened:
// its file existed.
func (ns *Namespace) inherited(id trace.PathID) *Node {
	n := ns.node(id)
	if n == nil || ns.special(n) {
		return nil
	}
	ns.present(n, KindUnknown)
	return n
}

// special reports whether n is not a file of a file system: a pipe or
// socket as the kernel names descriptors ("pipe:[12]"), or anything
// under /dev (but /dev/shm, which holds ordinary files), /proc, /sys.
func (ns *Namespace) special(n *Node) bool {
	p := n.Path()
	if hasPrefixDir(p, "/dev/shm") {
		return false // ordinary files
	}
	return strings.Contains(p, ":[") || strings.HasPrefix(p, "anon_inode:") ||
		hasPrefixDir(p, "/dev") || hasPrefixDir(p, "/proc") || hasPrefixDir(p, "/sys")
}

func hasPrefixDir(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

func (f *File) truncate(size int64) {
	f.Size, f.Exact, f.Changed = size, true, true
	f.grown = max(f.grown, size)
	f.keep = min(f.keep, size)
	f.written = min(f.written, size)
}

func (f *File) write(off, n int64) {
	if n <= 0 {
		return
	}
	f.Changed = true
	end := endOf(off, n)
	f.Size = max(f.Size, end)
	f.written = max(f.written, end)
	f.grown = max(f.grown, end)
}

// covers reports whether dataNS(n, e, info, appending) would leave f,
// n's file, as it is, when e is not an append (appending with
// AddrIndividual): e a write that succeeded (Ret > 0) within what the
// trace already wrote, to a file that others than appends wrote (most
// writes of a file after its first). Data asks first: a call fewer.
func (f *File) covers(e *trace.Event, info *trace.OpInfo) bool {
	if info.Dir != trace.DirWrite || e.Ret <= 0 || !f.otherWrites || !f.Changed {
		return false
	}
	end := endOf(e.Offset, e.Ret)
	return end <= f.Size && end <= f.written && end <= f.grown
}

// extend notes a call that makes the file at least size bytes long
// (fallocate, MPI_File_preallocate).
func (f *File) extend(size int64) {
	f.Changed = true
	f.Size = max(f.Size, size)
	f.grown = max(f.grown, size)
}

// endOf is off+n held at the largest int64 (a trace may say anything).
func endOf(off, n int64) int64 { return sat.Add(off, n) }

// Space is what the files of the trace take on a disk: Bytes, the sum
// over its files of the larger of the size each needs before the trace
// and the largest its calls give it, each rounded up to blocks of
// block bytes; Written, the same sum of the sizes its calls give them
// alone (what a sparse preparation leaves: holes take no blocks); and
// Files, how many files that is. Each file counts with its largest
// size, and a file removed and another made under its name count as two:
// the sums are at least the most the files hold at any one time, never
// less.
type Space struct {
	Bytes, Written int64
	Files          int64
}

// Space adds up what the files of the trace take (see Space), in blocks
// of block bytes.
func (ns *Namespace) Space(block int64) Space {
	var sp Space
	seen := map[*File]bool{}
	round := func(n int64) int64 {
		if n <= 0 {
			return 0
		}
		if n > math.MaxInt64-block {
			return math.MaxInt64
		}
		return (n + block - 1) / block * block
	}
	ns.each(func(n *Node) {
		f := n.File
		if f == nil || n.Kind == KindDir || seen[f] || ns.special(n) {
			return
		}
		seen[f] = true
		need, _ := f.need()
		if !n.Initial && !n.Maybe {
			need = 0 // not prepared
		}
		if need <= 0 && f.grown <= 0 {
			return
		}
		sp.Files++
		sp.Bytes = sat.Add(sp.Bytes, round(max(need, f.grown)))
		sp.Written = sat.Add(sp.Written, round(f.grown))
	})
	return sp
}

// read notes a read of n of req bytes at off: the bytes the trace did not
// write there came from the file as it was before.
func (f *File) read(off, n, req int64, initial bool) {
	end := off + max(n, 0)
	atEOF := n < req
	if !f.Exact {
		f.Size = max(f.Size, end)
		if atEOF {
			f.Size, f.Exact = end, true
		}
	}
	if !initial || end <= f.written || f.keep == 0 {
		return
	}
	need := min(end, f.keep)
	if need > f.Need {
		f.Need = need
	}
	if atEOF && f.keep == math.MaxInt64 && f.written <= end {
		f.Need, f.NeedExact = end, true
	}
}

// sawSize notes that the file had size s (a seek from its end).
func (f *File) sawSize(s int64, initial bool) {
	if s < 0 {
		return
	}
	if !f.Exact {
		f.Size, f.Exact = s, true
	}
	if initial && f.keep == math.MaxInt64 && f.written < s {
		f.Need, f.NeedExact = max(f.Need, s), true
	}
}

// appended notes an append of n bytes that landed at off.
func (f *File) appended(off, n int64, initial bool) {
	if !initial || f.keep != math.MaxInt64 || off < 0 {
		return
	}
	if f.appendAt < 0 || off < f.appendAt {
		f.appendAt = off
	}
	f.appendBytes += max(n, 0)
	f.appendEnd = max(f.appendEnd, off+max(n, 0))
}

// need is the size the file must have before the trace, and whether that
// is exact.
func (f *File) need() (int64, bool) {
	if f.appendAt < 0 {
		return f.Need, f.NeedExact
	}
	at := f.appendAt
	if s := f.appendEnd - f.appendBytes; !f.otherWrites && s >= 0 && s < at {
		at = s
	}
	if at >= f.Need {
		return at, true
	}
	return f.Need, f.NeedExact
}

func (n *Node) wasThere() bool { return n != nil && (n.Initial || n.Maybe) }

// Entry is one name of the namespace, for the lists Before and End give.
type Entry struct {
	Path string
	Kind Kind
	// Size is the file's size (End), exact when Exact; Need the size it
	// must have before the trace (Before).
	Size  int64
	Exact bool
	Need  int64
	// Made: the trace made the name; Changed: it changed the file's
	// content or size; Removed: the name is gone at the end.
	Made, Changed, Removed bool
	Node                   *Node
}

// each calls fn for every node of the tree and every removed one (with
// what was below it), once.
func (ns *Namespace) each(fn func(n *Node)) {
	seen := map[*Node]bool{}
	var visit func(n *Node)
	visit = func(n *Node) {
		if seen[n] {
			return
		}
		seen[n] = true
		fn(n)
		for _, k := range n.kids {
			visit(k)
		}
	}
	visit(ns.abs)
	visit(ns.rel)
	for _, n := range ns.gone {
		visit(n)
	}
}

// Before lists what the trace found that it did not make, by the names
// it had before the trace, parents first: the directories and files a
// replay must prepare (files with the size Need). A name a create may
// have made (Maybe) is listed only when the trace read data from it.
func (ns *Namespace) Before() []Entry {
	var out []Entry
	ns.each(func(n *Node) {
		if n == ns.abs || n == ns.rel {
			return
		}
		var need int64
		var exact bool
		if n.File != nil && n.Kind != KindDir {
			need, exact = n.File.need()
		}
		if !n.Initial && !(n.Maybe && need > 0) {
			return
		}
		e := Entry{Path: n.InitialPath(), Kind: n.Kind, Node: n, Need: need, Exact: exact}
		out = append(out, e)
	})
	sortEntries(out)
	return out
}

// End lists the names the trace made or changed, as they are after it,
// and the names that existed before it and are gone.
func (ns *Namespace) End() []Entry {
	var out []Entry
	ns.each(func(n *Node) {
		if n == ns.abs || n == ns.rel {
			return
		}
		wasThere := n.Initial || n.Maybe
		changed := n.File != nil && n.File.Changed
		switch {
		case n.Removed:
			if wasThere {
				out = append(out, Entry{Path: n.InitialPath(), Kind: n.Kind, Removed: true, Node: n})
			}
			return
		case n.State != Present:
			return
		}
		if n.Made || changed || n.Maybe {
			e := Entry{Path: n.Path(), Kind: n.Kind, Made: n.Made, Changed: changed, Node: n}
			if n.File != nil && n.Kind != KindDir {
				e.Size, e.Exact = n.File.Size, n.File.Exact
			}
			out = append(out, e)
		}
		if n.Initial && n.InitialPath() != n.Path() {
			if m := ns.walk(n.InitialPath()); m.State != Present {
				out = append(out, Entry{Path: n.InitialPath(), Kind: n.Kind, Removed: true, Node: n})
			}
		}
	})
	sortEntries(out)
	return out
}

func sortEntries(es []Entry) {
	slices.SortFunc(es, func(a, b Entry) int {
		if c := strings.Count(a.Path, "/") - strings.Count(b.Path, "/"); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
}
