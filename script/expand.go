package script

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/iotrace/iotrace/trace"
)

// Config binds a program to a run.
type Config struct {
	Ranks  int               // number of ranks (nranks), at least 1
	Params map[string]string // parameter overrides NAME → expression ("10s", "4MiB", "2*nranks"); strings as given
	Groups map[string]string // group sizes NAME → expression
	Model  *Model            // nominal durations; nil is DefaultModel()
}

// Group is a process group of an instance: world ranks First … First+Size-1.
type Group struct {
	Name  string
	Comm  uint32 // communicator id of the group: 2 for the first group, 3 for the next…
	First int
	Size  int
}

// Instance is a program bound to a Config: parameters evaluated and
// groups laid out. It is immutable and safe for concurrent use.
type Instance struct {
	prog   *Program
	ranks  int
	params []val
	groups []Group
	model  Model
	cfg    Config
	budget int64   // statements an interpreter may run, 0 unlimited (tests)
	reg    commReg // the communicators splits made (comm.go)
}

// Program returns the program of the instance.
func (in *Instance) Program() *Program { return in.prog }

// Ranks returns the number of ranks.
func (in *Instance) Ranks() int { return in.ranks }

// Groups returns the groups and their ranks.
func (in *Instance) Groups() []Group { return append([]Group(nil), in.groups...) }

// Param returns the value of a parameter as a script would write it.
func (in *Instance) Param(name string) (string, bool) {
	for i, p := range in.prog.params {
		if p.name == name {
			v := in.params[i]
			if p.typ == TString {
				return strconv.Quote(v.s), true
			}
			if p.typ == TList {
				return formatList(v.l), true
			}
			return formatValue(nil, p.typ, v.i), true
		}
	}
	return "", false
}

// CommRanks returns the world ranks of a communicator id used in the
// events: 0 is every rank, 1 (self) the calling rank alone (nil here), a
// group's id its ranks.
func (in *Instance) CommRanks(comm uint32) []int {
	switch {
	case comm == trace.CommWorld:
		return seq(0, in.ranks)
	case comm == trace.CommSelf:
		return nil
	case int(comm-2) < len(in.groups):
		g := in.groups[comm-2]
		return seq(g.First, g.Size)
	}
	if m, _, ok := in.splitComm(comm); ok {
		return slices.Clone(m)
	}
	return nil
}

func seq(first, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = first + i
	}
	return out
}

func (in *Instance) commSize(comm uint32) int {
	switch {
	case comm == trace.CommWorld:
		return in.ranks
	case comm == trace.CommSelf:
		return 1
	case int(comm-2) < len(in.groups):
		return in.groups[comm-2].Size
	}
	if m, _, ok := in.splitComm(comm); ok {
		return len(m)
	}
	return 0
}

func (in *Instance) commName(comm uint32) string {
	switch {
	case comm == trace.CommWorld:
		return "all ranks"
	case comm == trace.CommSelf:
		return "self"
	case int(comm-2) < len(in.groups):
		return "group " + in.groups[comm-2].Name
	}
	return fmt.Sprintf("comm %d", comm)
}

// MaxRanks bounds Config.Ranks.
const MaxRanks = 1 << 20

