package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/replay/posix"
	"github.com/iotrace/iotrace/report"
	"github.com/iotrace/iotrace/samples"
	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// flags holds the command line.
type flags struct {
	in          cli.Input
	timing      string
	speed       float64
	target      string
	keep        bool
	maps        []string
	dryRun      bool
	prepareOnly bool
	sparse      bool
	direct      bool
	data        string
	strict      bool
	record      string
	format      string
	by          string
	detail      bool
	output      string
	compare     bool
	html        string
	quiet       bool
	walk        bool
	summary     string
	cpuprofile  string

	rankSubset string
	ops        []string
	skipOps    []string
	scaleSize  float64
	align      string
	layout     string
	split      string
	order      string
	servers    int
	stripe     string
	seed       uint64

	mpi     bool     // spread the ranks over the processes of an MPI job
	backend string   // posix or mpiio
	hints   []string // MPI_Info hints of the MPI-IO backend
}

func newRoot() *cobra.Command {
	var f flags
	c := &cobra.Command{
		Use:   "ioreplay [flags] INPUT…",
		Short: "Replay an I/O trace or a pattern script on a file system",
		Long: `ioreplay replays a trace (files, or a directory of them) or a pattern script
(.iop, with --ranks N; or a built-in sample by name, "iotrace samples" lists
them, with its paper's ranks unless --ranks says otherwise). Every rank is a goroutine of this process; barriers,
collectives and messages make the ranks wait for each other as they did.

Timing (--timing): original issues each call at its recorded offset from the
rank's first call (open loop); think keeps the recorded gap between the end of
one call and the start of the next (closed loop); afap issues them back to back.
--speed X divides the gaps. The default is original for a trace and think for a
script: a script's times come from a nominal model, so its calls then run at
the file system's speed and only its sleeps leave gaps.

Everything happens inside --target DIR (default: a new temporary directory,
removed at the end unless --keep). Trace paths lose their common prefix (or
follow --map OLD=NEW); nothing outside DIR is created, written, truncated,
renamed or removed; /dev, /proc, /sys and the standard streams are skipped.
Files the trace finds rather than creates are created first with the size its
reads need of data it did not write itself (--prepare-only stops there;
--dry-run only prints the plan).

At the end ioreplay prints the statistics of its own trace (--record keeps it),
as 'iotrace stats' would, and with --compare the original beside it; --html FILE
also writes them as one HTML page with charts and per-rank timelines.
docs/REPLAY.md explains timing, dependencies, transforms and the safety rules.`,
		Args:          cobra.MinimumNArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			stop, err := startProfile(f.cpuprofile, f.mpi || f.backend == backendMPIIO)
			if err != nil {
				return err
			}
			err = run(cmd, &f, args)
			if perr := stop(); err == nil {
				err = perr
			}
			return err
		},
	}
	fs := c.Flags()
	f.in.AddFlags(fs)
	fs.StringVar(&f.timing, "timing", "", "when calls are issued: original, think or afap (default original for a trace, think for a script)")
	fs.Float64Var(&f.speed, "speed", 1, "divide recorded gaps by this factor (original and think timing)")
	fs.StringVar(&f.target, "target", "", "directory to replay in (default: a new temporary directory)")
	fs.BoolVar(&f.keep, "keep", false, "keep the temporary target directory")
	fs.StringArrayVar(&f.maps, "map", nil, "rewrite the path prefix OLD to NEW inside the target (OLD=NEW, repeatable)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "print the path mapping, the files to prepare and the calls per rank; touch nothing")
	fs.BoolVar(&f.prepareOnly, "prepare-only", false, "create the files the trace reads, then stop")
	fs.BoolVar(&f.sparse, "sparse", false, "prepare files by setting their size only (holes read as zeros)")
	fs.BoolVar(&f.direct, "direct", false, "open files with O_DIRECT (use --align 4096 too)")
	fs.StringVar(&f.data, "data", "pattern", "what writes write: pattern (non-repeating) or fixed (the same bytes every call; flatters compression and dedup)")
	fs.BoolVar(&f.strict, "strict", false, "stop at the first call that fails where the original did not, or is skipped")
	fs.StringVar(&f.record, "record", "", "write the replay's own trace (measured times) to this file")
	fs.StringVar(&f.format, "format", "text", "report format: text, csv, json or markdown")
	fs.StringVar(&f.by, "by", "op", "report table: op, size, rank, file or region")
	fs.BoolVar(&f.detail, "detail", false, "split operation families into their calls in the report")
	fs.StringVarP(&f.output, "output", "o", "", "write the report to this file instead of standard output")
	fs.BoolVar(&f.compare, "compare", false, "put the original beside the replay: counts, time ratios per op, run time ratio")
	fs.StringVar(&f.html, "html", "", "also write an HTML report with charts to this file (with --compare: the original beside the replay)")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress or summary on standard error")
	fs.StringVar(&f.summary, "summary", "", "write the replay's summary (issue lag, failures, skips) as JSON to this file")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "write a CPU profile of ioreplay itself to this file (go tool pprof; with --mpi one per process, FILE.PID)")
	fs.BoolVar(&f.walk, "no-openat2", false, "resolve paths by an O_NOFOLLOW walk even where openat2 exists")
	fs.StringVar(&f.rankSubset, "rank-subset", "", "replay only these ranks, e.g. 0-3,8")
	fs.StringSliceVar(&f.ops, "ops", nil, "keep only these ops, families or classes (posix, meta, mpiio, comm, marker)")
	fs.StringSliceVar(&f.skipOps, "skip-ops", nil, "drop these ops, families or classes")
	fs.Float64Var(&f.scaleSize, "scale-size", 1, "multiply request sizes and offsets by this factor")
	fs.StringVar(&f.align, "align", "", "align offsets and sizes to this many bytes, e.g. 4096")
	fs.StringVar(&f.layout, "layout", "", "shared: files of one rank each become one shared file; fpp: shared files become one per rank")
	fs.StringVar(&f.split, "split", "", "split requests into schedule blocks of this size, e.g. 64KiB")
	fs.StringVar(&f.order, "order", "", "order of schedule blocks: first, random or hash (with --split)")
	fs.IntVar(&f.servers, "servers", 0, "number of I/O servers the file is striped over (with --split)")
	fs.StringVar(&f.stripe, "stripe", "", "stripe unit of the servers (with --split; default: the block size)")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of --order random")
	fs.MarkHidden("no-openat2")
	addMPIFlags(fs, &f)
	return c
}

