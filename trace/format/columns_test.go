package format

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

func TestAppendVarints(t *testing.T) {
	var us []uint64
	for i := range 64 {
		us = append(us, 1<<i, 1<<i-1, 1<<i+1)
	}
	r := rand.New(rand.NewPCG(1, 1))
	for range 10000 {
		us = append(us, r.Uint64()>>r.IntN(64))
	}
	var want []byte
	for _, u := range us {
		want = binary.AppendUvarint(want, u)
	}
	for _, pre := range [][]byte{nil, {1, 2, 3}} {
		got := appendVarints(slices.Clone(pre), us)
		if !bytes.Equal(got, append(slices.Clone(pre), want...)) {
			t.Fatalf("prefix %v: varints differ", pre)
		}
	}
}

// columnEncodings returns the encoding byte of each column of every events
// block of a file.
func columnEncodings(t *testing.T, data []byte) []map[uint64]byte {
	t.Helper()
	rd, err := NewReader(bytes.NewReader(data), int64(len(data)), "x", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var out []map[uint64]byte
	for _, f := range rd.files {
		for _, bi := range f.blocks {
			if bi.Kind != kindEvents {
				continue
			}
			_, p, err := f.readBlock(bi.Offset, nil)
			if err != nil {
				t.Fatal(err)
			}
			d := &decoder{b: p}
			var x BlockInfo
			readSummary(d, &x)
			encs := map[uint64]byte{}
			for range d.count(4) {
				id := d.uvarint()
				encs[id] = d.bytes(1)[0]
				d.varint()
				d.uvarint()
				d.uvarint()
				d.uvarint()
			}
			out = append(out, encs)
		}
	}
	return out
}

// TestColumnLayouts: values of many distributions in one column (the
// durations) round-trip, whichever layout the encoder takes, and the
// encoder takes the layout that suits the distributions it is meant for.
func TestColumnLayouts(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	zipf := rand.NewZipf(r, 1.2, 1, 5000)
	cases := []struct {
		name   string
		dur    func(i int) int64
		layout int // expected layout, or -1 for any
		stage  int // expected stage, or -1 for any
	}{
		{"few small values", func(int) int64 { return int64(10 * (1 + r.IntN(3))) }, layoutValues, stageHuff},
		{"dense recurring", func(int) int64 { return 1000 + int64(zipf.Uint64()%2000) }, -1, -1},
		{"sparse recurring", func(int) int64 { return 1000 + 7*int64(zipf.Uint64()) + int64(r.IntN(2)) }, layoutDict, -1},
		{"recurring and huge", func(int) int64 {
			if r.IntN(10) == 0 {
				return r.Int64N(1 << 50)
			}
			return 500 + int64(zipf.Uint64()%300)
		}, -1, -1},
		{"periodic", func(i int) int64 { return []int64{100, 9000, 12, 40000, 7, 7}[i%6] + int64(i%6*(i/6%3)) }, layoutValues, stageZstd},
		{"uniform large", func(int) int64 { return r.Int64N(1 << 40) }, layoutValues, -1},
		{"uniform small", func(int) int64 { return r.Int64N(200) }, -1, -1},
		{"all distinct", func(i int) int64 { return int64(i) * 1001 }, -1, -1},
		{"negative and positive", func(int) int64 { return r.Int64N(2000) - 1000 }, -1, -1},
		{"extremes", func(i int) int64 { return []int64{-1 << 63, 1<<63 - 1, 0, -1}[r.IntN(4)] }, -1, -1},
	}
	// Blocks of 16384 events count every value up to 1<<16 in an array;
	// smaller ones mark the sparse values they see in a bitmap.
	for _, n := range []int{2 * 16384, 6000} {
		for _, tc := range cases {
			testColumnLayout(t, n, tc.name, tc.dur, tc.layout, tc.stage)
		}
	}
}

func testColumnLayout(t *testing.T, n int, name string, dur func(int) int64, layout, stage int) {
	t.Helper()
	paths := trace.NewPaths()
	p := paths.Intern("/f")
	ops := rand.New(rand.NewPCG(uint64(n), 1))
	evs := make([]trace.Event, n)
	for i := range evs {
		// Two ops at random: the op column, encoded before the durations,
		// takes its own path through the encoder.
		op := []trace.Op{trace.OpWrite, trace.OpPwrite}[ops.IntN(2)]
		evs[i] = trace.Event{Op: op, FD: 3, Path: p, Start: int64(i) * 1000, Dur: dur(i), Size: 4096, Ret: 4096}
	}
	// Two blocks: the encoder's state carries from one to the next.
	data := writeTrace(t, Options{BlockEvents: n / 2}, map[uint32][]trace.Event{0: evs}, paths)
	_, got := readTrace(t, data, ReadOptions{})
	for i := range evs {
		if got[0][i].Dur != evs[i].Dur {
			t.Fatalf("%s, %d events: event %d: duration %d, want %d", name, n, i, got[0][i].Dur, evs[i].Dur)
		}
	}
	for b, encs := range columnEncodings(t, data) {
		enc := encs[colDur]
		if layout >= 0 && int(enc>>4) != layout || stage >= 0 && int(enc&15) != stage {
			t.Errorf("%s, %d events: durations of block %d took encoding %#x, want layout %d stage %d", name, n, b, enc, layout, stage)
		}
	}
}

func TestLog2(t *testing.T) {
	for x := uint32(1); x < 1<<20; x += 1 + x/1000 {
		if d := log2(x) - math.Log2(float64(x)); d > 1e-12 || d < -0.006 {
			t.Fatalf("log2(%d) = %v, want %v", x, log2(x), math.Log2(float64(x)))
		}
	}
	if log2(1<<32-1) < 31.99 {
		t.Fatal("log2 of the largest count")
	}
}
