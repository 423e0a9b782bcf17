package record

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/iotrace/iotrace/capture"
	"github.com/iotrace/iotrace/capture/preload"
	"github.com/iotrace/iotrace/internal/outfile"
	"github.com/iotrace/iotrace/internal/sigquit"
	"github.com/iotrace/iotrace/launcher"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
	"github.com/iotrace/iotrace/trace/format"
	"golang.org/x/sys/unix"
)

// SpoolError is the error of a preload recording whose spools could not
// be encoded: they are kept in Dir for FromSpool.
type SpoolError struct {
	Dir  string
	Link string // the link to Dir beside the output (SpoolLink), if any
	Out  string // the output
	Err  error
}

func (e *SpoolError) Error() string { return e.Err.Error() }
func (e *SpoolError) Unwrap() error { return e.Err }

// Preload runs argv with the preload shim and encodes the spools of its
// processes once it, and every process it left running, has ended. While
// the program runs, SIGINT, SIGTERM, SIGHUP and SIGQUIT go to it; after, one
// of them stops the waiting for the processes it left. The error is
// ErrNotFound (wrapped) when the program cannot be run, a *SpoolError when
// the spools could not be encoded (Result.Status is the program's), or an
// error before anything ran.
func Preload(o Options, argv []string) (Result, error) {
	rk, rules, err := o.setup()
	if err != nil {
		return Result{}, err
	}
	if err := writable(o.Out, rk); err != nil {
		return Result{}, err
	}
	log := o.log()
	libs, err := buildShim(log, rk)
	if err != nil {
		return Result{}, err
	}
	if libs.MPIErr != nil {
		level := slog.LevelDebug
		if rk.Size > 1 {
			level = slog.LevelInfo
		}
		log.Log(nil, level, libs.MPIErr.Error())
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return Result{Status: 127}, notFound{err}
	}
	spool, temp, err := spoolDir(o.Spool)
	if err != nil {
		return Result{}, err
	}
	// A killed record leaves its spools: the owner file says whose they
	// are, and a temporary directory is found from the output's name.
	if err := writeOwner(spool, argv, o.Out, rk); err != nil {
		return Result{}, err
	}
	link := ""
	if temp {
		link = makeSpoolLink(log, SpoolLink(o.Out, rk), spool)
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args = argv
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(append(os.Environ(), "LD_PRELOAD="+libs.Preload(os.Getenv("LD_PRELOAD"))), preload.Env(spool)...)
	if o.All {
		cmd.Env = append(cmd.Env, "IOTRACE_ALL=1")
	}
	// The shim measures the rank's clock in MPI_Init and MPI_Finalize.
	cmd.Env = append(cmd.Env, preloadClockEnv(log, o.ClockSync, rk, libs)...)
	// Spool files made ahead, which the program's processes take instead
	// of creating their own (preload.Pool).
	pool, perr := preload.StartPool(spool)
	if perr != nil {
		log.Debug(perr.Error())
	} else {
		cmd.Env = append(cmd.Env, preload.PoolEnv()...)
	}
	status, err := runPreloaded(cmd, spool, log)
	if pool != nil {
		if perr := pool.Stop(); perr != nil {
			log.Debug(perr.Error() + " (the processes made their spools themselves)")
		}
	}
	if err != nil {
		os.Remove(filepath.Join(spool, OwnerFile))
		if temp {
			preload.RemoveDir(spool)
		}
		removeSpoolLink(link, spool)
		return Result{}, err
	}
	res, err := encode(o, rk, rules, spool, argv, status)
	// Only a record killed (before it got here) leaves an owner file:
	// --from-spool says so.
	os.Remove(filepath.Join(spool, OwnerFile))
	if err == nil && temp {
		err = preload.RemoveDir(spool)
	}
	if err != nil {
		return res, &SpoolError{Dir: spool, Link: link, Out: o.Out, Err: err}
	}
	removeSpoolLink(link, spool)
	return res, nil
}

// writable checks, before the program runs, that the trace can be
// written where it goes (capture.OutputPath): a record with ptrace makes
// its file before the program starts, the encoder of a preload record
// after the program has ended, where a name that cannot be written cost
// the user the run (its spools kept for --from-spool, but nothing to
// show). The probe leaves nothing: a file without a name
// (outfile.Create), or a temporary one removed.
func writable(out string, rk launcher.Rank) error {
	file, _, err := capture.OutputPath(out, rk)
	if err != nil {
		return err
	}
	f, err := outfile.Create(file)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = &fs.PathError{Op: "open", Path: file, Err: pe.Err}
		}
		return err
	}
	f.Abort()
	return nil
}

