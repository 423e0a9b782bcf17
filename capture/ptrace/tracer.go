//go:build linux && (amd64 || arm64)

package ptrace

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/iotrace/iotrace/capture"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
	"github.com/iotrace/iotrace/trace/state"
	"golang.org/x/sys/unix"
)

// Supported reports whether this build can trace programs.
const Supported = true

// Config says what to run and where its events go.
type Config struct {
	// Argv is the program and its arguments. A name without a slash is
	// looked up in PATH.
	Argv []string
	// Env is the program's environment; nil means the tracer's own.
	Env []string
	// Dir is the program's working directory; "" means the tracer's own.
	Dir string
	// Stdin, Stdout and Stderr are the program's standard streams; nil
	// means the tracer's own.
	Stdin, Stdout, Stderr *os.File

	// Sink takes the events. WriteEvents is called from one goroutine
	// (not the caller's), Intern from the tracer.
	Sink trace.Sink
	// Flush, if set, is called about every FlushInterval (default 1s)
	// after the events of the interval were written, and once at the end.
	Flush         func() error
	FlushInterval time.Duration

	// Rank is the Event.Rank of every event.
	Rank uint32
	// Base is time 0 of event times; the zero Time means when Run starts.
	Base time.Time
	// Rules choose the paths to record; nil means filter.NewPaths(nil, nil, true).
	Rules *filter.Paths
	// All records every traced call, whatever its path or descriptor
	// (pipes, sockets, terminals and descriptors that are not open too).
	All bool
	// Helper is the executable that runs HelperMain; "" means
	// /proc/self/exe, the running program.
	Helper string
	// OnStart, if set, is called with the program's process id once it
	// runs, before any event is written.
	OnStart func(pid int)
	// ForwardSignals passes every catchable signal sent to the tracer on
	// to the program while Run runs (and keeps them from killing the
	// tracer, which would kill the program: batch systems send SIGUSR1 or
	// SIGUSR2 to ask a job to checkpoint, terminals SIGINT, SIGWINCH,
	// SIGTSTP…), but those that are the tracer's own business: SIGCHLD,
	// SIGURG and SIGPROF (the Go runtime's), SIGPIPE and SIGXFSZ (its own
	// writes), the synchronous faults, and the C library's internal
	// real-time signals 32 and 33. After passing on SIGTSTP, SIGTTIN or
	// SIGTTOU the tracer stops itself, so that a shell's job control sees
	// the job stop; SIGCONT is passed on too.
	ForwardSignals bool
	// Cost is what tracing costs the program per call (Calibrate): Run
	// takes it out of the times it records (Result.Corrections says how
	// much). The zero Cost records the times as measured.
	Cost capture.Cost

	// decodeRegs reads system calls from the registers even where
	// PTRACE_GET_SYSCALL_INFO works (tests).
	decodeRegs bool
}

// Thread is one thread (or process) the tracer followed.
type Thread struct {
	Index  uint32 // Event.Thread of its events
	PID    int    // process id (thread group) when it was created
	TID    int    // thread id when it was created
	Parent int    // Index of the thread that created it; -1 for the first
}

// Result describes a finished run.
type Result struct {
	PID      int            // process id of the program
	ExitCode int            // its exit status, when it exited
	Signal   syscall.Signal // the signal that killed it, or 0
	Events   int64          // events written to the sink
	// What the trace cannot show: successful mmap calls on recorded files
	// (Mmaps) and the distinct files they mapped (MmapFiles), other than
	// the system's (libraries the loader maps, its cache, locales), whose reads
	// and writes through the mapping are not seen; io_uring instances
	// (io_uring_setup) and Linux AIO contexts (io_setup) the program
	// made, whose I/O is not seen either.
	Mmaps, MmapFiles int
	IOUring, AIO     int
	// PtraceDenied counts the program's ptrace calls the kernel refused
	// because its processes are traced already (PTRACE_TRACEME, or
	// attaching a process of the program, as strace and gdb do);
	// PtraceBy is the command name of the first process that made one.
	PtraceDenied int
	PtraceBy     string
	// Threads lists every thread and process of the program, in the
	// order of their thread index: 0 is the program's main thread, the
	// others are numbered in the order the tracer saw them created.
	Threads []Thread
	// Corrections counts what Config.Cost took out of the times.
	Corrections capture.Corrections
	// usageReads counts the readings of a thread's usage (pagein.go).
	usageReads int64
	// Virtual gives the time on the events' clock (ns from Config.Base)
	// of a real time t (ns from Config.Base) measured during the run:
	// t less the tracer's cost paid by then (Config.Cost), for readings
	// made outside the tracer (the clock library's).
	Virtual func(t int64) int64
}

