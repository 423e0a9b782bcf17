package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/convert/recorder"
)

// TestReplayRecorder: a Recorder trace of IOR, imported, replays: the
// replay's own trace makes its 32 writes and 32 reads of 64 KiB and its
// MPI collective calls, without waiting on any.
func TestReplayRecorder(t *testing.T) {
	tr, err := recorder.Open(filepath.Join("..", "..", "convert", "recorder", "testdata", "ior-posix-2ranks"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "ior.iot")
	writeTrace(t, in, tr)
	rec := filepath.Join(dir, "replay.iot")
	out := mustRun(t, "--timing", "afap", "--target", filepath.Join(dir, "target"), "--record", rec, in)
	if !strings.Contains(out, "replay: 2 ranks, 230 of 230 events") {
		t.Errorf("replay:\n%s", out)
	}
	st := stats(t, rec)
	got := map[string]int64{}
	var bytes int64
	for _, r := range st.Ops {
		got[r.Op] = r.Count
		if r.Op == "read" || r.Op == "write" {
			bytes += r.Bytes
		}
	}
	if got["write"] != 32 || got["read"] != 32 || bytes != 4<<20 || got["MPI_Barrier"] != 12 || got["MPI_Bcast"] != 8 {
		t.Errorf("replayed %v, %d bytes", got, bytes)
	}
	if st.End-st.Start > 5e9 {
		t.Errorf("the replay took %v: it waited on something", st.End-st.Start)
	}
}
