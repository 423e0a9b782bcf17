package state

import (
	"math/rand/v2"
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

// TestRepeatIsAgain: after Data follows an event of an op that reads or
// writes at an explicit offset, Repeat's test says what Again says of the
// next events of that op on the description, over random calls on a few
// files with and without a namespace: writes inside, across and past
// what was written, empty and failed ones, reads, truncations, appends.
func TestRepeatIsAgain(t *testing.T) {
	ops := []trace.Op{trace.OpOpen, trace.OpClose, trace.OpPread, trace.OpPwrite, trace.OpPwrite, trace.OpWrite,
		trace.OpFtruncate, trace.OpFallocate, trace.OpRead}
	passed, failed := 0, 0
	for round := range 100 {
		rng := rand.New(rand.NewPCG(uint64(round), 9))
		paths := trace.NewPaths()
		for _, n := range []string{"/w/a", "/w/b"} {
			paths.Intern(n)
		}
		var ns *Namespace
		if round%4 != 0 {
			ns = NewNamespace(paths.Lookup)
		}
		f := New[struct{}, struct{}](ns)
		event := func(op trace.Op, fd int32) trace.Event {
			e := trace.Event{Op: op, FD: fd, Path: trace.PathID(1 + rng.IntN(2)), Offset: int64(rng.IntN(8192)), Size: int64(rng.IntN(4096))}
			e.Ret = e.Size
			switch rng.IntN(10) {
			case 0:
				e.Ret = -5
			case 1:
				e.Ret = 0
			}
			if op == trace.OpOpen {
				e.Ret, e.Flags = int64(fd), uint32(rng.IntN(3))|uint32(rng.IntN(3)/2)*trace.OAppend
			}
			if round%3 == 1 {
				// Files written by appends only: descriptor 3 appends,
				// and the calls at an offset on 4 fail.
				switch {
				case op == trace.OpOpen && fd == 3:
					e.Flags = trace.OWronly | trace.OAppend
				case op == trace.OpOpen:
					e.Flags = trace.ORdwr
				case fd == 4 && op != trace.OpClose:
					e.Ret = -5
				}
			}
			return e
		}
		for range 300 {
			e := event(ops[rng.IntN(len(ops))], int32(3+rng.IntN(2)))
			d := f.Data(&e)
			if d == nil {
				f.Apply(&e)
				continue
			}
			if info := e.Op.Info(); info.Addr != trace.AddrExplicit {
				continue
			}
			r := f.RepeatOf(e.Op, d)
			// Ends at and about each bound of the file's written extent.
			var ends []int64
			if n := d.Node; n != nil && n.File != nil {
				for _, b := range []int64{n.File.Size, n.File.written, n.File.grown} {
					ends = append(ends, b-1, b, b+1)
				}
			}
			for k := range 8 + len(ends) {
				x := event(e.Op, e.FD)
				x.Thread = e.Thread
				if x.Ret < 0 && rng.IntN(2) == 0 {
					x.Ret = x.Size // a call that succeeds where the others fail
				}
				if k < len(ends) && ends[k] > 0 && x.Ret > 0 {
					x.Offset = max(ends[k]-x.Ret, 0)
				}
				if got, want := r.Passes(&x), f.Again(&x, d); got != want {
					t.Fatalf("round %d: after %+v, Repeat says %v of %+v, Again %v", round, e, got, x, want)
				} else if want {
					passed++
				} else {
					failed++
				}
			}
		}
	}
	t.Logf("Again passed %d events and failed %d", passed, failed)
	if passed < 100 || failed < 100 {
		t.Errorf("Again passed %d events and failed %d: want many of both", passed, failed)
	}
}