// Status is the exit status a shell would report: the exit code, or
// 128 + the signal number.
func (r Result) Status() int {
	if r.Signal != 0 {
		return 128 + int(r.Signal)
	}
	return r.ExitCode
}

// syscallInfo is struct ptrace_syscall_info. At an exit stop Nr holds
// rval and the low byte of Args[0] is_error.
type syscallInfo struct {
	Op      uint8
	_       uint8
	_       uint16
	Arch    uint32
	IP      uint64
	SP      uint64
	Nr      uint64
	Args    [6]uint64
	RetData uint32
	_       uint32
}

// task is one traced thread.
type task struct {
	tid, tgid int
	idx       uint32
	started   bool // runs the program (not the helper)

	inCall  bool // between a seccomp stop and its exit stop
	restart bool // the last call returned ERESTART*; ev waits for the retry
	rec     bool // the call in flight is recorded
	k       kind
	a       [6]uint64
	f       *desc    // file of the call in flight
	f2      *desc    // second file of a copy in flight (the one written)
	pe      *pathEnt // path of the open in flight
	moved   string   // the name a rename or link in flight moves or links (stat'ed for its size)
	ev      trace.Event
	sReal   int64 // when the call in flight started, on the real clock
	applied bool  // the descriptor table followed the call at its entry

	cloneFlags uint64

	// Waits for mapped pages (pagein.go): the thread's usage files, and
	// its usage read at its latest recorded call's exit (fw: read, while
	// its process had a recorded file mapping), when the tracer let it go
	// after that (real clock), and the call's end on the trace's clock.
	use  *usageFiles
	fw   bool
	fwU  usage
	fwAt int64
	pend int64
	// fwStops counts the thread's stops since the mark at calls not
	// recorded; stopped its time stopped per stop in its latest gaps
	// without a wait for the device.
	fwStops int32
	stopped stoppedWindow

	// resumed is when the tracer let the thread run after a stop at a
	// call it does not record or at a call's exit (0: after any other
	// stop): its next stop at a call's entry gives the account a round
	// trip (Account.RoundTrip).
	resumed int64
}

// pathEnt is a resolved path.
type pathEnt struct {
	name string
	id   trace.PathID
	rec  bool
}

type tracer struct {
	cfg   Config
	base  time.Time
	rank  uint32
	rules *filter.Paths
	all   bool
	sink  trace.Sink
	b     *batcher

	calls   *callTable
	info    syscallInfo
	regs    regs
	useRegs bool
	mem     *memReader
	proc    *procfs
	abuf    []byte
	iov     []byte
	how     [24]byte
	ubuf    [1024]byte // a /proc usage file (pagein.go)
	paths   map[string]*pathEnt

	tasks   map[int]*task
	last    *task
	early   map[int]bool // stopped before their creator's fork event
	exited  map[int]bool // ended before their creator's fork event
	mainPid int
	started bool
	status  unix.WaitStatus
	threads []Thread
	events  int64

	mmaps        int             // successful mmaps of recorded files
	mmapFiles    map[string]bool // the files they mapped
	ioUring      int             // successful io_uring_setup calls
	aio          int             // successful io_setup calls
	ptraceDenied int             // ptrace calls refused: a second tracer
	ptraceBy     string          // the first one's command name

	procMu   sync.Mutex
	procs    map[int]int // thread group -> live threads, for signal forwarding
	attached bool        // the helper is a tracee (procs holds it)

	usageReads int64 // readings of a thread's usage (pagein.go)

	sigSeen [65]atomic.Int64 // time a tracee last got each signal

	st *follower // the descriptor tables of the traced processes

	acct   capture.Account // the tracer's cost, kept out of the times
	waiter stopWaiter      // polls before it blocks (wait.go)
}

