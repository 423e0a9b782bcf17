package main

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/iotrace/iotrace/capture/record"
	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/internal/logline"
	"github.com/spf13/cobra"
)

// recordOptions are the options of iotrace record.
type recordOptions struct {
	record.Options
	rank      int
	rankGiven bool
	verbose   bool
	quiet     bool
	preload   bool
	fromSpool string
}

func newRecordCmd() *cobra.Command {
	o := &recordOptions{}
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

Clocks. In an MPI job each rank measures its clock against rank 0's in the
program's MPI_Init and MPI_Finalize (under ptrace through a small library of
wrappers iotrace preloads, built as the preload shim is); readers put every
rank's times on rank 0's clock. Every rank must take part, so --clock-sync auto
measures only when the MPI launcher started iotrace itself and the job runs
one program; on and off decide. 'iotrace check' prints the offsets.

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
			if len(args) == 0 && o.fromSpool == "" {
				return errors.New("record: no program to run (iotrace record [flags] -- CMD [ARGS…])")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.rankGiven = cmd.Flags().Changed("rank")
			return runRecord(o, args, cli.StreamsOf(cmd))
		},
	}
	fs := c.Flags()
	fs.SetInterspersed(false)
	fs.StringVarP(&o.Out, "output", "o", "trace.iot", "trace file (a directory of per-rank files for a parallel run)")
	fs.IntVar(&o.rank, "rank", 0, "rank of this process (default: from the MPI launcher's environment, else 0)")
	fs.StringArrayVar(&o.Include, "include", nil, "record only paths under this prefix (repeatable; relative to the current directory)")
	fs.StringArrayVar(&o.Exclude, "exclude", nil, "do not record paths under this prefix (repeatable; relative to the current directory)")
	fs.BoolVar(&o.All, "all", false, "record every traced call: no path exclusions, pipes and sockets too")
	fs.BoolVarP(&o.verbose, "verbose", "v", false, "print how the program ended and the thread table on stderr at the end")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "no summary line or notes on stderr, only warnings and errors")
	fs.Var(&o.ClockSync, "clock-sync", "measure each rank's clock against rank 0's in MPI_Init and MPI_Finalize: auto (when every rank is surely recorded), on, off")
	fs.BoolVar(&o.preload, "preload", false, "record with the preload shim (LD_PRELOAD) instead of ptrace: POSIX, stdio, MPI-IO and MPI communication calls")
	fs.StringVar(&o.Spool, "spool", "", "with --preload: keep the raw per-process spool files in this directory (default: a temporary one, removed)")
	fs.StringVar(&o.fromSpool, "from-spool", "", "encode the spool files left in this directory (a record that was killed) instead of running a program")
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
part) into ~/.cache/iotrace/preload (IOTRACE_CACHE). Each process appends
fixed-size records to its own spool file, mapped in memory, so a process that
crashes keeps every call it finished; iotrace encodes the spools into the
trace when CMD ends, and the processes CMD left running (a daemon, a
background job) have ended too: iotrace waits for them (it is their
subreaper), says so after a second, and stops waiting at an interrupt (their
later calls are then not recorded). If iotrace itself is killed, 'iotrace
record --from-spool DIR -o OUT' encodes what the spools hold (see --spool).

  mpirun -np 4 iotrace record --preload -o run.iot -- ./app`

	return c
}

// runRecord records argv with the recorder the options choose, and exits
// with the program's status.
func runRecord(o *recordOptions, argv []string, s cli.IO) error {
	if o.rankGiven {
		if o.rank < 0 || o.rank > 1<<32-1 {
			return fmt.Errorf("--rank %d: want a rank from 0 to 4294967295", o.rank)
		}
		r := uint32(o.rank)
		o.Rank = &r
	}
	o.Log = logline.New(s.Err, "iotrace: record", o.verbose)
	if o.quiet {
		o.Log = logline.NewLevel(s.Err, "iotrace: record", slog.LevelWarn)
	}
	var res record.Result
	var err error
	switch {
	case o.fromSpool != "":
		if len(argv) > 0 || o.preload || o.Spool != "" {
			return errors.New("record: --from-spool encodes spools; it runs no program (no --preload, --spool or CMD)")
		}
		res, err = record.FromSpool(o.Options, o.fromSpool)
	case o.preload:
		res, err = record.Preload(o.Options, argv)
	case o.Spool != "":
		return errors.New("record: --spool is for --preload")
	default:
		res, err = record.Ptrace(o.Options, argv)
	}
	return recordExit(res, err, s)
}

// recordExit says what went wrong, if anything, and returns the exit
// status of a record: the program's.
func recordExit(res record.Result, err error, s cli.IO) error {
	var te *record.TraceError
	var se *record.SpoolError
	switch {
	case err == nil:
	case errors.Is(err, record.ErrNotFound):
		fmt.Fprintf(s.Err, "iotrace: record: %v\n", err)
	case errors.As(err, &te):
		// The program ran (or not); the trace went wrong: keep its status
		// if it failed.
		fmt.Fprintf(s.Err, "iotrace: record: %v\n", err)
		res.Status = max(res.Status, 1)
	case errors.As(err, &se):
		fmt.Fprintf(s.Err, "iotrace: record: %v\n", err)
		fmt.Fprintf(s.Err, "iotrace: record: the spools are kept in %s ('iotrace record --from-spool %s -o OUT' encodes them)\n", se.Dir, se.Dir)
		res.Status = max(res.Status, 1)
	default:
		return fmt.Errorf("record: %w", err)
	}
	if res.Status != 0 {
		return cli.ExitError{Code: res.Status}
	}
	return nil
}
