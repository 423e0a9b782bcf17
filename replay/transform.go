package replay

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
)

// Transforms are the stages a replay applies to every rank's events
// before it runs them, in this order: rank subset, path and time
// selectors, op filter, file layout, size scaling, alignment, request
// splitting. Each stage is a Source that wraps the one before it.
type Transforms struct {
	// Ranks replays only these ranks (nil: all). Communication with the
	// other ranks is skipped; collectives wait for the replayed members.
	Ranks []uint32
	// Ops keeps only these ops: call names ("pwrite"), families
	// ("write"), or classes ("posix", "meta", "mpiio", "comm", "marker").
	// The calls that manage descriptors and handles (open, close, dup,
	// seek, MPI_File_open/close/set_view) stay unless SkipOps names them.
	Ops []string
	// SkipOps drops these ops (same names as Ops).
	SkipOps []string
	// Paths keeps only the calls on files these rules choose (following
	// descriptors: filter.Keeper), and Window the calls that start in it;
	// both keep the calls that manage descriptors, as Ops does, and the
	// process events.
	Paths  *filter.Paths
	Window filter.Window
	// Layout rewrites files: "shared" turns files of one rank each, whose
	// names hold the rank number, into one shared file per name, each
	// rank in its own region; "fpp" turns files used by several ranks
	// into one file per rank (path.RANK), at the same offsets.
	Layout string
	// ScaleSize multiplies request sizes and file offsets (0 and 1 leave
	// them).
	ScaleSize float64
	// Align rounds offsets down and request ends up to multiples of Align
	// (0: no alignment), as O_DIRECT needs.
	Align int64
	// Split splits large requests into schedule blocks (see Split).
	Split Split
}

// Split splits data requests larger than Size into schedule blocks of
// Size bytes, in the manner of Isaila et al.: blocks never cross a stripe
// boundary, the file is striped round robin over Servers servers in
// units of Stripe bytes, and Order says in which order a rank issues a
// request's blocks:
//
//   - "first": file-offset order (first-IOS);
//   - "random": the blocks are listed per server, and the rank picks a
//     server at random until every block is issued (random-IOS);
//   - "hash": at step j rank i issues its next block for server
//     (i + j) mod Servers (hash-IOS).
type Split struct {
	Size    int64
	Order   string
	Servers int
	Stripe  int64
	Seed    uint64
}

// MaxServers is the most I/O servers --split stripes a file over: the
// splitter keeps a list per server (a file system with more storage
// targets than this stripes no file over all of them).
const MaxServers = 1 << 16

// overlayBase is the first path id of paths the transforms make; ids
// below it are the input trace's.
const overlayBase trace.PathID = 1 << 31

// Validate checks the options and fills defaults.
func (tf *Transforms) Validate() error {
	switch tf.Layout {
	case "", "shared", "fpp":
	default:
		return fmt.Errorf("--layout %q: want shared or fpp", tf.Layout)
	}
	if tf.ScaleSize < 0 || math.IsNaN(tf.ScaleSize) || math.IsInf(tf.ScaleSize, 0) {
		return fmt.Errorf("--scale-size %v: want a positive factor", tf.ScaleSize)
	}
	if tf.Align < 0 {
		return fmt.Errorf("--align %d: want a positive size", tf.Align)
	}
	for flag, list := range map[string][]string{"--op": tf.Ops, "--skip-op": tf.SkipOps} {
		if len(list) == 0 {
			continue
		}
		if _, err := filter.ParseOps(list...); err != nil {
			return fmt.Errorf("%s: %w", flag, err)
		}
	}
	s := &tf.Split
	if s.Size < 0 {
		return fmt.Errorf("--split %d: want a positive size", s.Size)
	}
	if s.Size == 0 {
		if s.Order != "" && s.Order != "first" {
			return fmt.Errorf("--order %s needs --split SIZE", s.Order)
		}
		return nil
	}
	switch s.Order {
	case "":
		s.Order = "first"
	case "first", "random", "hash":
	default:
		return fmt.Errorf("--order %q: want first, random or hash", s.Order)
	}
	if s.Servers < 0 || s.Servers > MaxServers {
		return fmt.Errorf("--servers %d: want 1 to %d", s.Servers, MaxServers)
	}
	if s.Servers == 0 {
		s.Servers = 1
	}
	if s.Stripe < 0 {
		return fmt.Errorf("--stripe %d: want a positive size", s.Stripe)
	}
	if s.Stripe == 0 {
		s.Stripe = s.Size
	}
	return nil
}

// Selecting returns the stages of tf that choose calls (ranks, ops,
// paths, time), without those that rewrite them.
func (tf Transforms) Selecting() Transforms {
	return Transforms{Ranks: tf.Ranks, Ops: tf.Ops, SkipOps: tf.SkipOps, Paths: tf.Paths, Window: tf.Window}
}

