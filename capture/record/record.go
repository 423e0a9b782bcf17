// Package record runs a program under one of iotrace's recorders and
// writes its trace, as iotrace record does: the rank and the output from
// the MPI launcher's environment (package launcher, capture.OutputPath),
// one set of path rules (filter.RecordPaths), the program's start,
// signals and exit status, and what the trace cannot show.
//
//   - Ptrace records with capture/ptrace: any program, static binaries
//     included, through a tracer and a seccomp filter.
//   - Preload records with capture/preload's shim: the program runs with
//     LD_PRELOAD, each process writes a spool, and the spools are encoded
//     when the program (and every process it left running) has ended.
//     FromSpool encodes the spools a killed record left.
//
// Diagnostics go to Options.Log: warnings at slog.LevelWarn, notes (and
// the summary line of each trace file) at slog.LevelInfo, and what -v
// prints at slog.LevelDebug.
package record

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/iotrace/iotrace/capture"
	"github.com/iotrace/iotrace/capture/preload"
	"github.com/iotrace/iotrace/launcher"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
	"github.com/iotrace/iotrace/trace/units"
)

// Options configure a recording.
type Options struct {
	// Out is the trace file; a parallel run writes a directory of
	// per-rank files of that name (capture.OutputPath).
	Out string
	// Rank is the rank of this process; nil: from the MPI launcher's
	// environment, else 0.
	Rank *uint32
	// Include and Exclude are path prefixes (relative ones from the
	// current directory); All records every call, with no exclusion.
	Include, Exclude []string
	All              bool
	// Spool is the directory of the preload shim's spools (Preload); ""
	// is a temporary one, removed once encoded.
	Spool string
	// ClockSync says whether the ranks of an MPI job measure their
	// clocks against rank 0's (capture.WantClockSync; the zero value is
	// capture.ClockAuto).
	ClockSync capture.ClockSync
	// RawTimes records the times as measured, the recorder's own cost
	// per call included; by default the recorder measures its cost at
	// start-up and takes it out of the times (docs/FORMAT.md, "The
	// recorder's cost").
	RawTimes bool
	// StartCost is, under the preload shim, its cost per process start
	// that its records do not measure (docs/FORMAT.md, "Process
	// starts"): nil measures it after the program, where the program
	// started processes; a value is taken out as given (0: nothing).
	StartCost *time.Duration
	// Log receives the diagnostics; nil discards them.
	Log *slog.Logger
}

// Result is what a recording did.
type Result struct {
	// Status is the program's exit status as a shell gives it: its exit
	// code, or 128+N when signal N killed it.
	Status int
	// Files are the trace files written.
	Files []string
}

// ErrNotFound is the error of a program that cannot be run: no such
// file, or not executable (a shell's status 127).
var ErrNotFound = errors.New("program not found")

// notFound is the error of a program that cannot be run, as the lookup
// words it; errors.Is(err, ErrNotFound) holds.
type notFound struct{ error }

func (notFound) Is(target error) bool { return target == ErrNotFound }

// TraceError is an error about the trace after the program ran: its
// status is in the Result.
type TraceError struct {
	File string
	Err  error
}

func (e *TraceError) Error() string { return fmt.Sprintf("%s: %v", e.File, e.Err) }
func (e *TraceError) Unwrap() error { return e.Err }

func (o *Options) log() *slog.Logger {
	if o.Log == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o.Log
}

// setup is what every recording settles before it makes any output (a
// typo must not leave an empty trace or directory behind): the rank of
// the recording process (Options.Rank, else the launcher's), and the path
// rules — the trace itself, and the other ranks' files, are not recorded.
func (o *Options) setup() (launcher.Rank, *filter.Paths, error) {
	rk, err := launcher.Detect(os.Getenv)
	if err != nil {
		return rk, nil, err
	}
	if o.Rank != nil {
		if rk.Size > 0 && int64(*o.Rank) >= int64(rk.Size) {
			return rk, nil, fmt.Errorf("--rank %d is not below the number of ranks %d (%s)", *o.Rank, rk.Size, launcher.SizeVars)
		}
		rk.Rank, rk.Known, rk.Source = *o.Rank, true, "--rank"
	}
	rules, err := o.rules()
	return rk, rules, err
}

// rules are the path rules of the recording; private are more paths
// iotrace itself makes for the program, not recorded either.
func (o *Options) rules(private ...string) (*filter.Paths, error) {
	return filter.RecordPaths(o.Include, append(slices.Clip(o.Exclude), private...), o.All, o.Out)
}

// Unseen is what a program did whose I/O no capture sees.
type Unseen struct {
	MmapFiles              int // recorded files mapped into memory
	IOUring, AIO, POSIXAIO bool
}

