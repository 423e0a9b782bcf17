package replay

import (
	"bytes"
	"encoding/gob"
	"slices"
)

// MarshalBinary encodes res, so that the processes of a replay spread
// over MPI can send their results to the one that reports.
func (res *Result) MarshalBinary() ([]byte, error) {
	var b bytes.Buffer
	type plain Result // without the methods, so that gob does not recurse
	err := gob.NewEncoder(&b).Encode((*plain)(res))
	return b.Bytes(), err
}

// UnmarshalBinary decodes what MarshalBinary wrote.
func (res *Result) UnmarshalBinary(p []byte) error {
	type plain Result
	var v plain
	if err := gob.NewDecoder(bytes.NewReader(p)).Decode(&v); err != nil {
		return err
	}
	*res = Result(v)
	return nil
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
		i := slices.IndexFunc(res.Skips, func(x SkipCount) bool { return x.Op == s.Op && x.Reason == s.Reason })
		if i < 0 {
			res.Skips = append(res.Skips, s)
		} else {
			res.Skips[i].Count += s.Count
		}
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
