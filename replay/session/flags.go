package session

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strings"

	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/replay/posix"
	"github.com/iotrace/iotrace/trace/filter"
	"github.com/iotrace/iotrace/trace/target"
	"github.com/iotrace/iotrace/trace/units"
)

// Flags are a session's options as a command line gives them (ioreplay's
// flags, docs/REPLAY.md): AddFlags registers them, Options checks them and
// turns them into Options.
type Flags struct {
	Timing      string
	Speed       float64
	Target      string
	Keep        bool
	NodeLocal   bool
	Force       bool
	Maps        []string
	DryRun      bool
	PrepareOnly bool
	Sparse      bool
	NoSpace     bool
	Direct      bool
	Data        string
	Strict      bool
	Record      string
	Walk        bool
	Cache       string
	Predict     bool

	// Select chooses the events replayed: the selectors every command
	// takes (--rank, --op, --skip-op, --path, --exclude, --time), as a
	// replay applies them (replay.Transforms).
	Select    filter.Flags
	ScaleSize float64
	Align     string
	Layout    string
	Split     string
	Order     string
	Servers   int
	Stripe    string
	Seed      uint64
}

// AddFlags registers the options on fs.
func (f *Flags) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&f.Timing, "timing", "", "when calls are issued: original, think or afap (default original for a trace, think for a script)")
	fs.Float64Var(&f.Speed, "speed", 1, "divide recorded gaps by this factor (original and think timing)")
	fs.StringVar(&f.Target, "target", "", "`directory` to replay in (default: a new temporary directory)")
	fs.BoolVar(&f.Keep, "keep", false, "keep the temporary target directory")
	fs.BoolVar(&f.NodeLocal, "node-local", false, "with --mpi: the target is each node's own storage; the first process of each node prepares it there")
	fs.BoolVar(&f.Force, "force", false, "replay into a --target that already holds files the trace reaches (they are overwritten or removed)")
	fs.Var((*listValue)(&f.Maps), "map", "rewrite the path prefix OLD to NEW inside the target (`OLD=NEW`, repeatable)")
	fs.BoolVar(&f.DryRun, "dry-run", false, "print the path mapping, the files to prepare and the calls per rank; touch nothing")
	fs.BoolVar(&f.PrepareOnly, "prepare-only", false, "create the files the trace reads, then stop")
	fs.BoolVar(&f.Sparse, "sparse", false, "prepare files by setting their size only (holes read as zeros)")
	fs.BoolVar(&f.NoSpace, "no-space-check", false, "replay even when the target's file system has less free space than the trace's files take")
	fs.BoolVar(&f.Direct, "direct", false, "open files with O_DIRECT (use --align 4096 too)")
	fs.StringVar(&f.Data, "data", "pattern", "what writes write: pattern (non-repeating) or fixed (the same bytes every call; flatters compression and dedup)")
	fs.BoolVar(&f.Strict, "strict", false, "stop at the first call that fails where the original did not, or is skipped")
	fs.StringVar(&f.Record, "record", "", "write the replay's own trace (measured times) to this `file`")
	fs.StringVar(&f.Cache, "cache", "cold", "page cache at the start of the timed phase: cold (the target's files dropped from it), warm (read into it) or as-captured (as prepare left it)")
	fs.BoolVar(&f.Predict, "predict", false, "predict the application's I/O time on the target: think timing, a cold cache, the MPI-IO library's captured cost kept; the summary puts it beside the captured one")
	fs.BoolVar(&f.Walk, "no-openat2", false, "resolve paths by an O_NOFOLLOW walk even where openat2 exists")
	f.Select.AddFlags(fs)
	fs.Float64Var(&f.ScaleSize, "scale-size", 1, "multiply request sizes and offsets by this factor")
	fs.StringVar(&f.Align, "align", "", "align offsets and sizes to this many `bytes`, e.g. 4096")
	fs.StringVar(&f.Layout, "layout", "", "shared: files of one rank each become one shared file; fpp: shared files become one per rank")
	fs.StringVar(&f.Split, "split", "", "split requests into schedule blocks of this `size`, e.g. 64KiB")
	fs.StringVar(&f.Order, "order", "", "order of schedule blocks: first, random or hash (with --split)")
	fs.IntVar(&f.Servers, "servers", 0, "number of I/O servers the file is striped over (with --split)")
	fs.StringVar(&f.Stripe, "stripe", "", "stripe unit of the servers (with --split; default: the block `size`)")
	fs.Uint64Var(&f.Seed, "seed", 1, "seed of --order random")
}