// Instantiate evaluates the parameters (defaults, or the overrides of cfg)
// and lays out the groups: in declaration order, each group takes the next
// ranks; a group without a size shares the ranks the sized groups leave
// (the first ones get one more when they do not divide evenly); ranks left
// over belong to no group.
func (p *Program) Instantiate(cfg Config) (*Instance, error) {
	if cfg.Ranks < 1 || cfg.Ranks > MaxRanks {
		return nil, fmt.Errorf("%s: the number of ranks must be 1 to %d, got %d", p.name, MaxRanks, cfg.Ranks)
	}
	in := &Instance{prog: p, ranks: cfg.Ranks, model: DefaultModel(), cfg: cfg}
	if cfg.Model != nil {
		in.model = *cfg.Model
	}
	for name := range cfg.Params {
		if !slicesContains(p.params, func(pa *cParam) bool { return pa.name == name }) {
			return nil, fmt.Errorf("--param %s: %s has no parameter %s%s", name, p.name, name, listOf(" (it has ", p.Params(), func(pi ParamInfo) string { return pi.Name }))
		}
	}
	for name := range cfg.Groups {
		if !slicesContains(p.groups, func(g *cGroup) bool { return g.name == name }) {
			return nil, fmt.Errorf("--group %s: %s has no group %s%s", name, p.name, name, listOf(" (it has ", p.GroupNames(), func(s string) string { return s }))
		}
	}
	// A throwaway interpreter evaluates params and group sizes: they may
	// use nranks and earlier params, nothing that differs between ranks.
	ev := &Interp{inst: in, prog: p, nranks: int64(cfg.Ranks), slots: make([]val, p.nslots)}
	in.params = make([]val, len(p.params))
	for i, pa := range p.params {
		x := pa.x
		what := "param " + pa.name
		if s, ok := cfg.Params[pa.name]; ok {
			what = "--param " + pa.name + "=" + s
			if pa.typ == TString {
				x = constStr(s)
			} else {
				var err error
				if x, err = p.override(what, s, pa.typ, i); err != nil {
					return nil, err
				}
			}
		}
		v, err := evalVal(ev, x)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %s", p.name, what, errMsg(err))
		}
		in.params[i] = v
		ev.slots[pa.slot] = v
	}
	sizes := make([]int, len(p.groups))
	var sized, unsized int
	for i, g := range p.groups {
		x := g.size
		what := "group " + g.name
		if s, ok := cfg.Groups[g.name]; ok {
			what = "--group " + g.name + "=" + s
			c, err := p.override(what, s, TInt, len(p.params))
			if err != nil {
				return nil, err
			}
			x = &c
		}
		if x == nil {
			sizes[i] = -1
			unsized++
			continue
		}
		v, err := x.fi(ev)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %s", p.name, what, errMsg(err))
		}
		if v < 0 || v > int64(cfg.Ranks) {
			return nil, fmt.Errorf("%s: %s: size %d out of range (the run has %d ranks)", p.name, what, v, cfg.Ranks)
		}
		sizes[i] = int(v)
		sized += int(v)
	}
	if sized > cfg.Ranks {
		var parts []string
		for i, g := range p.groups {
			if sizes[i] >= 0 {
				parts = append(parts, fmt.Sprintf("%s %d", g.name, sizes[i]))
			}
		}
		return nil, fmt.Errorf("%s: the groups need %d ranks (%s) but the run has %d", p.name, sized, strings.Join(parts, ", "), cfg.Ranks)
	}
	rest, k, first := cfg.Ranks-sized, 0, 0
	for i, g := range p.groups {
		n := sizes[i]
		if n < 0 {
			n = rest / unsized
			if k < rest%unsized {
				n++
			}
			k++
		}
		in.groups = append(in.groups, Group{Name: g.name, Comm: uint32(2 + i), First: first, Size: n})
		first += n
	}
	return in, nil
}

func slicesContains[T any](s []T, f func(T) bool) bool {
	for _, x := range s {
		if f(x) {
			return true
		}
	}
	return false
}

func listOf[T any](prefix string, xs []T, name func(T) string) string {
	if len(xs) == 0 {
		return ""
	}
	var ns []string
	for _, x := range xs {
		ns = append(ns, name(x))
	}
	sort.Strings(ns)
	return prefix + strings.Join(ns, ", ") + ")"
}

func evalVal(it *Interp, x cexpr) (val, error) {
	if x.typ == TList {
		l, err := x.fl(it)
		return val{l: l}, err
	}
	if x.typ == TString {
		s, err := x.fs(it)
		return val{s: s}, err
	}
	v, err := x.fi(it)
	return val{i: v}, err
}

