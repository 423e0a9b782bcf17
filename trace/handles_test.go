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
	step(Event{Op: OpCloseRange, FD: 0, Size: 10, Flags: CloseRangeCloexec}, 0)
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

// Opened gives the path a descriptor or MPI file handle was opened on,
// over the call's own path; opens, metadata calls (whose FD is a
// directory's) and calls on unknown handles get nothing.
func TestHandlesOpened(t *testing.T) {
	var h Handles
	const rel, abs, dir PathID = 1, 2, 3
	opened := func(e Event, want PathID, wantOK bool) {
		t.Helper()
		if got, ok := h.Opened(&e); got != want || ok != wantOK {
			t.Errorf("%v fd %d: Opened %d, %v; want %d, %v", e.Op, e.FD, got, ok, want, wantOK)
		}
		h.Observe(&e)
	}
	opened(Event{Op: OpOpenat, FD: -100, Path: rel, Ret: 3}, 0, false)
	opened(Event{Op: OpPwrite, FD: 3, Path: abs}, rel, true) // the open's name, not the call's
	opened(Event{Op: OpOpen, Path: dir, Ret: 4, Flags: 0x10000}, 0, false)
	opened(Event{Op: OpOpenat, FD: 4, Path: abs, Ret: 5}, 0, false) // FD is the directory
	opened(Event{Op: OpUnlinkat, FD: 4, Path: abs}, 0, false)       // a metadata call names its path
	opened(Event{Op: OpFopen, FD: 6, Path: abs, Ret: 0x7f00}, 0, false)
	opened(Event{Op: OpFwrite, FD: 6}, abs, true) // fopen's descriptor, not its stream
	opened(Event{Op: OpRead, FD: 9, Path: abs}, 0, false)
	opened(Event{Op: OpMPIFileOpen, FD: 1, Path: rel}, 0, false)
	opened(Event{Op: OpMPIFileWriteAt, FD: 1, Path: abs}, rel, true)
	opened(Event{Op: OpMPIFileClose, FD: 1}, rel, true)
	opened(Event{Op: OpMPIFileWriteAt, FD: 1}, 0, false)
	opened(Event{Op: OpMPIBarrier, FD: 3}, 0, false)
}
