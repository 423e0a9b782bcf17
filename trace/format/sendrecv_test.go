package format

import (
	"bytes"
	"os"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// oldSendrecvEvents are the events of testdata/sendrecv-before-source.iot,
// written by iotrace before it recorded the receive half of MPI_Sendrecv:
// a ring shift of 3 ranks, twice, then a barrier.
func oldSendrecvEvents() []trace.Event {
	var evs []trace.Event
	for r := uint32(0); r < 3; r++ {
		t0 := int64(1000)
		for range 2 {
			evs = append(evs, trace.Event{Op: trace.OpMPISendrecv, Rank: r, Start: t0, Dur: 500, Peer: int32((r + 1) % 3), Tag: 7, Bytes: 64, Count: 8})
			t0 += 1000
		}
		evs = append(evs, trace.Event{Op: trace.OpMPIBarrier, Rank: r, Start: t0, Dur: 100})
	}
	return evs
}

func inOrder(t *testing.T, r *Reader) []trace.Event {
	t.Helper()
	byRank, err := readAllRanks(r)
	if err != nil {
		t.Fatal(err)
	}
	var all []trace.Event
	for _, rk := range r.Ranks() {
		all = append(all, byRank[rk]...)
	}
	return all
}

// TestSendrecvBeforeSource reads a file written before the receive half
// was recorded: its sendrecvs read as they were written, with the
// receive half unknown (not "rank 0, tag 0").
func TestSendrecvBeforeSource(t *testing.T) {
	r, err := Open("testdata/sendrecv-before-source.iot")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := inOrder(t, r)
	want := oldSendrecvEvents()
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("event %d: %+v, want %+v", i, got[i], want[i])
		}
		if src, tag, ok := got[i].RecvFrom(); ok {
			t.Errorf("event %d: receive half known (%d, %d) in a file that never recorded it", i, src, tag)
		}
	}
}

// TestUnchangedWithoutReceiveHalf: events that do not use the new fields
// encode to the very bytes the version before them wrote, so old and
// new writers agree and the new columns cost nothing when unused.
func TestUnchangedWithoutReceiveHalf(t *testing.T) {
	old, err := os.ReadFile("testdata/sendrecv-before-source.iot")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, trace.Meta{Creator: "iotrace 788ac7a (before MPI_Sendrecv sources)", Ranks: 3, Clock: "nominal"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteEvents(oldSendrecvEvents()); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), old) {
		t.Fatalf("the same events encode to %d bytes, the old writer wrote %d different ones", buf.Len(), len(old))
	}
}

// TestSendrecvReceiveHalf: the receive half round-trips, rank 0 and tag
// 0 included (they are not "unknown"), and so do MPI_PROC_NULL and a
// sendrecv without it next to one with it.
func TestSendrecvReceiveHalf(t *testing.T) {
	evs := oldSendrecvEvents()
	evs[0].SetRecvFrom(2, 0)              // rank 0 receives from rank 2 with tag 0
	evs[1].SetRecvFrom(0, 9)              // a sendrecv with itself... of rank 0: source 0
	evs[3].SetRecvFrom(trace.ProcNull, 7) // nothing to receive
	evs[6].Peer = trace.ProcNull          // nothing to send
	evs[6].SetRecvFrom(1, 7)
	var buf bytes.Buffer
	w, err := NewWriter(&buf, trace.Meta{Ranks: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteEvents(evs); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()), "mem", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := inOrder(t, r)
	type half struct {
		src, tag int32
		ok       bool
	}
	want := map[int]half{0: {2, 0, true}, 1: {0, 9, true}, 3: {trace.ProcNull, 7, true}, 6: {1, 7, true}}
	for i := range got {
		if got[i] != evs[i] {
			t.Errorf("event %d: %+v, want %+v", i, got[i], evs[i])
		}
		var h half
		h.src, h.tag, h.ok = got[i].RecvFrom()
		if h != want[i] {
			t.Errorf("event %d: receive half %+v, want %+v", i, h, want[i])
		}
	}
}
