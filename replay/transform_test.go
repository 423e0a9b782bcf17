package replay

import (
	"bytes"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
	"github.com/iotrace/iotrace/trace/target"
)

func TestPatternNonZeroNonRepeating(t *testing.T) {
	p := NewPattern()
	c := p.Cursor(7)
	// 64 MiB of one stream in calls of odd sizes: no aligned 4 KiB block
	// repeats, and none is all zeros.
	stream := make([]byte, 0, 64<<20)
	for len(stream) < cap(stream) {
		n := min(cap(stream)-len(stream), 12345+len(stream)%7777)
		stream = append(stream, c.Next(n, 1)...)
	}
	seen := map[[32]byte]int{}
	zero := make([]byte, 4096)
	for off := 0; off+4096 <= len(stream); off += 4096 {
		blk := stream[off : off+4096]
		if bytes.Equal(blk, zero) {
			t.Fatalf("block at %d is all zeros", off)
		}
		var key [32]byte
		copy(key[:], blk)
		if prev, ok := seen[key]; ok && bytes.Equal(stream[prev:prev+4096], blk) {
			t.Fatalf("block at %d repeats the block at %d", off, prev)
		}
		seen[key] = off
	}
	// The stream continues across the period: byte i equals byte
	// i+PatternPeriod.
	if !bytes.Equal(stream[:1000], stream[PatternPeriod:PatternPeriod+1000]) {
		t.Fatal("the stream is not periodic with PatternPeriod")
	}
	// Different ranks start at different places.
	a, b := p.Cursor(1), p.Cursor(2)
	if bytes.Equal(a.Next(4096, 1), b.Next(4096, 1)) {
		t.Fatal("two cursors give the same bytes")
	}
	// Aligned slices for O_DIRECT.
	d := p.Cursor(3)
	for i := 0; i < 10; i++ {
		s := d.Next(4096*(i+1)+100, DirectAlign)
		if addr := sliceAddr(s); addr%DirectAlign != 0 {
			t.Fatalf("aligned slice at %#x", addr)
		}
	}
	// Large requests are cut at PatternChunk.
	if n := len(c.Next(PatternChunk*2, 1)); n != PatternChunk {
		t.Fatalf("slice of %d bytes, want %d", n, PatternChunk)
	}
}

// Slices longer than the period (a file prepared in PatternChunk steps)
// keep the stream going: the cursor wraps by the whole period count.
func TestPatternLongSlices(t *testing.T) {
	p := NewPattern()
	c := p.Cursor(5)
	ref := p.Cursor(5)
	var want []byte
	for i := 0; i < 5; i++ {
		got := c.Next(PatternChunk, 1)
		for len(want) < len(got) {
			want = append(want, ref.Next(4096, 1)...)
		}
		if !bytes.Equal(got, want[:len(got)]) {
			t.Fatalf("slice %d differs from the stream", i)
		}
		want = want[len(got):]
	}
}

