package format

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/tracegen"
)

// FuzzReader feeds arbitrary bytes to the reader, the salvaging reader and
// check: none may panic, and a reader that opens must read every rank to
// its end or to an error.
func FuzzReader(f *testing.F) {
	r := rand.New(rand.NewPCG(9, 9))
	paths := trace.NewPaths()
	f.Add(writeTrace(f, Options{BlockEvents: 8}, map[uint32][]trace.Event{0: randomEvents(r, 0, 20, paths), 5: randomEvents(r, 5, 7, paths)}, paths))
	for _, wl := range workloads {
		tr := wl.mk(1)
		byRank, _ := materialise(f, tr)
		for rk := range byRank {
			byRank[rk] = byRank[rk][:min(len(byRank[rk]), 300)]
		}
		var buf bytes.Buffer
		encode(f, tr, byRank, &buf)
		f.Add(buf.Bytes())
	}
	var buf bytes.Buffer
	encode(f, tracegen.IOR(1, 3, 1), func() map[uint32][]trace.Event { m, _ := materialise(f, tracegen.IOR(1, 3, 1)); return m }(), &buf)
	f.Add(buf.Bytes()[:buf.Len()-5]) // truncated
	f.Add([]byte(Magic))
	f.Fuzz(func(t *testing.T, data []byte) {
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
	})
}