// makeSpoolLink links name to the spool directory dir, and returns name
// ("" when it cannot: the name is taken by something else than the link
// a killed record left).
func makeSpoolLink(log *slog.Logger, name, dir string) string {
	if old, err := os.Readlink(name); err == nil {
		if d, own, ok, err := ResolveSpool(name); err == nil && ok && own.alive() {
			log.Warn(fmt.Sprintf("%s links to the spools of another record that runs (iotrace pid %d, %s): not linked to this one's, in %s", name, own.PID, d, dir))
			return ""
		}
		if _, err := os.Stat(old); err == nil {
			log.Info(fmt.Sprintf("%s linked to the spools a killed record left in %s; they stay there ('iotrace record --from-spool %s' encodes them)", name, old, old))
		}
		os.Remove(name)
	}
	if err := os.Symlink(dir, name); err != nil {
		log.Debug(fmt.Sprintf("no link to the spool directory %s: %v", dir, err))
		return ""
	}
	return name
}

// removeSpoolLink removes the link makeSpoolLink made, if it still links
// to dir.
func removeSpoolLink(name, dir string) {
	if name == "" {
		return
	}
	if l, err := os.Readlink(name); err == nil && l == dir {
		os.Remove(name)
	}
}

// FromSpool encodes the spools a killed record left in the directory
// arg names (or a link to it, OUT.spool). A directory with an owner file
// whose recorder still runs is refused; when outGiven is false the output
// is the owner file's.
func FromSpool(o Options, arg string, outGiven bool) (Result, error) {
	dir, own, ok, err := ResolveSpool(arg)
	if err != nil {
		return Result{}, err
	}
	log := o.log()
	if ok {
		if own.alive() {
			return Result{}, fmt.Errorf("%s: its recorder, iotrace pid %d, still runs and encodes the spools when the program ends (stop it to encode them now)", arg, own.PID)
		}
		if !outGiven {
			o.Out = own.Out
		}
	}
	rk, rules, err := o.setup()
	if err != nil {
		return Result{}, err
	}
	if ok && o.Rank == nil && !rk.Known {
		rk = own.rank() // the killed record's, not this shell's
	}
	if ok {
		log.Info(fmt.Sprintf("the spools in %s are those of a record that was killed (iotrace pid %d, started %s, running %s) before it encoded them: encoding them into %s",
			dir, own.PID, printable(own.Started), commandLine(own.Command), printable(o.Out)))
	}
	if pids := preload.LiveProducers(dir, map[string]bool{}); len(pids) > 0 {
		log.Warn(fmt.Sprintf("%s of the program still running (%s): the trace holds their calls until now", processes(len(pids)), pidList(pids)))
	}
	if err := preload.Recover(dir); err != nil {
		return Result{}, err
	}
	preload.RemovePool(dir)
	if n, _ := preload.FindSpools(dir); n == 0 && ok {
		return Result{}, fmt.Errorf("no process wrote a spool in %s: its recorder, iotrace pid %d, was killed before the program recorded a call", dir, own.PID)
	}
	return encode(o, rk, rules, dir, nil, 0)
}

