package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/units"
)

// HTMLOptions are what an HTML report says beyond the statistics.
type HTMLOptions struct {
	Title  string   // the heading; "" for "I/O report" ("Comparison" for two traces)
	Inputs []string // what the report was computed from, listed under the heading
	// NameA and NameB name the two sides of a comparison ("original",
	// "replay"); "" for "a" and "b".
	NameA, NameB string
	Notes        []HTMLNote // further sections of preformatted text, e.g. a replay's summary
}

// HTMLNote is a section of preformatted text at the end of an HTML report.
type HTMLNote struct{ Title, Text string }

// maxHTMLRows bounds the rows of each table of an HTML report; the rest
// are counted in a note (iotrace stats --by VIEW lists them all).
const maxHTMLRows = 200

// maxHTMLRegions bounds the region tables of an HTML report.
const maxHTMLRegions = 50

// RenderHTML writes s as one self-contained HTML page: summary figures,
// the per-operation table, charts of the time per operation, of request
// sizes, of bandwidth over time and a per-rank timeline, and the size,
// rank, file and region tables. The page needs no network and runs no
// script: styles are inline and charts are inline SVG, so it opens in
// any browser, prints, and can be mailed as one file.
func RenderHTML(w io.Writer, s *Stats, o HTMLOptions) error {
	return htmlTemplate().Execute(w, statsPage(s, o))
}

// statsPage is the page RenderHTML prints.
func statsPage(s *Stats, o HTMLOptions) *htmlPage {
	p := &htmlPage{Title: o.Title, Inputs: o.Inputs}
	if p.Title == "" {
		p.Title = "I/O report"
	}
	p.Summary = fmt.Sprintf("%s ranks, %s, run time %s", groupDigits(int64(s.Ranks)), s.EventsText(groupBase), units.Duration(s.RunTime()))
	p.Cards = statsCards(s)

	ops := htmlSection{ID: "ops", Title: "Operations",
		Intro: "Count and total time over all ranks; time per rank is the total divided by the ranks of the trace; " +
			"bandwidth is bytes over time per rank (MB = 10⁶ B)."}
	ops.Tables = append(ops.Tables, htmlTableOf("table-op", s.tables("op")[0]))
	if len(s.Ops) > 0 {
		ops.Legend = activityLegend()
		ops.Charts = append(ops.Charts, timePerOpChart("chart-time", "Time per rank in each operation", []*Stats{s}, nil))
	}
	p.Sections = append(p.Sections, ops)

	over := htmlSection{ID: "time", Title: "Over time",
		Intro: "Time runs from the trace's first call to its last end. Bandwidth is the bytes moved per second of run time, " +
			"summed over ranks (a call's bytes spread over its duration). In the timeline each row is a rank; the height of " +
			"each colour is the share of that moment the rank spent in such calls (full height: always in a call; empty: computing or waiting)."}
	if len(s.Activity.Bins) > 0 {
		over.Legend = activityLegend()
		span := s.RunTime()
		pts := ratePoints(s)
		over.Charts = append(over.Charts,
			bandwidthChart("chart-bandwidth", "Bandwidth over time", pts, span, maxRate(pts)),
			timelineChart("chart-timeline", "Per-rank timeline", s, span))
	} else {
		over.Notes = append(over.Notes, "No calls.")
	}
	p.Sections = append(p.Sections, over)

	sizes := htmlSection{ID: "sizes", Title: "Request sizes", Grid: true}
	sizes.Charts = sizeCharts(s)
	sizes.Tables = append(sizes.Tables, htmlTableOf("table-size", s.tables("size")[0]))
	p.Sections = append(p.Sections, sizes)

	p.Sections = append(p.Sections,
		htmlSection{ID: "ranks", Title: "Ranks", Tables: []htmlTable{htmlTableOf("table-rank", s.tables("rank")[0])}},
		htmlSection{ID: "files", Title: "Files", Tables: []htmlTable{htmlTableOf("table-file", s.tables("file")[0])}})
	acc := htmlSection{ID: "access", Title: "Access patterns",
		Intro: "Per file, as Darshan counts them (trace/access): sequential accesses are at an offset above the last byte the rank " +
			"read (wrote) since it opened the file, consecutive ones right after it; strides are the gaps of sequential accesses. " +
			"The heatmap shows the bytes each rank moved in each moment, darker for more (each shade ten times the one before)."}
	if s.AccessCounted {
		at := s.accessTables()
		acc.Tables = append(acc.Tables, htmlTableOf("table-access", at[0]))
	} else {
		acc.Notes = append(acc.Notes, "Not counted for this report (report.Options.Access).")
	}
	if len(s.Activity.Bins) > 0 {
		acc.Charts = append(acc.Charts, heatmapChart("chart-heatmap", "Heatmap: bytes read and written per rank over time", s, s.RunTime()))
	}
	p.Sections = append(p.Sections, acc)
	regs := htmlSection{ID: "regions", Title: "Regions"}
	for i, t := range s.tables("region") {
		if i == maxHTMLRegions {
			regs.Notes = append(regs.Notes, fmt.Sprintf("%s more regions not shown (iotrace stats --by region lists them all).",
				groupDigits(int64(len(s.Regions)-maxHTMLRegions))))
			break
		}
		regs.Tables = append(regs.Tables, htmlTableOf(fmt.Sprintf("table-region-%d", i), t))
	}
	p.Sections = append(p.Sections, regs)
	if _, err := s.BeffIO(); err == nil {
		// A run of samples/beffio.iop: its value (stats --beffio).
		t := s.beffTable(s.Detail)
		p.Sections = append(p.Sections, htmlSection{ID: "beffio", Title: "b_eff_io", Tables: []htmlTable{htmlTableOf("table-beffio", t)}})
	}
	p.notes(append(replayNotes("Replay", s.Replay), o.Notes...))
	return p
}

