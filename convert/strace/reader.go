// Package strace reads the output of strace into a trace: `strace -f
// -ttt -T -y -o FILE` (one file, every line with its PID), the same on
// standard error ([pid N] prefixes, the first process unprefixed), and
// `strace -ff -o PREFIX` (one file per process, PREFIX.PID). It follows
// what the ptrace recorder (capture/ptrace) follows, so that a program
// imported from strace and recorded with `iotrace record` give the same
// calls, paths and sizes:
//
//   - the calls of the event model (the open family, close, close_range,
//     the read and write families, lseek, the syncs, truncate, fallocate,
//     posix_fadvise, mmap of a descriptor, the copies, the stat family,
//     access, readlink, getdents, unlink, rename, mkdir, rmdir, link,
//     symlink, dup, dup2, dup3 and fcntl's F_DUPFD*, F_SETFD, F_SETFL)
//     become events; every other call is counted and left out;
//   - the processes and threads: fork, clone (a thread), exec and exit
//     events, so that every reader of the trace keeps one descriptor table
//     per process, as the program had them;
//   - descriptors, open file descriptions, their positions and flags are
//     followed by trace/state, fed every event the reader makes: what it
//     says a descriptor holds and where its position is gives the file and
//     the offset of calls that name only a descriptor. strace's -y
//     decorations (3</path>) are the truth of which file a descriptor
//     holds: a descriptor the log never showed opened (inherited, or made
//     by a call outside the model) becomes an inherit event;
//   - paths are made absolute against the working directory (from -y's
//     AT_FDCWD</cwd>, getcwd or chdir) or the dirfd, and chosen by the same
//     rules as iotrace record (capture/filter.Paths: not /proc, /sys, /dev;
//     never pipes or sockets; every call with All);
//   - <unfinished ...> and <... NAME resumed> halves are joined (the call
//     starts at the first half, lasts what -T says), errors become
//     −errno, signals are counted.
//
// Every process and thread is a thread of one rank, numbered in the order
// they are made (the first process 0), as iotrace record numbers them.
package strace

import (
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/iotrace/iotrace/convert/internal/textutil"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
	"github.com/iotrace/iotrace/trace/state"
)

// Input is one file of strace output.
type Input struct {
	Name string
	R    io.Reader
	// PID is the process of a file of strace -ff (PREFIX.PID), whose
	// lines do not name it; 0 otherwise.
	PID int
}

// Options configure a Reader.
type Options struct {
	Rank uint32 // the rank of every event
	// Rules choose the paths whose calls become events; nil is
	// filter.NewPaths(nil, nil, true), as iotrace record.
	Rules *filter.Paths
	// All keeps every call of the event model, whatever its path (pipes,
	// sockets, /dev): iotrace record --all.
	All bool
	// Paths is the table paths are interned in; nil is a new one.
	Paths *trace.Paths
}

// rename is a name moved by a rename call.
type rename struct{ from, to string }

const maxRenames = 1 << 12

// renames returns how many renames the log showed so far.
func (r *Reader) renames() int64 { return r.renamed0 + int64(len(r.renamed)) }

// moved notes a rename.
func (r *Reader) moved(from, to string) {
	if len(r.renamed) == maxRenames {
		n := copy(r.renamed, r.renamed[maxRenames/2:])
		r.renamed = r.renamed[:n]
		r.renamed0 += maxRenames / 2
	}
	r.renamed = append(r.renamed, rename{from, to})
}

// descAux is what the reader keeps on an open file description besides
// what trace/state keeps: the name strace's -y shows for it.
type descAux struct {
	kname string // the kernel's name of the file ("" until a decoration shows it)
	gen   int64  // Reader.renames() when kname was shown
}

type (
	follower = state.Follower[descAux, struct{}]
	desc     = state.Desc[descAux]
	step     = state.Step[descAux, struct{}]
)

