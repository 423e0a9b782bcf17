package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/iotrace/iotrace/capture"
	"github.com/iotrace/iotrace/capture/preload"
	"github.com/iotrace/iotrace/capture/ptrace"
	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

func init() { commands = append(commands, newRecordCmd) }

func newRecordCmd() *cobra.Command {
	var (
		out              string
		rank             int
		include, exclude []string
		all, verbose     bool
		clockSync        string
		pre              preloadFlags
	)
	c := &cobra.Command{
		Use:   "record [-o OUT] [--rank N] [--include PREFIX]… [--exclude PREFIX]… [--all] -- CMD [ARGS…]",
		Short: "Run a program and record its file I/O (any Linux binary; ptrace + seccomp)",
		Long: `record runs CMD and records the file I/O of it and of every process and
thread it starts: open/openat/openat2/creat, close/close_range, read/pread/
readv/preadv/preadv2, write/pwrite/writev/pwritev/pwritev2, copy_file_range/
sendfile/splice, lseek, fsync/fdatasync/syncfs/sync, ftruncate/truncate,
fallocate, posix_fadvise, mmap of a file, the stat family, access, readlink,
getdents, unlink, rename, link, symlink, mkdir, rmdir, the dup family and
fcntl F_DUPFD/F_SETFD/F_SETFL, each with its start time and duration (ns),
descriptor, absolute path, the file offset it used (for read and write too:
positions are followed per open file, through dup, fork and O_APPEND), the
requested and returned sizes (or -errno), flags and mode. Only these calls
stop the program (a seccomp filter); everything else runs at full speed.
It also records, whatever the paths, every fork, thread, exec and exit of
the program's processes, and the descriptors they held before record saw
them (inherit), so that a trace follows each process's descriptors. sync is
always recorded: it writes back every file.

Not seen: reads and writes through mappings (the mmap is recorded), io_uring
and Linux AIO; record says so on stderr when CMD mapped recorded files or
used io_uring or AIO.

CMD's standard streams are its own, and its exit status is record's: its exit
code, or 128+N when signal N killed it. Signals sent to record are passed on
to CMD (a signal sent to the whole process group reaches CMD once): all but
SIGCHLD, SIGURG, SIGPROF, SIGPIPE, SIGXFSZ, the faults (SIGSEGV, SIGBUS,
SIGFPE, SIGILL, SIGTRAP, SIGSYS) and the C library's signals 32 and 33. After
SIGTSTP, SIGTTIN or SIGTTOU record stops too, so that the shell sees the job
stop; SIGCONT goes on to CMD. The trace is written in blocks at least every
second, so a record that is killed (CMD dies with it) leaves a trace
readable up to its last block.

Output and ranks. The rank is --rank, or comes from the MPI launcher's
environment: OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, MV2_COMM_WORLD_RANK,
SLURM_PROCID (the first set; Slurm's last, as an mpirun inside a batch script
leaves the script's SLURM_PROCID to every rank), and the number of ranks from
the same launcher's OMPI_COMM_WORLD_SIZE, PMI_SIZE, MV2_COMM_WORLD_SIZE or
SLURM_NTASKS (for PMIx or --rank: the first of them set). A run
of one process writes OUT as a file. When there are several ranks (or the
rank is known but their number is not), OUT is a directory and each rank
writes OUT/rank-NNNNN.iot, so that

  mpirun -np 4 iotrace record -o run.iot -- ./app

leaves run.iot/rank-00000.iot … rank-00003.iot, written without any
coordination; every command reads the directory as one trace. An existing
directory OUT always gets OUT/rank-NNNNN.iot. Remove an old directory before
recording a new run into it.

Clocks. In an MPI job each rank measures its clock against rank 0's, in
the program's MPI_Init and again in its MPI_Finalize (a ping-pong over MPI:
the offset within half the best round trip), and records both measurements
in its file; readers put every rank's times on rank 0's clock, so ranks on
hosts whose clocks differ keep their true order and delays. Under ptrace
iotrace preloads a small library of MPI_Init/MPI_Finalize wrappers for it
(built, as the preload shim is, with cc and mpi.h). Every rank must take
part, so --clock-sync auto (the default) measures only when the MPI launcher
started iotrace itself (mpirun, orted, srun's slurmstepd, Hydra) and the job
runs one program; on and off decide. 'iotrace check' prints the offsets.

Threads. Event.Thread is a per-rank thread index: 0 is the main thread of
CMD, then every thread and process CMD starts gets the next index in the
order record sees them created. -v prints the index → pid/tid table.

Paths. /proc, /sys, /dev, the trace being written, and descriptors that are
not files (pipes, sockets, terminals) are not recorded; descriptors are still
followed through them. --exclude PREFIX leaves out more; --include PREFIX
records only paths under the given prefixes (relative prefixes are taken
from the current directory). The longest matching prefix
decides, an exclusion winning a tie. --all records every traced call, with
no exclusion at all.`,
		Example: `  iotrace record -o app.iot -- ./app input.dat
  iotrace record --include /scratch -o run.iot -- sh -c './solver | tee log'
  mpirun -np 4 iotrace record -o run.iot -- ./app`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && pre.fromSpool == "" {
				return errors.New("record: no program to run (iotrace record [flags] -- CMD [ARGS…])")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var rk *int
			if cmd.Flags().Changed("rank") {
				if rank < 0 {
					return fmt.Errorf("--rank %d: a rank is not negative", rank)
				}
				rk = &rank
			}
			cs, err := capture.ParseClockSync(clockSync)
			if err != nil {
				return err
			}
			o := recordOptions{out: out, rank: rk, include: include, exclude: exclude, all: all, verbose: verbose, clock: cs}
			if pre.on || pre.fromSpool != "" {
				return runPreload(cmd.ErrOrStderr(), o, pre, args)
			}
			if pre.spool != "" {
				return errors.New("record: --spool is for --preload")
			}
			return runRecord(cmd.ErrOrStderr(), o, args)
		},
	}
	c.Flags().SetInterspersed(false)
	c.Flags().StringVarP(&out, "output", "o", "trace.iot", "trace file (a directory of per-rank files for a parallel run)")
	c.Flags().IntVar(&rank, "rank", 0, "rank of this process (default: from the MPI launcher's environment, else 0)")
	c.Flags().StringArrayVar(&include, "include", nil, "record only paths under this prefix (repeatable; relative to the current directory)")
	c.Flags().StringArrayVar(&exclude, "exclude", nil, "do not record paths under this prefix (repeatable; relative to the current directory)")
	c.Flags().BoolVar(&all, "all", false, "record every traced call: no path exclusions, pipes and sockets too")
	c.Flags().BoolVarP(&verbose, "verbose", "v", false, "print a summary and the thread table on stderr at the end")
	c.Flags().StringVar(&clockSync, "clock-sync", "auto", "measure each rank's clock against rank 0's in MPI_Init and MPI_Finalize: auto (when every rank is surely recorded), on, off")
	addPreloadFlags(c, &pre)
	return c
}

