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