// Run starts cfg.Argv under the tracer, records its calls until it and
// every process it started have ended, and returns how it ended. The
// program's exit status is in the Result, not in the error: an error
// means the tracing itself failed.
func Run(cfg Config) (Result, error) {
	if len(cfg.Argv) == 0 || cfg.Argv[0] == "" {
		return Result{}, errors.New("no program to run")
	}
	if cfg.Sink == nil {
		return Result{}, errors.New("no sink for the events")
	}
	path, err := LookPath(cfg.Argv[0], cfg.Dir, cfg.Env)
	if err != nil {
		return Result{}, err
	}
	tr := &tracer{
		cfg:     cfg,
		base:    cfg.Base,
		rank:    cfg.Rank,
		rules:   cfg.Rules,
		all:     cfg.All,
		sink:    cfg.Sink,
		calls:   newCallTable(archCalls),
		useRegs: cfg.decodeRegs,
		mem:     newMemReader(),
		proc:    newProcfs(),
		abuf:    make([]byte, 0, 2*pathMax+2),
		paths:   map[string]*pathEnt{},
		st:      state.New[file, struct{}](nil),
		tasks:   map[int]*task{},
		early:   map[int]bool{},
		exited:  map[int]bool{},
		procs:   map[int]int{},
		acct:    capture.Account{C: cfg.Cost},
	}
	if tr.base.IsZero() {
		tr.base = time.Now()
	}
	if tr.rules == nil {
		tr.rules, _ = filter.NewPaths(nil, nil, true)
	}
	interval := cfg.FlushInterval
	if interval <= 0 {
		interval = time.Second
	}
	tr.b = newBatcher(cfg.Sink, cfg.Flush, interval)

	// ptrace requests must all come from the thread that attached.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// With one P (GOMAXPROCS=1, as under taskset -c 0 or mpirun
	// --bind-to core), sysmon takes the tracer's P away at every wait4
	// that outlasts its 20µs tick, there being no idle P, and keeps
	// polling every 20µs on the CPU the program needs: a second P, idle
	// while the tracer waits, avoids both.
	if runtime.GOMAXPROCS(0) < 2 {
		runtime.GOMAXPROCS(2)
		defer runtime.SetDefaultGOMAXPROCS()
	}

	var sigs chan os.Signal
	stopFwd := make(chan struct{})
	fwdDone := make(chan struct{})
	if cfg.ForwardSignals {
		sigs = make(chan os.Signal, 32)
		signal.Notify(sigs, forwarded...)
		go tr.forward(sigs, stopFwd, fwdDone)
	} else {
		close(fwdDone)
	}

	defer quietStops()()
	res, err := tr.run(path)
	for _, t := range tr.tasks {
		t.closeUsage() // (a run that failed: the tracees killed)
	}
	close(stopFwd)
	<-fwdDone
	if sigs != nil {
		signal.Stop(sigs)
	}
	if berr := tr.b.close(); err == nil && berr != nil {
		err = fmt.Errorf("writing the trace: %w", berr)
	}
	res.Events = tr.events
	res.Threads = tr.threads
	res.Mmaps, res.MmapFiles = tr.mmaps, len(tr.mmapFiles)
	res.IOUring, res.AIO = tr.ioUring, tr.aio
	res.PtraceDenied, res.PtraceBy = tr.ptraceDenied, tr.ptraceBy
	res.Corrections = tr.acct.N
	res.Virtual = tr.acct.Virtual
	res.usageReads = tr.usageReads
	return res, err
}

// LookPath finds the program the way a shell does: a name with a slash
// is a path (relative to dir when set), another name is searched in the
// PATH of env (nil: the tracer's environment). Run calls it before the
// filter is installed, so that the search is not traced.
func LookPath(name, dir string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		st, err := os.Stat(p)
		if err != nil {
			return "", fmt.Errorf("%s: %w", name, errors.Unwrap(err))
		}
		if st.IsDir() {
			return "", fmt.Errorf("%s: is a directory", name)
		}
		return name, nil
	}
	pathEnv, ok := os.LookupEnv("PATH")
	if env != nil {
		pathEnv, ok = "", false
		for _, kv := range env {
			if v, found := strings.CutPrefix(kv, "PATH="); found {
				pathEnv, ok = v, true
			}
		}
	}
	if !ok {
		pathEnv = "/usr/local/bin:/usr/bin:/bin"
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, name)
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		st, err := os.Stat(p)
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		return p, nil
	}
	return "", fmt.Errorf("%s: command not found", name)
}