// override compiles a command-line value for a parameter (or group size)
// that sees nranks and the first nparams parameters.
func (p *Program) override(what, src string, want Type, nparams int) (cexpr, error) {
	e, err := ParseExpr(what, src)
	if err != nil {
		var el ErrorList
		if errors.As(err, &el) && len(el) > 0 {
			return cexpr{}, fmt.Errorf("%s: %s", what, el[0].Msg)
		}
		return cexpr{}, err
	}
	c := &compiler{file: what, prog: &Program{}}
	c.scope = &scope{syms: map[string]*symbol{}}
	c.predeclare()
	c.scope = &scope{parent: c.scope, syms: map[string]*symbol{}}
	for _, pa := range p.params[:nparams] {
		c.scope.syms[pa.name] = &symbol{name: pa.name, kind: symParam, typ: pa.typ, slot: pa.slot, pos: pa.pos}
	}
	c.inParam = "a command-line value"
	x := c.expr(e)
	if len(c.errs) > 0 {
		return cexpr{}, fmt.Errorf("%s: %s", what, c.errs[0].Msg)
	}
	if x.typ != want {
		hint := ""
		if want == TDuration && x.typ == TInt {
			hint = fmt.Sprintf(" (write a unit: %ss)", strings.TrimSpace(src))
		}
		return cexpr{}, fmt.Errorf("%s: want %s, got %s%s", what, article(want), article(x.typ), hint)
	}
	return x, nil
}

// Expand binds p to cfg and returns its expansion: a trace whose rank
// streams are made on demand, as they are read, by interpreters timed with
// the nominal model (Model). Nothing is expanded before a stream is read
// — Meta and Ranks are immediate — and reading a stream keeps only the
// state of the loops its rank is in, whatever their length.
//
// To time collective calls and to decide time-driven loops the way every
// rank agrees on, the ranks of a communicator are run alongside, just far
// enough (their events are dropped): at a collective call every member
// must arrive; a time-driven loop runs another iteration while the
// longest time any member has spent in it is below its duration. That
// simulation is shared by the streams of an expansion (a completion log,
// see clog): each collective call and loop decision is worked out once,
// and a stream that reaches it later reads the outcome, so that reading
// every rank costs about as much as running every rank once. Calls that do
// not match between ranks (rank 0 in a barrier while rank 1 ended, or is
// in a bcast) are an error of the stream.
func Expand(p *Program, cfg Config) (*Expansion, error) {
	in, err := p.Instantiate(cfg)
	if err != nil {
		return nil, err
	}
	return in.Expand(), nil
}

// Expand returns the expansion of the instance (see the function Expand).
func (in *Instance) Expand() *Expansion {
	cmd := []string{"iotrace-script", in.prog.name, "--ranks", strconv.Itoa(in.ranks)}
	var keys []string
	for k := range in.cfg.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmd = append(cmd, "--param", k+"="+in.cfg.Params[k])
	}
	keys = keys[:0]
	for k := range in.cfg.Groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmd = append(cmd, "--group", k+"="+in.cfg.Groups[k])
	}
	x := &Expansion{inst: in, paths: trace.NewPaths(),
		meta: trace.Meta{Command: cmd, Clock: "nominal", Ranks: in.ranks, Creator: "iotrace script"}}
	x.log = newCLog(in, x.paths)
	return x
}

// Expansion is an expanded script: a trace.Trace whose streams are made as
// they are read. Streams of different ranks may be read concurrently; they
// share one path table.
type Expansion struct {
	inst  *Instance
	paths *trace.Paths
	meta  trace.Meta
	log   *clog
}

var _ trace.Trace = (*Expansion)(nil)

// Instance returns the instance the expansion runs.
func (e *Expansion) Instance() *Instance { return e.inst }

// Meta implements trace.Trace. Clock is "nominal".
func (e *Expansion) Meta() trace.Meta { return e.meta }

// Ranks implements trace.Trace: every rank of the run, also one whose
// stream turns out empty (a rank in no group of a script that only works
// in groups), since telling would take expanding it.
func (e *Expansion) Ranks() []uint32 {
	rs := make([]uint32, e.inst.ranks)
	for i := range rs {
		rs[i] = uint32(i)
	}
	return rs
}

