package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/iotrace/iotrace/capture"
	"github.com/iotrace/iotrace/capture/preload"
	"github.com/iotrace/iotrace/capture/ptrace"
	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/trace"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

type preloadFlags struct {
	on        bool
	spool     string
	fromSpool string
}

func addPreloadFlags(c *cobra.Command, p *preloadFlags) {
	c.Flags().BoolVar(&p.on, "preload", false, "record with the preload shim (LD_PRELOAD) instead of ptrace: POSIX, stdio, MPI-IO and MPI communication calls")
	c.Flags().StringVar(&p.spool, "spool", "", "with --preload: keep the raw per-process spool files in this directory (default: a temporary one, removed)")
	c.Flags().StringVar(&p.fromSpool, "from-spool", "", "encode the spool files left in this directory (a record that was killed) instead of running a program")
	c.Long += `

Preload. --preload runs CMD with a small C library loaded into it and every
process it starts (LD_PRELOAD) instead of ptrace: a call costs a fraction of a
microsecond instead of a few, and MPI calls are seen. It records the open
family (and the _FORTIFY_SOURCE entry points such as __open_2 and __read_chk),
close, close_range, read/write/pread/pwrite and their vector forms, lseek,
fsync, fdatasync, syncfs, sync, ftruncate, truncate, fallocate, posix_fadvise,
copy_file_range, sendfile, splice, mmap of files, the dup family and fcntl,
the stat family, access, unlink, rename, mkdir, rmdir, link, symlink,
readlink, the files the mkstemp family, tmpfile and opendir open, readdir's
reads of a directory (getdents64, from the block glibc's DIR holds); stdio streams
on files as the system calls stdio makes for them (a refill of a stream's
buffer is a read, a flush a write, fopen an open, fclose a close), as a
tracer of system calls sees them; and, through the MPI profiling interface
(PMPI, which Open MPI's Fortran bindings use too), MPI-IO calls and MPI
communication (send/recv and their non-blocking forms with waits, sendrecv,
barrier, bcast, reduce, allreduce, gather(v), scatter(v), allgather(v),
alltoall(v), communicator creation). Ranks and peers are ranks of
MPI_COMM_WORLD, as MPI_Comm_rank gives them; communicators get ids every
member computes alike. POSIX calls the MPI library makes inside an MPI-IO
call are marked IN_MPIIO, so that reports do not count that I/O twice. Not
seen: statically linked programs, calls made with syscall(2) and those glibc
makes to itself (the directory reads of scandir, fts and nftw, scanf's
refills, the stdio of dprintf), I/O through mmap'd memory, io_uring, Linux
AIO and POSIX AIO: record says so when the program mapped recorded files or
set those up (through liburing, libaio, syscall(2), aio_read and its kin).

The shim is C, built on first use with cc (and mpi.h from mpicc for the MPI
part) into ~/.cache/iotrace/preload (IOTRACE_CACHE). Each process writes
compact records (about a dozen bytes a call) to its own spool file, mapped in
memory, so a process that crashes keeps every call it finished. iotrace does
nothing while CMD runs; it encodes the spools into the trace when CMD has
ended, and the processes CMD left running (a daemon, a background job) too:
iotrace waits for them (it is their subreaper), says so after a second, and
stops waiting at an interrupt (their later calls are then not recorded). If
iotrace itself is killed, 'iotrace record --from-spool DIR -o OUT' encodes
what the spools hold (see --spool).

  mpirun -np 4 iotrace record --preload -o run.iot -- ./app`
}

