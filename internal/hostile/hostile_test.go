package hostile

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// The binaries under test, built once by TestMain.
var iotrace, ioreplay string

// TestMain builds the binaries, or takes them from the directory
// IOTRACE_HOSTILE_BINS names (to try the inputs on another build).
func TestMain(m *testing.M) {
	if d := os.Getenv("IOTRACE_HOSTILE_BINS"); d != "" {
		iotrace, ioreplay = filepath.Join(d, "iotrace"), filepath.Join(d, "ioreplay")
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "iotrace-hostile-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cmd := exec.Command("go", "build", "-o", dir+"/", "./cmd/iotrace", "./cmd/ioreplay")
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building iotrace and ioreplay: %v\n%s", err, out)
		os.Exit(1)
	}
	iotrace, ioreplay = filepath.Join(dir, "iotrace"), filepath.Join(dir, "ioreplay")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Limits every command runs under: memory and wall time, far above what
// the inputs need and far below what the failures they guard against took
// (gigabytes, minutes, forever). Memory is the data limit (ulimit -d,
// RLIMIT_DATA: the writable private mappings a process commits, which is
// where a Go program's heap and stacks live), not the address-space limit
// (ulimit -v): the Go runtime reserves address space at start-up in ways
// that make a process fail under some -v limits and start under lower
// ones.
const (
	memLimitKB = 1 << 20
	timeLimit  = 90 * time.Second
)

type result struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// run runs prog (a built binary) with args in dir under the limits
// (memKB 0: memLimitKB).
func run(t *testing.T, dir string, memKB int, prog string, args ...string) result {
	t.Helper()
	if memKB == 0 {
		memKB = memLimitKB
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeLimit)
	defer cancel()
	sh := append([]string{"-c", fmt.Sprintf(`ulimit -d %d && exec "$0" "$@"`, memKB), prog}, args...)
	cmd := exec.CommandContext(ctx, "sh", sh...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), code: cmd.ProcessState.ExitCode(), took: time.Since(start)}
	if ctx.Err() != nil {
		t.Fatalf("%s %s: still running after %v (killed)", filepath.Base(prog), strings.Join(short(args), " "), timeLimit)
	}
	if err != nil && r.code == -1 {
		t.Fatalf("%s: %v", filepath.Base(prog), err)
	}
	for _, bad := range []string{"panic:", "fatal error", "goroutine ", "runtime: "} {
		if strings.Contains(r.stdout, bad) || strings.Contains(r.stderr, bad) {
			t.Fatalf("%s %s: a Go crash (%q) after %v:\n%s", filepath.Base(prog), strings.Join(short(args), " "), bad, r.took, clip(r.stderr+r.stdout))
		}
	}
	return r
}

// short shortens long arguments for messages.
func short(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = clip(a)
	}
	return out
}

func clip(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "…"
	}
	return s
}

// errorLines are the lines of stderr that are not notes or warnings.
func errorLines(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if l != "" && !strings.HasPrefix(l, "note: ") && !strings.HasPrefix(l, "warning: ") {
			out = append(out, l)
		}
	}
	return out
}

// wantError checks that the command failed with one line matching re.
func wantError(t *testing.T, r result, re string) {
	t.Helper()
	lines := errorLines(r.stderr)
	if r.code == 0 || len(lines) != 1 || !regexp.MustCompile(re).MatchString(lines[0]) {
		t.Fatalf("want one error line matching %q and a non-zero exit; got exit %d, stderr:\n%s", re, r.code, clip(r.stderr))
	}
}

// wantOK checks that the command succeeded.
func wantOK(t *testing.T, r result) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d after %v:\n%s", r.code, r.took, clip(r.stderr))
	}
}

// tally counts the hostile inputs tried, by kind, for the log.
var tally = struct {
	sync.Mutex
	n map[string]int
}{n: map[string]int{}}

