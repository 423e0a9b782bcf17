package script

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iotrace/iotrace/trace"
)

// wantRanks expands src and compares every rank's events with want,
// one line per event as evStr writes them.
func wantRanks(t *testing.T, src string, cfg Config, want map[uint32]string) {
	t.Helper()
	x, evs := expandAll(t, src, cfg)
	for r, w := range want {
		got := strings.Join(rankLines(x, evs[r]), "\n")
		w = strings.TrimSpace(strings.ReplaceAll(w, "\t", ""))
		if got != w {
			t.Errorf("rank %d:\ngot:\n%s\nwant:\n%s", r, got, w)
		}
	}
}

func TestExpandImplicitPOSIX(t *testing.T) {
	wantRanks(t, `
read "a" size 100
read "a" at 8 size 1
write "a" size 2
write "a" at 4KiB size 3
append "a" size 5
create "b"
create "c" mode 0o600
delete "b"
rename "c" to "d"
lookup "d"
stat "d"
mkdir "dir"
mkdir "dir2" mode 0o700
rmdir "dir"
truncate "d" to 10
`, Config{Ranks: 1}, map[uint32]string{0: `
	open a ret=3
	read a fd=3 size=100 ret=100
	close a fd=3
	open a ret=3
	pread a fd=3 off=8 size=1 ret=1
	close a fd=3
	open a flags=O_WRONLY|O_CREAT mode=0644 ret=3
	write a fd=3 size=2 ret=2
	close a fd=3
	open a flags=O_WRONLY|O_CREAT mode=0644 ret=3
	pwrite a fd=3 off=4096 size=3 ret=3
	close a fd=3
	open a flags=O_WRONLY|O_CREAT|O_APPEND mode=0644 ret=3
	write a fd=3 off=4099 size=5 ret=5
	close a fd=3
	creat b flags=O_WRONLY|O_CREAT|O_TRUNC mode=0644 ret=3
	close b fd=3
	creat c flags=O_WRONLY|O_CREAT|O_TRUNC mode=0600 ret=3
	close c fd=3
	unlink b
	rename c -> d
	access d
	stat d
	mkdir dir mode=0755
	mkdir dir2 mode=0700
	rmdir dir
	truncate d size=10
`})
}

func TestExpandExplicitPOSIX(t *testing.T) {
	wantRanks(t, `
open "f" as f flags O_RDWR | O_CREAT | O_TRUNC mode 0o640
open "g" as g flags O_RDONLY
write f size 10
write f size 20
write f at 100 size 1
read g size 7
seek f to 0
read f size 4
seek f to 2 from current
seek f to -1 from end
sync f
datasync f
truncate f to 50
stat f
seek f to 0 from end
close g
open "h" as h flags O_WRONLY | O_APPEND
write h size 3
close h
write "x" size 1
close f
`, Config{Ranks: 1}, map[uint32]string{0: `
	open f flags=O_RDWR|O_CREAT|O_TRUNC mode=0640 ret=3
	open g ret=4
	write f fd=3 size=10 ret=10
	write f fd=3 off=10 size=20 ret=20
	pwrite f fd=3 off=100 size=1 ret=1
	read g fd=4 size=7 ret=7
	lseek f fd=3
	read f fd=3 size=4 ret=4
	lseek f fd=3 off=2 whence=1 ret=6
	lseek f fd=3 off=-1 whence=2 ret=100
	fsync f fd=3
	fdatasync f fd=3
	ftruncate f fd=3 size=50
	fstat f fd=3
	lseek f fd=3 whence=2 ret=50
	close g fd=4
	open h flags=O_WRONLY|O_APPEND ret=4
	write h fd=4 size=3 ret=3
	close h fd=4
	open x flags=O_WRONLY|O_CREAT mode=0644 ret=4
	write x fd=4 size=1 ret=1
	close x fd=4
	close f fd=3
`})
}

