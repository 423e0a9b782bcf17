// Package session runs a replay from start to end, as ioreplay does:
// the target directory (given, or a temporary one), the plan, the
// backend, the prepare phase, the replay's own trace (its metadata, its
// block size, its parts), progress, and the result.
//
// A replay runs in a Team: this process alone (Alone), or the processes
// of an MPI job, each running its share of the ranks (replay/mpi.Team).
// Run takes the same steps in both, in the same order on every process,
// so that an option means the same standalone and under MPI; the team
// adds what a job needs between them (agreement on errors, the shared
// target, the exchange of results and of the parts of the trace).
package session

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/replay/posix"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
	"github.com/iotrace/iotrace/trace/target"
	"github.com/iotrace/iotrace/trace/units"
)

// Options configure a session.
type Options struct {
	// Replay are the replay's options: timing, speed, path mapping,
	// transforms, strictness.
	Replay replay.Options
	// DefaultTiming replaces Replay.Timing by the input's own
	// (replay.DefaultTiming: original for a trace, think for a script).
	DefaultTiming bool
	// Target is the directory the replay works in; "" makes a temporary
	// one, removed at the end unless Keep. A given one is made if its
	// parent exists (only its last component: a typo must not make a tree
	// at the root).
	Target string
	Keep   bool
	// NodeLocal says the target is storage of each node's own (a local
	// disk, /tmp, a burst buffer): the first process of every node
	// prepares it there and the node's ranks replay into it; otherwise
	// every process must see the one directory the lead prepares.
	NodeLocal bool
	// Force replays into a Target that already holds files the trace
	// reaches (the replay overwrites, truncates or removes them); without
	// it such a replay stops before it touches anything, naming them.
	Force bool
	// DryRun plans and writes the plan to Out; nothing is touched.
	DryRun bool
	// PrepareOnly stops after the prepare phase.
	PrepareOnly bool
	// NoSpaceCheck replays even when the target's file system has less
	// free space than the trace's files take (Plan.CheckSpace).
	NoSpaceCheck bool
	// Files are the POSIX backend's options (its Target is the
	// session's): direct I/O, sparse prepare, the data written, path
	// resolution. Every backend of every team honours them.
	Files posix.Options
	// Record is where the replay's own trace goes. "" records none when
	// the report is computed while the replay runs (Observe, one
	// process): nothing would read it, and encoding and writing it took
	// a processor and a file system the replay measures; else "" is a
	// temporary file, removed by Outcome.Close.
	Record string
	// Cache is the state of the page cache the timed phase starts in:
	// every process puts the target's files in it, for its node, after
	// the prepare phase.
	Cache posix.Cache
	// Command is the command line, for the trace's metadata.
	Command []string
	// Out receives the plan of a dry run and what PrepareOnly prepared.
	Out io.Writer
	// Progress, when not nil (a terminal), shows how far the replay got.
	Progress io.Writer
	// Log receives diagnostics: what prepare found in the way (warnings),
	// the size of a large prepare phase (info); nil discards them.
	Log *slog.Logger
	// Warn receives, on the lead, the input's warnings (damage read past,
	// what an import left out); nil discards them.
	Warn io.Writer
	// Observe, if set, makes a process that records the whole replay's
	// trace give every batch of events it records to the Observer it
	// returns (given the names of the trace's paths): the caller computes
	// the replay's statistics while it runs (report.Live) instead of
	// reading its trace afterwards. The session knows nothing of reports.
	Observe func(path func(trace.PathID) string) Observer
}

// An Observer sees the events of the replay's trace as they are recorded,
// a rank's batches in order, from any goroutine.
type Observer interface {
	Add(rank uint32, evs []trace.Event)
}

// Input opens the trace to replay, its warnings going to warn. Every
// process of a team opens it.
type Input func(warn io.Writer) (trace.Trace, error)

