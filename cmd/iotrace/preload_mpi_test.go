package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/iotrace/iotrace/capture/preload"
	"github.com/iotrace/iotrace/internal/mpitest"
	"github.com/iotrace/iotrace/report"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
)

// tally is what one rank did with one op: calls and bytes (data calls:
// bytes moved; communication: the event's byte count).
type tally struct{ n, bytes int64 }

// tallies reads a trace and tallies each rank's calls by op, leaving out
// the POSIX calls made inside MPI-IO calls (how many an MPI library
// makes is its business) and the process events (not calls: a rank's
// process ends with an exit event); it returns the events too, all of
// them.
func tallies(t *testing.T, path string) (map[uint32]map[trace.Op]tally, []trace.Event) {
	t.Helper()
	r, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	evs, err := trace.ReadAll(trace.All(r))
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint32]map[trace.Op]tally{}
	for _, e := range evs {
		if e.Flags&trace.InMPIIO != 0 && e.Op.Class() != trace.ClassComm || e.Op.Class() == trace.ClassProcess {
			continue
		}
		if out[e.Rank] == nil {
			out[e.Rank] = map[trace.Op]tally{}
		}
		tl := out[e.Rank][e.Op]
		tl.n++
		switch {
		case e.Op.Class() == trace.ClassComm:
			tl.bytes += e.Bytes
		case e.Op.Dir() != trace.DirNone:
			tl.bytes += max(e.Ret, 0)
		}
		out[e.Rank][e.Op] = tl
	}
	return out, evs
}

// mpiProgram is a test program and what each of its 4 ranks must have
// done, op by op.
type mpiProgram struct {
	name string
	want func(rank int) map[trace.Op]tally
}

var mpiPrograms = []mpiProgram{
	{"twophase", func(r int) map[trace.Op]tally {
		m := map[trace.Op]tally{
			trace.OpMPIAlltoall: {3, 3 * 16}, trace.OpMPIAlltoallv: {3, 3 * 32768},
			trace.OpMPIFileOpen: {1, 0}, trace.OpMPIFileWriteAt: {3, 3 * 32768}, trace.OpMPIFileClose: {1, 0},
		}
		if r == 0 {
			m[trace.OpMPIFileWriteAt] = tally{4, 3*32768 + 24}
			// Three fwrites of 16 bytes: one write(2) of 48 at fclose; the
			// stream's first write fstats the file for its buffer's size.
			m[trace.OpFopen], m[trace.OpWrite], m[trace.OpFclose] = tally{1, 0}, tally{1, 48}, tally{1, 0}
			m[trace.OpFstat] = tally{1, 0}
		}
		return m
	}},
	{"strided", func(r int) map[trace.Op]tally {
		return map[trace.Op]tally{
			trace.OpMPIFileOpen: {1, 0}, trace.OpMPIFileSetView: {2, 0}, trace.OpMPIFileWriteAll: {8, 8 * 4096},
			trace.OpMPIFileSync: {1, 0}, trace.OpMPIBarrier: {1, 0}, trace.OpMPIFileReadAtAll: {8, 8 * 4096},
			trace.OpMPIFileReadAll: {1, 8192}, trace.OpMPIFileClose: {1, 0},
		}
	}},
	{"ring", func(r int) map[trace.Op]tally {
		m := map[trace.Op]tally{
			trace.OpMPISend: {5, 15000}, trace.OpMPIRecv: {5, 15000},
			trace.OpMPIIsend: {1, 8192}, trace.OpMPIIrecv: {1, 8192}, trace.OpMPIWaitall: {1, 0},
			trace.OpMPIBarrier: {1, 0}, trace.OpMPICommSplit: {1, 0}, trace.OpMPISendrecv: {4, 380},
		}
		if r == 3 {
			m[trace.OpMPISendrecv] = tally{4, 330} // sends to MPI_PROC_NULL in the non-periodic shift
		}
		if r == 0 {
			m[trace.OpMPIRecv] = tally{8, 15000 + 3*64}
		} else {
			m[trace.OpMPISend] = tally{6, 15000 + 64}
		}
		return m
	}},
	{"colls", func(r int) map[trace.Op]tally {
		v := int64(128+r) * 8
		return map[trace.Op]tally{
			trace.OpMPIBarrier: {2, 0}, trace.OpMPIBcast: {2, 4096}, trace.OpMPIReduce: {1, 2048},
			trace.OpMPIAllreduce: {2, 4096}, trace.OpMPIGather: {1, 2048}, trace.OpMPIGatherv: {1, v},
			trace.OpMPIScatter: {1, 2048}, trace.OpMPIScatterv: {1, v}, trace.OpMPIAllgather: {1, 2048},
			trace.OpMPIAllgatherv: {1, v}, trace.OpMPIAlltoall: {1, 2048}, trace.OpMPIAlltoallv: {1, 4 * v},
			trace.OpMPICommSplit: {1, 0},
		}
	}},
	{"fortran", func(r int) map[trace.Op]tally {
		return map[trace.Op]tally{
			trace.OpMPIBcast: {1, 64}, trace.OpMPIFileOpen: {1, 0}, trace.OpMPIFileWriteAtAll: {1, 64},
			trace.OpMPIFileClose: {1, 0}, trace.OpMPIBarrier: {1, 0},
		}
	}},
}