func TestExpandMPIIO(t *testing.T) {
	wantRanks(t, `
mpiopen "p" as p flags MPI_MODE_CREATE | MPI_MODE_RDWR
view p disp rank * 1KiB block 1KiB stride nranks * 1KiB
write p size 1KiB all
write p size 1KiB
read p at 0 size 1KiB all
read p at 8 size 1KiB
write p size 8 shared
read p size 8 ordered
seek p to 4
seek p to 0 shared
sync p
truncate p to 1MiB
view p
close p
mpiopen "q.$rank" as q self
write q at 0 size 1 all
close q
`, Config{Ranks: 2}, map[uint32]string{1: `
	MPI_File_open p fd=1 flags=MPI_MODE_CREATE|MPI_MODE_RDWR
	MPI_File_set_view p fd=1 off=1024 size=1024 stride=2048
	MPI_File_write_all p fd=1 size=1024 count=1024 ret=1024
	MPI_File_write p fd=1 off=1024 size=1024 count=1024 ret=1024
	MPI_File_read_at_all p fd=1 size=1024 count=1024 ret=1024
	MPI_File_read_at p fd=1 off=8 size=1024 count=1024 ret=1024
	MPI_File_write_shared p fd=1 size=8 count=8 ret=8
	MPI_File_read_ordered p fd=1 size=8 count=8 ret=8
	MPI_File_seek p fd=1 off=4
	MPI_File_seek_shared p fd=1
	MPI_File_sync p fd=1
	MPI_File_set_size p fd=1 size=1048576
	MPI_File_set_view p fd=1
	MPI_File_close p fd=1
	MPI_File_open q.1 fd=1 flags=MPI_MODE_CREATE|MPI_MODE_RDWR comm=1
	MPI_File_write_at_all q.1 fd=1 size=1 comm=1 count=1 ret=1
	MPI_File_close q.1 fd=1 comm=1
`})
}

func TestExpandCommunication(t *testing.T) {
	wantRanks(t, `
barrier
bcast 24 root 1
bcast 8
reduce 16 root 1
allreduce 8
gather 4KiB root 1
scatter 4KiB
allgather 1KiB
alltoall 1MiB
if rank == 0 {
    send 64KiB to 1 tag 7
    recv 8 from any tag any
} else {
    recv 64KiB from 0 tag 7
    send 8 to 0
}
`, Config{Ranks: 2}, map[uint32]string{
		0: `
	MPI_Barrier
	MPI_Bcast peer=1 bytes=24
	MPI_Bcast bytes=8
	MPI_Reduce peer=1 bytes=16
	MPI_Allreduce bytes=8
	MPI_Gather peer=1 bytes=4096
	MPI_Scatter bytes=4096
	MPI_Allgather bytes=1024
	MPI_Alltoall bytes=1048576
	MPI_Send peer=1 tag=7 bytes=65536
	MPI_Recv peer=-1 tag=-1 bytes=8`,
		1: `
	MPI_Barrier
	MPI_Bcast peer=1 bytes=24
	MPI_Bcast bytes=8
	MPI_Reduce peer=1 bytes=16
	MPI_Allreduce bytes=8
	MPI_Gather peer=1 bytes=4096
	MPI_Scatter bytes=4096
	MPI_Allgather bytes=1024
	MPI_Alltoall bytes=1048576
	MPI_Recv tag=7 bytes=65536
	MPI_Send bytes=8`,
	})
}

// TestExpandSendrecv: a pairwise exchange is one MPI_Sendrecv per rank,
// with the partner of step i being xor(rank, i).
func TestExpandSendrecv(t *testing.T) {
	wantRanks(t, `
repeat nranks - 1 as i {
    sendrecv 4KiB with xor(rank, i + 1) tag 2
}
sendrecv 8 with rank
`, Config{Ranks: 4}, map[uint32]string{
		0: `
	MPI_Sendrecv peer=1 tag=2 bytes=4096
	MPI_Sendrecv peer=2 tag=2 bytes=4096
	MPI_Sendrecv peer=3 tag=2 bytes=4096
	MPI_Sendrecv bytes=8`,
		2: `
	MPI_Sendrecv peer=3 tag=2 bytes=4096
	MPI_Sendrecv tag=2 bytes=4096
	MPI_Sendrecv peer=1 tag=2 bytes=4096
	MPI_Sendrecv peer=2 bytes=8`,
	})
}

