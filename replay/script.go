package replay

import (
	"errors"

	"github.com/iotrace/iotrace/replay/comm"
	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/trace"
)

// ScriptTrace returns the trace of a pattern script instance. Read on its
// own (Rank), every rank runs its time-driven loops ("repeat for 10s") on
// its own nominal clock: that is what the plan, a dry run and --compare
// see. A replay's Run runs the script instead: each rank's loops ask a
// decider that measures the real clock, and the first rank of the loop's
// group decides for all of them (as b_eff_io's root does), so every rank
// leaves the loop at the same iteration.
func ScriptTrace(in *script.Instance) trace.Trace {
	return &scriptTrace{in: in, paths: trace.NewPaths()}
}

// IsScript reports whether t is a pattern script (ScriptTrace), which a
// replay runs rather than reads.
func IsScript(t trace.Trace) bool {
	_, ok := t.(*scriptTrace)
	return ok
}

// DefaultTiming is the timing of a replay of t unless told otherwise:
// Original for a trace, which recorded when its calls were made; Think
// for a pattern script, whose times are those of a nominal model (docs/
// SCRIPT.md) — so its calls run at the speed of the file system, not at
// the model's 1 GB/s, and its sleeps, the only gaps between its calls,
// are kept (afap would drop them).
func DefaultTiming(t trace.Trace) Timing {
	if IsScript(t) {
		return Think
	}
	return Original
}

type scriptTrace struct {
	in    *script.Instance
	paths *trace.Paths
	// deciders gives each rank's decider while a replay runs; nil: the
	// nominal clock.
	deciders func(rank uint32) script.Decider
}

func (s *scriptTrace) Meta() trace.Meta {
	return trace.Meta{Command: []string{"script", s.in.Program().Name()}, Clock: "nominal",
		Ranks: s.in.Ranks(), Creator: "ioreplay (pattern script)"}
}

func (s *scriptTrace) Ranks() []uint32 {
	rs := make([]uint32, s.in.Ranks())
	for i := range rs {
		rs[i] = uint32(i)
	}
	return rs
}

func (s *scriptTrace) Rank(r uint32) (trace.Source, error) {
	var dec script.Decider
	if s.deciders != nil {
		dec = s.deciders(r)
	}
	return s.in.Source(int(r), s.paths, dec)
}

func (s *scriptTrace) Path(id trace.PathID) string { return s.paths.Lookup(id) }

func (s *scriptTrace) Close() error { return nil }

// groups returns the ranks of the script's groups by communicator.
func (s *scriptTrace) groups() map[uint32][]uint32 {
	out := map[uint32][]uint32{}
	for _, g := range s.in.Groups() {
		for r := g.First; r < g.First+g.Size; r++ {
			out[g.Comm] = append(out[g.Comm], uint32(r))
		}
	}
	return out
}

// loopDecider decides a rank's time-driven loops on the replay's clock.
type loopDecider struct {
	rn     *runner
	starts map[script.Pos]int64
}

// Continue implements script.Decider: the loop's first rank measures the
// time since the loop's first check and broadcasts whether to go on.
func (d *loopDecider) Continue(c script.LoopCheck) (bool, error) {
	rn := d.rn
	now := rn.w.now()
	if d.starts == nil {
		d.starts = map[script.Pos]int64{}
	}
	if c.Iter == 0 {
		d.starts[c.Pos] = now
	}
	v := int64(0)
	if now-d.starts[c.Pos] < c.Limit {
		v = 1
	}
	ranks := rn.rp.script.in.CommRanks(c.Comm)
	if c.Comm == trace.CommSelf || len(ranks) <= 1 {
		return v == 1, nil
	}
	got, err := rn.cm.DecideBcast(rn.ctx, c.Comm, int32(ranks[0]), v)
	if err != nil {
		if errors.Is(err, comm.ErrUnmatched) && !rn.strict {
			rn.res.unmatch(err)
			return false, nil
		}
		return false, err
	}
	return got == 1, nil
}