// Reader is a trace.Source over strace output.
type Reader struct {
	opts     Options
	rules    *filter.Paths
	paths    *trace.Paths
	inputs   []*lineReader
	procs    map[int]*proc
	unbound  *proc // the unprefixed first process of stderr output, until its PID shows
	root     *proc // the first process of the log
	threads  uint32
	queue    []trace.Event
	head     int
	err      error
	longPath int // the length of a path longer than textutil.MaxPath the log named (an error)
	done     bool
	epoch    int64
	started  bool
	timed    bool // the lines have -ttt times (wall clock)
	tod      bool // the lines have -tt/-t times (time of day)
	meta     trace.Meta

	// fl follows descriptors, descriptions and processes: it is fed
	// every event the reader makes, in order. ns is its namespace (file
	// sizes for O_APPEND writes; names after renames).
	fl *follower
	ns *state.Namespace
	// statSize holds sizes stat results showed of files (by name), until
	// the trace truncates, renames or removes them: what the namespace
	// cannot learn from events.
	statSize map[string]int64
	// renamed holds the renames the log showed (emitted or not), the
	// last maxRenames of them, from the renamed0-th: a -y name of a
	// descriptor changes with one.
	renamed  []rename
	renamed0 int64

	waiting  map[int][]*record // lines of processes whose creating call has not returned
	inflight int               // clone calls started and not returned
	st       Stats
}

// Stats count what the log held besides the events.
type Stats struct {
	Lines      int64            // records read
	Events     int64            // events made
	Skipped    map[string]int64 // calls outside the event model, by name
	Unchosen   int64            // calls of the model on paths the rules leave out
	Signals    int64
	Exits      int64
	Killed     int64
	Learnt     int64 // descriptors learnt from -y decorations (inherit events)
	Resynced   int64 // descriptors whose -y decoration named another file than the one followed
	Positions  int64 // calls at the position of a descriptor whose position was unknown: placed at 0
	Relative   int64 // paths left relative: the working directory is unknown (no -y)
	Truncated  int64 // vector calls whose iovec array strace cut short
	Orphans    int64 // resumed halves without their start
	Appends    int64 // O_APPEND writes to files of unknown size: placed after what was written
	Unborn     int64 // processes whose creating call the log does not show
	Unreturned int64 // calls of the model that never returned ("= ?")
	Processes  int
}

// proc is a process or thread, as strace names it by its PID (TID).
type proc struct {
	pid     int
	thread  uint32
	cwd     *cwd
	pending *record
	alive   bool
}

type cwd struct{ dir string } // "" unknown

// NewReader returns a Reader over the inputs, whose lines are merged in
// time order.
func NewReader(inputs []Input, opts Options) *Reader {
	r := &Reader{opts: opts, rules: opts.Rules, paths: opts.Paths, procs: map[int]*proc{},
		waiting: map[int][]*record{}, statSize: map[string]int64{},
		st: Stats{Skipped: map[string]int64{}}}
	if r.rules == nil {
		r.rules, _ = filter.NewPaths(nil, nil, true)
	}
	if r.paths == nil {
		r.paths = trace.NewPaths()
	}
	r.ns = state.NewNamespace(r.paths.Lookup)
	r.fl = state.New[descAux, struct{}](r.ns)
	for _, in := range inputs {
		r.inputs = append(r.inputs, newLineReader(in.R, in.Name, in.PID))
	}
	return r
}

// Path implements trace.Source.
func (r *Reader) Path(id trace.PathID) string { return r.paths.Lookup(id) }

// Stats returns the counts so far.
func (r *Reader) Stats() Stats {
	s := r.st
	s.Processes = int(r.threads)
	return s
}

// Meta describes the imported trace: the command of the first execve,
// the clock and epoch of the timestamps.
func (r *Reader) Meta() trace.Meta {
	m := r.meta
	m.Ranks = 1
	switch {
	case r.timed:
		m.Clock, m.Epoch = "CLOCK_REALTIME (strace -ttt)", r.epoch
	case r.tod:
		m.Clock = "time of day (strace -tt), date unknown"
	default:
		m.Clock = "none (strace without -t): every call starts at 0"
	}
	return m
}

// Prime reads the log up to its first event, so that Meta knows the
// command and the epoch before any event is read.
func (r *Reader) Prime() error {
	for len(r.queue) == r.head && !r.done && r.err == nil {
		r.advance()
	}
	return r.err
}

