package filter

import (
	"io"

	"github.com/iotrace/iotrace/trace"
)

// Apply returns t seen through the selection: its ranks are those the
// selection keeps, and each rank's stream holds the events it keeps
// (Keeper.Keep). An empty selection returns t itself.
func Apply(t trace.Trace, sel *Selection) trace.Trace {
	if sel.Empty() {
		return t
	}
	return &selected{Trace: t, sel: sel}
}

// selected is a trace seen through a selection.
type selected struct {
	trace.Trace
	sel *Selection
}

func (t *selected) Ranks() []uint32 {
	var rs []uint32
	for _, r := range t.Trace.Ranks() {
		if t.sel.KeepRank(r) {
			rs = append(rs, r)
		}
	}
	return rs
}

func (t *selected) Rank(r uint32) (trace.Source, error) {
	var src trace.Source
	var err error
	if x, ok := t.Trace.(trace.OpIndexed); ok && t.sel.Ops != nil && t.sel.Paths == nil && t.sel.Structural == nil {
		// Without the parts of the stream that hold none of the ops,
		// where the trace knows them (the format's per-block totals).
		src, err = x.RankOps(r, t.sel.Ops.Has)
	} else {
		src, err = t.Trace.Rank(r)
	}
	if err != nil {
		return nil, err
	}
	return &selectedSource{in: src, keep: t.sel.Keeper(), path: t.Trace.Path}, nil
}

// Replay passes on how a replay went, when t is a replay's trace.
func (t *selected) Replay(r uint32) *trace.ReplayRank {
	if x, ok := t.Trace.(trace.Replayed); ok {
		return x.Replay(r)
	}
	return nil
}

// selectedSource is a rank's stream through a Keeper.
type selectedSource struct {
	in   trace.Source
	keep *Keeper
	path func(trace.PathID) string
	buf  []trace.Event
	err  error // the end or error of in, given after the events before it
}

func (s *selectedSource) ReadEvents(evs []trace.Event) (int, error) {
	if len(evs) == 0 {
		return 0, nil
	}
	if cap(s.buf) < len(evs) {
		s.buf = make([]trace.Event, len(evs))
	}
	for s.err == nil {
		n, err := s.in.ReadEvents(s.buf[:len(evs)])
		k := 0
		for i := range s.buf[:n] {
			if s.keep.Keep(&s.buf[i], s.path) {
				evs[k] = s.buf[i]
				k++
			}
		}
		s.err = err
		if k > 0 {
			return k, nil
		}
	}
	return 0, s.err
}

func (s *selectedSource) Path(id trace.PathID) string { return s.in.Path(id) }

func (s *selectedSource) Close() error {
	if c, ok := s.in.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
