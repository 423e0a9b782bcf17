// Package strace reads the output of strace into a trace: `strace -f
// -ttt -T -y -o FILE` (one file, every line with its PID), the same on
// standard error ([pid N] prefixes, the first process unprefixed), and
// `strace -ff -o PREFIX` (one file per process, PREFIX.PID). It follows
// what the ptrace recorder (capture/ptrace) follows, so that a program
// imported from strace and recorded with `iotrace record` give the same
// calls, paths and sizes:
//
//   - the open family, close, close_range, the read and write families
//     (vectors too), lseek, fsync, fdatasync, ftruncate, truncate, the stat
//     family, access, unlink, rename, mkdir, rmdir, dup, dup2, dup3 and
//     fcntl(F_DUPFD*) become events; every other call is counted and left
//     out;
//   - a descriptor table per process (copied by fork, shared by threads
//     with CLONE_FILES, close-on-exec descriptors dropped at execve) whose
//     entries are open file descriptions shared by dup and fork, so that
//     plain read and write are given the offset they used;
//   - paths are made absolute against the working directory (from -y's
//     AT_FDCWD</cwd> or chdir) or the dirfd, and chosen by the same rules
//     as iotrace record (capture/ptrace.Rules: not /proc, /sys, /dev; never
//     pipes or sockets; every call with All);
//   - <unfinished ...> and <... NAME resumed> halves are joined (the call
//     starts at the first half, lasts what -T says), errors become
//     −errno, signals and exits are counted.
//
// Every process and thread is a thread of one rank, numbered in the order
// they appear, as iotrace record numbers them.
package strace

import (
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/iotrace/iotrace/capture/ptrace"
	"github.com/iotrace/iotrace/convert/internal/textutil"
	"github.com/iotrace/iotrace/trace"
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
	// ptrace.NewRules(nil, nil, true), as iotrace record.
	Rules *ptrace.Rules
	// All keeps every call of the event model, whatever its path (pipes,
	// sockets, /dev): iotrace record --all.
	All bool
	// Paths is the table paths are interned in; nil is a new one.
	Paths *trace.Paths
}

// Reader is a trace.Source over strace output.
type Reader struct {
	opts    Options
	rules   *ptrace.Rules
	paths   *trace.Paths
	inputs  []*lineReader
	procs   map[int]*proc
	unbound *proc // the unprefixed first process of stderr output, until its PID shows
	threads uint32
	queue   []trace.Event
	head    int
	err     error
	done    bool
	epoch   int64
	started bool
	timed   bool // the lines have -ttt times (wall clock)
	tod     bool // the lines have -tt/-t times (time of day)
	meta    trace.Meta

	waiting  map[int][]*record // lines of processes whose creating call has not returned
	children map[int]child     // clone results whose child has not shown yet
	inflight int               // clone calls started and not returned
	sizes    map[string]int64  // file sizes: what the log shows, or at least what was written
	exact    map[string]bool   // the size is known, not only a lower bound
	st       Stats
}

// Stats count what the log held besides the events.
type Stats struct {
	Lines     int64            // records read
	Events    int64            // events made
	Skipped   map[string]int64 // calls outside the event model, by name
	Unchosen  int64            // calls of the model on paths the rules leave out
	Signals   int64
	Exits     int64
	Killed    int64
	Learnt    int64 // descriptors learnt from -y decorations, position assumed 0
	Relative  int64 // paths left relative: the working directory is unknown (no -y)
	Truncated int64 // vector calls whose iovec array strace cut short
	Orphans   int64 // resumed halves without their start
	Appends   int64 // O_APPEND writes to files of unknown size: placed after what was written
	Processes int
}

type child struct {
	parent *proc
	flags  uint64
}

// proc is a process or thread.
type proc struct {
	pid     int
	thread  uint32
	fds     *fdTable
	cwd     *cwd
	pending *record
	alive   bool
}

type cwd struct{ dir string } // "" unknown

// NewReader returns a Reader over the inputs, whose lines are merged in
// time order.
func NewReader(inputs []Input, opts Options) *Reader {
	r := &Reader{opts: opts, rules: opts.Rules, paths: opts.Paths, procs: map[int]*proc{},
		waiting: map[int][]*record{}, children: map[int]child{}, sizes: map[string]int64{}, exact: map[string]bool{},
		st: Stats{Skipped: map[string]int64{}}}
	if r.rules == nil {
		r.rules, _ = ptrace.NewRules(nil, nil, true)
	}
	if r.paths == nil {
		r.paths = trace.NewPaths()
	}
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
		if err := r.step(); err != nil {
			if errors.Is(err, io.EOF) {
				r.done = true
				r.flushWaiting()
				break
			}
			r.err = err
		}
	}
	return r.err
}