func count(kind string, n int) {
	tally.Lock()
	tally.n[kind] += n
	tally.Unlock()
}

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestScripts: scripts that nest too deep, grow strings without end, loop
// without calls, or are long — through every command that reads a script.
func TestScripts(t *testing.T) {
	dir := t.TempDir()
	var sum strings.Builder
	sum.WriteString("let x = rank")
	for range 100_000 {
		sum.WriteString(" + 1")
	}
	sum.WriteString("\nwrite \"out.$rank\" size x\n")
	var elif strings.Builder
	elif.WriteString("if rank == -1 {\n    barrier\n}")
	for i := range 50_000 {
		fmt.Fprintf(&elif, " else if rank == %d {\n    write \"f%d\" size 1\n}", i, i)
	}
	elif.WriteString("\n")
	for _, tc := range []struct {
		name, src, want string // want: the error, "" when the script runs
	}{
		{"minus signs", "let x = " + strings.Repeat("-", 500_000) + "1\n", `nesting deeper than 1000 levels .*the limit is fixed`},
		{"parentheses", "let x = " + strings.Repeat("(", 1_000_000) + "1" + strings.Repeat(")", 1_000_000) + "\n", `nesting deeper than 1000 levels`},
		{"blocks", strings.Repeat("repeat 1 {\n", 5000) + strings.Repeat("}\n", 5000), `nesting deeper than 1000 levels`},
		{"interpolation", "let s = \"${" + strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000) + "}\"\n", `nesting deeper than 1000 levels`},
		{"string doubling", "let s = \"x\"\nrepeat 40 {\n    s = s + s\n}\nwrite s size 1\n", `rank 0: string of \d+ bytes or more: a string holds at most 4095 bytes .*the limit is fixed`},
		{"string appending", "let s = \"\"\nrepeat 9223372036854775807 {\n    s = \"${s}0123456789\"\n}\n", `a string holds at most 4095 bytes`},
		{"empty loop", "repeat 9223372036854775807 {\n}\n", `rank 0: 100000000 statements and loop iterations ran without making a call .*the limit is fixed`},
		{"loop of a skipped branch", "repeat 9223372036854775807 as i {\n    if rank == 7 {\n        barrier\n    }\n}\n", `ran without making a call`},
		{"sum of 100,000 terms", sum.String(), ""},
		{"else-if chain of 50,000", elif.String(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := write(t, dir, strings.ReplaceAll(tc.name, " ", "_")+".iop", tc.src)
			cmds := [][]string{
				{iotrace, "fmt", f},
				{iotrace, "stats", "--ranks", "2", f},
				{iotrace, "convert", "--ranks", "2", "-o", f + ".iot", f},
				{ioreplay, "--dry-run", "--ranks", "2", f},
			}
			if strings.Contains(tc.want, "without making a call") {
				cmds = cmds[1:2] // seconds each: the script package tests the rest
			}
			for _, c := range cmds {
				r := run(t, dir, 0, c[0], c[1:]...)
				switch {
				case c[1] == "fmt" && !strings.Contains(tc.want, "nesting"):
					wantOK(t, r) // the others are run-time limits
				case tc.want == "":
					wantOK(t, r)
				default:
					wantError(t, r, tc.want)
					if _, err := os.Stat(f + ".iot"); err == nil {
						t.Fatalf("%s left an output behind", c[1])
					}
				}
			}
			count("script", 1)
		})
	}
}

