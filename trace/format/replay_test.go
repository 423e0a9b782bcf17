package format

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/hist"
)

// TestReplayBlock: how the replay of a rank went reads back as written,
// survives merge, and a trace without it says nothing.
func TestReplayBlock(t *testing.T) {
	var lag hist.Hist
	for _, v := range []int64{5, 900, 12000, 3e6} {
		lag.Add(v)
	}
	want := &trace.ReplayRank{
		Timing: "original", Planned: 10, Events: 9, Elapsed: 123456, Interrupted: true, Stopped: "process 3 on host b stopped answering", Script: true,
		Lag:       map[trace.Op]*hist.Hist{trace.OpPwrite: &lag},
		Skips:     []trace.ReplaySkip{{Op: trace.OpOpen, Reason: "special path (/dev, /proc, /sys)", Count: 2}},
		Errors:    []trace.ReplayError{{Op: trace.OpRead, Ret: -5, Expected: true, Count: 1, Detail: "MPI_ERR_IO"}},
		Unmatched: 1, Notes: []string{"rank 1: MPI_Recv from 0 tag 3: no matching send"},
		Predict: true, LibCalls: 3, LibTime: 40_000_000, IOTime: 41_500_000, CapturedIOTime: 42_000_000, IOSpan: 63_000_000, CapturedIOSpan: 64_000_000,
	}
	dir := t.TempDir()
	write := func(name string, rank uint32, rr *trace.ReplayRank) string {
		p := filepath.Join(dir, name)
		w, err := Create(p, trace.Meta{Creator: "ioreplay"})
		if err != nil {
			t.Fatal(err)
		}
		w.Rank(rank).WriteEvents([]trace.Event{{Op: trace.OpPwrite, Rank: rank, Size: 1, Ret: 1}})
		if rr != nil {
			if err := w.SetReplay(rank, rr); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := write("a.iot", 0, want), write("b.iot", 1, nil)
	var merged bytes.Buffer
	if _, err := Merge(&merged, ReadOptions{}, a, b); err != nil {
		t.Fatal(err)
	}
	m := filepath.Join(dir, "m.iot")
	if err := os.WriteFile(m, merged.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{a, m} {
		r, err := Open(name)
		if err != nil {
			t.Fatal(err)
		}
		got := r.Replay(0)
		if got == nil || got.Lag[trace.OpPwrite].Count() != 4 || got.Lag[trace.OpPwrite].Max() != 3e6 {
			t.Fatalf("%s: %+v", name, got)
		}
		g, w := *got, *want
		g.Lag, w.Lag = nil, nil
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: read %+v, want %+v", name, g, w)
		}
		if r.Replay(1) != nil || r.Replay(7) != nil {
			t.Errorf("%s: a rank without a replay block has one", name)
		}
		r.Close()
	}
}

// TestReplayBlockUnknownFields: a reader skips the fields of a replay
// block it does not know (a newer writer's), and reads the others.
func TestReplayBlockUnknownFields(t *testing.T) {
	var f fields
	f.str(replayTiming, "think")
	f.uvarint(99, 7)
	f.str(98, "later")
	f.uvarint(replayEvents, 5)
	got, err := readReplay(append([]byte{0}, f...))
	if err != nil || got.Timing != "think" || got.Events != 5 {
		t.Fatalf("read %+v, %v; want timing think, 5 events", got, err)
	}
}

// FuzzReplayBlock: any payload of a replay block reads as a replay record
// or one error, never a panic, and a record read back writes the same.
func FuzzReplayBlock(f *testing.F) {
	var lag hist.Hist
	lag.Add(77)
	rr := &trace.ReplayRank{Timing: "think", Planned: 3, Events: 2, Lag: map[trace.Op]*hist.Hist{trace.OpRead: &lag},
		Skips: []trace.ReplaySkip{{Op: trace.OpWrite, Reason: "x", Count: 1}}, Errors: []trace.ReplayError{{Op: trace.OpOpen, Ret: -2, Count: 1}},
		Notes: []string{"n"}}
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, trace.Meta{})
	w.SetReplay(3, rr)
	w.Close()
	b := buf.Bytes()
	// The payload of the first block after the header.
	f.Add(b[fileHeaderLen+int(uint32(b[12])|uint32(b[13])<<8|uint32(b[14])<<16|uint32(b[15])<<24)+4+blockHeaderLen:])
	f.Add([]byte{0, 6, 3, 0xff})
	f.Fuzz(func(t *testing.T, p []byte) {
		got, err := readReplay(p)
		if err != nil {
			return
		}
		var out bytes.Buffer
		w, _ := NewWriter(&out, trace.Meta{})
		if err := w.SetReplay(0, got); err != nil {
			t.Fatal(err)
		}
	})
}

// TestCheckPartialReplay: check says of a part of a replay's trace that
// did not end how many of the run's ranks it holds, that its ranks were
// interrupted and why, and which ranks have no replay block; of a replay
// that ended, nothing more.
func TestCheckPartialReplay(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, rrs map[uint32]*trace.ReplayRank) string {
		p := filepath.Join(dir, name)
		w, err := Create(p, trace.Meta{Creator: "ioreplay", Ranks: 8})
		if err != nil {
			t.Fatal(err)
		}
		for _, rk := range []uint32{2, 3, 4} {
			w.Rank(rk).WriteEvents([]trace.Event{{Op: trace.OpPwrite, Rank: rk, Size: 1, Ret: 1}})
			if rr := rrs[rk]; rr != nil {
				if err := w.SetReplay(rk, rr); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stopped := "process 3 on host b has not answered for 10s"
	part := write("part.iot", map[uint32]*trace.ReplayRank{
		2: {Timing: "afap", Planned: 10, Events: 1, Interrupted: true, Stopped: stopped},
		3: {Timing: "afap", Planned: 10, Events: 1, Interrupted: true, Stopped: stopped},
	})
	rep, err := Check(part, false)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	rep.WriteText(&b)
	for _, want := range []string{
		"3 ranks [2-4] of the run's 8,",
		"  replay: interrupted: " + stopped + ": 2 of 20 events of 2 ranks replayed; 1 rank without a replay block (their replay did not end)\n",
	} {
		if !bytes.Contains(b.Bytes(), []byte(want)) {
			t.Errorf("check says\n%s\nwant %q", b.String(), want)
		}
	}
	whole := write("whole.iot", map[uint32]*trace.ReplayRank{
		2: {Timing: "afap", Planned: 1, Events: 1}, 3: {Timing: "afap", Planned: 1, Events: 1}, 4: {Timing: "afap", Planned: 1, Events: 1},
	})
	if rep, err = Check(whole, false); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	rep.WriteText(&b)
	if bytes.Contains(b.Bytes(), []byte("replay:")) {
		t.Errorf("check of a replay that ended says\n%s", b.String())
	}
}

// TestReplayBlockLargestTimes: the times a replay block holds (the MPI-IO
// library cost, the I/O times, the I/O spans) read back as written up to
// the largest int64 — what a prediction saturates at on a trace of
// absurd durations — not as a damaged block; past it the block is
// damaged.
func TestReplayBlockLargestTimes(t *testing.T) {
	const top = math.MaxInt64
	rr := &trace.ReplayRank{Timing: "think", Predict: true, LibCalls: 1, LibTime: top, IOTime: top, CapturedIOTime: top, IOSpan: top, CapturedIOSpan: top}
	p := filepath.Join(t.TempDir(), "r.iot")
	w, err := Create(p, trace.Meta{Creator: "ioreplay"})
	if err != nil {
		t.Fatal(err)
	}
	w.Rank(0).WriteEvents([]trace.Event{{Op: trace.OpPwrite, Size: 1, Ret: 1}})
	if err := w.SetReplay(0, rr); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := r.Replay(0); got == nil || got.LibTime != top || got.IOTime != top || got.CapturedIOTime != top || got.IOSpan != top || got.CapturedIOSpan != top {
		t.Fatalf("read %+v", got)
	}
	var f fields
	f.bytes(replayIOSpan, binary.AppendUvarint(binary.AppendUvarint(nil, 1<<63), 1))
	if _, err := readReplay(append([]byte{0}, f...)); err == nil {
		t.Error("an I/O span of 2^63 ns read as a time")
	}
}