// Rank implements trace.Trace.
func (e *Expansion) Rank(r uint32) (trace.Source, error) {
	if int64(r) >= int64(e.inst.ranks) {
		return nil, fmt.Errorf("%s: rank %d out of range: the run has %d ranks", e.inst.prog.name, r, e.inst.ranks)
	}
	it, err := e.inst.NewInterp(int(r), e.paths)
	if err != nil {
		return nil, err
	}
	return &rankSource{w: &world{inst: e.inst, paths: e.paths, main: int(r), it: it, log: e.log}}, nil
}

// Path implements trace.Trace.
func (e *Expansion) Path(id trace.PathID) string { return e.paths.Lookup(id) }

// Close implements trace.Trace.
func (e *Expansion) Close() error { return nil }

// world runs the ranks one stream needs: the stream's own (main) rank
// and, lazily, the others as far as its collective calls and time-driven
// loops require. A stream's world takes the outcomes of collective calls
// from the expansion's completion log (clog), and runs the other ranks
// itself only where the log cannot give them (it is full, or the shared
// simulation failed: the stream then finds the error itself, and names it
// as a stream of its own rank would). The log's simulation is a world
// too, with no main rank (main -1).
type world struct {
	inst  *Instance
	paths *trace.Paths
	main  int
	it    *Interp   // the main rank's
	its   []*Interp // every rank's, made at the first collective call
	st    []wstate
	// The completion log, and what this world takes from it: cnt[r][c]
	// counts (i) the collective calls and loop decisions rank r has made
	// on communicator c, and is where it reads the log; a rank's i-th on
	// c comes from the log while i < front[c], the first one the log
	// could not give on c (after which every rank of the world works it
	// out with the others, in step).
	log     *clog
	mainCnt []clogCursor   // cnt of the main rank, before the world grows
	cnt     [][]clogCursor // made by grow
	front   []int
	// publish: this world is the log's simulation; every call it
	// completes is appended to the log.
	publish bool
}

// grow makes room for every rank, once the main rank first needs others.
func (w *world) grow() {
	if w.its == nil {
		w.its = make([]*Interp, w.inst.ranks)
		w.st = make([]wstate, w.inst.ranks)
		w.cnt = make([][]clogCursor, w.inst.ranks)
		if w.main >= 0 {
			w.its[w.main] = w.it
		}
	}
}

// cursors returns rank r's cursors of the log, for communicators up to
// index c at least (splits make communicators as the ranks run).
func (w *world) cursors(r, c int) []clogCursor {
	cnt := &w.mainCnt
	if r != w.main {
		cnt = &w.cnt[r]
	}
	for len(*cnt) <= c {
		*cnt = append(*cnt, clogCursor{})
	}
	return *cnt
}

// frontOf returns the first call on communicator index c the log could
// not give.
func (w *world) frontOf(c int) *int {
	for len(w.front) <= c {
		w.front = append(w.front, math.MaxInt)
	}
	return &w.front[c]
}

// fromLog settles rank r's collective call or loop decision k (ev, check)
// from the log, and reports whether it could. A stream's own rank asks
// the log to work the call out (wait); the other ranks of its world only
// take what is there.
func (w *world) fromLog(r int, k StepKind, ev *trace.Event, check *LoopCheck, wait bool) bool {
	if w.log == nil || w.publish {
		return false
	}
	id := ev.Comm
	if k == StepDecide {
		id = check.Comm
	}
	c, known := w.inst.commIndex(id)
	if !known {
		return false
	}
	cur := &w.cursors(r, c)[c]
	i := cur.i
	if w.its != nil && i >= *w.frontOf(c) {
		cur.i++
		return false
	}
	v, ok := w.log.next(c, id, cur, k, wait)
	if !ok {
		cur.i++
	}
	if !ok {
		w.grow()
		f := w.frontOf(c)
		*f = min(*f, i)
		return false
	}
	it := w.it
	if r != w.main {
		it = w.its[r]
	}
	if k == StepSync {
		ev.Dur = v - ev.Start
		it.Settle(v)
	} else {
		it.Decide(v != 0)
	}
	return true
}

