package fold

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/iotrace/iotrace/internal/sat"
	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/state"
)

// A lowerer turns one rank's events into leaf commands, following the
// state a script's interpreter keeps so that every command it writes
// makes exactly the event of the trace. Descriptors, processes and MPI
// file handles are trace/state's (a Follower); what the interpreter keeps
// beyond the trace — a handle's position as the script computes it, the
// size of each file as the rank knows it, the names of handles — is the
// lowerer's. What no command can make is an *Unsupported error.
//
// The follower and the interpreter hold the same descriptors at every
// point: every change of a table the trace shows, the script makes too,
// and where the trace uses a descriptor it never showed opened (one its
// process inherited, a pipe, a call the capture left out) or one that
// names another file than the follower knows (a rename since, or calls of
// processes the trace does not tell apart), the script declares it with
// a quiet inherit — no event — which the follower is fed as an inherit
// too. So the descriptor an open gets in the script is the lowest free
// one of the follower's table, and fd N is written where the trace's
// differs.
type lowerer struct {
	in    *interner
	rank  uint32
	path  func(trace.PathID) string
	out   sink
	ncall int64 // events seen

	f     *state.Follower[ldesc, lhandle]
	freed []string // handle names released while the follower applies an event
	known map[string]int64
	open  map[string]bool // handle names in use
	kinds map[string]bool // handle name → MPI (every name this rank used)
	comms map[uint32]bool // group communicators seen
	// Communicators made by split: their names by id, ids by name (names
	// are never reused), and how many were made from each parent.
	splitNames map[uint32]string
	splitIDs   map[string]uint32
	splitSeq   map[uint32]uint32

	b       lb // the command being built
	keybuf  []byte
	tmpls   map[string]*tmpl // templates by key
	strs    map[strKey]*strCache
	pend    []pending // an open that may start an implicit read/write/append
	prevEnd int64
	waited  int64 // pagein time since the previous call (event)
	started bool
	// unknownHalves counts the MPI_Sendrecv calls without a recorded
	// receive half.
	unknownHalves int64
	// declared counts the descriptors declared with quiet inherits;
	// redeclared those of them that replaced one the trace had opened on
	// another file.
	declared, redeclared int64
	// The standard streams: which ones an event used or replaced, whether
	// a process or thread was made, and the declarations of those the
	// main thread used first, untouched before, which Convert puts at the
	// start of the program (hoist).
	stdTouched [3]bool
	procs      bool
	hoisted    [3]*stdDecl
}

// stdDecl is a standard stream declared at the start of a rank's program.
type stdDecl struct {
	path, name string
}

// ldesc is what the lowerer keeps on an open file description: the names
// of its handles by descriptor (a fork's copy of a handle has its name).
// Its position and O_APPEND are the follower's, which the script's
// interpreter follows alike.
type ldesc struct {
	names []fdName
}

type fdName struct {
	fd   int32
	name string
}

// lhandle is what the lowerer keeps on an MPI file handle: its name.
type lhandle struct {
	name string
}

// step is what an event worked on, and the positions its descriptors (or
// MPI file handle) had before it: where the script's interpreter will
// have them, for it follows the same model. A position the follower does
// not know (-1) is 0 to the interpreter.
type step struct {
	state.Step[ldesc, lhandle]
	pos, pos2 int64
}

type pending struct {
	e     trace.Event
	gap   int64
	st    step
	exp   int32    // the descriptor the script's open gives
	freed []string // names its application released
}

// Unsupported is a call that a script cannot make.
type Unsupported struct {
	Rank  uint32
	Call  int64 // 1-based index of the event in the rank's stream
	Op    trace.Op
	Cause string
}

func (u *Unsupported) Error() string {
	return fmt.Sprintf("rank %d, call %d (%s): %s", u.Rank, u.Call, u.Op, u.Cause)
}

// sink takes what a lowerer makes: leaf commands, and the beginnings and
// ends of labelled regions.
type sink interface {
	newNode(nh int) *node // a node with nh holes and one gap slot
	leaf(n *node) error
	begin(l *label) error
	end(l *label) error
}

// label is the label of a region as it begins or ends.
type label struct {
	text  string
	s     *strT
	h     []int64
	kinds []hkind
	gap   int64
}