// Active reports whether any stage changes events.
func (tf *Transforms) Active() bool {
	return len(tf.Ops) > 0 || len(tf.SkipOps) > 0 || tf.Paths != nil || tf.Window != (filter.Window{}) || tf.Layout != "" || (tf.ScaleSize != 0 && tf.ScaleSize != 1) ||
		tf.Align > 1 || tf.Split.Size > 0
}

// keepsDescriptors lists the ops an --op filter keeps anyway.
func keepsDescriptors(op trace.Op) bool {
	switch op.Info().Family {
	case "open", "close", "dup", "seek":
		return op.Class() == trace.ClassPOSIX
	}
	return op == trace.OpMPIFileOpen || op == trace.OpMPIFileClose || op == trace.OpMPIFileSetView
}

// Apply returns t seen through the transforms.
func (tf Transforms) Apply(t trace.Trace) (trace.Trace, error) {
	if err := tf.Validate(); err != nil {
		return nil, err
	}
	x := &transformed{Trace: t, extra: trace.NewPaths(), ranks: t.Ranks()}
	if tf.Ranks != nil {
		x.ranks = slices.DeleteFunc(x.ranks, func(r uint32) bool {
			_, found := slices.BinarySearch(tf.Ranks, r)
			return !found
		})
		if len(x.ranks) == 0 {
			return nil, fmt.Errorf("--rank: the trace has none of these ranks (it has %s)", rankRange(t.Ranks()))
		}
	}
	// The path and time selectors see every event: they follow the
	// rank's descriptors.
	if tf.Paths != nil || tf.Window != (filter.Window{}) {
		sel := &filter.Selection{Paths: tf.Paths, Window: tf.Window, Structural: func(op trace.Op) bool { return keepsDescriptors(op) || op.Class() == trace.ClassProcess }}
		x.stages = append(x.stages, func(_ uint32, in trace.Source) trace.Source {
			k := sel.Keeper()
			return newStage(in, x, func(e *trace.Event, out []trace.Event) []trace.Event {
				if k.Keep(e, x.Path) {
					out = append(out, *e)
				}
				return out
			})
		})
	}
	if len(tf.Ops) > 0 || len(tf.SkipOps) > 0 {
		keep := filter.AllOps()
		if len(tf.Ops) > 0 {
			keep, _ = filter.ParseOps(tf.Ops...)
			for _, op := range trace.Ops() {
				if keepsDescriptors(op) {
					keep.Add(op)
				}
			}
		}
		skip, _ := filter.ParseOps(tf.SkipOps...)
		keep.Remove(skip)
		x.stages = append(x.stages, func(_ uint32, in trace.Source) trace.Source {
			return newStage(in, x, func(e *trace.Event, out []trace.Event) []trace.Event {
				if keep.Has(e.Op) {
					out = append(out, *e)
				}
				return out
			})
		})
	}
	switch tf.Layout {
	case "shared":
		st, err := toShared(x)
		if err != nil {
			return nil, err
		}
		x.stages = append(x.stages, st)
	case "fpp":
		st, err := toFPP(x)
		if err != nil {
			return nil, err
		}
		x.stages = append(x.stages, st)
	}
	if f := tf.ScaleSize; f != 0 && f != 1 {
		x.stages = append(x.stages, func(_ uint32, in trace.Source) trace.Source {
			return newStage(in, x, func(e *trace.Event, out []trace.Event) []trace.Event {
				scaleEvent(e, f)
				return append(out, *e)
			})
		})
	}
	if a := tf.Align; a > 1 {
		x.stages = append(x.stages, func(_ uint32, in trace.Source) trace.Source {
			return newStage(in, x, func(e *trace.Event, out []trace.Event) []trace.Event {
				alignEvent(e, a)
				return append(out, *e)
			})
		})
	}
	if tf.Split.Size > 0 {
		sp := tf.Split
		x.stages = append(x.stages, func(rank uint32, in trace.Source) trace.Source {
			return &splitSource{in: in, x: x, s: newSplitter(sp, rank)}
		})
	}
	return x, nil
}

func rankRange(rs []uint32) string {
	if len(rs) == 0 {
		return "no ranks"
	}
	return fmt.Sprintf("ranks %d–%d", rs[0], rs[len(rs)-1])
}

// transformed is a trace seen through stages. Paths the stages make live
// in extra, at ids from overlayBase.
type transformed struct {
	trace.Trace
	extra  *trace.Paths
	ranks  []uint32
	stages []func(rank uint32, in trace.Source) trace.Source
}

func (x *transformed) Ranks() []uint32 { return slices.Clone(x.ranks) }

func (x *transformed) Rank(r uint32) (trace.Source, error) {
	if _, ok := slices.BinarySearch(x.ranks, r); !ok {
		return nil, fmt.Errorf("no rank %d", r)
	}
	src, err := x.Trace.Rank(r)
	if err != nil {
		return nil, err
	}
	for _, st := range x.stages {
		src = st(r, src)
	}
	return src, nil
}

func (x *transformed) Path(id trace.PathID) string {
	if id >= overlayBase {
		return x.extra.Lookup(id - overlayBase)
	}
	return x.Trace.Path(id)
}

func (x *transformed) intern(s string) trace.PathID { return x.extra.Intern(s) + overlayBase }