// TestExtremeNumbers: a trace at the most negative time with a write of
// 2^62 bytes (HumanDuration and HumanBytes recursed until the stack
// overflowed), through every table, HTML, compare and a dry run.
func TestExtremeNumbers(t *testing.T) {
	dir := t.TempDir()
	for i, lines := range []string{
		`{"rank":0,"op":"open","path":"/a","ret":3,"start_ns":-9223372036854775808,"dur_ns":1}` + "\n" +
			`{"rank":0,"op":"write","fd":3,"size":4611686018427387904,"ret":4611686018427387904,"start_ns":0,"dur_ns":10}` + "\n",
		`{"rank":0,"op":"pwrite","path":"/a","fd":3,"offset":4611686018427387904,"size":4611686018427387904,"ret":4611686018427387904,"start_ns":9223372036854775807,"dur_ns":9223372036854775807}` + "\n" +
			`{"rank":1,"op":"pwrite","path":"/a","fd":3,"size":4611686018427387904,"ret":4611686018427387904,"start_ns":-9223372036854775808,"dur_ns":9223372036854775807}` + "\n",
	} {
		in := write(t, dir, fmt.Sprintf("x%d.jsonl", i), lines)
		tr := strings.TrimSuffix(in, ".jsonl") + ".iot"
		wantOK(t, run(t, dir, 0, iotrace, "convert", "-o", tr, in))
		for _, by := range []string{"op", "size", "rank", "file", "region"} {
			for _, f := range []string{"text", "csv", "json", "markdown"} {
				wantOK(t, run(t, dir, 0, iotrace, "stats", "--by", by, "--format", f, tr))
			}
		}
		wantOK(t, run(t, dir, 0, iotrace, "stats", "--format", "html", "-o", tr+".html", tr))
		wantOK(t, run(t, dir, 0, iotrace, "compare", tr, tr))
		wantOK(t, run(t, dir, 0, iotrace, "dump", tr))
		r := run(t, dir, 0, ioreplay, "--dry-run", tr)
		wantOK(t, r)
		if !strings.Contains(r.stdout, "dry run:") {
			t.Fatalf("dry run printed:\n%s", clip(r.stdout))
		}
		count("trace: extreme times and sizes", 1)
	}
}

// TestPredictExtremeDurations: ioreplay --predict of a trace whose
// calls on /dev/null (skipped, their captured time kept in the rebuilt
// timeline) last 2^62 ns each: the prediction is held at the largest
// duration, not wrapped to a negative or 1 ns span, and the replay's own
// trace (--record) holds it in a replay block its reader takes (it
// refused times over 2^62 ns, which its writer wrote).
func TestPredictExtremeDurations(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString(`{"rank":0,"op":"open","path":"/dev/null","ret":3,"flags":"O_WRONLY","start_ns":0,"dur_ns":10}` + "\n")
	for i := 1; i <= 3; i++ {
		fmt.Fprintf(&b, `{"rank":0,"op":"write","fd":3,"size":1,"ret":1,"start_ns":%d,"dur_ns":4611686018427387904}`+"\n", i*100)
	}
	b.WriteString(`{"rank":0,"op":"open","path":"/a","ret":4,"flags":"O_WRONLY|O_CREAT","mode":"0644","start_ns":400,"dur_ns":10}` + "\n")
	b.WriteString(`{"rank":0,"op":"close","fd":4,"ret":0,"start_ns":500,"dur_ns":10}` + "\n")
	in := write(t, dir, "long.jsonl", b.String())
	tr := filepath.Join(dir, "long.iot")
	wantOK(t, run(t, dir, 0, iotrace, "convert", "-o", tr, in))
	rec := filepath.Join(dir, "replay.iot")
	r := run(t, dir, 0, ioreplay, "--predict", "--target", filepath.Join(dir, "target"), "--record", rec, tr)
	wantOK(t, r)
	const want = "predicted application I/O time (first file call to last, every rank): 9223372037s"
	if !strings.Contains(r.stdout+r.stderr, want) {
		t.Errorf("prediction:\n%s%s", clip(r.stdout), clip(r.stderr))
	}
	r = run(t, dir, 0, iotrace, "stats", rec)
	wantOK(t, r)
	if !strings.Contains(r.stdout, want) {
		t.Errorf("stats of the replay's trace:\n%s%s", clip(r.stdout), clip(r.stderr))
	}
	count("trace: extreme times and sizes", 1)
}