func newLowerer(in *interner, rank uint32, path func(trace.PathID) string, out sink) *lowerer {
	lw := &lowerer{in: in, rank: rank, path: path, out: out,
		f:     state.New[ldesc, lhandle](nil),
		known: map[string]int64{}, open: map[string]bool{}, kinds: map[string]bool{}, comms: map[uint32]bool{},
		splitNames: map[uint32]string{}, splitIDs: map[string]uint32{}, splitSeq: map[uint32]uint32{},
		tmpls: map[string]*tmpl{}, strs: map[strKey]*strCache{}}
	// A handle name is taken while its open file description lives (a
	// name of a descriptor another process still holds stays its name).
	lw.f.OnRelease = func(d *state.Desc[ldesc]) {
		for _, n := range d.Aux.names {
			lw.release(n.name)
		}
	}
	lw.f.OnHandleClose = func(h *state.Handle[lhandle]) { lw.release(h.Aux.name) }
	return lw
}

func (lw *lowerer) release(name string) {
	if name != "" && lw.open[name] {
		delete(lw.open, name)
		lw.freed = append(lw.freed, name)
	}
}

// apply feeds e to the follower: what it worked on, and the handle names
// it released.
func (lw *lowerer) apply(e *trace.Event) (step, []string) {
	lw.freed = lw.freed[:0]
	var st step
	switch info := e.Op.Info(); {
	case info.Class == trace.ClassMPIIO:
		if h := lw.f.Handle(e.FD); h != nil {
			st.pos = max(h.Pos, 0)
		}
	case info.FD == trace.FDOn:
		if d := lw.f.Lookup(e.Thread, e.FD); d != nil {
			st.pos = max(d.Pos, 0)
		}
		if d := lw.f.Lookup(e.Thread, e.FD2); d != nil && info.Dir == trace.DirCopy {
			st.pos2 = max(d.Pos, 0)
		}
	}
	st.Step = lw.f.Apply(e)
	var freed []string
	if len(lw.freed) > 0 {
		freed = append(freed, lw.freed...)
	}
	return st, freed
}

func (lw *lowerer) fail(e *trace.Event, format string, args ...any) error {
	return &Unsupported{Rank: lw.rank, Call: lw.ncall, Op: e.Op, Cause: fmt.Sprintf(format, args...)}
}

// lb builds one leaf command.
type lb struct {
	l     leafT
	h     []int64
	kinds []hkind
	lw    *lowerer // for its caches; nil: none
}

// newLB returns the lowerer's command builder, emptied.
func (lw *lowerer) newLB() *lb {
	b := &lw.b
	args := b.l.args[:0]
	*b = lb{h: b.h[:0], kinds: b.kinds[:0], lw: lw}
	b.l.args = args
	b.l.hidden = -1
	return b
}

func (b *lb) hole(v int64, k hkind) int {
	b.h = append(b.h, v)
	b.kinds = append(b.kinds, k)
	return len(b.h) - 1
}

func (b *lb) arg(key string, v int64, k hkind) {
	b.l.args = append(b.l.args, argT{key: key, hole: b.hole(v, k), defHole: -1})
}

// peer adds a peer rank, in its two forms: v, and xor(rank, x).
func (b *lb) peer(key string, v int64, rank uint32) {
	h := b.hole(v, kPeer)
	x := b.hole(v^int64(rank), kPeerX)
	m := b.hole(3, kAlt)
	b.l.args = append(b.l.args, argT{key: key, hole: h, defHole: -1, altHole: x, maskHole: m})
}

// opt adds an argument that is left out when it has its default value.
func (b *lb) opt(key string, v int64, k hkind, def int64) {
	b.l.args = append(b.l.args, argT{key: key, hole: b.hole(v, k), defHole: -1, hasDef: true, def: def})
}

// optHole adds an argument that is left out when it equals hole h.
func (b *lb) optHole(key string, v int64, k hkind, h int) {
	b.l.args = append(b.l.args, argT{key: key, hole: b.hole(v, k), defHole: h})
}

func (b *lb) word(key, w string) {
	b.l.args = append(b.l.args, argT{key: key, hole: -1, word: w, defHole: -1})
}

// str splits s into literal text and runs of digits, each run two holes.
// The split is cached by string and place.
func (b *lb) str(s string) *strT {
	if b.lw == nil {
		return b.parse(s)
	}
	k := strKey{s, len(b.h)}
	c := b.lw.strs[k]
	if c == nil {
		if len(b.lw.strs) >= 1<<16 {
			clear(b.lw.strs)
		}
		var tmp lb
		t := tmp.parse(s)
		t.base = len(b.h)
		t.key()
		c = &strCache{t: t, h: tmp.h}
		b.lw.strs[k] = c
	}
	for i, v := range c.h {
		b.hole(v, kDigits+hkind(i%2))
	}
	return c.t
}

