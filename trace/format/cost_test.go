package format

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// TestRecorderCost: the header's note and a rank's recorder cost are
// read back as written, through a merge too, and check prints the cost;
// a file without them (every file before them) reads with none.
func TestRecorderCost(t *testing.T) {
	dir := t.TempDir()
	cost := Cost{InCall: 11_800, Between: 27_000, Stop: 9_500, Spread: 1_200, Calls: 4096, Stops: 4100, ClampedDur: 12, ClampedGap: 1800, Image: 150_000, Images: 7, Replace: 210_000, Replaced: 2, FollowedStops: 4000, StopOut: 80_000_000}
	write := func(name string, c *Cost, note string) string {
		p := filepath.Join(dir, name)
		w, err := Create(p, trace.Meta{Epoch: 1, Creator: "iotrace record", Corrected: note})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Rank(0).WriteEvents([]trace.Event{{Op: trace.OpClose, FD: 3, Dur: 5}}); err != nil {
			t.Fatal(err)
		}
		if c != nil {
			if err := w.SetRankCost(0, *c); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	note := "ptrace calibration: 11.8 µs of each call's duration, 27.0 µs between calls"
	with, without := write("with.iot", &cost, note), write("without.iot", nil, "")
	merged := filepath.Join(dir, "merged.iot")
	var mb bytes.Buffer
	if _, err := Merge(&mb, ReadOptions{}, with); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(merged, mb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{with, merged} {
		r, err := Open(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Meta().Corrected; got != note {
			t.Errorf("%s: header says %q", f, got)
		}
		if c := r.Summary()[0].Cost; c == nil || *c != cost {
			t.Errorf("%s: cost %+v, want %+v", f, c, cost)
		}
		r.Close()
	}
	r, err := Open(without)
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Summary()[0].Cost; c != nil || r.Meta().Corrected != "" {
		t.Errorf("a file without the fields: cost %+v, header %q", c, r.Meta().Corrected)
	}
	if !strings.HasPrefix(r.Meta().TimesNote(), "times as measured") {
		t.Errorf("note of a capture without calibration: %q", r.Meta().TimesNote())
	}
	r.Close()
	rep, err := Check(with, false)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	rep.WriteText(&b)
	want := "  recorder cost: rank 0: 11.8 µs of each call's duration and 27.0 µs between calls removed (±1.2 µs), 9.5 µs for each of 4100 unrecorded stops (4000 of them following the run: 20.0 µs each on average); 4096 calls, 12 durations and 1800 gaps shorter than that (made 0); 150.0 µs at each of 7 process starts; 210.0 µs at each of 2 execs that replaced an image with records\n"
	if !strings.HasSuffix(b.String(), want) {
		t.Errorf("check:\n%s\nwant it to end with\n%s", b.String(), want)
	}
}

// TestRecorderCostField: a cost field of fewer values (an older writer)
// reads with the rest 0, one of more (a later writer) with the extra
// ignored; a broken one is an error.
func TestRecorderCostField(t *testing.T) {
	c, err := readCost([]byte{0x05, 0x07})
	if err != nil || *c != (Cost{InCall: 5, Between: 7}) {
		t.Errorf("two values: %+v, %v", c, err)
	}
	c, err = readCost([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	if err != nil || c.ClampedGap != 8 {
		t.Errorf("ten values: %+v, %v", c, err)
	}
	if _, err := readCost([]byte{0x80}); err == nil {
		t.Error("a cut varint read without an error")
	}
}