// TestDescriptorNumbers: opens that return descriptor 1048575 on 4,096
// ranks (a table as long as the number took 8 MiB a rank): stats, the
// script converter, a dry run and a real replay, within the memory limit;
// the replay makes every rank's file.
func TestDescriptorNumbers(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	const ranks = 4096
	for r := range ranks {
		fmt.Fprintf(&b, `{"rank":%d,"op":"open","path":"/scratch/f%d","ret":1048575,"flags":"O_WRONLY|O_CREAT","mode":"0644","start_ns":100,"dur_ns":10}`+"\n", r, r)
		fmt.Fprintf(&b, `{"rank":%d,"op":"write","fd":1048575,"size":16,"ret":16,"start_ns":200,"dur_ns":10}`+"\n", r)
		fmt.Fprintf(&b, `{"rank":%d,"op":"close","fd":1048575,"ret":0,"start_ns":300,"dur_ns":10}`+"\n", r)
	}
	in := write(t, dir, "fds.jsonl", b.String())
	tr := filepath.Join(dir, "fds.iot")
	wantOK(t, run(t, dir, 0, iotrace, "convert", "-o", tr, in))
	wantOK(t, run(t, dir, 0, iotrace, "stats", "--by", "file", tr))
	wantOK(t, run(t, dir, 0, iotrace, "convert", "-o", filepath.Join(dir, "fds.iop"), tr))
	wantOK(t, run(t, dir, 0, ioreplay, "--dry-run", tr))
	target := filepath.Join(dir, "target")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	wantOK(t, run(t, dir, 0, ioreplay, "--target", target, "--timing", "afap", tr))
	files, _ := filepath.Glob(filepath.Join(target, "*"))
	if len(files) != ranks {
		t.Fatalf("the replay made %d files, want %d", len(files), ranks)
	}
	count("trace: descriptor numbers", 1)
}

// TestManyRanks: 100,000 ranks that only meet at a barrier (6.1 GB to
// convert), their plan, and the replay and the script converter on
// 10,000 of them: memory bounded per rank, nothing lost.
func TestManyRanks(t *testing.T) {
	dir := t.TempDir()
	s := write(t, dir, "barrier.iop", "barrier\n")
	tr := filepath.Join(dir, "barrier.iot")
	wantOK(t, run(t, dir, 1536<<10, iotrace, "convert", "--ranks", "100000", "-o", tr, s))
	r := run(t, dir, 0, iotrace, "stats", tr)
	wantOK(t, r)
	if !strings.HasPrefix(r.stdout, "100000 ranks, 100000 events") {
		t.Fatalf("stats: %s", clip(r.stdout))
	}
	// The plan of 100,000 ranks, and a replay of 10,000: a few KiB a
	// rank (1.7 GB and 710 MB before: 8 KiB tables by op in the plan and
	// the result, 64 events read ahead, a writer goroutine each).
	wantOK(t, run(t, dir, 512<<10, ioreplay, "--dry-run", tr))
	small := filepath.Join(dir, "b10k.iot")
	wantOK(t, run(t, dir, 0, iotrace, "convert", "--ranks", "10000", "-o", small, s))
	wantOK(t, run(t, dir, 400<<10, ioreplay, "--timing", "afap", "--quiet", small))
	out := filepath.Join(dir, "b10k.iop")
	wantOK(t, run(t, dir, 0, iotrace, "convert", "-o", out, small))
	if src, _ := os.ReadFile(out); !strings.Contains(string(src), "--ranks 10000") || !strings.Contains(string(src), "\nbarrier\n") {
		t.Fatalf("script:\n%s", clip(string(src)))
	}
	count("trace: many ranks", 2)
}

