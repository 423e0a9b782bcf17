package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/convert"
	"github.com/iotrace/iotrace/internal/logline"
	"github.com/iotrace/iotrace/internal/outfile"
	"github.com/iotrace/iotrace/internal/profile"
	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/replay/session"
	"github.com/iotrace/iotrace/report"
	"github.com/iotrace/iotrace/trace"
)

const (
	backendPOSIX = "posix"
	backendMPIIO = "mpiio"
)

// runProfiled runs the replay, with a CPU profile of ioreplay if asked.
func runProfiled(o *options, args []string, s cli.IO) error {
	stop, err := profile.CPU(o.cpuprofile, o.mpi || o.backend == backendMPIIO)
	if err != nil {
		return err
	}
	err = run(o, args, s)
	if perr := stop(); err == nil {
		err = perr
	}
	return err
}

// run replays the inputs args in the team the options choose: this
// process alone, or the processes of an MPI job (--mpi; a job of one
// process for --backend mpiio).
func run(o *options, args []string, s cli.IO) error {
	team, closeTeam, err := newTeam(o, s)
	if err != nil {
		return err
	}
	err = runIn(team, o, args, s)
	if cerr := closeTeam(); err == nil {
		err = cerr
	}
	if errors.Is(err, session.ErrReported) {
		// Process 0 says why and ends the job with its exit code. The
		// others end quietly with 0: mpirun ends the whole job at the
		// first process that exits non-zero, and one that did so here,
		// out of MPI_Finalize, would end process 0 before it said why.
		return nil
	}
	return err
}

// runIn replays in team: the same steps on every process.
func runIn(team session.Team, o *options, args []string, s cli.IO) error {
	so, err := o.session(s)
	if err == nil {
		err = outfile.FileOnly("--record", o.replay.Record, "the replay's trace")
	}
	if err == nil {
		err = outfile.NotInput([]outfile.Output{{Flag: "--record", Name: o.replay.Record}, {Flag: "--summary", Name: o.summary},
			{Flag: "--output", Name: o.output}, {Flag: "--html", Name: o.html}}, args)
	}
	if err == nil && team.Lead() {
		err = o.files.open(o)
	}
	defer o.files.abort()
	if err := session.Agree(team, err); err != nil {
		return err
	}
	o.in.Script, o.in.Stdin = replay.ScriptTrace, s.In
	open := func(warn io.Writer) (trace.Trace, error) {
		o.in.Warn = warn
		return o.in.Open(args)
	}
	// The signals first: signal.Notify hands each signal to the runtime's
	// signal thread and waits for it, which took 0.3 ms instead of 0.08
	// with WarmJSON's goroutine just started.
	ctx, stop := interruptible(s.Err)
	defer stop()
	if o.summary != "" && runtime.GOMAXPROCS(0) > 1 {
		go report.WarmJSON() // on a processor to spare, not after the ranks
	}
	out, err := session.Run(ctx, open, so, team)
	if out != nil {
		defer o.closeOutcome(out, s)
	}
	switch {
	case errors.Is(err, session.ErrPrepareInterrupted):
		fmt.Fprintf(s.Err, "ioreplay: %v\n", err)
		return cli.ExitError{Code: 130}
	case err != nil && out != nil && out.Result != nil:
		// The replay failed: what it did before.
		rp := report.ReplayOf(out.Result.PerRank)
		o.writeSummary(rp, s.Out)
		if !o.quiet {
			rp.WriteText(s.Err)
		}
		return err
	case err != nil:
		return err
	case out.Done:
		return nil
	}
	return o.finish(out, args, s)
}