// spoolDir makes the spool directory: dir, or a temporary one.
func spoolDir(dir string) (string, bool, error) {
	temp := dir == ""
	var err error
	if temp {
		if dir, err = os.MkdirTemp("", "iotrace-spool-"); err != nil {
			return "", false, err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", false, fmt.Errorf("--spool: %w", err)
	} else if n, _ := preload.FindSpools(dir); n > 0 {
		return "", false, fmt.Errorf("--spool %s holds spools of another run: remove them or use another directory", dir)
	}
	dir, err = filepath.Abs(dir)
	return dir, temp, err
}

// signalGrace is how long record waits, after a signal it got while the
// program runs, for the program to end before it encodes what the spools
// hold.
var signalGrace = 5 * time.Second

// runPreloaded runs cmd (its processes write their spools themselves),
// then waits for the processes it left running, and returns its exit
// status.
//
// SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to record while the program
// runs go to the program once: one a terminal sent to its foreground
// process group (SIGINT, SIGQUIT, SIGHUP when record is in the terminal's
// foreground group, the program with it) reached the program already and
// is not sent again. If the program has not ended signalGrace after the
// first, record stops waiting: the trace holds the calls until then, and
// the status is 128+N for signal N.
func runPreloaded(cmd *exec.Cmd, spool string, log *slog.Logger) (int, error) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	// The processes the program leaves running (a daemon's double fork,
	// a background job) become this process's children instead of
	// init's, so that it knows them from their fork on, before they
	// write a spool.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		log.Debug(fmt.Sprintf("%v: processes the program leaves running are waited for only once they record", err))
	}
	if err := cmd.Start(); err != nil {
		signal.Stop(sigs)
		return 0, err
	}
	release := sigquit.Hold()
	defer release()
	fg := foreground()
	// While the program runs, signals go to it; once it has ended, one
	// stops the waiting for the processes it left running.
	ended := make(chan struct{})
	stop := make(chan os.Signal, 1)
	grace := make(chan struct{}) // closed signalGrace after the first signal
	first := make(chan syscall.Signal, 1)
	fwdDone := make(chan struct{})
	go func() {
		defer close(fwdDone)
		got := false
		for s := range sigs {
			sig, _ := s.(syscall.Signal)
			select {
			case <-ended:
				select {
				case stop <- s:
				default:
				}
				continue
			default:
			}
			if !got {
				got = true
				first <- sig
				time.AfterFunc(signalGrace, func() { close(grace) })
			}
			if fg && sig != syscall.SIGTERM && samePgrp(cmd.Process.Pid) {
				log.Debug(fmt.Sprintf("%v from the terminal: the program, in the same process group, got it too", sig))
				continue
			}
			cmd.Process.Signal(s)
		}
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-waited:
	case <-grace:
		sig := <-first
		close(ended)
		signal.Stop(sigs)
		close(sigs)
		<-fwdDone
		log.Warn(fmt.Sprintf("the program (pid %d) did not end within %v of %v: the trace holds its calls until now; it runs on, its later calls not recorded",
			cmd.Process.Pid, signalGrace, sigName(sig)))
		return 128 + int(sig), nil
	}
	close(ended)
	var sig syscall.Signal
	select {
	case sig = <-first:
	default:
	}
	stopLeft := (<-chan os.Signal)(stop)
	if sig != 0 {
		// A signal ended the run: the processes the program left get the
		// rest of the grace.
		gs := make(chan os.Signal, 1)
		go func() {
			select {
			case s := <-stop:
				gs <- s
			case <-grace:
				gs <- sig
			}
		}()
		stopLeft = gs
	}
	if left := waitLeft(log, spool, stopLeft); len(left) > 0 {
		log.Info(fmt.Sprintf("stopped waiting: %s still running (%s); their later calls are not recorded", processes(len(left)), pidList(left)))
	}
	signal.Stop(sigs)
	close(sigs)
	<-fwdDone
	status := 0
	var ee *exec.ExitError
	switch {
	case errors.As(werr, &ee):
		status = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			status = 128 + int(ws.Signal())
		}
	case werr != nil:
		return 0, werr
	}
	if sig != 0 {
		how := fmt.Sprintf("exit status %d", status)
		if status > 128 {
			how = "killed by " + sigName(syscall.Signal(status-128))
		}
		log.Info(fmt.Sprintf("%v: the program ended (%s); encoding its calls", sigName(sig), how))
	}
	return status, nil
}

// sigName is a signal's name: SIGTERM.
func sigName(s syscall.Signal) string {
	if n := unix.SignalName(s); n != "" {
		return n
	}
	return fmt.Sprintf("signal %d", int(s))
}

// foreground says whether this process is in the foreground process
// group of its controlling terminal, where a terminal's SIGINT, SIGQUIT
// and SIGHUP reach every process of the group.
func foreground() bool {
	f, err := os.Open("/dev/tty")
	if err != nil {
		return false
	}
	defer f.Close()
	pg, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
	return err == nil && pg == unix.Getpgrp()
}

// samePgrp says whether process pid is in this process's group.
func samePgrp(pid int) bool {
	pg, err := unix.Getpgid(pid)
	return err == nil && pg == unix.Getpgrp()
}

