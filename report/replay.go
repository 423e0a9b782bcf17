package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/iotrace/iotrace/internal/sat"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/hist"
	"github.com/iotrace/iotrace/trace/units"
)

// Replay is how a replay went, as its own trace says (trace.Replayed):
// the replay's timing, how far its ranks got, the issue lag of its calls,
// and the calls that failed, were skipped or found no partner.
type Replay struct {
	Timing string
	Ranks  int
	// Of is the number of ranks of the whole replay, when the trace holds
	// fewer (the parts of an MPI replay that did not end); 0 otherwise.
	Of      int
	Planned int64 // events the ranks were to replay
	Events  int64 // events they got to
	Elapsed int64 // ns, from the common start to the last rank's end
	// Lag is the issue lag of every call (actual − intended start, ns);
	// LagByOp of each op's, in op order. Empty as fast as possible.
	Lag     hist.Hist
	LagByOp []OpLag
	Errors  []ReplayErrors
	Skips   []ReplaySkips
	// Unmatched counts communication calls no rank completed; Notes
	// describe the first of them.
	Unmatched   int64
	Notes       []string
	Interrupted bool
	// Stopped says why the replay was interrupted, when the user did not
	// (ranks disagreeing: the first reason).
	Stopped string
	Script  bool
	// RankDone is each rank's share of its events replayed, 0–1, in
	// rank order.
	RankDone []float64
	// Predict says the replay ran as ioreplay --predict.
	Predict bool
	// LibCalls counts the MPI-IO calls at which the replay kept the MPI
	// library's cost in the capture (beyond the POSIX calls inside them);
	// LibTime is that cost, ns, over all ranks.
	LibCalls, LibTime int64
	// IOTime is the application's I/O time in the replay: the I/O time
	// of its slowest rank (IORank), ns; CapturedIOTime the same of the
	// capture's ranks (CapturedIORank), over the calls replayed. Both 0
	// for a replay's trace that does not record them.
	IOTime, CapturedIOTime int64
	IORank, CapturedIORank uint32
	// IOSpan is, under --predict, the application's predicted I/O time:
	// from its first file call to its last on the timelines rebuilt from
	// the replay's call times and the captured think times, ns;
	// CapturedIOSpan the same span in the capture. 0 where not predicted.
	IOSpan, CapturedIOSpan int64
}

// OpLag is the issue lag of one op's calls.
type OpLag struct {
	Op  string
	Lag hist.Hist
}

// ReplayErrors counts calls of one op that failed with one errno.
type ReplayErrors struct {
	Op       string
	Errno    string
	Count    int64
	Expected bool   // the original call failed the same way
	Detail   string // what the backend's library said of the first
}

// ReplaySkips counts calls of one op skipped for one reason.
type ReplaySkips struct {
	Op     string
	Reason string
	Count  int64
}

// maxNotes bounds the descriptions of unmatched calls.
const maxNotes = 5

