package format

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// A replay keeps one source open per rank, thousands of them, while only
// a few decode at a time: what a source keeps between two reads must not
// include the scratch of a decode (column values of a whole batch).
func TestOpenSourcesKeepLittle(t *testing.T) {
	const ranks, perRank = 256, 3000
	paths := trace.NewPaths()
	byRank := map[uint32][]trace.Event{}
	for r := uint32(0); r < ranks; r++ {
		p := paths.Intern("/bench/rank" + itoa(int64(r)))
		evs := make([]trace.Event, perRank)
		for i := range evs {
			evs[i] = trace.Event{Op: trace.OpPwrite, Rank: r, Start: int64(i) * 2000, Dur: 1000 + int64(i%7),
				Path: p, FD: 3, Offset: int64(i) * 4096, Size: 4096, Ret: 4096}
			if i%100 == 99 {
				evs[i] = trace.Event{Op: trace.OpMPIBarrier, Rank: r, Start: int64(i) * 2000, Dur: 500, Comm: 0}
			}
		}
		byRank[r] = evs
	}
	data := writeTrace(t, Options{BlockEvents: 4096}, byRank, paths)
	rd, err := NewReader(bytes.NewReader(data), int64(len(data)), "mem.iot", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	buf := make([]trace.Event, trace.BatchSize)
	srcs := make([]trace.Source, 0, ranks)
	before := heap()
	for _, r := range rd.Ranks() {
		src, err := rd.Rank(r)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := src.ReadEvents(buf); err != nil || n != trace.BatchSize {
			t.Fatalf("rank %d: read %d events, %v", r, n, err)
		}
		srcs = append(srcs, src)
	}
	per := (heap() - before) / ranks
	runtime.KeepAlive(srcs)
	// The block itself (its columns, decompressed) stays with its source:
	// a few KiB here. The values of a batch of 1,024 events would be 8 KiB
	// per column present, over 40 KiB.
	t.Logf("%d bytes per open source", per)
	if per > 24<<10 {
		t.Errorf("an open source keeps %d bytes between reads; want under 24 KiB", per)
	}
}

// The same for writers: a replay keeps one per rank, and what a writer
// keeps between two blocks must not include the scratch of encoding one
// (the dictionary's table of counts alone is 256 KiB).
func TestOpenWritersKeepLittle(t *testing.T) {
	const ranks, perRank = 256, 600
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	var buf bytes.Buffer
	w, err := NewWriterOptions(&buf, trace.Meta{Creator: "t", Ranks: ranks}, Options{BlockEvents: 512})
	if err != nil {
		t.Fatal(err)
	}
	evs := make([]trace.Event, perRank)
	before := heap()
	for r := uint32(0); r < ranks; r++ {
		rw := w.Rank(r)
		p := rw.Intern("/bench/rank" + itoa(int64(r)))
		for i := range evs {
			// Measured-looking durations under 65,536 ns: the
			// dictionary layout's counts are used.
			evs[i] = trace.Event{Op: trace.OpPwrite, Rank: r, Start: int64(i) * 5000, Dur: 1000 + int64(i*7919%40000),
				Path: p, FD: 3, Offset: int64(i) * 4096, Size: 4096, Ret: 4096}
		}
		if err := rw.WriteEvents(evs); err != nil { // a block of 512 is encoded, 88 events wait
			t.Fatal(err)
		}
	}
	per := (heap() - before - uint64(buf.Len())) / ranks
	t.Logf("%d bytes per open writer", per)
	// What stays is the open block: its columns, with room for a block
	// of 512 events (about 70 KiB).
	if per > 128<<10 {
		t.Errorf("an open writer keeps %d bytes between blocks; want under 128 KiB", per)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestManyRanksKeepLittle: a writer of many ranks, written one after the
// other as a converter does (each a barrier and a write of its own file),
// keeps the encoders of at most maxOpenBlocks open blocks and, per rank,
// a few hundred bytes: 100,000 barrier-only ranks took 2.9 GB (an
// encoder's 53 KiB of chunk scratch per rank, and a table of every path
// id below the rank's own).
func TestManyRanksKeepLittle(t *testing.T) {
	const ranks = 20_000
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	var buf bytes.Buffer
	before := heap()
	w, err := NewWriter(&buf, trace.Meta{Creator: "t", Ranks: ranks})
	if err != nil {
		t.Fatal(err)
	}
	for r := uint32(0); r < ranks; r++ {
		rw := w.Rank(r)
		p := rw.Intern("/out/rank" + itoa(int64(r)))
		evs := []trace.Event{
			{Op: trace.OpMPIBarrier, Rank: r, Start: 10, Dur: 5},
			{Op: trace.OpPwrite, Rank: r, Start: 20, Dur: 5, Path: p, FD: 3, Size: 8, Ret: 8},
		}
		if err := rw.WriteEvents(evs); err != nil {
			t.Fatal(err)
		}
	}
	per := (heap() - before - uint64(buf.Cap())) / ranks
	t.Logf("%d bytes per rank before Close", per)
	if per > 2048 {
		t.Errorf("the writer keeps %d bytes per rank; want under 2 KiB", per)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rd, err := NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()), "many.iot", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rd.Ranks()); n != ranks {
		t.Fatalf("%d ranks read back", n)
	}
	for _, r := range []uint32{0, 1, ranks / 2, ranks - 1} {
		src, err := rd.Rank(r)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := trace.ReadAll(src)
		if err != nil || len(evs) != 2 || evs[1].Op != trace.OpPwrite || rd.Path(evs[1].Path) != "/out/rank"+itoa(int64(r)) {
			t.Fatalf("rank %d: %v %+v", r, err, evs)
		}
	}
}

// TestOpenBlocksEvicted: ranks written in turn, more of them than
// maxOpenBlocks, from several goroutines: the oldest open blocks are
// written early, and every rank reads back whole and in order.
func TestOpenBlocksEvicted(t *testing.T) {
	const ranks, rounds, workers = maxOpenBlocks + 700, 5, 4
	var buf bytes.Buffer
	w, err := NewWriter(&buf, trace.Meta{Creator: "t", Ranks: ranks})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, workers)
	for k := range workers {
		go func() {
			for i := range rounds {
				for r := uint32(k); r < ranks; r += workers {
					rw := w.Rank(r)
					p := rw.Intern("/f" + itoa(int64(r%50)))
					e := trace.Event{Op: trace.OpPwrite, Rank: r, Start: int64(i) * 100, Dur: 10, Path: p, FD: 3,
						Offset: int64(i) * 8, Size: 8, Ret: 8}
					if err := rw.WriteEvents([]trace.Event{e}); err != nil {
						done <- err
						return
					}
				}
			}
			done <- nil
		}()
	}
	for range workers {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if w.nopen > maxOpenBlocks+workers {
		t.Errorf("%d blocks open", w.nopen)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rd, err := NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()), "evict.iot", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rd.Ranks() {
		src, err := rd.Rank(r)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := trace.ReadAll(src)
		if err != nil || len(evs) != rounds {
			t.Fatalf("rank %d: %d events, %v", r, len(evs), err)
		}
		for i, e := range evs {
			if e.Offset != int64(i)*8 || rd.Path(e.Path) != "/f"+itoa(int64(r%50)) {
				t.Fatalf("rank %d event %d: %+v", r, i, e)
			}
		}
	}
}

// A file's path ids are shared by its ranks: with a path of each rank's
// own, a rank's ids are as large as the file's ranks. An open trace keeps
// the ids' translation in proportion to the paths each rank names, not
// to its ranks times its paths (10,000 ranks kept 209 MB).
func TestPathIDsPerRankKeepLittle(t *testing.T) {
	const ranks = 4000
	paths := trace.NewPaths()
	byRank := map[uint32][]trace.Event{}
	for r := uint32(0); r < ranks; r++ {
		p := paths.Intern("/bench/rank" + itoa(int64(r)))
		byRank[r] = []trace.Event{{Op: trace.OpPwrite, Rank: r, Dur: 1000, Path: p, FD: 3, Size: 4096, Ret: 4096}}
	}
	data := writeTrace(t, Options{}, byRank, paths)
	rd, err := NewReader(bytes.NewReader(data), int64(len(data)), "paths.iot", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, s := range rd.streams {
		kept += cap(s.remap) + len(s.remapM)
	}
	if kept > 64*ranks {
		t.Errorf("%d ranks of a path each keep %d path ids", ranks, kept)
	}
	// Every rank's path still reads as its own.
	buf := make([]trace.Event, 4)
	for _, r := range []uint32{0, 1, ranks / 2, ranks - 1} {
		src, err := rd.Rank(r)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := src.ReadEvents(buf); err != nil || n != 1 || rd.Paths().Lookup(buf[0].Path) != "/bench/rank"+itoa(int64(r)) {
			t.Errorf("rank %d: %d events (%v), path %q", r, n, err, rd.Paths().Lookup(buf[0].Path))
		}
	}
}
