package state

import (
	"reflect"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

func TestMaps(t *testing.T) {
	var ms Maps
	ms.Map(0x10000, 0x4000, 7, 8192)
	ms.Map(0x20000, 0x1000, 9, 0)
	// An msync of the middle page of the first mapping.
	if got, want := ms.Pieces(0x11000, 0x1000), []Mapping{{Addr: 0x11000, Len: 0x1000, Path: 7, Off: 8192 + 0x1000}}; !reflect.DeepEqual(got, want) {
		t.Errorf("pieces %v, want %v", got, want)
	}
	// Anonymous memory: nothing.
	if got := ms.Pieces(0x30000, 0x1000); got != nil {
		t.Errorf("pieces of unmapped memory: %v", got)
	}
	// A munmap over both and the gap between: two pieces, in order.
	got := ms.Unmap(0x12000, 0x20000)
	want := []Mapping{{Addr: 0x12000, Len: 0x2000, Path: 7, Off: 8192 + 0x2000}, {Addr: 0x20000, Len: 0x1000, Path: 9, Off: 0}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("unmap %v, want %v", got, want)
	}
	if ms.Len() != 1 || !reflect.DeepEqual(ms.Pieces(0, 1<<40), []Mapping{{Addr: 0x10000, Len: 0x2000, Path: 7, Off: 8192}}) {
		t.Errorf("left %v, want the first two pages of the first mapping", ms.m)
	}
	// A hole punched in the middle splits the mapping; MAP_FIXED over a
	// mapping replaces it.
	ms.Unmap(0x11000, 0x1000)
	ms.Map(0x10000, 0x1000, 3, 0)
	if want := []Mapping{{Addr: 0x10000, Len: 0x1000, Path: 3}}; !reflect.DeepEqual(ms.m, want) {
		t.Errorf("after the hole and MAP_FIXED: %v, want %v", ms.m, want)
	}
	// A range wrapping the address space is clipped, not wrapped.
	if got := ms.Pieces(^uint64(0)-10, 100); got != nil {
		t.Errorf("wrapping range: %v", got)
	}
}

// TestMapsFork: a forked process has its parent's mappings, an exec none.
func TestMapsFork(t *testing.T) {
	f := New[struct{}, struct{}](nil)
	f.Proc(0).Maps.Map(0x1000, 0x1000, 5, 0)
	f.Apply(&trace.Event{Op: trace.OpFork, Thread: 0, Ret: 1})
	if f.Proc(1).Maps.Len() != 1 {
		t.Fatalf("the child has %d mappings, want its parent's 1", f.Proc(1).Maps.Len())
	}
	f.Proc(1).Maps.Unmap(0x1000, 0x1000)
	if f.Proc(0).Maps.Len() != 1 {
		t.Errorf("the child's munmap changed its parent's mappings")
	}
	f.Apply(&trace.Event{Op: trace.OpExec, Thread: 0, Path: 2})
	if f.Proc(0).Maps.Len() != 0 {
		t.Errorf("mappings survive exec")
	}
}

// TestMapsWholePages: the kernel maps and unmaps whole pages. A file of
// 307313 bytes mapped, then unmapped with the same length, leaves
// nothing behind: a later munmap of memory the allocator mapped right
// there (git gc: the free of a large buffer) is no call on the file.
func TestMapsWholePages(t *testing.T) {
	ps := pageSize
	var ms Maps
	ms.Map(0x100000, 75*ps+113, 7, 0)
	if got := ms.Pieces(0x100000+75*ps+113, 10); len(got) != 1 {
		t.Errorf("the mapping's last page, past the file's end: %v, want it mapped", got)
	}
	got := ms.Unmap(0x100000, 75*ps+113)
	if len(got) != 1 || got[0].Len != 76*ps {
		t.Errorf("unmap %v, want the mapping's 76 pages", got)
	}
	if ms.Len() != 0 {
		t.Fatalf("left after the munmap of its length: %v", ms.m)
	}
	if got := ms.Pieces(0x100000+75*ps, 2*ps); got != nil {
		t.Errorf("a later munmap of the same address: %v, want nothing", got)
	}
	// A length within a page away from the top of the address space
	// rounds up without wrapping.
	ms.Map(^uint64(0)-2*ps+1, ps, 3, 0)
	if got := ms.Unmap(^uint64(0)-2*ps+1, ^uint64(0)); len(got) != 1 || ms.Len() != 0 {
		t.Errorf("unmap to the top: %v, left %v", got, ms.m)
	}
}