// ReplayOf sums how the replay of each rank went (ranks in rank order).
func ReplayOf(ranks []*trace.ReplayRank) *Replay {
	r := &Replay{Ranks: len(ranks)}
	lag := map[trace.Op]*hist.Hist{}
	errs := map[ReplayErrors]int64{}
	skips := map[ReplaySkips]int64{}
	for _, rr := range ranks {
		if r.Timing == "" {
			r.Timing = rr.Timing
		}
		r.Predict = r.Predict || rr.Predict
		r.LibCalls += rr.LibCalls
		r.LibTime = sat.Add(r.LibTime, rr.LibTime)
		if rr.IOTime > r.IOTime {
			r.IOTime, r.IORank = rr.IOTime, rr.Rank
		}
		if rr.CapturedIOTime > r.CapturedIOTime {
			r.CapturedIOTime, r.CapturedIORank = rr.CapturedIOTime, rr.Rank
		}
		r.IOSpan, r.CapturedIOSpan = max(r.IOSpan, rr.IOSpan), max(r.CapturedIOSpan, rr.CapturedIOSpan)
		r.Planned += rr.Planned
		r.Events += rr.Events
		r.Elapsed = max(r.Elapsed, rr.Elapsed)
		for op, h := range rr.Lag {
			if lag[op] == nil {
				lag[op] = &hist.Hist{}
			}
			lag[op].Merge(h)
			r.Lag.Merge(h)
		}
		for _, e := range rr.Errors {
			k := ReplayErrors{Op: e.Op.String(), Errno: trace.Errno(e.Ret), Expected: e.Expected}
			if _, ok := errs[k]; !ok {
				r.Errors = append(r.Errors, ReplayErrors{Op: k.Op, Errno: k.Errno, Expected: k.Expected, Detail: e.Detail})
			}
			errs[k] += e.Count
		}
		for _, s := range rr.Skips {
			k := ReplaySkips{Op: s.Op.String(), Reason: s.Reason}
			if _, ok := skips[k]; !ok {
				r.Skips = append(r.Skips, k)
			}
			skips[k] += s.Count
		}
		r.Unmatched += rr.Unmatched
		for _, n := range rr.Notes {
			if len(r.Notes) < maxNotes {
				r.Notes = append(r.Notes, n)
			}
		}
		r.Interrupted = r.Interrupted || rr.Interrupted
		if r.Stopped == "" {
			r.Stopped = rr.Stopped
		}
		r.Script = r.Script || rr.Script
		done := 1.0
		if rr.Planned > 0 {
			done = float64(rr.Events) / float64(rr.Planned)
		}
		r.RankDone = append(r.RankDone, done)
	}
	for _, op := range slices.Sorted(func(yield func(trace.Op) bool) {
		for op := range lag {
			if !yield(op) {
				return
			}
		}
	}) {
		r.LagByOp = append(r.LagByOp, OpLag{Op: op.String(), Lag: *lag[op]})
	}
	for i, e := range r.Errors {
		r.Errors[i].Count = errs[ReplayErrors{Op: e.Op, Errno: e.Errno, Expected: e.Expected}]
	}
	for i, s := range r.Skips {
		r.Skips[i].Count = skips[ReplaySkips{Op: s.Op, Reason: s.Reason}]
	}
	slices.SortFunc(r.Errors, func(a, b ReplayErrors) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Op, b.Op), cmp.Compare(a.Errno, b.Errno))
	})
	slices.SortFunc(r.Skips, func(a, b ReplaySkips) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Op, b.Op), cmp.Compare(a.Reason, b.Reason))
	})
	return r
}

// replayOfTrace returns how the replay of t went, if t is a replay's trace
// that says so for every rank.
func replayOfTrace(t trace.Trace) *Replay {
	rt, ok := t.(trace.Replayed)
	if !ok {
		return nil
	}
	var ranks []*trace.ReplayRank
	for _, r := range t.Ranks() {
		rr := rt.Replay(r)
		if rr == nil {
			return nil
		}
		ranks = append(ranks, rr)
	}
	if len(ranks) == 0 {
		return nil
	}
	r := ReplayOf(ranks)
	if n := t.Meta().Ranks; n > r.Ranks {
		r.Of = n
	}
	return r
}

// Failures is the number of calls that failed where the original did not.
func (r *Replay) Failures() int64 {
	var n int64
	for _, e := range r.Errors {
		if !e.Expected {
			n += e.Count
		}
	}
	return n
}

// Progress says how far the replay got: events, share, and the least and
// most advanced ranks.
func (r *Replay) Progress() string {
	pct := 100.0
	if r.Planned > 0 {
		pct = 100 * float64(r.Events) / float64(r.Planned)
	}
	s := fmt.Sprintf("%d of %d events replayed (%.1f %%) in %s", r.Events, r.Planned, pct, units.Duration(r.Elapsed))
	if len(r.RankDone) > 1 {
		s += fmt.Sprintf("; ranks between %.1f %% and %.1f %%", 100*slices.Min(r.RankDone), 100*slices.Max(r.RankDone))
	}
	return s
}

