package access

import (
	"testing"

	"github.com/iotrace/iotrace/trace"
)

func TestBucket(t *testing.T) {
	// DARSHAN_BUCKET_INC: each bucket up to and including its bound
	for _, c := range []struct {
		n    int64
		want int
	}{{0, 0}, {100, 0}, {101, 1}, {1024, 1}, {1025, 2}, {10240, 2}, {65536, 3}, {102400, 3}, {102401, 4},
		{1 << 20, 4}, {1<<20 + 1, 5}, {4 << 20, 5}, {10 << 20, 6}, {100 << 20, 7}, {1 << 30, 8}, {1<<30 + 1, 9}} {
		if b := Bucket(c.n); b != c.want {
			t.Errorf("Bucket(%d) = %d (%s), want %d (%s)", c.n, b, BucketNames[b], c.want, BucketNames[c.want])
		}
	}
}

// TestCommons: the four most common values by count, ties by the larger
// value; 0 never; only the first 32 distinct values are counted.
func TestCommons(t *testing.T) {
	var tr tracker
	for _, v := range []int64{5, 5, 7, 7, 3, 3, 3, 9, 0, 0, 0, 0, 1, 1} {
		tr.add(v)
	}
	want := Commons{{3, 3}, {7, 2}, {5, 2}, {1, 2}}
	if tr.top != want {
		t.Errorf("top %v, want %v", tr.top, want)
	}
	var lim tracker
	for v := int64(1); v <= 40; v++ {
		lim.add(v)
	}
	for range 5 {
		lim.add(40) // the 40th value seen: never counted
		lim.add(2)
	}
	if lim.top[0] != (Common{2, 6}) || lim.top[1].Value == 40 {
		t.Errorf("top %v", lim.top)
	}
	// the reduction sums a value's counts and keeps four
	a := Commons{{4096, 10}, {8192, 3}}
	b := Commons{{8192, 9}, {100, 1}}
	if m := mergeCommons(a, b); m != (Commons{{8192, 12}, {4096, 10}, {100, 1}}) {
		t.Errorf("merge %v", m)
	}
}

// TestSequential: Darshan's sequential and consecutive counts, strides,
// and the reset at open.
func TestSequential(t *testing.T) {
	tk := NewTracker(0, Options{})
	ev := func(op trace.Op, off, n int64) *trace.Event {
		return &trace.Event{Op: op, Offset: off, Size: n, Ret: n}
	}
	tk.Add("f", &trace.Event{Op: trace.OpOpen, Ret: 3}, 0, 0)
	for _, e := range []*trace.Event{ev(trace.OpPwrite, 0, 10), ev(trace.OpPwrite, 10, 10), ev(trace.OpPwrite, 40, 10),
		ev(trace.OpPwrite, 5, 10), ev(trace.OpPread, 100, 1)} {
		tk.Add("f", e, e.Offset, 0)
	}
	tk.Add("f", &trace.Event{Op: trace.OpOpen, Ret: 3}, 0, 0)
	e := ev(trace.OpPwrite, 20, 4) // after the reopen: above 0, sequential
	tk.Add("f", e, e.Offset, 0)
	p, _ := tk.Records()
	r := p[0]
	// writes at 0 (first: no), 10 (consecutive), 40 (sequential, stride
	// 20), 5 (back), then 20 after the reopen (sequential, no stride);
	// the read between is one switch, the write after it another (an
	// open does not reset it)
	if r.SeqWrites != 3 || r.ConsecWrites != 1 || r.SeqReads != 1 || r.ConsecReads != 0 || r.RWSwitches != 2 ||
		r.Strides != (Commons{{20, 1}}) || r.Opens != 2 || r.MaxByteWritten != 49 || r.FileNotAligned != 5 {
		t.Errorf("%+v", r)
	}
}
