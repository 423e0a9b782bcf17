package fold

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/trace"
)

// A lowerer turns one rank's events into leaf commands, following the
// state a script's interpreter keeps (handle positions, the sizes of files
// as the rank knows them) so that every command it writes makes exactly
// the event of the trace. What no command can make is an *Unsupported
// error.
type lowerer struct {
	in    *interner
	rank  uint32
	path  func(trace.PathID) string
	out   sink
	ncall int64 // events seen

	fds   map[int32]*hnd // trace descriptor → open handle
	mpis  map[int32]*hnd // trace MPI file handle → open handle
	known map[string]int64
	open  map[string]bool // handle names in use
	kinds map[string]bool // handle name → MPI (every name this rank used)
	comms map[uint32]bool // group communicators seen

	b       lb // the command being built
	keybuf  []byte
	tmpls   map[string]*tmpl // templates by key
	strs    map[strKey]*strCache
	pend    []pending // an open that may start an implicit read/write/append
	prevEnd int64
	started bool
	threads int64 // events of threads other than the main one
	// unknownHalves counts the MPI_Sendrecv calls without a recorded
	// receive half.
	unknownHalves int64
	warnings      []string
}

type hnd struct {
	name string
	path string
	*desc
	comm uint32
	mpi  bool
}

// desc is an open file description, which dup shares.
type desc struct {
	pos    int64
	append bool
}

