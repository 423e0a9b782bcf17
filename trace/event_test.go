package trace

import (
	"errors"
	"io"
	"testing"
	"unsafe"
)

// TestCopyTranslatesPaths: Copy gives the sink's ids for the source's
// paths, 0 stays "no path", and every event arrives in order.
func TestCopyTranslatesPaths(t *testing.T) {
	src := NewMemTrace()
	a, b := src.Paths.Intern("/a"), src.Paths.Intern("/b")
	var evs []Event
	for i := range 3000 { // more than a batch
		e := Event{Op: OpWrite, Rank: 1, Start: int64(i), Path: a}
		if i%3 == 0 {
			e.Path, e.Path2 = b, a
		}
		if i%7 == 0 {
			e.Path = 0
		}
		evs = append(evs, e)
	}
	src.Add(evs...)
	sink := NewSliceSink()
	sink.Intern("/other") // the sink's ids differ from the source's
	rs, _ := src.Rank(1)
	n, err := Copy(sink, rs)
	if err != nil || n != int64(len(evs)) || len(sink.Events) != len(evs) {
		t.Fatalf("copied %d, %v; sink has %d", n, err, len(sink.Events))
	}
	for i, e := range sink.Events {
		w := evs[i]
		if e.Start != w.Start || sink.Paths.Lookup(e.Path) != src.Paths.Lookup(w.Path) || sink.Paths.Lookup(e.Path2) != src.Paths.Lookup(w.Path2) {
			t.Fatalf("event %d: %+v, want %+v", i, e, w)
		}
		if (e.Path == 0) != (w.Path == 0) {
			t.Fatalf("event %d: path 0 translated", i)
		}
	}
}

type failingSink struct{ SliceSink }

func (f *failingSink) WriteEvents([]Event) error { return errors.New("disk full") }

func TestCopyErrors(t *testing.T) {
	src := NewMemTrace()
	src.Add(Event{Rank: 0, Op: OpClose})
	rs, _ := src.Rank(0)
	if _, err := Copy(&failingSink{SliceSink{Paths: NewPaths()}}, rs); err == nil || err.Error() != "disk full" {
		t.Fatalf("sink error: %v", err)
	}
}

func TestAllRanks(t *testing.T) {
	m := NewMemTrace()
	m.Add(Event{Rank: 5, Start: 1}, Event{Rank: 0, Start: 2}, Event{Rank: 5, Start: 3})
	if rs := m.Ranks(); len(rs) != 2 || rs[0] != 0 || rs[1] != 5 {
		t.Fatalf("ranks %v", rs)
	}
	evs, err := ReadAll(All(m))
	if err != nil || len(evs) != 3 || evs[0].Rank != 0 || evs[1].Start != 1 || evs[2].Start != 3 {
		t.Fatalf("All: %+v %v", evs, err)
	}
	buf := make([]Event, 4)
	s := All(m)
	for {
		_, err := s.ReadEvents(buf)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	p := NewPaths()
	if p.Intern("") != 0 || p.Intern("x") != 1 || p.Intern("x") != 1 || p.Lookup(1) != "x" || p.Lookup(99) != "" || p.Len() != 2 {
		t.Fatal("Paths")
	}
}

// Event is copied everywhere events flow (script expansion, the replay's
// queues, readers' batches): it fits in two 64-byte cache lines. A new
// field that grows it wants the hot paths measured first
// (BenchmarkExpandAllRanks, bench/model/run.sh).
func TestEventFitsTwoCacheLines(t *testing.T) {
	if n := unsafe.Sizeof(Event{}); n > 128 {
		t.Errorf("trace.Event is %d bytes, more than 128", n)
	}
}
