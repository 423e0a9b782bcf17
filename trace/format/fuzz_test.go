package format

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// FuzzReader feeds arbitrary bytes to the reader, the salvaging reader and
// check: none may panic, and a reader that opens must read every rank to
// its end or to an error.
//
//	go test -run '^$' -fuzz '^FuzzReader$' -fuzztime 10m ./trace/format
//
// The fuzzer minimises every input that finds new code, for up to a
// minute (-fuzzminimizetime) and in time quadratic in its length, and
// counts none of those runs: with seeds of kilobytes it spent whole runs
// minimising (12 executions in 120 s). So the seeds are traces of a few
// events (a few hundred bytes: headers, a block or two, the index) and
// inputs over maxFuzzTrace bytes are not read, so that what the fuzzer
// keeps stays small and minimises in seconds.
func FuzzReader(f *testing.F) {
	for _, seed := range readerSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzTrace {
			return
		}
		readAnything(data)
		// Mutations almost never keep the CRCs right, so the decoders
		// behind them see little of the fuzzer's input: read it again with
		// its CRCs made to match.
		if fixed := fixCRCs(data); !bytes.Equal(fixed, data) {
			readAnything(fixed)
		}
	})
}

// maxFuzzTrace bounds the inputs FuzzReader reads.
const maxFuzzTrace = 512

