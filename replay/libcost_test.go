package replay_test

import (
	"testing"
	"time"

	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/trace"
)

// mpiioOpenTrace is one rank that opens an MPI file in 200 ms, of which
// the open(2) the MPI library made inside took 0.1 ms, writes 4 KiB and
// closes it; with inner false, the trace has no POSIX calls inside the
// MPI-IO calls (a capture that did not see them).
func mpiioOpenTrace(inner bool) *trace.MemTrace {
	m := trace.NewMemTrace()
	f := m.Paths.Intern("/scratch/out.dat")
	m.Add(trace.Event{Op: trace.OpMPIFileOpen, FD: 1, Path: f, Comm: trace.CommWorld, Flags: trace.MPIModeCreate, Start: 0, Dur: 200 * ms})
	if inner {
		m.Add(trace.Event{Op: trace.OpOpen, FD: 5, Ret: 5, Path: f, Flags: trace.InMPIIO | trace.OCreat, Start: 150 * ms, Dur: ms / 10})
	}
	m.Add(trace.Event{Op: trace.OpMPIFileWriteAt, FD: 1, Size: 4096, Ret: 4096, Start: 201 * ms, Dur: ms / 10})
	if inner {
		m.Add(trace.Event{Op: trace.OpPwrite, FD: 5, Size: 4096, Ret: 4096, Flags: trace.InMPIIO, Start: 201 * ms, Dur: ms / 10})
	}
	m.Add(trace.Event{Op: trace.OpMPIFileClose, FD: 1, Start: 202 * ms, Dur: ms / 100})
	return m
}

// nativeBackend is a fakeBackend that says it replays MPI-IO through an
// MPI library (as the mpiio backend does).
type nativeBackend struct{ fakeBackend }

func (*nativeBackend) NativeMPIIO() bool { return true }

// TestMPIIOLibraryCostKept: under think (and original) timing, a backend
// without an MPI library keeps at an MPI-IO call what the library cost in
// the capture beyond its inner POSIX calls (200 ms − 0.1 ms for the open),
// inside the call; as fast as possible, with a native MPI-IO backend, or
// for a trace that does not show the inner calls, it does not.
func TestMPIIOLibraryCostKept(t *testing.T) {
	const want = 200*ms - ms/10
	for _, timing := range []replay.Timing{replay.Think, replay.Original} {
		res, s := run(t, mpiioOpenTrace(true), replay.Options{Timing: timing}, &fakeBackend{})
		rr := res.PerRank[0]
		// The open (199.9 ms) and the close (10 µs, nothing inside); the
		// write's pwrite took all its time.
		if rr.LibCalls != 2 || rr.LibTime != want+ms/100 {
			t.Errorf("%s: kept %d calls, %d ns; want 2, %d", timing, rr.LibCalls, rr.LibTime, want+ms/100)
		}
		if rr.Elapsed < want {
			t.Errorf("%s: rank time %v, want at least %v", timing, time.Duration(rr.Elapsed), time.Duration(want))
		}
		evs := s.rank(0)
		if evs[0].Op != trace.OpMPIFileOpen || evs[0].Dur < want {
			t.Errorf("%s: the replay's MPI_File_open took %v, want at least %v", timing, time.Duration(evs[0].Dur), time.Duration(want))
		}
		if rr.IOTime < want || rr.CapturedIOTime != 200*ms+ms/10+ms/100 {
			t.Errorf("%s: I/O time %d replayed, %d captured; want ≥ %d, %d", timing, rr.IOTime, rr.CapturedIOTime, want, 200*ms+ms/10+ms/100)
		}
		for _, sk := range rr.Skips {
			if sk.Reason != trace.SkipReasonInMPIIO {
				t.Errorf("%s: skipped %+v", timing, sk)
			}
		}
	}
	for _, c := range []struct {
		name    string
		timing  replay.Timing
		inner   bool
		backend replay.Backend
	}{
		{"afap", replay.AFAP, true, &fakeBackend{}},
		{"native MPI-IO backend", replay.Think, true, &nativeBackend{}},
		{"no inner calls", replay.Think, false, &fakeBackend{}},
	} {
		res, _ := run(t, mpiioOpenTrace(c.inner), replay.Options{Timing: c.timing}, c.backend)
		rr := res.PerRank[0]
		if rr.LibCalls != 0 || rr.LibTime != 0 {
			t.Errorf("%s: kept %d calls, %d ns of library cost; want none", c.name, rr.LibCalls, rr.LibTime)
		}
		// Think keeps the 1 ms gap before the write, nothing more; a
		// loaded machine may add some, never 100 ms of a 200 ms open.
		if rr.Elapsed >= 100*ms {
			t.Errorf("%s: rank time %v, want well under the open's 200 ms", c.name, time.Duration(rr.Elapsed))
		}
	}
}

// TestMPIIOLibraryCostCollective: at a collective MPI-IO call, a rank
// that came early waited inside it for the others in the capture; that
// wait is not the library's (the replay's ranks wait for each other at
// the call by themselves), so every rank keeps the least cost any rank
// had: the last to come waited least.
func TestMPIIOLibraryCostCollective(t *testing.T) {
	m := trace.NewMemTrace()
	f := m.Paths.Intern("/scratch/shared.dat")
	for r, dur := range []int64{30 * ms, 5 * ms} {
		rk := uint32(r)
		m.Add(
			trace.Event{Rank: rk, Op: trace.OpMPIFileOpen, FD: 1, Path: f, Comm: trace.CommWorld, Flags: trace.MPIModeCreate, Start: 0, Dur: 2 * ms},
			trace.Event{Rank: rk, Op: trace.OpOpen, FD: 5, Ret: 5, Path: f, Flags: trace.InMPIIO | trace.OCreat, Start: ms, Dur: ms / 2},
			// Rank 0 came 25 ms before rank 1: it waited that long inside.
			trace.Event{Rank: rk, Op: trace.OpMPIFileWriteAtAll, FD: 1, Offset: int64(r) * 4096, Size: 4096, Ret: 4096, Start: 35*ms - dur, Dur: dur},
			trace.Event{Rank: rk, Op: trace.OpPwrite, FD: 5, Offset: int64(r) * 4096, Size: 4096, Ret: 4096, Flags: trace.InMPIIO, Start: 33 * ms, Dur: ms},
		)
	}
	res, _ := run(t, m, replay.Options{Timing: replay.Think}, &fakeBackend{})
	for _, rr := range res.PerRank {
		// Open: 2 − 0.5 ms on both; write: rank 1's 5 − 1 ms on both.
		if want := int64(1500_000 + 4*ms); rr.LibCalls != 2 || rr.LibTime != want {
			t.Errorf("rank %d kept %d calls, %v; want 2, %v", rr.Rank, rr.LibCalls, time.Duration(rr.LibTime), time.Duration(want))
		}
	}
}
