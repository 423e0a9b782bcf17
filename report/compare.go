package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/units"
)

// Comparison puts the op tables of two statistics side by side, such as
// a trace (A) and the trace of its replay (B).
type Comparison struct {
	A, B  *Stats
	Rows  []CompareRow // A's rows in A's order, then the rows only B has, in B's order
	Total CompareRow   // the TOTAL lines
}

// CompareRow is one op in both statistics. A side without the op has an
// empty row (count 0).
type CompareRow struct {
	Op   string
	A, B *OpRow
	// SkipA and SkipB are the calls of the row a side that is a replay's
	// trace skipped (Replay.Skips: /dev and /proc paths, standard
	// streams… by the replay's rules, which its notes give): calls it
	// did not make, by design.
	SkipA, SkipB int64
}

// CountsMatch reports whether both sides made the same number of calls,
// a replay's skipped calls counted as made.
func (r CompareRow) CountsMatch() bool { return r.A.Count+r.SkipA == r.B.Count+r.SkipB }

// mismatch reports whether the row's counts differ where they should
// not: rows of calls made inside MPI-IO calls (OpRow.InMPIIO) are not
// compared, how many an MPI library makes is its own business.
func (r CompareRow) mismatch() bool { return !r.CountsMatch() && !r.A.InMPIIO && !r.B.InMPIIO }

// TimeRatio is B's total time over A's; ok is false when A's is 0.
func (r CompareRow) TimeRatio() (ratio float64, ok bool) { return ratio64(r.B.Total, r.A.Total) }

// DurationRatio is B's run time (latest end − earliest start) over A's;
// ok is false when A's is 0.
func (c *Comparison) DurationRatio() (ratio float64, ok bool) {
	return ratio64(c.B.RunTime(), c.A.RunTime())
}

// Mismatches lists the ops whose counts differ, in row order. Rows of
// calls made inside MPI-IO calls (OpRow.InMPIIO) are not compared: how
// many an MPI library makes is its own business.
func (c *Comparison) Mismatches() []string {
	var out []string
	for _, r := range c.Rows {
		if r.mismatch() {
			out = append(out, r.Op)
		}
	}
	return out
}

// Skipped is the number of calls the replay (or replays) of the two
// sides skipped by their rules.
func (c *Comparison) Skipped() int64 { return c.Total.SkipA + c.Total.SkipB }

// MoreErrors lists the ops whose calls failed more often in B than in A
// ("open (a 0, b 12)"), in row order: a replay whose calls fail where the
// program's did not has not done what the program did, whatever its
// counts.
func (c *Comparison) MoreErrors() []string {
	var out []string
	for _, r := range c.Rows {
		if r.B.Errors > r.A.Errors && !r.A.InMPIIO && !r.B.InMPIIO {
			out = append(out, fmt.Sprintf("%s (a %d, b %d)", r.Op, r.A.Errors, r.B.Errors))
		}
	}
	return out
}

func ratio64(b, a int64) (float64, bool) {
	if a == 0 {
		return 0, false
	}
	return float64(b) / float64(a), true
}

// Compare matches the op rows of a and b by name. Both should come from
// Compute with the same Options, or families and calls will not meet.
func Compare(a, b *Stats) *Comparison {
	c := &Comparison{A: a, B: b, Total: CompareRow{Op: "TOTAL", A: a.Total, B: b.Total}}
	inB := map[string]*OpRow{}
	for _, r := range b.Ops {
		inB[r.Op] = r
	}
	seen := map[string]bool{}
	for _, r := range a.Ops {
		br := inB[r.Op]
		if br == nil {
			br = &OpRow{Op: r.Op, Family: r.Family, Class: r.Class, Dir: r.Dir, InMPIIO: r.InMPIIO, ranks: b.Ranks}
		}
		c.Rows = append(c.Rows, CompareRow{Op: r.Op, A: r, B: br})
		seen[r.Op] = true
	}
	for _, r := range b.Ops {
		if !seen[r.Op] {
			ar := &OpRow{Op: r.Op, Family: r.Family, Class: r.Class, Dir: r.Dir, InMPIIO: r.InMPIIO, ranks: a.Ranks}
			c.Rows = append(c.Rows, CompareRow{Op: r.Op, A: ar, B: r})
		}
	}
	if c.Total.A == nil {
		c.Total.A = Sum(a.Ops)
	}
	if c.Total.B == nil {
		c.Total.B = Sum(b.Ops)
	}
	sa, sb := a.skipsByRow(), b.skipsByRow()
	for i := range c.Rows {
		r := &c.Rows[i]
		if !r.A.InMPIIO {
			r.SkipA, r.SkipB = sa[r.Op], sb[r.Op]
			c.Total.SkipA += r.SkipA
			c.Total.SkipB += r.SkipB
		}
	}
	return c
}

