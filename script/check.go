package script

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/iotrace/iotrace/trace"
)

// Program is a checked script, ready to be instantiated (Instantiate) or
// expanded (Expand). It is immutable and safe for concurrent use.
type Program struct {
	name     string
	params   []*cParam
	groups   []*cGroup
	body     []cstmt
	nslots   int
	nhandles int
	nsites   int
}

// Name returns the file name of the script.
func (p *Program) Name() string { return p.name }

// ParamInfo describes a script parameter.
type ParamInfo struct {
	Name    string
	Type    Type
	Default string // the default expression as written
	Pos     Pos
}

// Params lists the script's parameters in declaration order.
func (p *Program) Params() []ParamInfo {
	var out []ParamInfo
	for _, pa := range p.params {
		out = append(out, ParamInfo{Name: pa.name, Type: pa.typ, Default: FormatExpr(pa.def), Pos: pa.pos})
	}
	return out
}

// GroupNames lists the script's groups in declaration order.
func (p *Program) GroupNames() []string {
	var out []string
	for _, g := range p.groups {
		out = append(out, g.name)
	}
	return out
}

type cParam struct {
	name string
	pos  Pos
	typ  Type
	def  Expr
	x    cexpr
	slot int
}

type cGroup struct {
	name string
	pos  Pos
	size *cexpr // nil: a share of the rest
}

// Load reads, parses and checks a script file.
func Load(path string) (*Program, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Compile(path, src)
}

// Compile parses and checks a script.
func Compile(name string, src []byte) (*Program, error) {
	f, err := Parse(name, src)
	if err != nil {
		return nil, err
	}
	return Check(f)
}

// Check runs the semantic checks on a parsed script — names, types,
// groups, constant sizes, handles — and returns the program. Every problem
// found is in the returned ErrorList, in script order.
func Check(f *File) (*Program, error) {
	c := &compiler{file: f.Name, prog: &Program{name: f.Name}}
	c.scope = &scope{syms: map[string]*symbol{}}
	c.predeclare()
	c.scope = &scope{parent: c.scope, syms: map[string]*symbol{}}
	c.hst = &hstates{m: map[int]hstate{}}
	var body []Stmt
	for _, s := range f.Stmts {
		switch s := s.(type) {
		case *ParamStmt:
			c.param(s)
		case *GroupStmt:
			c.group(s)
		default:
			body = append(body, s)
		}
	}
	c.prog.body = c.stmts(body)
	c.prog.nslots = c.nslots
	c.prog.nhandles = c.nhandles
	c.prog.nsites = c.nsites
	if err := c.errs.err(); err != nil {
		return nil, err
	}
	return c.prog, nil
}

type symKind uint8

const (
	symConst symKind = iota
	symBuiltin
	symParam
	symGroup
	symVar
	symLoop
	symHandle
)

type symbol struct {
	name  string
	kind  symKind
	typ   Type
	slot  int // value slot (params, variables, loop variables); handle index
	pos   Pos
	cval  int64 // constants
	which int   // builtins: which; groups: index
}

type scope struct {
	parent *scope
	syms   map[string]*symbol
}

func (s *scope) lookup(name string) *symbol {
	for ; s != nil; s = s.parent {
		if sym := s.syms[name]; sym != nil {
			return sym
		}
	}
	return nil
}

// Built-in values.
const (
	bRank = iota
	bNranks
	bGrank
	bGsize
)

// Constants every script sees.
var constants = sync.OnceValue(func() map[string]int64 {
	m := map[string]int64{
		"any":      -1,
		"none":     int64(trace.ProcNull),
		"O_RDONLY": trace.ORdonly, "O_WRONLY": trace.OWronly, "O_RDWR": trace.ORdwr,
		"O_CREAT": trace.OCreat, "O_EXCL": trace.OExcl, "O_TRUNC": trace.OTrunc,
		"O_APPEND": trace.OAppend, "O_DIRECT": trace.ODirect, "O_SYNC": trace.OSync,
		"O_DSYNC": trace.ODsync, "O_NOATIME": 0x40000, "O_CLOEXEC": 0x80000,
		"O_LARGEFILE": 0x8000, "O_DIRECTORY": 0x10000, "O_NOFOLLOW": 0x20000, "O_NONBLOCK": 0x800,
		"O_NOCTTY": 0x100, "O_ASYNC": 0x2000, "O_PATH": 0x200000, "O_TMPFILE": 0x410000,
		// fcntl commands and flags, mmap protections and flags, fadvise
		// advice, close_range and fork flags, AT_ flags (Linux x86-64).
		"F_DUPFD": trace.FDupfd, "F_GETFD": trace.FGetfd, "F_SETFD": trace.FSetfd, "F_GETFL": trace.FGetfl,
		"F_SETFL": trace.FSetfl, "F_DUPFD_CLOEXEC": trace.FDupfdCloexec, "FD_CLOEXEC": 1,
		"PROT_READ": 1, "PROT_WRITE": 2, "PROT_EXEC": 4, "MAP_SHARED": 1, "MAP_PRIVATE": 2,
		"POSIX_FADV_NORMAL": 0, "POSIX_FADV_RANDOM": 1, "POSIX_FADV_SEQUENTIAL": 2, "POSIX_FADV_WILLNEED": 3,
		"POSIX_FADV_DONTNEED": 4, "POSIX_FADV_NOREUSE": 5,
		"CLOSE_RANGE_UNSHARE": 2, "CLOSE_RANGE_CLOEXEC": trace.CloseRangeCloexec, "CLONE_FILES": trace.CloneFiles,
		"AT_EMPTY_PATH": 0x1000, "AT_SYMLINK_NOFOLLOW": 0x100, "AT_REMOVEDIR": 0x200, "AT_SYMLINK_FOLLOW": 0x400,
		"MPI_MODE_CREATE": trace.MPIModeCreate, "MPI_MODE_RDONLY": trace.MPIModeRdonly,
		"MPI_MODE_WRONLY": trace.MPIModeWronly, "MPI_MODE_RDWR": trace.MPIModeRdwr,
		"MPI_MODE_DELETE_ON_CLOSE": 16, "MPI_MODE_UNIQUE_OPEN": 32,
		"MPI_MODE_EXCL": trace.MPIModeExcl, "MPI_MODE_APPEND": trace.MPIModeAppend,
		"MPI_MODE_SEQUENTIAL": 256, "MPI_UNDEFINED": mpiUndefined,
	}
	// Errno names, for the results of failed calls: ret -ENOENT.
	for _, name := range trace.ErrnoNames() {
		m[name], _ = trace.ParseErrno(name)
	}
	return m
})

// hstate is what the checker knows about a handle at a point of the
// script.
type hstate struct {
	st  uint8 // 0 unknown, 1 open, 2 closed
	pos Pos   // where it was opened or closed
}

const (
	hUnknown = iota
	hOpen
	hClosed
)

type compiler struct {
	file     string
	prog     *Program
	errs     ErrorList
	scope    *scope
	nslots   int
	nhandles int
	nsites   int
	hst      *hstates // by handle index
	onGroup  *symbol  // group of the innermost enclosing on
	inParam  string   // "param" or "group size" while compiling those
	rankOnly string   // "the color of split" while compiling what is computed for every rank
}