func TestSplitOrders(t *testing.T) {
	const kb = 1024
	e := trace.Event{Op: trace.OpPwrite, FD: 3, Offset: 10 * kb, Size: 100 * kb, Ret: 100 * kb, Start: 1000, Dur: 800}
	for _, order := range []string{"first", "random", "hash"} {
		for _, rank := range []uint32{0, 1, 5} {
			sp := Split{Size: 16 * kb, Order: order, Servers: 4, Stripe: 32 * kb, Seed: 9}
			s := newSplitter(sp, rank)
			out := s.split(&e, nil)
			// The blocks cover the request exactly once, never cross a
			// block or stripe boundary, and sum to the result.
			var cover []int64
			var bytesOut int64
			for _, p := range out {
				if p.Op != trace.OpPwrite || p.Size > 16*kb {
					t.Fatalf("%s: piece %+v", order, p)
				}
				if p.Offset/(16*kb) != (p.Offset+p.Size-1)/(16*kb) {
					t.Fatalf("%s: piece at %d+%d crosses a block boundary", order, p.Offset, p.Size)
				}
				cover = append(cover, p.Offset)
				bytesOut += p.Ret
			}
			if bytesOut != e.Ret {
				t.Fatalf("%s: pieces move %d bytes, want %d", order, bytesOut, e.Ret)
			}
			sorted := slices.Clone(cover)
			slices.Sort(sorted)
			want := []int64{10 * kb, 16 * kb, 32 * kb, 48 * kb, 64 * kb, 80 * kb, 96 * kb}
			if !slices.Equal(sorted, want) {
				t.Fatalf("%s: pieces at %v, want %v", order, sorted, want)
			}
			server := func(off int64) int { return int(off / (32 * kb) % 4) }
			switch order {
			case "first":
				if !slices.Equal(cover, want) {
					t.Fatalf("first: order %v, want file order", cover)
				}
			case "hash":
				// Step j goes to server (rank + j) mod 4, skipping servers
				// without blocks left.
				var srvs []int
				for _, off := range cover {
					srvs = append(srvs, server(off))
				}
				left := map[int]int{}
				for _, off := range want {
					left[server(off)]++
				}
				j := 0
				for _, got := range srvs {
					for left[(int(rank)+j)%4] == 0 {
						j++
					}
					if exp := (int(rank) + j) % 4; got != exp {
						t.Fatalf("hash rank %d: servers %v, step %d went to %d, want %d", rank, srvs, j, got, exp)
					}
					left[got]--
					j++
				}
			case "random":
				// Within one server, blocks keep file order.
				last := map[int]int64{}
				for _, off := range cover {
					if prev, ok := last[server(off)]; ok && off < prev {
						t.Fatalf("random: server %d gets %d after %d", server(off), off, prev)
					}
					last[server(off)] = off
				}
			}
			// Pieces share the call's time.
			if out[0].Start != e.Start || out[len(out)-1].Start >= e.End() {
				t.Fatalf("%s: piece times %d…%d outside the call", order, out[0].Start, out[len(out)-1].Start)
			}
		}
	}
	// Random order differs between seeds (a permutation, not file order).
	s1 := newSplitter(Split{Size: kb, Order: "random", Servers: 8, Stripe: kb, Seed: 1}, 0)
	big := trace.Event{Op: trace.OpPwrite, Size: 64 * kb, Ret: 64 * kb}
	var offs []int64
	for _, p := range s1.split(&big, nil) {
		offs = append(offs, p.Offset)
	}
	if slices.IsSorted(offs) {
		t.Fatal("random order of 64 blocks over 8 servers is file order")
	}
	// Individual writes become pwrites followed by a seek to where the
	// write left the position.
	wr := trace.Event{Op: trace.OpWrite, FD: 4, Offset: 0, Size: 4 * kb, Ret: 4 * kb}
	out := newSplitter(Split{Size: kb, Order: "hash", Servers: 2, Stripe: kb}, 1).split(&wr, nil)
	if len(out) != 5 || out[0].Op != trace.OpPwrite || out[4].Op != trace.OpLseek || out[4].Offset != 4*kb {
		t.Fatalf("split write: %+v", out)
	}
	// Small calls and failed calls pass unchanged.
	small := trace.Event{Op: trace.OpPread, Size: 100, Ret: 100}
	if out := newSplitter(Split{Size: kb, Order: "first", Servers: 1, Stripe: kb}, 0).split(&small, nil); len(out) != 1 || out[0] != small {
		t.Fatalf("small call: %+v", out)
	}
}

func sliceAddr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

