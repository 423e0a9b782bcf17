package target

import (
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// TestDuplicatedWorldOrdersRanks: a collective call on a duplicate of
// MPI_COMM_WORLD (as HDF5 and most libraries make) orders the ranks as one
// on MPI_COMM_WORLD does, whatever their clocks say. Rank 1's clock runs
// ahead: by start times its open of x comes after rank 0's create, which
// rank 0 makes only after a barrier rank 1 joins after its open.
func TestDuplicatedWorldOrdersRanks(t *testing.T) {
	const dup = 77
	m := trace.NewMemTrace()
	x := m.Paths.Intern("/s/x")
	m.Add(
		trace.Event{Rank: 0, Op: trace.OpMPICommDup, Comm: trace.CommWorld, Ret: dup, Start: 1},
		trace.Event{Rank: 0, Op: trace.OpMPIBarrier, Comm: dup, Start: 10},
		trace.Event{Rank: 0, Op: trace.OpOpen, Path: x, Flags: trace.OWronly | trace.OCreat, Ret: 3, Start: 20},
		trace.Event{Rank: 1, Op: trace.OpMPICommDup, Comm: trace.CommWorld, Ret: dup, Start: 1},
		trace.Event{Rank: 1, Op: trace.OpOpen, Path: x, Flags: trace.ORdonly, Ret: 3, Start: 30},
		trace.Event{Rank: 1, Op: trace.OpMPIBarrier, Comm: dup, Start: 40},
		// a communicator made by a split: nothing says it holds every rank
		trace.Event{Rank: 0, Op: trace.OpMPICommSplit, Comm: dup, Ret: 88, Start: 50},
		trace.Event{Rank: 0, Op: trace.OpMPIBarrier, Comm: 88, Start: 60},
		trace.Event{Rank: 1, Op: trace.OpMPICommSplit, Comm: dup, Ret: 88, Start: 50},
		trace.Event{Rank: 1, Op: trace.OpMPIBarrier, Comm: 88, Start: 60},
	)
	mg, err := NewMerger(m, []uint32{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	defer mg.Close()
	type step struct {
		rank  int
		op    trace.Op
		epoch int64
	}
	var got []step
	for {
		i, e, err := mg.Next()
		if err != nil {
			t.Fatal(err)
		}
		if e == nil {
			break
		}
		got = append(got, step{i, e.Op, mg.Epoch(i)})
	}
	open := map[int]int{}
	for n, s := range got {
		if s.op == trace.OpOpen {
			open[s.rank] = n
			if s.epoch != int64(2-s.rank) {
				t.Errorf("rank %d opens x after %d collective calls of every rank, want %d", s.rank, s.epoch, 2-s.rank)
			}
		}
	}
	if open[1] > open[0] {
		t.Errorf("rank 1's open of x comes after rank 0's create, though rank 0 made it after a barrier on the duplicate of MPI_COMM_WORLD that rank 1 joined after its open: %v", got)
	}
	if last := got[len(got)-1]; last.epoch != 3 {
		t.Errorf("the last call comes after %d collective calls of every rank, want 3 (the dup, the barrier on it, the split on it; not the barrier on the split's communicator)", last.epoch)
	}
}

// TestRunIsNext: Run gives the events Next does, in the same order, with
// Epoch right at the first event of each run: a lone rank's in runs of
// its batches, several ranks' one at a time; and Next and Run may take
// turns.
func TestRunIsNext(t *testing.T) {
	type step struct {
		rank  int
		start int64
		epoch int64
	}
	mk := func(ranks int) *trace.MemTrace {
		m := trace.NewMemTrace()
		for r := range ranks {
			for i := range 3000 {
				e := trace.Event{Rank: uint32(r), Op: trace.OpPwrite, FD: 3, Size: 1, Ret: 1, Start: int64(10*i + r)}
				if i%7 == 0 {
					e = trace.Event{Rank: uint32(r), Op: trace.OpMPIBarrier, Comm: trace.CommWorld, Start: int64(10*i + r)}
				}
				m.Add(e)
			}
		}
		return m
	}
	read := func(m *trace.MemTrace, ranks []uint32, how string) (steps []step, longest int) {
		mg, err := NewMerger(m, ranks)
		if err != nil {
			t.Fatal(err)
		}
		defer mg.Close()
		for k := 0; ; k++ {
			var i int
			var evs []trace.Event
			if how == "next" || how == "both" && k%2 == 0 {
				var e *trace.Event
				i, e, err = mg.Next()
				if e != nil {
					evs = []trace.Event{*e}
				}
			} else {
				i, evs, err = mg.Run()
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) == 0 {
				return steps, longest
			}
			longest = max(longest, len(evs))
			ep := mg.Epoch(i)
			for j, e := range evs {
				steps = append(steps, step{i, e.Start, ep})
				if e.Op == trace.OpMPIBarrier && j < len(evs)-1 {
					ep++ // what Epoch would say at the next event of the run
				}
			}
		}
	}
	for _, ranks := range [][]uint32{{0}, {0, 1, 2}} {
		m := mk(len(ranks))
		want, _ := read(m, ranks, "next")
		if len(want) != 3000*len(ranks) {
			t.Fatalf("%d ranks: Next gave %d events, want %d", len(ranks), len(want), 3000*len(ranks))
		}
		for _, how := range []string{"run", "both"} {
			got, longest := read(m, ranks, how)
			if len(got) != len(want) {
				t.Fatalf("%d ranks, %s: %d events, want %d", len(ranks), how, len(got), len(want))
			}
			for k := range want {
				if got[k] != want[k] {
					t.Fatalf("%d ranks, %s: event %d is %+v, Next's is %+v", len(ranks), how, k, got[k], want[k])
				}
			}
			switch {
			case len(ranks) == 1 && how == "run" && longest < 100:
				t.Errorf("a lone rank's runs hold %d events at most, want its batches", longest)
			case len(ranks) > 1 && longest != 1:
				t.Errorf("%d ranks, %s: a run of %d events, want one at a time", len(ranks), how, longest)
			}
		}
	}
}