// options turns the flags into replay options.
func (f *flags) options() (replay.Options, error) {
	var o replay.Options
	var err error
	if f.timing != "" {
		if o.Timing, err = replay.ParseTiming(f.timing); err != nil {
			return o, err
		}
	}
	if f.speed <= 0 {
		return o, fmt.Errorf("--speed %v: want a positive factor", f.speed)
	}
	o.Speed = f.speed
	for _, m := range f.maps {
		r, err := replay.ParseMapRule(m)
		if err != nil {
			return o, err
		}
		o.Map = append(o.Map, r)
	}
	o.Strict = f.strict
	tf := &o.Transforms
	if f.rankSubset != "" {
		if tf.Ranks, err = replay.ParseRanks(f.rankSubset); err != nil {
			return o, fmt.Errorf("--rank-subset: %w", err)
		}
	}
	tf.Ops, tf.SkipOps, tf.Layout = f.ops, f.skipOps, f.layout
	if f.scaleSize <= 0 {
		return o, fmt.Errorf("--scale-size %v: want a positive factor", f.scaleSize)
	}
	tf.ScaleSize = f.scaleSize
	size := func(flag, v string) (int64, error) {
		if v == "" {
			return 0, nil
		}
		n, err := replay.ParseSize(v)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", flag, err)
		}
		return n, nil
	}
	if tf.Align, err = size("--align", f.align); err != nil {
		return o, err
	}
	if tf.Split.Size, err = size("--split", f.split); err != nil {
		return o, err
	}
	if tf.Split.Stripe, err = size("--stripe", f.stripe); err != nil {
		return o, err
	}
	tf.Split.Order, tf.Split.Servers, tf.Split.Seed = f.order, f.servers, f.seed
	if tf.Split.Size == 0 && (f.servers != 0 || f.stripe != "") {
		return o, errors.New("--servers and --stripe need --split SIZE")
	}
	if err := tf.Validate(); err != nil {
		return o, err
	}
	return o, nil
}

func checkChoice(flag, v string, choices []string) error {
	if slices.Contains(choices, v) {
		return nil
	}
	return fmt.Errorf("%s %q: want one of %s", flag, v, strings.Join(choices, ", "))
}