// forwarded are the signals ForwardSignals passes on: every signal but
// those the tracer cannot catch (SIGKILL, SIGSTOP) and those that are its
// own business: SIGCHLD (its tracees change state), SIGURG (the Go
// runtime preempts goroutines with it), SIGPROF (the runtime's
// profiler), SIGPIPE and SIGXFSZ (raised by the tracer's own writes: to
// a closed pipe, past its file size limit), the faults the kernel raises
// synchronously in the thread that caused them (SIGSEGV, SIGBUS, SIGFPE,
// SIGILL, SIGTRAP, SIGSYS), and 32 and 33, which the C library keeps for
// itself (thread cancellation, setxid).
var forwarded = func() []os.Signal {
	var sigs []os.Signal
	for s := syscall.Signal(1); s <= 64; s++ {
		switch s {
		case unix.SIGKILL, unix.SIGSTOP, unix.SIGCHLD, unix.SIGURG, unix.SIGPROF, unix.SIGPIPE, unix.SIGXFSZ,
			unix.SIGSEGV, unix.SIGBUS, unix.SIGFPE, unix.SIGILL, unix.SIGTRAP, unix.SIGSYS, 32, 33:
			continue
		}
		sigs = append(sigs, s)
	}
	return sigs
}()

// stopSignal reports whether sig stops a process by default: after
// passing one on, the tracer stops itself, so that the shell that runs
// it sees the job stop.
func stopSignal(sig syscall.Signal) bool {
	return sig == unix.SIGTSTP || sig == unix.SIGTTIN || sig == unix.SIGTTOU
}

const ptraceOptions = unix.PTRACE_O_TRACESYSGOOD | unix.PTRACE_O_TRACESECCOMP |
	unix.PTRACE_O_TRACEFORK | unix.PTRACE_O_TRACEVFORK | unix.PTRACE_O_TRACECLONE |
	unix.PTRACE_O_TRACEEXEC | unix.PTRACE_O_EXITKILL

// run starts the helper, attaches to it and traces until every tracee is
// gone. It runs on the locked thread.
func (tr *tracer) run(path string) (Result, error) {
	helper := tr.cfg.Helper
	if helper == "" {
		helper = "/proc/self/exe"
	}
	env := tr.cfg.Env
	if env == nil {
		env = os.Environ()
	}
	henv := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, helperEnv+"=") {
			henv = append(henv, kv)
		}
	}
	henv = append(henv, helperEnv+"="+helperVersion)
	argv := append([]string{"iotrace-helper", path}, tr.cfg.Argv...)

	// The helper and the tracer talk over a socket pair: the helper says
	// it runs (its own exec is over, so the only exec the tracer will see
	// is the program's), the tracer attaches and says go.
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return Result{}, fmt.Errorf("socketpair: %w", err)
	}
	ours := os.NewFile(uintptr(sp[0]), "helper-socket")
	theirs := os.NewFile(uintptr(sp[1]), "helper-socket")
	defer ours.Close()
	defer theirs.Close()
	std := func(f, def *os.File) uintptr {
		if f == nil {
			f = def
		}
		return f.Fd()
	}
	pid, err := syscall.ForkExec(helper, argv, &syscall.ProcAttr{
		Dir: tr.cfg.Dir,
		Env: henv,
		Files: []uintptr{std(tr.cfg.Stdin, os.Stdin), std(tr.cfg.Stdout, os.Stdout),
			std(tr.cfg.Stderr, os.Stderr), theirs.Fd()},
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return Result{}, fmt.Errorf("starting %s: %w", helper, err)
	}
	theirs.Close()
	tr.procMu.Lock()
	tr.mainPid = pid
	tr.procMu.Unlock()
	fail := func(err error) (Result, error) {
		unix.Kill(pid, unix.SIGKILL)
		tr.killAll()
		var ws unix.WaitStatus
		unix.Wait4(pid, &ws, 0, nil)
		return Result{PID: pid}, err
	}
	var b [1]byte
	if n, _ := ours.Read(b[:]); n != 1 || b[0] != helperReady {
		return fail(fmt.Errorf("the tracer's helper %s did not start (does it call ptrace.HelperMain first?)", helper))
	}
	if err := ptraceRaw(unix.PTRACE_SEIZE, pid, 0, ptraceOptions); err != nil {
		return fail(fmt.Errorf("ptrace(PTRACE_SEIZE): %w (is ptrace allowed here? see /proc/sys/kernel/yama/ptrace_scope)", err))
	}
	tr.addTask(&task{tid: pid, tgid: pid})
	tr.procMu.Lock()
	tr.attached = true
	tr.procMu.Unlock()
	if tr.cfg.OnStart != nil {
		tr.cfg.OnStart(pid)
	}
	if _, err := ours.Write([]byte{helperGo}); err != nil {
		return fail(fmt.Errorf("starting the helper: %w", err))
	}
	ours.Close()

	err = tr.loop()
	res := Result{PID: pid}
	switch {
	case tr.status.Signaled():
		res.Signal = tr.status.Signal()
	case tr.status.Exited():
		res.ExitCode = tr.status.ExitStatus()
	}
	return res, err
}

