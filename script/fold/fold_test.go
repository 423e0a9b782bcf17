package fold

import (
	"strings"
	"testing"

	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/trace"
)

// convertTrace converts t, checks the script formats canonically and
// expands to t's calls (Compare), and returns its text.
func convertTrace(t testing.TB, tr trace.Trace, opt Options) (string, *Result) {
	t.Helper()
	res, err := Convert(tr, opt)
	if err != nil {
		t.Fatalf("convert: %v", err)
	}
	out := script.Format(res.File)
	if again, err := script.FormatSource("out.iop", out); err != nil {
		t.Fatalf("the script does not parse: %v\n%s", err, out)
	} else if string(again) != string(out) {
		t.Errorf("the script is not in canonical form:\n%s", out)
	}
	if err := Verify(tr, "out.iop", out, res.Ranks); err != nil {
		t.Fatalf("round trip: %v\n%s", err, numbered(out))
	}
	return string(out), res
}

func numbered(b []byte) string {
	var sb strings.Builder
	for i, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		sb.WriteString(strings.Repeat(" ", 4-len(itoa(i+1))) + itoa(i+1) + "  " + l + "\n")
	}
	return sb.String()
}

// expandScript expands a script into a trace.
func expandScript(t testing.TB, src string, ranks int) trace.Trace {
	t.Helper()
	p, err := script.Compile("in.iop", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return expandProgram(t, p, ranks)
}

func expandProgram(t testing.TB, p *script.Program, ranks int) trace.Trace {
	t.Helper()
	x, err := script.Expand(p, script.Config{Ranks: ranks})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// roundTrip expands src, converts it and checks the result; it returns
// the script.
func roundTrip(t testing.TB, src string, ranks int) string {
	t.Helper()
	out, _ := convertTrace(t, expandScript(t, src, ranks), Options{})
	return out
}

func lines(s string) int { return strings.Count(s, "\n") }

func TestRoundTripScripts(t *testing.T) {
	for _, c := range []struct {
		name     string
		src      string
		ranks    int
		maxLines int
	}{
		{"ior", `
open "/scratch/ior/testFile.${pad(rank, 8)}" as f flags O_WRONLY | O_CREAT | O_TRUNC
repeat 1000 {
    write f size 4KiB
}
close f
open "/scratch/ior/testFile.${pad(rank, 8)}" as f flags O_RDONLY
repeat 1000 {
    read f size 4KiB
}
close f
`, 4, 14},
		{"astro3d", `
param dumps = 4
param arrays = 6
param chunk = 512KiB
param header = 24B

repeat dumps as d {
    time "dump $d" {
        open "dump.${pad(d, 3)}" as f flags O_WRONLY | O_CREAT | O_TRUNC
        if rank == 0 {
            write f size header
        }
        bcast header root 0
        repeat arrays as a {
            alltoall chunk
            seek f to header + (a * nranks + rank) * chunk
            write f size chunk
        }
        close f
    }
}
`, 8, 20},
		{"strided", `
repeat 5 as s {
    sleep 10ms
    repeat 4 as i {
        repeat 3 as j {
            write "out" at s * 1MiB + i * 64KiB + j * 4KiB + rank * 100 size 100
        }
    }
    barrier
}
`, 3, 14},
		{"implicit", `
repeat 10 as i {
    write "f.$i" size 4KiB
    read "f.$i" at 0 size 4KiB
    append "log" size 100
}
create "c" mode 0o600
rename "c" to "d"
stat "d"
lookup "d"
delete "d"
mkdir "dir"
rmdir "dir"
`, 2, 20},
		{"parabench", `
param iterations = 100
param chunk = 10MiB

group writers
group readers

on writers {
    time "write" {
        repeat iterations {
            append "file$rank" size chunk
        }
    }
    time "pwrite" {
        mpiopen "pfile" as pf flags MPI_MODE_CREATE | MPI_MODE_WRONLY
        view pf disp grank * chunk block chunk stride gsize * chunk
        repeat iterations {
            write pf size chunk all
        }
        close pf
    }
}
barrier
on readers {
    open "file${first(writers) + grank}" as fh flags O_RDWR
    time "read" {
        repeat iterations {
            read fh size chunk
        }
    }
    close fh
}
`, 4, 30},
		{"ring", `
repeat 10 as i {
    send 8 to (rank + 1) % nranks tag i
    recv 8 from (rank + nranks - 1) % nranks tag i
    allreduce 8
}
`, 5, 12},
		// A group of ranks 4 … 7 exchanging and broadcasting: the trace
		// gives peers and roots as world ranks, the script as ranks of
		// the group.
		{"group-peers", `
group low = 4
group high = 4
on low {
    barrier
}
on high {
    repeat 3 as i {
        sendrecv 8 with xor(grank, 1)
        send 16 to (grank + 1) % gsize tag i
        recv 16 from (grank + gsize - 1) % gsize tag i
        bcast 32 root 1
        reduce 8 root gsize - 1
    }
}
`, 8, 20},
		// Only the second group communicates: the first is declared for
		// its ranks.
		{"second-group", `
group low = 2
group high = 6
on high {
    bcast 32 root 2
    sendrecv 8 with xor(grank, 1)
}
`, 8, 12},
		// Halo exchanges: MPI_Sendrecv to one neighbour and from the
		// other (ring and non-periodic shifts, each way, the same tag),
		// a pairwise exchange, and a shift in a group.
		{"halo", `
group low = 3
group high = 3
repeat 4 as i {
    sendrecv 4KiB to (rank + 1) % nranks from (rank + nranks - 1) % nranks tag 5
    sendrecv 4KiB to (rank + nranks - 1) % nranks from (rank + 1) % nranks tag 5
    write "out" at (i * nranks + rank) * 4KiB size 4KiB
}
let up = rank + 1
let down = rank - 1
if rank == nranks - 1 {
    up = none
}
if rank == 0 {
    down = none
}
sendrecv 8 to up from down tag 1 recvtag 2
sendrecv 8 with xor(rank, 1)
on high {
    sendrecv 16 to (grank + 1) % gsize from (grank + gsize - 1) % gsize
}
`, 6, 40},
		{"grid", `
write "grid" at (rank % 3) * 4KiB + (rank / 3) * 1MiB size 4KiB
barrier
`, 9, 8},
		// Blocks that differ only by unrelated paths, as an MPI library
		// probes and loads its components: a loop whose iteration only
		// chooses the path (the loop variable is declared though no
		// value uses it); twelve single stats stay twelve lines.
		{"probe", `
open "/out/analysis" as f flags O_WRONLY | O_CREAT
write f size 100
write f size 200
sync f
close f
open "/out/restart" as f flags O_WRONLY | O_CREAT
write f size 100
write f size 200
sync f
close f
open "/out/grid" as f flags O_WRONLY | O_CREAT
write f size 100
write f size 200
sync f
close f
open "/out/log" as f flags O_WRONLY | O_CREAT
write f size 100
write f size 200
sync f
close f
open "/out/meta" as f flags O_WRONLY | O_CREAT
write f size 100
write f size 200
sync f
close f
open "/out/checkpoint" as f flags O_WRONLY | O_CREAT
write f size 100
write f size 200
sync f
close f
barrier
`, 2, 24},
		{"probe-short", `
stat "/lib/mca_romio.so"
stat "/lib/mca_ompio.so"
stat "/lib/mca_ufs.so"
stat "/lib/mca_dynamic.so"
stat "/lib/mca_two_phase.so"
stat "/lib/mca_vulcan.so"
stat "/lib/mca_a.so"
stat "/lib/mca_b.so"
stat "/lib/mca_c.so"
stat "/lib/mca_d.so"
stat "/lib/mca_e.so"
stat "/lib/mca_f.so"
barrier
`, 2, 16},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := roundTrip(t, c.src, c.ranks)
			if n := lines(out); n > c.maxLines {
				t.Errorf("%d lines, want at most %d:\n%s", n, c.maxLines, numbered([]byte(out)))
			}
			t.Logf("\n%s", out)
		})
	}
}

