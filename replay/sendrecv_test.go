package replay_test

import (
	"testing"
	"time"

	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
)

// haloTrace is a halo exchange whose sendrecv has the tag of a plain
// send made earlier: rank 0 sends rank 1 a message (tag 5) before a
// barrier; after it, ranks 1 and 2 exchange with MPI_Sendrecv (tag 5),
// rank 2 after 20 ms of I/O; then rank 1 receives rank 0's message. With
// known receive halves (recv true) rank 1's sendrecv receives from rank
// 2; without them, as traces written before they were recorded, from any
// source.
func haloTrace(recv bool) *trace.MemTrace {
	sr := func(rank uint32, peer int32, start int64) trace.Event {
		e := trace.Event{Rank: rank, Op: trace.OpMPISendrecv, Peer: peer, Tag: 5, Bytes: 200, Start: start, Dur: ms / 10}
		if recv {
			e.SetRecvFrom(peer, 5)
		}
		return e
	}
	m := trace.NewMemTrace()
	m.Add(
		trace.Event{Rank: 0, Op: trace.OpMPISend, Peer: 1, Tag: 5, Bytes: 100, Dur: ms / 10},
		trace.Event{Rank: 0, Op: trace.OpMPIBarrier, Start: ms, Dur: ms / 10},
	)
	m.Add(
		trace.Event{Rank: 1, Op: trace.OpMPIBarrier, Start: ms, Dur: ms / 10},
		sr(1, 2, 2*ms),
		trace.Event{Rank: 1, Op: trace.OpMPIRecv, Peer: 0, Tag: 5, Bytes: 100, Start: 23 * ms, Dur: ms / 10},
		trace.Event{Rank: 1, Op: trace.OpPwrite, FD: 3, Size: 1, Ret: 1, Start: 24 * ms},
	)
	m.Add(
		trace.Event{Rank: 2, Op: trace.OpMPIBarrier, Start: ms, Dur: ms / 10},
		trace.Event{Rank: 2, Op: trace.OpPwrite, FD: 3, Size: 1, Ret: 1, Start: 2 * ms, Dur: 20 * ms},
		sr(2, 1, 22*ms),
	)
	return m
}

// TestSendrecvReceivesFromItsSource replays the halo exchange: rank 1's
// sendrecv waits for rank 2's message instead of taking rank 0's, and
// rank 1's plain receive still finds rank 0's, in every timing mode.
func TestSendrecvReceivesFromItsSource(t *testing.T) {
	slow := &fakeBackend{delay: func(e *trace.Event) time.Duration { return time.Duration(e.Dur) }}
	for _, tm := range []replay.Timing{replay.AFAP, replay.Think, replay.Original} {
		res, s := run(t, haloTrace(true), replay.Options{Timing: tm}, slow)
		if res.Unmatched != 0 || res.Skipped() != 0 {
			t.Fatalf("%v: %d unmatched, %d skipped: %v", tm, res.Unmatched, res.Skipped(), res.Notes)
		}
		r1, r2 := s.rank(1), s.rank(2)
		if len(r1) != 4 || len(r2) != 3 {
			t.Fatalf("%v: ranks 1 and 2 replayed %d and %d calls", tm, len(r1), len(r2))
		}
		got, sent := r1[1], r2[2]
		if got.Op != trace.OpMPISendrecv || sent.Op != trace.OpMPISendrecv {
			t.Fatalf("%v: calls out of order: %v, %v", tm, got.Op, sent.Op)
		}
		if got.End() < sent.Start {
			t.Errorf("%v: rank 1's sendrecv returned at %v, before rank 2 sent at %v: it took another message",
				tm, time.Duration(got.End()), time.Duration(sent.Start))
		}
		if src, tag, ok := got.RecvFrom(); !ok || src != 2 || tag != 5 {
			t.Errorf("%v: the replay's trace has receive half %d, %d, %v", tm, src, tag, ok)
		}
	}
}

// TestSendrecvWithoutSource: a trace without receive halves replays as it
// always did, from any source with the send's tag — which, in the halo
// exchange, takes rank 0's message and leaves rank 1's receive unmatched
// (what recording the source fixes).
func TestSendrecvWithoutSource(t *testing.T) {
	res, _ := run(t, haloTrace(false), replay.Options{Timing: replay.AFAP}, &fakeBackend{delay: func(e *trace.Event) time.Duration { return time.Duration(e.Dur) }})
	if res.Unmatched != 1 {
		t.Fatalf("%d unmatched, want 1 (a receive from any source takes the first message)", res.Unmatched)
	}
	// A file written before the receive half was recorded (a ring shift)
	// replays, from any source, without a hitch.
	r, err := format.Open("../trace/format/testdata/sendrecv-before-source.iot")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res, s := run(t, r, replay.Options{Timing: replay.AFAP}, &fakeBackend{})
	if res.Unmatched != 0 || res.Skipped() != 0 || len(s.rank(2)) != 3 {
		t.Fatalf("old ring shift: %d unmatched, %d skipped, rank 2 replayed %d calls", res.Unmatched, res.Skipped(), len(s.rank(2)))
	}
}

// TestSendrecvProcNull: a non-periodic shift, whose end ranks send to or
// receive from MPI_PROC_NULL, replays every half that moves data and no
// other, with no unmatched call.
func TestSendrecvProcNull(t *testing.T) {
	const n = 4
	m := trace.NewMemTrace()
	for r := int32(0); r < n; r++ {
		e := trace.Event{Rank: uint32(r), Op: trace.OpMPISendrecv, Peer: r + 1, Tag: 1, Bytes: 8}
		src := r - 1
		if r == n-1 {
			e.Peer = trace.ProcNull
		}
		if r == 0 {
			src = trace.ProcNull
		}
		e.SetRecvFrom(src, 1)
		// Then the shift the other way, with the same tag.
		f := trace.Event{Rank: uint32(r), Op: trace.OpMPISendrecv, Peer: r - 1, Tag: 1, Bytes: 8, Start: ms}
		src = r + 1
		if r == 0 {
			f.Peer = trace.ProcNull
		}
		if r == n-1 {
			src = trace.ProcNull
		}
		f.SetRecvFrom(src, 1)
		m.Add(e, f)
	}
	res, s := run(t, m, replay.Options{Timing: replay.AFAP}, &fakeBackend{})
	if res.Unmatched != 0 || res.Skipped() != 0 {
		t.Fatalf("%d unmatched, %d skipped: %v", res.Unmatched, res.Skipped(), res.Notes)
	}
	for r := uint32(0); r < n; r++ {
		if len(s.rank(r)) != 2 {
			t.Errorf("rank %d replayed %d calls", r, len(s.rank(r)))
		}
	}
}