func ptraceRaw(req int, tid int, addr, data uintptr) error {
	_, _, e := unix.RawSyscall6(unix.SYS_PTRACE, uintptr(req), uintptr(tid), addr, data, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

func (tr *tracer) cont(tid int, sig int) {
	ptraceRaw(unix.PTRACE_CONT, tid, 0, uintptr(sig))
}

func (tr *tracer) now() int64 { return int64(time.Since(tr.base)) }

func (tr *tracer) addTask(t *task) {
	tr.tasks[t.tid] = t
	tr.procMu.Lock()
	tr.procs[t.tgid]++
	tr.procMu.Unlock()
}

func (tr *tracer) removeTask(t *task) {
	t.closeUsage()
	delete(tr.tasks, t.tid)
	if tr.last == t {
		tr.last = nil
	}
	tr.procMu.Lock()
	if tr.procs[t.tgid]--; tr.procs[t.tgid] <= 0 {
		delete(tr.procs, t.tgid)
	}
	tr.procMu.Unlock()
}

func (tr *tracer) task(tid int) *task {
	if t := tr.last; t != nil && t.tid == tid {
		return t
	}
	t := tr.tasks[tid]
	if t != nil {
		tr.last = t
	}
	return t
}

// killAll kills every tracee and waits for them, after a failure of the
// tracer itself: a tracee must never run on with the filter and no tracer.
func (tr *tracer) killAll() {
	for tid := range tr.tasks {
		unix.Tgkill(tr.tasks[tid].tgid, tid, unix.SIGKILL)
	}
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(-1, &ws, unix.WALL, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return
		}
	}
}

// loop waits for stops until no tracee is left.
func (tr *tracer) loop() error {
	var ws unix.WaitStatus
	var stops uint
	lastYield := tr.now()
	for {
		// Go's sysmon takes a goroutine that has run on one schedule tick
		// for 10ms for one that hogs its P: it preempts it and, as the
		// tracer is mostly in wait4, takes its P away at every wait, and
		// then polls every 20µs instead of backing off to 10ms. Yielding
		// every 2ms (a stop takes tens of µs) keeps it quiet.
		if stops++; stops%8 == 0 {
			if now := tr.now(); now-lastYield > int64(2*time.Millisecond) {
				runtime.Gosched()
				lastYield = now
			}
		}
		tid, err := tr.waiter.wait(-1, &ws)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if errors.Is(err, unix.ECHILD) {
				return nil
			}
			tr.killAll()
			return fmt.Errorf("wait4: %w", err)
		}
		t := tr.task(tid)
		if ws.Exited() || ws.Signaled() {
			if t != nil {
				status := int64(ws.ExitStatus())
				if ws.Signaled() {
					status = 128 + int64(ws.Signal())
				}
				tr.gone(t, status)
			} else {
				delete(tr.early, tid)
				tr.exited[tid] = true
			}
			if tid == tr.mainPid {
				tr.status = ws
			}
			continue
		}
		if !ws.Stopped() {
			continue
		}
		if t == nil {
			// A new child can stop before its creator's fork event: keep it
			// stopped until that event says what it shares.
			tr.early[tid] = true
			continue
		}
		sig := ws.StopSignal()
		event := int(ws) >> 16 & 0xff
		resumed := t.resumed
		t.resumed = 0
		switch {
		case sig == unix.SIGTRAP|0x80:
			tr.onExit(t)
		case sig == unix.SIGTRAP && event == unix.PTRACE_EVENT_SECCOMP:
			st := tr.now()
			if resumed > 0 && t.started {
				tr.acct.RoundTrip(t.idx, st-resumed)
			}
			tr.onSeccomp(t, st)
		case sig == unix.SIGTRAP && (event == unix.PTRACE_EVENT_FORK || event == unix.PTRACE_EVENT_VFORK || event == unix.PTRACE_EVENT_CLONE):
			tr.onFork(t, event)
			tr.cont(tid, 0)
		case sig == unix.SIGTRAP && event == unix.PTRACE_EVENT_EXEC:
			tr.onExec(t)
			tr.cont(tid, 0)
		case event == unix.PTRACE_EVENT_STOP:
			switch sig {
			case unix.SIGSTOP, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU:
				// A group-stop: stay stopped, but let us hear of SIGCONT.
				ptraceRaw(unix.PTRACE_LISTEN, tid, 0, 0)
			default:
				tr.cont(tid, 0)
			}
		case event != 0:
			tr.cont(tid, 0)
		default:
			// Signal-delivery-stop: deliver it.
			if int(sig) < len(tr.sigSeen) {
				tr.sigSeen[sig].Store(tr.now() + 1) // 0 is never
			}
			tr.cont(tid, int(sig))
		}
	}
}