// runPreload records argv with the preload shim, or encodes the spools
// of p.fromSpool.
func runPreload(stderr io.Writer, o recordOptions, p preloadFlags, argv []string) error {
	if p.fromSpool != "" && (len(argv) > 0 || p.on || p.spool != "") {
		return errors.New("record: --from-spool encodes spools; it runs no program (no --preload, --spool or CMD)")
	}
	rk, err := capture.DetectRank(os.Getenv)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if o.rank != nil {
		rk.Rank, rk.Known, rk.Source = uint32(*o.rank), true, "--rank"
	}
	rules, err := recordRules(o)
	if err != nil {
		return err
	}
	if p.fromSpool != "" {
		return encodeSpools(stderr, o, rk, rules, p.fromSpool, nil, 0)
	}
	libs, err := preload.Build()
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if libs.MPIErr != nil && (o.verbose || rk.Size > 1) {
		fmt.Fprintf(stderr, "iotrace: record: %v\n", libs.MPIErr)
	}
	spool, temp := p.spool, p.spool == ""
	if temp {
		if spool, err = os.MkdirTemp("", "iotrace-spool-"); err != nil {
			return fmt.Errorf("record: %w", err)
		}
	} else if err := os.MkdirAll(spool, 0o755); err != nil {
		return fmt.Errorf("record: --spool: %w", err)
	} else if n, _ := preload.FindSpools(spool); n > 0 {
		return fmt.Errorf("record: --spool %s holds spools of another run: remove them or use another directory", spool)
	}
	if spool, err = filepath.Abs(spool); err != nil {
		return err
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		fmt.Fprintf(stderr, "iotrace: record: %v\n", err)
		return cli.ExitError{Code: 127}
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args = argv
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(append(os.Environ(), "LD_PRELOAD="+libs.Preload(os.Getenv("LD_PRELOAD"))), preload.Env(spool)...)
	if o.all {
		cmd.Env = append(cmd.Env, "IOTRACE_ALL=1")
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	// The processes the program leaves running (a daemon's double fork,
	// a background job) become iotrace's children instead of init's, so
	// that it knows them from their fork on, before they write a ring.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil && o.verbose {
		fmt.Fprintf(stderr, "iotrace: record: %v: processes the program leaves running are waited for only once they record\n", err)
	}
	if err := cmd.Start(); err != nil {
		signal.Stop(sigs)
		return fmt.Errorf("record: %w", err)
	}
	// While the program runs, signals go to it; once it has ended, one
	// stops the waiting for the processes it left running.
	ended := make(chan struct{})
	stop := make(chan os.Signal, 1)
	go func() {
		for s := range sigs {
			select {
			case <-ended:
				select {
				case stop <- s:
				default:
				}
			default:
				cmd.Process.Signal(s)
			}
		}
	}()
	werr := cmd.Wait()
	close(ended)
	if left := waitLeft(stderr, spool, stop); len(left) > 0 {
		fmt.Fprintf(stderr, "iotrace: record: stopped waiting: %s still running (%s); their later calls are not recorded\n", processes(len(left)), pidList(left))
	}
	signal.Stop(sigs)
	close(sigs)
	status := 0
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			status = 128 + int(ws.Signal())
		} else {
			status = ee.ExitCode()
		}
	} else if werr != nil {
		return fmt.Errorf("record: %w", werr)
	}
	err = encodeSpools(stderr, o, rk, rules, spool, argv, status)
	if err == nil && temp {
		err = preload.RemoveDir(spool)
	}
	if err != nil {
		var ce cli.ExitError
		if !errors.As(err, &ce) {
			fmt.Fprintf(stderr, "iotrace: record: %v\n", err)
		}
		fmt.Fprintf(stderr, "iotrace: record: the spools are kept in %s ('iotrace record --from-spool %s -o OUT' encodes them)\n", spool, spool)
		return cli.ExitError{Code: max(status, 1)}
	}
	if status != 0 {
		return cli.ExitError{Code: status}
	}
	return nil
}