// WriteText writes the replay's summary: timing, issue lag, failed and
// skipped calls, unmatched communication, how far an interrupted replay
// got.
func (r *Replay) WriteText(w io.Writer) {
	ranks := fmt.Sprintf("%d ranks", r.Ranks)
	if r.Of > r.Ranks {
		ranks = fmt.Sprintf("%d of its %d ranks in this trace", r.Ranks, r.Of)
	}
	if r.Script {
		fmt.Fprintf(w, "replay: %s, %d events (%d in the script's nominal run) in %s, timing %s\n", ranks, r.Events, r.Planned,
			units.Duration(r.Elapsed), r.Timing)
	} else {
		fmt.Fprintf(w, "replay: %s, %d of %d events in %s, timing %s\n", ranks, r.Events, r.Planned,
			units.Duration(r.Elapsed), r.Timing)
	}
	if r.Lag.Count() > 0 {
		fmt.Fprintf(w, "issue lag: %s\n", lagText(&r.Lag))
		if len(r.LagByOp) > 1 {
			var parts []string
			for _, l := range r.LagByOp {
				parts = append(parts, fmt.Sprintf("%s p99 %s", l.Op, units.Duration(l.Lag.Quantile(0.99))))
			}
			fmt.Fprintf(w, "issue lag by op: %s\n", strings.Join(parts, ", "))
		}
	}
	if r.LibCalls > 0 {
		fmt.Fprintf(w, "MPI-IO library cost kept: %d calls, %s (what the MPI library took beyond its POSIX calls in the capture)\n",
			r.LibCalls, units.Duration(r.LibTime))
	}
	if r.IOSpan > 0 {
		fmt.Fprintln(w, r.ioSpanText())
	}
	if line := r.ioTimeText(); line != "" {
		fmt.Fprintln(w, line)
	}
	if r.Interrupted {
		why := ""
		if r.Stopped != "" {
			why = r.Stopped + ": "
		}
		fmt.Fprintf(w, "interrupted: %s%s\n", why, r.Progress())
	}
	for _, e := range r.Errors {
		how := "failed"
		if e.Expected {
			how = "failed as in the original"
		}
		var first string
		if e.Detail != "" {
			first = " (first: " + e.Detail + ")"
		}
		fmt.Fprintf(w, "%s: %d %s with %s%s\n", e.Op, e.Count, how, e.Errno, first)
	}
	for _, s := range r.Skips {
		fmt.Fprintf(w, "skipped %d %s: %s\n", s.Count, s.Op, s.Reason)
	}
	if r.Unmatched > 0 {
		fmt.Fprintf(w, "unmatched communication: %d calls (no rank could complete them); first: %s\n",
			r.Unmatched, strings.Join(r.Notes, "; "))
	}
}

// ioTimeText is the line of the application's I/O time, replayed beside
// captured: "predicted …" under --predict; "" when the trace does not
// record it (or a script, which has no capture).
func (r *Replay) ioTimeText() string {
	if r.Script || r.IOTime == 0 && r.CapturedIOTime == 0 {
		return ""
	}
	what := "I/O time in the replay"
	if r.Predict && r.IOSpan == 0 {
		what = "predicted application I/O time"
	}
	s := fmt.Sprintf("%s: %s (slowest rank %d), captured %s (slowest rank %d)", what,
		units.Duration(r.IOTime), r.IORank, units.Duration(r.CapturedIOTime), r.CapturedIORank)
	if r.CapturedIOTime > 0 {
		s += fmt.Sprintf(", %+.1f %%", 100*(float64(r.IOTime)/float64(r.CapturedIOTime)-1))
	}
	return s
}

// ioSpanText is the line of the prediction (--predict): the
// application's I/O time from its first file call to its last, rebuilt,
// beside the capture's.
func (r *Replay) ioSpanText() string {
	s := fmt.Sprintf("predicted application I/O time (first file call to last, every rank): %s, captured %s",
		units.Duration(r.IOSpan), units.Duration(r.CapturedIOSpan))
	if r.CapturedIOSpan > 0 {
		s += fmt.Sprintf(", %+.1f %%", 100*(float64(r.IOSpan)/float64(r.CapturedIOSpan)-1))
	}
	return s
}

func lagText(h *hist.Hist) string {
	return fmt.Sprintf("p50 %s, p99 %s, max %s over %d calls",
		units.Duration(h.Quantile(0.5)), units.Duration(h.Quantile(0.99)), units.Duration(h.Max()), h.Count())
}

// The JSON form of a replay (docs/FORMAT.md, "Reports"): the "replay"
// object of a report, the B side of a comparison, ioreplay --summary.

type jsonLag struct {
	Op    string  `json:"op,omitempty"`
	Count uint64  `json:"count"`
	P50   float64 `json:"p50_seconds"`
	P99   float64 `json:"p99_seconds"`
	Max   float64 `json:"max_seconds"`
}

type jsonReplayError struct {
	Op       string `json:"op"`
	Errno    string `json:"errno"`
	Count    int64  `json:"count"`
	Expected bool   `json:"expected"`
	Detail   string `json:"detail,omitempty"`
}

