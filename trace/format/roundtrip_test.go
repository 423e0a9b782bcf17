package format

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// randomEvents makes n events of every op, with every field set at random
// to values across its whole range, and a path table of a few strings.
func randomEvents(r *rand.Rand, rank uint32, n int, paths *trace.Paths) []trace.Event {
	ops := trace.Ops()
	names := []string{"/a", "/b/c", "relative/x", "", "ünïcödé/\x00nul", "/very/" + string(bytes.Repeat([]byte("long"), 100))}
	big := func() int64 {
		switch r.IntN(4) {
		case 0:
			return 0
		case 1:
			return int64(r.IntN(10000)) - 100
		case 2:
			return r.Int64() - r.Int64()
		}
		return int64(r.Uint64())
	}
	evs := make([]trace.Event, n)
	t := r.Int64N(1 << 40)
	for i := range evs {
		op := ops[r.IntN(len(ops))]
		if r.IntN(20) == 0 {
			op = trace.Op(r.IntN(65536)) // unknown ops travel too
		}
		t += r.Int64N(100000)
		if r.IntN(50) == 0 {
			t -= r.Int64N(1000000) // threads overlap
		}
		evs[i] = trace.Event{
			Op: op, Rank: rank, Thread: uint32(r.IntN(4)), Start: t, Dur: big(),
			Path: paths.Intern(names[r.IntN(len(names))]), Path2: paths.Intern(names[r.IntN(len(names))]),
			FD: int32(big()), Offset: big(), Size: big(), Ret: big(), Flags: r.Uint32(), Mode: r.Uint32(),
			Whence: int32(big()), Peer: int32(big()), Tag: int32(big()), Comm: r.Uint32(), Bytes: big(),
			Count: int32(big()), Stride: big(), Source: int32(big()), RecvTag: int32(big()), FD2: int32(big()), Offset2: big(),
		}
		if r.IntN(3) == 0 {
			evs[i].Ret = evs[i].Size
		}
	}
	return evs
}

// resolved replaces path ids by their strings so that events of two path
// tables compare.
type resolvedEvent struct {
	trace.Event
	P1, P2 string
}

func resolve(evs []trace.Event, path func(trace.PathID) string) []resolvedEvent {
	out := make([]resolvedEvent, len(evs))
	for i, e := range evs {
		out[i] = resolvedEvent{e, path(e.Path), path(e.Path2)}
		out[i].Path, out[i].Path2 = 0, 0
	}
	return out
}

func writeTrace(t testing.TB, opts Options, byRank map[uint32][]trace.Event, paths *trace.Paths) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriterOptions(&buf, trace.Meta{Command: []string{"test", "x"}, Hosts: []string{"h1"}, Clock: "c", Epoch: 12345, Ranks: 3, Creator: "t"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	for r, evs := range byRank {
		rw := w.Rank(r)
		for len(evs) > 0 {
			k := min(len(evs), 1+len(evs)%97)
			batch := append([]trace.Event(nil), evs[:k]...)
			for i := range batch {
				batch[i].Path = rw.Intern(paths.Lookup(batch[i].Path))
				batch[i].Path2 = rw.Intern(paths.Lookup(batch[i].Path2))
			}
			if err := rw.WriteEvents(batch); err != nil {
				t.Fatal(err)
			}
			evs = evs[k:]
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readTrace(t testing.TB, data []byte, opts ReadOptions) (*Reader, map[uint32][]trace.Event) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(data), int64(len(data)), "mem.iot", opts)
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint32][]trace.Event{}
	for _, rk := range r.Ranks() {
		src, err := r.Rank(rk)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := trace.ReadAll(src)
		if err != nil {
			t.Fatalf("rank %d: %v", rk, err)
		}
		out[rk] = evs
	}
	return r, out
}

func TestRoundTripRandom(t *testing.T) {
	for seed := uint64(0); seed < 30; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		paths := trace.NewPaths()
		byRank := map[uint32][]trace.Event{}
		for rk := range uint32(1 + r.IntN(4)) {
			rank := rk * uint32(1+r.IntN(1000))
			byRank[rank] = randomEvents(r, rank, r.IntN(3000), paths)
			if len(byRank[rank]) == 0 {
				delete(byRank, rank)
			}
		}
		opts := Options{BlockEvents: 1 + r.IntN(2000)}
		data := writeTrace(t, opts, byRank, paths)
		rd, got := readTrace(t, data, ReadOptions{})
		if w := rd.Warnings(); len(w) > 0 {
			t.Fatalf("seed %d: warnings %v", seed, w)
		}
		if len(got) != len(byRank) {
			t.Fatalf("seed %d: %d ranks, want %d", seed, len(got), len(byRank))
		}
		for rk, want := range byRank {
			g := resolve(got[rk], rd.Path)
			w := resolve(want, paths.Lookup)
			if !reflect.DeepEqual(g, w) {
				for i := range w {
					if i >= len(g) || !reflect.DeepEqual(g[i], w[i]) {
						t.Fatalf("seed %d rank %d event %d:\n got %+v\nwant %+v", seed, rk, i, g[min(i, len(g)-1)], w[i])
					}
				}
				t.Fatalf("seed %d rank %d: %d events, want %d", seed, rk, len(g), len(w))
			}
		}
		checkSummary(t, rd, byRank)
		m := rd.Meta()
		if m.Epoch != 12345 || m.Clock != "c" || m.Creator != "t" || fmt.Sprint(m.Command) != "[test x]" || fmt.Sprint(m.Hosts) != "[h1]" {
			t.Fatalf("meta %+v", m)
		}
	}
}

