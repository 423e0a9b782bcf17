package replay

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/iotrace/iotrace/samples"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/tracegen"
)

// TestPlanPlainAgrees plans traces of every kind with makePlan's short
// way for plain POSIX calls and without it: the plans are the same.
// Among them random traces of a few ranks on a few files, with opens,
// dups, closes, calls on descriptors never opened, calls with and without
// their path, calls inside MPI-IO calls, markers and barriers.
func TestPlanPlainAgrees(t *testing.T) {
	traces := map[string]trace.Trace{
		"ior":      tracegen.IOR(4, 300, 1),
		"twophase": tracegen.TwoPhase(4, 2, 2, 3, 1<<20, 2),
		"random":   tracegen.Random(3, 300, 3),
	}
	for _, name := range []string{"astro3d-small", "btio-a", "isaila-synthetic"} {
		x, err := samples.Open(name, 4, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		traces[name] = x
	}
	for seed := range uint64(20) {
		traces[fmt.Sprintf("mixed %d", seed)] = mixedTrace(seed)
	}
	for name, tr := range traces {
		var plans [2]*Plan
		for i, plain := range []bool{true, false} {
			planPlain = plain
			p, err := makePlan(tr, nil, nil, false)
			planPlain = true
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			plans[i] = p
		}
		if !reflect.DeepEqual(plans[0], plans[1]) {
			t.Errorf("%s: the short way plans\n%+v\nthe long way\n%+v", name, plans[0], plans[1])
		}
	}
}

// mixedTrace is a random trace of three ranks on four files, and a
// fifth that only calls on descriptors name (a descriptor learnt).
func mixedTrace(seed uint64) *trace.MemTrace {
	rng := rand.New(rand.NewPCG(seed, 11))
	m := trace.NewMemTrace()
	var paths []trace.PathID
	for _, p := range []string{"/w/a", "/w/b", "/w/d/c", "/dev/null", "/w/seen-on-data-calls-only"} {
		paths = append(paths, m.Paths.Intern(p))
	}
	ops := []trace.Op{trace.OpOpen, trace.OpClose, trace.OpDup2, trace.OpRead, trace.OpWrite, trace.OpPread,
		trace.OpPwrite, trace.OpPwrite, trace.OpPwrite, trace.OpPread, trace.OpLseek, trace.OpFsync,
		trace.OpFtruncate, trace.OpUnlink, trace.OpMPIBarrier, trace.OpMPIFileWriteAt}
	for r := range uint32(3) {
		var t int64
		for range 400 {
			t += int64(rng.IntN(100))
			e := trace.Event{Rank: r, Op: ops[rng.IntN(len(ops))], Thread: uint32(rng.IntN(5) / 4), FD: int32(3 + rng.IntN(3)),
				Offset: int64(rng.IntN(1 << 20)), Size: int64(rng.IntN(1 << 16)), Start: t, Dur: int64(rng.IntN(50)) - 2}
			e.Ret = e.Size
			if rng.IntN(2) == 0 {
				e.Path = paths[rng.IntN(len(paths))]
			}
			switch e.Op {
			case trace.OpOpen:
				e.Path, e.Ret, e.Flags = paths[rng.IntN(4)], int64(e.FD), uint32(rng.IntN(3))|trace.OCreat
			case trace.OpUnlink:
				e.Path, e.Ret = paths[rng.IntN(4)], 0
			case trace.OpDup2:
				e.Ret = int64(3 + rng.IntN(3))
			case trace.OpMPIBarrier:
				e.Comm, e.Path = trace.CommWorld, 0
			}
			if rng.IntN(10) == 0 {
				e.Flags |= trace.InMPIIO
			}
			if rng.IntN(8) == 0 {
				e.Ret = -9
			}
			if e.Path == paths[4] && (!directOps[e.Op] || e.Flags&trace.InMPIIO != 0) {
				e.Path = paths[0] // the fifth only on calls on descriptors
			}
			m.Add(e)
		}
	}
	return m
}
