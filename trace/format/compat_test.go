package format

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// TestSkipsUnknown writes what a later version might: a header field, a
// block kind, a column and an op this version does not know. The reader
// skips the first three and keeps the event of the unknown op.
func TestSkipsUnknown(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, trace.Meta{Creator: "future"})
	if err != nil {
		t.Fatal(err)
	}
	// An unknown block kind, framed like any other.
	w.mu.Lock()
	if err := w.writeBlockLocked(99, []byte("from the future"), BlockInfo{Rank: 0}); err != nil {
		t.Fatal(err)
	}
	// An events block with a column id 77 and an op 777.
	p := appendSummary(nil, 0, 2, 100, 200, []OpTotal{{Op: 777, Count: 2}})
	p = binary.AppendUvarint(p, 3) // columns
	// op: constant 777
	p = binary.AppendUvarint(p, colOp)
	p = append(p, layoutConst<<4)
	p = binary.AppendVarint(p, 777)
	p = binary.AppendUvarint(p, 1)
	p = binary.AppendUvarint(p, 0)
	p = binary.AppendUvarint(p, 0)
	// unknown column 77: two raw varints
	p = binary.AppendUvarint(p, 77)
	p = append(p, layoutValues<<4|stageRaw)
	p = binary.AppendVarint(p, 0)
	p = binary.AppendUvarint(p, 1)
	p = binary.AppendUvarint(p, 2)
	p = binary.AppendUvarint(p, 2)
	// start: gaps 100, 50
	p = binary.AppendUvarint(p, colStart)
	p = append(p, layoutValues<<4|stageRaw)
	p = binary.AppendVarint(p, 0)
	p = binary.AppendUvarint(p, 50)
	p = binary.AppendUvarint(p, 2)
	p = binary.AppendUvarint(p, 2)
	p = append(p, 5, 7, 4, 2) // column 77's bytes, then start's: zigzag(2)=4 (100), zigzag(1)=2 (150)
	if err := w.writeBlockLocked(kindEvents, p, BlockInfo{Rank: 0, Events: 2, MinT: 100, MaxT: 200, Ops: []OpTotal{{Op: 777, Count: 2}}}); err != nil {
		t.Fatal(err)
	}
	w.mu.Unlock()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	// An unknown header field: rewrite the header with one more field.
	var f fields
	f.str(200, "unknown header field")
	f.str(fieldCreator, "future")
	body := []byte(f)
	hdr := append([]byte(Magic), 1, 0, 0, 0, 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(hdr[12:], uint32(len(body)))
	hdr = append(hdr, body...)
	hdr = binary.LittleEndian.AppendUint32(hdr, crc(body))
	_, oldEnd, _ := readHeader("x", bytes.NewReader(data), int64(len(data)))
	data = append(hdr, data[oldEnd:]...) // block offsets move: the reader scans

	for _, salvage := range []bool{false, true} {
		r, err := NewReader(bytes.NewReader(data), int64(len(data)), "future.iot", ReadOptions{Salvage: salvage})
		if err != nil {
			t.Fatal(err)
		}
		if r.Meta().Creator != "future" {
			t.Fatalf("meta %+v", r.Meta())
		}
		src, err := r.Rank(0)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := trace.ReadAll(src)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 2 || evs[0].Op != 777 || evs[0].Op.Known() || evs[0].Start != 100 || evs[1].Start != 150 {
			t.Fatalf("events %+v", evs)
		}
		if evs[0].Op.String() != "op#777" {
			t.Fatalf("unknown op prints as %q", evs[0].Op.String())
		}
	}
}