// ReadEvents implements trace.Source.
func (r *Reader) ReadEvents(evs []trace.Event) (int, error) {
	for len(r.queue)-r.head < len(evs) && !r.done && r.err == nil {
		r.advance()
	}
	n := copy(evs, r.queue[r.head:])
	r.head += n
	if r.head == len(r.queue) {
		r.queue, r.head = r.queue[:0], 0
	}
	if n > 0 {
		return n, nil
	}
	if r.err != nil {
		return 0, r.err
	}
	return 0, io.EOF
}

// advance handles one more record, or the end of the log.
func (r *Reader) advance() {
	err := r.step()
	if errors.Is(err, io.EOF) {
		r.done = true
		r.flushWaiting()
		return
	}
	if err != nil {
		r.err = err
	}
}

// step handles the earliest record of the inputs.
func (r *Reader) step() error {
	best := -1
	var bestRec *record
	for i, in := range r.inputs {
		rec, err := in.peek()
		if errors.Is(err, io.EOF) {
			continue
		}
		if err != nil {
			return err
		}
		if best < 0 || (rec.hasTS && bestRec.hasTS && rec.ts < bestRec.ts) {
			best, bestRec = i, rec
		}
	}
	if best < 0 {
		return io.EOF
	}
	rec, _ := r.inputs[best].read()
	r.st.Lines++
	return r.handle(rec)
}

