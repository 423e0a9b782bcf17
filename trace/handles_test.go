package trace

import "testing"

func TestHandles(t *testing.T) {
	var h Handles
	const a, b PathID = 1, 2
	step := func(e Event, wantPath PathID) {
		t.Helper()
		if got := h.Path(&e); got != wantPath {
			t.Errorf("%v fd %d: path %d, want %d", e.Op, e.FD, got, wantPath)
		}
		h.Observe(&e)
	}
	step(Event{Op: OpOpen, Path: a, Ret: 3}, a)
	step(Event{Op: OpWrite, FD: 3}, a)
	step(Event{Op: OpDup, FD: 3, Ret: 4}, a)
	step(Event{Op: OpRead, FD: 4}, a)
	if h.Refs(a) != 2 {
		t.Errorf("refs %d, want 2", h.Refs(a))
	}
	step(Event{Op: OpOpen, Path: b, Ret: 5}, b)
	step(Event{Op: OpDup2, FD: 5, Ret: 3}, b) // closes 3 first
	if h.Refs(a) != 1 || h.Refs(b) != 2 {
		t.Errorf("after dup2: refs a %d b %d", h.Refs(a), h.Refs(b))
	}
	step(Event{Op: OpPwrite, FD: 3}, b)
	step(Event{Op: OpClose, FD: 4}, a)
	if h.Refs(a) != 0 {
		t.Errorf("a still open: %d", h.Refs(a))
	}
	step(Event{Op: OpRead, FD: 4}, 0)
	step(Event{Op: OpOpen, Path: a, Ret: -2}, a) // failed: no descriptor
	step(Event{Op: OpRead, FD: -2}, 0)
	step(Event{Op: OpCloseRange, FD: 0, Size: 10, Flags: closeRangeCloexec}, 0)
	if h.Refs(b) != 2 {
		t.Errorf("close_range with CLOSE_RANGE_CLOEXEC closed descriptors")
	}
	step(Event{Op: OpCloseRange, FD: 0, Size: 10}, 0)
	if h.Refs(b) != 0 {
		t.Errorf("close_range left %d", h.Refs(b))
	}
	step(Event{Op: OpMPIFileOpen, Path: a, FD: 1}, a)
	step(Event{Op: OpMPIFileWriteAt, FD: 1}, a)
	step(Event{Op: OpWrite, FD: 1}, 0) // a descriptor, not the MPI handle
	step(Event{Op: OpMPIFileClose, FD: 1}, a)
	step(Event{Op: OpMPIFileReadAt, FD: 1}, 0)
	step(Event{Op: OpMPIBarrier, Path: a}, 0)
	step(Event{Op: OpRegionBegin, Path: a}, 0)
	if h.Refs(a) != 0 {
		t.Errorf("refs after the MPI close: %d", h.Refs(a))
	}
}
