package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/report"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
)

// liveTrace is two ranks that open one shared file and one of their own,
// write, read and seek, inside nested labelled regions, with a barrier;
// rank 2 only opens a file the replay skips (in /proc), so it records no
// events at all.
func liveTrace() *trace.MemTrace {
	m := trace.NewMemTrace()
	shared := m.Paths.Intern("/data/shared.dat")
	outer, inner := m.Paths.Intern("outer"), m.Paths.Intern("inner")
	for r := uint32(0); r < 2; r++ {
		own := m.Paths.Intern("/data/own." + string(rune('a'+r)))
		t := int64(r) * 1000
		add := func(e trace.Event, dur int64) {
			e.Rank, e.Start, e.Dur = r, t, dur
			t += dur + 500
			m.Add(e)
		}
		add(trace.Event{Op: trace.OpRegionBegin, Path: outer}, 0)
		add(trace.Event{Op: trace.OpOpen, Path: shared, Flags: trace.ORdwr | trace.OCreat, Mode: 0o644, FD: 3, Ret: 3}, 4000)
		add(trace.Event{Op: trace.OpOpen, Path: own, Flags: trace.OWronly | trace.OCreat | trace.OTrunc, Mode: 0o644, FD: 4, Ret: 4}, 4000)
		add(trace.Event{Op: trace.OpRegionBegin, Path: inner}, 0)
		for i := int64(0); i < 50; i++ {
			add(trace.Event{Op: trace.OpPwrite, FD: 3, Offset: (int64(r)*50 + i) * 4096, Size: 4096, Ret: 4096}, 2000)
			add(trace.Event{Op: trace.OpWrite, FD: 4, Size: 100 + i, Ret: 100 + i}, 1000)
		}
		add(trace.Event{Op: trace.OpRegionEnd, Path: inner}, 0)
		add(trace.Event{Op: trace.OpMPIBarrier, Comm: trace.CommWorld}, 3000)
		add(trace.Event{Op: trace.OpLseek, FD: 4, Offset: 0, Ret: 0}, 500)
		for i := int64(0); i < 20; i++ {
			add(trace.Event{Op: trace.OpPread, FD: 3, Offset: i * 8192, Size: 8192, Ret: 8192}, 3000)
		}
		add(trace.Event{Op: trace.OpClose, FD: 3}, 1000)
		add(trace.Event{Op: trace.OpClose, FD: 4}, 1000)
		add(trace.Event{Op: trace.OpRegionEnd, Path: outer}, 0)
	}
	m.Add(trace.Event{Rank: 2, Op: trace.OpOpen, Path: m.Paths.Intern("/proc/self/status"), FD: 3, Ret: 3, Start: 100, Dur: 100})
	return m
}

// TestReportWhileReplaying: ioreplay computes its report while the ranks
// replay (session.Options.Report), not by reading its trace afterwards;
// every view of it, and the summary, must be what a reading of that trace
// gives (as iotrace stats would print it).
func TestReportWhileReplaying(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.iot")
	writeTrace(t, in, liveTrace())
	for _, c := range []struct {
		name  string
		views []string // view, or view+"+detail"
		args  []string
	}{
		{"trace", []string{"op+detail", "file", "region", "rank", "size"}, []string{in}},
		{"ior", []string{"op", "access"}, []string{filepath.Join("..", "..", "samples", "ior-4x2048.iot")}},
		{"btio", []string{"op+detail", "file"}, []string{"--ranks", "4", "btio-a"}},
	} {
		for _, v := range c.views {
			view, detailed, _ := strings.Cut(v, "+")
			detail := detailed != ""
			rec := filepath.Join(dir, c.name+"-"+view+".iot")
			args := []string{"--timing", "afap", "--quiet", "--format", "json", "--by", view, "--record", rec, "--force", "--target", filepath.Join(dir, "target")}
			if detail {
				args = append(args, "--detail")
			}
			got := mustRun(t, append(args, c.args...)...)
			r, err := format.Open(rec)
			if err != nil {
				t.Fatal(err)
			}
			st, err := report.Compute(r, report.Options{Detail: detail}.For(view, false))
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			if err := report.Render(&want, st, view, "json"); err != nil {
				t.Fatal(err)
			}
			if got != want.String() {
				t.Fatalf("%s, --by %s, detail %v: the report computed while replaying differs from its trace's\nwhile replaying:\n%s\nfrom the trace:\n%s",
					c.name, view, detail, got, want.String())
			}
		}
	}
}