// finish reports a replay that ran, from the statistics computed while
// it ran or else from its trace: its summary, how far an interrupted one
// got, what the team did, and the report.
func (o *options) finish(out *session.Outcome, args []string, s cli.IO) error {
	var st *report.Stats
	if out.Observed {
		st = o.live.Stats(out.ObservedRanks, report.ReplayOf(out.Result.PerRank))
	} else {
		var err error
		if st, err = cli.Stats(&convert.Opener{}, []string{out.Record}, s, o.reportOptions()); err != nil {
			return fmt.Errorf("reading the replay's trace: %w", err)
		}
	}
	if st.Replay == nil {
		return errors.New("the replay's trace does not say how the replay went")
	}
	if err := o.writeSummary(st.Replay, s.Out); err != nil {
		return err
	}
	if st.Replay.Interrupted {
		msg := "ioreplay: interrupted: " + st.Replay.Progress()
		if out.RecordKept {
			msg += "; the partial replay trace is in " + out.Record
		}
		fmt.Fprintln(s.Err, msg)
		return cli.ExitError{Code: 130}
	}
	if out.Team != "" && !o.quiet {
		fmt.Fprintln(s.Err, out.Team)
	}
	orig, err := out.Original()
	if err != nil {
		return err
	}
	return o.writeReport(st, orig, args, s)
}

// closeOutcome removes what the session made for itself and says where a
// kept temporary target is.
func (o *options) closeOutcome(out *session.Outcome, s cli.IO) {
	if err := out.Close(); err != nil {
		fmt.Fprintf(s.Err, "ioreplay: %v\n", err)
	}
	if out.KeptTarget {
		fmt.Fprintf(s.Err, "ioreplay: kept the target directory %s\n", out.Target)
	} else if o.replay.PrepareOnly && o.replay.Target == "" && out.Target != "" {
		fmt.Fprintln(s.Err, "ioreplay: note: the temporary target is removed at exit; use --target DIR or --keep")
	}
}

// writeSummary writes the replay's summary as JSON (--summary), whole or
// not at all.
func (o *options) writeSummary(rp *report.Replay, stdout io.Writer) error {
	if o.summary == "" {
		return nil
	}
	if err := o.files.write(&o.files.summary, o.summary, stdout, rp.WriteJSON); err != nil {
		return fmt.Errorf("--summary: %w", err)
	}
	return nil
}

// outputs are the files ioreplay writes at its end, opened before it
// replays (outfile.Create): a name that cannot be written — a directory
// that does not exist, one without write permission, a full or
// read-only file system — fails the command before the replay, not after
// hours of it, and the files appear whole at the end or not at all. A
// file opened so has no name until it is complete, where the file system
// allows (outfile.File): a replay killed meanwhile leaves none behind.
type outputs struct {
	summary, output, html *outfile.File
}

// open opens the outputs that go to files; standard output ("-", or no
// --output) is not opened. At most one of them may go to standard output.
func (f *outputs) open(o *options) error {
	outs := []struct {
		flag, name string
		stdout     bool // "" is standard output too
		file       **outfile.File
	}{
		{"--output", o.output, true, &f.output},
		{"--summary", o.summary, false, &f.summary},
		{"--html", o.html, false, &f.html},
	}
	var toStdout []string
	seen := map[string]string{}
	for _, out := range outs {
		if out.name == "-" || out.name == "" && out.stdout {
			toStdout = append(toStdout, out.flag)
			continue
		}
		if out.name == "" {
			continue
		}
		if abs, err := filepath.Abs(out.name); err == nil {
			if prev, ok := seen[abs]; ok {
				return fmt.Errorf("%s and %s name the same file, %s", prev, out.flag, out.name)
			}
			seen[abs] = out.flag
		}
	}
	switch {
	case len(toStdout) > 1 && o.output == "":
		return fmt.Errorf("%s -: standard output carries the report: give %s a file name, or the report one with --output FILE", toStdout[1], toStdout[1])
	case len(toStdout) > 1:
		return fmt.Errorf("%s and %s would both go to standard output: give one of them a file name", toStdout[0], toStdout[1])
	}
	for _, out := range outs {
		file, err := outfile.Open(out.name)
		if err != nil {
			f.abort()
			return fmt.Errorf("%s: %w", out.flag, err)
		}
		*out.file = file
	}
	return nil
}

