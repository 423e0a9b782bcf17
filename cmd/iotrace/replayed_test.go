package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/convert"
	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/replay/session"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/tracegen"
)

// TestReplayedTrace: the trace a replay records says how the replay went,
// so that iotrace stats of it alone prints the replay's summary (issue
// lag, skips) and iotrace compare of a trace and its replay shows the
// replay's issue lag.
func TestReplayedTrace(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "ior.iot")
	if _, err := convert.WriteTrace(in, tracegen.IOR(2, 20, 1)); err != nil {
		t.Fatal(err)
	}
	open := func(warn io.Writer) (trace.Trace, error) { return (&convert.Opener{Warn: warn}).Open([]string{in}) }
	rec := filepath.Join(dir, "replay.iot")
	out, err := session.Run(context.Background(), open, session.Options{
		Replay: replay.Options{Timing: replay.Original, Speed: 100}, Target: filepath.Join(dir, "target"), Record: rec,
	}, session.Alone{})
	if err != nil {
		t.Fatal(err)
	}
	out.Close()
	stats := mustRun(t, "stats", rec)
	for _, want := range []string{"replay: 2 ranks, 88 of 88 events in ", "timing original", "issue lag: p50 "} {
		if !strings.Contains(stats, want) {
			t.Errorf("stats of the replay's trace lacks %q:\n%s", want, stats)
		}
	}
	cmp := mustRun(t, "compare", in, rec)
	if !strings.Contains(cmp, "issue lag of b (original timing): p50 ") {
		t.Errorf("compare lacks the issue lag of the replay:\n%s", cmp)
	}
	if js := mustRun(t, "stats", "--format", "json", rec); !strings.Contains(js, `"replay": {`) || !strings.Contains(js, `"lag_by_op": [`) {
		t.Errorf("JSON report lacks the replay:\n%s", js)
	}
}