type recordOptions struct {
	out              string
	rank             *int
	include, exclude []string
	all, verbose     bool
	clock            capture.ClockSync
}

func runRecord(stderr io.Writer, o recordOptions, argv []string) error {
	if !ptrace.Supported {
		return errors.New("record: recording needs Linux on amd64 or arm64")
	}
	rk, err := capture.DetectRank(os.Getenv)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if o.rank != nil {
		if rk.Size > 0 && *o.rank >= rk.Size {
			return fmt.Errorf("record: --rank %d is not below the number of ranks %d (%s)", *o.rank, rk.Size, capture.SizeVars)
		}
		rk.Rank, rk.Known, rk.Source = uint32(*o.rank), true, "--rank"
	}
	// Check everything before the output is made: a typo must not leave
	// an empty trace (or directory) behind.
	for _, list := range []*[]string{&o.include, &o.exclude} {
		abs := make([]string, len(*list))
		for i, p := range *list {
			if p == "" {
				return errors.New("record: --include/--exclude: empty path prefix")
			}
			a, err := filepath.Abs(p)
			if err != nil {
				return fmt.Errorf("record: --include/--exclude %s: %w", p, err)
			}
			abs[i] = a
		}
		*list = abs
	}
	if _, err := ptrace.LookPath(argv[0], "", nil); err != nil {
		fmt.Fprintf(stderr, "iotrace: record: %v\n", err)
		return cli.ExitError{Code: 127}
	}
	file, dir, err := capture.OutputPath(o.out, rk)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	base := time.Now()
	meta := trace.Meta{
		Command: argv,
		Clock:   "CLOCK_MONOTONIC",
		Epoch:   base.UnixNano() + capture.TestClockShift(),
		Creator: "iotrace record",
	}
	// The clock library measures the rank's clock in the program's
	// MPI_Init and MPI_Finalize; its file and library are not recorded.
	clk, err := startClockLib(stderr, o, rk, meta.Epoch, base)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	defer clk.remove()
	// The trace itself (and the other ranks' files) are not recorded.
	excludes := append([]string(nil), o.exclude...)
	excludes = append(excludes, clk.private...)
	for _, p := range []string{file, dir} {
		if p == "" {
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			excludes = append(excludes, abs)
		}
	}
	rules, err := ptrace.NewRules(o.include, excludes, true)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	host, _ := os.Hostname()
	w, file, err := capture.Create(o.out, rk, meta, host, 0)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	var infoErr error
	res, runErr := ptrace.Run(ptrace.Config{
		Argv:           argv,
		Env:            clk.env,
		Sink:           w.Rank(rk.Rank),
		Flush:          w.Flush,
		Rank:           rk.Rank,
		Base:           base,
		Rules:          rules,
		All:            o.all,
		ForwardSignals: true,
		OnStart: func(pid int) {
			infoErr = w.SetRankInfo(rk.Rank, meta.Epoch, host, pid)
		},
	})
	if rerr := clk.write(w, rk.Rank, meta.Epoch); rerr != nil {
		fmt.Fprintf(stderr, "iotrace: record: %s: clock: %v\n", file, rerr)
	}
	closeErr := w.Close()
	if o.verbose {
		printRecordSummary(stderr, file, rk, res)
	}
	printUnseen(stderr, unseen{mmapFiles: res.MmapFiles, ioUring: res.IOUring > 0, aio: res.AIO > 0})
	for _, err := range []error{runErr, infoErr, closeErr} {
		if err != nil {
			// The program ran (or not); say what went wrong with the
			// trace, and keep its exit status if it failed.
			fmt.Fprintf(stderr, "iotrace: record: %s: %v\n", file, err)
			code := res.Status()
			if code == 0 {
				code = 1
			}
			return cli.ExitError{Code: code}
		}
	}
	if code := res.Status(); code != 0 {
		return cli.ExitError{Code: code}
	}
	return nil
}

