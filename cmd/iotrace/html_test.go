package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/internal/browsertest"
)

const sampleTrace = "../../samples/ior-4x2048.iot"

// Colours of the report's read and write marks (report/html.tmpl).
const readBlue, writeVermilion = 0x0072b2, 0xd55e00

// keep copies the page into the artifact directory, beside its screenshot.
func keep(t *testing.T, art, page, name string) {
	t.Helper()
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(art, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestStatsHTMLInChromium writes the HTML report of the sample with the
// built iotrace, loads it in headless Chromium, checks the DOM the
// browser built (summary, tables with their rows, charts, one timeline row
// per rank) and keeps a screenshot as an artifact.
func TestStatsHTMLInChromium(t *testing.T) {
	page := filepath.Join(t.TempDir(), "report.html")
	if out := mustRun(t, "stats", "--format", "html", "-o", page, sampleTrace); out != "" {
		t.Fatalf("stats -o wrote to stdout: %.200s", out)
	}
	b := browsertest.Find(t)
	dom := b.DumpDOM(t, page)

	if !strings.Contains(dom, "<h1>I/O report</h1>") || !strings.Contains(dom, "4 ranks, 16,400 events") {
		t.Errorf("heading or summary missing")
	}
	op := browsertest.Rows(browsertest.Element(t, dom, "table-op"))
	var names []string
	for _, r := range op[1:] {
		names = append(names, r[0])
	}
	if got := strings.Join(names, " "); got != "open close read write TOTAL" {
		t.Fatalf("op table rows: %s", got)
	}
	if read := op[3]; read[1] != "8,192" || read[4] != "32 MiB" {
		t.Errorf("read row %q", read)
	}
	files := browsertest.Rows(browsertest.Element(t, dom, "table-file"))
	if len(files) != 5 || !strings.HasPrefix(files[1][0], "/scratch/ior/testFile.") {
		t.Errorf("file table %q", files)
	}
	if ranks := browsertest.Rows(browsertest.Element(t, dom, "table-rank")); len(ranks) != 5 {
		t.Errorf("rank table: %d rows", len(ranks))
	}
	sizes := browsertest.Rows(browsertest.Element(t, dom, "table-size"))
	if len(sizes) != 3 || sizes[1][1] != "4 KiB" || sizes[1][2] != "8,192" {
		t.Errorf("size table %q", sizes)
	}
	if n := strings.Count(browsertest.Element(t, dom, "chart-time"), "<rect"); n != 4 {
		t.Errorf("time chart: %d bars, want 4", n)
	}
	for _, id := range []string{"chart-size-0", "chart-size-1"} {
		if !strings.Contains(browsertest.Element(t, dom, id), "4 KiB</text>") {
			t.Errorf("%s: no 4 KiB bar", id)
		}
	}
	bw := browsertest.Element(t, dom, "chart-bandwidth")
	if !strings.Contains(bw, `class="area a0"`) || !strings.Contains(bw, `class="area a1"`) {
		t.Errorf("bandwidth chart lacks read or write")
	}
	tl := browsertest.Element(t, dom, "chart-timeline")
	for _, r := range []string{"rank 0", "rank 1", "rank 2", "rank 3"} {
		if !strings.Contains(tl, ">"+r+"</text>") {
			t.Errorf("timeline lacks %s", r)
		}
	}
	if strings.Count(tl, `class="a0"`) < 4 || strings.Count(tl, `class="a1"`) < 4 {
		t.Errorf("timeline: too few read or write cells")
	}

	art := browsertest.ArtifactDir(t)
	keep(t, art, page, "stats-report.html")
	img := b.Screenshot(t, page, filepath.Join(art, "stats-report.png"), 1280, 2500)
	// The bars, areas and timeline cells were painted.
	if n := browsertest.CountColor(img, readBlue, 3); n < 5000 {
		t.Errorf("%d read-blue pixels in the screenshot", n)
	}
	if n := browsertest.CountColor(img, writeVermilion, 3); n < 5000 {
		t.Errorf("%d write-vermilion pixels in the screenshot", n)
	}
}

// TestCompareHTMLInChromium puts two traces side by side in HTML and
// checks the page in Chromium: flagged counts, both timelines.
func TestCompareHTMLInChromium(t *testing.T) {
	dir := t.TempDir()
	other, page := filepath.Join(dir, "b.iot"), filepath.Join(dir, "compare.html")
	mustRun(t, "generate", "ior", "--ranks", "4", "--calls", "1024", "-o", other)
	mustRun(t, "compare", "--format", "html", "-o", page, sampleTrace, other)
	b := browsertest.Find(t)
	dom := b.DumpDOM(t, page)
	tab := browsertest.Element(t, dom, "table-compare")
	rows := browsertest.Rows(tab)
	if got := strings.Join(rows[2], " "); !strings.HasPrefix(got, "open 8 8 ") {
		t.Errorf("first op row %q", got)
	}
	if !strings.Contains(tab, `<tr class="flag"><td>read</td><td class="num">8,192</td><td class="num">4,096</td>`) {
		t.Errorf("read counts not flagged:\n%s", tab)
	}
	if !strings.Contains(dom, "Counts differ in 2 rows: read write") {
		t.Errorf("no mismatch note")
	}
	for _, id := range []string{"chart-time", "chart-bandwidth-a", "chart-bandwidth-b", "chart-timeline-a", "chart-timeline-b", "table-op-a", "table-op-b"} {
		browsertest.Element(t, dom, id)
	}
	art := browsertest.ArtifactDir(t)
	keep(t, art, page, "compare-report.html")
	img := b.Screenshot(t, page, filepath.Join(art, "compare-report.png"), 1280, 3200)
	if n := browsertest.CountColor(img, writeVermilion, 3); n < 5000 {
		t.Errorf("%d write-vermilion pixels in the screenshot", n)
	}
}

// TestHTMLFormatChoices: --format html is a choice of stats and compare,
// and a bad choice names them.
func TestHTMLFormatChoices(t *testing.T) {
	out := mustRun(t, "stats", "--format", "html", sampleTrace)
	if !strings.HasPrefix(out, "<!DOCTYPE html>") || !strings.Contains(out, `id="chart-timeline"`) {
		t.Fatalf("stats --format html to stdout: %.300s", out)
	}
	_, errOut, code := run(t, "stats", "--format", "htm", sampleTrace)
	if code == 0 || !strings.Contains(errOut, "html") {
		t.Fatalf("bad format: exit %d, %s", code, errOut)
	}
}
