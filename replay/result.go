package replay

import (
	"cmp"
	"slices"
	"time"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/hist"
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
	// PerRank is how the replay of each rank went, in rank order: what
	// the replay records in its own trace (Output.Replayed), and what
	// report.ReplayOf renders.
	PerRank []*trace.ReplayRank
	// Predict says the replay ran as ioreplay --predict.
	Predict bool
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
	Reason string
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
	lag       opLags
	errs      map[errKey]errTally
	skips     map[skipKey]int64
	unmatched int64
	notes     []string
	planned   int64
	// libCalls and libTime count the MPI-IO calls whose library cost
	// in the capture the rank kept, and that cost, ns.
	libCalls, libTime int64
	// io is the ns of the rank's I/O calls in the replay (POSIX,
	// metadata and MPI-IO calls it issued); capturedIO the recorded ns of
	// the same calls (Plan.IO).
	io, capturedIO int64
	// ioSpan and capturedIOSpan are the application's predicted and
	// captured I/O span (trace.ReplayRank.IOSpan), the same on every rank.
	ioSpan, capturedIOSpan int64
}

// opLags are the issue lags of a rank's calls by op, in the order the
// ops first came: a rank uses a few ops, and the one of the call before
// is found first. (An array by op took 8 KiB a rank: 800 MB for 100,000
// ranks that only meet at a barrier.)
type opLags struct {
	ops  []trace.Op
	hs   []*hist.Hist
	last int
}

func (l *opLags) add(op trace.Op, v int64) {
	if l.last < len(l.ops) && l.ops[l.last] == op {
		l.hs[l.last].Add(v)
		return
	}
	i := slices.Index(l.ops, op)
	if i < 0 {
		i = len(l.ops)
		l.ops = append(l.ops, op)
		l.hs = append(l.hs, &hist.Hist{})
	}
	l.last = i
	l.hs[i].Add(v)
}

// byOp returns the lags by op; nil without any.
func (l *opLags) byOp() map[trace.Op]*hist.Hist {
	if len(l.ops) == 0 {
		return nil
	}
	m := make(map[trace.Op]*hist.Hist, len(l.ops))
	for i, op := range l.ops {
		m[op] = l.hs[i]
	}
	return m
}

// record is how the rank's replay went, as the replay's trace records it.
func (r *rankResult) record(res *Result, elapsed int64, interrupted bool, stopped string) *trace.ReplayRank {
	rr := &trace.ReplayRank{Rank: r.rank, Timing: res.Timing.String(), Planned: r.planned, Events: r.events, Elapsed: elapsed,
		Interrupted: interrupted, Stopped: stopped, Script: res.Script, Lag: r.lag.byOp(), Unmatched: r.unmatched, Notes: r.notes,
		Predict: res.Predict, LibCalls: r.libCalls, LibTime: r.libTime, IOTime: r.io, CapturedIOTime: r.capturedIO,
		IOSpan: r.ioSpan, CapturedIOSpan: r.capturedIOSpan}
	for k, t := range r.errs {
		rr.Errors = append(rr.Errors, trace.ReplayError{Op: k.op, Ret: k.ret, Expected: k.expected, Count: t.n, Detail: t.detail})
	}
	slices.SortFunc(rr.Errors, func(a, b trace.ReplayError) int {
		return cmp.Or(cmp.Compare(a.Op, b.Op), cmp.Compare(a.Ret, b.Ret))
	})
	for k, n := range r.skips {
		rr.Skips = append(rr.Skips, trace.ReplaySkip{Op: k.op, Reason: k.reason.String(), Count: n})
	}
	slices.SortFunc(rr.Skips, func(a, b trace.ReplaySkip) int {
		return cmp.Or(cmp.Compare(a.Op, b.Op), cmp.Compare(a.Reason, b.Reason))
	})
	return rr
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
	for _, h := range r.lag.byOp() {
		res.Lag.Merge(h)
	}
	for k, t := range r.errs {
		res.addError(ErrorCount{Op: k.op.String(), Errno: errnoText(k.ret), Expected: k.expected, Count: t.n, Detail: t.detail})
	}
	for k, n := range r.skips {
		res.addSkip(SkipCount{Op: k.op.String(), Reason: k.reason.String(), Count: n})
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
