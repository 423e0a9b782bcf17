package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The end-to-end tests of a newcomer's path (issue 17): the built iotrace
// run as a user runs it.

// newcomerTrace is a two-rank trace: rank 0 writes 1 MiB through MPI-IO
// (with the POSIX calls the MPI library made inside it), waits 9 ms in a
// barrier, reads a locale file and flushes a stream, inside a region;
// rank 1 writes 4 KiB to its own file.
const newcomerTrace = `{"rank":0,"op":"region_begin","label":"step","start_ns":0}
{"rank":0,"op":"MPI_File_open","fd":1,"path":"/data/f","start_ns":10,"dur_ns":10}
{"rank":0,"op":"open","path":"/data/f","ret":5,"flags":"O_RDWR|IN_MPIIO","start_ns":11,"dur_ns":5}
{"rank":0,"op":"MPI_File_write_at","fd":1,"offset":0,"size":1048576,"ret":1048576,"start_ns":100,"dur_ns":500000}
{"rank":0,"op":"pwrite","fd":5,"offset":0,"size":1048576,"ret":1048576,"flags":"IN_MPIIO","start_ns":110,"dur_ns":400000}
{"rank":0,"op":"MPI_Barrier","start_ns":600000,"dur_ns":9000000}
{"rank":0,"op":"open","path":"/usr/lib/locale/x","ret":6,"start_ns":9700000,"dur_ns":1000}
{"rank":0,"op":"read","fd":6,"size":100,"ret":100,"start_ns":9710000,"dur_ns":1000}
{"rank":0,"op":"fflush","fd":6,"start_ns":9720000,"dur_ns":1000}
{"rank":0,"op":"region_end","label":"step","start_ns":9800000}
{"rank":1,"op":"open","path":"/data/g","ret":3,"flags":"O_WRONLY|O_CREAT","mode":"0644","start_ns":0,"dur_ns":1000}
{"rank":1,"op":"write","fd":3,"size":4096,"ret":4096,"start_ns":2000,"dur_ns":2000}
{"rank":1,"op":"MPI_Barrier","start_ns":600000,"dur_ns":9000000}
{"rank":1,"op":"close","fd":3,"start_ns":9700000,"dur_ns":1000}
`