// unseen is what a capture saw the program do whose I/O the trace cannot
// show.
type unseen struct {
	mmapFiles              int // recorded files mapped into memory
	ioUring, aio, posixAIO bool
}

// printUnseen says what the trace cannot show, if the program did it: I/O
// through mappings of recorded files, io_uring, Linux AIO, POSIX AIO.
func printUnseen(w io.Writer, u unseen) {
	if u.mmapFiles > 0 {
		files := "files"
		if u.mmapFiles == 1 {
			files = "file"
		}
		fmt.Fprintf(w, "iotrace: record: the program mapped %d recorded %s into memory (mmap): reads and writes through the mappings are not seen\n",
			u.mmapFiles, files)
	}
	var async []string
	if u.ioUring {
		async = append(async, "io_uring")
	}
	if u.aio {
		async = append(async, "Linux AIO")
	}
	if u.posixAIO {
		async = append(async, "POSIX AIO")
	}
	if len(async) > 0 {
		list := async[len(async)-1]
		if n := len(async); n > 1 {
			list = strings.Join(async[:n-1], ", ") + " and " + list
		}
		fmt.Fprintf(w, "iotrace: record: the program used %s: that I/O is not seen\n", list)
	}
}

func printRecordSummary(w io.Writer, file string, rk capture.Rank, res ptrace.Result) {
	how := fmt.Sprintf("exit status %d", res.ExitCode)
	if res.Signal != 0 {
		how = fmt.Sprintf("killed by signal %d (%v)", int(res.Signal), res.Signal)
	}
	src := ""
	if rk.Source != "" {
		src = " (from " + rk.Source + ")"
	}
	fmt.Fprintf(w, "iotrace: record: %s: rank %d%s: %d events of %d threads; pid %d, %s\n",
		file, rk.Rank, src, res.Events, len(res.Threads), res.PID, how)
	if len(res.Threads) == 0 {
		return
	}
	var b strings.Builder
	b.WriteString("thread\tpid\ttid\tparent\n")
	for _, t := range res.Threads {
		parent := "-"
		if t.Parent >= 0 {
			parent = fmt.Sprint(t.Parent)
		}
		fmt.Fprintf(&b, "%d\t%d\t%d\t%s\n", t.Index, t.PID, t.TID, parent)
	}
	io.WriteString(w, b.String())
}

