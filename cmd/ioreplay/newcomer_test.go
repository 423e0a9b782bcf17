package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The end-to-end tests of a newcomer's path (issue 17): the built ioreplay
// run as a user runs it.

// devTrace writes a one-rank trace that reads /dev/zero (which a replay
// skips by its rules) and writes its bytes to a file, as dd does, and
// returns its name (made by the built iotrace from JSON lines).
func devTrace(t *testing.T, dir string) string {
	t.Helper()
	js := filepath.Join(dir, "dd.jsonl")
	lines := `{"rank":0,"op":"open","path":"/dev/zero","ret":3,"start_ns":0,"dur_ns":1000}
{"rank":0,"op":"open","path":"/data/out.dat","ret":4,"flags":"O_WRONLY|O_CREAT|O_TRUNC","mode":"0644","start_ns":2000,"dur_ns":1000}
{"rank":0,"op":"read","fd":3,"size":65536,"ret":65536,"start_ns":4000,"dur_ns":1000}
{"rank":0,"op":"write","fd":4,"size":65536,"ret":65536,"start_ns":6000,"dur_ns":10000}
{"rank":0,"op":"read","fd":3,"size":65536,"ret":65536,"start_ns":20000,"dur_ns":1000}
{"rank":0,"op":"write","fd":4,"size":65536,"ret":65536,"start_ns":22000,"dur_ns":10000}
{"rank":0,"op":"close","fd":3,"start_ns":40000,"dur_ns":1000}
{"rank":0,"op":"close","fd":4,"start_ns":42000,"dur_ns":1000}
`
	if err := os.WriteFile(js, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := filepath.Join(dir, "dd.iot")
	if out, err := exec.Command(iotraceBuilt(t), "convert", "-o", tr, js).CombinedOutput(); err != nil {
		t.Fatalf("iotrace convert: %v\n%s", err, out)
	}
	return tr
}

// iotraceBuilt builds iotrace once for the tests that need it.
func iotraceBuilt(t *testing.T) string {
	t.Helper()
	p := filepath.Join(filepath.Dir(bin), "iotrace")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if out, err := exec.Command("go", "build", "-o", p, "../iotrace").CombinedOutput(); err != nil {
		t.Fatalf("building iotrace: %v\n%s", err, out)
	}
	return p
}

// TestCompareSkipsAreNoMismatch: the calls a replay skips by its rules
// (/dev/zero's) are no count mismatch in the text comparison, nor orange
// in the HTML page; --format html -o FILE writes the page as stats does,
// and --html FILE still does.
func TestCompareSkipsAreNoMismatch(t *testing.T) {
	dir := t.TempDir()
	tr := devTrace(t, dir)
	out := mustRun(t, "--quiet", "--timing", "afap", "--compare", tr)
	if strings.Contains(out, "count mismatch") || !strings.Contains(out, "All counts match (4 calls the replay skipped by its rules") ||
		!strings.Contains(out, "2 skipped by the replay") {
		t.Errorf("the comparison flags the replay's skips:\n%s", out)
	}
	page, old := filepath.Join(dir, "cmp.html"), filepath.Join(dir, "old.html")
	if out := mustRun(t, "--quiet", "--timing", "afap", "--compare", "--format", "html", "-o", page, "--html", old, tr); out != "" {
		t.Errorf("--format html -o FILE also printed:\n%s", out)
	}
	for _, p := range []string{page, old} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if !strings.HasPrefix(s, "<!DOCTYPE html>") || strings.Contains(s, "count mismatch") || strings.Contains(s, `card warn"><div class="label">Counts`) ||
			!strings.Contains(s, "4 calls skipped by the replay&#39;s rules") {
			t.Errorf("%s paints the replay's skips as mismatches", filepath.Base(p))
		}
	}
}

// TestTargetAndForce: a --target whose parent is missing is refused and
// nothing is made; a new one is made (its last component); a second
// replay into it names the files in the way and asks for --force.
func TestTargetAndForce(t *testing.T) {
	dir := t.TempDir()
	tr := devTrace(t, dir)
	deep := filepath.Join(dir, "scratch", "me", "try")
	_, errOut, code := runBin(t, "--quiet", "--target", deep, tr)
	if code != 1 || !strings.Contains(errOut, "its parent "+filepath.Dir(deep)+" does not exist") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("a target under a missing directory: exit %d\n%s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "scratch")); err == nil {
		t.Error("the directories above the target were made")
	}
	try := filepath.Join(dir, "try")
	mustRun(t, "--quiet", "--timing", "afap", "--target", try, tr)
	if _, err := os.Stat(filepath.Join(try, "out.dat")); err != nil {
		t.Fatalf("the replay wrote no out.dat in the target: %v", err)
	}
	_, errOut, code = runBin(t, "--quiet", "--timing", "afap", "--target", try, tr)
	if code != 1 || !strings.Contains(errOut, "already holds 1 file the replay would overwrite or remove (out.dat): give --force") {
		t.Errorf("a target holding the trace's file: exit %d\n%s", code, errOut)
	}
	mustRun(t, "--quiet", "--timing", "afap", "--force", "--target", try, tr)
	// A dry run only tells: it needs no --force.
	mustRun(t, "--dry-run", "--target", try, tr)
}

