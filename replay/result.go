package replay

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/hist"
	"github.com/iotrace/iotrace/trace/units"
)

// Result is what a replay did.
type Result struct {
	Timing  Timing
	Ranks   int
	Planned int64         // events the ranks were to replay
	Events  int64         // events the ranks got to (replayed or skipped)
	Elapsed time.Duration // from the common start to the last rank's end
	Epoch   time.Time     // the common start: time 0 of the replay's trace
	// Lag is the issue lag of every call (actual − intended start, ns)
	// under original and think timing.
	Lag         hist.Hist
	Errors      []ErrorCount
	Skips       []SkipCount
	Unmatched   int64    // communication calls no rank completed
	Notes       []string // the first descriptions of unmatched calls
	Interrupted bool     // stopped by the context (Ctrl-C)
	// RankDone is each rank's share of its events replayed, 0–1, in rank
	// order.
	RankDone []float64
	// Script says the replay ran a pattern script: Planned counts the
	// events of its nominal run, whose time-driven loops may run more or
	// fewer iterations than the replay's.
	Script bool
}

// ErrorCount counts calls of one op that failed with one errno.
type ErrorCount struct {
	Op    string
	Errno string
	Count int64
	// Expected says the original call failed the same way.
	Expected bool
	// Detail is what the backend's library said of the first of these
	// failures (an MPI error string), if it said anything.
	Detail string
}

// SkipCount counts calls of one op skipped for one reason.
type SkipCount struct {
	Op     string
	Reason Skip
	Count  int64
}

type errKey struct {
	op       trace.Op
	ret      int64
	expected bool
}

// errTally counts the failures of one errKey, with the first detail the
// backend gave (ErrorDetailer).
type errTally struct {
	n      int64
	detail string
}

type skipKey struct {
	op     trace.Op
	reason Skip
}

// rankResult is one rank's share of a Result.
type rankResult struct {
	rank      uint32
	events    int64
	lag       hist.Hist
	errs      map[errKey]errTally
	skips     map[skipKey]int64
	unmatched int64
	notes     []string
	planned   int64
}

func (r *rankResult) fail(op trace.Op, ret int64, expected bool, detail string) {
	if r.errs == nil {
		r.errs = map[errKey]errTally{}
	}
	k := errKey{op, ret, expected}
	t := r.errs[k]
	t.n++
	if t.detail == "" {
		t.detail = detail
	}
	r.errs[k] = t
}

func (r *rankResult) skip(op trace.Op, s Skip) {
	if r.skips == nil {
		r.skips = map[skipKey]int64{}
	}
	r.skips[skipKey{op, s}]++
}

const maxNotes = 5

func (r *rankResult) unmatch(err error) {
	r.unmatched++
	if len(r.notes) < maxNotes {
		r.notes = append(r.notes, err.Error())
	}
}

// addError adds e to the count of its op, errno and expectation; the
// first detail stays.
func (res *Result) addError(e ErrorCount) {
	i := slices.IndexFunc(res.Errors, func(x ErrorCount) bool {
		return x.Op == e.Op && x.Errno == e.Errno && x.Expected == e.Expected
	})
	if i < 0 {
		res.Errors = append(res.Errors, e)
		return
	}
	res.Errors[i].Count += e.Count
	if res.Errors[i].Detail == "" {
		res.Errors[i].Detail = e.Detail
	}
}

// addSkip adds s to the count of its op and reason.
func (res *Result) addSkip(s SkipCount) {
	i := slices.IndexFunc(res.Skips, func(x SkipCount) bool { return x.Op == s.Op && x.Reason == s.Reason })
	if i < 0 {
		res.Skips = append(res.Skips, s)
		return
	}
	res.Skips[i].Count += s.Count
}

// merge adds one rank's result.
func (res *Result) merge(r *rankResult) {
	res.Events += r.events
	res.Lag.Merge(&r.lag)
	for k, t := range r.errs {
		res.addError(ErrorCount{Op: k.op.String(), Errno: errnoText(k.ret), Expected: k.expected, Count: t.n, Detail: t.detail})
	}
	for k, n := range r.skips {
		res.addSkip(SkipCount{Op: k.op.String(), Reason: k.reason, Count: n})
	}
	res.Unmatched += r.unmatched
	for _, n := range r.notes {
		if len(res.Notes) < maxNotes {
			res.Notes = append(res.Notes, n)
		}
	}
	share := 1.0
	if r.planned > 0 {
		share = float64(r.events) / float64(r.planned)
	}
	res.RankDone = append(res.RankDone, share)
}

func (res *Result) finish() {
	slices.SortFunc(res.Errors, func(a, b ErrorCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Op, b.Op), cmp.Compare(a.Errno, b.Errno))
	})
	slices.SortFunc(res.Skips, func(a, b SkipCount) int {
		return cmp.Or(cmp.Compare(a.Reason, b.Reason), cmp.Compare(b.Count, a.Count), cmp.Compare(a.Op, b.Op))
	})
}

