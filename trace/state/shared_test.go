package state

import (
	"fmt"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// Two ranks share a file's pointer: independent shared-pointer writes land
// where the pointer is as the ranks reach it, an ordered collective's
// calls in rank order from there, a seek moves it; another file (or the
// same file opened on another communicator) has a pointer of its own.
func TestSharedPointers(t *testing.T) {
	const f, g = trace.PathID(1), trace.PathID(2)
	sp := NewSharedPointers()
	w := func(rank int, op trace.Op, path trace.PathID, comm uint32, n int64) {
		sp.Event(rank, &trace.Event{Op: op, Size: n, Ret: n}, path, comm)
	}
	w(1, trace.OpMPIFileWriteShared, f, 2, 10)   // 0
	w(0, trace.OpMPIFileWriteShared, f, 2, 5)    // 10
	w(1, trace.OpMPIFileWriteOrdered, f, 2, 7)   // rank 1 after rank 0's: 15+100
	w(0, trace.OpMPIFileWriteOrdered, f, 2, 100) // 15
	w(0, trace.OpMPIFileWriteShared, g, 2, 3)    // g: 0
	w(0, trace.OpMPIFileWriteShared, f, 3, 4)    // f on another communicator: 0
	sp.Event(0, &trace.Event{Op: trace.OpMPIFileSeekShared, Offset: 1000, Whence: 0}, f, 2)
	w(1, trace.OpMPIFileReadShared, f, 2, 8) // 1000
	got := fmt.Sprint(sp.Offsets(2))
	if want := "[[10 15 0 0] [0 115 1000]]"; got != want {
		t.Errorf("offsets %s, want %s", got, want)
	}
}