type strKey struct {
	s    string
	base int
}

type strCache struct {
	t *strT
	h []int64 // the values of its holes
}

func (b *lb) parse(s string) *strT {
	t := &strT{base: len(b.h)}
	lit := 0
	for i := 0; i < len(s); {
		if s[i] < '0' || s[i] > '9' {
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j-i > 18 { // too long for an int: keep it as text
			i = j
			continue
		}
		v, _ := strconv.ParseInt(s[i:j], 10, 64)
		t.lits = append(t.lits, s[lit:i])
		b.hole(v, kDigits)
		b.hole(widthOf(s[i:j]), kWidth)
		lit, i = j, j
	}
	t.lits = append(t.lits, s[lit:])
	return t
}

// call records a variant spelling of the default call; false if the
// command has no such spelling.
func (b *lb) call(op, def trace.Op) bool {
	if op == def {
		return true
	}
	b.word("call", op.String())
	for _, v := range script.CallVariants(def) {
		if v == op {
			return true
		}
	}
	return false
}

func (lw *lowerer) emit(b *lb, g int64, events int) error {
	b.l.events = events
	lw.keybuf = b.l.appendKey(lw.keybuf[:0], b.kinds)
	t := lw.tmpls[string(lw.keybuf)]
	if t == nil {
		l := b.l
		l.args = append([]argT(nil), b.l.args...)
		t = lw.in.leaf(&l, b.kinds)
		lw.tmpls[string(lw.keybuf)] = t
	}
	n := lw.out.newNode(len(b.h))
	n.t = t
	copy(n.h, b.h)
	n.g[0] = gap{sum: g, n: 1}
	return lw.out.leaf(n)
}

// withoutSeenSize is e without the size a stat, rename or link saw
// (trace.SizeSeen), which a script does not keep (docs/SCRIPT.md, "Not
// kept"): its files have the sizes its own calls give them. The lowering
// and the verifier read events through it.
func withoutSeenSize(e *trace.Event) *trace.Event {
	if e.Flags&trace.SizeSeen == 0 || !trace.SeesSize(e.Op) {
		return e
	}
	ec := *e
	ec.Size, ec.Flags = 0, ec.Flags&^trace.SizeSeen
	return &ec
}

// event lowers the next event of the rank.
func (lw *lowerer) event(e *trace.Event) error {
	lw.ncall++
	e = withoutSeenSize(e)
	if e.Op.Info().Wait {
		// The capture's wait for mapped pages between two calls: a
		// script's map reads the pages (as a replay's mmap does), so the
		// wait is neither a command nor think time before the next one.
		lw.waited = sat.Add(lw.waited, max(e.Dur, 0))
		return nil
	}
	var g int64
	if lw.started {
		g = max(sat.Sub(sat.Sub(e.Start, lw.prevEnd), lw.waited), 0)
	}
	lw.waited = 0
	lw.started = true
	lw.prevEnd = max(lw.prevEnd, e.End())
	defer lw.touch(e)
	if len(lw.pend) > 0 {
		if done, err := lw.implicit(e, g); done || err != nil {
			return err
		}
	}
	return lw.lower(e, g)
}

// touch notes the standard streams e used or replaced, and whether it
// made a process or thread.
func (lw *lowerer) touch(e *trace.Event) {
	info := e.Op.Info()
	mark := func(fd int64) {
		if fd >= 0 && fd < 3 {
			lw.stdTouched[fd] = true
		}
	}
	switch info.FD {
	case trace.FDOn, trace.FDClose:
		mark(int64(e.FD))
		if info.Dir == trace.DirCopy {
			mark(int64(e.FD2))
		}
	case trace.FDDup:
		mark(int64(e.FD))
		mark(e.Ret)
	case trace.FDOpen:
		mark(e.Ret)
		mark(int64(e.FD))
	case trace.FDCloseRange:
		for fd := int64(max(e.FD, 0)); fd < 3 && fd <= e.Size; fd++ {
			mark(fd)
		}
	case trace.FDAt:
		if onDesc(e) {
			mark(int64(e.FD))
		}
	}
	if info.Proc == trace.ProcFork || info.Proc == trace.ProcThread {
		lw.procs = true
	}
}

// flush lowers the events held for an implicit command.
func (lw *lowerer) flush() error {
	pend := lw.pend
	lw.pend = nil
	for i := range pend {
		p := &pend[i]
		if err := lw.explicit(&p.e, p.gap, p.st, p.exp, p.freed); err != nil {
			return err
		}
	}
	return nil
}

// implicit tries to make a held open, a data call and a close into one
// command with a path operand: read "f" at 8 size 1.
func (lw *lowerer) implicit(e *trace.Event, g int64) (bool, error) {
	open := &lw.pend[0].e
	fd := int32(open.Ret)
	ok := e.FD == fd && e.Op.Class() == trace.ClassPOSIX && e.Thread == open.Thread &&
		(e.Path == 0 || e.Path == open.Path) && lw.zero(e, fFD|fPath|fOffset|fSize) == ""
	if open.Op == trace.OpCreat {
		// create PATH [mode M]: creat and close.
		if !ok || e.Op != trace.OpClose || e.Ret != 0 || e.Offset != 0 || e.Size != 0 {
			return false, lw.flush()
		}
		lw.apply(e)
		p := lw.path(open.Path)
		b := lw.newLB()
		b.l.cmd, b.l.operand, b.l.path = "create", oPath, b.str(p)
		b.opt("mode", int64(open.Mode), kPerm, 0o644)
		b.opt("thread", int64(e.Thread), kInt, 0)
		lw.known[p] = 0
		total := lw.pend[0].gap + g
		lw.pend = nil
		return true, lw.emit(b, total, 2)
	}
	if ok && len(lw.pend) == 1 {
		ok = e.Ret == e.Size
		switch open.Flags {
		case trace.ORdonly:
			ok = ok && open.Mode == 0 && (e.Op == trace.OpPread || e.Op == trace.OpRead && e.Offset == 0)
		case trace.OWronly | trace.OCreat:
			ok = ok && open.Mode == 0o644 && (e.Op == trace.OpPwrite || e.Op == trace.OpWrite && e.Offset == 0)
		case trace.OWronly | trace.OCreat | trace.OAppend:
			ok = ok && open.Mode == 0o644 && e.Op == trace.OpWrite && e.Offset == lw.known[lw.path(open.Path)]
		default:
			ok = false
		}
		if ok {
			st, freed := lw.apply(e)
			lw.pend = append(lw.pend, pending{e: *e, gap: g, st: st, freed: freed})
			return true, nil
		}
	} else if ok && len(lw.pend) == 2 && e.Op == trace.OpClose && e.Ret == 0 && e.Offset == 0 && e.Size == 0 {
		lw.apply(e)
		data := &lw.pend[1].e
		p := lw.path(open.Path)
		b := lw.newLB()
		switch {
		case open.Flags&trace.OAppend != 0:
			b.l.cmd = "append"
		case data.Op.Dir() == trace.DirWrite:
			b.l.cmd = "write"
		default:
			b.l.cmd = "read"
		}
		b.l.operand, b.l.path = oPath, b.str(p)
		if data.Op == trace.OpPread || data.Op == trace.OpPwrite {
			b.arg("at", data.Offset, kSize)
		}
		b.arg("size", data.Size, kSize)
		b.opt("thread", int64(e.Thread), kInt, 0)
		if data.Op.Dir() == trace.DirWrite {
			lw.grow(p, data.Offset+data.Size)
		}
		total := lw.pend[0].gap + lw.pend[1].gap + g
		lw.pend = nil
		return true, lw.emit(b, total, 3)
	}
	return false, lw.flush()
}

func (lw *lowerer) grow(p string, end int64) {
	if end > lw.known[p] {
		lw.known[p] = end
	}
}

// lower lowers an event that does not continue an implicit command.
func (lw *lowerer) lower(e *trace.Event, g int64) error {
	if err := lw.prepare(e); err != nil {
		return err
	}
	exp := lw.lowestFree(e.Thread)
	st, freed := lw.apply(e)
	if e.Ret >= 0 && e.Ret == int64(exp) && lw.zero(e, fFD|fPath|fFlags|fMode) == "" &&
		(e.Op == trace.OpCreat && e.Flags == trace.OWronly|trace.OCreat|trace.OTrunc ||
			e.Op == trace.OpOpen && (e.Flags == trace.ORdonly || e.Flags == trace.OWronly|trace.OCreat ||
				e.Flags == trace.OWronly|trace.OCreat|trace.OAppend)) {
		lw.pend = []pending{{e: *e, gap: g, st: st, exp: exp, freed: freed}}
		return nil
	}
	return lw.explicit(e, g, st, exp, freed)
}

// lowestFree is the descriptor the script's interpreter gives thread th's
// next open: the lowest free one from 3 in its process's table.
func (lw *lowerer) lowestFree(th uint32) int32 { return lw.f.Free(th, 3) }

// prepare declares, with quiet inherits, the descriptors e uses that the
// follower does not hold on e's file (see lowerer).
func (lw *lowerer) prepare(e *trace.Event) error {
	info := e.Op.Info()
	switch info.Class {
	case trace.ClassMPIIO:
		if (info.FD == trace.FDOn || info.FD == trace.FDClose) && lw.f.Handle(e.FD) == nil {
			return lw.fail(e, "MPI file handle %d was not opened in the trace (a script opens its MPI files itself)", e.FD)
		}
		return nil
	case trace.ClassPOSIX, trace.ClassMeta:
	default:
		return nil
	}
	switch info.FD {
	case trace.FDOn, trace.FDDup, trace.FDClose:
		pos := int64(0)
		if info.Addr == trace.AddrIndividual && (info.Dir != trace.DirCopy || e.Flags&trace.CopyInAt == 0) {
			pos = e.Offset
		}
		if err := lw.declare(e, e.FD, e.Path, pos); err != nil {
			return err
		}
		if info.Dir == trace.DirCopy {
			pos = 0
			if e.Flags&trace.CopyOutAt == 0 {
				pos = e.Offset2
			}
			return lw.declare(e, e.FD2, e.Path2, pos)
		}
	case trace.FDAt:
		if onDesc(e) {
			return lw.declare(e, e.FD, e.Path, 0)
		}
	}
	return nil
}

// onDesc reports whether a call that names a path relative to a directory
// descriptor (an *at call) is on that descriptor instead: it has no path
// (AT_EMPTY_PATH).
func onDesc(e *trace.Event) bool {
	return e.Op.Info().FD == trace.FDAt && e.Path == 0 && e.FD >= 0
}

// declare makes descriptor fd of e's process one the follower holds on
// path (0: any), with a quiet inherit at position pos if it does not.
func (lw *lowerer) declare(e *trace.Event, fd int32, path trace.PathID, pos int64) error {
	d := lw.f.Lookup(e.Thread, fd)
	if d != nil && (path == 0 || d.Path == path) {
		return nil
	}
	if fd < 0 {
		return lw.fail(e, "a call on descriptor %d: a script's descriptors are not negative", fd)
	}
	if d != nil {
		lw.redeclared++
	}
	lw.declared++
	in := trace.Event{Op: trace.OpInherit, Thread: e.Thread, FD: fd, Ret: int64(fd), Path: path, Offset: max(pos, 0)}
	if fd < 3 && d == nil && !lw.stdTouched[fd] && !lw.procs && e.Thread == 0 {
		// A standard stream nothing used before: declared at the start
		// of the program (by Convert), at position 0 (the call says pos),
		// where every rank can declare it alike.
		in.Offset = 0
		st, _ := lw.apply(&in)
		p := lw.path(path)
		name, _ := lw.nameOf(st.New, fd, p, true)
		lw.hoisted[fd] = &stdDecl{path: p, name: name}
		return nil
	}
	st, freed := lw.apply(&in)
	b := lw.newLB()
	if err := lw.inherit(b, &in, st, true); err != nil {
		return err
	}
	b.opt("thread", int64(e.Thread), kInt, 0)
	b.l.closes = strings.Join(freed, ",")
	return lw.emit(b, 0, 0)
}

// nameOf returns the name of the handle at descriptor fd of description
// d, and whether it is new: a new descriptor takes the name the same
// description had at fd in another process (a fork's copy), or a new one
// after the file (p).
func (lw *lowerer) nameOf(d *state.Desc[ldesc], fd int32, p string, std bool) (string, bool) {
	for _, n := range d.Aux.names {
		if n.fd == fd {
			if !lw.open[n.name] {
				lw.open[n.name] = true
				return n.name, true
			}
			return n.name, false
		}
	}
	base := p
	switch {
	case std && fd >= 0 && fd <= 2:
		base = []string{"stdin", "stdout", "stderr"}[fd]
	case p == "":
		base = "pipe"
	}
	name := lw.handleName(base, false)
	d.Aux.names = append(d.Aux.names, fdName{fd, name})
	return name, true
}

// handleOf returns the name of descriptor fd of thread th's process.
func (lw *lowerer) handleOf(e *trace.Event, d *state.Desc[ldesc], fd int32) (string, error) {
	if d != nil {
		for _, n := range d.Aux.names {
			if n.fd == fd {
				return n.name, nil
			}
		}
	}
	return "", lw.fail(e, "descriptor %d has no handle in the script (the trace changed it in a way the converter does not follow)", fd)
}

// handleName picks the name of a new handle of path p: the file's name
// without digits (so that dump.000, dump.001 … are all "dump"), made
// unique among the handles open now.
func (lw *lowerer) handleName(p string, mpi bool) string {
	base := p[strings.LastIndexByte(p, '/')+1:]
	if i := strings.IndexByte(base, '.'); i > 0 {
		base = base[:i]
	}
	var b strings.Builder
	for _, c := range base {
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_':
			b.WriteRune(c)
		case c >= '0' && c <= '9' || c == '-':
		}
	}
	name := b.String()
	if name == "" || reservedName(name) {
		name = "f_" + name
		name = strings.TrimSuffix(name, "_")
	}
	if m, ok := lw.kinds[name]; ok && m != mpi {
		// A name stays with one kind of handle.
		name += map[bool]string{true: "_mpi", false: "_fd"}[mpi]
	}
	n := name
	for i := 2; lw.open[n]; i++ {
		n = name + strconv.Itoa(i)
	}
	lw.open[n] = true
	lw.kinds[n] = mpi
	return n
}

