package replay

import (
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// TestRankRecord: how a rank's replay went, as its trace records it, holds
// the rank's counts, its lag by op, its failures and skips.
func TestRankRecord(t *testing.T) {
	var r rankResult
	r.planned, r.events = 10, 9
	r.lag.add(trace.OpPwrite, 100)
	r.lag.add(trace.OpPwrite, 300)
	r.lag.add(trace.Op(5000), 7) // an op this build does not know
	r.fail(trace.OpOpen, -2, true, "")
	r.fail(trace.OpOpen, -2, true, "")
	r.skip(trace.OpRead, SkipStdStream)
	r.unmatch(errString("MPI_Recv from 3"))
	res := &Result{Timing: Think, Script: true}
	rr := r.record(res, 12345, true)
	if rr.Timing != "think" || rr.Planned != 10 || rr.Events != 9 || rr.Elapsed != 12345 || !rr.Interrupted || !rr.Script {
		t.Errorf("record %+v", rr)
	}
	if h := rr.Lag[trace.OpPwrite]; h == nil || h.Count() != 2 || h.Max() != 300 || rr.Lag[trace.Op(5000)].Count() != 1 {
		t.Errorf("lag %v", rr.Lag)
	}
	if len(rr.Errors) != 1 || rr.Errors[0] != (trace.ReplayError{Op: trace.OpOpen, Ret: -2, Expected: true, Count: 2}) {
		t.Errorf("errors %+v", rr.Errors)
	}
	if len(rr.Skips) != 1 || rr.Skips[0] != (trace.ReplaySkip{Op: trace.OpRead, Reason: SkipStdStream.String(), Count: 1}) {
		t.Errorf("skips %+v", rr.Skips)
	}
	if rr.Unmatched != 1 || len(rr.Notes) != 1 {
		t.Errorf("unmatched %d %v", rr.Unmatched, rr.Notes)
	}
	res.merge(&r)
	if res.Lag.Count() != 3 || res.Failures() != 0 || res.Skipped() != 1 {
		t.Errorf("result: lag %d, failures %d, skipped %d", res.Lag.Count(), res.Failures(), res.Skipped())
	}
}

type errString string

func (e errString) Error() string { return string(e) }