// Outcome is what a session did.
type Outcome struct {
	// Input is the trace replayed (open until Close).
	Input  trace.Trace
	Replay *replay.Replay
	// Result is the result of this process's ranks. How the whole replay
	// went is in its trace (Record), for report.Compute.
	Result *replay.Result
	// Observed says that Options.Observe's observer saw every event of
	// the replay's trace, of the ranks in ObservedRanks; false: a team
	// whose processes each record a part of the trace leaves its
	// statistics to a reading of the merged trace.
	Observed      bool
	ObservedRanks []uint32
	// Record is the replay's own trace ("": none was written, the
	// report was computed while the replay ran); RecordKept says it
	// stays after Close (Options.Record was given).
	Record     string
	RecordKept bool
	// Target is the directory the replay ran in; KeptTarget says a
	// temporary one was kept (Options.Keep).
	Target     string
	KeptTarget bool
	// Parts is the directory, on each process's host, where the
	// processes of a team that records in parts (Team.Parted) write
	// theirs: process-NNNNN.iot, removed once merged into Record. A
	// replay that fails keeps them.
	Parts string
	// Team is what the team says of itself after the run ("" alone).
	Team string
	// Done says there is nothing to report: a dry run, a prepare-only
	// run, or a process other than the lead.
	Done bool

	cleanup []func() error
}

// Original is the input as a comparison holds the replay against it:
// seen through the replay's selectors (ranks, ops, paths, time), not
// through the transforms that rewrite calls.
func (o *Outcome) Original() (trace.Trace, error) {
	return o.Replay.Options().Transforms.Selecting().Apply(o.Input)
}

// Close removes what the session made for itself: a temporary target
// (unless kept) and a temporary trace.
func (o *Outcome) Close() error {
	var first error
	for i := len(o.cleanup) - 1; i >= 0; i-- {
		if err := o.cleanup[i](); err != nil && first == nil {
			first = err
		}
	}
	o.cleanup = nil
	return first
}

// ErrReported is the error of a process whose job failed on another
// process, which reports it: this process has nothing to add.
var ErrReported = errors.New("the replay failed (another process reports why)")

// Agree is team.Agree(err), but on the processes other than the lead,
// which reports the error, ErrReported.
func Agree(team Team, err error) error {
	err = team.Agree(err)
	if err != nil && !team.Lead() {
		return ErrReported
	}
	return err
}

// ErrPrepareInterrupted says an interrupt stopped the prepare phase:
// nothing was replayed.
var ErrPrepareInterrupted = errors.New("interrupted while preparing the files the trace reads; nothing was replayed")

// A Team is the processes that run one replay together. Run calls its
// methods in the same order on every process.
type Team interface {
	// Lead reports whether this process names the temporary target,
	// prepares it, merges the replay's trace and reports.
	Lead() bool
	// Process is this process's number in the team (0 for the lead): it
	// names its part of the replay's trace.
	Process() int
	// Prepares reports whether this process prepares the target: the
	// lead, or, when each node has a target of its own (nodeLocal), the
	// first process of each node.
	Prepares(nodeLocal bool) bool
	// Agree returns nil if every process's err is nil, and otherwise, on
	// every process, the error of the first process that failed.
	Agree(err error) error
	// Broadcast returns the lead's s on every process.
	Broadcast(s string) string
	// Join sets the options of this process's part of the replay: the
	// ranks it runs (Share) and their communication layer (World).
	Join(o *replay.Options)
	// Share returns the ranks of ranks this process runs.
	Share(ranks []uint32) []uint32
	// Parted reports whether each process records a part of the
	// replay's trace, which Parts collects; otherwise this process
	// records the whole trace.
	Parted() bool
	// Plan checks the plan with the other processes and makes what the
	// team needs of it (the communicators of an MPI job). Its error is
	// agreed.
	Plan(rp *replay.Replay) error
	// Backend returns the backend of this process's ranks, over the
	// POSIX backend px (which does the metadata calls and prepares).
	Backend(px *posix.Backend) (replay.Backend, error)
	// SameTarget checks, before the target is prepared, that every
	// process sees the directory its preparer (Prepares) prepares: the
	// lead's, or with nodeLocal its node's, and then that no two nodes
	// share one. Its error is agreed.
	SameTarget(target string, nodeLocal bool) error
	// Start makes the communication layer of this process's ranks, just
	// before they run, and returns the context they run in: the team
	// cancels it, with the reason as its cause, when the run cannot go on
	// (a process of the job stopped answering).
	Start(ctx context.Context) context.Context
	// Barrier waits for every process: the ranks of all of them start
	// together.
	Barrier()
	// Finish ends the run of this process's ranks: it waits for the
	// other processes' ranks. runErr is this process's error (res its
	// result, part its part of the replay's trace, complete); a team
	// whose other processes may wait for this one's ranks stops the job
	// on it, and so does a team that lost a process.
	Finish(res *replay.Result, part string, runErr error) error
	// Parts collects the part of the replay's trace each process wrote
	// (part, on this process) and returns, on the lead, the files that
	// hold them all; nil when part is the whole trace.
	Parts(part string) ([]string, error)
	// Describe says, for a dry run, how the team shares the ranks ("" alone).
	Describe(ranks []uint32) string
	// Summary says, after the run, what the team did ("" alone).
	Summary(ranks []uint32) string
}