// TestExpandSendrecvShift: sendrecv to one rank and from another (a ring
// shift, a non-periodic shift with none at its ends, another receive
// tag, a shift in a group, whose ranks are group ranks).
func TestExpandSendrecvShift(t *testing.T) {
	wantRanks(t, `
group low = 2
group high = 2
sendrecv 1KiB to (rank + 1) % nranks from (rank + nranks - 1) % nranks tag 7
let up = rank + 1
let down = rank - 1
if rank == nranks - 1 {
    up = none
}
if rank == 0 {
    down = none
}
sendrecv 64 to up from down recvtag 9
on high {
    sendrecv 8 to (grank + 1) % gsize from any
}
`, Config{Ranks: 4}, map[uint32]string{
		0: `
	MPI_Sendrecv peer=1 tag=7 recv=3/7 bytes=1024
	MPI_Sendrecv peer=1 recv=-2/9 bytes=64`,
		2: `
	MPI_Sendrecv peer=3 tag=7 recv=1/7 bytes=1024
	MPI_Sendrecv peer=3 recv=1/9 bytes=64
	MPI_Sendrecv peer=3 recv=-1/0 comm=3 bytes=8`,
		3: `
	MPI_Sendrecv tag=7 recv=2/7 bytes=1024
	MPI_Sendrecv peer=-2 recv=2/9
	MPI_Sendrecv peer=2 recv=-1/0 comm=3 bytes=8`,
	})
}

// TestExpandLists: list literals, indexing, len, element assignment and
// copies: a let of a list copies it, so changing one leaves the other.
func TestExpandLists(t *testing.T) {
	wantRanks(t, `
param sizes = [1KiB, 2KiB + nranks]
let counts = [0, 0]
let saved = counts
repeat len(sizes) as i {
    repeat i + 1 {
        counts[i] = counts[i] + 1
    }
    write "f" at counts[i] size sizes[i]
}
mark "$counts $saved ${len([])} ${sqrt(8)} ${sqrt(9)} ${sqrt(9223372036854775807)} ${sqrt(0)}"
`, Config{Ranks: 1, Params: map[string]string{"sizes": "[8, 16 + nranks]"}}, map[uint32]string{0: `
	open f flags=O_WRONLY|O_CREAT mode=0644 ret=3
	pwrite f fd=3 off=1 size=8 ret=8
	close f fd=3
	open f flags=O_WRONLY|O_CREAT mode=0644 ret=3
	pwrite f fd=3 off=2 size=17 ret=17
	close f fd=3
	mark [1, 2] [0, 0] 0 2 3 3037000499 0`})
}