type wstate struct {
	blocked bool
	kind    StepKind // StepSync or StepDecide
	comm    uint32
	ev      trace.Event
	check   LoopCheck
	pos     Pos // where the rank is blocked
	done    bool
}

func (w *world) interp(r int) (*Interp, error) {
	if w.its[r] == nil {
		it, err := w.inst.NewInterp(r, w.paths)
		if err != nil {
			return nil, err
		}
		it.quiet = true
		w.its[r] = it
	}
	return w.its[r], nil
}

// run advances rank r (not the main one) until it blocks or ends. A rank
// that ended lets its interpreter go.
func (w *world) run(r int) error {
	if w.st[r].done {
		return nil
	}
	it, err := w.interp(r)
	if err != nil {
		return err
	}
	s := &w.st[r]
	var ev trace.Event
	for !s.blocked && !s.done {
		k, err := it.Step(&ev)
		if err != nil {
			return err
		}
		switch k {
		case StepSync:
			if w.fromLog(r, k, &ev, nil, false) {
				continue
			}
			s.blocked, s.kind, s.comm, s.ev, s.pos = true, StepSync, ev.Comm, ev, it.cmdPos
		case StepDecide:
			if c := it.Check(); w.fromLog(r, k, &ev, &c, false) {
				continue
			}
			s.check = it.Check()
			s.blocked, s.kind, s.comm, s.pos = true, StepDecide, s.check.Comm, s.check.Pos
		case StepDone:
			s.done = true
			w.its[r] = nil
		}
	}
	return nil
}

// memberSet is the world ranks of a communicator: first … first+n-1, or
// list.
type memberSet struct {
	first, n int
	list     []int
}

func (m memberSet) at(i int) int {
	if m.list != nil {
		return m.list[i]
	}
	return m.first + i
}

func (m memberSet) has(r int) bool {
	if m.list != nil {
		return slices.Contains(m.list, r)
	}
	return r >= m.first && r < m.first+m.n
}

func (w *world) members(comm uint32) memberSet {
	switch {
	case comm == trace.CommWorld:
		return memberSet{first: 0, n: w.inst.ranks}
	case int(comm-2) < len(w.inst.groups):
		g := w.inst.groups[comm-2]
		return memberSet{first: g.First, n: g.Size}
	}
	m, _, _ := w.inst.splitComm(comm)
	return memberSet{n: len(m), list: m}
}

// what describes where rank r is blocked.
func (w *world) what(r int) string {
	s := &w.st[r]
	if s.kind == StepDecide {
		return fmt.Sprintf("a time-driven loop on %s", w.inst.commName(s.comm))
	}
	return fmt.Sprintf("%s on %s", callDesc(&s.ev), w.inst.commName(s.comm))
}

// errAt makes an error at the place rank r is blocked.
func (w *world) errAt(r int, format string, args ...any) error {
	return &Error{File: w.inst.prog.name, Pos: w.st[r].pos, Msg: fmt.Sprintf(format, args...)}
}

// complete brings every member of comm to the call the main rank (or a
// rank it waits for) is blocked in; waiting holds the communicators whose
// completion is in progress further up.
func (w *world) complete(comm uint32, waiting []uint32) error {
	ms := w.members(comm)
	for i := 0; i < ms.n; i++ {
		m := ms.at(i)
		for {
			s := &w.st[m]
			if s.blocked && s.comm == comm {
				break
			}
			if s.done {
				b := w.blockedIn(comm)
				return w.errAt(b, "rank %d waits here in %s, but rank %d ended without %s it", b, w.what(b), m, pick(w.st[b].kind == StepDecide, "reaching", "calling"))
			}
			if s.blocked {
				if contains(waiting, s.comm) {
					b := w.blockedIn(comm)
					return w.errAt(b, "deadlock: rank %d waits here in %s while rank %d waits at %s in %s", b, w.what(b), m, w.st[m].pos, w.what(m))
				}
				if err := w.complete(s.comm, append(waiting, comm)); err != nil {
					return err
				}
				if err := w.release(s.comm); err != nil {
					return err
				}
				continue
			}
			if m == w.main {
				return fmt.Errorf("%s: internal error: rank %d is not blocked", w.inst.prog.name, m)
			}
			if err := w.run(m); err != nil {
				return err
			}
		}
	}
	return nil
}

