package state

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// TestFollowIsApply: Follow, with its fast paths (Data's reads and
// writes, seek's lseeks), leaves the descriptors and the namespace as
// Apply does, over random calls of two threads on a few descriptors and
// files: opens, dups, closes, reads, writes and lseeks from every
// whence that succeed or fail.
func TestFollowIsApply(t *testing.T) {
	ops := []trace.Op{trace.OpOpen, trace.OpClose, trace.OpDup2, trace.OpRead, trace.OpWrite, trace.OpPread,
		trace.OpPwrite, trace.OpLseek, trace.OpLseek, trace.OpLseek, trace.OpFtruncate, trace.OpFstat}
	seeks := 0
	for round := range 200 {
		rng := rand.New(rand.NewPCG(uint64(round), 7))
		paths := trace.NewPaths()
		for _, n := range []string{"/w/a", "/w/b", "/w/c"} {
			paths.Intern(n)
		}
		nsA, nsB := NewNamespace(paths.Lookup), NewNamespace(paths.Lookup)
		a, b := New[struct{}, struct{}](nsA), New[struct{}, struct{}](nsB)
		for i := range 400 {
			e := trace.Event{Op: ops[rng.IntN(len(ops))], Thread: uint32(rng.IntN(4) / 3), FD: int32(rng.IntN(6)),
				Path: trace.PathID(1 + rng.IntN(3)), Offset: int64(rng.IntN(10000)), Size: int64(rng.IntN(5000))}
			e.Ret = e.Size
			switch e.Op {
			case trace.OpOpen:
				e.Ret, e.Flags = int64(e.FD), uint32(rng.IntN(3))|uint32(rng.IntN(2))*trace.OAppend
			case trace.OpDup2:
				e.Ret = int64(rng.IntN(6))
			case trace.OpLseek:
				e.Whence = int32(rng.IntN(3))
				e.Ret = int64(rng.IntN(20000))
				seeks++
			case trace.OpRead, trace.OpPread:
				e.Ret = int64(rng.IntN(int(e.Size) + 1)) // short at the end of the file
			}
			if rng.IntN(8) == 0 {
				e.Ret = -int64(1 + rng.IntN(20)) // EBADF among them
			}
			a.Follow(&e)
			b.Apply(&e)
			for th := range uint32(2) {
				for fd := int32(-1); fd < 7; fd++ {
					da, db := a.Lookup(th, fd), b.Lookup(th, fd)
					if (da == nil) != (db == nil) || da != nil && (da.Pos != db.Pos || da.Path != db.Path || da.Flags != db.Flags || da.Learnt != db.Learnt) {
						t.Fatalf("round %d, event %d %+v: thread %d descriptor %d is %+v, want %+v", round, i, e, th, fd, da, db)
					}
				}
			}
		}
		if ba, bb := nsA.Before(), nsB.Before(); !reflect.DeepEqual(ba, bb) {
			t.Fatalf("round %d: the namespace before is %+v, want %+v", round, ba, bb)
		}
		if ea, eb := nsA.End(), nsB.End(); !reflect.DeepEqual(ea, eb) {
			t.Fatalf("round %d: the namespace at the end is %+v, want %+v", round, ea, eb)
		}
	}
	if seeks == 0 {
		t.Fatal("no lseek")
	}
}

