package report

import (
	"bytes"
	"html"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/internal/browsertest"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/tracegen"
)

func renderHTML(t *testing.T, s *Stats, o HTMLOptions) string {
	t.Helper()
	var buf bytes.Buffer
	if err := RenderHTML(&buf, s, o); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func renderCompareHTML(t *testing.T, c *Comparison, o HTMLOptions) string {
	t.Helper()
	var buf bytes.Buffer
	if err := RenderCompareHTML(&buf, c, o); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// selfContained fails unless page loads nothing: no script, no external
// style, image, font or frame, links only within the page.
func selfContained(t *testing.T, page string) {
	t.Helper()
	// Text from outside input is escaped, so any "<" starts a real tag.
	for _, bad := range []string{"<script", "<link", "<img", "<iframe", "<object", "<embed", "<base", "http:", "https:"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
	if m := regexp.MustCompile(`<[^>]*\s(src|srcset|background|xlink:href|action|data)=[^>]*>`).FindString(page); m != "" {
		t.Errorf("a tag loads something: %s", m)
	}
	style := page[strings.Index(page, "<style>"):strings.Index(page, "</style>")]
	for _, bad := range []string{"url(", "@import", "@font-face"} {
		if strings.Contains(style, bad) {
			t.Errorf("the style holds %q", bad)
		}
	}
	for _, h := range regexp.MustCompile(`href="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		if !strings.HasPrefix(h[1], "#") {
			t.Errorf("link %q leaves the page", h[1])
		}
	}
	if !strings.Contains(page, `http-equiv="Content-Security-Policy" content="default-src 'none'`) {
		t.Errorf("no content security policy")
	}
}

// TestHTMLGolden pins the HTML report and the HTML comparison of the
// hand-made trace.
func TestHTMLGolden(t *testing.T) {
	s := compute(t, handTrace(), Options{Access: true})
	o := HTMLOptions{Inputs: []string{"hand.iot"}, Notes: []HTMLNote{{Title: "Note", Text: "line 1\nline 2"}}}
	page := renderHTML(t, s, o)
	golden(t, "report.html", []byte(page))
	b := compute(t, bucketTrace(), Options{})
	golden(t, "compare.html", []byte(renderCompareHTML(t, Compare(s, b), HTMLOptions{NameA: "original", NameB: "replay"})))
}

// TestHTMLStructure checks what the report holds: the summary figures,
// every table with the rows of its text view, and the charts with a bar
// per operation and size and a timeline row per rank.
func TestHTMLStructure(t *testing.T) {
	s := compute(t, handTrace(), Options{})
	page := renderHTML(t, s, HTMLOptions{Inputs: []string{"hand.iot"}})
	selfContained(t, page)
	if !strings.HasPrefix(page, "<!DOCTYPE html>") || !strings.Contains(page, "<title>I/O report: hand.iot</title>") {
		t.Fatalf("page head: %.200s", page)
	}
	for _, want := range []string{"Ranks</div><div class=\"value\">4<", "Data written</div><div class=\"value\">2.008 MiB<",
		"Errors</div><div class=\"value\">2<", "Run time</div><div class=\"value\">9ms<"} {
		if !strings.Contains(page, `<div class="label">`+want) {
			t.Errorf("no card %q", want)
		}
	}
	if !strings.Contains(page, `<div class="card warn"><div class="label">Errors`) {
		t.Errorf("errors are not flagged")
	}

	// Every table holds the rows of its text view, header first.
	for _, v := range []string{"op", "size", "rank", "file"} {
		tab := browsertest.Rows(browsertest.Element(t, page, "table-"+v))
		want := s.tables(v)[0]
		if len(tab) != len(want.rows)+1 {
			t.Fatalf("table-%s: %d rows, want %d + header", v, len(tab), len(want.rows))
		}
		for i, r := range want.rows {
			if tab[i+1][0] != html.EscapeString(r[0].human) {
				t.Errorf("table-%s row %d starts with %q, want %q", v, i, tab[i+1][0], r[0].human)
			}
		}
	}
	op := browsertest.Rows(browsertest.Element(t, page, "table-op"))
	if got := strings.Join(op[0], " "); got != "operation count total time time/rank bytes MB/s min p50 p99 max errors" {
		t.Errorf("op header %q", got)
	}
	if last := op[len(op)-1]; last[0] != "TOTAL" || last[1] != "22" || last[4] != "2.012 MiB" || last[10] != "2" {
		t.Errorf("TOTAL row %q", last)
	}
	if !strings.Contains(browsertest.Element(t, page, "table-op"), `<tr class="total">`) {
		t.Errorf("the TOTAL row is not marked")
	}
	if n := len(browsertest.Rows(browsertest.Element(t, page, "table-region-0"))); n != len(s.Regions[0].Ops)+2 {
		t.Errorf("region table: %d rows", n)
	}

	// Charts: a bar per op, a bar per size, the bandwidth areas, a row per rank.
	chart := browsertest.Element(t, page, "chart-time")
	if n := strings.Count(chart, "<rect"); n != len(s.Ops) {
		t.Errorf("time chart: %d bars for %d ops", n, len(s.Ops))
	}
	for _, r := range s.Ops {
		if !strings.Contains(chart, ">"+r.Op+"</text>") {
			t.Errorf("time chart lacks %s", r.Op)
		}
	}
	sizeBars := strings.Count(browsertest.Element(t, page, "sizes"), `<rect x=`)
	if sizeBars != len(s.Sizes) {
		t.Errorf("size charts: %d bars for %d sizes", sizeBars, len(s.Sizes))
	}
	bw := browsertest.Element(t, page, "chart-bandwidth")
	if !strings.Contains(bw, `class="area a0"`) || !strings.Contains(bw, `class="area a1"`) {
		t.Errorf("bandwidth chart lacks the read or write area")
	}
	tl := browsertest.Element(t, page, "chart-timeline")
	for r := range 4 {
		if !strings.Contains(tl, ">rank "+itoa(int64(r))+"</text>") {
			t.Errorf("timeline lacks rank %d", r)
		}
	}
	if !strings.Contains(tl, "<title>rank 2, 0 – 9ms: in calls 100 % of the time (communication 100 %)</title>") {
		t.Errorf("timeline: rank 2's barrier is not a full communication cell:\n%s", tl)
	}

	// An empty trace still makes a page.
	empty := renderHTML(t, compute(t, trace.NewMemTrace(), Options{}), HTMLOptions{})
	selfContained(t, empty)
	if !strings.Contains(empty, "No calls.") {
		t.Errorf("empty trace: no note")
	}
}

// TestHTMLCompare checks the comparison page: both sides named, counts
// flagged, both timelines on one time scale.
func TestHTMLCompare(t *testing.T) {
	a := compute(t, handTrace(), Options{})
	b := compute(t, bucketTrace(), Options{})
	page := renderCompareHTML(t, Compare(a, b), HTMLOptions{NameA: "original", NameB: "replay"})
	selfContained(t, page)
	tab := browsertest.Rows(browsertest.Element(t, page, "table-compare"))
	if got := strings.Join(tab[1], " "); got != "operation original replay original replay ratio original replay original replay " {
		t.Errorf("compare header %q", got)
	}
	if got := strings.Join(tab[0], "|"); got != "|count|time|p50|MB/s|" {
		t.Errorf("compare groups %q", got)
	}
	if !strings.Contains(browsertest.Element(t, page, "table-compare"), `<tr class="flag"><td>open</td>`) {
		t.Errorf("count mismatch not flagged")
	}
	for _, id := range []string{"chart-time", "chart-bandwidth-a", "chart-bandwidth-b", "chart-timeline-a", "chart-timeline-b", "table-size", "table-op-a", "table-op-b"} {
		browsertest.Element(t, page, id)
	}
	// One time scale: the same ticks on both timelines.
	ticks := regexp.MustCompile(`class="tick">([^<]*)<`)
	ta := ticks.FindAllString(browsertest.Element(t, page, "chart-timeline-a"), -1)
	tb := ticks.FindAllString(browsertest.Element(t, page, "chart-timeline-b"), -1)
	if strings.Join(ta, "") != strings.Join(tb, "") || len(ta) < 3 {
		t.Errorf("time scales differ: %q vs %q", ta, tb)
	}
}

// TestHTMLEscaping feeds names from outside input (paths, region labels,
// the title and inputs) with markup in them: they must come out as text.
func TestHTMLEscaping(t *testing.T) {
	evil := `/d/</td><script>alert("x")</script>&amp;'.dat`
	label := `<img src=x onerror=alert(1)>`
	m := trace.NewMemTrace()
	p, l := m.Paths.Intern(evil), m.Paths.Intern(label)
	m.Add(
		trace.Event{Op: trace.OpRegionBegin, Path: l},
		trace.Event{Op: trace.OpOpen, Path: p, Ret: 3, Start: 1, Dur: 10},
		trace.Event{Op: trace.OpWrite, FD: 3, Size: 5, Ret: 5, Start: 20, Dur: 10},
		trace.Event{Op: trace.OpRegionEnd, Path: l, Start: 40},
	)
	s := compute(t, m, Options{})
	o := HTMLOptions{Title: `T <b>&`, Inputs: []string{`in"put<`}, Notes: []HTMLNote{{Title: "<i>", Text: "</pre><script>"}}}
	for _, page := range []string{renderHTML(t, s, o), renderCompareHTML(t, Compare(s, s), HTMLOptions{NameA: `<a>`, NameB: `"b"`})} {
		selfContained(t, page)
		for _, raw := range []string{evil, label, "<b>", "<i>", "</pre><script>", `in"put<`, "<a>"} {
			if strings.Contains(page, raw) {
				t.Errorf("the page holds %q unescaped", raw)
			}
		}
	}
	page := renderHTML(t, s, o)
	files := browsertest.Rows(browsertest.Element(t, page, "table-file"))
	if want := `/d/&lt;/td&gt;&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&amp;amp;&#39;.dat`; files[1][0] != want {
		t.Errorf("file cell %q, want %q", files[1][0], want)
	}
	if !strings.Contains(page, "<h1>T &lt;b&gt;&amp;</h1>") || !strings.Contains(page, "<pre>&lt;/pre&gt;&lt;script&gt;</pre>") {
		t.Errorf("title or note not escaped")
	}
}

// TestHTMLBounded checks that the page of a trace with many ranks and
// calls stays small: rows of tables, timeline rows and cells are capped,
// whatever the number of events.
func TestHTMLBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 300,000 events")
	}
	s := compute(t, tracegen.Random(3*MaxTimelineRows, 800, 1), Options{})
	page := renderHTML(t, s, HTMLOptions{})
	tl := browsertest.Element(t, page, "chart-timeline")
	if cells := strings.Count(tl, "<g>"); cells > maxTimelineCells {
		t.Errorf("timeline: %d cells", cells)
	}
	if n := len(browsertest.Rows(browsertest.Element(t, page, "table-rank"))); n != maxHTMLRows+1 {
		t.Errorf("rank table: %d rows", n)
	}
	if !strings.Contains(browsertest.Element(t, page, "ranks"), "184 more rows not shown") {
		t.Errorf("no note of the rows left out")
	}
	t.Logf("%d ranks, %d events: %d bytes of HTML", s.Ranks, s.Events, len(page))
	if len(page) > 1<<20 {
		t.Errorf("%d bytes of HTML", len(page))
	}

	// The worst case: every bin of every rank different (calls of random
	// kinds, lengths and gaps), and many regions.
	m := trace.NewMemTrace()
	r := rand.New(rand.NewPCG(5, 6))
	ops := []trace.Op{trace.OpPread, trace.OpPwrite, trace.OpLseek, trace.OpMPIBarrier}
	for rank := range MaxTimelineRows {
		at := int64(0)
		for i := range 200 {
			if i%2 == 0 {
				m.Add(trace.Event{Rank: uint32(rank), Op: trace.OpRegionBegin, Path: m.Paths.Intern("phase " + itoa(int64(i/2))), Start: at})
			}
			d := r.Int64N(100_000_000)
			m.Add(trace.Event{Rank: uint32(rank), Op: ops[r.IntN(len(ops))], Size: 4096, Ret: 4096, Start: at, Dur: d})
			at += d + r.Int64N(100_000_000)
		}
	}
	s = compute(t, m, Options{})
	page = renderHTML(t, s, HTMLOptions{})
	if cells := strings.Count(browsertest.Element(t, page, "chart-timeline"), "<g>"); cells < maxTimelineCells/3 || cells > maxTimelineCells { // a stress, within the bound
		t.Errorf("timeline: %d cells, want many, at most %d", cells, maxTimelineCells)
	}
	if n := strings.Count(page, `id="table-region-`); n != maxHTMLRegions || !strings.Contains(page, "50 more regions not shown") {
		t.Errorf("%d region tables of %d", n, len(s.Regions))
	}
	t.Logf("worst case, %d ranks, %d events: %d bytes of HTML", s.Ranks, s.Events, len(page))
	if len(page) > 4<<20 {
		t.Errorf("%d bytes of HTML", len(page))
	}
}

func TestGroupNumber(t *testing.T) {
	for in, want := range map[string]string{"0": "0", "999": "999", "1000": "1,000", "-1234567": "-1,234,567",
		"2174284.16": "2,174,284.16", "4 KiB": "4 KiB", "1.5ms": "1.5ms", "-": "-", "12.": "12.", "+5": "+5"} {
		if got := groupNumber(in); got != want {
			t.Errorf("groupNumber(%q) = %q, want %q", in, got, want)
		}
	}
}
