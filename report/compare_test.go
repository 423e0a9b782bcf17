package report

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// replayOf is handTrace as a replay might have gone: writes twice as
// slow, the bcast missing, one read too many and a stat the original
// did not make.
func replayOf() *trace.MemTrace {
	m := handTrace()
	for r, evs := range m.Events {
		var out []trace.Event
		for _, e := range evs {
			switch e.Op {
			case trace.OpWrite, trace.OpPwrite:
				e.Dur *= 2
			case trace.OpMPIBcast:
				continue
			}
			out = append(out, e)
		}
		m.Events[r] = out
	}
	m.Add(trace.Event{Rank: 1, Op: trace.OpRead, FD: 4, Size: 10, Ret: 10, Start: 100 * us, Dur: 5 * us},
		trace.Event{Rank: 2, Op: trace.OpStat, Path: m.Paths.Intern("/d"), Start: 9 * ms, Dur: 1 * ms})
	return m
}

func TestCompare(t *testing.T) {
	a, b := compute(t, handTrace(), Options{}), compute(t, replayOf(), Options{})
	c := Compare(a, b)
	var ops []string
	for _, r := range c.Rows {
		ops = append(ops, r.Op)
	}
	if got := opNames(a.Ops) + " stat"; got != joinOps(ops) {
		t.Fatalf("rows %q, want %q", joinOps(ops), got)
	}
	if m := c.Mismatches(); !slices.Equal(m, []string{"read", "MPI_Bcast", "stat"}) {
		t.Fatalf("mismatches %v", m)
	}
	row := func(op string) CompareRow {
		return c.Rows[slices.IndexFunc(c.Rows, func(r CompareRow) bool { return r.Op == op })]
	}
	// write: 4.004 ms → 8.008 ms.
	if r, ok := row("write").TimeRatio(); !ok || !near(r, 2) || !row("write").CountsMatch() {
		t.Errorf("write ratio %g %v", r, ok)
	}
	if r, ok := row("stat").TimeRatio(); ok || row("stat").A.Count != 0 || row("stat").B.Count != 1 {
		t.Errorf("stat: ratio %g %v, counts %d %d", r, ok, row("stat").A.Count, row("stat").B.Count)
	}
	if r := row("MPI_Bcast"); r.B.Count != 0 || r.B.Bandwidth() != 0 {
		t.Errorf("bcast %+v", r.B)
	}
	// Run time: 9 ms → 10 ms (the stat ends at 10 ms).
	if r, ok := c.DurationRatio(); !ok || !near(r, 10.0/9) {
		t.Errorf("duration ratio %g", r)
	}
	if c.Total.A.Count != 22 || c.Total.B.Count != 23 {
		t.Errorf("totals %d %d", c.Total.A.Count, c.Total.B.Count)
	}
	var buf bytes.Buffer
	if err := RenderCompare(&buf, c, "text"); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare.txt", buf.Bytes())
	buf.Reset()
	if err := RenderCompare(&buf, c, "csv"); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare.csv", buf.Bytes())
	buf.Reset()
	if err := RenderCompare(&buf, c, "json"); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare.json", buf.Bytes())
	var v struct {
		DurationRatio *float64 `json:"duration_ratio"`
		CountsMatch   bool     `json:"counts_match"`
		Mismatches    []string
		Ops           []struct {
			Op        string
			TimeRatio *float64 `json:"time_ratio"`
		}
	}
	if err := json.Unmarshal(buf.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if v.DurationRatio == nil || v.CountsMatch || len(v.Mismatches) != 3 || v.Ops[len(v.Ops)-1].TimeRatio != nil {
		t.Errorf("compare json %+v", v)
	}
	if err := RenderCompare(&buf, c, "yaml"); err == nil {
		t.Error("bad format accepted")
	}
	// A trace against itself: every count matches, every ratio is 1.
	self := Compare(a, a)
	if len(self.Mismatches()) != 0 {
		t.Errorf("self mismatches %v", self.Mismatches())
	}
	for _, r := range self.Rows {
		if x, ok := r.TimeRatio(); ok && x != 1 {
			t.Errorf("self %s ratio %g", r.Op, x)
		}
	}
}

func joinOps(ops []string) string {
	rows := make([]*OpRow, len(ops))
	for i, o := range ops {
		rows[i] = &OpRow{Op: o}
	}
	return opNames(rows)
}

// TestCompareSaysWhatFailed: a replay whose opens of directories all
// failed, with the same counts as the original, is not "all counts match"
// and nothing more: the comparison says which calls failed more often.
func TestCompareSaysWhatFailed(t *testing.T) {
	a := trace.NewMemTrace()
	d := a.Paths.Intern("/w/d")
	a.Add(trace.Event{Op: trace.OpOpenat, Path: d, Flags: 0x10000, Ret: 3, Dur: 1000},
		trace.Event{Op: trace.OpClose, FD: 3, Start: 2000, Dur: 1000})
	b := trace.NewMemTrace()
	d = b.Paths.Intern("/w/d")
	b.Add(trace.Event{Op: trace.OpOpenat, Path: d, Flags: 0x10000, Ret: -22, Dur: 1000},
		trace.Event{Op: trace.OpClose, FD: 3, Ret: -9, Start: 2000, Dur: 1000})
	c := Compare(compute(t, a, Options{}), compute(t, b, Options{}))
	if got := c.MoreErrors(); !slices.Equal(got, []string{"open (a 0, b 1)", "close (a 0, b 1)"}) {
		t.Fatalf("more errors %v", got)
	}
	var buf bytes.Buffer
	if err := RenderCompare(&buf, c, "text"); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(buf.Bytes(), []byte("More calls failed in b than in a: open (a 0, b 1), close (a 0, b 1)")) {
		t.Errorf("the comparison does not say it:\n%s", buf.String())
	}
}