// ret records a result, left out when it is def.
func (b *lb) ret(v, def int64) { b.opt("ret", v, kRet, def) }

// retSize records the result of a data call, left out when it is the
// size (hole h).
func (b *lb) retSize(v int64, h int) { b.optHole("ret", v, kRet, h) }

var whenceWords = []string{"start", "current", "end", "data", "hole"}

// explicit lowers an event into the one command that makes it.
func (lw *lowerer) explicit(e *trace.Event, g int64, st step, exp int32, freed []string) error {
	b := lw.newLB()
	info := e.Op.Info()
	var err error
	switch info.Class {
	case trace.ClassPOSIX, trace.ClassMeta:
		if e.Comm != 0 {
			return lw.fail(e, "a POSIX call with communicator %d", e.Comm)
		}
		err = lw.posix(e, b, st, exp)
	case trace.ClassMPIIO:
		err = lw.mpiio(e, b, st)
	case trace.ClassComm:
		err = lw.comm(e, b)
	case trace.ClassProcess:
		err = lw.process(e, b, st)
	case trace.ClassMarker:
		if e.Thread != 0 && e.Op != trace.OpMark {
			return lw.fail(e, "a region of thread %d: a script's regions are the rank's", e.Thread)
		}
		if e.Op == trace.OpMark {
			b.l.cmd, b.l.operand, b.l.path = "mark", oLabel, b.str(lw.path(e.Path))
			break
		}
		text := lw.path(e.Path)
		l := &label{text: text, s: b.str(text), gap: g}
		l.h, l.kinds = append([]int64(nil), b.h...), append([]hkind(nil), b.kinds...)
		if e.Op == trace.OpRegionBegin {
			return lw.out.begin(l)
		}
		return lw.out.end(l)
	default:
		return lw.fail(e, "an op this build does not know")
	}
	if err != nil {
		return err
	}
	if err := lw.checkZero(e, &b.l); err != nil {
		return err
	}
	b.opt("thread", int64(e.Thread), kInt, 0)
	b.l.closes = strings.Join(freed, ",")
	return lw.emit(b, g, 1)
}