// buildMPIPrograms compiles the test programs of testdata/mpi into dir.
func buildMPIPrograms(t *testing.T, dir string) {
	t.Helper()
	src, _ := filepath.Abs(filepath.Join("testdata", "mpi"))
	for _, p := range mpiPrograms {
		if p.name == "fortran" {
			if _, err := exec.LookPath("mpif90"); err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatal("mpif90 is required under CI (libopenmpi-dev brings gfortran)")
				}
				continue
			}
			out := filepath.Join(dir, p.name)
			if b, err := exec.Command("mpif90", "-O2", "-o", out, filepath.Join(src, "fortran.f90")).CombinedOutput(); err != nil {
				t.Fatalf("mpif90: %v\n%s", err, b)
			}
			continue
		}
		mpitest.CC(t, dir, p.name, filepath.Join(src, p.name+".c"))
	}
}

// TestPreloadRecordsMPIPrograms runs the C (and Fortran) MPI programs of
// testdata/mpi under mpirun with 4 processes and iotrace record --preload,
// checks that each rank's trace holds exactly the calls it made (counts
// and bytes per op, peers, roots, communicators), then replays each trace
// under mpirun with both backends (POSIX with two ranks per process,
// MPI-IO with one) and checks that the replay's trace has the same counts
// and bytes.
func TestPreloadRecordsMPIPrograms(t *testing.T) {
	mpitest.Need(t)
	dir := t.TempDir()
	buildMPIPrograms(t, dir)
	replayBin := mpitest.BuildGo(t, "./cmd/ioreplay", false)
	env := []string{"IOTRACE_CACHE=" + shimCache(t)}
	for _, p := range mpiPrograms {
		if _, err := os.Stat(filepath.Join(dir, p.name)); err != nil {
			t.Logf("%s: not built (no mpif90)", p.name)
			continue
		}
		t.Run(p.name, func(t *testing.T) {
			out := filepath.Join(dir, p.name+".iot")
			mpitest.MustRun(t, dir, 2*time.Minute, 4, env, iotraceBin, "record", "--preload", "-o", out, "--", "./"+p.name)
			got, evs := tallies(t, out)
			for r := 0; r < 4; r++ {
				want := p.want(r)
				for op, w := range want {
					if g := got[uint32(r)][op]; g != w {
						t.Errorf("rank %d: %s: %d calls, %d bytes; want %d, %d", r, op, g.n, g.bytes, w.n, w.bytes)
					}
				}
				for op, g := range got[uint32(r)] {
					if _, ok := want[op]; !ok {
						t.Errorf("rank %d: %d unexpected %s calls", r, g.n, op)
					}
				}
			}
			checkMPIDetails(t, p.name, evs)
			// POSIX over 2 processes (two ranks in each), MPI-IO over 4.
			for np, be := range map[int]string{2: "posix", 4: "mpiio"} {
				rec := filepath.Join(dir, p.name+"-"+be+".iot")
				mpitest.MustRun(t, dir, 2*time.Minute, np, nil, replayBin, "--mpi", "--backend", be, "--timing", "afap",
					"--target", filepath.Join(dir, "replay-"+p.name+"-"+be), "--record", rec, "--quiet", out)
				a, b := statsOf(t, out), statsOf(t, rec)
				c := report.Compare(a, b)
				// A replay's own trace has no process events.
				if m := slices.DeleteFunc(c.Mismatches(), func(name string) bool {
					op, ok := trace.ParseOp(name)
					return ok && op.Class() == trace.ClassProcess
				}); len(m) > 0 {
					t.Errorf("%s replay: counts differ in %v", be, m)
				}
				for _, row := range c.Rows {
					if !row.A.InMPIIO && (row.A.Bytes != row.B.Bytes || row.B.Errors != row.A.Errors) {
						t.Errorf("%s replay: %s: %d bytes → %d, %d errors → %d", be, row.Op, row.A.Bytes, row.B.Bytes, row.A.Errors, row.B.Errors)
					}
				}
			}
		})
	}
}

