package trace

import (
	"errors"
	"io"
	"slices"
	"strings"
)

// Meta describes a whole trace: where and how it was made.
type Meta struct {
	Command []string // command line of the capture, or of the tool that made the trace
	Hosts   []string // hosts that took part
	Clock   string   // clock the times come from, e.g. "CLOCK_MONOTONIC", "nominal"
	Epoch   int64    // wall-clock time of time 0, ns since the Unix epoch (0 unknown)
	Ranks   int      // number of ranks of the run (0 unknown)
	Creator string   // program that wrote the trace, e.g. "iotrace record 0.1"
	// Corrected says how the capture took its own cost out of the times
	// ("ptrace calibration: 11.8 µs of each call, 27.0 µs between
	// calls"); "" when the times are as measured.
	Corrected string
}

// TimesNote is the line a report prints of how the times of a trace
// with this header were taken: corrected for the recorder's cost, or,
// for a capture that predates that correction, as measured with the
// recorder's cost in them; "" for other traces.
func (m Meta) TimesNote() string {
	switch {
	case m.Corrected != "":
		return "times corrected for the recorder's own cost (" + m.Corrected + ")"
	case strings.HasPrefix(m.Creator, "iotrace record"):
		return "times as measured, the recorder's own cost included (a capture without its calibration)"
	}
	return ""
}

// ErrMalformed matches (errors.Is) every error of a reader about input
// that is not a well-formed trace (trace/format's FormatError): such an
// error names the file and the offset, so a consumer passes it on as it
// is rather than adding where it was reading.
var ErrMalformed = errors.New("malformed trace")

// Trace is a set of per-rank event streams that share one path table, such
// as a trace file (or several), or an expanded pattern script.
type Trace interface {
	Meta() Meta
	// Ranks lists the ranks that have events, in increasing order.
	Ranks() []uint32
	// Rank opens a new stream over the events of rank r, in call order.
	// Several streams may be read concurrently.
	Rank(r uint32) (Source, error)
	// Path resolves a path id of any stream of this trace.
	Path(id PathID) string
	Close() error
}

// An OpIndexed trace knows which ops each part of a rank's stream holds
// (trace/format's per-block totals): RankOps reads rank r without the
// parts that hold none of the ops keep accepts. The events it returns
// still need selecting.
type OpIndexed interface {
	RankOps(r uint32, keep func(Op) bool) (Source, error)
}

// All returns one Source over every rank of t, rank after rank.
func All(t Trace) Source {
	return &allSource{t: t, ranks: t.Ranks()}
}

type allSource struct {
	t     Trace
	ranks []uint32
	cur   Source
}

func (a *allSource) ReadEvents(evs []Event) (int, error) {
	for {
		if a.cur == nil {
			if len(a.ranks) == 0 {
				return 0, io.EOF
			}
			src, err := a.t.Rank(a.ranks[0])
			if err != nil {
				return 0, err
			}
			a.cur, a.ranks = src, a.ranks[1:]
		}
		n, err := a.cur.ReadEvents(evs)
		if errors.Is(err, io.EOF) {
			if c, ok := a.cur.(io.Closer); ok {
				c.Close()
			}
			a.cur = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

func (a *allSource) Path(id PathID) string { return a.t.Path(id) }

// MemTrace is a Trace held in memory, for tests and small generated traces.
type MemTrace struct {
	M      Meta
	Paths  *Paths
	Events map[uint32][]Event
}

// NewMemTrace returns an empty in-memory trace.
func NewMemTrace() *MemTrace {
	return &MemTrace{Paths: NewPaths(), Events: map[uint32][]Event{}}
}

// Add appends events, each to the stream of its Rank.
func (m *MemTrace) Add(evs ...Event) {
	for _, e := range evs {
		m.Events[e.Rank] = append(m.Events[e.Rank], e)
	}
}

// Meta implements Trace.
func (m *MemTrace) Meta() Meta { return m.M }

// Ranks implements Trace.
func (m *MemTrace) Ranks() []uint32 {
	var rs []uint32
	for r := range m.Events {
		rs = append(rs, r)
	}
	slices.Sort(rs)
	return rs
}

// Rank implements Trace.
func (m *MemTrace) Rank(r uint32) (Source, error) {
	return &SliceSource{Events: m.Events[r], Paths: m.Paths}, nil
}

// Path implements Trace.
func (m *MemTrace) Path(id PathID) string { return m.Paths.Lookup(id) }

// Close implements Trace.
func (m *MemTrace) Close() error { return nil }