// clockLib is the clock library of a ptrace recording: the program's
// environment that loads it, its readings' file, and the paths of both
// (which are not recorded).
type clockLib struct {
	env     []string // nil: the program's environment is iotrace's
	file    string
	base    int64
	private []string
}

// startClockLib prepares the clock library for the program, when its
// ranks are to measure their clocks (capture.WantClockSync); base is
// time 0 of the recording, epoch its wall-clock time.
func startClockLib(stderr io.Writer, o recordOptions, rk capture.Rank, epoch int64, base time.Time) (*clockLib, error) {
	c := &clockLib{}
	want, why := capture.WantClockSync(o.clock, rk, capture.ParentComm(), os.Getenv)
	if want {
		libs, err := preload.Build()
		switch {
		case err != nil:
			want, why = false, err.Error()
		case libs.Clock == "":
			want, why = false, fmt.Sprint(libs.MPIErr)
		default:
			dir, err := os.MkdirTemp("", "iotrace-clock-")
			if err != nil {
				return nil, err
			}
			var ts unix.Timespec
			unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
			// The wall clock minus CLOCK_MONOTONIC of the trace's times
			// (epoch + time since base, on the monotonic clock).
			c.base = epoch - (ts.Nano() - int64(time.Since(base)))
			c.file = filepath.Join(dir, "readings")
			c.private = []string{dir, filepath.Dir(libs.Clock)}
			pre := libs.Clock
			if old := os.Getenv("LD_PRELOAD"); old != "" {
				pre += ":" + old
			}
			c.env = append(append(os.Environ(), "LD_PRELOAD="+pre), capture.ClockEnv(c.base, c.file)...)
		}
	}
	if !want && o.clock != capture.ClockOff && rk.Rank == 0 && rk.Size > 1 {
		fmt.Fprintf(stderr, "iotrace: record: the ranks' clocks are not measured against each other (%s): their times are their hosts' clocks\n", why)
	}
	return c, nil
}

// write records what the clock library measured as the rank's clock.
func (c *clockLib) write(w *format.Writer, rank uint32, epoch int64) error {
	if c.file == "" {
		return nil
	}
	rd, err := capture.ReadClockFile(c.file, c.base)
	if err != nil {
		return err
	}
	if clk, ok := capture.Clock(rd, epoch, capture.ClockMethodPtrace); ok {
		return w.SetRankClock(rank, clk)
	}
	return nil
}

func (c *clockLib) remove() {
	if c.file != "" {
		os.RemoveAll(filepath.Dir(c.file))
	}
}