func statsOf(t *testing.T, path string) *report.Stats {
	t.Helper()
	r, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	st, err := report.Compute(r, report.Options{Detail: true})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// checkSendrecv checks both halves of the shifts of ring.c (4 ranks): the
// destination and the source, as world ranks, and both tags.
func checkSendrecv(t *testing.T, e trace.Event) {
	t.Helper()
	r := int32(e.Rank)
	next, prev := (r+1)%4, (r+3)%4
	type halves struct {
		peer, tag, src, rtag int32
		flags                uint32
		world                bool
	}
	var want halves
	switch e.Tag {
	case 11: // ring shift to the next rank
		want = halves{next, 11, prev, 11, trace.RecvHalf, true}
	case 12: // MPI_Sendrecv_replace to the previous rank, received with MPI_ANY_TAG
		want = halves{prev, 12, next, 12, trace.RecvHalf | trace.PostedAnyTag, true}
	case 13: // non-periodic
		want = halves{r + 1, 13, r - 1, 13, trace.RecvHalf, true}
		if r == 3 {
			want.peer = trace.ProcNull
		}
		if r == 0 {
			want.src = trace.ProcNull
		}
	case 14: // ring shift on the reversed communicator: its next is the world's previous
		want = halves{prev, 14, next, 14, trace.RecvHalf, false}
	default:
		t.Errorf("rank %d: a sendrecv with tag %d", r, e.Tag)
		return
	}
	src, rtag, ok := e.RecvFrom()
	got := halves{e.Peer, e.Tag, src, rtag, e.Flags, e.Comm == trace.CommWorld}
	if !ok || got != want {
		t.Errorf("rank %d: sendrecv recorded as %+v (receive half known: %v), want %+v", r, got, ok, want)
	}
}

// checkMPIDetails checks peers, roots, tags and communicators.
func checkMPIDetails(t *testing.T, name string, evs []trace.Event) {
	t.Helper()
	switch name {
	case "ring":
		for _, e := range evs {
			next, prev := int32((e.Rank+1)%4), int32((e.Rank+3)%4)
			switch {
			case e.Op == trace.OpMPISend && e.Tag < 5 && e.Peer != next:
				t.Errorf("rank %d sends to %d, want %d", e.Rank, e.Peer, next)
			case e.Op == trace.OpMPIRecv && e.Tag < 5 && (e.Peer != prev || e.Flags != 0):
				t.Errorf("rank %d receives from %d (flags %d), want %d", e.Rank, e.Peer, e.Flags, prev)
			case e.Op == trace.OpMPIRecv && e.Tag == 7:
				if e.Rank != 0 || e.Peer < 1 || e.Peer > 3 || e.Flags != preload.FlagAnySource|preload.FlagAnyTag {
					t.Errorf("rank %d: MPI_ANY_SOURCE receive recorded as from %d, flags %d", e.Rank, e.Peer, e.Flags)
				}
			case e.Op == trace.OpMPISendrecv:
				checkSendrecv(t, e)
			}
		}
	case "colls":
		halves := map[uint32][]uint32{}
		for _, e := range evs {
			switch {
			case e.Comm == trace.CommWorld && slices.Contains([]trace.Op{trace.OpMPIBcast, trace.OpMPIReduce, trace.OpMPIGather, trace.OpMPIScatter}, e.Op) && e.Peer != 1:
				t.Errorf("rank %d: %s rooted at %d, want 1", e.Rank, e.Op, e.Peer)
			case e.Comm != trace.CommWorld && e.Op != trace.OpMPICommSplit:
				halves[e.Comm] = append(halves[e.Comm], e.Rank)
				if e.Op == trace.OpMPIBcast && e.Peer != int32(e.Rank%2) {
					t.Errorf("rank %d: bcast on its half rooted at world rank %d, want %d", e.Rank, e.Peer, e.Rank%2)
				}
			}
		}
		if len(halves) != 2 {
			t.Errorf("communicators of the halves: %v, want 2", halves)
		}
		for c, rs := range halves {
			slices.Sort(rs)
			rs = slices.Compact(rs)
			if len(rs) != 2 || rs[0]%2 != rs[1]%2 {
				t.Errorf("communicator %d has ranks %v, want one parity", c, rs)
			}
		}
	case "strided":
		for _, e := range evs {
			if e.Op == trace.OpMPIFileSetView && e.Offset != int64(e.Rank)*4096 {
				t.Errorf("rank %d: view displacement %d", e.Rank, e.Offset)
			}
			if e.Op == trace.OpMPIFileSetView && (e.Size != 4096 || e.Stride != 4*4096) {
				t.Errorf("rank %d: view block %d stride %d, want 4096 and 16384", e.Rank, e.Size, e.Stride)
			}
			if e.Op == trace.OpMPIFileWriteAll && (e.Offset%4096 != 0 || e.Offset > 7*4096) {
				t.Errorf("rank %d: write_all at view offset %d", e.Rank, e.Offset)
			}
		}
	}
}