func run(cmd *cobra.Command, f *flags, args []string) (err error) {
	if err := checkMPIFlags(f); err != nil {
		return err
	}
	if f.mpi || f.backend == backendMPIIO {
		return runMPI(cmd, f, args)
	}
	stderr := cmd.ErrOrStderr()
	if err := checkChoice("--format", f.format, report.Formats); err != nil {
		return err
	}
	if err := checkChoice("--by", f.by, report.Views); err != nil {
		return err
	}
	if err := checkChoice("--data", f.data, []string{"pattern", "fixed"}); err != nil {
		return err
	}
	opts, err := f.options()
	if err != nil {
		return err
	}
	t, err := openInput(&f.in, args, stderr)
	if err != nil {
		return err
	}
	if f.timing == "" {
		opts.Timing = replay.DefaultTiming(t)
	}
	defer func() {
		if cerr := t.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()

	// The target: given, or a new temporary directory.
	target, temp := f.target, false
	if target != "" {
		if target, err = filepath.Abs(target); err != nil {
			return err
		}
		if target == "/" {
			return errors.New("--target /: refusing to replay into the root directory")
		}
	}
	rp, err := replay.New(t, opts)
	if err != nil {
		return err
	}
	if f.dryRun {
		return printPlan(cmd.OutOrStdout(), rp, f, target)
	}

	if target == "" {
		if target, err = os.MkdirTemp("", "ioreplay-"); err != nil {
			return err
		}
		temp = true
		defer func() {
			if f.keep {
				fmt.Fprintf(stderr, "ioreplay: kept the target directory %s\n", target)
				return
			}
			if rerr := os.RemoveAll(target); err == nil && rerr != nil {
				err = fmt.Errorf("removing the target directory: %w", rerr)
			}
		}()
	} else if err := os.MkdirAll(target, 0o755); err != nil {
		return fmt.Errorf("--target: %w", err)
	}
	be, err := posix.New(posix.Options{Target: target, Direct: f.direct, Sparse: f.sparse, Walk: f.walk, FixedData: f.data == "fixed"})
	if err != nil {
		return err
	}
	defer be.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	plan := rp.Plan()
	if !f.quiet && plan.Bytes() > 64<<20 {
		fmt.Fprintf(stderr, "ioreplay: preparing %d files (%s) in %s\n", len(plan.Files), report.HumanBytes(plan.Bytes()), target)
	}
	if err := be.Prepare(ctx, plan); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "ioreplay: interrupted while preparing the files the trace reads; nothing was replayed")
			return cli.ExitError{Code: 130}
		}
		return err
	}
	if c := be.Conflicts(); len(c) > 0 && !f.quiet {
		for i, s := range c {
			if i == 10 {
				fmt.Fprintf(stderr, "ioreplay: warning: … and %d more in the way\n", len(c)-10)
				break
			}
			fmt.Fprintf(stderr, "ioreplay: warning: prepare: %s (left as it is; the calls on it fail or are skipped)\n", s)
		}
	}
	if f.prepareOnly {
		fmt.Fprintf(cmd.OutOrStdout(), "prepared %d files (%s) and %d directories in %s\n",
			len(plan.Files), report.HumanBytes(plan.Bytes()), len(plan.Dirs), target)
		if temp && !f.keep {
			fmt.Fprintln(stderr, "ioreplay: note: the temporary target is removed at exit; use --target DIR or --keep")
		}
		return nil
	}

	// The replay's own trace.
	recPath, recTemp := f.record, false
	if recPath == "" {
		tf, err := os.CreateTemp("", "ioreplay-*.iot")
		if err != nil {
			return err
		}
		recPath, recTemp = tf.Name(), true
		tf.Close()
		defer os.Remove(recPath)
	}
	host, _ := os.Hostname()
	meta := trace.Meta{
		Command: os.Args, Hosts: []string{host}, Clock: "CLOCK_MONOTONIC",
		Epoch: time.Now().UnixNano(), Ranks: len(plan.Ranks), Creator: "ioreplay",
	}
	w, err := format.CreateOptions(recPath, meta, format.Options{BlockEvents: recordBlock(len(plan.Ranks))})
	if err != nil {
		return fmt.Errorf("--record: %w", err)
	}
	out := replay.Output{Target: target, Record: func(r uint32) trace.Sink { return w.Rank(r) }}

	progressDone := make(chan struct{})
	progressStopped := make(chan struct{})
	go progress(stderr, rp, f.quiet, progressDone, progressStopped)
	res, runErr := rp.Run(ctx, be, out)
	close(progressDone)
	<-progressStopped
	if cerr := w.Close(); runErr == nil && cerr != nil {
		runErr = fmt.Errorf("writing the replay's trace: %w", cerr)
	}
	if f.summary != "" && res != nil {
		if err := writeSummary(f.summary, res); err != nil && runErr == nil {
			runErr = err
		}
	}
	if runErr != nil {
		if res != nil && !f.quiet {
			res.WriteSummary(stderr)
		}
		return runErr
	}
	if res.Interrupted {
		return interrupted(stderr, res, recPath, !recTemp)
	}
	return writeReport(cmd, f, t, args, recPath, res)
}