// TestSendrecvWithoutReceiveHalf converts a trace written before the
// receive half of MPI_Sendrecv was recorded: the script names the
// destination as the source, the check accepts it, and the result says
// so.
func TestSendrecvWithoutReceiveHalf(t *testing.T) {
	m := trace.NewMemTrace()
	for r := range uint32(3) {
		for i := range int64(3) {
			m.Add(trace.Event{Rank: r, Op: trace.OpMPISendrecv, Peer: int32((r + 1) % 3), Tag: 7, Bytes: 64, Start: i * 1000, Dur: 100})
		}
	}
	out, res := convertTrace(t, m, Options{})
	if !strings.Contains(out, "sendrecv 64 with (rank + 1) % nranks tag 7") {
		t.Errorf("script:\n%s", out)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "9 MPI_Sendrecv calls have no recorded source") {
		t.Errorf("warnings %q", res.Warnings)
	}
}

// TestTooManyRanks: a trace whose highest rank (or header) says more
// ranks than a script runs is refused before anything per rank is made:
// rank 4294967295 made a table of 4 Gi ranks and ran out of memory.
func TestTooManyRanks(t *testing.T) {
	for _, tc := range []struct {
		rank  uint32
		ranks int
	}{{4294967295, 0}, {3, 2000000000}} {
		m := trace.NewMemTrace()
		m.M.Ranks = tc.ranks
		m.Add(trace.Event{Rank: tc.rank, Op: trace.OpMPIBarrier, Start: 1, Dur: 1})
		_, err := Convert(m, Options{})
		if err == nil || !strings.Contains(err.Error(), "a script runs at most 1048576") {
			t.Errorf("rank %d of %d: %v", tc.rank, tc.ranks, err)
		}
	}
}