// waitLeft waits, after the program has ended, for the processes it left
// running (a daemon's, a background job's: their calls are recorded while
// they run): this process's children (it is their subreaper), which it
// reaps, and the processes that write a spool in the spool directory. It
// says so once after a second; a signal on stop ends the waiting. It
// returns the pids of the processes still running then.
func waitLeft(log *slog.Logger, spool string, stop <-chan os.Signal) []int {
	gone := map[string]bool{}
	start := time.Now()
	said := false
	running := func() []int {
		pids := preload.LiveProducers(spool, gone)
		for _, p := range children() {
			if !slices.Contains(pids, p) {
				pids = append(pids, p)
			}
		}
		slices.Sort(pids)
		return pids
	}
	for {
		pids := running()
		if len(pids) == 0 {
			return nil
		}
		if !said && time.Since(start) >= time.Second {
			log.Info(fmt.Sprintf("waiting for %s the program left running (%s); interrupt to stop", processes(len(pids)), pidList(pids)))
			said = true
		}
		select {
		case <-stop:
			return running()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// children reaps the children of this process that ended and returns
// those that run (all but zombies). When wait4 says there is no child at
// all (ECHILD: the program left none, the common case), /proc is not
// read: listing each thread's directory, as a glob of
// /proc/self/task/*/children did, was a tenth of a record's fixed cost.
func children() []int {
	var ws unix.WaitStatus
	for {
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if err == unix.ECHILD {
			return nil
		}
		if pid <= 0 || err != nil {
			break
		}
	}
	var pids []int
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(f); err == nil && !slices.Contains(pids, p) && !zombie(p) {
				pids = append(pids, p)
			}
		}
	}
	return pids
}

func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z' || b[i+2] == 'X'
}

func processes(n int) string {
	if n == 1 {
		return "1 process"
	}
	return fmt.Sprintf("%d processes", n)
}

func pidList(pids []int) string {
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = strconv.Itoa(p)
	}
	if len(pids) == 1 {
		return "pid " + s[0]
	}
	return "pids " + strings.Join(s, " ")
}

// encode writes the trace of the spools in dir: one rank file per rank
// the processes recorded (or one file for a lone process).
func encode(o Options, rk launcher.Rank, rules *filter.Paths, dir string, argv []string, status int) (Result, error) {
	defer oneP()()
	res := Result{Status: status}
	log := o.log()
	if err := preload.Recover(dir); err != nil { // spools cut to what their processes wrote
		return res, err
	}
	run, err := preload.ReadDir(dir, rk.Rank)
	if err != nil {
		return res, err
	}
	defer run.Close()
	run.RawTimes = o.RawTimes
	for _, w := range run.Warnings {
		log.Warn(w)
	}
	if started, replacing := run.Execs(); started+replacing > 0 && !o.RawTimes {
		// A program that started others (a shell, make, git): what the
		// shim cost each start beyond its records, as given, or measured
		// now on the spools' file system (0.1-0.2 s each way).
		run.ImageCost, run.ReplaceCost = setStartCost(o, log, dir, started, replacing)
	}
	if len(run.Spools) == 0 {
		return res, fmt.Errorf("no process wrote a spool in %s: the program is statically linked, clears LD_PRELOAD, or did not start", dir)
	}
	if argv == nil {
		if c := run.Spools[0].Header.Cmdline; len(c) > 0 {
			argv = c
		}
	}
	host, _ := os.Hostname()
	meta := trace.Meta{Command: argv, Clock: "CLOCK_MONOTONIC", Epoch: run.Epoch(), Creator: "iotrace record --preload"}
	size := max(run.Size(), rk.Size)
	var firstErr error
	var un Unseen
	for _, r := range run.Ranks() {
		rank := launcher.Rank{Rank: r, Known: rk.Known || run.Size() > 0, Size: size, Source: rk.Source}
		if len(run.Ranks()) > 1 && rank.Size < 2 {
			rank.Size = len(run.Ranks())
		}
		st, file, err := encodeRank(o.Out, run, r, rank, meta, host, rules, log)
		if err != nil {
			return res, err
		}
		if st.err == nil {
			o.sayRecorded(log, file, rank, st.tally)
		}
		res.Files = append(res.Files, file)
		if st.err != nil && firstErr == nil {
			firstErr = st.err
		}
		un.MmapFiles += st.MmapFiles
		un.IOUring = un.IOUring || st.Unseen&preload.UnseenIOUring != 0
		un.AIO = un.AIO || st.Unseen&preload.UnseenAIO != 0
		un.POSIXAIO = un.POSIXAIO || st.Unseen&preload.UnseenPOSIXAIO != 0
		how := fmt.Sprintf("exit status %d", status)
		if status > 128 {
			how = fmt.Sprintf("killed by signal %d", status-128)
		}
		log.Debug(fmt.Sprintf("%s: rank %d: %d events from %d records of %d processes, %d threads; %s",
			file, r, st.Events, st.Records, st.Processes, st.Threads, how))
	}
	if firstErr != nil {
		return res, firstErr
	}
	un.report(log)
	var procs []string
	for _, s := range run.Spools {
		procs = append(procs, fmt.Sprintf("%d(%s)", s.Header.PID, strings.Join(s.Header.Cmdline, " ")))
	}
	log.Debug("processes: " + strings.Join(procs, ", "))
	return res, nil
}