// stage is a Source that turns each event of in into zero or more.
type stage struct {
	in   trace.Source
	x    *transformed
	fn   func(e *trace.Event, out []trace.Event) []trace.Event
	buf  []trace.Event
	pos  int
	pend []trace.Event
	ppos int
	eof  bool
	err  error
}

func newStage(in trace.Source, x *transformed, fn func(e *trace.Event, out []trace.Event) []trace.Event) *stage {
	return &stage{in: in, x: x, fn: fn}
}

func (s *stage) ReadEvents(evs []trace.Event) (int, error) {
	n := 0
	for n < len(evs) {
		if s.ppos < len(s.pend) {
			k := copy(evs[n:], s.pend[s.ppos:])
			n += k
			s.ppos += k
			continue
		}
		if s.pos == len(s.buf) {
			if s.eof || s.err != nil {
				break
			}
			if s.buf == nil {
				s.buf = make([]trace.Event, 256)
			}
			k, err := s.in.ReadEvents(s.buf[:cap(s.buf)])
			s.buf, s.pos = s.buf[:k], 0
			if errors.Is(err, io.EOF) {
				s.eof = true
			} else if err != nil {
				s.err = err
			}
			if k == 0 {
				continue
			}
		}
		e := &s.buf[s.pos]
		s.pos++
		s.pend, s.ppos = s.fn(e, s.pend[:0]), 0
	}
	if n > 0 {
		return n, nil
	}
	if s.err != nil {
		return 0, s.err
	}
	return 0, io.EOF
}

func (s *stage) Path(id trace.PathID) string { return s.x.Path(id) }

func (s *stage) Close() error {
	if c, ok := s.in.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// isData reports a read or write whose Offset and Size address a file.
func isData(op trace.Op) bool {
	c := op.Class()
	return op.Dir() != trace.DirNone && (c == trace.ClassPOSIX || c == trace.ClassMPIIO)
}

func scaleInt(v int64, f float64) int64 {
	r := math.Round(float64(v) * f)
	if r > math.MaxInt64/2 {
		return math.MaxInt64 / 2
	}
	return int64(r)
}

// scaleEvent multiplies the sizes and offsets of e by f.
func scaleEvent(e *trace.Event, f float64) {
	info := e.Op.Info()
	switch {
	case isData(e.Op):
		if e.Offset > 0 {
			e.Offset = scaleInt(e.Offset, f)
		}
		if info.Dir == trace.DirCopy && e.Offset2 > 0 {
			e.Offset2 = scaleInt(e.Offset2, f)
		}
		e.Size = scaleInt(e.Size, f)
		if e.Ret > 0 {
			e.Ret = scaleInt(e.Ret, f)
		}
	case info.Family == "seek":
		e.Offset = scaleInt(e.Offset, f)
		if e.Ret > 0 {
			e.Ret = scaleInt(e.Ret, f)
		}
	case info.Resize != trace.ResizeNone: // truncate, set_size; fallocate, preallocate
		e.Offset, e.Size = scaleInt(e.Offset, f), scaleInt(e.Size, f)
	case e.Op == trace.OpMPIFileSetView:
		e.Offset, e.Size, e.Stride = scaleInt(e.Offset, f), scaleInt(e.Size, f), scaleInt(e.Stride, f)
	}
}

// alignEvent rounds the offsets of e down and its ends up to multiples of a.
func alignEvent(e *trace.Event, a int64) {
	down := func(v int64) int64 { return v - v%a }
	up := func(v int64) int64 {
		if r := v % a; r != 0 {
			return v + a - r
		}
		return v
	}
	info := e.Op.Info()
	switch {
	case isData(e.Op) && info.Dir == trace.DirCopy:
		// Both sides start at a multiple of a: the copy keeps its length
		// (rounded up), which both sides share.
		full := e.Ret == e.Size
		e.Offset, e.Offset2 = down(e.Offset), down(e.Offset2)
		e.Size = up(e.Size)
		if full {
			e.Ret = e.Size
		}
	case isData(e.Op):
		if e.Offset < 0 { // preadv2/pwritev2 at the current position
			e.Size = up(e.Size)
			break
		}
		full := e.Ret == e.Size
		end := up(e.Offset + e.Size)
		e.Offset = down(e.Offset)
		e.Size = end - e.Offset
		if full {
			e.Ret = e.Size
		}
	case info.Family == "seek":
		if e.Whence == 0 {
			e.Offset = down(e.Offset)
			if e.Ret >= 0 {
				e.Ret = e.Offset
			}
		}
	case info.Resize == trace.ResizeSet && info.Class != trace.ClassMPIIO:
		e.Size = up(e.Size)
	case info.Resize == trace.ResizeExtend:
		end := up(e.Offset + e.Size)
		e.Offset = down(e.Offset)
		e.Size = end - e.Offset
	case e.Op == trace.OpMPIFileSetView:
		e.Offset, e.Size, e.Stride = down(e.Offset), up(e.Size), up(e.Stride)
	}
}
