package format

import (
	"bytes"
	"os"
	"testing"
)

// TestColumnSizes prints the stored bytes per column of the benchmark
// workloads (run with IOTRACE_COLSIZES=1); it tunes the encoding.
func TestColumnSizes(t *testing.T) {
	if os.Getenv("IOTRACE_COLSIZES") == "" {
		t.Skip("set IOTRACE_COLSIZES=1 to print column sizes")
	}
	for _, wl := range workloads {
		tr := wl.mk(1)
		byRank, n := materialise(t, tr)
		var buf bytes.Buffer
		encode(t, tr, byRank, &buf)
		data := buf.Bytes()
		rd, err := NewReader(bytes.NewReader(data), int64(len(data)), "x", ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sizes := map[uint64]int{}
		for _, f := range rd.files {
			for _, bi := range f.blocks {
				if bi.Kind != kindEvents {
					continue
				}
				_, p, _ := f.readBlock(bi.Offset, nil)
				d := &decoder{b: p}
				var x BlockInfo
				readSummary(d, &x)
				nc := d.count(4)
				for i := 0; i < nc; i++ {
					id := d.uvarint()
					d.bytes(1)
					d.varint()
					d.uvarint()
					d.uvarint()
					sizes[id] += int(d.uvarint())
				}
			}
		}
		t.Logf("%s: %d events, %.3f bytes/event", wl.name, n, float64(len(data))/float64(n))
		for id := uint64(1); id <= numCols; id++ {
			if sizes[id] > 0 {
				t.Logf("  col %2d: %.3f bytes/event", id, float64(sizes[id])/float64(n))
			}
		}
	}
}