// writeNewcomerTrace writes newcomerTrace as a trace file in dir.
func writeNewcomerTrace(t *testing.T, dir string) string {
	t.Helper()
	js := filepath.Join(dir, "nc.jsonl")
	if err := os.WriteFile(js, []byte(newcomerTrace), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := filepath.Join(dir, "nc.iot")
	mustRun(t, "convert", "-o", tr, js)
	return tr
}

// TestReportsDoNotMisleadE2E: the header says what its events are beside
// TOTAL's calls; TOTAL's MB/s leaves communication out; fflush is no
// sync; the HTML page's cards count the POSIX calls inside MPI-IO once.
func TestReportsDoNotMisleadE2E(t *testing.T) {
	dir := t.TempDir()
	tr := writeNewcomerTrace(t, dir)
	out := mustRun(t, "stats", tr)
	if !strings.HasPrefix(out, "2 ranks, 14 events (10 calls in TOTAL, 2 markers, 2 calls inside MPI-IO (rows apart)),") {
		t.Errorf("the header does not say what TOTAL leaves out:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^flush +1 `).MatchString(out) || regexp.MustCompile(`(?m)^sync `).MatchString(out) {
		t.Errorf("fflush is not a row of its own (flush):\n%s", out)
	}
	var js struct {
		Events  int64 `json:"events"`
		Markers int64 `json:"markers"`
		InMPIIO int64 `json:"calls_in_mpiio"`
		Total   struct {
			Bytes     int64   `json:"bytes"`
			Bandwidth float64 `json:"bandwidth_mb_s"`
		} `json:"total"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "stats", "--format", "json", tr)), &js); err != nil {
		t.Fatal(err)
	}
	// 1 MiB + 4 KiB + 100 B over the I/O calls' 506.03 µs / 2 ranks, not
	// over the 18 ms of the barriers too.
	io := (10 + 500000 + 1000 + 1000 + 1000 + 1000 + 2000 + 1000) / 2e9
	if want := float64(js.Total.Bytes) / 1e6 / io; js.Total.Bandwidth < want*0.999 || js.Total.Bandwidth > want*1.001 {
		t.Errorf("TOTAL %.1f MB/s, want %.1f (I/O time only)", js.Total.Bandwidth, want)
	}
	if js.Events != 14 || js.Markers != 2 || js.InMPIIO != 2 {
		t.Errorf("JSON events %d, markers %d, inside MPI-IO %d; want 14, 2, 2", js.Events, js.Markers, js.InMPIIO)
	}
	page := filepath.Join(dir, "nc.html")
	mustRun(t, "stats", "--format", "html", "-o", page, tr)
	b, _ := os.ReadFile(page)
	if !strings.Contains(string(b), `Data written</div><div class="value">1.004 MiB</div><div class="sub">2 calls</div>`) {
		i := strings.Index(string(b), "Data written")
		t.Errorf("the Data written card counts the pwrite inside MPI-IO again: %.120s", string(b)[max(i, 0):])
	}
}

// slowerTrace writes, beside newcomerTrace's, a trace of the same calls
// as a run 1000 times slower makes them (every time multiplied), without
// the calls drop selects (by their JSON line), and returns its name.
func slowerTrace(t *testing.T, dir, name string, drop func(line string) bool) string {
	t.Helper()
	var b strings.Builder
	for _, line := range strings.SplitAfter(newcomerTrace, "\n") {
		if line == "" || drop(line) {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"start_ns", "dur_ns"} {
			if v, ok := ev[k].(float64); ok {
				ev[k] = v * 1000
			}
		}
		out, _ := json.Marshal(ev)
		b.Write(append(out, '\n'))
	}
	js := filepath.Join(dir, name+".jsonl")
	if err := os.WriteFile(js, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := filepath.Join(dir, name+".iot")
	mustRun(t, "convert", "-o", tr, js)
	return tr
}

// TestComparePageE2E: iotrace compare between a run and one 1000 times
// slower whose MPI library made fewer POSIX calls inside MPI-IO (as a
// replay through another MPI-IO layer does): no count mismatch in the
// text nor in the page's cards and request-size table, and each bandwidth
// chart has its own scale, said in its caption, so that the slower one is
// not flat near zero. A real difference (a write missing) stays one.
func TestComparePageE2E(t *testing.T) {
	dir := t.TempDir()
	a := writeNewcomerTrace(t, dir)
	inMPIIO := func(line string) bool {
		return strings.Contains(line, `"op":"pwrite"`) && strings.Contains(line, "IN_MPIIO")
	}
	b := slowerTrace(t, dir, "slow", inMPIIO)
	out := mustRun(t, "compare", a, b)
	if strings.Contains(out, "count mismatch") || !strings.Contains(out, "All counts match.") ||
		!regexp.MustCompile(`(?m)^write \(in MPI-IO\) +1 +0 `).MatchString(out) {
		t.Errorf("the text comparison flags the calls inside MPI-IO:\n%s", out)
	}
	page := filepath.Join(dir, "cmp.html")
	mustRun(t, "compare", "--format", "html", "-o", page, a, b)
	raw, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	_, sizes, _ := strings.Cut(s, `id="table-size"`)
	if !strings.Contains(sizes, "write (in MPI-IO)") {
		t.Fatalf("the page has no request-size row of the writes inside MPI-IO:\n%s", s)
	}
	if strings.Contains(s, "count mismatch") || strings.Contains(s, `card warn"><div class="label">Counts`) {
		t.Errorf("the page flags the calls inside MPI-IO as count mismatches")
	}
	if !strings.Contains(s, "Bandwidth over time: A (own scale)") || !strings.Contains(s, "Bandwidth over time: B (own scale)") {
		t.Errorf("the bandwidth charts of runs 1000 times apart share a scale")
	}
	// A write the other run lacks is a mismatch, in the page too.
	c := slowerTrace(t, dir, "lost", func(line string) bool { return inMPIIO(line) || strings.Contains(line, `"op":"write"`) })
	mustRun(t, "compare", "--format", "html", "-o", page, a, c)
	if raw, _ = os.ReadFile(page); !strings.Contains(string(raw), "count mismatch") {
		t.Errorf("the page does not flag a write one run lacks")
	}
}

// TestSelectorsE2E: one vocabulary of selectors in stats, dump, compare
// and convert: a rank list with ranges, ops by family in any case, a
// path filter that follows descriptors, an exclusion, a time window; the
// old spellings still work; a rank the trace lacks is an error.
func TestSelectorsE2E(t *testing.T) {
	dir := t.TempDir()
	tr := writeNewcomerTrace(t, dir)
	// --exclude /usr: the open of the locale file, and the read and flush
	// on its descriptor, which name no path, go.
	out := mustRun(t, "stats", "--by", "file", "--exclude", "/usr", tr)
	if strings.Contains(out, "/usr") || !strings.Contains(out, "/data/g") {
		t.Errorf("stats --exclude /usr:\n%s", out)
	}
	out = mustRun(t, "dump", "--path", "/usr", tr)
	if n := strings.Count(out, "\n"); n != 3 || !strings.Contains(out, "read") || !strings.Contains(out, "fflush") {
		t.Errorf("dump --path /usr: the calls on its descriptor are missing (%d lines):\n%s", n, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"stats", "--rank", "1", "--op", "WRITE"}, "1 ranks, 1 event,"},
		{[]string{"stats", "--rank-subset", "0-1", "--skip-ops", "comm,marker,mpiio"}, "TOTAL "},
		{[]string{"stats", "--time", "9ms:", "--rank", "0"}, "1 ranks, 4 events"},
		{[]string{"dump", "--include", "/data/g", "--op", "write"}, "write"},
	} {
		out := mustRun(t, append(c.args, tr)...)
		if !strings.Contains(out, c.want) {
			t.Errorf("%v: want %q in\n%s", c.args, c.want, out)
		}
	}
	// convert and compare take them too: rank 1 alone, compared with the
	// whole trace seen through the same selector.
	r1 := filepath.Join(dir, "r1.iot")
	mustRun(t, "convert", "--rank", "1", "-o", r1, tr)
	if out := mustRun(t, "stats", r1); !strings.HasPrefix(out, "1 ranks, 4 events") {
		t.Errorf("convert --rank 1:\n%s", out)
	}
	if out := mustRun(t, "compare", "--check", "--rank", "1", r1, tr); !strings.Contains(out, "All counts match") {
		t.Errorf("compare --rank 1:\n%s", out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"stats", "--rank", "5"}, "--rank 5: the trace has no rank 5 (its ranks: 0-1)"},
		{[]string{"dump", "--op", "wirte"}, "did you mean write?"},
		{[]string{"convert", "--exclude", "usr", "-o", filepath.Join(dir, "x.iot")}, `"usr" is not absolute`},
		{[]string{"compare", "--time", "5", tr}, "--time: time window"},
	} {
		_, errOut, code := run(t, append(c.args, tr)...)
		if code != 1 || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, want 1 and one line with %q:\n%s", c.args, code, c.want, errOut)
		}
	}
	// Every command that reads a trace lists the same selectors, and
	// hides the old spellings.
	for _, cmd := range []string{"stats", "dump", "compare", "convert"} {
		help := mustRun(t, cmd, "--help")
		for _, f := range []string{"--rank ranks", "--op list", "--skip-op list", "--path prefix", "--exclude prefix", "--time window"} {
			if !strings.Contains(help, f) {
				t.Errorf("%s --help lacks %s", cmd, f)
			}
		}
		if strings.Contains(help, "--rank-subset") || strings.Contains(help, "--skip-ops") {
			t.Errorf("%s --help shows the old spellings", cmd)
		}
	}
}