// TestExpandGroups: groups take consecutive ranks; inside on, grank and
// gsize are group-relative, collectives use the group's communicator and
// roots are group ranks (the events give them as world ranks, as a trace
// does); a rank in no group skips every on block.
func TestExpandGroups(t *testing.T) {
	src := `
group writers = 2
group readers
on writers {
    write "w.$grank" at grank * 1KiB size 1KiB
    barrier
}
on readers {
    read "w.${grank % 2}" size 1KiB
    bcast 8 root gsize - 1
    mark "reader $grank of $gsize, rank $rank, ${size(readers)} from ${first(readers)}"
}
barrier
`
	wantRanks(t, src, Config{Ranks: 5}, map[uint32]string{
		1: `
	open w.1 flags=O_WRONLY|O_CREAT mode=0644 ret=3
	pwrite w.1 fd=3 off=1024 size=1024 ret=1024
	close w.1 fd=3
	MPI_Barrier comm=2
	MPI_Barrier`,
		4: `
	open w.0 ret=3
	read w.0 fd=3 size=1024 ret=1024
	close w.0 fd=3
	MPI_Bcast peer=4 comm=3 bytes=8
	mark reader 2 of 3, rank 4, 3 from 2
	MPI_Barrier`,
	})
	// --group resizes; the rest goes to the unsized group, and ranks
	// left over by sized groups belong to none.
	x, err := Expand(mustCompile(t, src), Config{Ranks: 5, Groups: map[string]string{"writers": "4"}})
	if err != nil {
		t.Fatal(err)
	}
	g := x.Instance().Groups()
	if fmt.Sprint(g) != "[{writers 2 0 4} {readers 3 4 1}]" {
		t.Errorf("groups %v", g)
	}
	if got := x.Instance().CommRanks(3); !slices.Equal(got, []int{4}) {
		t.Errorf("CommRanks(3) = %v", got)
	}
	in, err := mustCompile(t, "group a = 1\ngroup b\ngroup c\ngroup d = 1\non d { barrier }").Instantiate(Config{Ranks: 7})
	if err != nil {
		t.Fatal(err)
	}
	if g := in.Groups(); fmt.Sprint(g) != "[{a 2 0 1} {b 3 1 3} {c 4 4 2} {d 5 6 1}]" {
		t.Errorf("groups %v", g)
	}
	in, _ = mustCompile(t, "group a = 2\non a { barrier }").Instantiate(Config{Ranks: 3})
	x = in.Expand()
	s, _ := x.Rank(2)
	if evs, err := trace.ReadAll(s); err != nil || len(evs) != 0 {
		t.Errorf("rank in no group: %d events, %v", len(evs), err)
	}
}

// TestExpandControlFlow: if/else on rank, nested loops with loop-variable
// arithmetic, let and assignment, string interpolation, params.
func TestExpandControlFlow(t *testing.T) {
	src := `
param blocks = 2
param name = "data"
let off = 0
repeat blocks as i {
    repeat i + 1 as j {
        if (i + j) % 2 == 0 {
            write "$name.${rank}_${pad(i * 10 + j, 3)}" at off size (j + 1) * 1kB
        } else if rank == 0 {
            read "$name.$rank" at off size 1
        } else {
            stat "$name-$i-$j-${1500us}-${i == j}"
        }
        off = off + (j + 1) * 1kB
    }
}
`
	wantRanks(t, src, Config{Ranks: 2, Params: map[string]string{"name": "out"}}, map[uint32]string{
		0: `
	open out.0_000 flags=O_WRONLY|O_CREAT mode=0644 ret=3
	pwrite out.0_000 fd=3 size=1000 ret=1000
	close out.0_000 fd=3
	open out.0 ret=3
	pread out.0 fd=3 off=1000 size=1 ret=1
	close out.0 fd=3
	open out.0_011 flags=O_WRONLY|O_CREAT mode=0644 ret=3
	pwrite out.0_011 fd=3 off=2000 size=2000 ret=2000
	close out.0_011 fd=3`,
		1: `
	open out.1_000 flags=O_WRONLY|O_CREAT mode=0644 ret=3
	pwrite out.1_000 fd=3 size=1000 ret=1000
	close out.1_000 fd=3
	stat out-1-0-1500us-false
	open out.1_011 flags=O_WRONLY|O_CREAT mode=0644 ret=3
	pwrite out.1_011 fd=3 off=2000 size=2000 ret=2000
	close out.1_011 fd=3`,
	})
}

func TestExpandRegions(t *testing.T) {
	wantRanks(t, `
repeat 2 as d {
    time "dump $d" {
        time "header" {
            write "f" size 24
        }
    }
}
`, Config{Ranks: 1}, map[uint32]string{0: `
	region_begin dump 0
	region_begin header
	open f flags=O_WRONLY|O_CREAT mode=0644 ret=3
	write f fd=3 size=24 ret=24
	close f fd=3
	region_end header
	region_end dump 0
	region_begin dump 1
	region_begin header
	open f flags=O_WRONLY|O_CREAT mode=0644 ret=3
	write f fd=3 size=24 ret=24
	close f fd=3
	region_end header
	region_end dump 1`})
}

type timed struct {
	line       string
	start, dur int64
}