// TestRepeats: a loop that skips Data where Repeats says it may (as the
// POSIX executor's runs do) leaves the descriptors as one that calls Data
// (or Apply) for every event, and the description it keeps is the one
// Data would return; with a namespace, nothing repeats.
func TestRepeats(t *testing.T) {
	ops := []trace.Op{trace.OpOpen, trace.OpClose, trace.OpDup2, trace.OpRead, trace.OpWrite, trace.OpPread,
		trace.OpPwrite, trace.OpPwrite, trace.OpPwrite, trace.OpPread, trace.OpLseek}
	if New[struct{}, struct{}](NewNamespace(trace.NewPaths().Lookup)).Repeats(trace.OpPwrite) {
		t.Fatal("a follower with a namespace repeats")
	}
	skipped := 0
	for round := range 100 {
		rng := rand.New(rand.NewPCG(uint64(round), 9))
		a, b := New[struct{}, struct{}](nil), New[struct{}, struct{}](nil)
		var prev *trace.Event
		var d *Desc[struct{}]
		evs := make([]trace.Event, 400)
		for i := range evs {
			e := &evs[i]
			*e = trace.Event{Op: ops[rng.IntN(len(ops))], Thread: uint32(rng.IntN(8) / 7), FD: int32(rng.IntN(3)),
				Path: 1, Offset: int64(rng.IntN(10000)), Size: int64(rng.IntN(5000))}
			if i > 0 && rng.IntN(3) > 0 { // runs of one op on one descriptor
				e.Op, e.FD, e.Thread = evs[i-1].Op, evs[i-1].FD, evs[i-1].Thread
			}
			e.Ret = e.Size
			switch e.Op {
			case trace.OpOpen:
				e.Ret = int64(e.FD)
			case trace.OpDup2:
				e.Ret = int64(rng.IntN(3))
			case trace.OpLseek:
				e.Ret = int64(rng.IntN(20000))
			}
			if rng.IntN(8) == 0 {
				e.Ret = -9
			}
			db := b.Data(e)
			if db == nil {
				b.Apply(e)
			}
			if prev != nil && e.Op == prev.Op && e.FD == prev.FD && e.Thread == prev.Thread {
				skipped++
				if db == nil || a.Lookup(e.Thread, e.FD) != d {
					t.Fatalf("round %d, event %d %+v: skipped where Data would not return the description", round, i, *e)
				}
			} else if d, prev = a.Data(e), nil; d == nil {
				a.Apply(e)
			} else if a.Repeats(e.Op) {
				prev = e
			}
			for th := range uint32(2) {
				for fd := int32(0); fd < 3; fd++ {
					da, db := a.Lookup(th, fd), b.Lookup(th, fd)
					if (da == nil) != (db == nil) || da != nil && (da.Pos != db.Pos || da.Path != db.Path || da.Flags != db.Flags) {
						t.Fatalf("round %d, event %d %+v: thread %d descriptor %d is %+v, want %+v", round, i, *e, th, fd, da, db)
					}
				}
			}
		}
	}
	if skipped < 1000 {
		t.Fatalf("only %d calls skipped", skipped)
	}
}

// TestAgain: with a namespace, a loop that skips Data where Again says it
// may leaves the descriptors and the namespace as one that calls Data (or
// Apply) for every event.
func TestAgain(t *testing.T) {
	ops := []trace.Op{trace.OpOpen, trace.OpClose, trace.OpRead, trace.OpWrite, trace.OpPread,
		trace.OpPwrite, trace.OpPwrite, trace.OpPwrite, trace.OpPread, trace.OpFtruncate, trace.OpUnlink}
	skipped := 0
	for round := range 100 {
		rng := rand.New(rand.NewPCG(uint64(round), 13))
		paths := trace.NewPaths()
		for _, n := range []string{"/w/a", "/w/b"} {
			paths.Intern(n)
		}
		nsA, nsB := NewNamespace(paths.Lookup), NewNamespace(paths.Lookup)
		a, b := New[struct{}, struct{}](nsA), New[struct{}, struct{}](nsB)
		var prev *trace.Event
		var d *Desc[struct{}]
		evs := make([]trace.Event, 400)
		for i := range evs {
			e := &evs[i]
			*e = trace.Event{Op: ops[rng.IntN(len(ops))], Thread: uint32(rng.IntN(8) / 7), FD: int32(rng.IntN(2)),
				Path: trace.PathID(1 + rng.IntN(2)), Offset: int64(rng.IntN(8)) * 4096, Size: 4096}
			if i > 0 && rng.IntN(4) > 0 {
				e.Op, e.FD, e.Thread = evs[i-1].Op, evs[i-1].FD, evs[i-1].Thread
			}
			e.Ret = e.Size
			switch e.Op {
			case trace.OpOpen:
				e.Ret, e.Flags = int64(e.FD), trace.ORdwr|trace.OCreat
			case trace.OpFtruncate, trace.OpUnlink:
				e.Ret, e.Size = 0, int64(rng.IntN(4))*4096
			}
			if rng.IntN(10) == 0 {
				e.Ret = -9
			}
			db := b.Data(e)
			if db == nil {
				b.Apply(e)
			}
			if prev != nil && e.Op == prev.Op && e.FD == prev.FD && e.Thread == prev.Thread && a.Again(e, d) {
				skipped++
				prev = e
			} else if d, prev = a.Data(e), e; d == nil {
				a.Apply(e)
				prev = nil
			}
			if ea, eb := nsA.End(), nsB.End(); !reflect.DeepEqual(ea, eb) {
				t.Fatalf("round %d, event %d %+v: the namespace is %+v, want %+v", round, i, *e, ea, eb)
			}
		}
		if ba, bb := nsA.Before(), nsB.Before(); !reflect.DeepEqual(ba, bb) {
			t.Fatalf("round %d: the namespace before is %+v, want %+v", round, ba, bb)
		}
	}
	if skipped < 1000 {
		t.Fatalf("only %d calls skipped", skipped)
	}
}
