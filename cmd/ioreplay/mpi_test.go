package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/internal/mpitest"
	"github.com/iotrace/iotrace/report"
	"github.com/iotrace/iotrace/samples"
	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
)

// The tests of this file run ioreplay built with -tags mpi under mpirun
// (internal/mpitest); without MPI they skip, under CI they fail.

// mpiBin is ioreplay built with MPI.
func mpiBin(t *testing.T) string { return mpitest.BuildGo(t, "./cmd/ioreplay", false) }

// sameCallsAndBytes fails t unless b has a's calls, op by op, with the
// same bytes and no errors.
func sameCallsAndBytes(t *testing.T, what string, a, b *report.Stats) {
	t.Helper()
	c := report.Compare(a, b)
	if m := c.Mismatches(); len(m) > 0 {
		t.Errorf("%s: counts differ in %v", what, m)
	}
	for _, row := range c.Rows {
		if row.A.Bytes != row.B.Bytes || row.B.Errors != 0 {
			t.Errorf("%s: %s: %d bytes → %d, %d errors", what, row.Op, row.A.Bytes, row.B.Bytes, row.B.Errors)
		}
	}
}

// eventsOf reads every event of the trace file path.
func eventsOf(t *testing.T, path string) []trace.Event {
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
	return evs
}

func expand(t *testing.T, path string, ranks int) *script.Expansion {
	t.Helper()
	p, err := script.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	x, err := script.Expand(p, script.Config{Ranks: ranks})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func statsOf(t *testing.T, tr trace.Trace) *report.Stats {
	t.Helper()
	st, err := report.Compute(tr, report.Options{Detail: true})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// levelsScript is Parabench's four levels of parallelism through MPI-IO
// (a view with blocks every nranks·e bytes; independent and collective
// calls), shared file pointers, an explicit-offset collective read, and a
// barrier.
const levelsScript = `param n = 8
param e = 64KiB
mpiopen "levels.dat" as f
view f disp rank * e block e stride nranks * e
repeat n {
    write f size e all
}
repeat n {
    write f size e
}
sync f
barrier
view f
read f at rank * e size e all
write f size 100 shared
seek f to 0 shared
read f size 100 ordered
close f
`

// TestMPIReplayScriptBothBackends replays a script of MPI-IO with views
// and collectives with 6 ranks over 1 and 4 processes, through POSIX and
// MPI-IO, and checks that the replay's trace has the script's calls and
// bytes, op by op, and that the file has the size the views give it.
func TestMPIReplayScriptBothBackends(t *testing.T) {
	bin := mpiBin(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "levels.iop")
	if err := os.WriteFile(src, []byte(levelsScript), 0o644); err != nil {
		t.Fatal(err)
	}
	want := statsOf(t, expand(t, src, 6))
	for _, np := range []int{1, 4} {
		for _, be := range []string{"posix", "mpiio"} {
			target := filepath.Join(dir, be+"-"+string(rune('0'+np)))
			rec := target + ".iot"
			r := mpitest.MustRun(t, dir, 2*time.Minute, np, nil, bin, "--mpi", "--backend", be, "--timing", "afap",
				"--ranks", "6", "--target", target, "--record", rec, "--strict", "--quiet", src)
			if !strings.Contains(r.Stdout, "MPI_File_write_all") {
				t.Errorf("np %d %s: no report on stdout:\n%s", np, be, r.Stdout)
			}
			sameCallsAndBytes(t, be+" over "+string(rune('0'+np))+" processes", want, stats(t, rec))
			st, err := os.Stat(filepath.Join(target, "levels.dat"))
			if err != nil || st.Size() != 2*8*64<<10*6 {
				t.Errorf("np %d %s: levels.dat: %v, size %d, want %d", np, be, err, st.Size(), 2*8*64<<10*6)
			}
		}
	}
}

// TestMPIReplayAstro3d replays samples/astro3d-small.iop (8 ranks of
// POSIX I/O ordered by MPI_Sendrecv and MPI_Bcast) with 8 and with 4
// processes, and checks Thakur et al.'s counts in the replay's trace.
func TestMPIReplayAstro3d(t *testing.T) {
	bin := mpiBin(t)
	dir := t.TempDir()
	x, err := samples.Open("astro3d-small", 8, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := statsOf(t, x)
	src := filepath.Join(mpitest.ModuleRoot(), "samples", "astro3d-small.iop")
	for _, c := range []struct {
		np int
		be string
	}{{8, "posix"}, {4, "posix"}, {4, "mpiio"}} {
		rec := filepath.Join(dir, c.be+string(rune('0'+c.np))+".iot")
		mpitest.MustRun(t, dir, 3*time.Minute, c.np, nil, bin, "--mpi", "--backend", c.be, "--timing", "afap",
			"--ranks", "8", "--record", rec, "--strict", "--quiet", src)
		got := stats(t, rec)
		what := c.be + " over " + string(rune('0'+c.np)) + " processes"
		sameCallsAndBytes(t, what, want, got)
		counts := map[string]int64{}
		for _, r := range got.Ops {
			counts[r.Op] = r.Count
		}
		if counts["MPI_Sendrecv"] != 5600 || counts["MPI_Bcast"] != 8 || got.Ranks != 8 {
			t.Errorf("%s: %d ranks, MPI_Sendrecv %d, MPI_Bcast %d; want 8, 5600, 8", what, got.Ranks, counts["MPI_Sendrecv"], counts["MPI_Bcast"])
		}
	}
}

// orderingScript: rank 0 writes a file and then tells rank 1, which reads
// it. Nothing prepares the file (rank 0 creates it), so rank 1 can read it
// only if its receive waited for rank 0's message.
const orderingScript = `if rank == 0 {
    open "data.bin" as f flags O_WRONLY | O_CREAT | O_TRUNC
    repeat 40 {
        write f size 1MiB
    }
    close f
    send 8B to 1 tag 3
} else {
    recv 8B from 0 tag 3
    open "data.bin" as g flags O_RDONLY
    read g size 40MiB
    close g
}
`

// TestMPIReplayKeepsOrdering replays, as fast as possible and with the
// two ranks in two processes, a trace where rank 1 reads what rank 0
// wrote after a message: the read must find every byte, and start after
// rank 0 closed the file.
func TestMPIReplayKeepsOrdering(t *testing.T) {
	bin := mpiBin(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "order.iop")
	if err := os.WriteFile(src, []byte(orderingScript), 0o644); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "order.iot")
	writeTrace(t, in, expand(t, src, 2))
	for _, be := range []string{"posix", "mpiio"} {
		rec := filepath.Join(dir, be+".iot")
		mpitest.MustRun(t, dir, 2*time.Minute, 2, nil, bin, "--mpi", "--backend", be, "--timing", "afap",
			"--record", rec, "--strict", "--quiet", in)
		evs := eventsOf(t, rec)
		var closed, read *trace.Event
		for i := range evs {
			e := &evs[i]
			switch {
			case e.Rank == 0 && e.Op == trace.OpClose:
				closed = e
			case e.Rank == 1 && e.Op.Dir() == trace.DirRead:
				read = e
			}
		}
		if closed == nil || read == nil {
			t.Fatalf("%s: no close of rank 0 or read of rank 1 in the replay's trace", be)
		}
		if read.Ret != 40<<20 {
			t.Errorf("%s: rank 1 read %d bytes of rank 0's 40 MiB", be, read.Ret)
		}
		const skew = 2 * time.Millisecond // between the processes' clocks
		if read.Start < closed.End()-int64(skew) {
			t.Errorf("%s: rank 1 read at %v, before rank 0 closed the file at %v", be, time.Duration(read.Start), time.Duration(closed.End()))
		}
	}
}

// TestMPIFlagsWithoutMPI checks what the default build says about the MPI
// flags, and that a replay started by an MPI launcher is refused without
// --mpi.
func TestMPIFlagsWithoutMPI(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(mpitest.ModuleRoot(), "samples", "ior-4x2048.iot")
	for _, args := range [][]string{{"--mpi", in}, {"--backend", "mpiio", in}} {
		_, stderr, code := runBin(t, args...)
		if code == 0 || !strings.Contains(stderr, "-tags mpi") {
			t.Errorf("%v: exit %d, stderr %q; want a pointer to -tags mpi", args, code, stderr)
		}
	}
	for _, args := range [][]string{{"--backend", "hdf5", in}, {"--hint", "x=1", in}, {"--backend", "mpiio", "--hint", "novalue", in}} {
		_, stderr, code := runBin(t, args...)
		if code != 1 || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want one line", args, code, stderr)
		}
	}
	t.Setenv("OMPI_COMM_WORLD_SIZE", "4")
	t.Setenv("OMPI_COMM_WORLD_RANK", "1")
	_, stderr, code := runBin(t, "--target", dir, in)
	if code == 0 || !strings.Contains(stderr, "--mpi") {
		t.Errorf("under an MPI launcher without --mpi: exit %d, stderr %q", code, stderr)
	}
}

// TestMPIReplaySendrecvSource replays, with its three ranks in three
// processes, a halo exchange whose MPI_Sendrecv has the tag of a plain
// send rank 0 made to rank 1 before a barrier: rank 1's sendrecv must
// receive rank 2's message (sent 20 ms later), not rank 0's, and rank 1's
// plain receive then rank 0's; --strict fails the replay on an unmatched
// call.
func TestMPIReplaySendrecvSource(t *testing.T) {
	bin := mpiBin(t)
	dir := t.TempDir()
	const ms = int64(time.Millisecond)
	m := trace.NewMemTrace()
	sr := func(rank uint32, peer int32, start int64) trace.Event {
		e := trace.Event{Rank: rank, Op: trace.OpMPISendrecv, Peer: peer, Tag: 5, Bytes: 200, Start: start, Dur: ms / 10}
		e.SetRecvFrom(peer, 5)
		return e
	}
	m.Add(trace.Event{Rank: 0, Op: trace.OpMPISend, Peer: 1, Tag: 5, Bytes: 100, Dur: ms / 10},
		trace.Event{Rank: 0, Op: trace.OpMPIBarrier, Start: ms, Dur: ms / 10})
	m.Add(trace.Event{Rank: 1, Op: trace.OpMPIBarrier, Start: ms, Dur: ms / 10},
		sr(1, 2, 2*ms),
		trace.Event{Rank: 1, Op: trace.OpMPIRecv, Peer: 0, Tag: 5, Bytes: 100, Start: 23 * ms, Dur: ms / 10})
	m.Add(trace.Event{Rank: 2, Op: trace.OpMPIBarrier, Start: ms, Dur: ms / 10},
		sr(2, 1, 22*ms))
	in := filepath.Join(dir, "halo.iot")
	writeTrace(t, in, m)
	rec := filepath.Join(dir, "replay.iot")
	mpitest.MustRun(t, dir, 2*time.Minute, 3, nil, bin, "--mpi", "--timing", "original",
		"--record", rec, "--strict", "--quiet", in)
	evs := eventsOf(t, rec)
	var got, sent *trace.Event
	for i := range evs {
		if e := &evs[i]; e.Op == trace.OpMPISendrecv {
			switch e.Rank {
			case 1:
				got = e
			case 2:
				sent = e
			}
		}
	}
	if got == nil || sent == nil {
		t.Fatal("no sendrecv of rank 1 or 2 in the replay's trace")
	}
	const skew = 2 * time.Millisecond // between the processes' clocks
	if got.End() < sent.Start-int64(skew) {
		t.Errorf("rank 1's sendrecv returned at %v, before rank 2 sent at %v: it took rank 0's message",
			time.Duration(got.End()), time.Duration(sent.Start))
	}
}

// TestMPIErrorDetail replays, through MPI-IO, an MPI_File_open the MPI
// library refuses (read-only with create: MPI_ERR_AMODE): the report
// gives the library's own words besides the errno.
func TestMPIErrorDetail(t *testing.T) {
	bin := mpiBin(t)
	dir := t.TempDir()
	m := trace.NewMemTrace()
	m.Add(trace.Event{Op: trace.OpMPIFileOpen, Path: m.Paths.Intern("/data/f"), FD: 1, Comm: trace.CommSelf,
		Flags: trace.MPIModeRdonly | trace.MPIModeCreate})
	in := filepath.Join(dir, "amode.iot")
	writeTrace(t, in, m)
	r := mpitest.MustRun(t, dir, 2*time.Minute, 1, nil, bin, "--mpi", "--backend", "mpiio", "--timing", "afap",
		"--target", filepath.Join(dir, "t"), in)
	if !strings.Contains(r.Stdout, "MPI_File_open: 1 failed with EINVAL (first: MPI_ERR_AMODE") {
		t.Errorf("the report does not give MPI's error string:\n%s\n%s", r.Stdout, r.Stderr)
	}
}