// Failures returns the calls that failed where the original did not.
func (res *Result) Failures() int64 {
	var n int64
	for _, e := range res.Errors {
		if !e.Expected {
			n += e.Count
		}
	}
	return n
}

// Skipped returns the number of skipped calls.
func (res *Result) Skipped() int64 {
	var n int64
	for _, s := range res.Skips {
		n += s.Count
	}
	return n
}

// WriteSummary writes what the replay did beyond the statistics of its
// trace: timing, issue lag, failed and skipped calls, unmatched
// communication, and how far an interrupted replay got.
func (res *Result) WriteSummary(w io.Writer) {
	if res.Script {
		fmt.Fprintf(w, "replay: %d ranks, %d events (%d in the script's nominal run) in %s, timing %s\n", res.Ranks, res.Events, res.Planned,
			units.Duration(res.Elapsed.Nanoseconds()), res.Timing)
	} else {
		fmt.Fprintf(w, "replay: %d ranks, %d of %d events in %s, timing %s\n", res.Ranks, res.Events, res.Planned,
			units.Duration(res.Elapsed.Nanoseconds()), res.Timing)
	}
	if res.Timing != AFAP && res.Lag.Count() > 0 {
		fmt.Fprintf(w, "issue lag: p50 %s, p99 %s, max %s over %d calls\n",
			units.Duration(res.Lag.Quantile(0.5)), units.Duration(res.Lag.Quantile(0.99)),
			units.Duration(res.Lag.Max()), res.Lag.Count())
	}
	if res.Interrupted {
		fmt.Fprintf(w, "interrupted: %s\n", res.Progress())
	}
	for _, e := range res.Errors {
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
	for _, s := range res.Skips {
		fmt.Fprintf(w, "skipped %d %s: %s\n", s.Count, s.Op, s.Reason)
	}
	if res.Unmatched > 0 {
		fmt.Fprintf(w, "unmatched communication: %d calls (no rank could complete them); first: %s\n",
			res.Unmatched, strings.Join(res.Notes, "; "))
	}
}

// Progress says how far the replay got: events, share, and the least and
// most advanced ranks.
func (res *Result) Progress() string {
	pct := 100.0
	if res.Planned > 0 {
		pct = 100 * float64(res.Events) / float64(res.Planned)
	}
	s := fmt.Sprintf("%d of %d events replayed (%.1f %%) in %s", res.Events, res.Planned, pct,
		units.Duration(res.Elapsed.Nanoseconds()))
	if len(res.RankDone) > 1 {
		lo, hi := slices.Min(res.RankDone), slices.Max(res.RankDone)
		s += fmt.Sprintf("; ranks between %.1f %% and %.1f %%", 100*lo, 100*hi)
	}
	return s
}

// WriteJSON writes the summary as one JSON object: ranks, events,
// planned, elapsed_seconds, timing, lag (count and p50/p99/max seconds,
// under original and think timing), errors, skips, unmatched,
// interrupted.
func (res *Result) WriteJSON(w io.Writer) error {
	type lag struct {
		Count uint64  `json:"count"`
		P50   float64 `json:"p50_seconds"`
		P99   float64 `json:"p99_seconds"`
		Max   float64 `json:"max_seconds"`
	}
	type errc struct {
		Op       string `json:"op"`
		Errno    string `json:"errno"`
		Count    int64  `json:"count"`
		Expected bool   `json:"expected"`
		Detail   string `json:"detail,omitempty"`
	}
	type skipc struct {
		Op     string `json:"op"`
		Reason string `json:"reason"`
		Count  int64  `json:"count"`
	}
	v := struct {
		Ranks       int     `json:"ranks"`
		Events      int64   `json:"events"`
		Planned     int64   `json:"planned"`
		Elapsed     float64 `json:"elapsed_seconds"`
		Timing      string  `json:"timing"`
		Lag         *lag    `json:"lag,omitempty"`
		Errors      []errc  `json:"errors"`
		Skips       []skipc `json:"skips"`
		Unmatched   int64   `json:"unmatched"`
		Interrupted bool    `json:"interrupted"`
	}{Ranks: res.Ranks, Events: res.Events, Planned: res.Planned, Elapsed: res.Elapsed.Seconds(), Timing: res.Timing.String(),
		Errors: []errc{}, Skips: []skipc{}, Unmatched: res.Unmatched, Interrupted: res.Interrupted}
	if res.Timing != AFAP {
		v.Lag = &lag{Count: res.Lag.Count(), P50: float64(res.Lag.Quantile(0.5)) / 1e9,
			P99: float64(res.Lag.Quantile(0.99)) / 1e9, Max: float64(res.Lag.Max()) / 1e9}
	}
	for _, e := range res.Errors {
		v.Errors = append(v.Errors, errc{e.Op, e.Errno, e.Count, e.Expected, e.Detail})
	}
	for _, s := range res.Skips {
		v.Skips = append(v.Skips, skipc{s.Op, s.Reason.String(), s.Count})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