// TestHelpTeachesE2E: every command's help has examples; a command
// without its arguments prints its usage and examples; --version says
// which build it is; a mistyped command, flag, sample or op says what it
// may have meant; fmt says a binary trace is one.
func TestHelpTeachesE2E(t *testing.T) {
	for _, cmd := range []string{"record", "stats", "dump", "convert", "compare", "check", "merge", "generate", "samples", "fmt"} {
		help := mustRun(t, cmd, "--help")
		_, ex, ok := strings.Cut(help, "\nExamples:\n")
		if !ok || !strings.Contains(ex, "  iotrace "+cmd) && !strings.Contains(ex, "iotrace "+cmd) {
			t.Errorf("iotrace %s --help has no examples of it:\n%s", cmd, help)
		}
	}
	for _, c := range []struct{ args []string }{{[]string{"stats"}}, {[]string{"dump"}}, {[]string{"compare", "a"}}, {[]string{"convert"}},
		{[]string{"generate"}}, {[]string{"check"}}} {
		_, errOut, code := run(t, c.args...)
		if code != 1 || !strings.Contains(errOut, "Usage: iotrace "+c.args[0]) || !strings.Contains(errOut, "Examples:") ||
			strings.Contains(errOut, "arg(s)") {
			t.Errorf("iotrace %v: exit %d, want 1 with the usage and examples:\n%s", c.args, code, errOut)
		}
	}
	out, _, code := run(t, "--version")
	if code != 0 || !regexp.MustCompile(`^iotrace \S+ \((revision [0-9a-f]{12}(\+modified)?, \S+|no VCS revision recorded); go1\.\S+\)\n$`).MatchString(out) {
		t.Errorf("--version: exit %d, %q", code, out)
	}
	dir := t.TempDir()
	tr := filepath.Join(dir, "g.iot")
	if _, errOut, code := run(t, "generate", "ior", "--ranks", "1", "--calls", "4", "-o", tr); code != 0 || !strings.Contains(errOut, "not measured") {
		t.Errorf("generate does not say its times are not measured bandwidths: %d %s", code, errOut)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"stats", "astro3d-smal"}, "astro3d-smal: no such file, nor a sample of that name: did you mean astro3d-small?"},
		{[]string{"stat", tr}, `unknown command "stat": did you mean stats?`},
		{[]string{"stats", "--rnak", "0", tr}, "unknown flag: --rnak: did you mean --rank?"},
		{[]string{"stats", "--op", "MPI_File_writ_at", tr}, "did you mean MPI_File_write_at?"},
		{[]string{"fmt", tr}, "a binary trace, not a pattern script"},
		{[]string{"stats", "--ranks", "4", tr}, "--ranks 4: " + tr + " is a trace, not a pattern script"},
		{[]string{"convert", "-o", filepath.Join(dir, "x.txt"), tr}, "no form is written to files ending in .txt: give --to FORM"},
	} {
		_, errOut, code := run(t, c.args...)
		if code != 1 || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("iotrace %v: exit %d, want 1 and one line with %q:\n%s", c.args, code, c.want, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.txt")); err == nil {
		t.Error("convert -o x.txt wrote a file")
	}
}