// skipsByRow counts the calls the replay of which s is the trace skipped
// (none for another trace), by the row they would be in.
func (s *Stats) skipsByRow() map[string]int64 {
	m := map[string]int64{}
	if s.Replay == nil {
		return m
	}
	for _, k := range s.Replay.Skips {
		key := k.Op
		if op, ok := trace.ParseOp(k.Op); ok && !s.Detail {
			key = op.Info().Family
		}
		if k.Reason == trace.SkipReasonInMPIIO {
			key += inMPIIOSuffix // the rows of calls inside MPI-IO, never compared
		}
		m[key] += k.Count
	}
	return m
}

var compareColumns = []column{
	lcol("operation", "op"), rcol("count a", "count_a"), rcol("count b", "count_b"),
	rcol("time a", "total_seconds_a"), rcol("time b", "total_seconds_b"), rcol("time b/a", "time_ratio"),
	rcol("p50 a", "p50_seconds_a"), rcol("p50 b", "p50_seconds_b"),
	rcol("MB/s a", "bandwidth_mb_s_a"), rcol("MB/s b", "bandwidth_mb_s_b"), lcol("", "counts_match"),
}

func compareCells(r CompareRow) []cell {
	ratio, ok := r.TimeRatio()
	flag := cell{"", "true"}
	switch {
	case r.mismatch():
		flag = cell{"count mismatch", "false"}
	case r.SkipA+r.SkipB > 0:
		flag = cell{fmt.Sprintf("%d skipped by the replay", r.SkipA+r.SkipB), "true"}
	}
	return []cell{str(r.Op), num(r.A.Count), num(r.B.Count), nsCell(r.A.Total), nsCell(r.B.Total), ratioCell(ratio, ok),
		nsCell(r.A.Lat.Quantile(0.5)), nsCell(r.B.Lat.Quantile(0.5)), mbsCell(r.A.Bandwidth()), mbsCell(r.B.Bandwidth()), flag}
}

// table is the comparison table: a row per op, the TOTAL line, and a
// note on the counts.
func (c *Comparison) table() table {
	t := table{cols: compareColumns}
	for _, r := range c.Rows {
		t.rows = append(t.rows, compareCells(r))
	}
	t.rows = append(t.rows, compareCells(c.Total))
	skipped := ""
	if n := c.Skipped(); n > 0 {
		skipped = fmt.Sprintf(" (%d %s the replay skipped by its rules counted as made; its notes say why)", n, plural(n, "call"))
	}
	if m := c.Mismatches(); len(m) > 0 {
		t.notes = append(t.notes, fmt.Sprintf("Counts differ in %d %s: %s%s", len(m), plural(int64(len(m)), "row"), strings.Join(m, " "), skipped))
	} else {
		t.notes = append(t.notes, "All counts match"+skipped+".")
	}
	if e := c.MoreErrors(); len(e) > 0 {
		t.notes = append(t.notes, "More calls failed in b than in a: "+strings.Join(e, ", "))
	}
	return t
}