// Run replays the input in team. The error of a process other than the
// lead is ErrReported when the lead reports it.
func Run(ctx context.Context, in Input, o Options, team Team) (out *Outcome, err error) {
	out = &Outcome{}
	made := out // what to clean up when a step fails (the step returns nil)
	defer func() {
		// A failed session removes what it made (its returns set out to
		// nil), unless ranks ran: their result is reported.
		if err != nil && (out == nil || out.Result == nil) {
			made.Close()
			out = nil
		}
	}()
	lead := team.Lead()
	fail := func(err error) error {
		if err == nil || lead {
			return err
		}
		return ErrReported
	}
	agree := func(err error) error { return Agree(team, err) }
	warn := io.Discard
	if lead && o.Warn != nil {
		warn = o.Warn
	}
	t, err := in(warn)
	if err := agree(err); err != nil {
		return nil, err
	}
	out.Input = t
	out.cleanup = append(out.cleanup, t.Close)
	if o.DefaultTiming {
		o.Replay.Timing = replay.DefaultTiming(t)
	}
	if o.Replay.Predict && replay.IsScript(t) {
		err = errors.New("--predict predicts a captured application from its trace; a pattern script has no capture (use --timing think)")
	}
	if err := agree(err); err != nil {
		return nil, err
	}
	if err := agree(out.target(&o, team)); err != nil {
		return nil, err
	}
	team.Join(&o.Replay)
	var ready func()
	o.Replay.Ready = func() { ready() }
	if !o.DryRun && runtime.GOMAXPROCS(0) > 1 {
		// The data the backends write (built once per process, a third of
		// a millisecond) and the clock's look at /proc/cpuinfo, on a
		// processor the plan leaves idle.
		go replay.Warm()
	}
	rp, err := replay.New(t, o.Replay)
	if err := agree(err); err != nil {
		return nil, err
	}
	out.Replay = rp
	plan := rp.Plan()
	if o.DryRun {
		out.Done = true
		if lead {
			return out, writeDryRun(o.Out, rp, o.Target, o.Files.Sparse, team.Describe(plan.Ranks))
		}
		return out, nil
	}
	if lead && o.Target != "" && !o.Force {
		err = inTheWay(out.Target, &plan.Layout)
	}
	if err := agree(err); err != nil {
		return nil, err
	}
	if !lead || o.Target != "" {
		err = makeTarget(out.Target)
	}
	if err := agree(err); err != nil {
		return nil, err
	}
	if err := fail(team.Plan(rp)); err != nil {
		return nil, err
	}
	files := o.Files
	files.Target = out.Target
	// One process's ranks see each other's renames; several processes'
	// do not (posix.Options.KeepDirs).
	files.KeepDirs = !team.Parted()
	px, err := posix.New(files)
	if err := agree(err); err != nil {
		return nil, err
	}
	be, err := team.Backend(px)
	if err := agree(err); err != nil {
		px.Close()
		return nil, err
	}
	defer be.Close()

	// Every process checks it sees the target its preparer prepares
	// (the lead's, or its node's); then the preparers prepare.
	if err := fail(team.SameTarget(out.Target, o.NodeLocal)); err != nil {
		return nil, err
	}
	var perr error
	if team.Prepares(o.NodeLocal) {
		if !o.NoSpaceCheck {
			perr = plan.CheckSpace(out.Target, o.Files.Sparse)
		}
		if perr == nil {
			perr = prepare(ctx, &o, be, px, plan, out.Target)
		}
	}
	if err := agree(perr); err != nil {
		return nil, err
	}
	if o.PrepareOnly {
		out.Done = true
		if lead {
			fmt.Fprintf(o.Out, "prepared %d files (%s) and %d directories in %s\n",
				len(plan.Files), units.Bytes(plan.Bytes()), len(plan.Dirs), out.Target)
		}
		return out, nil
	}

	_, cerr := px.SetCache(ctx, o.Cache, &plan.Layout)
	if ctx.Err() != nil {
		cerr = ErrPrepareInterrupted
	} else if cerr != nil {
		cerr = fmt.Errorf("--cache %s: %w", o.Cache, cerr)
	}
	if err := agree(cerr); err != nil {
		return nil, err
	}

	// Each process records its ranks, into the replay's trace or a part
	// of it — or, where nothing would read the trace, nowhere (Record).
	own := team.Share(plan.Ranks)
	unrecorded := o.Record == "" && o.Observe != nil && !team.Parted()
	// (HoldLimit reads the cgroup's files: only where it may warn.)
	if p := runtime.GOMAXPROCS(0); o.Replay.Predict && o.Record != "" && !team.Parted() && len(own) >= p && lead {
		if hold := replay.HoldLimit(); plan.Events > int64(hold) {
			// A predicting replay holds its events back until the ranks end
			// (Output.Hold), up to HoldLimit. Measured: mdtest with fsync on
			// tmpfs, 2 ranks on 2 processors, predicted within 6 % of its
			// capture with its trace written afterwards, +70 to +110 % with it
			// encoded while the ranks ran.
			logger(o.Log).Warn(fmt.Sprintf("--record under --predict: the replay's %d events are more than it holds back until its ranks end (%d): encoding the rest while %d ranks run on %d processors takes processor time from the calls the prediction measures; for the prediction, replay without --record", plan.Events, hold, len(own), p))
		}
	}
	var part string
	var w *format.Writer
	var paths *trace.Paths // the paths' names, where no writer keeps them
	var infoErr error
	if unrecorded {
		paths = trace.NewPaths()
		ready = team.Barrier // the common start
	} else {
		part, err = out.record(&o, team)
		if err := agree(err); err != nil {
			return nil, err
		}
		host, _ := os.Hostname()
		meta := trace.Meta{
			Command: o.Command, Hosts: []string{host}, Clock: "CLOCK_MONOTONIC",
			Epoch: time.Now().UnixNano(), Ranks: len(plan.Ranks), Creator: "ioreplay",
		}
		w, err = format.CreateOptions(part, meta, format.Options{BlockEvents: RecordBlock(len(own))})
		if err := agree(err); err != nil {
			return nil, err
		}
		ready = func() {
			// The common start: every process's ranks start together, and
			// their times count from it.
			team.Barrier()
			epoch := time.Now().UnixNano()
			for _, r := range own {
				if err := w.SetRankInfo(r, epoch, host, os.Getpid()); err != nil && infoErr == nil {
					infoErr = err
				}
			}
		}
	}
	runCtx := team.Start(ctx)
	// What the ranks did survives a run that never ends: once the run is
	// cancelled (an interrupt, a lost process), the blocks so far go to
	// the file, even if a rank stays in a call that does not return.
	stopFlush := func() bool { return true }
	flushed := make(chan struct{})
	if w != nil {
		stopFlush = context.AfterFunc(runCtx, func() {
			defer close(flushed)
			w.Flush()
		})
	}
	var res *replay.Result
	var runErr error
	var live Observer
	if o.Observe != nil && !team.Parted() {
		if w != nil {
			live = o.Observe(w.Path)
		} else {
			live = o.Observe(paths.Lookup)
		}
	}
	if len(own) > 0 {
		stop := showProgress(o.Progress, rp, lead)
		ro := replay.Output{Target: out.Target, Hold: o.Replay.Predict}
		if w != nil {
			ro.Record, ro.Replayed = func(r uint32) trace.Sink { return w.Rank(r) }, w.SetReplay
		} else {
			ro.Record = func(uint32) trace.Sink { return dropSink{paths} }
		}
		if live != nil {
			ro.Observe = live.Add
		}
		res, runErr = rp.Run(runCtx, be, ro)
		stop()
	} else {
		ready()
		res = &replay.Result{Timing: o.Replay.Timing, Epoch: time.Now()}
	}
	if !stopFlush() {
		<-flushed
	}
	if runErr == nil && ctx.Err() == nil && runCtx.Err() != nil {
		runErr = context.Cause(runCtx) // the team stopped the run
	}
	out.Result = res
	// This process's part is complete before the processes meet again:
	// a team that stops here keeps it.
	var werr error
	if w != nil {
		werr = w.Close()
	}
	ferr := team.Finish(res, part, runErr)
	if ferr == nil && werr != nil {
		ferr = fmt.Errorf("writing the replay's trace: %w", werr)
	}
	if ferr == nil {
		ferr = infoErr
	}
	if runErr != nil {
		return out, runErr
	}
	if err := agree(ferr); err != nil {
		return nil, err
	}
	parts, err := team.Parts(part)
	if err != nil || !lead {
		out.Done = !lead
		return out, fail(err)
	}
	if parts != nil {
		err := merge(out.Record, parts)
		for _, p := range parts {
			os.Remove(p)
		}
		if err != nil {
			return nil, err
		}
	}
	if live != nil {
		out.Observed, out.ObservedRanks = true, own
	}
	out.Team = team.Summary(plan.Ranks)
	return out, nil
}