// TestReadmeDamageAndRecovery runs the README's "Damage and recovery"
// lines as they stand, with the built iotrace first on PATH, and checks
// what they say they show.
func TestReadmeDamageAndRecovery(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(b), "# Damage and recovery")
	if !ok {
		t.Fatal("README.md has no Damage and recovery example")
	}
	block, _, _ = strings.Cut(block, "\n\n")
	dir := t.TempDir()
	env := append(os.Environ(), "PATH="+filepath.Dir(iotraceBin)+":"+os.Getenv("PATH"))
	var all strings.Builder
	for _, line := range strings.Split(block, "\n") {
		cmd, _, _ := strings.Cut(line, "  #")
		if strings.TrimSpace(cmd) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		c := exec.Command("sh", "-c", cmd)
		c.Dir, c.Env = dir, env
		out, err := c.CombinedOutput()
		all.WriteString("$ " + cmd + "\n" + string(out))
		if err != nil {
			all.WriteString("(" + err.Error() + ")\n")
		}
	}
	log := all.String()
	for _, want := range []string{"cut.iot: TRUNCATED", "45 blocks", "4 ranks, 671744 events", "read the 45 complete blocks",
		"offset 286116: block CRC mismatch (iotrace check tells more; --salvage reads past it)", "cut.iot: DAMAGED",
		"damaged: offset 286116", "4 ranks, 655360 events"} {
		if !strings.Contains(log, want) {
			t.Errorf("the README's damage and recovery example does not show %q:\n%s", want, log)
		}
	}
}

// TestRecordLeavesSystemOutE2E: by default record leaves the system's
// directories out, as Darshan does, and its summary line says so; --all
// keeps them; --quiet prints nothing of its own.
func TestRecordLeavesSystemOutE2E(t *testing.T) {
	recSkipUnsupported(t)
	sh := recNeedTool(t, "sh")
	dir := t.TempDir()
	out := filepath.Join(dir, "sys.iot")
	_, stderr, code := recRun(t, dir, nil, "", "record", "-o", out, "--", sh, "-c", "grep root /etc/passwd > copy.txt")
	if code != 0 {
		t.Fatalf("record: exit %d\n%s", code, stderr)
	}
	line := regexp.MustCompile(`(?m)^iotrace: record: ` + regexp.QuoteMeta(out) + `: \d+ events, \d+ files?, \S+ \S*B read, \S+ \S*B written; left out /proc /sys /dev /etc /usr .* \(--all keeps them\)$`)
	if !line.MatchString(stderr) || strings.Count(stderr, "\n") != 1 {
		t.Errorf("no summary line, or more than one line:\n%s", stderr)
	}
	files := mustRun(t, "stats", "--by", "file", out)
	if !strings.Contains(files, "copy.txt") || strings.Contains(files, "/etc/") || strings.Contains(files, "/usr/") || strings.Contains(files, "/lib") {
		t.Errorf("the system's files are in the trace:\n%s", files)
	}
	_, stderr, code = recRun(t, dir, nil, "", "record", "--all", "-o", out, "--", sh, "-c", "grep root /etc/passwd > copy.txt")
	if code != 0 || !strings.Contains(stderr, "nothing left out (--all)") {
		t.Fatalf("record --all: exit %d\n%s", code, stderr)
	}
	if files := mustRun(t, "stats", "--by", "file", out); !strings.Contains(files, "/etc/passwd") {
		t.Errorf("--all left /etc/passwd out:\n%s", files)
	}
	// The trace recorded with --all, seen as record would have made it.
	if files := mustRun(t, "stats", "--by", "file", "--exclude", "/etc", "--exclude", "/usr", "--exclude", "/lib", out); strings.Contains(files, "/etc/") {
		t.Errorf("stats --exclude /etc kept it:\n%s", files)
	}
	if _, stderr, code := recRun(t, dir, nil, "", "record", "-q", "-o", out, "--", "true"); code != 0 || stderr != "" {
		t.Errorf("record -q: exit %d, stderr %q", code, stderr)
	}
}