// recordBlock is the number of events in a block of the replay's own
// trace, for a replay of ranks ranks. Each rank's writer holds its open
// block unencoded, about 64 bytes an event, so the ranks share a budget of
// 2^20 events (64 MiB): 16,384 each up to 64 ranks, 1,024 each at 1,024
// ranks, never fewer than 256. (At 1,024 ranks × 5,000 calls a budget four
// times larger made the trace 14 % smaller and the replay's peak RSS 1.6
// times larger.)
func recordBlock(ranks int) int {
	return min(16384, max(256, (1<<20)/max(ranks, 1)))
}

// writeReport prints the statistics of the replay's trace, the summary
// of the replay and, with --compare, the comparison with the original.
func writeReport(cmd *cobra.Command, f *flags, orig trace.Trace, inputs []string, recPath string, res *replay.Result) (err error) {
	rt, err := format.Open(recPath)
	if err != nil {
		return fmt.Errorf("reading the replay's trace: %w", err)
	}
	defer rt.Close()
	opts := report.Options{Detail: f.detail, Access: f.html != ""}
	st, err := report.Compute(rt, opts)
	if err != nil {
		return fmt.Errorf("reading the replay's trace: %w", err)
	}
	out := cmd.OutOrStdout()
	if f.output != "" && f.output != "-" {
		file, err := os.Create(f.output)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := file.Close(); err == nil {
				err = cerr
			}
		}()
		out = file
	}
	bw := bufio.NewWriter(out)
	if err := report.Render(bw, st, f.by, f.format); err != nil {
		return err
	}
	textual := f.format == "text" || f.format == "markdown"
	if textual {
		fmt.Fprintln(bw)
		res.WriteSummary(bw)
	} else if !f.quiet {
		res.WriteSummary(cmd.ErrOrStderr())
	}
	var cmp *report.Comparison
	if f.compare {
		ost, err := report.Compute(orig, opts)
		if err != nil {
			return fmt.Errorf("reading the original: %w", err)
		}
		cmp = report.Compare(ost, st)
		if textual {
			fmt.Fprintln(bw)
			fmt.Fprintln(bw, "Original (a) and replay (b):")
			fmt.Fprintln(bw)
		}
		if err := report.RenderCompare(bw, cmp, f.format); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if f.html != "" {
		return writeHTML(f.html, st, cmp, inputs, res)
	}
	return nil
}

// writeHTML writes the HTML report of the replay (with cmp, beside the
// original) and its summary to path.
func writeHTML(path string, st *report.Stats, cmp *report.Comparison, inputs []string, res *replay.Result) error {
	var sum strings.Builder
	res.WriteSummary(&sum)
	o := report.HTMLOptions{Title: "Replay report", Inputs: inputs, NameA: "original", NameB: "replay",
		Notes: []report.HTMLNote{{Title: "Replay", Text: sum.String()}}}
	file, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	bw := bufio.NewWriter(file)
	if cmp != nil {
		err = report.RenderCompareHTML(bw, cmp, o)
	} else {
		err = report.RenderHTML(bw, st, o)
	}
	if err == nil {
		err = bw.Flush()
	}
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	return nil
}

