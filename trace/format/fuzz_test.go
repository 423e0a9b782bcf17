package format

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/tracegen"
)

// FuzzReader feeds arbitrary bytes to the reader, the salvaging reader and
// check: none may panic, and a reader that opens must read every rank to
// its end or to an error.
//
//	go test -run '^$' -fuzz '^FuzzReader$' -fuzztime 2m -fuzzminimizetime 2s ./trace/format
//
// (without -fuzzminimizetime a worker may spend a minute minimising each
// new input, and a short run fuzzes nothing).
func FuzzReader(f *testing.F) {
	r := rand.New(rand.NewPCG(9, 9))
	paths := trace.NewPaths()
	f.Add(writeTrace(f, Options{BlockEvents: 8}, map[uint32][]trace.Event{0: randomEvents(r, 0, 20, paths), 5: randomEvents(r, 5, 7, paths)}, paths))
	for _, wl := range workloads {
		tr := wl.mk(1)
		byRank, _ := materialise(f, tr)
		// Small seeds: the fuzzer minimises every input that finds new
		// code, which takes long for big ones.
		for rk := range byRank {
			if rk >= 2 {
				byRank[rk] = nil
			}
			byRank[rk] = byRank[rk][:min(len(byRank[rk]), 60)]
		}
		var buf bytes.Buffer
		encode(f, tr, byRank, &buf)
		f.Add(buf.Bytes())
	}
	var buf bytes.Buffer
	encode(f, tracegen.IOR(1, 3, 1), func() map[uint32][]trace.Event { m, _ := materialise(f, tracegen.IOR(1, 3, 1)); return m }(), &buf)
	f.Add(buf.Bytes()[:buf.Len()-5]) // truncated
	f.Add([]byte(Magic))
	// A rank with a clock (its rank-info fields of the clock after its
	// events), so that mutations reach the clock's decoding and the
	// aligned times.
	buf.Reset()
	w, err := NewWriter(&buf, trace.Meta{Epoch: 100})
	if err != nil {
		f.Fatal(err)
	}
	w.SetRankInfo(1, 50, "h", 7)
	w.Rank(1).WriteEvents(randomEvents(r, 1, 10, paths)[:0])
	w.Rank(1).WriteEvents([]trace.Event{{Op: trace.OpClose, Rank: 1, FD: 3, Start: 10}, {Op: trace.OpClose, Rank: 1, FD: 4, Start: 5000}})
	w.SetRankClock(1, Clock{Ref: 0, Method: "m", Samples: []ClockSample{{At: 20, Offset: -30, Err: 4}, {At: 4000, Offset: 70, Err: 5}}})
	if err := w.Close(); err != nil {
		f.Fatal(err)
	}
	f.Add(bytes.Clone(buf.Bytes()))
	f.Fuzz(func(t *testing.T, data []byte) {
		readAnything(data)
		// Mutations almost never keep the CRCs right, so the decoders
		// behind them see little of the fuzzer's input: read it again with
		// its CRCs made to match.
		if fixed := fixCRCs(data); !bytes.Equal(fixed, data) {
			readAnything(fixed)
		}
	})
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
