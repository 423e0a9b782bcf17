package strace

import (
	"errors"
	"strconv"
	"strings"
	"sync"

	"github.com/iotrace/iotrace/trace"
)

// Processes and threads become events, so that every reader of the trace
// (trace/state and what stands on it) keeps one descriptor table per
// process, as the program had them:
//
//   - clone, clone3, fork and vfork that made a task (a positive result,
//     its PID): a fork event (a clone event with CLONE_THREAD) of the
//     calling thread, Ret the new task's thread index, Flags its clone
//     flags among CLONE_FILES, CLONE_VFORK, CLONE_VM and CLONE_THREAD
//     (vfork: CLONE_VFORK|CLONE_VM);
//   - execve and execveat that succeeded: an exec event, Path the program
//     as the call named it (made absolute);
//   - "+++ exited with N +++": an exit event, Ret N; "+++ killed by SIGX
//     +++": Ret 128+X; "+++ superseded by execve in pid T +++" (a thread
//     other than the leader ran execve and goes on under the leader's
//     PID): an exit event, Ret 0, of the leader's thread.
//
// The order: a task's fork or clone event comes before any event of the
// task. The new task gets its thread index when the creating call
// returns; strace -f may print the task's first lines before that (the
// parent's call is then <unfinished ...>): they wait until the call's
// <... resumed> line, which makes the fork event, then are handled. The
// fork event starts when the creating call started, before any call of
// the new task, so that readers that sort events by start time (stably)
// keep that order.

// clone follows clone, clone3, fork and vfork.
func (x *ctx) clone() error {
	var flags uint64
	switch x.c.name {
	case "clone":
		for _, a := range x.c.args {
			if v, ok := strings.CutPrefix(a, "flags="); ok {
				flags, _ = flagsArg(v, cloneNames)
			}
		}
	case "clone3":
		if v, ok := field(x.c.arg(0), "flags"); ok {
			flags, _ = flagsArg(v, cloneNames)
		}
	case "vfork":
		flags = cloneVfork | cloneVM
	}
	if x.c.ret <= 0 || x.c.ret > 1<<31-1 {
		x.skipped = true // it made no task
		return nil
	}
	r := x.r
	pid := int(x.c.ret)
	if old := r.procs[pid]; old != nil {
		old.alive = false // a PID used again
	}
	child := r.newProc(pid, x.p, flags)
	if flags&cloneThrd != 0 {
		x.ev.Op = trace.OpClone
	}
	x.ev.Ret, x.ev.Flags = int64(child.thread), uint32(flags&cloneKept)
	x.emit = true
	x.after = func(step) error {
		// The new task's lines that came before the call returned.
		recs := r.waiting[pid]
		delete(r.waiting, pid)
		for _, rec := range recs {
			if err := r.handle(rec); err != nil {
				return err
			}
		}
		return nil
	}
	return nil
}

// exec follows execve and execveat (dir, file, argv: their arguments; dir
// -1 for execve). The first names the command of the trace.
func (x *ctx) exec(dir, file, argv int) error {
	if x.c.ret != 0 {
		x.skipped = true // it failed: the process goes on with its program
		return nil
	}
	dirArg := ""
	if dir >= 0 {
		dirArg = x.c.arg(dir)
	}
	var name string
	if dir >= 0 && x.flags(4, atFlagNames)&atEmpty != 0 && (x.c.arg(file) == `""`) {
		fd, decor, decorated, ok := fdArg(dirArg)
		if !ok {
			return errors.New("descriptor " + strconv.Quote(clip(dirArg)))
		}
		if decorated {
			name = decor
		} else if d := x.r.fl.Lookup(x.p.thread, fd); d != nil {
			name = x.r.nameOf(d)
		}
	} else {
		var err error
		if name, _, err = x.resolve(dirArg, x.c.arg(file)); err != nil {
			return err
		}
	}
	x.emit = true
	if name != "" {
		x.ev.Path = x.r.intern(name)
	}
	if len(x.r.meta.Command) == 0 {
		cmd := arrayStrings(x.c.arg(argv))
		// strace cuts strings at -s bytes; the file name is whole.
		if f, _, ok := unquote(x.c.arg(file)); ok && len(cmd) > 0 && strings.HasSuffix(cmd[0], "...") &&
			strings.HasPrefix(f, strings.TrimSuffix(cmd[0], "...")) {
			cmd[0] = f
		}
		x.r.meta.Command = cmd
	}
	return nil
}