// gone handles the end of a task, with its exit status (128+N: killed
// by signal N).
func (tr *tracer) gone(t *task, status int64) {
	if t.restart && t.rec {
		t.ev.Ret = -int64(unix.EINTR)
		tr.emit(t)
	}
	if t.started {
		tr.procEvent(trace.OpExit, t.idx, status, 0, 0)
	}
	tr.removeTask(t)
}

// procEvent emits a process event (fork, clone, exec, exit) of thread
// idx, at this time, and the descriptor tables follow it.
func (tr *tracer) procEvent(op trace.Op, idx uint32, ret int64, flags uint32, path trace.PathID) {
	ev := trace.Event{Op: op, Rank: tr.rank, Thread: idx, Start: tr.acct.Order(tr.now() - tr.acct.Debt), Ret: ret, Flags: flags, Path: path}
	tr.st.Apply(&ev)
	tr.add(&ev)
}

// forkFlags are the clone flags a fork or clone event keeps.
const forkFlags = unix.CLONE_FILES | unix.CLONE_VFORK | unix.CLONE_VM | unix.CLONE_THREAD

func (tr *tracer) onFork(t *task, event int) {
	// The gap this thread's usage reading began holds the start of a
	// process or thread now, whose run it may sleep through (a shell's or
	// git's wait for its command): no wait for its mapped pages, whatever
	// it read from the device meanwhile (pagein.go).
	t.fw = false
	msg, err := unix.PtraceGetEventMsg(t.tid)
	flags := t.cloneFlags
	t.cloneFlags = 0
	if event == unix.PTRACE_EVENT_VFORK {
		flags |= unix.CLONE_VFORK | unix.CLONE_VM // vfork(2) has no flags argument
	}
	if err != nil {
		return
	}
	child := int(msg)
	if tr.exited[child] {
		// Killed before this event: nothing left to follow.
		delete(tr.exited, child)
		return
	}
	c := &task{tid: child, tgid: child, started: t.started}
	if flags&unix.CLONE_THREAD != 0 {
		c.tgid = t.tgid
	}
	if c.started {
		c.idx = uint32(len(tr.threads))
		tr.threads = append(tr.threads, Thread{Index: c.idx, PID: c.tgid, TID: child, Parent: int(t.idx)})
		// Before any event of the new task: it runs only from now on.
		op := trace.OpFork
		if flags&unix.CLONE_THREAD != 0 {
			op = trace.OpClone
		}
		tr.procEvent(op, t.idx, int64(c.idx), uint32(flags&forkFlags), 0)
	}
	tr.addTask(c)
	if tr.early[child] {
		delete(tr.early, child)
		tr.cont(child, 0)
	}
}