func contains(s []uint32, c uint32) bool {
	for _, x := range s {
		if x == c {
			return true
		}
	}
	return false
}

// blockedIn returns a rank blocked on comm, for messages.
func (w *world) blockedIn(comm uint32) int {
	ms := w.members(comm)
	if ms.has(w.main) && w.st[w.main].blocked && w.st[w.main].comm == comm {
		return w.main
	}
	for i := 0; i < ms.n; i++ {
		if m := ms.at(i); w.st[m].blocked && w.st[m].comm == comm {
			return m
		}
	}
	return ms.at(0)
}

// release finishes the call every member of comm is blocked in.
func (w *world) release(comm uint32) error {
	ms := w.members(comm)
	first := ms.at(0)
	s0 := &w.st[first]
	for i := 1; i < ms.n; i++ {
		m := ms.at(i)
		s := &w.st[m]
		if s.kind != s0.kind || (s.kind == StepSync && (s.ev.Op != s0.ev.Op || s.ev.Peer != s0.ev.Peer)) || s.pos != s0.pos && s.kind == StepDecide {
			return w.errAt(first, "rank %d is here in %s while rank %d is at %s in %s: the ranks' calls do not match", first, w.what(first), m, s.pos, w.what(m))
		}
		if s.kind == StepDecide && s.check.Limit != s0.check.Limit {
			return w.errAt(first, "the ranks disagree on the duration of this loop: %s on rank %d, %s on rank %d", FormatDuration(s0.check.Limit), first, FormatDuration(s.check.Limit), m)
		}
	}
	if s0.kind == StepDecide {
		var elapsed int64
		moved := s0.check.Iter == 0 || s0.check.Limit == 0
		for i := 0; i < ms.n; i++ {
			c := &w.st[ms.at(i)].check
			elapsed = max(elapsed, c.Now-c.Start)
			moved = moved || c.Now != c.Prev
		}
		if !moved {
			return w.errAt(first, "time-driven loop: %v", ErrTimeless)
		}
		cont := elapsed < s0.check.Limit
		for i := 0; i < ms.n; i++ {
			m := ms.at(i)
			w.st[m].blocked = false
			w.its[m].Decide(cont)
		}
		if w.publish {
			w.log.put(comm, StepDecide, int64(pick(cont, 1, 0)))
		}
		return nil
	}
	var arrive, dur int64
	for i := 0; i < ms.n; i++ {
		e := &w.st[ms.at(i)].ev
		arrive = max(arrive, e.Start)
		dur = max(dur, e.Dur)
	}
	end := arrive + min(dur, math.MaxInt64-arrive) // the ranks fail on their next call if it passes the int64 range
	for i := 0; i < ms.n; i++ {
		m := ms.at(i)
		s := &w.st[m]
		s.ev.Dur = end - s.ev.Start
		s.blocked = false
		w.its[m].Settle(end)
	}
	if w.publish {
		w.log.put(comm, StepSync, end)
	}
	return nil
}

func callDesc(e *trace.Event) string {
	switch e.Op {
	case trace.OpMPIBcast, trace.OpMPIReduce, trace.OpMPIGather, trace.OpMPIScatter:
		return fmt.Sprintf("%s with root %d", e.Op, e.Peer)
	}
	return e.Op.String()
}

// rankSource is the stream of the world's main rank.
type rankSource struct {
	w    *world
	err  error
	done bool
}

func (s *rankSource) Path(id trace.PathID) string { return s.w.paths.Lookup(id) }

