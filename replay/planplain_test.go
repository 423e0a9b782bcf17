package replay

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/iotrace/iotrace/samples"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
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
		traces[fmt.Sprintf("runs %d", seed)] = runsTrace(seed)
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

// runsTrace is a random trace of one rank (read a batch at a time, as
// makePlan reads a lone rank) of long runs of reads and writes of one op,
// descriptor and thread, as the short way meets them: writes inside,
// across and past what the run wrote before, empty and failed calls,
// calls that name their path, another path, a path seen nowhere else or
// none, calls with a second path, calls inside MPI-IO calls, MPI-IO calls
// (whose library cost the plan numbers by event), times that go back
// before every earlier call, durations below zero.
func runsTrace(seed uint64) *trace.MemTrace {
	rng := rand.New(rand.NewPCG(seed, 13))
	m := trace.NewMemTrace()
	a, b := m.Paths.Intern("/w/a"), m.Paths.Intern("/w/b")
	// Paths each named by one call only, on a data call or as its second
	// path (seen nowhere else, so the plan must see that one call).
	var once []trace.PathID
	for k := range 12 {
		once = append(once, m.Paths.Intern(fmt.Sprintf("/w/once-%d", k)))
	}
	// Thread 1 is a process of its own (a fork), whose descriptor 3 is a
	// file only its calls write, each a call amid a run of thread 0's.
	other := m.Paths.Intern("/w/other")
	m.Add(trace.Event{Op: trace.OpOpen, Path: a, FD: 3, Ret: 3, Flags: trace.ORdwr | trace.OCreat, Start: 1},
		trace.Event{Op: trace.OpOpen, Path: b, FD: 4, Ret: 4, Flags: trace.ORdwr, Start: 2},
		trace.Event{Op: trace.OpOpen, Path: a, FD: 5, Ret: 5, Flags: trace.OWronly | trace.OAppend, Start: 3},
		trace.Event{Op: trace.OpFork, Ret: 1, Start: 4},
		trace.Event{Op: trace.OpClose, Thread: 1, FD: 3, Start: 5},
		trace.Event{Op: trace.OpOpen, Thread: 1, Path: other, FD: 3, Ret: 3, Flags: trace.ORdwr | trace.OCreat, Start: 6})
	ops := []trace.Op{trace.OpPwrite, trace.OpPwrite, trace.OpPread, trace.OpWrite, trace.OpRead}
	op, fd := trace.OpPwrite, int32(3)
	var t, hi int64 = 10, 256 << 10
	for i := range 3000 {
		if rng.IntN(20) == 0 {
			op, fd = ops[rng.IntN(len(ops))], int32(3+rng.IntN(3))
		}
		t += int64(rng.IntN(100)) - 5
		if rng.IntN(500) == 0 {
			t = -int64(1 + rng.IntN(1000)) // before every call so far
		}
		if i%400 == 399 {
			// An MPI-IO write and the POSIX write inside it.
			m.Add(trace.Event{Op: trace.OpMPIFileWriteAt, FD: 9, Start: t, Dur: 50, Size: 100, Ret: 100},
				trace.Event{Op: trace.OpPwrite, FD: fd, Start: t + 5, Dur: 20, Size: 100, Ret: 100, Flags: trace.InMPIIO})
			t += 60
		}
		e := trace.Event{Op: op, FD: fd, Start: t, Dur: int64(rng.IntN(60)) - 3, Size: int64(1 + rng.IntN(4096))}
		e.Offset = int64(rng.IntN(int(hi)))
		if rng.IntN(30) == 0 {
			e.Offset = hi + int64(rng.IntN(8192)) // past what was written
		}
		e.Ret = e.Size
		switch rng.IntN(40) {
		case 0:
			e.Ret = -5
		case 1:
			e.Ret = 0
		case 2:
			e.Flags = trace.InMPIIO
		case 3:
			e.Path = a
		case 4:
			e.Path = b
		}
		if i%250 == 100 {
			if k := i / 250; k%2 == 0 {
				e.Path = once[k]
			} else {
				e.Path2 = once[k]
			}
		}
		if fd == 4 {
			e.Offset %= 60 << 10 // b's runs stay in its first 60 KiB
		}
		switch rng.IntN(50) {
		case 0:
			e.Thread = 1 // a call of the other process amid the run
		case 1:
			if fd != 4 {
				// A call on b amid the run, past what b's runs wrote.
				e.FD, e.Offset = 4, 64<<10+int64(rng.IntN(8192))
			}
		}
		if (op == trace.OpPwrite || op == trace.OpWrite) && e.Ret > 0 && e.Thread == 0 && e.FD != 4 {
			hi = max(hi, e.Offset+e.Ret)
		}
		m.Add(e)
	}
	return m
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

// TestPlanLoneAgrees plans traces of one rank reading the rank's source
// straight (loneReader) and through a Merger: the plans are the same, and
// so are the errors of a damaged trace file and, with salvage, what is
// read past the damage and the warnings about it.
func TestPlanLoneAgrees(t *testing.T) {
	traces := map[string]func() (trace.Trace, error){
		"ior":    func() (trace.Trace, error) { return tracegen.IOR(1, 3000, 1), nil },
		"random": func() (trace.Trace, error) { return tracegen.Random(1, 3000, 3), nil },
	}
	for _, name := range []string{"isaila-synthetic", "parabench-listing2", "olap-index"} {
		traces[name] = func() (trace.Trace, error) { return samples.Open(name, 1, nil, nil) }
	}
	for seed := range uint64(5) {
		m := mixedTrace(seed)
		one := trace.NewMemTrace()
		one.Paths = m.Paths
		one.Add(m.Events[0]...)
		traces[fmt.Sprintf("mixed %d", seed)] = func() (trace.Trace, error) { return one, nil }
	}
	// A file of small blocks, whole and with a damaged block in the middle.
	dir := t.TempDir()
	whole := filepath.Join(dir, "whole.iot")
	w, err := format.CreateOptions(whole, trace.Meta{}, format.Options{BlockEvents: 100})
	if err != nil {
		t.Fatal(err)
	}
	src := mixedTrace(7)
	evs := src.Events[0]
	for i := range evs {
		if evs[i].Path != 0 {
			evs[i].Path = w.Intern(src.Paths.Lookup(evs[i].Path))
		}
	}
	if err := w.Rank(0).WriteEvents(evs); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(whole)
	if err != nil {
		t.Fatal(err)
	}
	damaged := filepath.Join(dir, "damaged.iot")
	bad := bytes.Clone(data)
	for i := len(bad) * 2 / 5; i < len(bad)*2/5+8; i++ {
		bad[i] ^= 0x5a
	}
	if err := os.WriteFile(damaged, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name    string
		salvage bool
	}{{whole, false}, {damaged, false}, {damaged, true}} {
		traces[fmt.Sprintf("%s salvage %v", filepath.Base(f.name), f.salvage)] = func() (trace.Trace, error) {
			return format.OpenOptions(format.ReadOptions{Salvage: f.salvage}, f.name)
		}
	}
	failed := 0
	for name, open := range traces {
		type result struct {
			plan     *Plan
			err      string
			warnings []string
		}
		var got [2]result
		for i, lone := range []bool{true, false} {
			tr, err := open()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			planLone = lone
			p, err := makePlan(tr, nil, nil, false)
			planLone = true
			got[i].plan = p
			if err != nil {
				got[i].err = err.Error()
			}
			if r, ok := tr.(*format.Reader); ok {
				got[i].warnings = r.Warnings()
				r.Close()
			}
		}
		if got[0].err != "" {
			failed++
			t.Logf("%s: %s", name, got[0].err)
		}
		if !reflect.DeepEqual(got[0], got[1]) {
			t.Errorf("%s: read straight, the plan is\n%+v\nthrough a Merger\n%+v", name, got[0], got[1])
		}
	}
	if failed != 1 {
		t.Errorf("%d traces failed to plan, want 1 (the damaged file without salvage)", failed)
	}
}