func (tr *tracer) onExec(t *task) {
	tr.last = t
	if msg, err := unix.PtraceGetEventMsg(t.tid); err == nil && int(msg) != t.tid {
		// A thread other than the leader called execve and took over the
		// leader's thread id; the leader is gone without a report (it
		// ends as the other threads do, with status 0).
		if ot := tr.tasks[int(msg)]; ot != nil {
			if t.started {
				tr.procEvent(trace.OpExit, t.idx, 0, 0, 0)
			}
			tr.removeTask(t)
			tr.removeTask(ot)
			ot.tid, ot.tgid = t.tid, t.tid
			tr.addTask(ot)
			t = ot
			tr.last = t
		}
	}
	t.inCall, t.restart = false, false
	t.closeUsage() // the process's mappings are gone (and a thread may have taken the leader's id)
	if !tr.started {
		if t.tid != tr.mainPid {
			return
		}
		// The helper became the program: tracing starts.
		tr.started, t.started = true, true
		t.idx = 0
		tr.threads = append(tr.threads, Thread{Index: 0, PID: t.tid, TID: t.tid, Parent: -1})
		return
	}
	if !t.started {
		return
	}
	// execve gives the process its own table (if it shared one) without
	// the close-on-exec descriptors: the exec event says so, and what
	// /proc says is open then is the truth (a close-on-exec flag set by a
	// call the tracer does not see).
	var path trace.PathID
	if exe, err := tr.proc.readlink(t.tid, "exe", -1); err == nil {
		path = tr.sink.Intern(string(exe))
	}
	tr.procEvent(trace.OpExec, t.idx, 0, 0, path)
	if open, err := openFDs(t.tid); err == nil {
		var gone []int32
		tr.st.Each(t.idx, func(fd int32, _ *desc) {
			if !open[fd] {
				gone = append(gone, fd)
			}
		})
		for _, fd := range gone {
			tr.closeFD(t, fd)
		}
	}
}

// onSeccomp handles the stop the filter asked for at a traced call,
// which the tracer took up at st: a stop it does not record costs the
// program the tracer's time since.
func (tr *tracer) onSeccomp(t *task, st int64) {
	var nr uint64
	var args [6]uint64
	if !tr.useRegs {
		if err := tr.getInfo(t.tid); err == nil && tr.info.Op == unix.PTRACE_SYSCALL_INFO_SECCOMP {
			nr, args = tr.info.Nr, tr.info.Args
		} else if errors.Is(err, unix.EIO) || errors.Is(err, unix.EINVAL) {
			tr.useRegs = true // a kernel before 5.3
		} else {
			tr.cont(t.tid, 0)
			return
		}
	}
	if tr.useRegs {
		if err := tr.regs.entry(t.tid, &nr, &args); err != nil {
			tr.cont(t.tid, 0)
			return
		}
	}
	k := tr.calls.kind(nr)
	if t.fw {
		t.fwStops++ // taken back below if the call is recorded
	}
	if !t.started || k == kNone {
		if t.started {
			tr.acct.StopTook(t.idx, tr.now()-st)
		}
		tr.resume(t)
		return
	}
	s0 := tr.now()
	take := tr.acct.Take(s0)
	start := s0 - tr.acct.Debt - take
	again := false
	if t.restart {
		t.restart = false
		if t.k == k && t.a[0] == args[0] && t.a[1] == args[1] && t.a[2] == args[2] {
			// The kernel restarts the call a signal interrupted: one call.
			start, again = t.ev.Start, true
		} else if t.rec {
			t.ev.Ret = -int64(unix.EINTR)
			tr.emit(t)
		}
	}
	if !again {
		start = tr.acct.Order(start)
	}
	if tr.entry(t, k, &args, start) {
		if t.moved != "" {
			tr.movedSize(t)
		}
		tr.acct.Started(s0, take)
		if !again {
			t.sReal = s0
			if t.fw && t.rec {
				t.fwStops--
				// A wait for mapped pages since the thread's previous
				// recorded call: read at this stop, the tracer's
				// bookkeeping as reading the call's paths is.
				tr.pagein(t, s0)
			}
			if tr.acct.C.Samples > 0 {
				// The tracer's bookkeeping of the call (reading its
				// paths), measured, is neither the call's time nor the
				// program's.
				now := tr.now()
				tr.acct.Bookkeeping(now - s0)
				t.sReal = now
			}
		}
		t.inCall = true
		ptraceRaw(unix.PTRACE_SYSCALL, t.tid, 0, 0)
		return
	}
	tr.acct.StopTook(t.idx, tr.now()-st)
	tr.resume(t)
}

