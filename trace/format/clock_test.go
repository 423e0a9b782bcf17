package format

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// clockRankFile writes one rank's file as a capture on its own host
// does: its epoch, its events, and (after them) the clock it measured.
func clockRankFile(t *testing.T, name string, rk uint32, epoch int64, starts []int64, c *Clock) {
	t.Helper()
	w, err := CreateOptions(name, trace.Meta{Epoch: epoch, Ranks: 2}, Options{BlockEvents: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.SetRankInfo(rk, epoch, "host"+fmtInt(int64(rk)), 100+int(rk)); err != nil {
		t.Fatal(err)
	}
	var evs []trace.Event
	for _, s := range starts {
		evs = append(evs, trace.Event{Op: trace.OpWrite, Rank: rk, Start: s, Dur: 10, FD: 3, Size: 1, Ret: 1})
	}
	if err := w.Rank(rk).WriteEvents(evs); err != nil {
		t.Fatal(err)
	}
	if c != nil {
		if err := w.SetRankClock(rk, *c); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func startsOf(t *testing.T, r *Reader) map[uint32][]int64 {
	t.Helper()
	got, err := readAllRanks(r)
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint32][]int64{}
	for rk, evs := range got {
		for _, e := range evs {
			out[rk] = append(out[rk], e.Start)
		}
	}
	return out
}

// TestClockAlignment: rank 1's host clock reads 250 ms ahead of rank 0's
// at its start and 250.1 ms ahead 10 s later (a drift of 10 µs/s). Its
// capture measured that against rank 0; readers give its times on rank
// 0's clock — the offset at the start, the drift along the way, the last
// offset after the last sample — in the files read together, in their
// merge (which copies the clock), and in the summary; RawClocks gives
// them as the host's clock read them.
func TestClockAlignment(t *testing.T) {
	dir := t.TempDir()
	const sec = int64(1e9)
	epoch0 := int64(1_700_000_000) * sec
	// Both ranks started at the same true time; rank 1's clock called
	// it 250 ms later.
	epoch1 := epoch0 + 250_000_000
	clk := &Clock{Ref: 0, Method: "test", Samples: []ClockSample{
		{At: 1 * sec, Offset: 250_000_000, Err: 40_000},
		{At: 11 * sec, Offset: 250_100_000, Err: 50_000},
	}}
	f0, f1 := filepath.Join(dir, "rank-00000.iot"), filepath.Join(dir, "rank-00001.iot")
	clockRankFile(t, f0, 0, epoch0, []int64{0, 2 * sec, 12 * sec}, nil)
	clockRankFile(t, f1, 1, epoch1, []int64{0, 6 * sec, 12 * sec}, clk)

	want := map[uint32][]int64{
		0: {0, 2 * sec, 12 * sec},
		// Before the first sample its offset; between the samples the
		// line (5 s of 10 µs/s: 50 µs more); after the last its offset.
		1: {0, 6*sec - 50_000, 12*sec - 100_000},
	}
	check := func(what string, r *Reader) {
		t.Helper()
		if got := startsOf(t, r); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: starts %v, want %v", what, got, want)
		}
		if e := r.Meta().Epoch; e != epoch0 {
			t.Errorf("%s: epoch %d, want %d", what, e, epoch0)
		}
		sum := r.Summary()
		if len(sum) != 2 || sum[1].Clock == nil || !reflect.DeepEqual(*sum[1].Clock, *clk) || sum[0].Clock != nil {
			t.Fatalf("%s: summary clocks %+v", what, sum)
		}
		if sum[1].MinT != 0 || sum[1].MaxT != 12*sec-100_000+10 {
			t.Errorf("%s: rank 1 spans %d–%d in the summary", what, sum[1].MinT, sum[1].MaxT)
		}
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	check("files", r)

	var out bytes.Buffer
	if _, err := Merge(&out, ReadOptions{}, f0, f1); err != nil {
		t.Fatal(err)
	}
	merged := filepath.Join(t.TempDir(), "merged.iot")
	if err := os.WriteFile(merged, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	rm, err := Open(merged)
	if err != nil {
		t.Fatal(err)
	}
	defer rm.Close()
	check("merge", rm)

	raw, err := OpenOptions(ReadOptions{RawClocks: true}, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	wantRaw := map[uint32][]int64{0: {0, 2 * sec, 12 * sec}, 1: {250_000_000, 6*sec + 250_000_000, 12*sec + 250_000_000}}
	if got := startsOf(t, raw); !reflect.DeepEqual(got, wantRaw) {
		t.Errorf("raw clocks: starts %v, want %v", got, wantRaw)
	}
}

// TestClockOneSample: one sample is a constant offset, and a rank whose
// clock is behind the reference's moves the trace's epoch back.
func TestClockOneSample(t *testing.T) {
	dir := t.TempDir()
	clockRankFile(t, filepath.Join(dir, "rank-00000.iot"), 0, 1000, []int64{0, 500}, nil)
	clockRankFile(t, filepath.Join(dir, "rank-00001.iot"), 1, 1000, []int64{0, 500},
		&Clock{Samples: []ClockSample{{At: 100, Offset: -300, Err: 7}}})
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got, want := startsOf(t, r), map[uint32][]int64{0: {0, 500}, 1: {300, 800}}; !reflect.DeepEqual(got, want) {
		t.Errorf("starts %v, want %v", got, want)
	}
	if e := r.Meta().Epoch; e != 1000 {
		t.Errorf("epoch %d", e)
	}
}

// TestClockFieldsBad: damaged clock fields are an error naming the
// block, not a panic or a silent wrong time.
func TestClockFieldsBad(t *testing.T) {
	for name, field := range map[string][]byte{
		"short sample":  {fieldClockSample, 2, 0x02, 0x04},
		"trailing byte": {fieldClockSample, 4, 0x02, 0x04, 0x06, 0x00},
		"ref too big":   {fieldClockRef, 5, 0xff, 0xff, 0xff, 0xff, 0x7f},
	} {
		var buf bytes.Buffer
		w, err := NewWriter(&buf, trace.Meta{})
		if err != nil {
			t.Fatal(err)
		}
		p := append([]byte{0}, field...)
		w.mu.Lock()
		err = w.writeBlockLocked(kindRankInfo, p, BlockInfo{Rank: 0})
		w.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Rank(0).WriteEvents([]trace.Event{{Op: trace.OpClose, FD: 3}}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()), "bad.iot", ReadOptions{}); err == nil {
			t.Errorf("%s: read without an error", name)
		}
	}
}

// TestClockMergeHeaderEpoch: a rank whose only rank-info block holds its
// clock (its times count from its file header's epoch) keeps that epoch
// when merged with a file of an earlier one.
func TestClockMergeHeaderEpoch(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, rk uint32, epoch int64, c *Clock) string {
		p := filepath.Join(dir, name)
		w, err := Create(p, trace.Meta{Epoch: epoch})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Rank(rk).WriteEvents([]trace.Event{{Op: trace.OpClose, Rank: rk, FD: 3}}); err != nil {
			t.Fatal(err)
		}
		if c != nil {
			if err := w.SetRankClock(rk, *c); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("a.iot", 0, 1000, nil)
	b := write("b.iot", 1, 5000, &Clock{Samples: []ClockSample{{Offset: 100}}})
	var out bytes.Buffer
	if _, err := Merge(&out, ReadOptions{}, a, b); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(out.Bytes()), int64(out.Len()), "merged.iot", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := startsOf(t, r), map[uint32][]int64{0: {0}, 1: {3900}}; !reflect.DeepEqual(got, want) {
		t.Errorf("merged: starts %v, want %v", got, want)
	}
}

// TestCheckPrintsClocks: iotrace check's report of a rank file with a
// measured clock has a line with its offsets, their error bounds, when
// they were measured and the drift between them; a file without one has
// no such line.
func TestCheckPrintsClocks(t *testing.T) {
	dir := t.TempDir()
	const sec = int64(1e9)
	clk := &Clock{Ref: 0, Method: "mpi-pingpong", Samples: []ClockSample{
		{At: 1 * sec, Offset: 250_000_000, Err: 40_000},
		{At: 11 * sec, Offset: 250_100_000, Err: 50_000},
	}}
	f0, f1 := filepath.Join(dir, "rank-00000.iot"), filepath.Join(dir, "rank-00001.iot")
	clockRankFile(t, f0, 0, 1_700_000_000*sec, []int64{0, 2 * sec}, nil)
	clockRankFile(t, f1, 1, 1_700_000_000*sec, []int64{0, 6 * sec}, clk)
	text := func(name string) string {
		rep, err := Check(name, false)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		rep.WriteText(&b)
		return b.String()
	}
	if got := text(f0); bytes.Contains([]byte(got), []byte("clock:")) {
		t.Errorf("rank 0 has no clock:\n%s", got)
	}
	got := text(f1)
	want := "  clock: rank 1 against rank 0 (mpi-pingpong): +250ms ±40µs at 1s, +250.1ms ±50µs at 11s; drift 10 ±9 µs/s\n"
	if !bytes.HasSuffix([]byte(got), []byte(want)) {
		t.Errorf("check of rank 1:\n%s\nwant it to end with\n%s", got, want)
	}
}