func timeline(x *Expansion, evs []trace.Event) []timed {
	var out []timed
	for i := range evs {
		out = append(out, timed{evStr(&evs[i], x.Path), evs[i].Start, evs[i].Dur})
	}
	return out
}

// TestNominalTimes pins the duration model: data calls 10µs + 1 ns/byte,
// other file calls 20µs, seeks 1µs, communication 5µs + 0.1 ns/byte,
// sleeps add their time, and a collective ends for all its ranks at the
// latest arrival plus the longest duration.
func TestNominalTimes(t *testing.T) {
	x, evs := expandAll(t, `
if rank == 1 {
    sleep 1ms
}
open "f" as f
write f size 4096
seek f to 0
barrier
bcast 1000 root 0
close f
`, Config{Ranks: 2})
	us := int64(1000)
	want0 := []timed{
		{"open f flags=O_RDWR|O_CREAT mode=0644 ret=3", 0, 20 * us},
		{"write f fd=3 size=4096 ret=4096", 20 * us, 10*us + 4096},
		{"lseek f fd=3", 34096, us},
		{"MPI_Barrier", 35096, 1000*us + 35096 + 5*us - 35096},
		{"MPI_Bcast bytes=1000", 1040096, 5*us + 100},
		{"close f fd=3", 1045196, 20 * us},
	}
	if got := timeline(x, evs[0]); !slices.Equal(got, want0) {
		t.Errorf("rank 0:\n got %v\nwant %v", got, want0)
	}
	// Rank 1 arrives 1ms later at the barrier and waits for no one.
	if b := evs[1][3]; b.Start != 1035096 || b.End() != 1040096 {
		t.Errorf("rank 1 barrier %d+%d", b.Start, b.Dur)
	}
	if evs[0][5].End() != evs[1][5].End() {
		t.Errorf("ranks end at %d and %d", evs[0][5].End(), evs[1][5].End())
	}
	// A custom model.
	m := Model{DataLatency: time.Second, DataBandwidth: 1}
	x, evs = expandAll(t, `write "f" at 0 size 2`, Config{Ranks: 1, Model: &m})
	if got := timeline(x, evs[0]); got[1].dur != 3e9 || got[0].dur != 0 {
		t.Errorf("custom model: %v", got)
	}
}

// TestTimeDriven: under the nominal model a time-driven loop runs while
// the slowest rank has spent less than its duration in it; all ranks leave
// after the same iteration.
func TestTimeDriven(t *testing.T) {
	x, evs := expandAll(t, `
param T = 1ms
repeat for T as i {
    write "f.$rank" at i * 100B size 100B
    if rank == 1 {
        sleep 50us
    }
}
barrier
`, Config{Ranks: 2})
	// Rank 0: 10.1µs per iteration (open and close are 20µs each: 50.1µs),
	// rank 1: 100.1µs. Rank 1 decides: ceil(1ms / 100.1µs) = 10 iterations.
	for r := range uint32(2) {
		n := 0
		for _, l := range rankLines(x, evs[r]) {
			if strings.HasPrefix(l, "pwrite") {
				n++
			}
		}
		if n != 10 {
			t.Errorf("rank %d: %d iterations, want 10", r, n)
		}
		last := rankLines(x, evs[r])[len(evs[r])-2]
		if last != fmt.Sprintf("close f.%d fd=3", r) {
			t.Errorf("rank %d: last close %q", r, last)
		}
	}
	// A shorter T, from the command line.
	_, evs = expandAll(t, `
param T = 1ms
repeat for T as i {
    sleep 300us
    mark "$i"
}
`, Config{Ranks: 1, Params: map[string]string{"T": "1ms - 400us"}})
	if len(evs[0]) != 2 {
		t.Errorf("T=600us: %d iterations, want 2", len(evs[0]))
	}
	_, evs = expandAll(t, "repeat for 0s {\n    barrier\n}", Config{Ranks: 2})
	if len(evs[0]) != 0 {
		t.Errorf("repeat for 0s ran %d calls", len(evs[0]))
	}
}