// listValue is a repeatable option: each use adds a value.
type listValue []string

func (l *listValue) String() string     { return strings.Join(*l, ",") }
func (l *listValue) Set(s string) error { *l = append(*l, s); return nil }

// Options checks the flags and returns the options of a session.
func (f *Flags) Options() (Options, error) {
	if err := f.predict(); err != nil {
		return Options{}, err
	}
	if f.Data != "pattern" && f.Data != "fixed" {
		return Options{}, fmt.Errorf("--data %q: want one of pattern, fixed", f.Data)
	}
	cache, err := posix.ParseCache(f.Cache)
	if err != nil {
		return Options{}, err
	}
	ro, err := f.replay()
	if err != nil {
		return Options{}, err
	}
	return Options{
		Replay: ro, DefaultTiming: f.Timing == "" && !f.Predict,
		Target: f.Target, Keep: f.Keep, NodeLocal: f.NodeLocal, Force: f.Force, DryRun: f.DryRun, PrepareOnly: f.PrepareOnly, NoSpaceCheck: f.NoSpace,
		Files:  posix.Options{Direct: f.Direct, Sparse: f.Sparse, FixedData: f.Data == "fixed", Walk: f.Walk},
		Record: f.Record, Cache: cache,
	}, nil
}

// predict checks that the flags do not contradict --predict, which sets
// think timing and a cold cache.
func (f *Flags) predict() error {
	if !f.Predict {
		return nil
	}
	switch {
	case f.Timing != "" && f.Timing != "think":
		return fmt.Errorf("--predict runs think timing (the application's compute time kept, its I/O the target's): drop --timing %s", f.Timing)
	case f.Cache != "cold":
		return fmt.Errorf("--predict starts with a cold cache, as the application did: drop --cache %s", f.Cache)
	case f.Speed != 1:
		return fmt.Errorf("--predict keeps the captured compute time: drop --speed %v", f.Speed)
	}
	f.Timing = "think"
	return nil
}

// replay turns the flags into replay options.
func (f *Flags) replay() (replay.Options, error) {
	var ro replay.Options
	var err error
	if f.Timing != "" {
		if ro.Timing, err = replay.ParseTiming(f.Timing); err != nil {
			return ro, err
		}
	}
	if !(f.Speed > 0) || math.IsInf(f.Speed, 1) {
		return ro, fmt.Errorf("--speed %v: want a positive, finite factor", f.Speed)
	}
	ro.Speed, ro.Strict, ro.Predict = f.Speed, f.Strict, f.Predict
	for _, m := range f.Maps {
		r, err := target.ParseMapRule(m)
		if err != nil {
			return ro, err
		}
		ro.Map = append(ro.Map, r)
	}
	ro.Transforms, err = f.transforms()
	return ro, err
}

// transforms turns the flags into the replay's transforms.
func (f *Flags) transforms() (replay.Transforms, error) {
	tf := replay.Transforms{Ops: f.Select.Ops, SkipOps: f.Select.SkipOps, Layout: f.Layout, ScaleSize: f.ScaleSize}
	sel, err := f.Select.Selection()
	if err != nil {
		return tf, err
	}
	tf.Ranks, tf.Paths, tf.Window = sel.Ranks, sel.Paths, sel.Window
	if !(f.ScaleSize > 0) || math.IsInf(f.ScaleSize, 1) {
		return tf, fmt.Errorf("--scale-size %v: want a positive, finite factor", f.ScaleSize)
	}
	for _, sz := range []struct {
		flag, v string
		to      *int64
	}{{"--align", f.Align, &tf.Align}, {"--split", f.Split, &tf.Split.Size}, {"--stripe", f.Stripe, &tf.Split.Stripe}} {
		if sz.v == "" {
			continue
		}
		if *sz.to, err = units.ParseSize(sz.v); err != nil {
			return tf, fmt.Errorf("%s: %w", sz.flag, err)
		}
	}
	tf.Split.Order, tf.Split.Servers, tf.Split.Seed = f.Order, f.Servers, f.Seed
	if tf.Split.Size == 0 && (f.Servers != 0 || f.Stripe != "") {
		return tf, errors.New("--servers and --stripe need --split SIZE")
	}
	return tf, tf.Validate()
}