// TestRankNumbers: a rank numbered 4294967295 (the script converter made
// a table of 4 Gi ranks) and a DXT job of 99999999999999 processes.
func TestRankNumbers(t *testing.T) {
	dir := t.TempDir()
	in := write(t, dir, "r.jsonl", `{"rank":4294967295,"op":"open","path":"/a","ret":3,"start_ns":1,"dur_ns":1}`+"\n")
	tr := filepath.Join(dir, "r.iot")
	wantOK(t, run(t, dir, 0, iotrace, "convert", "-o", tr, in))
	wantOK(t, run(t, dir, 0, iotrace, "stats", tr))
	wantError(t, run(t, dir, 0, iotrace, "convert", "-o", filepath.Join(dir, "r.iop"), tr), `the trace has 4294967296 ranks .*: a script runs at most 1048576`)
	count("trace: rank numbers", 1)
	dxt := `# darshan log version: 3.41
# exe: /bin/x
# nprocs: NPROCS
# start_time: 1795342037

# DXT_POSIX module data
# DXT, file_id: 1, file_name: /scratch/out
# DXT, rank: 3, hostname: n1
# DXT, write_count: 1, read_count: 0
# Module    Rank  Wt/Rd  Segment          Offset       Length    Start(s)      End(s)
 X_POSIX       3  write        0               0        65536      0.0010      0.0020
`
	for _, tc := range []struct{ nprocs, want string }{
		{"99999999999999", `job\.txt:3: nprocs 99999999999999: more processes than a trace holds \(2147483648\); the log lists ranks up to 3`},
		{"2", `job\.txt:3: nprocs 2, but the log lists rank 3`},
		{"-1", `job\.txt:3: nprocs "-1"`},
		{"64", ""},
	} {
		f := write(t, dir, "job.txt", strings.Replace(dxt, "NPROCS", tc.nprocs, 1))
		out := filepath.Join(dir, "job.iot")
		os.Remove(out)
		r := run(t, dir, 0, iotrace, "convert", "--from", "dxt", "-o", out, f)
		if tc.want == "" {
			wantOK(t, r)
			wantOK(t, run(t, dir, 0, iotrace, "stats", out))
		} else {
			wantError(t, r, tc.want)
		}
		count("log: DXT nprocs", 1)
	}
}

// TestImporterNumbers: durations, offsets and lengths the tools cannot
// have written are refused with the line, not read as 0.
func TestImporterNumbers(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ from, name, in, want string }{
		{"strace", "nan.strace", "1700000000.000001 read(3</a>, \"x\", 1) = 1 <nan>\n", `nan\.strace:1: read: duration <nan>: want the seconds strace -T writes`},
		{"strace", "neg.strace", "1700000000.000001 read(3</a>, \"x\", 1) = 1 <-1.5>\n", `neg\.strace:1: read: duration <-1\.5>`},
		{"strace", "big.strace", "1700000000.000001 read(3</a>, \"x\", 1) = 1 <99999999999999999999.0>\n", `big\.strace:1: read: duration <99999999999999999999\.0>`},
		{"fio", "off.iolog", "fio version 3 iolog\n1 /a add\n2 /a open\n3 /a read 9223372036854775807 4096\n", `off\.iolog:4: offset 9223372036854775807 and length 4096 end past`},
		{"fio", "len.iolog", "fio version 3 iolog\n1 /a add\n2 /a open\n3 /a read 0 99999999999\n", `len\.iolog:4: length "99999999999"`},
	} {
		f := write(t, dir, tc.name, tc.in)
		wantError(t, run(t, dir, 0, iotrace, "convert", "--from", tc.from, "-o", f+".iot", f), tc.want)
		count("log: "+tc.from+" numbers", 1)
	}
}