type pending struct {
	e   trace.Event
	gap int64
	h   *hnd
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
	return &lowerer{in: in, rank: rank, path: path, out: out,
		fds: map[int32]*hnd{}, mpis: map[int32]*hnd{}, known: map[string]int64{},
		open: map[string]bool{}, kinds: map[string]bool{}, comms: map[uint32]bool{},
		tmpls: map[string]*tmpl{}, strs: map[strKey]*strCache{}}
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

// call records a variant spelling of the default call.
func (b *lb) call(op, def trace.Op) {
	if op != def {
		b.word("call", op.String())
	}
}

func (lw *lowerer) emit(b *lb, g int64, events int) error {
	if events == 0 {
		events = 1
	}
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

// event lowers the next event of the rank.
func (lw *lowerer) event(e *trace.Event) error {
	lw.ncall++
	var g int64
	if lw.started {
		g = max(e.Start-lw.prevEnd, 0)
	}
	lw.started = true
	lw.prevEnd = max(lw.prevEnd, e.End())
	if e.Thread != 0 {
		lw.threads++
	}
	if len(lw.pend) > 0 {
		if done, err := lw.implicit(e, g); done || err != nil {
			return err
		}
	}
	return lw.lower(e, g)
}

// flush lowers the events held for an implicit command.
func (lw *lowerer) flush() error {
	pend := lw.pend
	lw.pend = nil
	for i := range pend {
		if err := lw.explicit(&pend[i].e, pend[i].gap); err != nil {
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
	ok := e.FD == fd && e.Op.Class() == trace.ClassPOSIX
	if open.Op == trace.OpCreat {
		// create PATH [mode M]: creat and close.
		if !ok || e.Op != trace.OpClose || e.Ret != 0 {
			return false, lw.flush()
		}
		p := lw.path(open.Path)
		b := lw.newLB()
		b.l.cmd, b.l.operand, b.l.path = "create", oPath, b.str(p)
		b.opt("mode", int64(open.Mode), kPerm, 0o644)
		lw.known[p] = 0
		total := lw.pend[0].gap + g
		lw.pend = nil
		return true, lw.emit(b, total, 2)
	}
	if ok && len(lw.pend) == 1 {
		ok = e.Ret == e.Size && e.Count == 0 && e.Flags == 0
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
			lw.pend = append(lw.pend, pending{e: *e, gap: g})
			return true, nil
		}
	} else if ok && len(lw.pend) == 2 && e.Op == trace.OpClose && e.Ret == 0 {
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
	if e.Op == trace.OpCreat && e.Ret >= 0 && e.Flags == trace.OWronly|trace.OCreat|trace.OTrunc {
		lw.pend = []pending{{e: *e, gap: g}}
		return nil
	}
	if e.Op == trace.OpOpen && e.Ret >= 0 {
		switch e.Flags {
		case trace.ORdonly, trace.OWronly | trace.OCreat, trace.OWronly | trace.OCreat | trace.OAppend:
			lw.pend = []pending{{e: *e, gap: g}}
			return nil
		}
	}
	return lw.explicit(e, g)
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

func (lw *lowerer) fdHandle(e *trace.Event) (*hnd, error) {
	h := lw.fds[e.FD]
	if h == nil {
		return nil, lw.fail(e, "descriptor %d was not opened in the trace (inherited, or opened by a call the capture left out); a script works on files it opens", e.FD)
	}
	if e.Path != 0 {
		if p := lw.path(e.Path); p != h.path {
			return nil, lw.fail(e, "the call names %s, but descriptor %d was opened as %s", p, e.FD, h.path)
		}
	}
	return h, nil
}

func (lw *lowerer) mpiHandle(e *trace.Event) (*hnd, error) {
	h := lw.mpis[e.FD]
	if h == nil {
		return nil, lw.fail(e, "MPI file handle %d was not opened in the trace", e.FD)
	}
	if e.Comm != h.comm {
		return nil, lw.fail(e, "communicator %d differs from the one the file was opened on (%d)", e.Comm, h.comm)
	}
	return h, nil
}

// ret records a result, left out when it is def.
func (b *lb) ret(v, def int64) { b.opt("ret", v, kRet, def) }

// retSize records the result of a data call, left out when it is the
// size (hole h).
func (b *lb) retSize(v int64, h int) { b.optHole("ret", v, kRet, h) }

// seekPos is where a seek leaves the position, as a script computes it.
func seekPos(pos, known, off int64, whence int32) (int64, bool) {
	var p int64
	switch whence {
	case 0:
		p = off
	case 1:
		p = pos + off
	case 2:
		p = known + off
	default:
		return 0, false
	}
	return p, p >= 0
}

var whenceWords = []string{"start", "current", "end"}

func (lw *lowerer) explicit(e *trace.Event, g int64) error {
	b := lw.newLB()
	info := e.Op.Info()
	if (info.Class == trace.ClassPOSIX || info.Class == trace.ClassMeta) && e.Comm != 0 {
		return lw.fail(e, "a POSIX call with communicator %d", e.Comm)
	}
	op := e.Op
	if (op == trace.OpFstatat || op == trace.OpStatx) && e.FD != 0 {
		op = trace.OpFstat // fstat as glibc makes it: fstatat(fd, "", AT_EMPTY_PATH)
	}
	switch op {
	case trace.OpOpen, trace.OpOpenat, trace.OpOpenat2, trace.OpCreat, trace.OpFopen:
		p := lw.path(e.Path)
		b.l.cmd, b.l.operand, b.l.path = "open", oPath, b.str(p)
		creates := e.Flags&(trace.OCreat|0x400000) != 0
		if !creates && e.Mode != 0 {
			return lw.fail(e, "mode %#o without O_CREAT or O_TMPFILE", e.Mode)
		}
		if e.Ret < 0 {
			b.l.handle = lw.handleName(p, false)
			delete(lw.open, b.l.handle)
		} else {
			h := &hnd{path: p, desc: &desc{append: e.Flags&trace.OAppend != 0}}
			h.name = lw.handleName(p, false)
			b.l.handle, b.l.opens = h.name, h.name
			lw.fds[int32(e.Ret)] = h
			if e.Flags&trace.OTrunc != 0 {
				lw.known[p] = 0
			}
		}
		b.arg("flags", int64(e.Flags), kOFlags)
		b.l.args = append(b.l.args, argT{key: "mode", hole: b.hole(int64(e.Mode), kPerm), defHole: -1, defMode: true})
		b.call(e.Op, trace.OpOpen)
		if e.Ret < 0 {
			b.arg("ret", e.Ret, kRet)
		}
	case trace.OpDup, trace.OpDup2, trace.OpDup3, trace.OpFcntl:
		h, err := lw.fdHandle(e)
		if err != nil {
			return err
		}
		b.l.cmd, b.l.operand, b.l.handle = "dup", oHandle, h.name
		name := lw.handleName(h.path, false)
		b.l.opens = name
		b.l.dupAs = name
		b.opt("flags", int64(e.Flags), kHex, 0)
		b.call(e.Op, trace.OpDup)
		if e.Ret < 0 {
			delete(lw.open, name)
			b.l.opens = ""
			b.arg("ret", e.Ret, kRet)
			break
		}
		if old := lw.fds[int32(e.Ret)]; old != nil {
			return lw.fail(e, "the new descriptor %d is open already (dup2 closes it): a script closes its handles itself", e.Ret)
		}
		lw.fds[int32(e.Ret)] = &hnd{name: name, path: h.path, desc: h.desc}
	case trace.OpClose, trace.OpFclose:
		h, err := lw.fdHandle(e)
		if err != nil {
			return err
		}
		delete(lw.fds, e.FD)
		delete(lw.open, h.name)
		b.l.cmd, b.l.operand, b.l.handle, b.l.closes = "close", oHandle, h.name, h.name
		b.opt("flags", int64(e.Flags), kHex, 0)
		b.call(e.Op, trace.OpClose)
		b.ret(e.Ret, 0)
	case trace.OpRead, trace.OpFread, trace.OpReadv, trace.OpWrite, trace.OpFwrite, trace.OpWritev,
		trace.OpPread, trace.OpPreadv, trace.OpPreadv2, trace.OpPwrite, trace.OpPwritev, trace.OpPwritev2:
		h, err := lw.fdHandle(e)
		if err != nil {
			return err
		}
		write := info.Dir == trace.DirWrite
		b.l.cmd, b.l.operand, b.l.handle = map[bool]string{true: "write", false: "read"}[write], oHandle, h.name
		moved := max(e.Ret, 0)
		if info.Addr == trace.AddrExplicit {
			b.arg("at", e.Offset, kSize)
			if write {
				lw.grow(h.path, e.Offset+moved)
			}
		} else {
			if write && h.append {
				h.pos = lw.known[h.path]
			}
			if e.Offset != h.pos {
				return lw.fail(e, "the call is at offset %d of %s, but the file position a script tracks is %d (moved by a call the trace does not have, or written by another process)", e.Offset, h.path, h.pos)
			}
			h.pos += moved
			if write {
				lw.grow(h.path, e.Offset+moved)
			}
		}
		b.arg("size", e.Size, kSize)
		sizeHole := len(b.h) - 1
		def := trace.OpRead
		switch {
		case info.Vector && info.Addr == trace.AddrExplicit:
			def = trace.OpPreadv
		case info.Vector:
			def = trace.OpReadv
		case info.Addr == trace.AddrExplicit:
			def = trace.OpPread
		}
		if write {
			def += trace.OpWrite - trace.OpRead
		}
		if info.Vector {
			b.arg("iov", int64(e.Count), kInt)
		} else if e.Op == trace.OpFread || e.Op == trace.OpFwrite {
			b.opt("elements", int64(e.Count), kInt, 0) // the item count (nmemb)
		} else if e.Count != 0 {
			return lw.fail(e, "count %d on a call that is not a vector call", e.Count)
		}
		b.opt("flags", int64(e.Flags), kHex, 0)
		b.call(e.Op, def)
		b.retSize(e.Ret, sizeHole)
	case trace.OpLseek, trace.OpFseek:
		h, err := lw.fdHandle(e)
		if err != nil {
			return err
		}
		if e.Whence < 0 || e.Whence > 2 {
			return lw.fail(e, "whence %d (SEEK_DATA and SEEK_HOLE are not in the script language)", e.Whence)
		}
		b.l.cmd, b.l.operand, b.l.handle = "seek", oHandle, h.name
		b.arg("to", e.Offset, kSize)
		if e.Whence != 0 {
			b.word("from", whenceWords[e.Whence])
		}
		b.opt("flags", int64(e.Flags), kHex, 0)
		b.call(e.Op, trace.OpLseek)
		if p, ok := seekPos(h.pos, lw.known[h.path], e.Offset, e.Whence); !ok || p != e.Ret {
			b.arg("ret", e.Ret, kRet)
		}
		if e.Ret >= 0 {
			h.pos = e.Ret
		}
	case trace.OpFsync, trace.OpFflush, trace.OpFdatasync, trace.OpFstat, trace.OpFtruncate:
		h, err := lw.fdHandle(e)
		if err != nil {
			return err
		}
		b.l.operand, b.l.handle = oHandle, h.name
		switch op {
		case trace.OpFsync, trace.OpFflush:
			b.l.cmd = "sync"
			b.opt("flags", int64(e.Flags), kHex, 0)
			b.call(e.Op, trace.OpFsync)
		case trace.OpFdatasync:
			b.l.cmd = "datasync"
			b.opt("flags", int64(e.Flags), kHex, 0)
		case trace.OpFstat:
			b.l.cmd = "stat"
			b.opt("flags", int64(e.Flags), kHex, 0)
			b.call(e.Op, trace.OpFstat)
		case trace.OpFtruncate:
			b.l.cmd = "truncate"
			b.arg("to", e.Size, kSize)
			b.opt("flags", int64(e.Flags), kHex, 0)
			if e.Ret >= 0 {
				lw.known[h.path] = e.Size
			}
		}
		b.ret(e.Ret, 0)
	case trace.OpStat, trace.OpLstat, trace.OpFstatat, trace.OpStatx, trace.OpAccess, trace.OpUnlink, trace.OpUnlinkat,
		trace.OpMPIFileDelete, trace.OpRmdir, trace.OpMkdir, trace.OpMkdirat, trace.OpTruncate, trace.OpRename,
		trace.OpRenameat, trace.OpRenameat2:
		// The FD of a call that names a path is the directory it was
		// resolved against (AT_FDCWD, or an *at call's descriptor) where
		// a capture records it: the path is already resolved, so the
		// script names the path alone (namesPath).
		if e.FD != 0 && e.Path == 0 {
			return lw.fail(e, "a call on descriptor %d where a script names a path", e.FD)
		}
		p := lw.path(e.Path)
		b.l.operand, b.l.path = oPath, b.str(p)
		ok := e.Ret >= 0
		def := e.Op
		switch e.Op {
		case trace.OpStat, trace.OpLstat, trace.OpFstatat, trace.OpStatx:
			b.l.cmd = "stat"
			def = trace.OpStat
		case trace.OpAccess:
			b.l.cmd = "lookup"
			b.opt("mode", int64(e.Mode), kInt, 0)
		case trace.OpUnlink, trace.OpUnlinkat, trace.OpMPIFileDelete:
			b.l.cmd = "delete"
			def = trace.OpUnlink
			if ok {
				delete(lw.known, p)
			}
		case trace.OpRmdir:
			b.l.cmd = "rmdir"
		case trace.OpMkdir, trace.OpMkdirat:
			b.l.cmd = "mkdir"
			b.opt("mode", int64(e.Mode), kPerm, 0o755)
			def = trace.OpMkdir
		case trace.OpTruncate:
			b.l.cmd = "truncate"
			b.arg("to", e.Size, kSize)
			if ok {
				lw.known[p] = e.Size
			}
		default:
			b.l.cmd = "rename"
			p2 := lw.path(e.Path2)
			b.l.path2 = b.str(p2)
			if sz, had := lw.known[p]; had && ok {
				delete(lw.known, p)
				lw.known[p2] = sz
			}
			def = trace.OpRename
		}
		b.opt("flags", int64(e.Flags), kHex, 0)
		b.call(e.Op, def)
		b.ret(e.Ret, 0)
	case trace.OpMPIFileOpen:
		p := lw.path(e.Path)
		b.l.cmd, b.l.operand, b.l.path, b.l.mpi = "mpiopen", oPath, b.str(p), true
		name := lw.handleName(p, true)
		b.l.handle = name
		if e.Ret < 0 {
			delete(lw.open, name)
		} else {
			b.l.opens = name
			if lw.mpis[e.FD] != nil {
				return lw.fail(e, "MPI file handle %d is already open", e.FD)
			}
			lw.mpis[e.FD] = &hnd{name: name, path: p, comm: e.Comm, mpi: true, desc: &desc{append: e.Flags&trace.MPIModeAppend != 0}}
		}
		b.arg("flags", int64(e.Flags), kAmode)
		switch {
		case e.Comm == trace.CommSelf:
			b.word("self", "")
		case e.Comm >= 2:
			b.l.comm = e.Comm
			lw.comms[e.Comm] = true
		default:
			b.l.world = true
		}
		if e.Ret < 0 {
			b.arg("ret", e.Ret, kRet)
		} else if e.Ret != 0 {
			return lw.fail(e, "result %d of a successful MPI_File_open", e.Ret)
		}
	case trace.OpMPIFileClose, trace.OpMPIFileSync, trace.OpMPIFileSetSize, trace.OpMPIFilePreallocate,
		trace.OpMPIFileSetView, trace.OpMPIFileSeek, trace.OpMPIFileSeekShared:
		h, err := lw.mpiHandle(e)
		if err != nil {
			return err
		}
		b.l.operand, b.l.handle, b.l.mpi = oHandle, h.name, true
		ok := e.Ret >= 0
		switch e.Op {
		case trace.OpMPIFileClose:
			b.l.cmd, b.l.closes = "close", h.name
			delete(lw.mpis, e.FD)
			delete(lw.open, h.name)
		case trace.OpMPIFileSync:
			b.l.cmd = "sync"
		case trace.OpMPIFileSetSize, trace.OpMPIFilePreallocate:
			b.l.cmd = "truncate"
			b.arg("to", e.Size, kSize)
			b.call(e.Op, trace.OpMPIFileSetSize)
			if ok {
				lw.known[h.path] = e.Size
			}
		case trace.OpMPIFileSetView:
			b.l.cmd = "view"
			b.opt("disp", e.Offset, kSize, 0)
			switch {
			case e.Size == 0 && e.Stride == 0:
			case e.Size > 0 && e.Stride >= e.Size:
				b.arg("block", e.Size, kSize)
				b.arg("stride", e.Stride, kSize)
			default:
				return lw.fail(e, "a view with block %d and stride %d: a script's views are vectors with 0 < block <= stride", e.Size, e.Stride)
			}
			if ok {
				h.pos = 0
			}
		default:
			b.l.cmd = "seek"
			if e.Whence < 0 || e.Whence > 2 {
				return lw.fail(e, "whence %d", e.Whence)
			}
			b.arg("to", e.Offset, kSize)
			if e.Whence != 0 {
				b.word("from", whenceWords[e.Whence])
			}
			if e.Op == trace.OpMPIFileSeekShared {
				b.word("shared", "")
			} else if ok {
				p, good := seekPos(h.pos, lw.known[h.path], e.Offset, e.Whence)
				if !good {
					return lw.fail(e, "a seek to a negative offset that did not fail")
				}
				h.pos = p
			}
		}
		b.ret(e.Ret, 0)
	case trace.OpMPIFileReadAt, trace.OpMPIFileReadAtAll, trace.OpMPIFileWriteAt, trace.OpMPIFileWriteAtAll,
		trace.OpMPIFileRead, trace.OpMPIFileReadAll, trace.OpMPIFileWrite, trace.OpMPIFileWriteAll,
		trace.OpMPIFileReadShared, trace.OpMPIFileWriteShared, trace.OpMPIFileReadOrdered, trace.OpMPIFileWriteOrdered,
		trace.OpMPIFileIreadAt, trace.OpMPIFileIwriteAt, trace.OpMPIFileIread, trace.OpMPIFileIwrite:
		h, err := lw.mpiHandle(e)
		if err != nil {
			return err
		}
		write := info.Dir == trace.DirWrite
		b.l.cmd, b.l.operand, b.l.handle, b.l.mpi = map[bool]string{true: "write", false: "read"}[write], oHandle, h.name, true
		moved := max(e.Ret, 0)
		def := e.Op
		switch info.Addr {
		case trace.AddrExplicit:
			b.arg("at", e.Offset, kSize)
			switch e.Op {
			case trace.OpMPIFileIreadAt:
				def = trace.OpMPIFileReadAt
			case trace.OpMPIFileIwriteAt:
				def = trace.OpMPIFileWriteAt
			}
			if write {
				lw.grow(h.path, e.Offset+moved)
			}
		case trace.AddrIndividual:
			if e.Offset != h.pos {
				return lw.fail(e, "the call is at offset %d of the view, but the individual file pointer a script tracks is %d", e.Offset, h.pos)
			}
			h.pos += moved
			switch e.Op {
			case trace.OpMPIFileIread:
				def = trace.OpMPIFileRead
			case trace.OpMPIFileIwrite:
				def = trace.OpMPIFileWrite
			}
			if write {
				lw.grow(h.path, e.Offset+moved)
			}
		default:
			if e.Offset != 0 {
				return lw.fail(e, "offset %d on a shared-pointer call (a script records 0: the position depends on the other ranks)", e.Offset)
			}
		}
		b.arg("size", e.Size, kSize)
		sizeHole := len(b.h) - 1
		switch def {
		case trace.OpMPIFileReadAtAll, trace.OpMPIFileWriteAtAll, trace.OpMPIFileReadAll, trace.OpMPIFileWriteAll:
			b.word("all", "")
		case trace.OpMPIFileReadShared, trace.OpMPIFileWriteShared:
			b.word("shared", "")
		case trace.OpMPIFileReadOrdered, trace.OpMPIFileWriteOrdered:
			b.word("ordered", "")
		}
		if e.Size > 1<<31-1 {
			b.arg("elements", int64(e.Count), kInt)
		} else {
			b.optHole("elements", int64(e.Count), kInt, sizeHole)
		}
		b.call(e.Op, def)
		b.retSize(e.Ret, sizeHole)
	case trace.OpMPIBarrier, trace.OpMPIBcast, trace.OpMPIReduce, trace.OpMPIGather, trace.OpMPIGatherv,
		trace.OpMPIScatter, trace.OpMPIScatterv, trace.OpMPIAllreduce, trace.OpMPIAllgather, trace.OpMPIAllgatherv,
		trace.OpMPIAlltoall, trace.OpMPIAlltoallv, trace.OpMPISend, trace.OpMPIRecv, trace.OpMPISendrecv:
		if err := lw.comm(e, b); err != nil {
			return err
		}
	case trace.OpMark:
		b.l.cmd, b.l.operand, b.l.path = "mark", oLabel, b.str(lw.path(e.Path))
		b.l.events = 1
	case trace.OpRegionBegin, trace.OpRegionEnd:
		text := lw.path(e.Path)
		l := &label{text: text, s: b.str(text), gap: g}
		l.h, l.kinds = append([]int64(nil), b.h...), append([]hkind(nil), b.kinds...)
		if e.Op == trace.OpRegionBegin {
			return lw.out.begin(l)
		}
		return lw.out.end(l)
	default:
		why := "the script language has no such call"
		switch e.Op {
		case trace.OpCloseRange:
			why = "a script closes its handles one by one"
		case trace.OpMPIIsend, trace.OpMPIIrecv, trace.OpMPIWait, trace.OpMPIWaitall:
			why = "a script has no non-blocking point-to-point calls"
		case trace.OpMPICommSplit, trace.OpMPICommDup:
			why = "a script's communicators are its groups, declared at the top"
		}
		if !e.Op.Known() {
			why = "an op this build does not know"
		}
		return lw.fail(e, "%s", why)
	}
	if err := lw.checkZero(e); err != nil {
		return err
	}
	return lw.emit(b, g, 1)
}

// comm lowers a communication call.
func (lw *lowerer) comm(e *trace.Event, b *lb) error {
	switch {
	case e.Comm == trace.CommSelf:
		return lw.fail(e, "a communication call on MPI_COMM_SELF")
	case e.Comm >= 2:
		b.l.comm = e.Comm
		lw.comms[e.Comm] = true
	default:
		b.l.world = true
	}
	def := e.Op
	switch e.Op {
	case trace.OpMPIGatherv:
		def = trace.OpMPIGather
	case trace.OpMPIScatterv:
		def = trace.OpMPIScatter
	case trace.OpMPIAllgatherv:
		def = trace.OpMPIAllgather
	case trace.OpMPIAlltoallv:
		def = trace.OpMPIAlltoall
	}
	b.l.cmd = strings.ToLower(strings.TrimPrefix(def.String(), "MPI_"))
	if e.Op != trace.OpMPIBarrier {
		b.l.operand, b.l.intHole = oInt, b.hole(e.Bytes, kSize)
	} else if e.Bytes != 0 {
		return lw.fail(e, "a barrier with %d bytes", e.Bytes)
	}
	switch def {
	case trace.OpMPIBcast, trace.OpMPIReduce, trace.OpMPIGather, trace.OpMPIScatter:
		b.opt("root", int64(e.Peer), kInt, 0)
	case trace.OpMPISend:
		b.peer("to", int64(e.Peer), lw.rank)
		b.opt("tag", int64(e.Tag), kInt, 0)
	case trace.OpMPIRecv:
		b.peer("from", int64(e.Peer), lw.rank)
		b.opt("tag", int64(e.Tag), kAny, 0)
	case trace.OpMPISendrecv:
		src, rtag, known := e.RecvFrom()
		if !known {
			// A trace from before the receive half was recorded: the
			// script names the destination as the source too (the
			// comparison allows it; Convert says so).
			src, rtag = e.Peer, e.Tag
			lw.unknownHalves++
		} else if f := e.Flags &^ trace.RecvHalf; f != 0 {
			return lw.fail(e, "a receive half posted with MPI_ANY_SOURCE or MPI_ANY_TAG (flags %#x): a script's sendrecv receives from the rank and with the tag it names", f)
		}
		if src == e.Peer && e.Peer >= 0 {
			b.peer("with", int64(e.Peer), lw.rank)
		} else {
			b.peer("to", int64(e.Peer), lw.rank)
			b.peer("from", int64(src), lw.rank)
		}
		th := b.hole(int64(e.Tag), kInt)
		b.l.args = append(b.l.args, argT{key: "tag", hole: th, defHole: -1, hasDef: true, def: 0})
		b.optHole("recvtag", int64(rtag), kAny, th)
	default:
		if e.Peer != 0 {
			return lw.fail(e, "peer %d on a call without a root", e.Peer)
		}
	}
	if def != trace.OpMPISend && def != trace.OpMPIRecv && def != trace.OpMPISendrecv && e.Tag != 0 {
		return lw.fail(e, "tag %d on a collective call", e.Tag)
	}
	b.call(e.Op, def)
	b.ret(e.Ret, 0)
	return nil
}

// checkZero refuses fields a command never sets.
func (lw *lowerer) checkZero(e *trace.Event) error {
	info := e.Op.Info()
	bad := func(name string, v int64) error {
		return lw.fail(e, "%s %d, which a script does not make for this call", name, v)
	}
	if info.Class != trace.ClassComm {
		switch {
		case e.Peer != 0:
			return bad("peer", int64(e.Peer))
		case e.Tag != 0:
			return bad("tag", int64(e.Tag))
		case e.Bytes != 0:
			return bad("bytes", e.Bytes)
		}
	} else if info.Class == trace.ClassComm && (e.Path != 0 || e.FD != 0 || e.Offset != 0 || e.Size != 0) {
		return lw.fail(e, "file fields on a communication call")
	}
	if e.Stride != 0 && e.Op != trace.OpMPIFileSetView {
		return bad("stride", e.Stride)
	}
	if e.Whence != 0 && e.Op.Info().Family != "seek" && e.Op != trace.OpMPIFileSeek && e.Op != trace.OpMPIFileSeekShared {
		return bad("whence", int64(e.Whence))
	}
	if e.Path2 != 0 && info.Family != "rename" {
		return lw.fail(e, "a second path on a call that takes one")
	}
	return nil
}

// reservedName reports whether a handle may not take name: keywords,
// commands, predeclared names and the names the converter gives loop
// variables and parameters.
func reservedName(name string) bool {
	if len(name) == 1 || name == "dir" || argKeys[name] {
		return true
	}
	return script.Reserved(name)
}

var argKeys = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range script.ArgKeys() {
		m[k] = true
	}
	return m
}()