// RenderCompareHTML writes c as one self-contained HTML page (see
// RenderHTML): the two sides' summary figures, the comparison table, the
// time per operation of both, their bandwidth over time and timelines on
// one time scale, their size distributions, and each side's op table.
func RenderCompareHTML(w io.Writer, c *Comparison, o HTMLOptions) error {
	return htmlTemplate().Execute(w, comparePage(c, o))
}

// comparePage is the page RenderCompareHTML prints.
func comparePage(c *Comparison, o HTMLOptions) *htmlPage {
	na, nb := cmp2(o.NameA, "a"), cmp2(o.NameB, "b")
	p := &htmlPage{Title: cmp2(o.Title, "Comparison"), Inputs: o.Inputs}
	side := func(name string, s *Stats) string {
		return fmt.Sprintf("%s: %s ranks, %s, run time %s", name, groupDigits(int64(s.Ranks)), s.EventsText(groupBase), units.Duration(s.RunTime()))
	}
	p.Summary = side(na, c.A) + " · " + side(nb, c.B)
	p.Cards = compareCards(c, na, nb)
	sides := []legendItem{{Class: "sa", Text: na}, {Class: "sb", Text: nb}}

	t := c.table()
	ops := htmlSection{ID: "ops", Title: "Operations", Legend: sides,
		Intro: fmt.Sprintf("Each operation in %s and %s; ratios are %s over %s.", na, nb, nb, na)}
	ops.Tables = append(ops.Tables, sideBySide(htmlTableOf("table-compare", t), na, nb))
	if len(c.Rows) > 0 {
		ops.Charts = append(ops.Charts, timePerOpChart("chart-time", "Time per rank in each operation", []*Stats{c.A, c.B}, c.Rows))
	}
	p.Sections = append(p.Sections, ops)

	over := htmlSection{ID: "time", Title: "Over time",
		Intro: "Both runs on one time scale, each from its own first call. Bandwidth is the bytes moved per second, summed over ranks; " +
			"in the timelines the height of each colour is the share of that moment a rank spent in such calls."}
	span := max(c.A.RunTime(), c.B.RunTime())
	pa, pb := ratePoints(c.A), ratePoints(c.B)
	topA, topB, capA, capB := sharedScale(maxRate(pa), maxRate(pb))
	if len(c.A.Activity.Bins)+len(c.B.Activity.Bins) > 0 {
		over.Legend = activityLegend()
		over.Charts = append(over.Charts,
			bandwidthChart("chart-bandwidth-a", "Bandwidth over time: "+na+capA, pa, span, topA),
			bandwidthChart("chart-bandwidth-b", "Bandwidth over time: "+nb+capB, pb, span, topB),
			timelineChart("chart-timeline-a", "Per-rank timeline: "+na, c.A, span),
			timelineChart("chart-timeline-b", "Per-rank timeline: "+nb, c.B, span))
	} else {
		over.Notes = append(over.Notes, "No calls.")
	}
	p.Sections = append(p.Sections, over)

	sizes := htmlSection{ID: "sizes", Title: "Request sizes", Legend: sides}
	sizes.Tables = append(sizes.Tables, sideBySide(htmlTableOf("table-size", compareSizes(c)), na, nb))
	p.Sections = append(p.Sections, sizes)

	p.Sections = append(p.Sections,
		htmlSection{ID: "ops-a", Title: "Operations: " + na, Tables: []htmlTable{htmlTableOf("table-op-a", c.A.tables("op")[0])}},
		htmlSection{ID: "ops-b", Title: "Operations: " + nb, Tables: []htmlTable{htmlTableOf("table-op-b", c.B.tables("op")[0])}})
	notes := replayNotes("Replay: "+nb, c.B.Replay)
	if c.A.Replay != nil {
		notes = append(replayNotes("Replay: "+na, c.A.Replay), notes...)
	}
	p.notes(append(notes, o.Notes...))
	return p
}

