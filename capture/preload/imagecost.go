package preload

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
	"github.com/iotrace/iotrace/trace/format"
)

// What ImageCost measures: imageRounds rounds of imageProcs processes
// each way.
const (
	imageRounds = 5
	imageProcs  = 12
)

// ImageCost measures what the shim costs a process image that no record
// of the image carries, in ns: the loading of the library before its
// constructor runs (mapping it, relocating, its pages faulted in) and the
// unmapping of its spool when the process ends. The records measure the
// shim's time from its constructor on (Record.Over); a program that
// starts a process per command (a shell, make, git) would otherwise keep
// the rest, 0.1-0.2 ms a process on the test machine, as its think time.
//
// With pre, each process sets up its standard output before its exec, as
// git's run_command and make do: its shim makes a spool before the exec
// replaces the image, whose unmapping the exec does, unmeasured too
// (Cost.Replace); without, a process starts as a shell's command does
// (Cost.Image).
//
// It starts iotrace-spawn (Libs.Spawn), which starts imageProcs processes
// one after another as a shell does, each opening one file, untraced and
// under the shim (its spools in a directory made in dir, the file system
// of the program's spools, with their pool), imageRounds times each way
// in turn, and encodes the traced runs as Encode does: the cost is the
// median over the rounds of the trace's time per process (from the first
// process's call to the last's) less the untraced run's. Where the
// middle rounds disagree by more than imageSpread, the machine was too
// busy for the difference to mean anything: ErrBusy. The spools, the
// file and the directory are removed.
func ImageCost(libs Libs, dir string, pre bool) (int64, error) {
	if libs.Spawn == "" || libs.POSIX == "" {
		return 0, errors.New("no iotrace-spawn beside the shim")
	}
	work, err := os.MkdirTemp(dir, "image-cost-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(work)
	file := filepath.Join(work, "probe.dat")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		return 0, err
	}
	rules, err := filter.RecordPaths([]string{work}, nil, false)
	if err != nil {
		return 0, err
	}
	var base []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "IOTRACE_") && !strings.HasPrefix(kv, "LD_PRELOAD=") {
			base = append(base, kv)
		}
	}
	spool := filepath.Join(work, "spools")
	if err := os.Mkdir(spool, 0o700); err != nil {
		return 0, err
	}
	// The shim alone: a library the user preloads is in neither run.
	traced := append(slices.Clip(base), "LD_PRELOAD="+libs.Preload(""))
	traced = append(traced, Env(spool)...)
	// The pool, as the program had it: one for all rounds.
	if pool, err := StartPool(spool); err == nil {
		defer pool.Stop()
		traced = append(traced, PoolEnv()...)
	}
	var diffs []int64
	for r := range imageRounds {
		var plain, span int64
		for i := range 2 {
			if (i+r)%2 == 0 {
				if plain, err = spawnLoop(libs.Spawn, file, pre, base); err != nil {
					return 0, err
				}
				continue
			}
			if _, err = spawnLoop(libs.Spawn, file, pre, traced); err != nil {
				return 0, err
			}
			if span, err = probeSpan(spool, file, rules); err != nil {
				return 0, err
			}
		}
		diffs = append(diffs, span/(imageProcs-1)-plain/imageProcs)
	}
	slices.Sort(diffs)
	if q := diffs[len(diffs)*3/4] - diffs[len(diffs)/4]; q > imageSpread {
		return 0, fmt.Errorf("%w: the rounds of its measurement disagree by %s (give it with --start-cost)", ErrBusy, format.Nanos(q))
	}
	return max(diffs[len(diffs)/2], 0), nil
}

// imageSpread bounds how far the middle rounds of ImageCost may
// disagree (the spread between the second and the fourth of five): on
// the test machine 5-100 µs when quiet, 0.2-0.35 ms while another
// record encodes on the other processor (bench/record part 5), 0.5-2.1
// ms with a thread spinning on each processor.
const imageSpread = 400_000

// ErrBusy is ImageCost's error where the machine was too busy for a
// measurement to be trusted.
var ErrBusy = errors.New("the machine is too busy to measure the shim's cost per process start")

// spawnLoop runs iotrace-spawn with env and returns the time of its loop.
func spawnLoop(spawn, file string, pre bool, env []string) (int64, error) {
	args := []string{strconv.Itoa(imageProcs), file}
	if pre {
		args = append(args, "pre")
	}
	cmd := exec.Command(spawn, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("measuring the shim's cost per process: %s: %v %s", spawn, err, bytes.TrimSpace(errb.Bytes()))
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(out.String()), 10, 64)
	if err != nil || ns <= 0 {
		return 0, fmt.Errorf("measuring the shim's cost per process: %s said %q", spawn, out.String())
	}
	return ns, nil
}

// probeSpan encodes the spools in dir and returns the time from the
// first open of file to the last; it removes the spools.
func probeSpan(dir, file string, rules *filter.Paths) (int64, error) {
	run, err := ReadDir(dir, 0)
	if err != nil {
		return 0, err
	}
	defer func() {
		run.Close()
		for _, s := range run.Spools {
			os.Remove(s.Name)
		}
	}()
	sink := trace.NewSliceSink()
	if _, err := run.Encode(0, sink, rules); err != nil {
		return 0, err
	}
	var first, last int64
	n := 0
	for _, e := range sink.Events {
		if e.Op != trace.OpOpen || sink.Paths.Lookup(e.Path) != file {
			continue
		}
		if n == 0 {
			first = e.Start
		}
		last = e.Start
		n++
	}
	if n != imageProcs {
		return 0, fmt.Errorf("measuring the shim's cost per process: the trace holds %d of the %d processes' calls", n, imageProcs)
	}
	return last - first, nil
}