// TestExpandGroupPeers: inside on, peers and roots are ranks of the
// group, as MPI numbers them in the group's communicator; the events give
// them as world ranks, as every trace does (docs/FORMAT.md: Peer), so
// that a replay, a report or a conversion reads them alike. The group
// here is ranks 4 … 7.
func TestExpandGroupPeers(t *testing.T) {
	src := `
group low = 4
group high = 4
on high {
    sendrecv 8 with xor(grank, 1)
    send 16 to (grank + 1) % gsize tag 3
    recv 16 from (grank + gsize - 1) % gsize tag 3
    bcast 32 root 1
    reduce 8 root gsize - 1
    recv 1 from any tag any
}
on high {
    if grank == 0 {
        send 1 to 2
    }
}
`
	wantRanks(t, src, Config{Ranks: 8}, map[uint32]string{
		4: `
	MPI_Sendrecv peer=5 comm=3 bytes=8
	MPI_Send peer=5 tag=3 comm=3 bytes=16
	MPI_Recv peer=7 tag=3 comm=3 bytes=16
	MPI_Bcast peer=5 comm=3 bytes=32
	MPI_Reduce peer=7 comm=3 bytes=8
	MPI_Recv peer=-1 tag=-1 comm=3 bytes=1
	MPI_Send peer=6 comm=3 bytes=1`,
		7: `
	MPI_Sendrecv peer=6 comm=3 bytes=8
	MPI_Send peer=4 tag=3 comm=3 bytes=16
	MPI_Recv peer=6 tag=3 comm=3 bytes=16
	MPI_Bcast peer=5 comm=3 bytes=32
	MPI_Reduce peer=7 comm=3 bytes=8
	MPI_Recv peer=-1 tag=-1 comm=3 bytes=1`,
	})
}

