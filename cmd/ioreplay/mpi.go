//go:build mpi

package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/replay/mpi"
	"github.com/iotrace/iotrace/replay/posix"
	"github.com/iotrace/iotrace/report"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
	"github.com/iotrace/iotrace/trace/units"
	"github.com/spf13/cobra"
)

// markerName is the file process 0 leaves in the target, so that the
// other processes can check they see the same directory.
const markerName = ".ioreplay-mpi"

// runMPI runs a replay as one process of an MPI job (--mpi; or alone, a
// job of one process, for --backend mpiio). Process 0 prepares the
// target and reports; every process runs its block of ranks. Every step
// that can fail on one process is agreed on by all, so that they stop
// together with the first process's error.
func runMPI(cmd *cobra.Command, f *flags, args []string) (err error) {
	stderr := cmd.ErrOrStderr()
	proc, err := mpi.Connect()
	if err != nil {
		return err
	}
	defer func() {
		if ferr := mpi.Finalize(); err == nil && ferr != nil {
			err = ferr
		}
	}()
	// The processors this process uses: its share of the node's (unless
	// GOMAXPROCS says), so that the runtime's helpers do not take the
	// cores of the job's other processes (docs/MPI.md).
	if os.Getenv("GOMAXPROCS") == "" {
		if n := proc.Processors(); n < runtime.GOMAXPROCS(0) {
			runtime.GOMAXPROCS(n)
		}
	}
	lead := proc.Rank == 0
	// fail returns an error every process agreed on: printed by process
	// 0, silent elsewhere.
	fail := func(err error) error {
		if lead {
			return err
		}
		return cli.ExitError{Code: 1}
	}
	agree := func(err error) error {
		if err := proc.Agree(err); err != nil {
			return fail(err)
		}
		return nil
	}
	if err := checkChoice("--format", f.format, report.Formats); err != nil {
		return fail(err)
	}
	if err := checkChoice("--by", f.by, report.Views); err != nil {
		return fail(err)
	}
	opts, err := f.options()
	if err != nil {
		return fail(err)
	}
	warn := io.Discard
	if lead {
		warn = stderr
	}
	t, err := openInput(&f.in, args, warn)
	if err := agree(err); err != nil {
		return err
	}
	defer t.Close()
	if f.timing == "" {
		opts.Timing = replay.DefaultTiming(t)
	}

	// The target: given, or a new temporary directory named by process 0.
	target, temp := f.target, false
	var terr error
	if target != "" {
		if target, terr = filepath.Abs(target); terr == nil && target == "/" {
			terr = errors.New("--target /: refusing to replay into the root directory")
		}
	} else if lead && !f.dryRun {
		target, terr = os.MkdirTemp("", "ioreplay-")
		temp = true
	}
	if err := agree(terr); err != nil {
		return err
	}
	if f.target == "" && !f.dryRun {
		target = proc.BcastString(target, 0)
		temp = true
	}
	if temp && lead {
		defer func() {
			if f.keep {
				fmt.Fprintf(stderr, "ioreplay: kept the target directory %s\n", target)
				return
			}
			if rerr := os.RemoveAll(target); err == nil && rerr != nil {
				err = fmt.Errorf("removing the target directory: %w", rerr)
			}
		}()
	}

	var world *mpi.World
	var ready func()
	opts.Share = proc.Share
	opts.Ready = func() { ready() }
	opts.World = func([]uint32, map[uint32][]uint32) replay.World { return world }
	rp, err := replay.New(t, opts)
	if err := agree(err); err != nil {
		return err
	}
	plan := rp.Plan()
	if f.dryRun {
		if lead {
			if err := printPlan(cmd.OutOrStdout(), rp, f, target); err != nil {
				return err
			}
			printShares(cmd.OutOrStdout(), proc, plan.Ranks)
		}
		return nil
	}
	if !lead || f.target != "" {
		terr = os.MkdirAll(target, 0o755)
	}
	if err := agree(terr); err != nil {
		return err
	}
	job, err := mpi.NewJob(proc, plan, mpi.JobOptions{FileSlots: f.backend == backendMPIIO})
	if err := agree(err); err != nil {
		return err
	}
	if err := job.CheckCounts(rp.Trace()); err != nil {
		return fail(err)
	}
	pb, err := posix.New(posix.Options{Target: target, Direct: f.direct, Sparse: f.sparse, Walk: f.walk})
	if err := agree(err); err != nil {
		return err
	}
	var be replay.Backend = pb
	if f.backend == backendMPIIO {
		be, err = mpi.NewBackend(job, pb, hintPairs(f.hints))
		if err := agree(err); err != nil {
			pb.Close()
			return err
		}
	}
	defer be.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// Process 0 prepares; the others check that they see its target.
	var perr error
	if lead {
		if !f.quiet && plan.Bytes() > 64<<20 {
			fmt.Fprintf(stderr, "ioreplay: preparing %d files (%s) in %s\n", len(plan.Files), units.Bytes(plan.Bytes()), target)
		}
		if perr = be.Prepare(ctx, &plan.Layout); perr == nil {
			perr = os.WriteFile(filepath.Join(target, markerName), []byte(fmt.Sprint(os.Getpid())), 0o644)
		}
	}
	if err := agree(perr); err != nil {
		return err
	}
	if _, serr := os.Stat(filepath.Join(target, markerName)); serr != nil {
		host, _ := os.Hostname()
		perr = fmt.Errorf("the target %s on %s is not the directory process 0 prepared: give --target a directory every process shares", target, host)
	}
	if err := agree(perr); err != nil {
		return err
	}
	proc.Barrier()
	if lead {
		os.Remove(filepath.Join(target, markerName))
	}
	if f.prepareOnly {
		if lead {
			fmt.Fprintf(cmd.OutOrStdout(), "prepared %d files (%s) and %d directories in %s\n",
				len(plan.Files), units.Bytes(plan.Bytes()), len(plan.Dirs), target)
		}
		return nil
	}

	// Each process records its ranks into a part; process 0 merges them.
	host, _ := os.Hostname()
	part, err := os.CreateTemp("", "ioreplay-part-*.iot")
	if err == nil {
		part.Close()
		defer os.Remove(part.Name())
	}
	if err := agree(err); err != nil {
		return err
	}
	meta := trace.Meta{
		Command: os.Args, Hosts: []string{host}, Clock: "CLOCK_MONOTONIC",
		Epoch: time.Now().UnixNano(), Ranks: len(plan.Ranks), Creator: "ioreplay --mpi",
	}
	w, err := format.CreateOptions(part.Name(), meta, format.Options{BlockEvents: recordBlock(len(job.Own()))})
	if err := agree(err); err != nil {
		return err
	}
	out := replay.Output{Target: target, Record: func(r uint32) trace.Sink { return w.Rank(r) }}

	world = mpi.NewWorld(job, mpi.WorldOptions{FilesSynchronise: f.backend == backendMPIIO})
	var infoErr error
	ready = func() {
		// The common start: every process's ranks start together, and
		// their times count from it.
		proc.Barrier()
		epoch := time.Now().UnixNano()
		for _, r := range job.Own() {
			if err := w.SetRankInfo(r, epoch, host, os.Getpid()); err != nil && infoErr == nil {
				infoErr = err
			}
		}
	}
	var res *replay.Result
	var runErr error
	if len(job.Own()) > 0 {
		var progressDone, progressStopped chan struct{}
		if lead {
			progressDone, progressStopped = make(chan struct{}), make(chan struct{})
			go progress(stderr, rp, f.quiet, progressDone, progressStopped)
		}
		res, runErr = rp.Run(ctx, be, out)
		if lead {
			close(progressDone)
			<-progressStopped
		}
	} else {
		ready()
		res = &replay.Result{Timing: opts.Timing, Epoch: time.Now()}
	}
	if runErr != nil {
		// Other processes may wait for this one's ranks: stop them all.
		fmt.Fprintf(stderr, "ioreplay: process %d: %v\n", proc.Rank, runErr)
		if res != nil && !f.quiet {
			res.WriteSummary(stderr)
		}
		mpi.Abort(1)
	}
	stats, werr := world.Wait()
	if cerr := w.Close(); werr == nil && cerr != nil {
		werr = fmt.Errorf("writing the replay's trace: %w", cerr)
	}
	if werr == nil {
		werr = infoErr
	}
	if err := agree(werr); err != nil {
		return err
	}

	// Results and the replay's trace to process 0.
	bin, err := res.MarshalBinary()
	if err != nil {
		return fail(err) // cannot happen: the result is plain data
	}
	head := binary.AppendVarint(nil, stats.Messages)
	head = binary.AppendVarint(head, stats.Bytes)
	head = binary.AppendVarint(head, stats.Collectives)
	head = binary.AppendVarint(head, stats.Unreceived)
	all := proc.Gather(append(head, bin...))
	recPath, recTemp := f.record, f.record == ""
	var parts []string
	gerr := proc.GatherFile(part.Name(), func(q int) (io.WriteCloser, error) {
		pf, err := os.CreateTemp("", fmt.Sprintf("ioreplay-part%d-*.iot", q))
		if err == nil {
			parts = append(parts, pf.Name())
		}
		return pf, err
	})
	defer func() {
		for _, p := range parts {
			os.Remove(p)
		}
	}()
	if !lead {
		return nil
	}
	if gerr != nil {
		return fmt.Errorf("collecting the replay's trace: %w", gerr)
	}
	total := &replay.Result{}
	var ws mpi.WorldStats
	for q, b := range all {
		var r replay.Result
		vals := make([]int64, 4)
		for i := range vals {
			v, n := binary.Varint(b)
			if n <= 0 {
				return fmt.Errorf("process %d sent a damaged result", q)
			}
			vals[i], b = v, b[n:]
		}
		if err := r.UnmarshalBinary(b); err != nil {
			return fmt.Errorf("process %d sent a damaged result: %w", q, err)
		}
		total.Merge(&r)
		ws.Messages += vals[0]
		ws.Bytes += vals[1]
		ws.Collectives += vals[2]
		ws.Unreceived += vals[3]
	}
	if recTemp {
		tf, err := os.CreateTemp("", "ioreplay-*.iot")
		if err != nil {
			return err
		}
		recPath = tf.Name()
		tf.Close()
		defer os.Remove(recPath)
	}
	rf, err := os.Create(recPath)
	if err != nil {
		return fmt.Errorf("--record: %w", err)
	}
	bw := bufio.NewWriterSize(rf, 1<<20)
	_, merr := format.Merge(bw, format.ReadOptions{}, parts...)
	if merr == nil {
		merr = bw.Flush()
	}
	if cerr := rf.Close(); merr == nil {
		merr = cerr
	}
	if merr != nil {
		return fmt.Errorf("writing the replay's trace: %w", merr)
	}
	if f.summary != "" {
		if err := writeSummary(f.summary, total); err != nil {
			return err
		}
	}
	if total.Interrupted {
		return interrupted(stderr, total, recPath, !recTemp)
	}
	if !f.quiet {
		fmt.Fprintf(stderr, "mpi: %d processes, %d ranks (%s); between processes %d messages (%s), %d collectives, backend %s\n",
			proc.Size, len(plan.Ranks), sharesText(proc, plan.Ranks), ws.Messages, units.Bytes(ws.Bytes), ws.Collectives, f.backend)
		if ws.Unreceived > 0 {
			fmt.Fprintf(stderr, "mpi: %d messages were sent but never received\n", ws.Unreceived)
		}
	}
	return writeReport(cmd, f, t, args, recPath, total)
}