// resume lets t run on after a stop at a call not recorded, or at a
// call's exit, and notes when (task.resumed: before the resume, whose
// own cost, a wake-up of the program's processor, is the program's
// wait).
func (tr *tracer) resume(t *task) {
	t.resumed = tr.now()
	tr.cont(t.tid, 0)
}

func (tr *tracer) getInfo(tid int) error {
	return ptraceRaw(unix.PTRACE_GET_SYSCALL_INFO, tid, unsafe.Sizeof(tr.info), uintptr(unsafe.Pointer(&tr.info)))
}

// Return values of a call the kernel will restart (or turn into EINTR).
const (
	errRestartSys     = 512
	errRestartNoIntr  = 513
	errRestartNoHand  = 514
	errRestartBlock   = 516
	errRestartLargest = errRestartBlock
)

// onExit handles the exit stop of a call stopped at its entry.
func (tr *tracer) onExit(t *task) {
	if !t.inCall {
		tr.cont(t.tid, 0)
		return
	}
	t.inCall = false
	if t.fw && !t.rec {
		t.fwStops++
	}
	var ret int64
	if tr.useRegs {
		r, err := tr.regs.exit(t.tid)
		if err != nil {
			tr.cont(t.tid, 0)
			return
		}
		ret = r
	} else {
		if err := tr.getInfo(t.tid); err != nil || tr.info.Op != unix.PTRACE_SYSCALL_INFO_EXIT {
			tr.cont(t.tid, 0)
			return
		}
		ret = int64(tr.info.Nr)
	}
	end := tr.now()
	if ret <= -errRestartSys && ret >= -errRestartLargest {
		t.restart = true
		t.ev.Dur = end - t.sReal
		tr.cont(t.tid, 0)
		return
	}
	t.ev.Ret = ret
	t.ev.Dur = tr.acct.EndedOn(t.idx, t.sReal, end, t.rec, t.rec && ret >= 0 && capture.Cheap(&t.ev))
	tr.exit(t, ret)
	if t.rec {
		tr.emit(t)
		tr.markUsage(t)
	}
	tr.resume(t)
}

// emit writes the event of t's call.
func (tr *tracer) emit(t *task) { tr.add(&t.ev) }

// add writes ev. Events go to the sink in the order they are added,
// sorted by start time within a batch (stably: an event added before
// another with the same start stays before it).
func (tr *tracer) add(ev *trace.Event) {
	tr.b.add(ev)
	tr.events++
}

// forward passes the signals sent to the tracer on to the program. A
// terminal sends SIGINT to the whole foreground process group, program
// included; a signal the program got at about the same time is not sent
// again.
func (tr *tracer) forward(sigs chan os.Signal, stop, done chan struct{}) {
	defer close(done)
	for {
		select {
		case <-stop:
			return
		case s := <-sigs:
			sig, ok := s.(syscall.Signal)
			if !ok {
				continue
			}
			at := tr.now()
			got := func() bool {
				v := tr.sigSeen[sig].Load()
				return v != 0 && v >= at-int64(200*time.Millisecond)
			}
			seen := false
			for i := 0; i < 10 && !seen; i++ {
				if got() {
					seen = true
					break
				}
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
			if !seen {
				tr.procMu.Lock()
				for i := 0; tr.mainPid == 0 && i < 200; i++ {
					// Not started yet: it will be in a moment.
					tr.procMu.Unlock()
					time.Sleep(5 * time.Millisecond)
					tr.procMu.Lock()
				}
				if _, ok := tr.procs[tr.mainPid]; ok || (tr.mainPid != 0 && !tr.attached) {
					unix.Kill(tr.mainPid, sig)
				} else {
					for pid := range tr.procs {
						unix.Kill(pid, sig)
					}
				}
				tr.procMu.Unlock()
			}
			if stopSignal(sig) {
				// Stop as the program does (give it a moment to take the
				// signal first), so that the shell sees the job stop and
				// takes the terminal back; its SIGCONT wakes both.
				for i := 0; i < 20 && !got(); i++ {
					select {
					case <-stop:
						return
					case <-time.After(5 * time.Millisecond):
					}
				}
				unix.Kill(os.Getpid(), unix.SIGSTOP)
			}
		}
	}
}
