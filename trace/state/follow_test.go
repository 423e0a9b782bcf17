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