// target settles the target directory: given (absolute, never "/"), or
// a new temporary one the lead names.
func (out *Outcome) target(o *Options, team Team) error {
	if o.Target != "" {
		t, err := filepath.Abs(o.Target)
		if err != nil {
			return err
		}
		if err := posix.CheckTarget(t); err != nil {
			return err
		}
		out.Target = t
		return nil
	}
	if o.DryRun {
		return nil
	}
	var err error
	if team.Lead() {
		out.Target, err = os.MkdirTemp("", "ioreplay-")
	}
	if err := team.Agree(err); err != nil {
		return err
	}
	out.Target = team.Broadcast(out.Target)
	if team.Prepares(o.NodeLocal) {
		dir := out.Target
		if !o.Keep {
			temporaries.add(dir, true)
		}
		out.cleanup = append(out.cleanup, func() error {
			if o.Keep {
				out.KeptTarget = true
				return nil
			}
			defer temporaries.drop(dir)
			if err := os.RemoveAll(dir); err != nil {
				return fmt.Errorf("removing the target directory: %w", err)
			}
			return nil
		})
	}
	return nil
}

// makeTarget makes the target directory dir unless it exists: its last
// component only, so that a mistyped --target makes no tree of
// directories (at the root, say).
func makeTarget(dir string) error {
	if st, err := os.Stat(dir); err == nil {
		if !st.IsDir() {
			return fmt.Errorf("--target %s: not a directory", dir)
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if _, err := os.Stat(parent); err != nil {
		return fmt.Errorf("--target %s: its parent %s does not exist (ioreplay makes the target directory, not the ones above it)", dir, parent)
	}
	err := os.Mkdir(dir, 0o755)
	if errors.Is(err, fs.ErrExist) {
		// Another process of the team, on this host, made it first.
		if st, serr := os.Stat(dir); serr == nil && st.IsDir() {
			return nil
		}
	}
	return err
}

// inTheWay fails when the target directory dir already holds files at
// the places the trace's paths go (layout): the replay would overwrite,
// truncate or remove them. Directories are no conflict.
func inTheWay(dir string, layout *target.Layout) error {
	var found []string
	for _, p := range layout.Paths {
		if p.Target == "" || p.Target == "." {
			continue
		}
		if st, err := os.Lstat(filepath.Join(dir, p.Target)); err == nil && !st.IsDir() {
			found = append(found, p.Target)
		}
	}
	if len(found) == 0 {
		return nil
	}
	list := strings.Join(found[:min(len(found), 3)], ", ")
	if len(found) > 3 {
		list += fmt.Sprintf(" and %d more", len(found)-3)
	}
	return fmt.Errorf("--target %s already holds %d %s the replay would overwrite or remove (%s): give --force to replay over them, or another --target (--dry-run lists where every path goes)",
		dir, len(found), plural(len(found), "file"), list)
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// dropSink is where the ranks record when no trace is written: their
// paths get names (for the report computed while they run), their events
// go nowhere else.
type dropSink struct{ paths *trace.Paths }

func (d dropSink) WriteEvents([]trace.Event) error { return nil }
func (d dropSink) Intern(path string) trace.PathID { return d.paths.Intern(path) }

// record names the file this process records its ranks into: the
// replay's trace, or a part of it the team collects.
func (out *Outcome) record(o *Options, team Team) (string, error) {
	out.Record, out.RecordKept = o.Record, o.Record != ""
	if out.Record == "" && team.Lead() {
		name, err := tempFile("ioreplay-*.iot")
		if err != nil {
			return "", err
		}
		out.Record = name
		temporaries.add(name, false)
		out.cleanup = append(out.cleanup, func() error { os.Remove(name); temporaries.drop(name); return nil })
	}
	if !team.Parted() {
		return out.Record, nil
	}
	// The parts go to a directory of the same name on every host, which
	// the lead names: node-local, so that recording the replay adds no
	// traffic to the file system it measures.
	var err error
	if team.Lead() {
		out.Parts, err = os.MkdirTemp("", "ioreplay-parts-")
	}
	if err := team.Agree(err); err != nil {
		return "", err
	}
	out.Parts = team.Broadcast(out.Parts)
	if !team.Lead() {
		err = os.MkdirAll(out.Parts, 0o755)
	}
	if err := team.Agree(err); err != nil {
		return "", err
	}
	dir := out.Parts
	name := filepath.Join(dir, fmt.Sprintf("process-%05d.iot", team.Process()))
	temporaries.add(dir, false)
	temporaries.add(name, false)
	out.cleanup = append(out.cleanup, func() error {
		os.Remove(name)
		os.Remove(dir) // the last process of the host removes it
		temporaries.drop(name)
		temporaries.drop(dir)
		return nil
	})
	return name, nil
}

func tempFile(pattern string) (string, error) {
	f, err := os.CreateTemp("", pattern)
	if err != nil {
		return "", err
	}
	f.Close()
	return f.Name(), nil
}

// RecordBlock is the number of events in a block of the replay's own
// trace, for a replay of ranks ranks in this process. Each rank's writer
// holds its open block unencoded, about 64 bytes an event, so the ranks
// share a budget of 2^20 events (64 MiB): 16,384 each up to 64 ranks,
// 1,024 each at 1,024 ranks, never fewer than 256. (At 1,024 ranks × 5,000
// calls a budget four times larger made the trace 14 % smaller and the
// replay's peak RSS 1.6 times larger.)
func RecordBlock(ranks int) int {
	return min(16384, max(256, (1<<20)/max(ranks, 1)))
}

// prepare makes what the plan needs in the target, and says what it
// found in the way.
func prepare(ctx context.Context, o *Options, be replay.Backend, px *posix.Backend, plan *replay.Plan, target string) error {
	log := logger(o.Log)
	if plan.Bytes() > 64<<20 {
		log.Info(fmt.Sprintf("preparing %d files (%s) in %s", len(plan.Files), units.Bytes(plan.Bytes()), target))
	}
	if err := be.Prepare(ctx, &plan.Layout); err != nil {
		if ctx.Err() != nil {
			return ErrPrepareInterrupted
		}
		return err
	}
	c := px.Conflicts()
	for i, s := range c {
		if i == 10 {
			log.Warn(fmt.Sprintf("… and %d more in the way", len(c)-10))
			break
		}
		log.Warn(fmt.Sprintf("prepare: %s (left as it is; the calls on it fail or are skipped)", s))
	}
	return nil
}

func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return l
}

// merge writes the parts of the replay's trace into one file.
func merge(out string, parts []string) error {
	f, err := os.Create(out)
	if err != nil {
		return fmt.Errorf("--record: %w", err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	_, err = format.Merge(bw, format.ReadOptions{}, parts...)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing the replay's trace: %w", err)
	}
	return nil
}

// temporaries are the files and directories this process's sessions made
// for themselves (a temporary target, trace, parts directory) and have not
// removed yet: what RemoveTemporaries removes.
var temporaries = temps{m: map[string]bool{}}

type temps struct {
	sync.Mutex
	m     map[string]bool // path → remove with what it holds
	order []string
}

func (t *temps) add(p string, all bool) {
	t.Lock()
	defer t.Unlock()
	if _, ok := t.m[p]; !ok {
		t.order = append(t.order, p)
	}
	t.m[p] = all
}

func (t *temps) drop(p string) {
	t.Lock()
	defer t.Unlock()
	delete(t.m, p)
	if len(t.m) == 0 {
		t.order = t.order[:0]
	}
}

// RemoveTemporaries removes what the sessions of this process made for
// themselves and have not removed yet (the temporary target, trace and
// parts; never a --target or --record the user named, nor a target
// kept with --keep): for a process that must end at once, without
// closing its sessions (a second interrupt). Files first, then
// directories, newest first; a parts directory other processes still
// use stays.
func RemoveTemporaries() {
	temporaries.Lock()
	defer temporaries.Unlock()
	for i := len(temporaries.order) - 1; i >= 0; i-- {
		p := temporaries.order[i]
		all, ok := temporaries.m[p]
		if !ok {
			continue
		}
		if all {
			os.RemoveAll(p)
		} else {
			os.Remove(p)
		}
		delete(temporaries.m, p)
	}
	temporaries.order = temporaries.order[:0]
}