// readerSeeds are small traces of every kind of block and column layout:
// events of every class with rare columns, several ranks, a block cut
// short, the workloads' first calls.
func readerSeeds(tb testing.TB) [][]byte {
	var seeds [][]byte
	paths := trace.NewPaths()
	a, b := paths.Intern("/a"), paths.Intern("rel/b")
	posix := map[uint32][]trace.Event{0: {
		{Op: trace.OpOpen, Path: a, Flags: trace.OWronly | trace.OCreat, Mode: 0o644, Ret: 3, Start: 10, Dur: 5},
		{Op: trace.OpPwrite, FD: 3, Offset: 4096, Size: 4096, Ret: 4096, Start: 20, Dur: 7},
		{Op: trace.OpRead, FD: 3, Size: 100, Ret: -5, Start: 30, Dur: 1},
		{Op: trace.OpRename, Path: a, Path2: b, Start: 40, Dur: 2},
	}}
	mpi := map[uint32][]trace.Event{5: {
		{Op: trace.OpMPISendrecv, Peer: 1, Tag: 7, Bytes: 64, Source: 1, RecvTag: 7, Flags: trace.RecvHalf, Start: 5, Dur: 3},
		{Op: trace.OpMPIFileWriteAt, FD: 1, Offset: 1 << 40, Size: 8, Ret: 8, Count: 2, Start: 15, Dur: 4, Thread: 1},
	}}
	small := func(opts Options, byRank map[uint32][]trace.Event, paths *trace.Paths) []byte {
		var buf bytes.Buffer
		w, err := NewWriterOptions(&buf, trace.Meta{Ranks: 6}, opts)
		if err != nil {
			tb.Fatal(err)
		}
		for id := 1; id < paths.Len(); id++ {
			w.Intern(paths.Lookup(trace.PathID(id)))
		}
		for r := uint32(0); r < 6; r++ {
			if err := w.Rank(r).WriteEvents(byRank[r]); err != nil {
				tb.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			tb.Fatal(err)
		}
		return buf.Bytes()
	}
	seeds = append(seeds, small(Options{}, posix, paths), small(Options{}, mpi, paths))
	for _, wl := range workloads {
		tr := wl.mk(1)
		byRank, _ := materialise(tb, tr)
		for rk := range byRank {
			byRank[rk] = byRank[rk][:min(len(byRank[rk]), 3*int(1-min(rk, 1)))]
		}
		seeds = append(seeds, small(Options{}, byRank, tr.Paths()))
	}
	// A rank with a clock (its rank-info fields of the clock after its
	// events), so that mutations reach the clock's decoding and the
	// aligned times.
	var buf bytes.Buffer
	w, err := NewWriter(&buf, trace.Meta{Epoch: 100})
	if err != nil {
		tb.Fatal(err)
	}
	w.SetRankInfo(1, 50, "h", 7)
	w.Rank(1).WriteEvents([]trace.Event{{Op: trace.OpClose, Rank: 1, FD: 3, Start: 10}, {Op: trace.OpClose, Rank: 1, FD: 4, Start: 5000}})
	w.SetRankClock(1, Clock{Ref: 0, Method: "m", Samples: []ClockSample{{At: 20, Offset: -30, Err: 4}, {At: 4000, Offset: 70, Err: 5}}})
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	seeds = append(seeds, buf.Bytes())
	first := seeds[0]
	seeds = append(seeds, first[:len(first)-5], first[:len(first)/2], []byte(Magic))
	for _, s := range seeds {
		if len(s) > maxFuzzTrace {
			tb.Fatalf("a seed of %d bytes", len(s))
		}
	}
	return seeds
}

// readAnything opens data with and without salvage, reads every rank of
// it, and checks it; none may panic.
func readAnything(data []byte) {
	if rd, err := NewReader(bytes.NewReader(data), int64(len(data)), "fuzz.iot", ReadOptions{Salvage: true}); err == nil {
		var events int64
		for _, s := range rd.Summary() {
			events += s.Events
		}
		rd.Close()
		if events > 200_000 {
			// Blocks may legitimately hold a million constant events in a
			// few bytes; decoding them is slow, not wrong. Keep fuzzing fast.
			return
		}
	}
	for _, salvage := range []bool{false, true} {
		rd, err := NewReader(bytes.NewReader(data), int64(len(data)), "fuzz.iot", ReadOptions{Salvage: salvage})
		if err != nil {
			continue
		}
		readAllRanks(rd)
		rd.Close()
	}
	check("fuzz.iot", bytes.NewReader(data), int64(len(data)), true)
	check("fuzz.iot", bytes.NewReader(data), int64(len(data)), false)
}

// fixCRCs returns a copy of data with the CRCs of its header and of every
// block it can frame recomputed.
func fixCRCs(data []byte) []byte {
	d := bytes.Clone(data)
	if len(d) < fileHeaderLen+4 || string(d[:len(Magic)]) != Magic {
		return d
	}
	l := int(binary.LittleEndian.Uint32(d[12:]))
	off := fileHeaderLen + l
	if off+4 > len(d) || l < 0 {
		return d
	}
	binary.LittleEndian.PutUint32(d[off:], crc(d[fileHeaderLen:off]))
	off += 4
	for off+blockHeaderLen <= len(d) && string(d[off:off+4]) == blockMagic {
		p := int(binary.LittleEndian.Uint32(d[off+8:]))
		end := off + blockHeaderLen + p
		if p < 0 || end > len(d) {
			break
		}
		binary.LittleEndian.PutUint32(d[off+12:], crc(d[off+4:off+12], d[off+blockHeaderLen:end]))
		off = end
	}
	return d
}

// FuzzMerge merges two arbitrary inputs as iotrace merge does, with and
// without salvage: none may panic, and a merge that succeeds must be a
// trace that reads without a warning and holds, rank by rank, the events
// of reading the two inputs as one trace.
//
//	go test -run '^$' -fuzz '^FuzzMerge$' -fuzztime 10m ./trace/format
func FuzzMerge(f *testing.F) {
	seeds := readerSeeds(f)
	for i, a := range seeds {
		f.Add(a, seeds[(i+1)%len(seeds)]) // ranks 0 and 5, ranks 0 and 0, …
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if len(a)+len(b) > 2*maxFuzzTrace {
			return
		}
		for _, salvage := range []bool{false, true} {
			opts := ReadOptions{Salvage: salvage}
			open := func() []*file {
				var files []*file
				for i, d := range [][]byte{a, b} {
					fl, err := newFile(fmt.Sprintf("in%d.iot", i), bytes.NewReader(d), int64(len(d)), opts)
					if err != nil {
						return nil
					}
					files = append(files, fl)
				}
				return files
			}
			files := open()
			if files == nil {
				continue
			}
			var out bytes.Buffer
			st, err := mergeFiles(&out, opts, files)
			if err != nil {
				continue
			}
			m, err := NewReader(bytes.NewReader(out.Bytes()), int64(out.Len()), "merged.iot", ReadOptions{})
			if err != nil {
				t.Fatalf("salvage %v: the merge does not open: %v (stats %+v)", salvage, err, st)
			}
			if w := m.Warnings(); len(w) > 0 {
				t.Fatalf("salvage %v: the merge reads with warnings: %q", salvage, w)
			}
			got, err := readAllRanks(m)
			if err != nil {
				// A block whose CRC holds but whose columns do not decode
				// is copied as it is: the merge reads as its inputs do.
				continue
			}
			both, err := newReader(open(), opts)
			if err != nil {
				t.Fatalf("salvage %v: the merge succeeded, reading both as one trace fails: %v", salvage, err)
			}
			want, err := readAllRanks(both)
			if err != nil {
				continue
			}
			// A rank whose every block was damaged is listed (empty) by a
			// salvaging reader of an indexed input, and not merged.
			for _, ranks := range []map[uint32][]trace.Event{got, want} {
				for r, evs := range ranks {
					if len(evs) == 0 {
						delete(ranks, r)
					}
				}
			}
			if len(got) != len(want) {
				t.Fatalf("salvage %v: the merge has %d ranks, the inputs %d", salvage, len(got), len(want))
			}
			for r, evs := range want {
				g, w := resolve(got[r], m.Path), resolve(evs, both.Path)
				if !reflect.DeepEqual(g, w) {
					t.Fatalf("salvage %v: rank %d: the merge holds %d events, the inputs %d, or they differ", salvage, r, len(g), len(w))
				}
			}
		}
	})
}