func (c *compiler) errorf(pos Pos, format string, args ...any) {
	if len(c.errs) >= 50 {
		return
	}
	c.errs = append(c.errs, &Error{File: c.file, Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

func (c *compiler) predeclare() {
	add := func(s *symbol) { c.scope.syms[s.name] = s }
	for name, v := range constants() {
		add(&symbol{name: name, kind: symConst, typ: TInt, cval: v})
	}
	add(&symbol{name: "true", kind: symConst, typ: TBool, cval: 1})
	add(&symbol{name: "false", kind: symConst, typ: TBool, cval: 0})
	for name, b := range map[string]int{"rank": bRank, "nranks": bNranks, "grank": bGrank, "gsize": bGsize} {
		add(&symbol{name: name, kind: symBuiltin, typ: TInt, which: b})
	}
}

// declare adds a name to the innermost scope. Names never shadow: a name
// visible from here cannot be declared again.
func (c *compiler) declare(id *Ident, kind symKind, typ Type) *symbol {
	if old := c.scope.lookup(id.Name); old != nil {
		switch old.kind {
		case symConst, symBuiltin:
			c.errorf(id.Pos, "%s is predeclared and cannot be declared again", id.Name)
		default:
			c.errorf(id.Pos, "%s is already declared (at %s); pick another name", id.Name, old.pos)
		}
	}
	s := &symbol{name: id.Name, kind: kind, typ: typ, pos: id.Pos}
	switch kind {
	case symHandle:
		s.slot = c.nhandles
		c.nhandles++
	case symGroup:
	default:
		s.slot = c.nslots
		c.nslots++
	}
	c.scope.syms[id.Name] = s
	return s
}

func (c *compiler) push() { c.scope = &scope{parent: c.scope, syms: map[string]*symbol{}} }
func (c *compiler) pop()  { c.scope = c.scope.parent }

func (c *compiler) param(s *ParamStmt) {
	c.inParam = "a param default"
	x := c.expr(s.Value)
	c.inParam = ""
	if x.typ == TGroup {
		c.errorf(s.Value.Start(), "a param cannot be a group")
	}
	sym := c.declare(s.Name, symParam, x.typ)
	c.prog.params = append(c.prog.params, &cParam{name: s.Name.Name, pos: s.Name.Pos, typ: x.typ, def: s.Value, x: x, slot: sym.slot})
}

func (c *compiler) group(s *GroupStmt) {
	g := &cGroup{name: s.Name.Name, pos: s.Name.Pos}
	if s.Size != nil {
		c.inParam = "a group size"
		x := c.expr(s.Size)
		c.inParam = ""
		c.want(x, TInt, s.Size.Start(), "a group size")
		if x.isConst && x.ci < 0 {
			c.errorf(s.Size.Start(), "group size must not be negative, got %d", x.ci)
		}
		g.size = &x
	}
	sym := c.declare(s.Name, symGroup, TGroup)
	sym.which = len(c.prog.groups)
	c.prog.groups = append(c.prog.groups, g)
}

// want reports an error unless x has type t. what names the value.
func (c *compiler) want(x cexpr, t Type, pos Pos, what string) bool {
	if x.typ == t || x.typ == TInvalid {
		return x.typ == t
	}
	hint := ""
	switch {
	case t == TDuration && x.typ == TInt:
		hint = " (write a unit: 10s, 500ms, 20us)"
	case t == TInt && x.typ == TDuration:
		hint = " (divide by a unit to count them: d / 1ms)"
	case t == TBool && x.typ == TInt:
		hint = " (compare it: x != 0)"
	}
	c.errorf(pos, "%s must be %s, got %s%s", what, article(t), article(x.typ), hint)
	return false
}

func article(t Type) string {
	switch t {
	case TInt:
		return "an int"
	case TInvalid:
		return "an invalid value"
	case TMPIHandle:
		return "an MPI file handle"
	}
	return "a " + t.String()
}

// Statements.

type cstmt interface{}

type cLet struct {
	slot int
	x    cexpr
}

// cSetElem is "NAME[INDEX] = VALUE" on a list variable.
type cSetElem struct {
	pos   Pos // of the index
	slot  int
	index cexpr
	x     cexpr
}

// cIf is an if statement with its else-if chain: the first arm whose
// condition holds runs, else els.
type cIf struct {
	arms []cArm
	els  []cstmt
}

type cArm struct {
	cond cexpr
	body []cstmt
}

type cRepeat struct {
	pos     Pos
	forTime bool
	count   cexpr
	slot    int // loop variable, -1 none
	body    []cstmt
}

type cOn struct {
	group int
	body  []cstmt
}

type cTime struct {
	label cexpr
	site  int
	body  []cstmt
}

func (c *compiler) stmts(ss []Stmt) []cstmt {
	var out []cstmt
	for _, s := range ss {
		if cs := c.stmt(s); cs != nil {
			out = append(out, cs)
		}
	}
	return out
}

func (c *compiler) block(b *Block, pre func()) []cstmt {
	c.push()
	defer c.pop()
	if pre != nil {
		pre()
	}
	return c.stmts(b.Stmts)
}

// hstates is what the checker knows of each handle at a point of the
// script, with a journal of changes so that a block's or an if arm's
// changes are merged or undone at the cost of the changes, not of every
// handle the script has: checking is linear in the script's length.
type hstates struct {
	m   map[int]hstate // handles in an unknown state are absent
	log []hchange      // changes since the oldest open mark
	n   int            // open marks
}

type hchange struct {
	k   int
	old hstate
}

func (h *hstates) get(k int) hstate { return h.m[k] }

func (h *hstates) set(k int, v hstate) {
	old := h.m[k]
	if old == v {
		return
	}
	if h.n > 0 {
		h.log = append(h.log, hchange{k, old})
	}
	if v.st == hUnknown {
		delete(h.m, k)
	} else {
		h.m[k] = v
	}
}

// forget makes every handle unknown.
func (h *hstates) forget() {
	for k := range h.m {
		h.set(k, hstate{})
	}
}

// mark starts a journal of changes; changed and undo end it.
func (h *hstates) mark() int {
	h.n++
	return len(h.log)
}

// changed returns the handles changed since mark with their states before
// it, oldest first.
func (h *hstates) changed(mark int) map[int]hstate {
	out := map[int]hstate{}
	for _, c := range h.log[mark:] {
		if _, ok := out[c.k]; !ok {
			out[c.k] = c.old
		}
	}
	return out
}

// release ends a mark, keeping its changes.
func (h *hstates) release() {
	if h.n--; h.n == 0 {
		h.log = h.log[:0]
	}
}

// undo takes back the changes since mark.
func (h *hstates) undo(mark int) {
	for i := len(h.log) - 1; i >= mark; i-- {
		c := h.log[i]
		if c.old.st == hUnknown {
			delete(h.m, c.k)
		} else {
			h.m[c.k] = c.old
		}
	}
	h.log = h.log[:mark]
}

// merge ends a block that may run or not (a loop, an on block): a handle
// the block changed is known after it only where the block left it as it
// found it.
func (h *hstates) merge(mark int) {
	before := h.changed(mark)
	h.release()
	for k, b := range before {
		if a := h.m[k]; a.st != b.st {
			h.set(k, hstate{})
		} else {
			h.set(k, b)
		}
	}
}

func (c *compiler) stmt(s Stmt) cstmt {
	switch s := s.(type) {
	case *ParamStmt, *GroupStmt:
		c.errorf(s.info().Pos, "declarations must come first") // the parser prevents it
		return nil
	case *LetStmt:
		x := c.expr(s.Value)
		switch x.typ {
		case THandle, TMPIHandle:
			c.errorf(s.Value.Start(), "a file handle cannot be copied; use the name it was opened as")
		case TGroup:
			c.errorf(s.Value.Start(), "a group cannot be stored in a variable")
		}
		sym := c.declare(s.Name, symVar, x.typ)
		return &cLet{slot: sym.slot, x: x}
	case *AssignStmt:
		sym := c.scope.lookup(s.Name.Name)
		x := c.expr(s.Value)
		if sym == nil {
			c.errorf(s.Name.Pos, "undefined: %s (declare it with let %s = …)", s.Name.Name, s.Name.Name)
			return nil
		}
		if sym.kind != symVar {
			c.errorf(s.Name.Pos, "cannot assign to %s: it is %s (only let variables can change)", s.Name.Name, kindName(sym))
			return nil
		}
		if s.Index != nil {
			if sym.typ != TList {
				c.errorf(s.Index.Start(), "%s is %s, not a list: only list elements are assigned with [ ]", sym.name, article(sym.typ))
				return nil
			}
			ix := c.expr(s.Index)
			c.want(ix, TInt, s.Index.Start(), "a list index")
			c.want(x, TInt, s.Value.Start(), "an element of "+sym.name)
			return &cSetElem{pos: s.Index.Start(), slot: sym.slot, index: ix, x: x}
		}
		c.want(x, sym.typ, s.Value.Start(), "the value assigned to "+sym.name)
		return &cLet{slot: sym.slot, x: x}
	case *IfStmt:
		return c.ifStmt(s)
	case *RepeatStmt:
		r := &cRepeat{pos: s.Pos, forTime: s.For, slot: -1}
		r.count = c.expr(s.Count)
		if s.For {
			c.want(r.count, TDuration, s.Count.Start(), "the duration of repeat for")
		} else {
			c.want(r.count, TInt, s.Count.Start(), "a repeat count")
		}
		if r.count.isConst && r.count.ci < 0 {
			c.errorf(s.Count.Start(), "repeat count must not be negative, got %d", r.count.ci)
		}
		m := c.hst.mark()
		r.body = c.block(s.Body, func() {
			if s.As != nil {
				r.slot = c.declare(s.As, symLoop, TInt).slot
			}
		})
		c.hst.merge(m)
		return r
	case *OnStmt:
		sym := c.scope.lookup(s.Group.Name)
		o := &cOn{}
		switch {
		case sym == nil:
			c.errorf(s.Group.Pos, "undefined group %s (declare it at the top: group %s = SIZE)", s.Group.Name, s.Group.Name)
		case sym.kind != symGroup:
			c.errorf(s.Group.Pos, "%s is not a group, it is %s", s.Group.Name, kindName(sym))
			sym = nil
		case c.onGroup != nil && c.onGroup != sym:
			c.errorf(s.Pos, "on %s inside on %s never runs: groups are disjoint", sym.name, c.onGroup.name)
		}
		if sym != nil {
			o.group = sym.which
		}
		outer := c.onGroup
		if sym != nil {
			c.onGroup = sym
		}
		m := c.hst.mark()
		o.body = c.block(s.Body, nil)
		c.hst.merge(m)
		c.onGroup = outer
		return o
	case *TimeStmt:
		t := &cTime{label: c.expr(s.Label), site: c.site()}
		c.want(t.label, TString, s.Label.Start(), "a time label")
		t.body = c.block(s.Body, nil)
		return t
	case *CommandStmt:
		return c.command(s)
	}
	return nil
}

// ifStmt checks an if statement and its else-if chain in a loop. What is
// known of a handle after it is what is known after every arm (and after
// none, without an else) alike.
func (c *compiler) ifStmt(s *IfStmt) cstmt {
	n := &cIf{}
	m := c.hst.mark()
	// For each handle an arm changed: its state after the first path
	// seen, whether every path left it so, and how many paths changed it.
	type seen struct {
		v     hstate
		agree bool
		paths int
	}
	after := map[int]*seen{}
	before := map[int]hstate{}
	paths := 0
	end := func() {
		paths++
		for k, b := range c.hst.changed(m) {
			if _, ok := before[k]; !ok {
				before[k] = b
			}
			v := c.hst.get(k)
			if a := after[k]; a == nil {
				// The paths before this one left it as it was.
				after[k] = &seen{v: v, agree: paths == 1 || v.st == b.st, paths: 1}
			} else {
				a.agree = a.agree && a.v.st == v.st
				a.paths++
			}
		}
		c.hst.undo(m)
	}
	for {
		a := cArm{cond: c.expr(s.Cond)}
		c.want(a.cond, TBool, s.Cond.Start(), "an if condition")
		a.body = c.block(s.Then, nil)
		n.arms = append(n.arms, a)
		end()
		if s.ElseIf == nil {
			break
		}
		s = s.ElseIf
	}
	if s.Else != nil {
		n.els = c.block(s.Else, nil)
	}
	end() // the else, or no arm at all
	c.hst.release()
	for k, a := range after {
		if a.agree && (a.paths == paths || a.v.st == before[k].st) {
			c.hst.set(k, a.v)
		} else {
			c.hst.set(k, hstate{})
		}
	}
	return n
}

func kindName(s *symbol) string {
	switch s.kind {
	case symConst:
		return "a constant"
	case symBuiltin:
		return "a built-in value"
	case symParam:
		return "a param"
	case symGroup:
		return "a group"
	case symLoop:
		return "a loop variable"
	case symHandle:
		return "a file handle"
	}
	return "a variable"
}

func (c *compiler) site() int {
	c.nsites++
	return c.nsites - 1
}

// Commands.

type cmdOp uint8

const (
	opReadPath cmdOp = iota
	opWritePath
	opAppend
	opCreate
	opDelete
	opRename
	opLookup
	opLookupFD
	opStatPath
	opMkdir
	opRmdir
	opTruncPath
	opOpen
	opReadFD
	opWriteFD
	opStatFD
	opTruncFD
	opSeekFD
	opSyncFD
	opDatasync
	opCloseFD
	opDup
	opMPIOpen
	opMPIRead
	opMPIWrite
	opMPISeek
	opMPISync
	opMPITrunc
	opMPIClose
	opMPIView
	opBarrier
	opBcast
	opReduce
	opGather
	opScatter
	opAllreduce
	opAllgather
	opAlltoall
	opSend
	opRecv
	opSendrecv
	opSleep
	opMark
	opFail
	opInherit
	opFcntl
	opCloseRange
	opCopy
	opAllocate
	opAdvise
	opSyncAll
	opMap
	opUnmap
	opMsync
	opReaddir
	opLink
	opSymlink
	opReadlink
	opReadlinkFD
	opLinkFD
	opFork
	opClone
	opExec
	opExit
	opSplit
	opWait
)

type cCmd struct {
	pos    Pos
	name   string
	op     cmdOp
	path   *cexpr // path operand (or the label of mark)
	n      *cexpr // byte count of communication; duration of sleep
	h      int    // handle index of a handle operand or of "as"
	hPos   Pos
	hName  string
	args   cArgs
	whence int32
	all    bool
	shared bool
	order  bool
	self   bool
	site   int // path cache
	site2  int // rename target cache
	// Call details (docs/SCRIPT.md, "Call details").
	callOp trace.Op // call NAME: the op to record instead of the default; 0 none
	ret    *cexpr   // ret R
	// dup: the new handle; copy: the handle written to
	h2     int
	h2Pos  Pos
	h2Name string
	hmpi   bool   // the handle operand (or the one bound) is an MPI file handle
	thread *cexpr // thread T, nil: 0
	quiet  bool   // inherit … quiet: no event
	// comm NAME: the communicator (handle slot) the call is on, -1 none
	commH    int
	commName string
	// anysource, anytag: a receive posted with the wildcards
	anySrc, anyTag bool
}

func (cm *cCmd) arg(key string) *cexpr { return cm.args.get(key) }

// cArgs are a command's arguments by keyword. A command has a handful:
// a scan of them is several times faster than a map lookup, and the
// interpreter looks them up at every call it makes.
type cArgs []cArg

type cArg struct {
	key string
	x   *cexpr
}

// get returns the argument key, or nil.
func (a cArgs) get(key string) *cexpr {
	for i := range a {
		if a[i].key == key {
			return a[i].x
		}
	}
	return nil
}

var collectiveCmd = map[string]trace.Op{
	"barrier": trace.OpMPIBarrier, "bcast": trace.OpMPIBcast, "reduce": trace.OpMPIReduce,
	"gather": trace.OpMPIGather, "scatter": trace.OpMPIScatter, "allreduce": trace.OpMPIAllreduce,
	"allgather": trace.OpMPIAllgather, "alltoall": trace.OpMPIAlltoall,
}

var commOps = map[string]cmdOp{
	"barrier": opBarrier, "bcast": opBcast, "reduce": opReduce, "gather": opGather,
	"scatter": opScatter, "allreduce": opAllreduce, "allgather": opAllgather, "alltoall": opAlltoall,
	"send": opSend, "recv": opRecv, "sendrecv": opSendrecv,
}

func (c *compiler) command(s *CommandStmt) cstmt {
	spec := commands()[s.Name]
	if spec == nil {
		c.errorf(s.Pos, "unknown command %q", s.Name)
		return nil
	}
	cm := &cCmd{pos: s.Pos, name: s.Name, h: -1, site: c.site(), site2: -1, commH: -1}
	// The operand.
	opType := TInvalid
	if spec.operand != nil && s.Operand == nil && !spec.optOperand {
		c.errorf(s.Pos, "%s needs %s: %s", s.Name, spec.opWhat, spec.synopsis)
		return nil
	}
	if spec.operand == nil && s.Operand != nil {
		c.errorf(s.Operand.Start(), "%s takes no operand: %s", s.Name, spec.synopsis)
		return nil
	}
	var hsym *symbol
	if s.Operand != nil {
		if id, ok := s.Operand.(*Ident); ok {
			if sym := c.scope.lookup(id.Name); sym != nil && sym.kind == symHandle {
				hsym = sym
			}
		}
		if hsym != nil {
			opType = hsym.typ
			cm.h, cm.hPos, cm.hName = hsym.slot, s.Operand.Start(), hsym.name
		} else {
			x := c.expr(s.Operand)
			opType = x.typ
			switch x.typ {
			case TString:
				cm.path = &x
			default:
				cm.n = &x
			}
		}
		ok := opType == TInvalid
		for _, t := range spec.operand {
			ok = ok || t == opType
		}
		if !ok {
			hint := ""
			if opType == THandle && s.Name == "view" {
				hint = fmt.Sprintf(" (%s was opened with open; views need mpiopen)", hsym.name)
			}
			c.errorf(s.Operand.Start(), "%s needs %s, got %s%s", s.Name, spec.opWhat, article(opType), hint)
			return nil
		}
	}
	// Keyword arguments.
	for _, a := range s.Args {
		as := spec.arg(a.Key)
		if as == nil {
			c.errorf(a.Pos, "%s takes no '%s': %s", s.Name, a.Key, spec.synopsis)
			continue
		}
		switch as.kind {
		case argExpr:
			if a.Value == nil {
				c.errorf(a.Pos, "'%s' needs a value", a.Key)
				continue
			}
			if s.Name == "split" && (a.Key == "color" || a.Key == "key") {
				c.rankOnly = "the " + a.Key + " of split"
			}
			x := c.expr(a.Value)
			c.rankOnly = ""
			c.want(x, as.typ, a.Value.Start(), fmt.Sprintf("the %s of %s", as.what, s.Name))
			if x.isConst && x.ci < 0 && x.typ == TInt && nonNegative(s.Name, a.Key) {
				c.errorf(a.Value.Start(), "%s must not be negative, got %d", as.what, x.ci)
			}
			cm.args = append(cm.args, cArg{a.Key, &x}) // the parser refuses a key given twice
		case argName:
			if as.typ != TInvalid && a.Name != nil {
				// A handle the command uses (copy … to H, comm C).
				sym := c.scope.lookup(a.Name.Name)
				switch {
				case sym == nil && as.typ == TComm:
					c.errorf(a.Name.Pos, "undefined: %s (make it first: split as %s)", a.Name.Name, a.Name.Name)
				case sym == nil:
					c.errorf(a.Name.Pos, "undefined: %s (open it first: open … as %s)", a.Name.Name, a.Name.Name)
				case sym.kind != symHandle || sym.typ != as.typ:
					what := pick(sym.kind == symHandle, article(sym.typ), kindName(sym))
					c.errorf(a.Name.Pos, "%s needs %s after '%s', got %s", s.Name, pick(as.typ == TComm, "a communicator", "a POSIX file handle"), a.Key, what)
				case as.typ == TComm:
					cm.commH, cm.commName = sym.slot, sym.name
				default:
					cm.h2, cm.h2Pos, cm.h2Name = sym.slot, a.Name.Pos, sym.name
				}
			}
		case argWord:
			if a.Key == "call" {
				var ok bool
				if cm.callOp, ok = trace.ParseOp(a.Word); !ok || !cm.callOp.Known() {
					c.errorf(a.Pos, "unknown call %q", a.Word)
					cm.callOp = trace.OpUnknown
				}
				continue
			}
			switch a.Word {
			case "start":
				cm.whence = 0
			case "current":
				cm.whence = 1
			case "end":
				cm.whence = 2
			case "data":
				cm.whence = 3 // SEEK_DATA
			case "hole":
				cm.whence = 4 // SEEK_HOLE
			}
		case argFlag:
			switch a.Key {
			case "all":
				cm.all = true
			case "shared":
				cm.shared = true
			case "ordered":
				cm.order = true
			case "self":
				cm.self = true
			case "quiet":
				cm.quiet = true
			case "anysource":
				cm.anySrc = true
			case "anytag":
				cm.anyTag = true
			}
		}
	}
	for _, as := range spec.args {
		if as.required && s.Arg(as.key) == nil {
			c.errorf(s.Pos, "%s needs '%s': %s", s.Name, as.key, spec.synopsis)
			return nil
		}
	}
	if cm.n != nil && cm.n.isConst && cm.n.ci < 0 {
		c.errorf(s.Operand.Start(), "%s must not be negative, got %s", spec.opWhat, fmtConst(*cm.n))
	}
	if s.Name == "sendrecv" {
		// One partner (with), or a destination and a source (to, from).
		with, to, from := s.Arg("with"), s.Arg("to"), s.Arg("from")
		switch {
		case with != nil && (to != nil || from != nil):
			pos := pick(to != nil, to, from).Pos
			c.errorf(pos, "sendrecv names one partner with 'with', or a destination and a source with 'to' and 'from', not both: %s", spec.synopsis)
			return nil
		case with == nil && (to == nil || from == nil):
			c.errorf(s.Pos, "sendrecv needs 'with PEER', or 'to PEER from PEER': %s", spec.synopsis)
			return nil
		}
	}
	cm.ret = cm.arg("ret")
	cm.thread = cm.arg("thread")
	cm.hmpi = opType == TMPIHandle
	c.selectOp(s, cm, opType, hsym)
	c.details(s, cm)
	return cm
}

// defaultOp is the call a command that makes one call makes without
// "call NAME"; OpUnknown for the others.
func (cm *cCmd) defaultOp() trace.Op {
	at, iov := cm.arg("at") != nil, cm.arg("iov") != nil
	switch cm.op {
	case opReadFD, opWriteFD:
		w := cm.op == opWriteFD
		switch {
		case iov && at:
			return pick(w, trace.OpPwritev, trace.OpPreadv)
		case iov:
			return pick(w, trace.OpWritev, trace.OpReadv)
		case at:
			return pick(w, trace.OpPwrite, trace.OpPread)
		}
		return pick(w, trace.OpWrite, trace.OpRead)
	case opMPIRead, opMPIWrite:
		w := cm.op == opMPIWrite
		switch {
		case cm.shared:
			return pick(w, trace.OpMPIFileWriteShared, trace.OpMPIFileReadShared)
		case cm.order:
			return pick(w, trace.OpMPIFileWriteOrdered, trace.OpMPIFileReadOrdered)
		case at:
			return pick(w, pick(cm.all, trace.OpMPIFileWriteAtAll, trace.OpMPIFileWriteAt),
				pick(cm.all, trace.OpMPIFileReadAtAll, trace.OpMPIFileReadAt))
		}
		return pick(w, pick(cm.all, trace.OpMPIFileWriteAll, trace.OpMPIFileWrite),
			pick(cm.all, trace.OpMPIFileReadAll, trace.OpMPIFileRead))
	case opOpen:
		return trace.OpOpen
	case opCloseFD:
		return trace.OpClose
	case opDup:
		return trace.OpDup
	case opSeekFD:
		return trace.OpLseek
	case opSyncFD:
		return trace.OpFsync
	case opDatasync:
		return trace.OpFdatasync
	case opStatPath:
		return trace.OpStat
	case opStatFD:
		return trace.OpFstat
	case opTruncPath:
		return trace.OpTruncate
	case opTruncFD:
		return trace.OpFtruncate
	case opDelete:
		return trace.OpUnlink
	case opRename:
		return trace.OpRename
	case opLookup, opLookupFD:
		return trace.OpAccess
	case opMkdir:
		return trace.OpMkdir
	case opRmdir:
		return trace.OpRmdir
	case opMPIOpen:
		return trace.OpMPIFileOpen
	case opMPIClose:
		return trace.OpMPIFileClose
	case opMPISync:
		return trace.OpMPIFileSync
	case opMPITrunc:
		return trace.OpMPIFileSetSize
	case opMPIView:
		return trace.OpMPIFileSetView
	case opMPISeek:
		return pick(cm.shared, trace.OpMPIFileSeekShared, trace.OpMPIFileSeek)
	case opInherit:
		return trace.OpInherit
	case opFcntl:
		return trace.OpFcntl
	case opCloseRange:
		return trace.OpCloseRange
	case opCopy:
		return trace.OpCopyFileRange
	case opAllocate:
		return trace.OpFallocate
	case opAdvise:
		return trace.OpFadvise
	case opSyncAll:
		return trace.OpSync
	case opMap:
		return trace.OpMmap
	case opUnmap:
		return trace.OpMunmap
	case opMsync:
		return trace.OpMsync
	case opReaddir:
		return trace.OpGetdents
	case opLink:
		return trace.OpLink
	case opSymlink:
		return trace.OpSymlink
	case opReadlink:
		return trace.OpReadlink
	case opReadlinkFD:
		return trace.OpReadlinkat // readlinkat(fd, "", …): readlink has no descriptor
	case opLinkFD:
		return trace.OpLinkat // linkat(fd, "", …, AT_EMPTY_PATH): link has no descriptor
	case opFork:
		return trace.OpFork
	case opClone:
		return trace.OpClone
	case opExec:
		return trace.OpExec
	case opExit:
		return trace.OpExit
	case opSplit:
		return trace.OpMPICommSplit
	case opWait:
		return trace.OpMPIWait
	case opSend:
		return trace.OpMPISend
	case opRecv:
		return trace.OpMPIRecv
	case opSendrecv:
		return trace.OpMPISendrecv
	}
	if op, ok := collectiveCmd[cm.name]; ok {
		return op
	}
	return trace.OpUnknown
}

// op returns the call the command records.
func (cm *cCmd) recOp(def trace.Op) trace.Op {
	if cm.callOp != trace.OpUnknown {
		return cm.callOp
	}
	return def
}

// details checks the call details of a command (iov, elements, flags,
// call, ret) against the call it makes.
func (c *compiler) details(s *CommandStmt, cm *cCmd) {
	only := func(key string, ok bool, what string) {
		if a := s.Arg(key); a != nil && !ok {
			c.errorf(a.Pos, "'%s' %s", key, what)
		}
	}
	fd := cm.op == opReadFD || cm.op == opWriteFD
	only("iov", fd, "needs a POSIX file handle: it makes readv/writev")
	if cm.op == opDup && cm.ret != nil && cm.ret.isConst && cm.ret.ci >= 0 {
		c.errorf(s.Arg("ret").Pos, "the ret of dup must be negative (a failed dup, e.g. -EBADF): a successful dup returns the handle the script allocates")
	}
	stdio := fd && (cm.callOp == trace.OpFread || cm.callOp == trace.OpFwrite)
	only("elements", cm.op == opMPIRead || cm.op == opMPIWrite || stdio || commElems[s.Name],
		"needs an MPI file handle, or a POSIX file handle and call fread or fwrite (their item count)")
	if cm.op == opDup {
		only("arg", cm.callOp == trace.OpFcntl, "needs call fcntl: it is F_DUPFD's lowest descriptor")
	}
	if cm.whence > 2 && (cm.op != opSeekFD) {
		c.errorf(s.Arg("from").Pos, "from %s needs a POSIX file handle (SEEK_DATA and SEEK_HOLE are lseek's)", s.Arg("from").Word)
	}
	individual := (fd || cm.op == opMPIRead || cm.op == opMPIWrite) && s.Arg("at") == nil && !cm.shared && !cm.order
	only("pos", individual || cm.op == opCopy && s.Arg("at") == nil,
		"needs a call at the handle's position (a handle, no 'at', not shared or ordered)")
	only("outpos", s.Arg("outat") == nil, "does not go with 'outat': the call gives the offset")
	switch cm.op {
	case opFork, opClone:
		if cm.ret != nil && cm.ret.isConst && cm.ret.ci >= 0 {
			c.errorf(s.Arg("ret").Pos, "the ret of %s must be negative (a failed %s): a successful one returns its thread, the operand", s.Name, s.Name)
		}
	case opFcntl:
		if x := cm.arg("cmd"); x != nil && x.isConst && (x.ci == trace.FDupfd || x.ci == trace.FDupfdCloexec) {
			c.errorf(s.Arg("cmd").Pos, "fcntl's dup commands make a handle: write dup HANDLE as NAME call fcntl (flags F_DUPFD_CLOEXEC)")
		}
	}
	if s.Name == "read" || s.Name == "write" {
		only("flags", fd, "of read and write needs a POSIX file handle (the RWF_ flags of preadv2/pwritev2)")
	}
	only("ret", cm.op != opReadPath && cm.op != opWritePath,
		"needs a command that makes one call: with a path, "+s.Name+" opens and closes the file around its call (use open … as H)")
	if cm.op == opOpen || cm.op == opMPIOpen {
		if cm.ret != nil && cm.ret.isConst && cm.ret.ci >= 0 {
			c.errorf(s.Arg("ret").Pos, "the ret of %s must be negative (a failed open, e.g. -ENOENT): a successful open returns the handle the script allocates", s.Name)
		}
	}
	if a := s.Arg("call"); a != nil && cm.callOp != trace.OpUnknown {
		def := cm.defaultOp()
		ok := false
		var names []string
		for _, v := range callVariants[def] {
			ok = ok || v == cm.callOp
			names = append(names, v.String())
		}
		switch {
		case ok:
		case len(names) == 0:
			c.errorf(a.Pos, "this %s makes %s, which has no other spelling to name with 'call'", s.Name, def)
		default:
			c.errorf(a.Pos, "this %s makes %s: 'call' may name %s", s.Name, def, orList(names))
		}
	}
}

// nonNegative reports whether a command's argument must be ≥ 0 (tags,
// roots and peers may be any, -1; seek offsets may be negative).
func nonNegative(cmd, key string) bool {
	switch key {
	case "tag", "recvtag", "from", "root", "with", "ret", "color", "key":
		return false
	case "to":
		return cmd != "seek" && cmd != "send" && cmd != "sendrecv"
	}
	return true
}

func fmtConst(x cexpr) string {
	if x.typ == TDuration {
		return FormatDuration(x.ci)
	}
	return fmt.Sprint(x.ci)
}

// selectOp picks the call a command makes from its operand's type, and
// checks the combinations of arguments.
func (c *compiler) selectOp(s *CommandStmt, cm *cCmd, opType Type, hsym *symbol) {
	mpiOnly := func(flags ...string) {
		for _, f := range flags {
			if s.Arg(f) != nil {
				what := "a path"
				if opType == THandle {
					what = "a POSIX file handle"
				}
				c.errorf(s.Arg(f).Pos, "'%s' needs an MPI file handle (opened with mpiopen), not %s", f, what)
			}
		}
	}
	// Handles are followed for the rank's main thread only: a command of
	// another thread may be in another process, whose handles are copies
	// (the interpreter checks those when it runs).
	skip := cm.thread != nil && !(cm.thread.isConst && cm.thread.ci == 0)
	useHandle := func() {
		if hsym == nil || skip {
			return
		}
		st := c.hst.get(hsym.slot)
		if st.st == hClosed {
			c.errorf(cm.hPos, "%s is used after it was closed (at %s)", hsym.name, st.pos)
		}
	}
	switch s.Name {
	case "read", "write":
		read := s.Name == "read"
		switch opType {
		case TString:
			mpiOnly("all", "shared", "ordered")
			cm.op = pick(read, opReadPath, opWritePath)
		case THandle:
			mpiOnly("all", "shared", "ordered")
			cm.op = pick(read, opReadFD, opWriteFD)
			useHandle()
		case TMPIHandle:
			cm.op = pick(read, opMPIRead, opMPIWrite)
			useHandle()
			n := 0
			for _, f := range []bool{cm.all, cm.shared, cm.order} {
				if f {
					n++
				}
			}
			if n > 1 {
				c.errorf(s.Pos, "%s takes one of 'all', 'shared' and 'ordered' (ordered is the collective shared-pointer call)", s.Name)
			}
			if (cm.shared || cm.order) && s.Arg("at") != nil {
				c.errorf(s.Arg("at").Pos, "'at' does not go with '%s': the shared file pointer decides the offset", map[bool]string{true: "shared", false: "ordered"}[cm.shared])
			}
		}
	case "append":
		cm.op = opAppend
	case "create":
		cm.op = opCreate
	case "delete":
		cm.op = opDelete
	case "rename":
		cm.op = opRename
		cm.site2 = c.site()
	case "lookup":
		cm.op = pick(opType == TString, opLookup, opLookupFD)
		useHandle()
	case "stat":
		cm.op = pick(opType == TString, opStatPath, opStatFD)
		useHandle()
	case "mkdir":
		cm.op = opMkdir
	case "rmdir":
		cm.op = opRmdir
	case "truncate":
		switch opType {
		case TString:
			cm.op = opTruncPath
		case THandle:
			cm.op = opTruncFD
		default:
			cm.op = opMPITrunc
		}
		useHandle()
	case "dup":
		cm.op = opDup
		useHandle()
		if sym := c.bindAs(s, THandle, "using its name", skip); sym != nil {
			cm.h2, cm.h2Pos, cm.h2Name = sym.slot, s.Arg("as").Name.Pos, sym.name
		}
	case "open", "mpiopen", "inherit":
		cm.op = map[string]cmdOp{"open": opOpen, "mpiopen": opMPIOpen, "inherit": opInherit}[s.Name]
		cm.hmpi = s.Name == "mpiopen"
		if sym := c.bindAs(s, pick(s.Name == "mpiopen", TMPIHandle, THandle), pick(s.Name == "inherit", "inheriting it", "opening it"), skip); sym != nil {
			cm.h, cm.hPos, cm.hName = sym.slot, s.Arg("as").Name.Pos, sym.name
		}
	case "fcntl", "allocate", "advise", "map", "readdir":
		cm.op = map[string]cmdOp{"fcntl": opFcntl, "allocate": opAllocate, "advise": opAdvise, "map": opMap, "readdir": opReaddir}[s.Name]
		useHandle()
	case "copy":
		cm.op = opCopy
		useHandle()
		if a := s.Arg("to"); a != nil && a.Name != nil && !skip {
			if st := c.hst.get(cm.h2); st.st == hClosed && cm.h2Name != "" {
				c.errorf(cm.h2Pos, "%s is used after it was closed (at %s)", cm.h2Name, st.pos)
			}
		}
	case "closerange":
		cm.op = opCloseRange
	case "link", "symlink":
		cm.op = pick(s.Name == "link", opLink, opSymlink)
		if opType == THandle {
			cm.op = opLinkFD
			useHandle()
		}
		cm.site2 = c.site()
	case "readlink":
		cm.op = pick(opType == TString, opReadlink, opReadlinkFD)
		useHandle()
	case "unmap", "msync":
		cm.op = pick(s.Name == "unmap", opUnmap, opMsync)
	case "split":
		cm.op = opSplit
		// A communicator is never closed: its name may be split again.
		if sym := c.bindAs(s, TComm, "splitting", true); sym != nil {
			cm.h, cm.hPos, cm.hName = sym.slot, s.Arg("as").Name.Pos, sym.name
		}
	case "wait":
		cm.op = opWait
	case "fork", "clone", "exec", "exit":
		cm.op = map[string]cmdOp{"fork": opFork, "clone": opClone, "exec": opExec, "exit": opExit}[s.Name]
	case "close":
		cm.op = pick(opType == THandle, opCloseFD, opMPIClose)
		if hsym != nil {
			if st := c.hst.get(hsym.slot); st.st == hClosed && !skip {
				c.errorf(cm.hPos, "%s is already closed (at %s)", hsym.name, st.pos)
			}
			c.hst.set(hsym.slot, pick(skip, hstate{}, hstate{st: hClosed, pos: s.Pos}))
		}
	case "seek":
		if opType == THandle {
			mpiOnly("shared")
		}
		cm.op = pick(opType == THandle, opSeekFD, opMPISeek)
		useHandle()
	case "sync":
		switch {
		case s.Operand == nil:
			cm.op = opSyncAll
		case opType == THandle:
			cm.op = opSyncFD
		default:
			cm.op = opMPISync
		}
		useHandle()
	case "datasync":
		cm.op = opDatasync
		useHandle()
	case "view":
		cm.op = opMPIView
		useHandle()
		if (s.Arg("block") == nil) != (s.Arg("stride") == nil) {
			c.errorf(s.Pos, "view takes 'block' and 'stride' together (or neither, for a contiguous view)")
		}
		b, st := cm.arg("block"), cm.arg("stride")
		if b != nil && st != nil && b.isConst && st.isConst {
			if b.ci == 0 {
				c.errorf(s.Arg("block").Pos, "the block length of a view must be positive")
			} else if st.ci < b.ci {
				c.errorf(s.Arg("stride").Pos, "the stride of a view (%d) must be at least its block length (%d)", st.ci, b.ci)
			}
		}
	case "sleep":
		cm.op = opSleep
	case "mark":
		cm.op = opMark
	case "fail":
		cm.op = opFail
	default:
		cm.op = commOps[s.Name]
	}
	// Commands that may close handles the script does not name: what is
	// known of every handle is lost.
	if s.Arg("fd") != nil || cm.op == opCloseRange || cm.op == opExec || cm.op == opExit {
		c.hst.forget()
	}
}

// bindAs declares (or reuses, if it is closed) the handle "as NAME" of an
// open, mpiopen, dup or inherit, and marks it open — unknown after a
// failed call (ret), or where the handles are not followed (skip, fd N:
// the descriptor may be the handle's own, which the call replaces).
func (c *compiler) bindAs(s *CommandStmt, typ Type, again string, skip bool) *symbol {
	a := s.Arg("as")
	if a == nil || a.Name == nil {
		return nil
	}
	skip = skip || s.Arg("fd") != nil
	sym := c.scope.lookup(a.Name.Name)
	if sym != nil && sym.kind == symHandle {
		if sym.typ != typ {
			c.errorf(a.Name.Pos, "%s is %s (opened at %s); %s needs another name", sym.name, article(sym.typ), sym.pos, s.Name)
			return nil
		}
		if st := c.hst.get(sym.slot); st.st == hOpen && !skip {
			c.errorf(a.Name.Pos, "%s is still open (opened at %s); close it before %s again", sym.name, st.pos, again)
		}
	} else {
		sym = c.declare(a.Name, symHandle, typ)
	}
	if s.Arg("ret") != nil || skip {
		c.hst.set(sym.slot, hstate{}) // a failed call leaves the handle closed
	} else {
		c.hst.set(sym.slot, hstate{st: hOpen, pos: s.Pos})
	}
	return sym
}

func pick[T any](cond bool, a, b T) T {
	if cond {
		return a
	}
	return b
}

// Expressions.

func (c *compiler) expr(e Expr) cexpr {
	if b, ok := e.(*BinaryExpr); ok {
		return c.chain(b)
	}
	x := c.expr1(e)
	x.pos = e.Start()
	return c.finish(x)
}

func (c *compiler) finish(x cexpr) cexpr {
	if !x.isConst && x.typ != TInvalid && x.constable {
		// Every operand is a constant: compute it now, so that errors in
		// it (division by zero, overflow) are found before any run.
		x = c.fold(x)
	}
	return x
}

// chain compiles a binary expression and the binary expressions down its
// left side (a + b - c, the || of many comparisons) in a loop, and they
// evaluate in a loop: a chain of any length costs no stack.
func (c *compiler) chain(e *BinaryExpr) cexpr {
	var spine []*BinaryExpr
	var left Expr = e
	for {
		b, ok := left.(*BinaryExpr)
		if !ok {
			break
		}
		spine = append(spine, b)
		left = b.X
	}
	pos := left.Start()
	x := c.expr(left)
	for i := len(spine) - 1; i >= 0; i-- {
		b := spine[i]
		y := c.expr(b.Y)
		x = c.binary(b, x, y)
		x.pos = pos
		x = c.finish(x)
	}
	return x
}

func (c *compiler) fold(x cexpr) cexpr {
	fail := func(err error) cexpr {
		pos := x.pos
		if e, ok := err.(*evalError); ok && e.pos.IsValid() {
			pos = e.pos
		}
		c.errorf(pos, "%s", errMsg(err))
		return cexpr{typ: TInvalid}
	}
	switch x.typ {
	case TString:
		s, err := x.fs(nil)
		if err != nil {
			return fail(err)
		}
		k := constStr(s)
		k.pos = x.pos
		return k
	case TInt, TDuration, TBool:
		v, err := x.fi(nil)
		if err != nil {
			return fail(err)
		}
		k := constInt(x.typ, v)
		k.pos = x.pos
		return k
	}
	return x
}

func (c *compiler) expr1(e Expr) cexpr {
	switch e := e.(type) {
	case *NumLit:
		switch e.Unit {
		case UnitDuration:
			return constInt(TDuration, e.Value)
		default:
			return constInt(TInt, e.Value)
		}
	case *StringLit:
		return c.strLit(e)
	case *ParenExpr:
		return c.expr(e.X)
	case *Ident:
		return c.ident(e)
	case *UnaryExpr:
		x := c.expr(e.X)
		return c.unary(e, x)
	case *CallExpr:
		return c.call(e)
	case *ListLit:
		elems := make([]cexpr, len(e.Elems))
		ok := true
		for i, el := range e.Elems {
			elems[i] = c.expr(el)
			ok = c.want(elems[i], TInt, el.Start(), "a list element") && ok
		}
		if !ok {
			return cexpr{typ: TInvalid}
		}
		return listExpr(elems)
	case *IndexExpr:
		x, i := c.expr(e.X), c.expr(e.Index)
		if x.typ == TInvalid || i.typ == TInvalid {
			return cexpr{typ: TInvalid}
		}
		if x.typ != TList {
			c.errorf(e.Lbrack, "only lists can be indexed, got %s", article(x.typ))
			return cexpr{typ: TInvalid}
		}
		if !c.want(i, TInt, e.Index.Start(), "a list index") {
			return cexpr{typ: TInvalid}
		}
		return indexExpr(x, i, e.Index.Start())
	}
	return cexpr{typ: TInvalid}
}

func (c *compiler) ident(e *Ident) cexpr {
	sym := c.scope.lookup(e.Name)
	if sym == nil {
		if commands()[e.Name] != nil || keywords[e.Name] {
			c.errorf(e.Pos, "%s is a command, not a value", e.Name)
		} else if strings.HasPrefix(e.Name, "O_") || strings.HasPrefix(e.Name, "MPI_MODE_") {
			var names []string
			for n := range constants() {
				names = append(names, n)
			}
			if s := suggest(e.Name, names); s != "" {
				c.errorf(e.Pos, "undefined: %s (did you mean %s?)", e.Name, s)
			} else {
				c.errorf(e.Pos, "undefined: %s", e.Name)
			}
		} else {
			c.errorf(e.Pos, "undefined: %s", e.Name)
		}
		return cexpr{typ: TInvalid}
	}
	switch sym.kind {
	case symConst:
		return constInt(sym.typ, sym.cval)
	case symBuiltin:
		if c.inParam != "" && sym.which != bNranks {
			c.errorf(e.Pos, "%s cannot use %s: it is the same on every rank", c.inParam, e.Name)
			return cexpr{typ: TInvalid}
		}
		return builtinExpr(sym.which)
	case symGroup:
		return constInt(TGroup, int64(sym.which))
	case symHandle:
		c.errorf(e.Pos, "%s is %s, not a value", e.Name, pick(sym.typ == TComm, "a communicator", "a file handle"))
		return cexpr{typ: TInvalid}
	case symVar, symLoop:
		if c.rankOnly != "" {
			c.errorf(e.Pos, "%s is computed for every rank of the communicator: it may use rank, grank, gsize, nranks, params and constants, not %s", c.rankOnly, e.Name)
			return cexpr{typ: TInvalid}
		}
	}
	return slotExpr(sym.typ, sym.slot)
}

func (c *compiler) strLit(e *StringLit) cexpr {
	var parts []strPartC
	constable := true
	for _, p := range e.Parts {
		if p.Expr == nil {
			parts = append(parts, strPartC{lit: p.Lit})
			continue
		}
		x := c.expr(p.Expr)
		switch x.typ {
		case THandle, TMPIHandle, TInvalid:
			if x.typ != TInvalid {
				c.errorf(p.Expr.Start(), "a file handle cannot be written into a string")
			}
			return cexpr{typ: TInvalid}
		}
		constable = constable && x.isConst && x.typ != TGroup
		parts = append(parts, strPartC{x: &x})
	}
	if len(parts) == 0 {
		return constStr("")
	}
	if len(parts) == 1 && parts[0].x == nil {
		if n := len(parts[0].lit); n > MaxString {
			c.errorf(e.Pos, "%s", errMsg(errLong(e.Pos, n)))
			return cexpr{typ: TInvalid}
		}
		return constStr(parts[0].lit)
	}
	x := concatExpr(parts, e.Pos)
	x.constable = constable
	return x
}

func (c *compiler) unary(e *UnaryExpr, x cexpr) cexpr {
	if x.typ == TInvalid {
		return x
	}
	switch e.Op {
	case "-":
		if x.typ != TInt && x.typ != TDuration {
			c.errorf(e.Pos, "operator - needs an int or a duration, got %s", article(x.typ))
			return cexpr{typ: TInvalid}
		}
		return negExpr(x, e.Pos)
	case "!":
		if x.typ != TBool {
			c.errorf(e.Pos, "operator ! needs a bool, got %s", article(x.typ))
			return cexpr{typ: TInvalid}
		}
		return notExpr(x)
	}
	return cexpr{typ: TInvalid}
}

func (c *compiler) binary(e *BinaryExpr, x, y cexpr) cexpr {
	if x.typ == TInvalid || y.typ == TInvalid {
		return cexpr{typ: TInvalid}
	}
	op := e.Op
	bad := func(want string) cexpr {
		hint := ""
		if op == "|" && x.typ == TBool {
			hint = " (the logical or is ||)"
		}
		if (op == "+" || op == "-") && (x.typ == TDuration) != (y.typ == TDuration) {
			hint = " (give both a unit: 10s + 500ms)"
		}
		c.errorf(e.OpPos, "operator %s needs %s, got %s and %s%s", op, want, article(x.typ), article(y.typ), hint)
		return cexpr{typ: TInvalid}
	}
	var t Type
	switch op {
	case "+":
		switch {
		case x.typ == y.typ && (x.typ == TInt || x.typ == TDuration || x.typ == TString):
			t = x.typ
		default:
			return bad("two ints, two durations or two strings")
		}
	case "-":
		if x.typ != y.typ || (x.typ != TInt && x.typ != TDuration) {
			return bad("two ints or two durations")
		}
		t = x.typ
	case "*":
		switch {
		case x.typ == TInt && y.typ == TInt:
			t = TInt
		case x.typ == TDuration && y.typ == TInt, x.typ == TInt && y.typ == TDuration:
			t = TDuration
		default:
			return bad("ints, or a duration and an int")
		}
	case "/":
		switch {
		case x.typ == TInt && y.typ == TInt, x.typ == TDuration && y.typ == TDuration:
			t = TInt
		case x.typ == TDuration && y.typ == TInt:
			t = TDuration
		default:
			return bad("two ints, two durations, or a duration and an int")
		}
	case "%":
		if x.typ != y.typ || (x.typ != TInt && x.typ != TDuration) {
			return bad("two ints or two durations")
		}
		t = x.typ
	case "^", "|":
		if x.typ != TInt || y.typ != TInt {
			return bad("two ints")
		}
		t = TInt
	case "&&", "||":
		if x.typ != TBool || y.typ != TBool {
			return bad("two bools")
		}
		return logicExpr(op, x, y)
	case "==", "!=":
		if x.typ == TList || y.typ == TList {
			c.errorf(e.OpPos, "lists cannot be compared; compare their elements")
			return cexpr{typ: TInvalid}
		}
		if x.typ != y.typ || x.typ == THandle || x.typ == TMPIHandle {
			return bad("two values of the same type")
		}
		return cmpExpr(op, x, y)
	case "<", "<=", ">", ">=":
		if x.typ != y.typ || (x.typ != TInt && x.typ != TDuration && x.typ != TString) {
			return bad("two ints, two durations or two strings")
		}
		return cmpExpr(op, x, y)
	}
	return arithExpr(op, t, x, y, e.OpPos)
}

func (c *compiler) call(e *CallExpr) cexpr {
	name := e.Fun.Name
	args := make([]cexpr, len(e.Args))
	for i, a := range e.Args {
		args[i] = c.expr(a)
		if args[i].typ == TInvalid {
			return cexpr{typ: TInvalid}
		}
	}
	nargs := func(n int, sig string) bool {
		if len(args) != n {
			c.errorf(e.Fun.Pos, "%s takes %d argument%s: %s", name, n, pick(n == 1, "", "s"), sig)
			return false
		}
		return true
	}
	switch name {
	case "min", "max":
		if len(args) == 0 {
			c.errorf(e.Fun.Pos, "%s needs at least one argument", name)
			return cexpr{typ: TInvalid}
		}
		t := args[0].typ
		for i, a := range args {
			if a.typ != t || (t != TInt && t != TDuration) {
				c.errorf(e.Args[i].Start(), "the arguments of %s must be all ints or all durations, got %s", name, article(a.typ))
				return cexpr{typ: TInvalid}
			}
		}
		return minMaxExpr(name == "max", t, args)
	case "abs":
		if !nargs(1, "abs(x)") {
			return cexpr{typ: TInvalid}
		}
		if args[0].typ != TInt && args[0].typ != TDuration {
			c.errorf(e.Args[0].Start(), "abs needs an int or a duration, got %s", article(args[0].typ))
			return cexpr{typ: TInvalid}
		}
		return absExpr(args[0], e.Fun.Pos)
	case "pad":
		if !nargs(2, "pad(n, width)") {
			return cexpr{typ: TInvalid}
		}
		if !c.want(args[0], TInt, e.Args[0].Start(), "the number pad writes") || !c.want(args[1], TInt, e.Args[1].Start(), "the width of pad") {
			return cexpr{typ: TInvalid}
		}
		return padExpr(args[0], args[1], e.Fun.Pos)
	case "len":
		if !nargs(1, "len(list)") {
			return cexpr{typ: TInvalid}
		}
		if !c.want(args[0], TList, e.Args[0].Start(), "the argument of len") {
			return cexpr{typ: TInvalid}
		}
		return lenExpr(args[0])
	case "sqrt":
		if !nargs(1, "sqrt(n)") {
			return cexpr{typ: TInvalid}
		}
		if !c.want(args[0], TInt, e.Args[0].Start(), "the argument of sqrt") {
			return cexpr{typ: TInvalid}
		}
		return sqrtExpr(args[0], e.Args[0].Start())
	case "xor":
		if !nargs(2, "xor(a, b)") {
			return cexpr{typ: TInvalid}
		}
		if !c.want(args[0], TInt, e.Args[0].Start(), "the arguments of xor") || !c.want(args[1], TInt, e.Args[1].Start(), "the arguments of xor") {
			return cexpr{typ: TInvalid}
		}
		return xorExpr(args[0], args[1])
	case "size", "first":
		if !nargs(1, name+"(GROUP)") {
			return cexpr{typ: TInvalid}
		}
		if !c.want(args[0], TGroup, e.Args[0].Start(), "the argument of "+name) {
			return cexpr{typ: TInvalid}
		}
		if c.inParam != "" {
			c.errorf(e.Fun.Pos, "%s cannot use %s: groups are sized after params", c.inParam, name)
			return cexpr{typ: TInvalid}
		}
		return groupFnExpr(name == "size", args[0])
	}
	names := []string{"min", "max", "abs", "pad", "sqrt", "xor", "len", "size", "first"}
	if s := suggest(name, names); s != "" {
		c.errorf(e.Fun.Pos, "unknown function %s (did you mean %s?)", name, s)
	} else {
		c.errorf(e.Fun.Pos, "unknown function %s (functions: %s)", name, strings.Join(sorted(names), ", "))
	}
	return cexpr{typ: TInvalid}
}

func sorted(s []string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return s
}