// Fields of an event, for checkZero.
const (
	fPath uint32 = 1 << iota
	fPath2
	fFD
	fFD2
	fOffset
	fOffset2
	fSize
	fFlags
	fMode
	fWhence
	fPeer
	fTag
	fComm
	fBytes
	fCount
	fStride
	fSource
)

var fieldNames = []string{"path", "second path", "descriptor", "second descriptor", "offset", "second offset", "size",
	"flags", "mode", "whence", "peer", "tag", "communicator", "bytes", "count", "stride", "receive half"}

// zero returns the name and value of the first field of e outside
// allowed that is not zero, "" if none.
func (lw *lowerer) zero(e *trace.Event, allowed uint32) string {
	vals := []int64{int64(e.Path), int64(e.Path2), int64(e.FD), int64(e.FD2), e.Offset, e.Offset2, e.Size,
		int64(e.Flags), int64(e.Mode), int64(e.Whence), int64(e.Peer), int64(e.Tag), int64(e.Comm), e.Bytes,
		int64(e.Count), e.Stride, int64(e.Source) | int64(e.RecvTag)}
	for i, v := range vals {
		if v != 0 && allowed&(1<<i) == 0 {
			switch i {
			case 0, 1:
				return fmt.Sprintf("%s %q", fieldNames[i], lw.path(trace.PathID(v)))
			}
			return fmt.Sprintf("%s %d", fieldNames[i], v)
		}
	}
	return ""
}

