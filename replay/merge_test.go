package replay

import (
	"reflect"
	"testing"
	"time"

	"github.com/iotrace/iotrace/trace/hist"
)

// TestResultMerge checks that the results of two processes merge into
// the result of the whole replay, also through their binary form.
func TestResultMerge(t *testing.T) {
	t0 := time.Unix(1000, 0)
	a := &Result{Timing: AFAP, Ranks: 2, Planned: 10, Events: 10, Elapsed: time.Second, Epoch: t0.Add(time.Millisecond),
		Errors: []ErrorCount{{Op: "pwrite", Errno: "ENOSPC", Count: 1}}, Skips: []SkipCount{{Op: "read", Reason: SkipStdStream, Count: 2}},
		Unmatched: 1, Notes: []string{"a"}, RankDone: []float64{1, 1}}
	a.Lag.Add(5)
	b := &Result{Timing: AFAP, Ranks: 1, Planned: 4, Events: 3, Elapsed: 2 * time.Second, Epoch: t0,
		Errors: []ErrorCount{{Op: "pwrite", Errno: "ENOSPC", Count: 2}, {Op: "open", Errno: "ENOENT", Count: 1, Expected: true}},
		Skips:  []SkipCount{{Op: "read", Reason: SkipStdStream, Count: 1}}, RankDone: []float64{0.75}}
	b.Lag.Add(7)
	bin, err := b.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var b2 Result
	if err := b2.UnmarshalBinary(bin); err != nil {
		t.Fatal(err)
	}
	var m Result
	m.Merge(a)
	m.Merge(&b2)
	if m.Ranks != 3 || m.Planned != 14 || m.Events != 13 || m.Elapsed != 2*time.Second || !m.Epoch.Equal(t0) || m.Timing != AFAP {
		t.Errorf("merged %+v", m)
	}
	if m.Lag.Count() != 2 || m.Lag.Max() != 7 {
		t.Errorf("lag count %d max %d", m.Lag.Count(), m.Lag.Max())
	}
	if m.Failures() != 3 || m.Skipped() != 3 || m.Unmatched != 1 || len(m.RankDone) != 3 || m.RankDone[2] != 0.75 {
		t.Errorf("failures %d skipped %d unmatched %d rankdone %v", m.Failures(), m.Skipped(), m.Unmatched, m.RankDone)
	}
	if m.Errors[0].Op != "pwrite" || m.Errors[0].Count != 3 {
		t.Errorf("errors %+v", m.Errors)
	}
}

// TestResultWire: every field of a result survives its binary form, and
// damaged bytes are an error, not a panic.
func TestResultWire(t *testing.T) {
	r := &Result{Timing: Think, Ranks: 3, Planned: 30, Events: 29, Elapsed: 1234567 * time.Microsecond,
		Epoch:  time.Unix(1700000000, 123456789),
		Errors: []ErrorCount{{Op: "MPI_File_open", Errno: "EINVAL", Count: 2, Expected: true, Detail: "MPI_ERR_AMODE: invalid amode argument"}},
		Skips:  []SkipCount{{Op: "write", Reason: SkipStdStream, Count: 4}}, Unmatched: 2, Notes: []string{"MPI_Recv from 3 tag 7"},
		Interrupted: true, RankDone: []float64{1, 1.0 / 3, 0.999999}, Script: true}
	for _, v := range []int64{0, 1, 999, 1 << 20, 5e9} {
		r.Lag.Add(v)
	}
	bin, err := r.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got Result
	if err := got.UnmarshalBinary(bin); err != nil {
		t.Fatal(err)
	}
	if !got.Epoch.Equal(r.Epoch) {
		t.Errorf("epoch %v, want %v", got.Epoch, r.Epoch)
	}
	lagA, _ := r.Lag.MarshalBinary()
	lagB, _ := got.Lag.MarshalBinary()
	if string(lagA) != string(lagB) {
		t.Errorf("lag histogram changed")
	}
	want := *r
	want.Epoch, got.Epoch = time.Time{}, time.Time{}
	want.Lag, got.Lag = hist.Hist{}, hist.Hist{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
	}
	for _, bad := range [][]byte{nil, []byte("{"), bin[:len(bin)/2], []byte(`{"Lag":"AAA="}`)} {
		var x Result
		if err := x.UnmarshalBinary(bad); err == nil {
			t.Errorf("UnmarshalBinary(%q) accepted", bad)
		}
	}
}