// flushWaiting handles the lines of processes whose creation never
// showed (clone calls left out with -e trace=…, or cut off the log).
func (r *Reader) flushWaiting() {
	pids := make([]int, 0, len(r.waiting))
	for pid := range r.waiting {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	for _, pid := range pids {
		recs := r.waiting[pid]
		delete(r.waiting, pid)
		r.unborn(pid)
		for _, rec := range recs {
			if err := r.handle(rec); err != nil {
				r.err = err
				return
			}
		}
	}
}

// newProc makes the process or thread pid, the next thread index of the
// rank. A child made by parent shares its working directory with
// CLONE_FS, else starts with a copy of it.
func (r *Reader) newProc(pid int, parent *proc, flags uint64) *proc {
	p := &proc{pid: pid, thread: r.threads, alive: true, cwd: &cwd{}}
	if r.root == nil {
		r.root = p
	}
	r.threads++
	if parent != nil {
		p.cwd = parent.cwd
		if flags&cloneFS == 0 {
			c := *parent.cwd
			p.cwd = &c
		}
	}
	if pid != 0 {
		r.procs[pid] = p
	}
	return p
}

// unborn makes a process whose creating call the log does not show. The
// event model has no way to say that a thread starts a process of its
// own with no parent in the trace: trace/state puts such a thread in the
// rank's first process (counted, noted).
func (r *Reader) unborn(pid int) *proc {
	if r.threads > 0 {
		r.st.Unborn++
	}
	return r.newProc(pid, nil, 0)
}

// procOf returns the process of a record, or nil if its lines wait for
// the call that created it.
func (r *Reader) procOf(rec *record) *proc {
	if rec.pid == 0 {
		// Unprefixed: the only live process, or the first one.
		var live *proc
		n := 0
		for _, p := range r.procs {
			if p.alive {
				live, n = p, n+1
			}
		}
		if r.unbound != nil && r.unbound.alive {
			live, n = r.unbound, n+1
		}
		if n == 1 {
			return live
		}
		// strace leaves the prefix out when it traces one task only, but
		// the log may not have shown the others' ends yet (a thread's
		// exit line can come after its process's next calls): the first
		// process, while it lives, is the one that never needed a prefix.
		if r.root != nil && r.root.alive && r.root.pid != 0 {
			return r.root
		}
		if r.unbound == nil {
			r.unbound = r.unborn(0)
		}
		return r.unbound
	}
	if p := r.procs[rec.pid]; p != nil {
		return p
	}
	// The first process of stderr output shows its PID once a second
	// process exists.
	if u := r.unbound; u != nil && (r.inflight == 0 || (rec.kind == kindResumed && u.pending != nil && u.pending.name == rec.name)) {
		r.unbound = nil
		u.pid = rec.pid
		r.procs[rec.pid] = u
		return u
	}
	if r.inflight > 0 {
		return nil // a child whose clone has not returned yet
	}
	return r.unborn(rec.pid)
}

func (r *Reader) handle(rec *record) error {
	p := r.procOf(rec)
	if p == nil {
		r.waiting[rec.pid] = append(r.waiting[rec.pid], rec)
		return nil
	}
	if rec.hasTS {
		if !r.started {
			r.started, r.epoch = true, rec.ts
		}
		if rec.tod {
			r.tod = true
		} else {
			r.timed = true
		}
	}
	switch rec.kind {
	case kindSignal:
		r.st.Signals++
	case kindExit:
		return r.exit(p, rec)
	case kindSuperseded:
		r.superseded(p, rec)
	case kindUnfinished:
		if p.pending != nil {
			r.st.Orphans++ // a start whose end never came
			if isClone(p.pending.name) {
				r.inflight--
			}
		}
		p.pending = rec
		if isClone(rec.name) {
			r.inflight++
		}
	case kindResumed:
		start := p.pending
		if start == nil || (rec.name != "" && start.name != rec.name) {
			r.st.Orphans++
			return nil
		}
		p.pending = nil
		if isClone(start.name) {
			r.inflight--
		}
		whole := *rec
		whole.name = start.name
		return r.call(p, &whole, start.ts, start.body+rec.body)
	case kindCall:
		return r.call(p, rec, rec.ts, rec.body)
	}
	return nil
}

func isClone(name string) bool {
	return name == "clone" || name == "clone3" || name == "fork" || name == "vfork"
}

// start returns the event time of a log time.
func (r *Reader) start(rec *record, ts int64) int64 {
	if !rec.hasTS {
		return 0
	}
	return ts - r.epoch
}

// call handles a complete call of p that started at ts.
func (r *Reader) call(p *proc, rec *record, ts int64, body string) error {
	h, ok := handlers()[rec.name]
	if !ok {
		r.st.Skipped[rec.name]++
		return nil
	}
	c, err := parseCall(rec.name, body)
	if err != nil {
		return rec.errorf("%s: %v", rec.name, err)
	}
	if !c.known && h.op != 0 {
		// "= ?": the call never returned (its process ended in it); what
		// it did is unknown.
		r.st.Unreturned++
		return nil
	}
	x := &ctx{r: r, p: p, c: c, rec: rec, ev: trace.Event{Op: h.op, Rank: r.opts.Rank, Thread: p.thread, Start: r.start(rec, ts), Dur: c.dur, Ret: c.ret}}
	if err := h.fn(x); err != nil {
		return rec.errorf("%s: %v", rec.name, err)
	}
	if r.longPath > 0 {
		return rec.errorf("%s: %v", rec.name, textutil.CheckPath(r.longPath))
	}
	switch {
	case x.emit:
		st := r.emit(&x.ev)
		if x.after != nil {
			return x.after(st)
		}
	case x.unchosen:
		r.st.Unchosen++
	case h.op == 0 || x.skipped:
		r.st.Skipped[rec.name]++
	}
	return nil
}

// emit follows ev and queues it.
func (r *Reader) emit(ev *trace.Event) step {
	st := r.fl.Apply(ev)
	r.queue = append(r.queue, *ev)
	r.st.Events++
	return st
}

// Notes are one-line accounts of what the log held besides the events.
func (r *Reader) Notes() []string {
	s := r.Stats()
	var n []string
	var skipped int64
	for _, v := range s.Skipped {
		skipped += v
	}
	if skipped > 0 {
		n = append(n, fmt.Sprintf("%d calls outside the event model left out (%s)", skipped, textutil.CountList(s.Skipped, 6)))
	}
	if s.Unchosen > 0 {
		n = append(n, fmt.Sprintf("%d calls on pipes, sockets, /proc, /sys, /dev and the system's directories (/etc, /usr, /lib…) left out, as iotrace record does (--all keeps them)", s.Unchosen))
	}
	if s.Learnt > 0 {
		n = append(n, fmt.Sprintf("%d descriptors the log does not show opened were learnt from -y decorations (inherit events: their open flags are unknown)", s.Learnt))
	}
	if s.Resynced > 0 {
		n = append(n, fmt.Sprintf("%d times a -y decoration named another file than the descriptor was followed to hold (a call the log or the model lacks changed it): the decoration was taken, as an inherit event", s.Resynced))
	}
	if s.Positions > 0 {
		n = append(n, fmt.Sprintf("%d calls at the position of a descriptor whose position the log never showed were placed from offset 0", s.Positions))
	}
	if s.Relative > 0 {
		n = append(n, fmt.Sprintf("%d relative paths kept relative: the working directory is unknown (strace -y shows it)", s.Relative))
	}
	if s.Truncated > 0 {
		n = append(n, fmt.Sprintf("%d vector calls had their iovec arrays cut short by strace; their sizes are at least what was printed and moved", s.Truncated))
	}
	if s.Appends > 0 {
		n = append(n, fmt.Sprintf("%d O_APPEND writes to files whose size the log never shows were placed after what the log wrote to them", s.Appends))
	}
	if s.Orphans > 0 {
		n = append(n, fmt.Sprintf("%d resumed calls whose start is not in the log left out", s.Orphans))
	}
	if s.Unreturned > 0 {
		n = append(n, fmt.Sprintf("%d calls that never returned (= ?: their process ended in them) left out", s.Unreturned))
	}
	if s.Unborn > 0 {
		n = append(n, fmt.Sprintf("%d processes whose fork or clone the log does not show: the trace cannot say which process they are, and readers put them in the first process", s.Unborn))
	}
	if !r.timed && !r.tod && s.Events > 0 {
		n = append(n, "the log has no timestamps (strace -ttt -T gives them): every call starts at 0")
	}
	return n
}

// dirOf returns the directory a path argument is resolved against: the
// working directory for AT_FDCWD (its -y decoration, else what the log
// showed), the descriptor's decoration or followed file otherwise; ""
// when unknown.
func (x *ctx) dirOf(dirArg string) (string, error) {
	if dirArg == "" {
		dirArg = "AT_FDCWD"
	}
	fd, decor, decorated, ok := fdArg(dirArg)
	if !ok {
		return "", fmt.Errorf("directory descriptor %q", clip(dirArg))
	}
	switch {
	case fd == atFDCWD && decorated:
		x.p.cwd.dir = decor // -y shows the working directory
		return decor, nil
	case fd == atFDCWD:
		return x.p.cwd.dir, nil
	case decorated:
		return decor, nil
	}
	if d := x.r.fl.Lookup(x.p.thread, fd); d != nil {
		if name := x.r.nameOf(d); strings.HasPrefix(name, "/") {
			return name, nil
		}
	}
	return "", nil
}

// resolve makes a path argument absolute against dirArg (see dirOf).
// known is false when the result had to stay relative.
func (x *ctx) resolve(dirArg string, pathArg string) (string, bool, error) {
	s, _, ok := unquote(pathArg)
	if !ok {
		return "", false, fmt.Errorf("path argument %q is not a string", clip(pathArg))
	}
	dir, err := x.dirOf(dirArg)
	if err != nil {
		return "", false, err
	}
	if strings.HasPrefix(s, "/") {
		return path.Clean(s), true, nil
	}
	if dir == "" {
		if s == "" {
			return "", false, nil
		}
		x.r.st.Relative++
		return path.Clean(s), false, nil
	}
	if s == "" {
		return dir, true, nil
	}
	return path.Clean(dir + "/" + s), true, nil
}

// choose reports whether calls on name become events.
func (r *Reader) choose(name string, known bool) bool {
	if r.opts.All {
		return true
	}
	if !known {
		return name != "" // a relative path: nothing excludes it
	}
	return r.rules.Match(name)
}

// chosen reports whether calls on description d become events: those the
// trace knows by a path (every one it made was chosen), any with All.
func (r *Reader) chosen(d *desc) bool {
	return d != nil && (r.opts.All || d.Path != 0)
}

// nameOf returns the file of d as the trace names it now: after renames
// the namespace followed, else the path it was opened on.
func (r *Reader) nameOf(d *desc) string {
	if d.Node != nil {
		if p := d.Node.Path(); p != "" && p != "." {
			return p
		}
	}
	return r.paths.Lookup(d.Path)
}

// intern returns the id of a path the log names; a path longer than
// textutil.MaxPath is kept out and its length noted, for call to refuse.
func (r *Reader) intern(name string) trace.PathID {
	if len(name) > textutil.MaxPath {
		r.longPath = max(r.longPath, len(name))
		return 0
	}
	return r.paths.Intern(name)
}