// write writes an output through write: to its file opened before the
// replay, or else (a process that is not the team's lead) to name, or to
// stdout for "-".
func (f *outputs) write(file **outfile.File, name string, stdout io.Writer, write func(io.Writer) error) error {
	if *file != nil {
		of := *file
		*file = nil
		return of.Put(stdout, write)
	}
	return outfile.Write(name, stdout, write)
}

// abort removes the outputs not written.
func (f *outputs) abort() {
	for _, file := range []**outfile.File{&f.summary, &f.output, &f.html} {
		(*file).Abort()
		*file = nil
	}
}

// session turns the options into those of a replay session.
func (o *options) session(s cli.IO) (session.Options, error) {
	if err := o.checkChoices(); err != nil {
		return session.Options{}, err
	}
	so, err := o.replay.Options()
	if err != nil {
		return session.Options{}, err
	}
	so.Command, so.Out, so.Warn = os.Args, s.Out, s.Err
	so.Observe = func(path func(trace.PathID) string) session.Observer {
		o.live = report.NewLive(path, o.reportOptions())
		return o.live
	}
	so.Log = logline.New(io.Discard, "ioreplay", false)
	if !o.quiet {
		so.Log = logline.New(s.Err, "ioreplay", false)
		if logline.IsTerminal(s.Err) {
			so.Progress = s.Err
		}
	}
	return so, nil
}

// checkChoices checks the options of the report and of the team.
func (o *options) checkChoices() error {
	for _, c := range []struct {
		flag, v string
		choices []string
	}{
		{"--format", o.format, cli.Formats},
		{"--by", o.by, report.Views},
		{"--backend", o.backend, []string{backendPOSIX, backendMPIIO}},
	} {
		if err := cli.CheckChoice(c.flag, c.v, c.choices); err != nil {
			return err
		}
	}
	for _, h := range o.hints {
		if k, _, ok := strings.Cut(h, "="); !ok || k == "" {
			return fmt.Errorf("--hint %q: want KEY=VALUE", h)
		}
	}
	if len(o.hints) > 0 && o.backend != backendMPIIO {
		return errors.New("--hint is for --backend mpiio")
	}
	if o.peerTimeout <= 0 {
		return fmt.Errorf("--peer-timeout %v: want a positive duration, such as 1m", o.peerTimeout)
	}
	if o.replay.Direct && o.backend == backendMPIIO {
		return errors.New("--direct is for --backend posix (give the MPI library's hint for direct I/O instead, e.g. --hint direct_write=true)")
	}
	return nil
}

// alone is the team of this process alone.
func alone() (session.Team, func() error, error) {
	t, err := session.NewAlone()
	return t, func() error { return nil }, err
}

// reportOptions are the options of the replay's report.
func (o *options) reportOptions() report.Options {
	return report.Options{Detail: o.detail}.For(o.by, o.html != "" || o.format == "html")
}

// interruptible returns a context that the first SIGINT or SIGTERM
// cancels: the replay stops, says how far it got and keeps its partial
// trace. A second signal ends the process at once, with one line and
// exit status 130, whatever is still being written (what the replay made
// for itself, as its temporary target, is removed). stop releases the
// signals.
func interruptible(errw io.Writer) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	quit := make(chan struct{})
	go func() {
		select {
		case <-ch:
			cancel()
		case <-quit:
			return
		}
		select {
		case <-ch:
			clear := "" // the progress line, on a terminal
			if logline.IsTerminal(errw) {
				clear = "\r\x1b[K"
			}
			session.RemoveTemporaries()
			fmt.Fprintln(errw, clear+"ioreplay: interrupted twice: stopped at once; a --record trace or --target directory you named may be incomplete")
			os.Exit(130)
		case <-quit:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(quit)
		cancel()
	}
}