// cmdFields are the fields each command sets, beyond the result.
var cmdFields = sync.OnceValue(func() map[string]uint32 {
	return map[string]uint32{
		"open": fPath | fFlags | fMode, "inherit": fPath | fFD | fFlags | fOffset,
		"dup": fFD | fPath | fFlags | fSize, "fcntl": fFD | fPath | fFlags | fSize, "close": fFD | fPath | fFlags,
		"closerange": fFD | fSize | fFlags,
		"read":       fFD | fPath | fOffset | fSize | fFlags | fCount, "write": fFD | fPath | fOffset | fSize | fFlags | fCount,
		"copy": fFD | fFD2 | fPath | fPath2 | fOffset | fOffset2 | fSize | fFlags,
		"seek": fFD | fPath | fOffset | fWhence | fFlags, "sync": fFD | fPath | fFlags, "datasync": fFD | fPath | fFlags,
		"stat": fFD | fPath | fFlags | fMode, "truncate": fFD | fPath | fSize | fFlags,
		"allocate": fFD | fPath | fOffset | fSize | fFlags, "advise": fFD | fPath | fOffset | fSize | fFlags,
		"map": fFD | fPath | fOffset | fSize | fFlags | fMode, "readdir": fFD | fPath | fSize,
		"unmap": fPath | fOffset | fSize | fFlags, "msync": fPath | fOffset | fSize | fFlags,
		"lookup": fFD | fPath | fFlags | fMode, "delete": fPath | fFlags, "rmdir": fPath | fFlags, "mkdir": fPath | fFlags | fMode,
		"rename": fPath | fPath2 | fFlags, "link": fFD | fPath | fPath2 | fFlags, "symlink": fPath | fPath2,
		"readlink": fFD | fPath | fSize, "fork": fFlags, "clone": fFlags, "exec": fPath | fFlags, "exit": 0, "mark": fPath,
		"mpiopen": fPath | fFlags | fFD | fComm,
	}
})