// RenderCompare writes c in format ("text", "csv", "json", "markdown"):
// a row per op with both counts (mismatches flagged), both total times
// and their ratio b/a, both medians and bandwidths; a TOTAL line; and the
// ratio of the run times.
func RenderCompare(w io.Writer, c *Comparison, format string) error {
	if format == "json" {
		return writeJSON(w, compareJSON(c))
	}
	t := c.table()
	side := func(name string, s *Stats) string {
		return fmt.Sprintf("%s: %d ranks, %s, %s", name, s.Ranks, s.EventsText(strconv.FormatInt), units.Duration(s.RunTime()))
	}
	head := side("a", c.A) + "\n" + side("b", c.B)
	if r, ok := c.DurationRatio(); ok {
		head += fmt.Sprintf("\nrun time b/a: %.2f", r)
	}
	// The issue lag of a side that is a replay's trace.
	for _, s := range []struct {
		name string
		r    *Replay
	}{{"a", c.A.Replay}, {"b", c.B.Replay}} {
		if s.r != nil && s.r.Lag.Count() > 0 {
			head += fmt.Sprintf("\nissue lag of %s (%s timing): %s", s.name, s.r.Timing, lagText(&s.r.Lag))
		}
	}
	return writeTables(w, []table{t}, head, format)
}

type jsonSide struct {
	Ranks    int     `json:"ranks"`
	Events   int64   `json:"events"`
	Duration float64 `json:"duration_seconds"`
}

type jsonCompareRow struct {
	Op          string   `json:"op"`
	CountA      int64    `json:"count_a"`
	CountB      int64    `json:"count_b"`
	CountsMatch bool     `json:"counts_match"`
	SkippedA    int64    `json:"skipped_a,omitempty"`
	SkippedB    int64    `json:"skipped_b,omitempty"`
	TotalA      float64  `json:"total_seconds_a"`
	TotalB      float64  `json:"total_seconds_b"`
	TimeRatio   *float64 `json:"time_ratio"`
	P50A        float64  `json:"p50_seconds_a"`
	P50B        float64  `json:"p50_seconds_b"`
	BandwidthA  float64  `json:"bandwidth_mb_s_a"`
	BandwidthB  float64  `json:"bandwidth_mb_s_b"`
}

type jsonCompare struct {
	A             jsonSide         `json:"a"`
	B             jsonSide         `json:"b"`
	DurationRatio *float64         `json:"duration_ratio"`
	CountsMatch   bool             `json:"counts_match"`
	Mismatches    []string         `json:"mismatches"`
	MoreErrors    []string         `json:"more_errors"`
	Ops           []jsonCompareRow `json:"ops"`
	Total         jsonCompareRow   `json:"total"`
	ReplayA       *jsonReplay      `json:"replay_a,omitempty"`
	ReplayB       *jsonReplay      `json:"replay_b,omitempty"`
}

func optRatio(r float64, ok bool) *float64 {
	if !ok {
		return nil
	}
	return &r
}

func compareJSON(c *Comparison) jsonCompare {
	row := func(r CompareRow) jsonCompareRow {
		return jsonCompareRow{Op: r.Op, CountA: r.A.Count, CountB: r.B.Count, CountsMatch: r.CountsMatch(), SkippedA: r.SkipA, SkippedB: r.SkipB,
			TotalA: float64(r.A.Total) / 1e9, TotalB: float64(r.B.Total) / 1e9, TimeRatio: optRatio(r.TimeRatio()),
			P50A: float64(r.A.Lat.Quantile(0.5)) / 1e9, P50B: float64(r.B.Lat.Quantile(0.5)) / 1e9,
			BandwidthA: r.A.Bandwidth(), BandwidthB: r.B.Bandwidth()}
	}
	side := func(s *Stats) jsonSide { return jsonSide{Ranks: s.Ranks, Events: s.Events, Duration: s.Duration()} }
	m := c.Mismatches()
	js := jsonCompare{A: side(c.A), B: side(c.B), DurationRatio: optRatio(c.DurationRatio()),
		CountsMatch: len(m) == 0, Mismatches: append([]string{}, m...), MoreErrors: append([]string{}, c.MoreErrors()...),
		Ops: []jsonCompareRow{}, Total: row(c.Total), ReplayA: replayJSON(c.A.Replay), ReplayB: replayJSON(c.B.Replay)}
	for _, r := range c.Rows {
		js.Ops = append(js.Ops, row(r))
	}
	return js
}