// ReadEvents implements trace.Source.
func (r *Reader) ReadEvents(evs []trace.Event) (int, error) {
	for len(r.queue)-r.head < len(evs) && !r.done && r.err == nil {
		if err := r.step(); err != nil {
			if errors.Is(err, io.EOF) {
				r.done = true
				r.flushWaiting()
				break
			}
			r.err = err
		}
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
// showed (clone calls left out with -e trace=…): they get tables of their
// own.
func (r *Reader) flushWaiting() {
	pids := make([]int, 0, len(r.waiting))
	for pid := range r.waiting {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	for _, pid := range pids {
		recs := r.waiting[pid]
		delete(r.waiting, pid)
		r.newProc(pid, nil, 0)
		for _, rec := range recs {
			if err := r.handle(rec); err != nil {
				r.err = err
				return
			}
		}
	}
}

func (r *Reader) newProc(pid int, parent *proc, flags uint64) *proc {
	p := &proc{pid: pid, thread: r.threads, alive: true}
	r.threads++
	if parent == nil {
		p.fds, p.cwd = &fdTable{}, &cwd{}
	} else {
		p.fds, p.cwd = parent.fds, parent.cwd
		if flags&cloneFiles == 0 {
			p.fds = parent.fds.clone()
		}
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
		if r.unbound == nil {
			r.unbound = r.newProc(0, nil, 0)
		}
		return r.unbound
	}
	if p := r.procs[rec.pid]; p != nil {
		return p
	}
	if c, ok := r.children[rec.pid]; ok {
		delete(r.children, rec.pid)
		return r.newProc(rec.pid, c.parent, c.flags)
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
	return r.newProc(rec.pid, nil, 0)
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
		r.st.Exits++
		if strings.Contains(rec.body, "killed") {
			r.st.Killed++
		}
		p.alive = false
	case kindSuperseded:
		// A thread ran execve: it goes on as the thread group's leader.
		if old := r.procs[rec.newPID]; old != nil && old != p {
			old.alive = false
		}
		delete(r.procs, p.pid)
		p.pid = rec.newPID
		r.procs[p.pid] = p
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

// call handles a complete call of p that started at ts.
func (r *Reader) call(p *proc, rec *record, ts int64, body string) error {
	h, ok := handlers[rec.name]
	if !ok {
		r.st.Skipped[rec.name]++
		return nil
	}
	c, err := parseCall(rec.name, body)
	if err != nil {
		return rec.errorf("%s: %v", rec.name, err)
	}
	x := &ctx{r: r, p: p, c: c, rec: rec, ev: trace.Event{Op: h.op, Rank: r.opts.Rank, Thread: p.thread, Start: ts - r.epoch, Dur: c.dur, Ret: c.ret}}
	if !rec.hasTS {
		x.ev.Start = 0
	}
	if err := h.fn(x); err != nil {
		return rec.errorf("%s: %v", rec.name, err)
	}
	if x.emit {
		r.queue = append(r.queue, x.ev)
		r.st.Events++
	} else if x.unchosen {
		r.st.Unchosen++
	}
	return nil
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
		n = append(n, fmt.Sprintf("%d calls on pipes, sockets, /proc, /sys and /dev left out, as iotrace record does (--all keeps them)", s.Unchosen))
	}
	if s.Learnt > 0 {
		n = append(n, fmt.Sprintf("%d descriptors the log does not show opened were learnt from -y decorations; their reads and writes are placed from offset 0", s.Learnt))
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
	if !r.timed && !r.tod && s.Events > 0 {
		n = append(n, "the log has no timestamps (strace -ttt -T gives them): every call starts at 0")
	}
	return n
}

// resolve makes path absolute against dirfd of p: the working directory
// for AT_FDCWD (its -y decoration, else what the log showed), the
// directory's decoration or file otherwise. known is false when the
// result had to stay relative.
func (x *ctx) resolve(dirArg string, pathArg string) (string, bool, error) {
	s, _, ok := unquote(pathArg)
	if !ok {
		return "", false, fmt.Errorf("path argument %q is not a string", clip(pathArg))
	}
	if dirArg == "" {
		dirArg = "AT_FDCWD"
	}
	fd, decor, decorated, ok := fdArg(dirArg)
	if !ok {
		return "", false, fmt.Errorf("directory descriptor %q", clip(dirArg))
	}
	if fd == atFDCWD && decorated {
		x.p.cwd.dir = decor // -y shows the working directory
	}
	if strings.HasPrefix(s, "/") {
		return path.Clean(s), true, nil
	}
	dir := ""
	if fd == atFDCWD {
		dir = x.p.cwd.dir
	} else if decorated {
		dir = decor
	} else if e := x.p.fds.get(fd); e != nil && strings.HasPrefix(e.f.name, "/") {
		dir = e.f.name
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

func (r *Reader) intern(name string) trace.PathID { return r.paths.Intern(name) }

func (r *Reader) setSize(name string, n int64) { r.sizes[name], r.exact[name] = n, true }

func (r *Reader) forget(name string) {
	delete(r.sizes, name)
	delete(r.exact, name)
}