func cmp2(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// notes puts the notes first: they say what the figures are of (a
// replay's summary: its failures, skips and issue lag).
// replayNotes is the section of a replay's summary, if there is a replay.
func replayNotes(title string, r *Replay) []HTMLNote {
	if r == nil {
		return nil
	}
	var b strings.Builder
	r.WriteText(&b)
	return []HTMLNote{{Title: title, Text: b.String()}}
}

func (p *htmlPage) notes(ns []HTMLNote) {
	var secs []htmlSection
	for i, n := range ns {
		secs = append(secs, htmlSection{ID: fmt.Sprintf("note-%d", i), Title: n.Title, Pre: n.Text})
	}
	p.Sections = append(secs, p.Sections...)
}

// The page model the template prints. Every string is text: the template
// escapes it for its place (element text or attribute).
type htmlPage struct {
	Title    string
	Inputs   []string
	Summary  string
	Cards    []htmlCard
	Sections []htmlSection
}

type htmlCard struct {
	Label, Value, Sub string
	Class             string // "warn" for a figure that needs attention
}

type htmlSection struct {
	ID, Title, Intro string
	Legend           []legendItem
	Charts           []*svgChart
	Grid             bool // charts side by side
	Tables           []htmlTable
	Notes            []string
	Pre              string
}

type legendItem struct{ Class, Text string }

type htmlTable struct {
	ID, Title string
	Groups    []htmlGroup // a header row above Cols, when set
	Cols      []htmlCol
	Rows      []htmlRow
	Notes     []string
}

type htmlGroup struct {
	Head string
	Span int
}

type htmlCol struct {
	Head string
	Num  bool
}

type htmlRow struct {
	Class string // "total", "flag"
	Cells []string
}

// htmlTableOf turns a table of a text view into an HTML table: the
// columns people read, their human cells, at most maxHTMLRows rows.
func htmlTableOf(id string, t table) htmlTable {
	h := htmlTable{ID: id, Title: t.title, Notes: t.notes}
	var show []int
	for i, c := range t.cols {
		if c.shown() {
			show = append(show, i)
			h.Cols = append(h.Cols, htmlCol{Head: c.head, Num: c.right})
		}
	}
	for n, r := range t.rows {
		if n == maxHTMLRows && len(t.rows) > maxHTMLRows+1 {
			h.Notes = append([]string{fmt.Sprintf("%s more rows not shown (iotrace stats --by … lists every row).",
				groupDigits(int64(len(t.rows)-maxHTMLRows)))}, h.Notes...)
			break
		}
		row := htmlRow{}
		for _, i := range show {
			v := r[i].human
			if t.cols[i].right {
				v = groupNumber(v)
			}
			row.Cells = append(row.Cells, v)
		}
		switch {
		case r[0].human == "TOTAL":
			row.Class = "total"
		case slices.Contains(row.Cells, "straggler"), slices.Contains(row.Cells, "count mismatch"):
			row.Class = "flag"
		}
		h.Rows = append(h.Rows, row)
	}
	return h
}

// sideBySide gives the columns of the two sides of a comparison ("time
// a", "time b", "time b/a") a group header ("time") over the names of
// the sides.
func sideBySide(t htmlTable, na, nb string) htmlTable {
	for i, c := range t.Cols {
		group, sub := "", c.Head
		for suffix, name := range map[string]string{" a": na, " b": nb, " b/a": "ratio"} {
			if strings.HasSuffix(c.Head, suffix) {
				group, sub = strings.TrimSuffix(c.Head, suffix), name
			}
		}
		t.Cols[i].Head = sub
		if n := len(t.Groups); n > 0 && group != "" && t.Groups[n-1].Head == group {
			t.Groups[n-1].Span++
		} else {
			t.Groups = append(t.Groups, htmlGroup{Head: group, Span: 1})
		}
	}
	return t
}

// statsCards are the figures at the top of a report.
func statsCards(s *Stats) []htmlCard {
	var rd, wr, rdN, wrN int64
	for _, r := range s.Ops {
		if r.InMPIIO {
			continue // their bytes are the MPI-IO calls' around them
		}
		switch r.Dir {
		case trace.DirRead:
			rd, rdN = rd+r.Bytes, rdN+r.Count
		case trace.DirWrite:
			wr, wrN = wr+r.Bytes, wrN+r.Count
		}
	}
	var ioTime int64
	for _, r := range s.ByRank {
		ioTime += r.IOTime()
	}
	run := s.RunTime()
	perRank := int64(0)
	if s.Ranks > 0 {
		perRank = ioTime / int64(s.Ranks)
	}
	share := ""
	if run > 0 {
		share = fmt.Sprintf("%.0f %% of the run time", 100*float64(perRank)/float64(run))
	}
	cards := []htmlCard{
		{Label: "Ranks", Value: groupDigits(int64(s.Ranks)), Sub: groupDigits(s.Events) + " events"},
		{Label: "Run time", Value: units.Duration(run), Sub: "first call to last end"},
		{Label: "I/O time per rank", Value: units.Duration(perRank), Sub: share},
		{Label: "Data read", Value: units.Bytes(rd), Sub: groupDigits(rdN) + " " + plural(rdN, "call")},
		{Label: "Data written", Value: units.Bytes(wr), Sub: groupDigits(wrN) + " " + plural(wrN, "call")},
	}
	errs := htmlCard{Label: "Errors", Value: groupDigits(s.Total.Errors), Sub: "failed calls"}
	if s.Total.Errors > 0 {
		errs.Class = "warn"
	}
	strag := htmlCard{Label: "Stragglers", Value: groupDigits(int64(len(s.Stragglers))), Sub: "slow ranks"}
	if len(s.Stragglers) > 0 {
		strag.Class = "warn"
		var rs []string
		for i, r := range s.Stragglers {
			if i == 8 {
				rs = append(rs, "…")
				break
			}
			rs = append(rs, strconv.FormatUint(uint64(r), 10))
		}
		strag.Sub = "rank " + strings.Join(rs, ", ")
	}
	return append(cards, errs, strag)
}

func compareCards(c *Comparison, na, nb string) []htmlCard {
	ra, rb := c.A.RunTime(), c.B.RunTime()
	run := htmlCard{Label: "Run time " + nb + "/" + na, Value: "-", Sub: units.Duration(ra) + " → " + units.Duration(rb)}
	if r, ok := c.DurationRatio(); ok {
		run.Value = strconv.FormatFloat(r, 'f', 2, 64) + "×"
	}
	tr := htmlCard{Label: "Call time " + nb + "/" + na, Value: "-", Sub: units.Duration(c.Total.A.Total) + " → " + units.Duration(c.Total.B.Total)}
	if r, ok := c.Total.TimeRatio(); ok {
		tr.Value = strconv.FormatFloat(r, 'f', 2, 64) + "×"
	}
	counts := htmlCard{Label: "Counts", Value: "match", Sub: "every operation"}
	if n := c.Skipped(); n > 0 {
		counts.Sub = fmt.Sprintf("%s %s skipped by the replay's rules", groupDigits(n), plural(n, "call"))
	}
	if m := c.Mismatches(); len(m) > 0 {
		counts = htmlCard{Label: "Counts", Value: "differ", Sub: fmt.Sprintf("in %d %s", len(m), plural(int64(len(m)), "operation")), Class: "warn"}
	}
	both := func(label string, a, b int64) htmlCard {
		if a == b {
			return htmlCard{Label: label, Value: groupDigits(a), Sub: "in both"}
		}
		return htmlCard{Label: label, Value: groupDigits(b), Sub: fmt.Sprintf("%s in %s", groupDigits(a), na), Class: "warn"}
	}
	return []htmlCard{run, tr, counts, both("Ranks", int64(c.A.Ranks), int64(c.B.Ranks)), both("Events", c.A.Events, c.B.Events)}
}

// compareSizes is the size distributions of both sides in one table.
func compareSizes(c *Comparison) table {
	type key struct {
		op       string
		min, max int64
	}
	counts := map[key]*[2]int64{}
	var order []key
	for side, s := range []*Stats{c.A, c.B} {
		for _, r := range s.Sizes {
			k := key{r.Op, r.Min, r.Max}
			if counts[k] == nil {
				counts[k] = &[2]int64{}
				order = append(order, k)
			}
			counts[k][side] += r.Count
		}
	}
	// A row's sizes are compared as its counts are (Comparison.Mismatches):
	// not those of calls inside MPI-IO, and not where the replay skipped
	// calls by its rules (their sizes are not in its trace).
	excused := map[string]bool{}
	for _, r := range c.Rows {
		excused[r.Op] = r.A.InMPIIO || r.B.InMPIIO || r.SkipA+r.SkipB > 0
	}
	t := table{cols: []column{lcol("operation", "op"), rcol("size", "size"), rcol("count a", "count_a"), rcol("count b", "count_b"), lcol("", "match")}}
	for _, k := range order {
		n := counts[k]
		flag := ""
		if n[0] != n[1] && !excused[k.op] {
			flag = "count mismatch"
		}
		t.rows = append(t.rows, []cell{str(k.op), str(sizeLabel(SizeRow{Min: k.min, Max: k.max})), num(n[0]), num(n[1]), str(flag)})
	}
	t.notes = append(t.notes, fmt.Sprintf("Requested sizes: exact when an operation has at most %d distinct sizes, power-of-two buckets [2^k, 2^(k+1)) otherwise; the two sides may differ in which.", MaxExactSizes))
	return t
}

func sizeLabel(r SizeRow) string {
	if r.Exact() {
		return units.Bytes(r.Min)
	}
	return "[" + units.Bytes(r.Min) + ", " + units.Bytes(r.Max+1) + ")"
}

// percent prints a share (0.123) as "12 %", with a decimal below 10 %
// and "<0.1 %" for a share too small to show.
func percent(f float64) string {
	switch p := 100 * f; {
	case p == 0:
		return "0 %"
	case p < 0.05:
		return "<0.1 %"
	case p < 9.95:
		return strconv.FormatFloat(p, 'f', 1, 64) + " %"
	default:
		return strconv.FormatFloat(p, 'f', 0, 64) + " %"
	}
}

// groupNumber groups the digits of the integer part of v when v is a
// plain decimal number ("2174284.16" → "2,174,284.16"), and returns
// anything else as it is.
func groupNumber(v string) string {
	whole, frac, dot := strings.Cut(v, ".")
	n, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || strings.HasPrefix(whole, "+") {
		return v
	}
	if dot {
		if _, err := strconv.ParseUint(frac, 10, 64); err != nil || frac == "" {
			return v
		}
		return groupDigits(n) + "." + frac
	}
	return groupDigits(n)
}

// groupDigits prints n with thin groups of three digits: 1,234,567.
// groupBase is groupDigits with the signature of strconv.FormatInt (base
// 10 only), for Stats.EventsText.
func groupBase(n int64, _ int) string { return groupDigits(n) }

func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// ---- Charts: inline SVG built from a few primitives ----

// svgChart is one chart: shapes in a viewBox W × H wide, printed by the
// template as inline SVG.
type svgChart struct {
	ID, Caption string
	W, H        int
	Rects       []svgRect
	Lines       []svgLine
	Paths       []svgPath
	Groups      []svgGroup
	Texts       []svgText
}

// svgGroup is shapes that share a tooltip.
type svgGroup struct {
	Tip   string
	Rects []svgRect
}

type svgRect struct {
	X, Y, W, H string
	Class, Tip string
}

type svgLine struct{ X1, Y1, X2, Y2, Class string }

type svgPath struct{ D, Class string }

type svgText struct {
	X, Y, Anchor, Class, Text string
	Tip                       string
}

func fx(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func (c *svgChart) rect(x, y, w, h float64, class, tip string) {
	c.Rects = append(c.Rects, svgRect{fx(x), fx(y), fx(max(w, 0)), fx(max(h, 0)), class, tip})
}

func (c *svgChart) line(x1, y1, x2, y2 float64, class string) {
	c.Lines = append(c.Lines, svgLine{fx(x1), fx(y1), fx(x2), fx(y2), class})
}

func (c *svgChart) text(x, y float64, anchor, class, s string) {
	c.Texts = append(c.Texts, svgText{X: fx(x), Y: fx(y), Anchor: anchor, Class: class, Text: s})
}

const chartW = 960 // viewBox width of every chart

// Text widths are estimated, not measured: about 0.6 em per character of
// the 13-unit chart font, which the proportional system fonts stay under
// for digits and lower case.
const charW = 7.4

func textW(s string) float64 { return float64(len([]rune(s))) * charW }

// clip shortens s to n characters with an ellipsis.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func activityClass(a Activity) string {
	if a < 0 || a >= NumActivities {
		return "ax"
	}
	return "a" + strconv.Itoa(int(a))
}

func rowActivity(r *OpRow) Activity { return activityOf(trace.OpInfo{Class: r.Class, Dir: r.Dir}) }

func activityLegend() []legendItem {
	var l []legendItem
	for a := range NumActivities {
		l = append(l, legendItem{Class: activityClass(a), Text: a.String()})
	}
	return l
}

// timePerOpChart draws horizontal bars of time per rank per operation:
// for one trace, bars coloured by activity; for a comparison (rows set),
// a pair of bars per operation.
func timePerOpChart(id, caption string, sides []*Stats, rows []CompareRow) *svgChart {
	type group struct {
		label string
		rows  []*OpRow
	}
	var groups []group
	if rows == nil {
		for _, r := range sides[0].Ops {
			groups = append(groups, group{r.Op, []*OpRow{r}})
		}
	} else {
		for _, r := range rows {
			groups = append(groups, group{r.Op, []*OpRow{r.A, r.B}})
		}
	}
	top, labelW := 0.0, 0.0
	for _, g := range groups {
		labelW = max(labelW, textW(clip(g.label, 28)))
		for _, r := range g.rows {
			top = max(top, r.AvgPerRank())
		}
	}
	n := len(sides)
	barH := map[int]float64{1: 18, 2: 16}[n]
	rowH := float64(n)*barH + 12
	left := labelW + 16
	valueW := 190.0
	area := chartW - left - valueW
	c := &svgChart{ID: id, Caption: caption, W: chartW, H: int(math.Ceil(float64(len(groups))*rowH + 8))}
	for i, g := range groups {
		y := 6 + float64(i)*rowH
		c.Texts = append(c.Texts, svgText{X: fx(left - 10), Y: fx(y + float64(n)*barH/2 + 4.5), Anchor: "end", Class: "lab", Text: clip(g.label, 28), Tip: g.label})
		for j, r := range g.rows {
			v := r.AvgPerRank()
			w := 0.0
			if top > 0 {
				w = v / top * area
			}
			class := activityClass(rowActivity(r))
			if n == 2 {
				class = []string{"sa", "sb"}[j]
			}
			total := sides[j].Total.Total
			share := ""
			if total > 0 {
				share = " · " + percent(float64(r.Total)/float64(total))
			}
			by := y + float64(j)*barH
			tip := fmt.Sprintf("%s: %s per rank, %s calls, %s in total", g.label, units.Duration(int64(v*1e9)), groupDigits(r.Count), units.Duration(r.Total))
			c.rect(left, by+1, max(w, 1), barH-2, class, tip)
			c.text(left+max(w, 1)+6, by+barH/2+4.5, "start", "val", units.Duration(int64(v*1e9))+share)
		}
	}
	return c
}

// sizeCharts draws one histogram of request sizes per operation.
func sizeCharts(s *Stats) []*svgChart {
	var charts []*svgChart
	act := map[string]Activity{}
	for _, r := range s.Ops {
		act[r.Op] = rowActivity(r)
	}
	for i := 0; i < len(s.Sizes); {
		j := i
		for j < len(s.Sizes) && s.Sizes[j].Op == s.Sizes[i].Op {
			j++
		}
		charts = append(charts, sizeChart(fmt.Sprintf("chart-size-%d", len(charts)), s.Sizes[i:j], act[s.Sizes[i].Op]))
		i = j
	}
	return charts
}

func sizeChart(id string, rows []SizeRow, a Activity) *svgChart {
	var total, top int64
	labelW := 0.0
	for _, r := range rows {
		total += r.Count
		top = max(top, r.Count)
		labelW = max(labelW, textW(sizeLabel(r)))
	}
	const w, rowH = 470, 22
	left := labelW + 14
	area := w - left - 120
	c := &svgChart{ID: id, Caption: rows[0].Op + ": calls by requested size", W: w, H: len(rows)*rowH + 8}
	for i, r := range rows {
		y := 4 + float64(i)*rowH
		bw := 0.0
		if top > 0 {
			bw = float64(r.Count) / float64(top) * area
		}
		c.text(left-8, y+rowH/2+4, "end", "lab", sizeLabel(r))
		c.rect(left, y+3, max(bw, 1), rowH-6, activityClass(a), fmt.Sprintf("%s %s: %s calls", r.Op, sizeLabel(r), groupDigits(r.Count)))
		c.text(left+max(bw, 1)+6, y+rowH/2+4, "start", "val", groupDigits(r.Count)+" · "+percent(float64(r.Count)/float64(total)))
	}
	return c
}

// ratePoint is a bin of the bandwidth chart: [T0, T1) ns from the start
// of the trace, and bytes per second read and written in it.
type ratePoint struct {
	T0, T1      int64
	Read, Write float64
}

// ratePoints reads the bandwidth of each bin of s.Activity, over the part
// of the bin inside the trace's span.
func ratePoints(s *Stats) []ratePoint {
	var pts []ratePoint
	a := &s.Activity
	for i := range a.Bins {
		lo := max(a.Start+int64(i)*a.Width, s.Start)
		hi := min(a.Start+int64(i+1)*a.Width, s.End)
		if hi <= lo {
			continue
		}
		sec := float64(hi-lo) / 1e9
		pts = append(pts, ratePoint{lo - s.Start, hi - s.Start, a.Bins[i].Read / sec, a.Bins[i].Written / sec})
	}
	return pts
}

// maxScaleRatio is how far apart the peak bandwidths of two runs may be
// for their charts to share one scale: beyond it the slower run's chart
// would be flat near zero, and each chart gets its own scale.
const maxScaleRatio = 4

// sharedScale returns the tops of the bandwidth charts of two runs whose
// peaks are a and b, and what their captions add: one scale when the
// peaks are close, each its own (said in the caption) when they are not.
func sharedScale(a, b float64) (topA, topB float64, capA, capB string) {
	lo, hi := min(a, b), max(a, b)
	if lo*maxScaleRatio >= hi || lo == 0 {
		return hi, hi, "", ""
	}
	return a, b, " (own scale)", " (own scale)"
}

func maxRate(pts []ratePoint) float64 {
	m := 0.0
	for _, p := range pts {
		m = max(m, p.Read, p.Write)
	}
	return m
}

// Plot geometry shared by the charts with a time axis.
const (
	plotLeft  = 92.0
	plotRight = 16.0
	plotW     = chartW - plotLeft - plotRight
)

func timeX(t, span int64) float64 {
	if span <= 0 {
		return plotLeft
	}
	return plotLeft + float64(t)/float64(span)*plotW
}

// timeAxis draws the time ticks of [0, span] at y, with grid lines up to
// y0.
func (c *svgChart) timeAxis(span int64, y0, y float64) {
	c.line(plotLeft, y, plotLeft+plotW, y, "axis")
	for _, t := range niceTicks(float64(span), 10) {
		x := timeX(int64(t), span)
		c.line(x, y0, x, y, "grid")
		c.line(x, y, x, y+4, "axis")
		c.text(x, y+17, "middle", "tick", units.Duration(int64(t)))
	}
}

// niceTicks returns 0 and multiples of a 1-2-5 step up to top, about n of
// them.
func niceTicks(top float64, n int) []float64 {
	if top <= 0 || math.IsNaN(top) || math.IsInf(top, 0) {
		return []float64{0}
	}
	step := niceStep(top / float64(n))
	var ts []float64
	for i := 0; float64(i)*step <= top*(1+1e-9) && i <= 4*n; i++ {
		ts = append(ts, float64(i)*step)
	}
	return ts
}

func niceStep(raw float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// rateUnit picks the decimal unit of a bandwidth axis whose top is top
// bytes per second.
func rateUnit(top float64) (string, float64) {
	for _, u := range []struct {
		name string
		div  float64
	}{{"TB/s", 1e12}, {"GB/s", 1e9}, {"MB/s", 1e6}, {"kB/s", 1e3}} {
		if top >= u.div {
			return u.name, u.div
		}
	}
	return "B/s", 1
}

func rateText(v float64) string {
	unit, div := rateUnit(v)
	return units.Short(v/div) + " " + unit
}

// bandwidthChart draws the read and write bandwidth of pts as step areas
// over [0, span], on a y axis up to top bytes per second.
func bandwidthChart(id, caption string, pts []ratePoint, span int64, top float64) *svgChart {
	const plotTop, plotH = 14.0, 190.0
	base := plotTop + plotH
	c := &svgChart{ID: id, Caption: caption, W: chartW, H: int(base) + 30}
	ticks := niceTicks(top, 4)
	yTop := ticks[len(ticks)-1]
	if yTop < top {
		yTop += niceStep(top / 4)
	}
	if yTop <= 0 {
		yTop = 1
	}
	unit, div := rateUnit(yTop)
	y := func(v float64) float64 { return base - v/yTop*plotH }
	for _, t := range niceTicks(yTop, 4) {
		c.line(plotLeft, y(t), plotLeft+plotW, y(t), "grid")
		label := "0"
		if t > 0 {
			label = units.Short(t/div) + " " + unit
		}
		c.text(plotLeft-8, y(t)+4, "end", "tick", label)
	}
	c.timeAxis(span, plotTop, base)
	for k, get := range []func(p ratePoint) float64{
		func(p ratePoint) float64 { return p.Read },
		func(p ratePoint) float64 { return p.Write },
	} {
		if len(pts) == 0 {
			break
		}
		any := false
		var area, line strings.Builder
		fmt.Fprintf(&area, "M%s %s", fx(timeX(pts[0].T0, span)), fx(base))
		for i, p := range pts {
			x0, x1, py := fx(timeX(p.T0, span)), fx(timeX(p.T1, span)), fx(y(get(p)))
			any = any || get(p) > 0
			fmt.Fprintf(&area, "L%s %sL%s %s", x0, py, x1, py)
			if i == 0 {
				fmt.Fprintf(&line, "M%s %sL%s %s", x0, py, x1, py)
			} else {
				fmt.Fprintf(&line, "L%s %sL%s %s", x0, py, x1, py)
			}
		}
		fmt.Fprintf(&area, "L%s %sZ", fx(timeX(pts[len(pts)-1].T1, span)), fx(base))
		if any {
			cls := activityClass(Activity(k))
			c.Paths = append(c.Paths, svgPath{area.String(), "area " + cls}, svgPath{line.String(), "stroke " + cls})
		}
	}
	// Invisible bins carry the figures as tooltips.
	for _, p := range pts {
		if p.Read == 0 && p.Write == 0 {
			continue
		}
		x0, x1 := timeX(p.T0, span), timeX(p.T1, span)
		c.rect(x0, plotTop, x1-x0, plotH, "hit", fmt.Sprintf("%s – %s: read %s, write %s",
			units.Duration(p.T0), units.Duration(p.T1), rateText(p.Read), rateText(p.Write)))
	}
	return c
}

// maxTimelineCells bounds the cells of a timeline chart (rows × bins):
// with many rows, pairs of bins are merged.
const maxTimelineCells = 8192

// timelineLevels is the resolution of a timeline cell's height: the share
// of each activity is rounded to quarters (a share above 0 shows as at
// least a quarter), which keeps the runs long and the picture calm; the
// tooltip of each cell has the exact shares.
const timelineLevels = 4

// timelineChart draws s.Timeline over [0, span]: a row per rank (or
// group of ranks); in each row a cell per run of bins whose shares of
// time in each activity, stacked from the bottom, are the same.
func timelineChart(id, caption string, s *Stats, span int64) *svgChart {
	rows := s.Timeline
	n := len(rows)
	rowH := min(max(math.Floor(380/float64(max(n, 1))), 4), 26)
	gap := 0.0
	if rowH >= 10 {
		gap = 3
	}
	const plotTop = 6.0
	base := plotTop + float64(n)*rowH
	if n > 0 && rows[0].Ranks > 1 {
		caption += fmt.Sprintf(" (%d ranks per row)", rows[0].Ranks)
	}
	c := &svgChart{ID: id, Caption: caption, W: chartW, H: int(base) + 30}
	labelEvery := int(math.Ceil(13 / rowH))
	c.timeAxis(span, plotTop, base)
	for i, row := range rows {
		y := plotTop + float64(i)*rowH
		name, label := "rank "+strconv.FormatUint(uint64(row.First), 10), ""
		if row.Ranks > 1 {
			name, label = fmt.Sprintf("ranks %d–%d", row.First, row.Last), fmt.Sprintf("%d–%d", row.First, row.Last)
		}
		c.rect(plotLeft, y+gap/2, plotW, rowH-gap, "idle", "")
		if i%labelEvery == 0 {
			c.text(plotLeft-8, y+rowH/2+4, "end", "lab", cmp2(label, name))
		}
		ser := row.Series
		ser.Bins = slices.Clone(ser.Bins)
		for len(ser.Bins)*n > maxTimelineCells && len(ser.Bins) > 1 {
			ser.coarsen()
		}
		timelineRow(c, s, &ser, row.Ranks, name, y+gap/2, rowH-gap, span)
	}
	return c
}

// timelineRow adds the cells of one row.
func timelineRow(c *svgChart, s *Stats, ser *Series, ranks int, name string, y, h float64, span int64) {
	type run struct {
		levels [NumActivities]int
		lo, hi int64
		busy   [NumActivities]float64
	}
	var cur *run
	flush := func() {
		if cur == nil || cur.levels == [NumActivities]int{} {
			return
		}
		room := float64(cur.hi-cur.lo) * float64(ranks)
		var parts []string
		var all float64
		for a, b := range cur.busy {
			all += b
			if b > 0 {
				parts = append(parts, Activity(a).String()+" "+percent(b/room))
			}
		}
		g := svgGroup{Tip: fmt.Sprintf("%s, %s – %s: in calls %s of the time (%s)", name, units.Duration(cur.lo-s.Start),
			units.Duration(cur.hi-s.Start), percent(all/room), strings.Join(parts, ", "))}
		x0, x1 := timeX(cur.lo-s.Start, span), timeX(cur.hi-s.Start, span)
		w := max(x1-x0, 0.6)
		top := y + h
		for a, l := range cur.levels {
			if l == 0 {
				continue
			}
			hh := h * float64(l) / timelineLevels
			top -= hh
			g.Rects = append(g.Rects, svgRect{fx(x0), fx(top), fx(w), fx(hh), activityClass(Activity(a)), ""})
		}
		c.Groups = append(c.Groups, g)
	}
	for i := range ser.Bins {
		lo := max(ser.Start+int64(i)*ser.Width, s.Start)
		hi := min(ser.Start+int64(i+1)*ser.Width, s.End)
		if hi <= lo {
			continue
		}
		b := &ser.Bins[i]
		room := float64(hi-lo) * float64(ranks)
		all := 0.0
		for _, v := range b.Busy {
			all += v
		}
		scale := 1 / max(room, all) // overlapping calls (threads) fill the row, no more
		var levels [NumActivities]int
		sum := 0
		for a, v := range b.Busy {
			if v > 0 {
				levels[a] = max(int(math.Round(v*scale*timelineLevels)), 1)
				sum += levels[a]
			}
		}
		for sum > timelineLevels { // rounding up tiny shares may overfill: trim the largest
			big := 0
			for a := range levels {
				if levels[a] > levels[big] {
					big = a
				}
			}
			levels[big]--
			sum--
		}
		if cur != nil && cur.levels == levels && cur.hi == lo {
			cur.hi = hi
			for a := range cur.busy {
				cur.busy[a] += b.Busy[a]
			}
			continue
		}
		flush()
		cur = &run{levels: levels, lo: lo, hi: hi, busy: b.Busy}
	}
	flush()
}

//go:embed html.tmpl
var htmlSource string

// htmlTemplate is parsed on first use, not when the program starts: most
// runs of the commands that link this package write no HTML.
var htmlTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Parse(htmlSource))
})