func (s *rankSource) ReadEvents(evs []trace.Event) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.done {
		return 0, io.EOF
	}
	w := s.w
	it := w.it
	n := 0
	for n < len(evs) {
		k, err := it.Step(&evs[n])
		if err == nil {
			switch k {
			case StepEvent:
				n++
				continue
			case StepDone:
				s.done = true
				if n == 0 {
					return 0, io.EOF
				}
				return n, nil
			}
			var c LoopCheck
			if k == StepDecide {
				c = it.Check()
			}
			if w.fromLog(w.main, k, &evs[n], &c, true) {
				if k == StepSync {
					n++
				}
				continue
			}
			w.grow()
			st := &w.st[w.main]
			switch k {
			case StepSync:
				st.blocked, st.kind, st.comm, st.ev, st.pos = true, StepSync, evs[n].Comm, evs[n], it.cmdPos
			case StepDecide:
				st.check = it.Check()
				st.blocked, st.kind, st.comm, st.pos = true, StepDecide, st.check.Comm, st.check.Pos
			}
			if err = w.complete(st.comm, nil); err == nil {
				err = w.release(st.comm)
			}
			if err == nil {
				if k == StepSync {
					evs[n] = w.st[w.main].ev
					n++
				}
				continue
			}
		}
		s.err = err
		if n > 0 {
			return n, nil
		}
		return 0, err
	}
	return n, nil
}

// Source returns a stream of rank's events made by one interpreter alone,
// as a replay runs a script: collective calls take their nominal duration
// without waiting for other ranks, and dec answers the time-driven loops
// (nil: NominalDecider, on the rank's own clock). Paths are interned in
// paths (nil: a table of its own).
func (in *Instance) Source(rank int, paths *trace.Paths, dec Decider) (trace.Source, error) {
	if paths == nil {
		paths = trace.NewPaths()
	}
	if dec == nil {
		dec = NominalDecider{}
	}
	it, err := in.NewInterp(rank, paths)
	if err != nil {
		return nil, err
	}
	return &interpSource{it: it, dec: dec, paths: paths}, nil
}

type interpSource struct {
	it    *Interp
	dec   Decider
	paths *trace.Paths
	err   error
	done  bool
}

func (s *interpSource) Path(id trace.PathID) string { return s.paths.Lookup(id) }

func (s *interpSource) ReadEvents(evs []trace.Event) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.done {
		return 0, io.EOF
	}
	n := 0
	for n < len(evs) {
		k, err := s.it.Step(&evs[n])
		if err != nil {
			s.err = err
			break
		}
		switch k {
		case StepEvent:
			n++
		case StepSync:
			e := &evs[n]
			s.it.Settle(e.Start + e.Dur)
			n++
		case StepDecide:
			cont, err := s.dec.Continue(s.it.Check())
			if err != nil {
				s.err = fmt.Errorf("%s: rank %d: time-driven loop at %s: %w", s.it.prog.name, s.it.rank, s.it.Check().Pos, err)
				break
			}
			s.it.Decide(cont)
		case StepDone:
			s.done = true
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		}
		if s.err != nil {
			break
		}
	}
	if n > 0 {
		return n, nil
	}
	return 0, s.err
}

// Open loads the script at path and expands it for ranks ranks, with
// parameter and group overrides (NAME → value, as --param and --group
// give them). Its signature is the one the commands register to read
// scripts wherever they read traces.
func Open(path string, ranks int, params, groups map[string]string) (trace.Trace, error) {
	p, err := Load(path)
	if err != nil {
		return nil, err
	}
	return Expand(p, Config{Ranks: ranks, Params: params, Groups: groups})
}

// ncomms is the number of communicator ids: world, self and the groups.
func (in *Instance) ncomms() int { return 2 + len(in.groups) }

// maxLog bounds the bytes of a completion log (64 MiB; an entry takes 1
// to 3 bytes, and the 13 million of b_eff_io's 15 minutes fit): beyond it, streams
// work the later calls out with the other ranks themselves, as if there
// were no log.
const maxLog = 64 << 20