type jsonReplaySkip struct {
	Op     string `json:"op"`
	Reason string `json:"reason"`
	Count  int64  `json:"count"`
}

type jsonReplay struct {
	Ranks       int               `json:"ranks"`
	Of          int               `json:"of_ranks,omitempty"`
	Events      int64             `json:"events"`
	Planned     int64             `json:"planned"`
	Elapsed     float64           `json:"elapsed_seconds"`
	Timing      string            `json:"timing"`
	Lag         *jsonLag          `json:"lag,omitempty"`
	LagByOp     []jsonLag         `json:"lag_by_op,omitempty"`
	Errors      []jsonReplayError `json:"errors"`
	Skips       []jsonReplaySkip  `json:"skips"`
	Unmatched   int64             `json:"unmatched"`
	Interrupted bool              `json:"interrupted"`
	Stopped     string            `json:"stopped,omitempty"`
	Predict     bool              `json:"predict"`
	IOTime      *jsonIOTime       `json:"io_time,omitempty"`
	IOSpan      *jsonIOSpan       `json:"io_span,omitempty"`
	Lib         *jsonLib          `json:"mpiio_library_cost,omitempty"`
}

// jsonIOTime is the application's I/O time (its slowest rank's), in the
// replay and in the capture.
type jsonIOTime struct {
	Replay       float64 `json:"replay_seconds"`
	Rank         uint32  `json:"replay_rank"`
	Captured     float64 `json:"captured_seconds"`
	CapturedRank uint32  `json:"captured_rank"`
}

// jsonIOSpan is the predicted I/O time of the application, first file
// call to last (--predict), and the capture's.
type jsonIOSpan struct {
	Predicted float64 `json:"predicted_seconds"`
	Captured  float64 `json:"captured_seconds"`
}

// jsonLib is the MPI-IO library cost the replay kept.
type jsonLib struct {
	Calls   int64   `json:"calls"`
	Seconds float64 `json:"seconds"`
}

func lagJSON(op string, h *hist.Hist) jsonLag {
	return jsonLag{Op: op, Count: h.Count(), P50: float64(h.Quantile(0.5)) / 1e9, P99: float64(h.Quantile(0.99)) / 1e9, Max: float64(h.Max()) / 1e9}
}

func replayJSON(r *Replay) *jsonReplay {
	if r == nil {
		return nil
	}
	v := &jsonReplay{Ranks: r.Ranks, Events: r.Events, Planned: r.Planned, Elapsed: float64(r.Elapsed) / 1e9, Timing: r.Timing,
		Errors: []jsonReplayError{}, Skips: []jsonReplaySkip{}, Unmatched: r.Unmatched, Interrupted: r.Interrupted, Stopped: r.Stopped, Of: r.Of}
	v.Predict = r.Predict
	if !r.Script && (r.IOTime != 0 || r.CapturedIOTime != 0) {
		v.IOTime = &jsonIOTime{Replay: float64(r.IOTime) / 1e9, Rank: r.IORank, Captured: float64(r.CapturedIOTime) / 1e9, CapturedRank: r.CapturedIORank}
	}
	if r.IOSpan > 0 {
		v.IOSpan = &jsonIOSpan{Predicted: float64(r.IOSpan) / 1e9, Captured: float64(r.CapturedIOSpan) / 1e9}
	}
	if r.LibCalls > 0 {
		v.Lib = &jsonLib{Calls: r.LibCalls, Seconds: float64(r.LibTime) / 1e9}
	}
	if r.Timing != "afap" {
		l := lagJSON("", &r.Lag)
		v.Lag = &l
		for i := range r.LagByOp {
			v.LagByOp = append(v.LagByOp, lagJSON(r.LagByOp[i].Op, &r.LagByOp[i].Lag))
		}
	}
	for _, e := range r.Errors {
		v.Errors = append(v.Errors, jsonReplayError(e))
	}
	for _, s := range r.Skips {
		v.Skips = append(v.Skips, jsonReplaySkip(s))
	}
	return v
}

// WarmJSON makes what WriteJSON makes at its first call (encoding/json's
// encoders of the summary's types, by reflection: 0.36 M instructions),
// for a goroutine of a program that writes the summary at its end, while
// it works.
func WarmJSON() { json.NewEncoder(io.Discard).Encode(&jsonReplay{}) }

// WriteJSON writes the replay as one JSON object (the "replay" object of
// a report).
func (r *Replay) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(replayJSON(r))
}