// TestSelectorsReplayE2E: ioreplay takes the selectors of every command;
// --compare holds the replay against the input seen through them; the
// old spellings still work, hidden.
func TestSelectorsReplayE2E(t *testing.T) {
	dir := t.TempDir()
	tr := devTrace(t, dir)
	out := mustRun(t, "--quiet", "--timing", "afap", "--exclude", "/dev", "--compare", tr)
	if !strings.Contains(out, "All counts match.") || strings.Contains(out, "skipped") {
		t.Errorf("--exclude /dev --compare:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^write +2 +2 `).MatchString(out) || regexp.MustCompile(`(?m)^read `).MatchString(out) {
		t.Errorf("--exclude /dev: the writes stay, the reads of /dev/zero go:\n%s", out)
	}
	out = mustRun(t, "--quiet", "--timing", "afap", "--skip-ops", "write", "--rank-subset", "0", tr)
	if regexp.MustCompile(`(?m)^write `).MatchString(out) {
		t.Errorf("--skip-ops write (an old spelling):\n%s", out)
	}
	if _, errOut, code := runBin(t, "--rank", "3", tr); code != 1 || !strings.Contains(errOut, "--rank: the trace has none of these ranks") {
		t.Errorf("--rank 3: exit %d\n%s", code, errOut)
	}
}

// TestHelpTeachesReplay: ioreplay's help has examples and every table and
// format; without an input it prints its usage and examples; --version
// says which build it is.
func TestHelpTeachesReplay(t *testing.T) {
	help := mustRun(t, "--help")
	for _, want := range []string{"\nExamples:\n  ioreplay astro3d-small", "--by string", "region, beffio", "markdown or html",
		"--rank ranks", "--exclude prefix", "--force", "--oversubscribe"} {
		if !strings.Contains(help, want) {
			t.Errorf("ioreplay --help lacks %q", want)
		}
	}
	for _, hidden := range []string{"--rank-subset", "--skip-ops", "--html string", "--no-openat2"} {
		if strings.Contains(help, hidden) {
			t.Errorf("ioreplay --help shows %s", hidden)
		}
	}
	_, errOut, code := runBin(t)
	if code != 1 || !strings.HasPrefix(errOut, "ioreplay: no input: give trace files") || !strings.Contains(errOut, "\nUsage: ioreplay [flags] INPUT…\nExamples:\n") {
		t.Errorf("ioreplay without an input: exit %d\n%s", code, errOut)
	}
	// The table --by beffio names is made (b_eff_io's sample, shrunk to a
	// scheduled 10 ms and 1 MiB of memory a process: some 70 MB written).
	out := mustRun(t, "--quiet", "--ranks", "2", "--param", "T=10ms", "--param", "memory=1MiB", "--timing", "afap",
		"--target", filepath.Join(t.TempDir(), "t"), "--by", "beffio", "beffio")
	if !regexp.MustCompile(`(?m)^b_eff_io +\d+\.\d+$`).MatchString(out) || !regexp.MustCompile(`(?m)^read +average +\d`).MatchString(out) {
		t.Errorf("--by beffio:\n%s", out)
	}
	// --ranks sets a script's ranks: for a trace it is an error, not ignored.
	tr := devTrace(t, t.TempDir())
	if _, errOut, code := runBin(t, "--ranks", "4", tr); code != 1 || !strings.Contains(errOut, "--ranks 4: "+tr+" is a trace, not a pattern script") ||
		strings.Count(errOut, "\n") != 1 {
		t.Errorf("--ranks for a trace: exit %d\n%s", code, errOut)
	}
	out, _, code = runBin(t, "--version")
	if code != 0 || !regexp.MustCompile(`^ioreplay \S+ \((revision [0-9a-f]{12}(\+modified)?, \S+|no VCS revision recorded); go1\.\S+\)\n$`).MatchString(out) {
		t.Errorf("--version: exit %d, %q", code, out)
	}
}
