package record

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/iotrace/iotrace/capture"
	"github.com/iotrace/iotrace/capture/ptrace"
	"github.com/iotrace/iotrace/internal/sigquit"
	"github.com/iotrace/iotrace/launcher"
	"github.com/iotrace/iotrace/trace"
)

// Ptrace runs argv under the ptrace recorder. Signals sent to this
// process go to the program. The error is ErrNotFound (wrapped) when the
// program cannot be run, a *TraceError when the program ran but its trace
// could not be written (Result.Status is the program's), or an error
// before anything ran.
func Ptrace(o Options, argv []string) (Result, error) {
	if !ptrace.Supported {
		return Result{}, errors.New("recording needs Linux on amd64 or arm64")
	}
	rk, rules, err := o.setup()
	if err != nil {
		return Result{}, err
	}
	if _, err := ptrace.LookPath(argv[0], "", nil); err != nil {
		return Result{Status: 127}, notFound{err}
	}
	log := o.log()
	// What tracing costs a call here and now, taken out of the times.
	var cost capture.Cost
	if !o.RawTimes {
		if cost, err = ptrace.Calibrate(""); err != nil {
			log.Warn(fmt.Sprintf("measuring the tracer's cost: %v; the times will include it", err))
			cost = capture.Cost{}
		}
	}
	base := time.Now()
	host, _ := os.Hostname()
	meta := trace.Meta{Command: argv, Clock: "CLOCK_MONOTONIC", Epoch: base.UnixNano() + capture.TestClockShift(), Creator: "iotrace record"}
	if cost.Samples > 0 {
		// The costs at start-up; during the run they follow each
		// thread's measured calls (rank info: what was taken out).
		meta.Corrected = fmt.Sprintf("ptrace calibration: %.1f µs of each call's duration, %.1f µs between calls at start-up, then following the run",
			float64(cost.InCall)/1e3, float64(cost.Between)/1e3)
	}
	// The clock library measures the rank's clock in the program's
	// MPI_Init and MPI_Finalize; its file and library are not recorded.
	clk, err := startClockLib(log, o.ClockSync, rk, meta.Epoch, base)
	if err != nil {
		return Result{}, err
	}
	defer clk.remove()
	if len(clk.private) > 0 {
		if rules, err = o.rules(clk.private...); err != nil {
			return Result{}, err
		}
	}
	w, file, err := capture.Create(o.Out, rk, meta, host, 0)
	if err != nil {
		return Result{}, err
	}
	// The header on disk at once: a record killed before its first block
	// leaves a trace that says what it is, with nothing in it.
	if err := w.Flush(); err != nil {
		w.Close()
		return Result{}, fmt.Errorf("%s: %w", file, err)
	}
	var infoErr error
	sink := newTally(w.Rank(rk.Rank))
	release := sigquit.Hold() // SIGQUIT goes to the program
	res, runErr := ptrace.Run(ptrace.Config{
		Argv:           argv,
		Env:            clk.env,
		Sink:           sink,
		Flush:          w.Flush,
		Rank:           rk.Rank,
		Base:           base,
		Rules:          rules,
		All:            o.All,
		ForwardSignals: true,
		Cost:           cost,
		OnStart: func(pid int) {
			infoErr = w.SetRankInfo(rk.Rank, meta.Epoch, host, pid)
		},
	})
	release()
	if err := clk.write(w, rk.Rank, meta.Epoch, res.Virtual); err != nil {
		log.Info(fmt.Sprintf("%s: clock: %v", file, err))
	}
	if cost.Samples > 0 && infoErr == nil {
		infoErr = w.SetRankCost(rk.Rank, cost.Format(res.Corrections))
	}
	closeErr := w.Close()
	summary(log, file, rk, res)
	if closeErr == nil && runErr == nil {
		o.sayRecorded(log, file, rk, sink)
	}
	Unseen{MmapFiles: res.MmapFiles, IOUring: res.IOUring > 0, AIO: res.AIO > 0}.report(log)
	if res.PtraceDenied > 0 {
		by := ""
		if res.PtraceBy != "" {
			by = " (" + res.PtraceBy + ")"
		}
		log.Warn(fmt.Sprintf("the program used ptrace%s, which a ptrace capture cannot allow (a process has one tracer: the kernel refused %s); record it with --preload",
			by, count(int64(res.PtraceDenied), "call")))
	}
	out := Result{Status: res.Status(), Files: []string{file}}
	if err := firstOf(runErr, infoErr, closeErr); err != nil {
		// The program ran (or not); the trace went wrong.
		return out, &TraceError{File: file, Err: err}
	}
	return out, nil
}

func firstOf(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// summary tells, at the debug level (-v), how the program ended and its
// threads.
func summary(log *slog.Logger, file string, rk launcher.Rank, res ptrace.Result) {
	how := fmt.Sprintf("exit status %d", res.ExitCode)
	if res.Signal != 0 {
		how = fmt.Sprintf("killed by signal %d (%v)", int(res.Signal), res.Signal)
	}
	src := ""
	if rk.Source != "" {
		src = " (from " + rk.Source + ")"
	}
	log.Debug(fmt.Sprintf("%s: rank %d%s: %d events of %d threads; pid %d, %s", file, rk.Rank, src, res.Events, len(res.Threads), res.PID, how))
	if len(res.Threads) == 0 {
		return
	}
	var b strings.Builder
	b.WriteString("threads:\nthread\tpid\ttid\tparent")
	for _, t := range res.Threads {
		parent := "-"
		if t.Parent >= 0 {
			parent = fmt.Sprint(t.Parent)
		}
		fmt.Fprintf(&b, "\n%d\t%d\t%d\t%s", t.Index, t.PID, t.TID, parent)
	}
	log.Debug(b.String())
}
