package state

import (
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// TestCoversLeavesFile: where covers says a write leaves its file as it
// is (and it is not an append), dataNS does leave the file as it was, for
// files written and not, by appends only or not, and writes inside,
// across and past what was written, failed, empty, and reads; and covers
// says so for some of them.
func TestCoversLeavesFile(t *testing.T) {
	files := []File{
		{},
		{Changed: true, otherWrites: true, Size: 100, written: 100, grown: 100},
		{Changed: true, otherWrites: false, Size: 100, written: 100, grown: 100, appendEnd: 100, appendBytes: 100},
		{Changed: true, otherWrites: true, Size: 100, written: 50, grown: 100},
		{Changed: true, otherWrites: true, Size: 100, written: 100, grown: 60},
		{Changed: true, otherWrites: true, Size: 40, written: 100, grown: 100, Exact: true},
		{Changed: false, otherWrites: true, Size: 100, written: 100, grown: 100},
	}
	evs := []trace.Event{
		{Op: trace.OpPwrite, Offset: 0, Size: 10, Ret: 10},
		{Op: trace.OpPwrite, Offset: 90, Size: 10, Ret: 10},
		{Op: trace.OpPwrite, Offset: 95, Size: 10, Ret: 10},
		{Op: trace.OpPwrite, Offset: 200, Size: 10, Ret: 10},
		{Op: trace.OpPwrite, Offset: 0, Size: 10, Ret: 0},
		{Op: trace.OpPwrite, Offset: 0, Size: 10, Ret: -5},
		{Op: trace.OpWrite, Offset: 10, Size: 10, Ret: 10},
		{Op: trace.OpWrite, Offset: 95, Size: 10, Ret: 10},
		{Op: trace.OpPread, Offset: 0, Size: 10, Ret: 10},
		{Op: trace.OpRead, Offset: 90, Size: 20, Ret: 10},
	}
	covered := 0
	for fi, f := range files {
		for _, e := range evs {
			for _, appending := range []bool{false, true} {
				info := e.Op.Info()
				if !f.covers(&e, &info) || info.Addr == trace.AddrIndividual && appending {
					continue
				}
				covered++
				g := f
				dataNS(&Node{File: &g}, &e, &info, appending)
				if g != f {
					t.Errorf("file %d, %s at %d returning %d (appending %v): covered, but dataNS made %+v of %+v", fi, e.Op, e.Offset, e.Ret, appending, g, f)
				}
			}
		}
	}
	if covered < 4 {
		t.Errorf("covers held for %d writes, want the writes inside what was written", covered)
	}
}