// logBlock is the size of a block of the log: blocks are filled, never
// copied.
const logBlock = 64 << 10

// clog is the completion log of an expansion: for each communicator, the
// outcome of each collective call and loop decision its ranks make, in
// order — the call's end, or whether the loop goes on. Its own world
// (sim, with no main rank) works them out on demand, running every rank
// once whatever the number of streams read; streams read the outcomes
// instead of running the other ranks themselves. Every rank of a
// communicator makes the same calls on it in the same order (the
// simulation checks it), and a rank's interpreter makes the same calls
// wherever it runs, so entry i of communicator c is the outcome of the
// i-th call on c of every member, in any stream. Entries are varints, read
// in order through a cursor: a call's end as the (zigzag) difference from
// the previous call's end on the communicator, a decision as 1 or 0. Safe
// for concurrent use.
type clog struct {
	mu   sync.Mutex
	in   *Instance
	sim  *world
	c    []clogComm
	n    int   // bytes
	full bool  // maxLog reached: nothing more is appended
	err  error // the simulation failed: streams find the error themselves
}

type clogComm struct {
	blocks [][]byte
	len    int   // entries
	last   int64 // the end of the last call appended
}

// clogCursor is where a rank has read a communicator's entries.
type clogCursor struct {
	i, b, o int // entry, block, offset
	last    int64
}

func newCLog(in *Instance, paths *trace.Paths) *clog {
	l := &clog{in: in, c: make([]clogComm, in.ncomms())}
	l.sim = &world{inst: in, paths: paths, main: -1, log: l, publish: true}
	return l
}

// comm returns the entries of communicator index c.
func (l *clog) comm(c int) *clogComm {
	for len(l.c) <= c {
		l.c = append(l.c, clogComm{})
	}
	return &l.c[c]
}

// next reads the entry of communicator id (index c) at cur, of kind k
// (StepSync: a call's end; StepDecide: 1 or 0), and moves cur on; with
// wait, it runs the simulation until the entry is there (or cannot be).
func (l *clog) next(c int, id uint32, cur *clogCursor, k StepKind, wait bool) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.comm(c).len <= cur.i {
		if !wait || l.full || l.err != nil {
			return 0, false
		}
		before := l.comm(c).len
		l.sim.grow()
		err := l.sim.complete(id, nil)
		if err == nil {
			err = l.sim.release(id)
		}
		if err == nil && l.comm(c).len == before && !l.full {
			err = fmt.Errorf("%s: communicator %d: no outcome", l.in.prog.name, id)
		}
		if err != nil {
			l.err = err
			l.sim = nil // its ranks' state is of no further use
		}
	}
	cc := l.comm(c) // the simulation may have grown the log
	b := cc.blocks[cur.b]
	if cur.o >= len(b) {
		cur.b, cur.o = cur.b+1, 0
		b = cc.blocks[cur.b]
	}
	u, n := binary.Uvarint(b[cur.o:])
	cur.o += n
	cur.i++
	if k == StepDecide {
		return int64(u), true
	}
	cur.last += int64(u>>1) ^ -int64(u&1)
	return cur.last, true
}

// put appends the next entry of communicator id (the simulation
// completes the calls of each communicator in order).
func (l *clog) put(id uint32, k StepKind, v int64) {
	if l.full || l.n >= maxLog {
		l.full = true
		return
	}
	c, ok := l.in.commIndex(id)
	if !ok {
		return
	}
	cc := l.comm(c)
	u := uint64(v)
	if k == StepSync {
		d := v - cc.last
		u = uint64(d<<1) ^ uint64(d>>63)
		cc.last = v
	}
	if len(cc.blocks) == 0 || cap(cc.blocks[len(cc.blocks)-1])-len(cc.blocks[len(cc.blocks)-1]) < binary.MaxVarintLen64 {
		cc.blocks = append(cc.blocks, make([]byte, 0, logBlock))
		l.n += logBlock
	}
	last := &cc.blocks[len(cc.blocks)-1]
	*last = binary.AppendUvarint(*last, u)
	cc.len++
}