// oneP runs the Go scheduler on one P (GOMAXPROCS 1) until the function
// it returns is called, which sets back what was. The encode is one
// goroutine's work (read, merge, follow, compress, write, in turn); with
// a second P, the runtime woke threads to look for other work and to
// share the GC, and the trace writer kept a zstd encoder per P: on a
// spool of IOR's pattern (204,951 events) 29-30 ms of CPU against 26
// with one, 219-266 context switches against 93-97, 2,100-2,400 page
// faults against 1,930, for the same bytes. Where the machine's CPUs are
// the job's (ranks on every core), that was CPU taken from the other
// ranks' helpers.
func oneP() func() {
	prev := runtime.GOMAXPROCS(1)
	return func() { runtime.GOMAXPROCS(prev) }
}

// rankStats are the encoder's counts of one rank, and its error.
type rankStats struct {
	preload.Stats
	tally *tally
	err   error
}

// encodeRank writes rank r's trace file under out.
func encodeRank(out string, run *preload.Run, r uint32, rank launcher.Rank, meta trace.Meta, host string, rules *filter.Paths, log *slog.Logger) (rankStats, string, error) {
	cost := run.Cost(r)
	if cost.Samples > 0 {
		meta.Corrected = cost.Note("preload calibration")
	}
	w, file, err := capture.Create(out, rank, meta, host, 0)
	if err != nil {
		return rankStats{}, "", err
	}
	if err := w.SetRankInfo(r, meta.Epoch, host, run.MainPID(r)); err != nil {
		w.Close()
		return rankStats{}, "", fmt.Errorf("%s: %w", file, err)
	}
	sink := newTally(w.Rank(r))
	st, eerr := run.Encode(r, sink, rules)
	if clk, ok := capture.Clock(st.Clock, meta.Epoch, capture.ClockMethodPreload); ok && eerr == nil {
		eerr = w.SetRankClock(r, clk)
	}
	if cost.Samples > 0 && eerr == nil {
		eerr = w.SetRankCost(r, cost.Format(st.Corrections))
	}
	if cerr := w.Close(); eerr == nil && cerr != nil {
		eerr = fmt.Errorf("%s: %w", file, cerr)
	}
	var se *preload.SpoolError
	if errors.As(eerr, &se) {
		// A damaged spool: what was before the damage is in the trace.
		log.Warn(fmt.Sprintf("%v; the events before it are in %s", eerr, file))
		eerr = nil
	}
	// Each only when it happened: a record killed with its program has
	// calls in progress, not a spool that could not grow.
	if st.Incomplete > 0 {
		log.Info(fmt.Sprintf("%s: %s in progress when a process ended (killed, or it exited from another thread) are not in the trace", file, count(st.Incomplete, "call")))
	}
	if st.Dropped > 0 {
		log.Info(fmt.Sprintf("%s: %s lost: the spool could not grow (the disk is full, the process chrooted, or a sandbox forbids the calls)", file, count(st.Dropped, "record")))
	}
	return rankStats{Stats: st, tally: sink, err: eerr}, file, nil
}

// setStartCost returns the shim's costs per process start to take out
// (Run.ImageCost, Run.ReplaceCost): --start-cost's, or measured
// (preload.ImageCost) for the kinds of start the run holds; none, with a
// warning, where the measurement fails or the machine is too busy.
func setStartCost(o Options, log *slog.Logger, dir string, started, replacing int) (image, replace int64) {
	if o.StartCost != nil {
		return int64(*o.StartCost), int64(*o.StartCost)
	}
	libs, err := preload.Build()
	if err == nil && started > 0 {
		image, err = preload.ImageCost(libs, dir, false)
	}
	if err == nil && replacing > 0 {
		replace, err = preload.ImageCost(libs, dir, true)
	}
	if err != nil {
		log.Warn(fmt.Sprintf("the shim's cost per process start is not taken out of the times: %v", err))
		return 0, 0
	}
	log.Debug(fmt.Sprintf("the shim's cost per process start: %s at %d starts, %s at %d execs that replaced an image with records",
		format.Nanos(image), started, format.Nanos(replace), replacing))
	return image, replace
}