// sharesText says how many ranks each process runs.
func sharesText(proc *mpi.Proc, ranks []uint32) string {
	lo, hi := len(ranks), 0
	for q := 0; q < proc.Size; q++ {
		n := len(ranks)*(q+1)/proc.Size - len(ranks)*q/proc.Size
		lo, hi = min(lo, n), max(hi, n)
	}
	if lo == hi {
		return fmt.Sprintf("%d per process", lo)
	}
	return fmt.Sprintf("%d–%d per process", lo, hi)
}

// printShares prints which process runs which ranks (--dry-run --mpi).
func printShares(w io.Writer, proc *mpi.Proc, ranks []uint32) {
	fmt.Fprintf(w, "\nprocesses: %d (%s)\n", proc.Size, sharesText(proc, ranks))
	for q := 0; q < proc.Size; q++ {
		lo, hi := len(ranks)*q/proc.Size, len(ranks)*(q+1)/proc.Size
		var b strings.Builder
		for i := lo; i < hi; i++ {
			if i > lo {
				b.WriteString(" ")
			}
			fmt.Fprint(&b, ranks[i])
		}
		fmt.Fprintf(w, "  process %d: ranks %s\n", q, b.String())
	}
}

func hintPairs(hints []string) [][2]string {
	var out [][2]string
	for _, h := range hints {
		k, v, _ := strings.Cut(h, "=")
		out = append(out, [2]string{k, v})
	}
	return out
}