// report says what the trace cannot show, if the program did it: I/O
// through mappings of recorded files, io_uring, Linux AIO, POSIX AIO.
func (u Unseen) report(log *slog.Logger) {
	if u.MmapFiles > 0 {
		files := "files"
		if u.MmapFiles == 1 {
			files = "file"
		}
		log.Info(fmt.Sprintf("the program mapped %d recorded %s into memory (mmap): reads and writes through the mappings are not seen", u.MmapFiles, files))
	}
	var async []string
	if u.IOUring {
		async = append(async, "io_uring")
	}
	if u.AIO {
		async = append(async, "Linux AIO")
	}
	if u.POSIXAIO {
		async = append(async, "POSIX AIO")
	}
	if len(async) > 0 {
		list := async[len(async)-1]
		if n := len(async); n > 1 {
			list = strings.Join(async[:n-1], ", ") + " and " + list
		}
		log.Info(fmt.Sprintf("the program used %s: that I/O is not seen", list))
	}
}

// tally is a rank's sink that counts what its trace holds, for the
// summary line: events, the files it names, the bytes read and written
// (not those of the calls an MPI library made inside MPI-IO calls: the
// MPI-IO calls hold them).
type tally struct {
	trace.Sink
	events, read, written int64
	files                 map[trace.PathID]struct{}
}

func newTally(s trace.Sink) *tally { return &tally{Sink: s, files: map[trace.PathID]struct{}{}} }

func (t *tally) WriteEvents(evs []trace.Event) error {
	for i := range evs {
		e := &evs[i]
		t.events++
		if e.Ret <= 0 || e.Flags&trace.InMPIIO != 0 {
			continue
		}
		switch e.Op.Dir() {
		case trace.DirRead:
			t.read += e.Ret
		case trace.DirWrite:
			t.written += e.Ret
		}
	}
	return t.Sink.WriteEvents(evs)
}

func (t *tally) Intern(path string) trace.PathID {
	id := t.Sink.Intern(path)
	t.files[id] = struct{}{}
	return id
}

// sayRecorded prints the summary line of a rank's trace file (unless the
// log leaves out notes: --quiet): its events, files and bytes, and which
// paths the record left out.
func (o *Options) sayRecorded(log *slog.Logger, file string, rk launcher.Rank, t *tally) {
	rank := ""
	if rk.Size > 1 {
		rank = fmt.Sprintf("rank %d of %d: ", rk.Rank, rk.Size)
	} else if rk.Known && rk.Rank > 0 {
		rank = fmt.Sprintf("rank %d: ", rk.Rank)
	}
	log.Info(fmt.Sprintf("%s: %s%s, %s, %s read, %s written; %s", file, rank, count(t.events, "event"), count(int64(len(t.files)), "file"),
		units.Bytes(t.read), units.Bytes(t.written), o.leftOut()))
}

// count is "1 event", "2 events".
func count(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// leftOut says which paths a record leaves out.
func (o *Options) leftOut() string {
	if o.All {
		return "nothing left out (--all)"
	}
	if len(o.Include) > 0 {
		s := "recorded only under " + strings.Join(o.Include, " ")
		if len(o.Exclude) > 0 {
			s += ", not under " + strings.Join(o.Exclude, " ")
		}
		return s
	}
	return "left out " + strings.Join(append(filter.RecordExcludes(), o.Exclude...), " ") + ", pipes and sockets (--all keeps them)"
}

// buildShim builds the preload shim (preload.Build). The first use
// compiles it with cc, which takes seconds: when the build has not
// returned after shimNote, the lead rank says what it is doing, once
// (later runs find the shim in the cache and say nothing).
func buildShim(log *slog.Logger, rk launcher.Rank) (preload.Libs, error) {
	return sayBuilding(log, rk, shimNote, preload.Build)
}

// sayBuilding runs build, saying after wait that the shim is being built.
func sayBuilding(log *slog.Logger, rk launcher.Rank, wait time.Duration, build func() (preload.Libs, error)) (preload.Libs, error) {
	done := make(chan struct{})
	said := make(chan struct{})
	go func() {
		defer close(said)
		select {
		case <-done:
		case <-time.After(wait):
			if rk.Rank == 0 {
				dir, _ := preload.CacheDir()
				log.Info(fmt.Sprintf("building the preload shim with cc into %s: the first --preload run does it once, for some seconds", dir))
			}
		}
	}()
	libs, err := build()
	close(done)
	<-said
	return libs, err
}

// shimNote is how long a build of the preload shim runs before
// buildShim says so.
const shimNote = 1500 * time.Millisecond