// TestLongLinesAndPaths: a path of 20 MB in a CSV row, in a quoted cell
// over many lines, in JSON lines, strace, DXT and fio iologs: each
// importer stops at the limit every text importer has (1 MiB a line,
// 4,095 bytes a path), with the line.
func TestLongLinesAndPaths(t *testing.T) {
	dir := t.TempDir()
	huge := strings.Repeat("p", 20<<20)
	long := "/" + strings.Repeat("q", 4095)
	for _, tc := range []struct{ from, name, in, want string }{
		{"csv", "huge.csv", "rank,op,path\n0,open,/" + huge + "\n", `huge\.csv:2: record longer than 1048576 bytes`},
		{"csv", "lines.csv", "rank,op,path\n0,open,\"" + strings.Repeat("p\n", 2<<20) + "\"\n", `lines\.csv:2: record longer than 1048576 bytes`},
		{"csv", "path.csv", "rank,op,path\n0,open," + long + "\n", `path\.csv:2: field "path": path of 4096 bytes: a path holds at most 4095 bytes`},
		{"jsonl", "huge.jsonl", `{"rank":0,"op":"open","path":"/` + huge + `"}` + "\n", `huge\.jsonl:1: line longer than 1048576 bytes`},
		{"jsonl", "path.jsonl", `{"rank":0,"op":"open","path":"` + long + `"}` + "\n", `path\.jsonl:1: field "path": path of 4096 bytes`},
		{"strace", "huge.strace", "1700000000.000001 openat(AT_FDCWD, \"/" + huge + "\", O_RDONLY) = 3 <0.000010>\n", `huge\.strace:1: line longer than 1048576 bytes`},
		{"strace", "path.strace", "1700000000.000001 openat(AT_FDCWD, \"" + long + "\", O_RDONLY) = 3 <0.000010>\n", `path\.strace:1: openat: path of 4096 bytes`},
		{"dxt", "huge.txt", "# DXT, file_id: 1, file_name: /" + huge + "\n", `huge\.txt:1: line longer than 1048576 bytes`},
		{"dxt", "path.txt", "# DXT, file_id: 1, file_name: " + long + "\n", `path\.txt:1: file_name: path of 4096 bytes`},
		{"fio", "huge.iolog", "fio version 3 iolog\n1 /" + huge + " add\n", `huge\.iolog:2: line longer than 1048576 bytes`},
	} {
		f := write(t, dir, tc.name, tc.in)
		wantError(t, run(t, dir, 0, iotrace, "convert", "--from", tc.from, "-o", f+".iot", f), tc.want)
		if _, err := os.Stat(f + ".iot"); err == nil {
			t.Fatalf("%s: an output was left behind", tc.name)
		}
		count("log: long lines and paths", 1)
	}
}

// TestFioExportManyDirectories: 50,000 files in 50,000 directories (the
// exporter compared every directory with every other, and every file at
// every close: 100,000 took 377 s); every file written is in the iolog.
func TestFioExportManyDirectories(t *testing.T) {
	dir := t.TempDir()
	const n = 50_000
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"rank":0,"op":"open","path":"/s/d%d/f","ret":3,"flags":"O_WRONLY|O_CREAT","start_ns":%d,"dur_ns":1}`+"\n", i, i*10)
		fmt.Fprintf(&b, `{"rank":0,"op":"write","fd":3,"size":10,"ret":10,"start_ns":%d,"dur_ns":1}`+"\n", i*10+2)
		fmt.Fprintf(&b, `{"rank":0,"op":"close","fd":3,"ret":0,"start_ns":%d,"dur_ns":1}`+"\n", i*10+4)
	}
	in := write(t, dir, "dirs.jsonl", b.String())
	wantOK(t, run(t, dir, 0, iotrace, "convert", "-o", filepath.Join(dir, "out", "d.fio"), in))
	log, err := os.ReadFile(filepath.Join(dir, "out", "d-rank0.iolog"))
	if err != nil {
		t.Fatal(err)
	}
	if w, c := strings.Count(string(log), " write "), strings.Count(string(log), " close\n"); w != n || c != n {
		t.Fatalf("%d writes and %d closes in the iolog, want %d", w, c, n)
	}
	count("trace: fio export of many directories", 1)
}
