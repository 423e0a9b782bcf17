package format

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// TestRankOps: a rank read for some ops leaves out, unread, the blocks
// whose per-op totals hold none of them — here a damaged one.
func TestRankOps(t *testing.T) {
	name := filepath.Join(t.TempDir(), "t.iot")
	w, err := CreateOptions(name, trace.Meta{}, Options{BlockEvents: 10})
	if err != nil {
		t.Fatal(err)
	}
	var evs []trace.Event
	for i := range 10 {
		evs = append(evs, trace.Event{Op: trace.OpPwrite, Start: int64(i), Size: 8, Ret: 8})
	}
	for i := range 10 {
		evs = append(evs, trace.Event{Op: trace.OpPread, Start: int64(10 + i), Size: 8, Ret: 8})
	}
	if err := w.Rank(0).WriteEvents(evs); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(name)
	if err != nil {
		t.Fatal(err)
	}
	blocks := r.streams[0].blocks
	r.Close()
	if len(blocks) != 2 {
		t.Fatalf("%d events blocks, want 2", len(blocks))
	}
	// Damage the block of the writes.
	b, _ := os.ReadFile(name)
	b[blocks[0].Offset+blockHeaderLen+5] ^= 0xff
	os.WriteFile(name, b, 0o644)
	r, err = Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	src, err := r.RankOps(0, func(op trace.Op) bool { return op == trace.OpPread })
	if err != nil {
		t.Fatal(err)
	}
	got, err := trace.ReadAll(src)
	if err != nil || len(got) != 10 || got[0].Op != trace.OpPread {
		t.Fatalf("reads: %d events, %v", len(got), err)
	}
	all, _ := r.Rank(0)
	if _, err := trace.ReadAll(all); err == nil {
		t.Error("the damaged block was read without an error")
	}
}