func collect(t *testing.T, tr trace.Trace, r uint32) []trace.Event {
	t.Helper()
	src, err := tr.Rank(r)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := trace.ReadAll(src)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestTransformStages(t *testing.T) {
	m := trace.NewMemTrace()
	f0, f1, sh := m.Paths.Intern("/o/ckpt.0"), m.Paths.Intern("/o/ckpt.1"), m.Paths.Intern("/o/shared.dat")
	for r := uint32(0); r < 2; r++ {
		own := []trace.PathID{f0, f1}[r]
		m.Add(
			trace.Event{Rank: r, Op: trace.OpOpen, Path: own, Flags: trace.OWronly | trace.OCreat | trace.OTrunc, Ret: 3, FD: 3},
			trace.Event{Rank: r, Op: trace.OpWrite, FD: 3, Offset: 0, Size: 3000, Ret: 3000},
			trace.Event{Rank: r, Op: trace.OpWrite, FD: 3, Offset: 3000, Size: 3000, Ret: 3000},
			trace.Event{Rank: r, Op: trace.OpClose, FD: 3},
			trace.Event{Rank: r, Op: trace.OpMPIBarrier},
			trace.Event{Rank: r, Op: trace.OpOpen, Path: sh, Flags: trace.ORdwr, Ret: 4, FD: 4},
			trace.Event{Rank: r, Op: trace.OpPread, FD: 4, Offset: int64(r) * 5000, Size: 5000, Ret: 5000},
			trace.Event{Rank: r, Op: trace.OpStat, Path: sh},
			trace.Event{Rank: r, Op: trace.OpClose, FD: 4},
		)
	}
	t.Run("subset and filter", func(t *testing.T) {
		x, err := Transforms{Ranks: []uint32{1}, Ops: []string{"read"}, SkipOps: []string{"close"}}.Apply(m)
		if err != nil {
			t.Fatal(err)
		}
		if rs := x.Ranks(); !slices.Equal(rs, []uint32{1}) {
			t.Fatalf("ranks %v", rs)
		}
		var ops []string
		for _, e := range collect(t, x, 1) {
			ops = append(ops, e.Op.String())
		}
		if got := ops; !slices.Equal(got, []string{"open", "open", "pread"}) {
			t.Fatalf("ops %v: want opens (descriptor calls stay) and the read, no close", got)
		}
		if _, err := (Transforms{Ranks: []uint32{7}}).Apply(m); err == nil {
			t.Fatal("subset of absent ranks: no error")
		}
		if _, err := (Transforms{Ops: []string{"nosuchop"}}).Apply(m); err == nil {
			t.Fatal("unknown op: no error")
		}
	})
	t.Run("scale and align", func(t *testing.T) {
		x, err := Transforms{ScaleSize: 2, Align: 4096}.Apply(m)
		if err != nil {
			t.Fatal(err)
		}
		evs := collect(t, x, 1)
		w := evs[2] // write at 3000, 3000 bytes → 6000+6000 → aligned 4096..12288
		if w.Offset != 4096 || w.Size != 8192 || w.Ret != 8192 {
			t.Fatalf("scaled, aligned write: offset %d size %d ret %d", w.Offset, w.Size, w.Ret)
		}
		rd := evs[6] // pread at 5000 of 5000 → 10000+10000 → 8192..20480
		if rd.Offset != 8192 || rd.Size != 12288 {
			t.Fatalf("scaled, aligned read: offset %d size %d", rd.Offset, rd.Size)
		}
	})
	t.Run("scale and align copies and allocations", func(t *testing.T) {
		c := trace.NewMemTrace()
		in, out := c.Paths.Intern("/o/in"), c.Paths.Intern("/o/out")
		c.Add(
			trace.Event{Op: trace.OpOpen, Path: in, Flags: trace.ORdonly, Ret: 3},
			trace.Event{Op: trace.OpOpen, Path: out, Flags: trace.OWronly | trace.OCreat, Ret: 4},
			trace.Event{Op: trace.OpCopyFileRange, FD: 3, FD2: 4, Path: in, Path2: out, Offset: 3000, Offset2: 5000, Size: 1000, Ret: 1000},
			trace.Event{Op: trace.OpFallocate, FD: 4, Path: out, Offset: 3000, Size: 3000},
		)
		x, err := Transforms{ScaleSize: 2, Align: 4096}.Apply(c)
		if err != nil {
			t.Fatal(err)
		}
		evs := collect(t, x, 0)
		cp := evs[2] // 6000 → 10000, 2000 bytes → 4096 → 8192, 4096 bytes
		if cp.Offset != 4096 || cp.Offset2 != 8192 || cp.Size != 4096 || cp.Ret != 4096 {
			t.Errorf("scaled, aligned copy: offsets %d, %d size %d ret %d", cp.Offset, cp.Offset2, cp.Size, cp.Ret)
		}
		fa := evs[3] // 6000..12000 → 4096..12288
		if fa.Offset != 4096 || fa.Size != 8192 {
			t.Errorf("scaled, aligned fallocate: offset %d size %d", fa.Offset, fa.Size)
		}
	})
	t.Run("file per process to shared", func(t *testing.T) {
		x, err := Transforms{Layout: "shared"}.Apply(m)
		if err != nil {
			t.Fatal(err)
		}
		for r := uint32(0); r < 2; r++ {
			evs := collect(t, x, r)
			if p := x.Path(evs[0].Path); p != "/o/ckpt.shared" {
				t.Fatalf("rank %d opens %q, want /o/ckpt.shared", r, p)
			}
			if evs[0].Flags&trace.OTrunc != 0 {
				t.Fatal("shared open keeps O_TRUNC")
			}
			shift := int64(r) * regionAlign
			if evs[1].Op != trace.OpPwrite || evs[1].Offset != shift || evs[2].Offset != shift+3000 {
				t.Fatalf("rank %d writes: %v at %d, %v at %d; want pwrites at %d, %d", r, evs[1].Op, evs[1].Offset, evs[2].Op, evs[2].Offset, shift, shift+3000)
			}
			if p := x.Path(evs[5].Path); p != "/o/shared.dat" {
				t.Fatalf("a file both ranks use changed: %q", p)
			}
		}
	})
	t.Run("shared to file per process", func(t *testing.T) {
		x, err := Transforms{Layout: "fpp"}.Apply(m)
		if err != nil {
			t.Fatal(err)
		}
		for r := uint32(0); r < 2; r++ {
			evs := collect(t, x, r)
			want := map[uint32]string{0: "/o/shared.dat.0", 1: "/o/shared.dat.1"}[r]
			if p := x.Path(evs[5].Path); p != want {
				t.Fatalf("rank %d opens %q, want %q", r, p, want)
			}
			if p := x.Path(evs[7].Path); p != want {
				t.Fatalf("rank %d stats %q, want %q", r, p, want)
			}
			if p := x.Path(evs[0].Path); p != []string{"/o/ckpt.0", "/o/ckpt.1"}[r] {
				t.Fatalf("a file of one rank changed: %q", p)
			}
		}
	})
	t.Run("split", func(t *testing.T) {
		x, err := Transforms{Split: Split{Size: 1000}}.Apply(m)
		if err != nil {
			t.Fatal(err)
		}
		evs := collect(t, x, 0)
		var writes, reads int
		for _, e := range evs {
			switch e.Op {
			case trace.OpWrite:
				writes++
			case trace.OpPread:
				reads++
			}
		}
		// 3000 bytes at 0 → 3 blocks; 3000 at 3000 → 3000-4000-5000-6000: 3; 5000 at 0 → 5.
		if writes != 6 || reads != 5 {
			t.Fatalf("%d writes, %d reads after splitting; want 6, 5", writes, reads)
		}
	})
}

func TestPlanPrepare(t *testing.T) {
	m := trace.NewMemTrace()
	in, out, made, gone, dir := m.Paths.Intern("/d/in/input.dat"), m.Paths.Intern("/d/out/result"), m.Paths.Intern("/d/made"), m.Paths.Intern("/d/missing"), m.Paths.Intern("/d/newdir")
	log, dev := m.Paths.Intern("/d/app.log"), m.Paths.Intern("/dev/null")
	m.Add(
		trace.Event{Op: trace.OpOpen, Path: in, Flags: trace.ORdonly, Ret: 3, Start: 10},
		trace.Event{Op: trace.OpRead, FD: 3, Offset: 0, Size: 4096, Ret: 4096, Start: 20},
		trace.Event{Op: trace.OpDup, FD: 3, Ret: 5, Start: 25},
		trace.Event{Op: trace.OpPread, FD: 5, Offset: 100000, Size: 4096, Ret: 2000, Start: 30},
		trace.Event{Op: trace.OpClose, FD: 3, Start: 40},
		trace.Event{Op: trace.OpOpen, Path: out, Flags: trace.OWronly | trace.OCreat | trace.OTrunc, Ret: 3, Start: 50},
		trace.Event{Op: trace.OpWrite, FD: 3, Size: 10, Ret: 10, Start: 60},
		trace.Event{Op: trace.OpOpen, Path: made, Flags: trace.ORdwr | trace.OCreat | trace.OExcl, Ret: 6, Start: 70},
		trace.Event{Op: trace.OpPread, FD: 6, Offset: 0, Size: 10, Ret: 10, Start: 80},
		trace.Event{Op: trace.OpStat, Path: gone, Ret: -2, Start: 90},
		trace.Event{Op: trace.OpMkdir, Path: dir, Ret: 0, Start: 100},
		trace.Event{Op: trace.OpOpen, Path: log, Flags: trace.OWronly | trace.OAppend, Ret: 7, Start: 110},
		trace.Event{Op: trace.OpLseek, FD: 7, Whence: 2, Offset: 0, Ret: 777, Start: 115},
		trace.Event{Op: trace.OpOpen, Path: dev, Flags: trace.OWronly, Ret: 8, Start: 120},
	)
	m.Add(trace.Event{Rank: 1, Op: trace.OpMPIBarrier, Comm: 5})
	p, err := makePlan(m, nil, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []target.PrepFile{{Path: "app.log", Size: 777}, {Path: "in/input.dat", Size: 102000}}
	if !slices.Equal(p.Files, want) {
		t.Fatalf("files %+v, want %+v", p.Files, want)
	}
	if !slices.Equal(p.Dirs, []string{"in", "out"}) {
		t.Fatalf("dirs %v, want in, out (not newdir, which the trace makes)", p.Dirs)
	}
	if p.Events != 15 || len(p.PerRank) != 2 || p.PerRank[0].Ops[trace.OpOpen] != 5 {
		t.Fatalf("counts: %d events, per rank %+v", p.Events, p.PerRank)
	}
	if g := p.Groups[5]; !slices.Equal(g, []uint32{1}) {
		t.Fatalf("communicator 5: members %v", g)
	}
	var special bool
	for _, e := range p.Paths {
		if e.Trace == "/dev/null" {
			special = e.Note == target.NoteSpecial && e.Target == ""
		}
	}
	if !special {
		t.Fatalf("/dev/null not marked special: %+v", p.Paths)
	}
	// An exporter's analysis without a replay finds the same layout.
	l, err := target.Analyze(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l.Files, p.Files) || !slices.Equal(l.Dirs, p.Dirs) || !slices.Equal(l.Paths, p.Paths) || l.Prefix != p.Prefix {
		t.Fatalf("target.Analyze: %+v, want the plan's %+v", l, p.Layout)
	}
}

// TestPlanPreparesOnlyWhatTheTraceFinds: a file the trace creates and
// then reads back is not prepared, whether it is created with O_CREAT
// (without O_TRUNC) or MPI_MODE_CREATE, and whatever the clocks of the
// ranks that write and read it say (they are ordered by the barrier);
// a file the trace reads without writing it first is, with the size its
// reads need, and so is a file read before the trace rewrites it.
func TestPlanPreparesOnlyWhatTheTraceFinds(t *testing.T) {
	m := trace.NewMemTrace()
	const MiB = 1 << 20
	shared, log, input, restart, probed := m.Paths.Intern("/r/shared.dat"), m.Paths.Intern("/r/log"),
		m.Paths.Intern("/r/input"), m.Paths.Intern("/r/restart"), m.Paths.Intern("/r/probed")
	m.Add(
		// Rank 0 creates shared.dat and writes its first MiB, after 5 s.
		trace.Event{Rank: 0, Op: trace.OpMPIFileOpen, Path: shared, FD: 1, Flags: trace.MPIModeCreate | trace.MPIModeRdwr, Start: 5e9},
		trace.Event{Rank: 0, Op: trace.OpMPIFileWriteAt, FD: 1, Offset: 0, Size: MiB, Ret: MiB, Start: 5e9 + 10},
		trace.Event{Rank: 0, Op: trace.OpMPIBarrier, Start: 6e9},
		// Rank 1, whose clock is behind, reads it after the barrier.
		trace.Event{Rank: 1, Op: trace.OpMPIFileOpen, Path: shared, FD: 1, Flags: trace.MPIModeCreate | trace.MPIModeRdwr, Start: 1},
		trace.Event{Rank: 1, Op: trace.OpMPIBarrier, Start: 2},
		trace.Event{Rank: 1, Op: trace.OpMPIFileReadAt, FD: 1, Offset: 0, Size: MiB, Ret: MiB, Start: 3},
		// A log made with O_CREAT (no O_TRUNC), written, read back.
		trace.Event{Rank: 1, Op: trace.OpOpen, Path: log, Flags: trace.ORdwr | trace.OCreat, Ret: 3, Start: 10},
		trace.Event{Rank: 1, Op: trace.OpPwrite, FD: 3, Offset: 0, Size: 4096, Ret: 4096, Start: 11},
		trace.Event{Rank: 1, Op: trace.OpPread, FD: 3, Offset: 0, Size: 4096, Ret: 4096, Start: 12},
		// An input opened with O_CREAT but only read: it existed.
		trace.Event{Rank: 1, Op: trace.OpOpen, Path: input, Flags: trace.ORdwr | trace.OCreat, Ret: 4, Start: 20},
		trace.Event{Rank: 1, Op: trace.OpPread, FD: 4, Offset: MiB, Size: MiB, Ret: MiB, Start: 21},
		// A restart file read (3 MiB), then rewritten larger and read back.
		trace.Event{Rank: 1, Op: trace.OpOpen, Path: restart, Flags: trace.ORdonly, Ret: 5, Start: 30},
		trace.Event{Rank: 1, Op: trace.OpRead, FD: 5, Offset: 0, Size: 3 * MiB, Ret: 3 * MiB, Start: 31},
		trace.Event{Rank: 1, Op: trace.OpClose, FD: 5, Start: 32},
		trace.Event{Rank: 1, Op: trace.OpOpen, Path: restart, Flags: trace.ORdwr | trace.OCreat | trace.OTrunc, Ret: 5, Start: 33},
		trace.Event{Rank: 1, Op: trace.OpWrite, FD: 5, Offset: 0, Size: 8 * MiB, Ret: 8 * MiB, Start: 34},
		trace.Event{Rank: 1, Op: trace.OpPread, FD: 5, Offset: 0, Size: 8 * MiB, Ret: 8 * MiB, Start: 35},
		// Found by stat, then created anew: it must exist, empty will do.
		trace.Event{Rank: 1, Op: trace.OpStat, Path: probed, Start: 40},
		trace.Event{Rank: 1, Op: trace.OpCreat, Path: probed, Ret: 6, Start: 41},
		trace.Event{Rank: 1, Op: trace.OpWrite, FD: 6, Offset: 0, Size: 100, Ret: 100, Start: 42},
	)
	p, err := makePlan(m, nil, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []target.PrepFile{{Path: "input", Size: 2 * MiB}, {Path: "probed", Size: 0}, {Path: "restart", Size: 3 * MiB}}
	if !slices.Equal(p.Files, want) {
		t.Fatalf("files %+v, want %+v", p.Files, want)
	}
}

// TestPlanSkipsKernelObjects: a trace that opens and uses what its tracer
// named a pipe, a socket or a memfd prepares no file for them, and the
// replay skips those calls with their own reason.
func TestPlanSkipsKernelObjects(t *testing.T) {
	m := trace.NewMemTrace()
	pipe, sock, memfd, data := m.Paths.Intern("pipe:[77]"), m.Paths.Intern("socket:[78]"),
		m.Paths.Intern("/memfd:shm (deleted)"), m.Paths.Intern("/scratch/job/in.dat")
	m.Add(
		trace.Event{Op: trace.OpOpen, Path: pipe, Flags: trace.OWronly, Ret: 3},
		trace.Event{Op: trace.OpWrite, FD: 3, Path: pipe, Size: 10, Ret: 10, Start: 1},
		trace.Event{Op: trace.OpOpen, Path: sock, Flags: trace.ORdwr, Ret: 4, Start: 2},
		trace.Event{Op: trace.OpRead, FD: 4, Path: sock, Offset: 0, Size: 10, Ret: 10, Start: 3},
		trace.Event{Op: trace.OpOpen, Path: memfd, Flags: trace.ORdwr, Ret: 5, Start: 4},
		trace.Event{Op: trace.OpPread, FD: 5, Offset: 0, Size: 4096, Ret: 4096, Start: 5},
		trace.Event{Op: trace.OpStat, Path: memfd, Start: 6},
		trace.Event{Op: trace.OpOpen, Path: data, Flags: trace.ORdonly, Ret: 6, Start: 7},
		trace.Event{Op: trace.OpPread, FD: 6, Offset: 0, Size: 100, Ret: 100, Start: 8},
	)
	p, err := makePlan(m, nil, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := []target.PrepFile{{Path: "in.dat", Size: 100}}; !slices.Equal(p.Files, want) || len(p.Dirs) != 0 {
		t.Fatalf("files %+v, dirs %v; want %+v and no directory", p.Files, p.Dirs, want)
	}
	if p.Prefix != "/scratch/job" {
		t.Errorf("prefix %q, want /scratch/job", p.Prefix)
	}
	for _, s := range []string{"pipe:[77]", "socket:[78]", "/memfd:shm (deleted)"} {
		if rel, skip := p.mapPath(s); rel != "" || skip != SkipKernelObject {
			t.Errorf("%s: mapped to %q, skip %v", s, rel, skip)
		}
	}
}

// TestPlanFollowsDescriptorsAsTheTraceDoes: the plan learns descriptors
// as trace/state does — fopen's descriptor (its result is a
// stream), close_range that only sets close-on-exec — so the reads on
// them size the files they need.
func TestPlanFollowsDescriptorsAsTheTraceDoes(t *testing.T) {
	m := trace.NewMemTrace()
	cfg, data := m.Paths.Intern("/s/config"), m.Paths.Intern("/s/data")
	m.Add(
		trace.Event{Op: trace.OpFopen, Path: cfg, Flags: trace.ORdonly, FD: 7, Ret: 0x55d0a8c0, Start: 1},
		trace.Event{Op: trace.OpFread, FD: 7, Offset: 0, Size: 8192, Ret: 8192, Start: 2},
		trace.Event{Op: trace.OpOpen, Path: data, Flags: trace.ORdonly, Ret: 3, Start: 3},
		trace.Event{Op: trace.OpCloseRange, FD: 0, Size: 10, Flags: trace.CloseRangeCloexec, Start: 4},
		trace.Event{Op: trace.OpPread, FD: 3, Offset: 1000, Size: 100, Ret: 100, Start: 5},
	)
	p, err := makePlan(m, nil, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []target.PrepFile{{Path: "config", Size: 8192}, {Path: "data", Size: 1100}}
	if !slices.Equal(p.Files, want) {
		t.Fatalf("files %+v, want %+v", p.Files, want)
	}
}

// TestPlanFollowsTheNamespace: the plan prepares names where they were
// before the trace, following renames of files and directories, links
// and removals, and nothing the trace made itself (the issue: "mkdir d;
// write d/f; rename d e; read e/f" failed with "prepare e/f: no such file
// or directory"; a git trace that removed a lock before it made it
// aborted the prepare phase).
func TestPlanFollowsTheNamespace(t *testing.T) {
	m := trace.NewMemTrace()
	p := m.Paths.Intern
	rw := uint32(trace.ORdwr | trace.OCreat | trace.OTrunc)
	m.Add(
		trace.Event{Op: trace.OpMkdir, Path: p("/w/d"), Start: 1},
		trace.Event{Op: trace.OpOpen, Path: p("/w/d/f"), Flags: rw, Ret: 3, Start: 2},
		trace.Event{Op: trace.OpWrite, FD: 3, Size: 10, Ret: 10, Start: 3},
		trace.Event{Op: trace.OpClose, FD: 3, Start: 4},
		trace.Event{Op: trace.OpRename, Path: p("/w/d"), Path2: p("/w/e"), Start: 5},
		trace.Event{Op: trace.OpOpen, Path: p("/w/e/f"), Ret: 3, Start: 6},
		trace.Event{Op: trace.OpRead, FD: 3, Size: 100, Ret: 10, Start: 7},
		trace.Event{Op: trace.OpClose, FD: 3, Start: 8},
		// git: a lock removed before it is made, made, linked, removed.
		trace.Event{Op: trace.OpUnlink, Path: p("/w/.git/index.lock"), Ret: -2, Start: 10},
		trace.Event{Op: trace.OpOpen, Path: p("/w/.git/index.lock"), Flags: rw | trace.OExcl, Ret: 3, Start: 11},
		trace.Event{Op: trace.OpWrite, FD: 3, Size: 70, Ret: 70, Start: 12},
		trace.Event{Op: trace.OpClose, FD: 3, Start: 13},
		trace.Event{Op: trace.OpMkdir, Path: p("/w/.git/objects/ab"), Start: 14},
		trace.Event{Op: trace.OpLink, Path: p("/w/.git/index.lock"), Path2: p("/w/.git/objects/ab/cd"), Start: 15},
		trace.Event{Op: trace.OpUnlink, Path: p("/w/.git/index.lock"), Start: 16},
		// An input directory renamed away, then a file in it read.
		trace.Event{Op: trace.OpRename, Path: p("/w/in"), Path2: p("/w/old"), Start: 20},
		trace.Event{Op: trace.OpOpen, Path: p("/w/old/x"), Ret: 3, Start: 21},
		trace.Event{Op: trace.OpPread, FD: 3, Offset: 100, Size: 50, Ret: 50, Start: 22},
	)
	pl, err := makePlan(m, nil, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := []target.PrepFile{{Path: "in/x", Size: 150}}; !slices.Equal(pl.Files, want) {
		t.Errorf("files %+v, want %+v", pl.Files, want)
	}
	if want := []string{".git", "in", ".git/objects"}; !slices.Equal(pl.Dirs, want) {
		t.Errorf("dirs %v, want %v", pl.Dirs, want)
	}
	if pl.Anomalies != 0 {
		t.Errorf("%d anomalies", pl.Anomalies)
	}
}

// TestSplitStreams: a request of 1 TiB split at 64 KiB is 16 million
// blocks (the most one request makes), made as they are read, in
// constant memory; one of 2^62 bytes at 4 KiB (2^50 blocks) is one error.
func TestSplitStreams(t *testing.T) {
	m := trace.NewMemTrace()
	m.Add(trace.Event{Op: trace.OpPwrite, FD: 3, Offset: 0, Size: 1 << 40, Ret: 1 << 40, Dur: 1000})
	tr, err := (Transforms{Split: Split{Size: 64 << 10, Order: "hash", Servers: 4, Stripe: 1 << 20}}).Apply(m)
	if err != nil {
		t.Fatal(err)
	}
	src, _ := tr.Rank(0)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	buf := make([]trace.Event, 1024)
	var n, bytes int64
	for {
		k, err := src.ReadEvents(buf)
		for _, e := range buf[:k] {
			bytes += e.Size
		}
		n += int64(k)
		if err != nil {
			break
		}
	}
	runtime.ReadMemStats(&after)
	if n != 1<<24 || bytes != 1<<40 {
		t.Fatalf("%d blocks of %d bytes in all, want %d of %d", n, bytes, 1<<24, 1<<40)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("splitting allocated %d bytes", grew)
	}
	m = trace.NewMemTrace()
	m.Add(trace.Event{Op: trace.OpPwrite, FD: 3, Offset: 0, Size: 1 << 62, Ret: 1 << 62})
	tr, _ = (Transforms{Split: Split{Size: 4096, Order: "first", Servers: 1, Stripe: 4096}}).Apply(m)
	src, _ = tr.Rank(0)
	if _, err := src.ReadEvents(buf); err == nil || !strings.Contains(err.Error(), "more than 16777216; split larger") {
		t.Fatalf("a request of 2^50 blocks: %v", err)
	}
}

// TestTransformPathsAndWindow checks the path and time selectors of a
// replay: the calls on descriptors of a chosen file stay with their open,
// those of other files go with theirs; outside the window only the calls
// that manage descriptors and the process events stay.
func TestTransformPathsAndWindow(t *testing.T) {
	m := trace.NewMemTrace()
	d, u := m.Paths.Intern("/data/x"), m.Paths.Intern("/usr/lib/y")
	m.Add(
		trace.Event{Op: trace.OpOpen, Path: d, Ret: 3, Start: 0},
		trace.Event{Op: trace.OpOpen, Path: u, Ret: 4, Start: 1},
		trace.Event{Op: trace.OpRead, FD: 4, Size: 10, Ret: 10, Start: 2},
		trace.Event{Op: trace.OpWrite, FD: 3, Size: 10, Ret: 10, Start: 3},
		trace.Event{Op: trace.OpFork, Ret: 1, Start: 4},
		trace.Event{Op: trace.OpWrite, FD: 3, Size: 10, Ret: 10, Start: 50},
		trace.Event{Op: trace.OpClose, FD: 3, Start: 60},
	)
	ops := func(tf Transforms) []trace.Op {
		x, err := tf.Apply(m)
		if err != nil {
			t.Fatal(err)
		}
		src, _ := x.Rank(0)
		evs, _ := trace.ReadAll(src)
		var out []trace.Op
		for _, e := range evs {
			out = append(out, e.Op)
		}
		return out
	}
	excl, _ := filter.NewPaths(nil, []string{"/usr"}, false)
	if got, want := ops(Transforms{Paths: excl}), []trace.Op{trace.OpOpen, trace.OpWrite, trace.OpFork, trace.OpWrite, trace.OpClose}; !slices.Equal(got, want) {
		t.Errorf("--exclude /usr: %v, want %v", got, want)
	}
	if got, want := ops(Transforms{Window: filter.Window{From: 10}}), []trace.Op{trace.OpOpen, trace.OpOpen, trace.OpFork, trace.OpWrite, trace.OpClose}; !slices.Equal(got, want) {
		t.Errorf("--time 10ns: : %v, want %v", got, want)
	}
}

// TestValidateWithoutOpsAllocatesNothing: the options of a replay without
// --op or --skip-op are checked without making an op set (8 KiB of fresh
// memory each, for a list with nothing to check), as every replay does
// two or three times before its first call.
func TestValidateWithoutOpsAllocatesNothing(t *testing.T) {
	tf := Transforms{ScaleSize: 1}
	if n := testing.AllocsPerRun(10, func() {
		if err := tf.Validate(); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Validate allocates %v times per call", n)
	}
	bad := Transforms{SkipOps: []string{"nosuchcall"}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "--skip-op") {
		t.Errorf("Validate with an unknown op: %v", err)
	}
}