// eventBytes is the byte count the summaries attribute to an event:
// what a data call moved, what a communication call sent.
func eventBytes(e *trace.Event) int64 {
	switch {
	case e.Op.Dir() != trace.DirNone:
		if e.Ret > 0 {
			return e.Ret
		}
		return 0
	case e.Op.Class() == trace.ClassComm:
		return e.Bytes
	}
	return 0
}

// checkSummary compares the index's per-rank summaries with the events.
func checkSummary(t *testing.T, rd *Reader, byRank map[uint32][]trace.Event) {
	t.Helper()
	for _, s := range rd.Summary() {
		evs := byRank[s.Rank]
		want := map[trace.Op]OpTotal{}
		minT, maxT := evs[0].Start, evs[0].End()
		for i := range evs {
			e := &evs[i]
			tot := want[e.Op]
			tot.Op = e.Op
			tot.Count++
			tot.Bytes += eventBytes(e)
			want[e.Op] = tot
			minT, maxT = min(minT, e.Start), max(maxT, e.End())
		}
		if s.Events != int64(len(evs)) || s.MinT != minT || s.MaxT != maxT || len(s.Ops) != len(want) {
			t.Fatalf("rank %d: summary %d events %d–%d, %d ops; want %d events %d–%d, %d ops",
				s.Rank, s.Events, s.MinT, s.MaxT, len(s.Ops), len(evs), minT, maxT, len(want))
		}
		for _, o := range s.Ops {
			if o != want[o.Op] {
				t.Fatalf("rank %d: op totals %+v, want %+v", s.Rank, o, want[o.Op])
			}
		}
	}
}

// TestSameEventsSameBytes: writing the same events (ranks in the same
// order) twice gives the same file, partial blocks at Close included.
func TestSameEventsSameBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	paths := trace.NewPaths()
	var ranks [][]trace.Event
	for rk := range uint32(6) {
		ranks = append(ranks, randomEvents(r, rk, 100+r.IntN(300), paths))
	}
	write := func() []byte {
		var buf bytes.Buffer
		w, err := NewWriterOptions(&buf, trace.Meta{Ranks: len(ranks)}, Options{BlockEvents: 64})
		if err != nil {
			t.Fatal(err)
		}
		for rk, evs := range ranks {
			batch := slices.Clone(evs)
			for i := range batch {
				batch[i].Path = w.Intern(paths.Lookup(batch[i].Path))
				batch[i].Path2 = w.Intern(paths.Lookup(batch[i].Path2))
			}
			if err := w.Rank(uint32(rk)).WriteEvents(batch); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	a := write()
	for range 5 {
		if !bytes.Equal(a, write()) {
			t.Fatal("the same events made different files")
		}
	}
}
