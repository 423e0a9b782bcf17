package replay

import (
	"encoding/json"
	"fmt"
)

// MarshalBinary encodes res, so that the processes of a replay spread
// over MPI can send their results to the one that reports: JSON, with the
// lag histogram in its own encoding.
func (res *Result) MarshalBinary() ([]byte, error) {
	lag, err := res.Lag.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return json.Marshal(resultWire{plainResult: plainResult(*res), Lag: lag})
}

// UnmarshalBinary decodes what MarshalBinary wrote.
func (res *Result) UnmarshalBinary(p []byte) error {
	var w resultWire
	if err := json.Unmarshal(p, &w); err != nil {
		return fmt.Errorf("a replay result: %w", err)
	}
	r := Result(w.plainResult)
	if err := r.Lag.UnmarshalBinary(w.Lag); err != nil {
		return fmt.Errorf("a replay result: %w", err)
	}
	*res = r
	return nil
}

// plainResult is Result without its methods; resultWire's Lag, at the
// outer level, takes the place of Result's (whose fields JSON cannot see).
type plainResult Result

type resultWire struct {
	plainResult
	Lag []byte
}

// Merge adds o, the result of other ranks of the same replay (another
// process's share): counts add up, the elapsed time is the longest, the
// epoch the earliest. Results merged in rank order keep RankDone in rank
// order.
func (res *Result) Merge(o *Result) {
	if res.Ranks == 0 && res.Epoch.IsZero() {
		res.Timing = o.Timing
	}
	res.Ranks += o.Ranks
	res.Planned += o.Planned
	res.Events += o.Events
	res.Elapsed = max(res.Elapsed, o.Elapsed)
	if res.Epoch.IsZero() || (!o.Epoch.IsZero() && o.Epoch.Before(res.Epoch)) {
		res.Epoch = o.Epoch
	}
	res.Lag.Merge(&o.Lag)
	for _, e := range o.Errors {
		res.addError(e)
	}
	for _, s := range o.Skips {
		res.addSkip(s)
	}
	res.Unmatched += o.Unmatched
	for _, n := range o.Notes {
		if len(res.Notes) < maxNotes {
			res.Notes = append(res.Notes, n)
		}
	}
	res.Interrupted = res.Interrupted || o.Interrupted
	res.RankDone = append(res.RankDone, o.RankDone...)
	res.Script = res.Script || o.Script
	res.finish()
}
