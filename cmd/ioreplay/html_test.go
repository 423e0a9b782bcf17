package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/internal/browsertest"
	"github.com/iotrace/iotrace/trace/tracegen"
)

// TestHTMLReport replays a two-phase trace with --html, alone and with
// --compare, and checks the pages: the replay's own report, then the
// original beside the replay with the replay's summary, loaded in
// headless Chromium, with a screenshot kept as an artifact.
func TestHTMLReport(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "astro.iot")
	writeTrace(t, in, tracegen.TwoPhase(4, 2, 6, 16, 4096, 7))

	alone := filepath.Join(dir, "replay.html")
	out := mustRun(t, "--timing", "afap", "--quiet", "--html", alone, in)
	if !strings.Contains(out, "TOTAL") {
		t.Fatalf("--html replaced the text report:\n%s", out)
	}
	data, err := os.ReadFile(alone)
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	for _, want := range []string{"<h1>Replay report</h1>", `id="chart-timeline"`, `id="table-op"`, ">MPI_Alltoall</td>", "replay: 4 ranks"} {
		if !strings.Contains(page, want) {
			t.Errorf("replay page lacks %q", want)
		}
	}

	cmp := filepath.Join(dir, "compare.html")
	mustRun(t, "--timing", "afap", "--quiet", "--compare", "--html", cmp, in)
	b := browsertest.Find(t)
	dom := b.DumpDOM(t, cmp)
	tab := browsertest.Element(t, dom, "table-compare")
	if !strings.Contains(tab, ">original</th>") || !strings.Contains(tab, ">replay</th>") || strings.Contains(tab, "count mismatch") {
		t.Errorf("comparison table:\n%s", tab)
	}
	if !strings.Contains(dom, "All counts match.") {
		t.Errorf("counts do not match")
	}
	rows := browsertest.Rows(tab)
	if last := rows[len(rows)-1]; last[0] != "TOTAL" || last[1] != last[2] {
		t.Errorf("TOTAL row %q", last)
	}
	for _, id := range []string{"chart-time", "chart-bandwidth-a", "chart-bandwidth-b", "chart-timeline-a", "chart-timeline-b"} {
		browsertest.Element(t, dom, id)
	}
	if tl := browsertest.Element(t, dom, "chart-timeline-b"); strings.Count(tl, "</text>") < 4+3 || !strings.Contains(tl, ">rank 3</text>") {
		t.Errorf("replay timeline lacks its ranks:\n%.500s", tl)
	}
	if !strings.Contains(browsertest.Element(t, dom, "note-0"), "replay: 4 ranks, 1") {
		t.Errorf("no replay summary")
	}
	art := browsertest.ArtifactDir(t)
	b.Screenshot(t, cmp, filepath.Join(art, "replay-compare-report.png"), 1280, 3000)
}