// progress prints how far the replay got, every second from the second
// second on, when stderr is a terminal.
func progress(w io.Writer, rp *replay.Replay, quiet bool, done <-chan struct{}, stopped chan<- struct{}) {
	defer close(stopped)
	if quiet || !isTerminal(w) {
		<-done
		return
	}
	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	shown := false
	for {
		select {
		case <-done:
			if shown {
				fmt.Fprint(w, "\r\033[K")
			}
			return
		case <-tick.C:
			el := time.Since(start)
			if el < 2*time.Second {
				continue
			}
			d, total := rp.Progress()
			pct := 100.0
			if total > 0 {
				pct = 100 * float64(d) / float64(total)
			}
			fmt.Fprintf(w, "\r\033[Kioreplay: %5.1f %% (%d of %d events), %s", pct, d, total, el.Round(time.Second))
			shown = true
		}
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// printPlan prints what a replay would do.
func printPlan(w io.Writer, rp *replay.Replay, f *flags, target string) error {
	bw := bufio.NewWriter(w)
	p := rp.Plan()
	if target == "" {
		target = "(a new temporary directory)"
	}
	fmt.Fprintf(bw, "dry run: %d ranks, %d events, timing %s, target %s\n", len(p.Ranks), p.Events, rp.Timing(), target)
	fmt.Fprintf(bw, "\npaths (common prefix %s):\n", p.Prefix)
	for _, e := range p.Paths {
		switch e.Note {
		case replay.NoteSpecial:
			fmt.Fprintf(bw, "  %q -> (skipped: /dev, /proc or /sys)\n", e.Trace)
		case replay.NoteKernel:
			fmt.Fprintf(bw, "  %q -> (skipped: pipe, socket or other kernel object)\n", e.Trace)
		case replay.NoteClamped:
			fmt.Fprintf(bw, "  %q -> %q (\"..\" kept inside the target)\n", e.Trace, e.Target)
		default:
			fmt.Fprintf(bw, "  %q -> %q\n", e.Trace, e.Target)
		}
	}
	fmt.Fprintf(bw, "\ndirectories to create: %d\n", len(p.Dirs))
	for _, d := range p.Dirs {
		fmt.Fprintf(bw, "  %q\n", d)
	}
	fmt.Fprintf(bw, "\nfiles to prepare: %d (%s)\n", len(p.Files), report.HumanBytes(p.Bytes()))
	for _, fl := range p.Files {
		fmt.Fprintf(bw, "  %q %d bytes\n", fl.Path, fl.Size)
	}
	fmt.Fprintln(bw, "\ncalls per rank:")
	for _, rc := range p.PerRank {
		ops := make([]trace.Op, 0, len(rc.Ops))
		for op := range rc.Ops {
			ops = append(ops, op)
		}
		slices.Sort(ops)
		parts := make([]string, len(ops))
		for i, op := range ops {
			parts[i] = fmt.Sprintf("%s %d", op, rc.Ops[op])
		}
		fmt.Fprintf(bw, "  rank %d: %d events: %s\n", rc.Rank, rc.Events, strings.Join(parts, ", "))
	}
	return bw.Flush()
}

// openInput opens the trace files, or the pattern script, to replay. A
// script is not expanded: the replay runs it (replay.ScriptTrace).
func openInput(in *cli.Input, args []string, warn io.Writer) (trace.Trace, error) {
	return in.Open(args, scriptInputs{}, warn)
}

// scriptInputs opens the pattern scripts ioreplay runs: a file, or the
// built-in sample an argument names (samples.Arg), bound to its ranks and
// parameters but not expanded, unlike iotrace's, which expands them.
type scriptInputs struct{}

func (scriptInputs) Open(path string, ranks int, params, groups map[string]string) (trace.Trace, error) {
	var prog *script.Program
	var err error
	if s, ok := samples.Arg(path); ok {
		prog, err = s.Compile()
	} else {
		prog, err = script.Load(path)
	}
	if err != nil {
		return nil, err
	}
	inst, err := prog.Instantiate(script.Config{Ranks: ranks, Params: params, Groups: groups})
	if err != nil {
		return nil, err
	}
	return replay.ScriptTrace(inst), nil
}

func (scriptInputs) Sample(name string) (int, bool) {
	s, ok := samples.Arg(name)
	return s.Ranks, ok
}

// interrupted prints how far an interrupted replay got, and where its
// partial trace is when it is kept, and returns the exit status of an
// interruption.
func interrupted(w io.Writer, res *replay.Result, recPath string, kept bool) error {
	msg := "ioreplay: interrupted: " + res.Progress()
	if kept {
		msg += "; the partial replay trace is in " + recPath
	}
	fmt.Fprintln(w, msg)
	return cli.ExitError{Code: 130}
}

func writeSummary(path string, res *replay.Result) error {
	file, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--summary: %w", err)
	}
	if err := res.WriteJSON(file); err != nil {
		file.Close()
		return fmt.Errorf("--summary: %w", err)
	}
	return file.Close()
}
