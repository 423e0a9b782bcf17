package format

import "runtime"

// freeList keeps values for reuse among goroutines, up to one per
// processor. A trace with thousands of ranks has thousands of readers or
// writers, but only as many decode or encode at once as there are
// processors, so the large scratch of that work is shared through a
// freeList instead of kept by each. Unlike a sync.Pool it is not emptied
// by the garbage collector, which for a writer would mean a new 256 KiB
// table of counts, cleared, every few blocks.
type freeList[T any] struct{ ch chan *T }

func newFreeList[T any]() freeList[T] {
	return freeList[T]{ch: make(chan *T, max(runtime.NumCPU(), 4))}
}

// get returns a value from the list, or a new one.
func (f freeList[T]) get() *T {
	select {
	case v := <-f.ch:
		return v
	default:
		return new(T)
	}
}

// put returns v to the list, or drops it when the list is full.
func (f freeList[T]) put(v *T) {
	select {
	case f.ch <- v:
	default:
	}
}