// waitLeft waits, after the program has ended, for the processes it left
// running (a daemon's, a background job's: their calls are recorded while
// they run): iotrace's children (iotrace is their subreaper), which it
// reaps, and the processes that write a ring in the spool directory. It
// says so once after a second; a signal on stop ends the waiting. It
// returns the pids of the processes still running then.
func waitLeft(stderr io.Writer, spool string, stop <-chan os.Signal) []int {
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
			fmt.Fprintf(stderr, "iotrace: record: waiting for %s the program left running (%s); interrupt to stop\n", processes(len(pids)), pidList(pids))
			said = true
		}
		select {
		case <-stop:
			return running()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// children reaps the children of iotrace that ended and returns those
// that run (all but zombies).
func children() []int {
	var ws unix.WaitStatus
	for {
		if pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil); pid <= 0 || err != nil {
			break
		}
	}
	var pids []int
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	for _, t := range tasks {
		b, err := os.ReadFile(t)
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

// recordRules are the path rules of a record: --include, --exclude, the
// defaults (/proc, /sys, /dev) unless --all, and the output itself.
func recordRules(o recordOptions) (*ptrace.Rules, error) {
	abs := func(list []string) ([]string, error) {
		out := make([]string, len(list))
		for i, p := range list {
			if p == "" {
				return nil, errors.New("record: --include/--exclude: empty path prefix")
			}
			a, err := filepath.Abs(p)
			if err != nil {
				return nil, fmt.Errorf("record: --include/--exclude %s: %w", p, err)
			}
			out[i] = a
		}
		return out, nil
	}
	inc, err := abs(o.include)
	if err != nil {
		return nil, err
	}
	exc, err := abs(o.exclude)
	if err != nil {
		return nil, err
	}
	if a, err := filepath.Abs(o.out); err == nil {
		exc = append(exc, a)
	}
	if o.all {
		return ptrace.NewRules(nil, nil, false)
	}
	rules, err := ptrace.NewRules(inc, exc, true)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	return rules, nil
}

// encodeSpools writes the trace of the spools in dir: one rank file per
// rank the processes recorded (or one file for a lone process).
func encodeSpools(stderr io.Writer, o recordOptions, rk capture.Rank, rules *ptrace.Rules, dir string, argv []string, status int) error {
	if err := preload.Recover(dir); err != nil { // spools cut to what their processes wrote
		return err
	}
	run, err := preload.ReadDir(dir, rk.Rank)
	if err != nil {
		return err
	}
	defer run.Close()
	for _, w := range run.Warnings {
		fmt.Fprintf(stderr, "iotrace: record: warning: %s\n", w)
	}
	if len(run.Spools) == 0 {
		return fmt.Errorf("no process wrote a spool in %s: the program is statically linked, clears LD_PRELOAD, or did not start", dir)
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
	var un unseen
	for _, r := range run.Ranks() {
		rank := capture.Rank{Rank: r, Known: rk.Known || run.Size() > 0, Size: size, Source: rk.Source}
		if len(run.Ranks()) > 1 && rank.Size < 2 {
			rank.Size = len(run.Ranks())
		}
		w, file, err := capture.Create(o.out, rank, meta, host, 0)
		if err != nil {
			return err
		}
		if err := w.SetRankInfo(r, meta.Epoch, host, run.MainPID(r)); err != nil {
			w.Close()
			return fmt.Errorf("%s: %w", file, err)
		}
		st, eerr := run.Encode(r, w.Rank(r), rules)
		if cerr := w.Close(); eerr == nil && cerr != nil {
			eerr = fmt.Errorf("%s: %w", file, cerr)
		}
		var se *preload.SpoolError
		if errors.As(eerr, &se) {
			// A damaged spool: what was before the damage is in the trace.
			fmt.Fprintf(stderr, "iotrace: record: warning: %v; the events before it are in %s\n", eerr, file)
			eerr = nil
		}
		if eerr != nil && firstErr == nil {
			firstErr = eerr
		}
		un.mmapFiles += st.MmapFiles
		un.ioUring = un.ioUring || st.Unseen&preload.UnseenIOUring != 0
		un.aio = un.aio || st.Unseen&preload.UnseenAIO != 0
		un.posixAIO = un.posixAIO || st.Unseen&preload.UnseenPOSIXAIO != 0
		if st.Incomplete > 0 || st.Dropped > 0 {
			fmt.Fprintf(stderr, "iotrace: record: %s: %d calls were in progress when a process ended, %d records were lost (the spool could not grow)\n", file, st.Incomplete, st.Dropped)
		}
		if o.verbose {
			how := fmt.Sprintf("exit status %d", status)
			if status > 128 {
				how = fmt.Sprintf("killed by signal %d", status-128)
			}
			fmt.Fprintf(stderr, "iotrace: record: %s: rank %d: %d events from %d records of %d processes, %d threads; %s\n",
				file, r, st.Events, st.Records, st.Processes, st.Threads, how)
		}
	}
	if firstErr != nil {
		return firstErr
	}
	printUnseen(stderr, un)
	if o.verbose {
		var procs []string
		for _, s := range run.Spools {
			procs = append(procs, fmt.Sprintf("%d(%s)", s.Header.PID, strings.Join(s.Header.Cmdline, " ")))
		}
		fmt.Fprintf(stderr, "iotrace: record: processes: %s\n", strings.Join(procs, ", "))
	}
	return nil
}