// mpiFields are the fields of the calls on an MPI file handle.
const mpiFields = fFD | fPath | fComm | fOffset | fSize | fCount | fFlags | fStride | fWhence

// commFields are the fields of communication calls.
const commFields = fPeer | fTag | fComm | fBytes | fCount | fFlags | fSource

// checkZero refuses fields the command l never sets. A descriptor a call
// does not use (the directory of a call that names a path, the result an
// open repeats) is not kept, as the contract says.
func (lw *lowerer) checkZero(e *trace.Event, l *leafT) error {
	info := e.Op.Info()
	allowed := cmdFields()[l.cmd]
	switch {
	case info.Class == trace.ClassComm:
		allowed = commFields
	case l.mpi && l.cmd != "delete":
		allowed = mpiFields
	}
	if info.FD == trace.FDOpen && e.Op != trace.OpInherit || info.FD == trace.FDNone || info.FD == trace.FDAt && !onDesc(e) {
		allowed |= fFD
	}
	if bad := lw.zero(e, allowed); bad != "" {
		return lw.fail(e, "%s, which the script's %s does not make (a field the capture set that the language has no word for)", bad, l.cmd)
	}
	return nil
}

// reservedName reports whether a handle may not take name: keywords,
// commands, predeclared names and the names the converter gives loop
// variables and parameters.
func reservedName(name string) bool {
	if len(name) == 1 || name == "dir" || argKeys()[name] {
		return true
	}
	return script.Reserved(name)
}

// argKeys are the names of the commands' arguments; made when first
// needed, as the commands' table it reads (not at every command's start).
var argKeys = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, k := range script.ArgKeys() {
		m[k] = true
	}
	return m
})