// exit follows "+++ exited with N +++" and "+++ killed by SIGX +++".
func (r *Reader) exit(p *proc, rec *record) error {
	status, killed, err := exitStatus(rec.body)
	if err != nil {
		return rec.errorf("%v", err)
	}
	r.st.Exits++
	if killed {
		r.st.Killed++
	}
	r.ended(p, rec, status)
	return nil
}

// ended makes the exit event of p (once).
func (r *Reader) ended(p *proc, rec *record, status int64) {
	if p.pending != nil && isClone(p.pending.name) {
		r.inflight--
	}
	p.pending = nil
	if !p.alive {
		return
	}
	p.alive = false
	r.emit(&trace.Event{Op: trace.OpExit, Rank: r.opts.Rank, Thread: p.thread, Start: r.start(rec, rec.ts), Ret: status})
}

// superseded follows "LEADER +++ superseded by execve in pid TID +++":
// the thread TID ran execve, the leader is gone without an exit of its
// own, and TID goes on under the leader's PID.
func (r *Reader) superseded(p *proc, rec *record) {
	t := r.procs[rec.newPID]
	if t == nil || t == p {
		return
	}
	r.ended(p, rec, 0)
	delete(r.procs, rec.newPID)
	t.pid = p.pid
	r.procs[p.pid] = t
}

// exitStatus reads the status of an exit line: N of "+++ exited with N
// +++", 128+X of "+++ killed by SIGX [(core dumped)] +++".
func exitStatus(s string) (status int64, killed bool, err error) {
	body, ok := strings.CutSuffix(strings.TrimSpace(s), " +++")
	if !ok {
		return 0, false, errors.New("bad exit line " + strconv.Quote(clip(s)))
	}
	if v, ok := strings.CutPrefix(body, "+++ exited with "); ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 0 || n > 255 {
			return 0, false, errors.New("bad exit status in " + strconv.Quote(clip(s)))
		}
		return n, false, nil
	}
	v, ok := strings.CutPrefix(body, "+++ killed by ")
	if !ok {
		return 0, false, errors.New("bad exit line " + strconv.Quote(clip(s)))
	}
	v = strings.TrimSuffix(v, " (core dumped)")
	sig, ok := signalNumber(v)
	if !ok {
		return 0, true, errors.New("unknown signal " + strconv.Quote(clip(v)))
	}
	return 128 + sig, true, nil
}

// signals are the Linux signal numbers (x86-64 and arm64 agree), made
// when first needed.
var signals = sync.OnceValue(func() map[string]int64 {
	return map[string]int64{
		"SIGHUP": 1, "SIGINT": 2, "SIGQUIT": 3, "SIGILL": 4, "SIGTRAP": 5, "SIGABRT": 6, "SIGIOT": 6,
		"SIGBUS": 7, "SIGFPE": 8, "SIGKILL": 9, "SIGUSR1": 10, "SIGSEGV": 11, "SIGUSR2": 12,
		"SIGPIPE": 13, "SIGALRM": 14, "SIGTERM": 15, "SIGSTKFLT": 16, "SIGCHLD": 17, "SIGCONT": 18,
		"SIGSTOP": 19, "SIGTSTP": 20, "SIGTTIN": 21, "SIGTTOU": 22, "SIGURG": 23, "SIGXCPU": 24,
		"SIGXFSZ": 25, "SIGVTALRM": 26, "SIGPROF": 27, "SIGWINCH": 28, "SIGIO": 29, "SIGPOLL": 29,
		"SIGPWR": 30, "SIGSYS": 31, "SIGRTMIN": 32,
	}
})

// signalNumber reads a signal as strace names it: SIGKILL, SIGRT_3
// (SIGRTMIN+3), or a number strace has no name for (SIG40, 40).
func signalNumber(s string) (int64, bool) {
	if n, ok := signals()[s]; ok {
		return n, true
	}
	if v, ok := strings.CutPrefix(s, "SIGRT_"); ok {
		n, err := strconv.ParseInt(v, 10, 32)
		return 32 + n, err == nil && n >= 0 && n <= 32
	}
	n, err := strconv.ParseInt(strings.TrimPrefix(s, "SIG"), 10, 32)
	return n, err == nil && n > 0 && n < 65
}