// TestDecider runs a rank alone with a Decider, as a replay does.
func TestDecider(t *testing.T) {
	in, err := mustCompile(t, `
group g = 2
on g {
    repeat for 10s as i {
        write "f" size 1
        barrier
    }
}
`).Instantiate(Config{Ranks: 3})
	if err != nil {
		t.Fatal(err)
	}
	var checks []LoopCheck
	dec := DeciderFunc(func(c LoopCheck) (bool, error) {
		checks = append(checks, c)
		return c.Iter < 3, nil
	})
	s, err := in.Source(1, nil, dec)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := trace.ReadAll(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3*4 || len(checks) != 4 {
		t.Fatalf("%d events, %d checks", len(evs), len(checks))
	}
	c := checks[2]
	if c.Rank != 1 || c.Iter != 2 || c.Limit != 10e9 || c.Comm != 2 || c.Start != 0 || c.Pos.Line != 4 ||
		c.Now != evs[7].End() || c.Prev != evs[3].End() {
		t.Errorf("check %+v", c)
	}
	// Standalone, a collective takes its own nominal duration.
	if b := evs[3]; b.Op != trace.OpMPIBarrier || b.Dur != 5000 || b.Comm != 2 {
		t.Errorf("barrier %+v", b)
	}
	// Errors of a Decider stop the stream.
	s, _ = in.Source(0, nil, DeciderFunc(func(LoopCheck) (bool, error) { return false, fmt.Errorf("lost") }))
	if _, err := trace.ReadAll(s); err == nil || err.Error() != "t.iop: rank 0: time-driven loop at 4:5: lost" {
		t.Errorf("got %v", err)
	}
}

// TestInterpSteps drives an interpreter by hand.
func TestInterpSteps(t *testing.T) {
	in, _ := mustCompile(t, "barrier\nrepeat for 1s {\n    sleep 600ms\n}\nmark \"end\"").Instantiate(Config{Ranks: 2})
	paths := trace.NewPaths()
	it, err := in.NewInterp(0, paths)
	if err != nil {
		t.Fatal(err)
	}
	var ev trace.Event
	if k, _ := it.Step(&ev); k != StepSync || ev.Op != trace.OpMPIBarrier {
		t.Fatalf("got %v %v", k, ev.Op)
	}
	if _, err := it.Step(&ev); err != errProtocol {
		t.Errorf("Step before Settle: %v", err)
	}
	it.Settle(7000)
	for i := range 3 {
		k, _ := it.Step(&ev)
		if k != StepDecide || it.Check().Iter != int64(i) || it.Check().Now != 7000+int64(i)*600e6 {
			t.Fatalf("check %d: %v %+v", i, k, it.Check())
		}
		it.Decide(i < 2)
	}
	if k, _ := it.Step(&ev); k != StepEvent || ev.Op != trace.OpMark || paths.Lookup(ev.Path) != "end" || ev.Start != 7000+1200e6 {
		t.Errorf("mark %v %+v", k, ev)
	}
	if k, _ := it.Step(&ev); k != StepDone {
		t.Errorf("end: %v", k)
	}
	if _, err := in.NewInterp(2, paths); err == nil {
		t.Error("rank 2 of 2 accepted")
	}
}

// TestDeterministic expands twice — the second time reading ranks
// concurrently, in reverse — and compares every event.
func TestDeterministic(t *testing.T) {
	for _, name := range []string{"testdata/dumps.iop", "testdata/parabench.iop"} {
		p, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Ranks: 6, Params: map[string]string{"iterations": "3", "dumps": "2"}}
		cfg.Params = pickParams(p, cfg.Params)
		read := func(concurrent bool) map[uint32][]string {
			x, err := Expand(p, cfg)
			if err != nil {
				t.Fatal(err)
			}
			out := map[uint32][]string{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			ranks := x.Ranks()
			slices.Reverse(ranks)
			for _, r := range ranks {
				f := func() {
					s, _ := x.Rank(r)
					evs, err := trace.ReadAll(s)
					if err != nil {
						t.Error(err)
					}
					var lines []string
					for i := range evs {
						lines = append(lines, fmt.Sprintf("%s @%d+%d", evStr(&evs[i], x.Path), evs[i].Start, evs[i].Dur))
					}
					mu.Lock()
					out[r] = lines
					mu.Unlock()
				}
				if concurrent {
					wg.Go(f)
				} else {
					f()
				}
			}
			wg.Wait()
			return out
		}
		a, b := read(false), read(true)
		for r := range uint32(6) {
			if len(a[r]) == 0 || !slices.Equal(a[r], b[r]) {
				t.Errorf("%s rank %d: %d and %d events differ", name, r, len(a[r]), len(b[r]))
			}
		}
	}
}

func pickParams(p *Program, m map[string]string) map[string]string {
	out := map[string]string{}
	for _, pi := range p.Params() {
		if v, ok := m[pi.Name]; ok {
			out[pi.Name] = v
		}
	}
	return out
}

func TestParamsAndMeta(t *testing.T) {
	p := mustCompile(t, `
param block = 1MiB
param total = 4 * block
param T = 60s
param dir = "/tmp"
param on_ = true
group g = nranks / 2
`)
	if got := fmt.Sprint(p.Params()); !strings.Contains(got, "{total int 4 * block 3:7}") {
		t.Errorf("Params: %s", got)
	}
	x, err := Expand(p, Config{Ranks: 8, Params: map[string]string{"block": "2MiB", "T": "2 * 5s", "dir": "/scratch dir", "on_": "1 < 2"}})
	if err != nil {
		t.Fatal(err)
	}
	in := x.Instance()
	for name, want := range map[string]string{"block": "2097152", "total": "8388608", "T": "10s", "dir": `"/scratch dir"`, "on_": "true"} {
		if got, _ := in.Param(name); got != want {
			t.Errorf("%s = %s, want %s", name, got, want)
		}
	}
	m := x.Meta()
	if m.Ranks != 8 || m.Clock != "nominal" || !slices.Contains(m.Command, "T=2 * 5s") {
		t.Errorf("meta %+v", m)
	}
	if len(x.Ranks()) != 8 || x.Instance().Groups()[0].Size != 4 {
		t.Errorf("ranks %v groups %v", x.Ranks(), x.Instance().Groups())
	}
	if _, err := x.Rank(8); err == nil {
		t.Error("rank 8 of 8 accepted")
	}
}
