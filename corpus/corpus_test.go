package corpus

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iotrace/iotrace/capture/preload"
)

var (
	writeDoc = flag.Bool("write", false, "rewrite docs/CORPUS.md from this run (every case must run)")
	keepDir  = flag.String("keep", "", "run each case in DIR/CASE and keep it there (inputs, strace output, traces, replays, scripts)")
	binsDir  = flag.String("bins", "", "use the iotrace and ioreplay in DIR instead of building this checkout's (another branch's, say)")
)

// modes are the capture modes every case is recorded in.
var modes = []string{"ptrace", "preload"}

// oracles, in the columns of docs/CORPUS.md.
var oracles = []string{"a", "b", "c", "d"}

// cell is one oracle's verdict on one case in one mode.
type cell struct {
	Pass   bool
	Reason string // why it failed; for a pass, what was left out (may be empty)
}

type modeResult struct {
	Mode       string
	Cells      map[string]cell // by oracle
	Events     int
	TraceBytes int64
}

type caseResult struct {
	Case     *Case
	Skipped  string
	Modes    []*modeResult
	Duration time.Duration
}

// bins are the binaries of this checkout, built once per test run.
type bins struct {
	iotrace, ioreplay string
}

// TestCorpus runs every case of the corpus in both capture modes and
// judges each with the four oracles (docs/CORPUS.md says what they
// check). A cell that fails and is not in expected, or passes and is, fails
// the test: the list of known failures follows iotrace as it gets fixed.
func TestCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("the corpus runs real programs for minutes; not with -short")
	}
	start := time.Now()
	b := buildBins(t)
	warmPreload(t, b)

	var mu sync.Mutex
	var results []*caseResult
	t.Cleanup(func() {
		if t.Skipped() {
			return
		}
		sort.Slice(results, func(i, j int) bool { return caseIndex(results[i].Case) < caseIndex(results[j].Case) })
		changed := judge(results)
		if len(changed) > 0 {
			t.Errorf("%d cells differ from the expected table (corpus/expected_test.go):\n  %s", len(changed), strings.Join(changed, "\n  "))
		}
		t.Logf("corpus: %d cases in %v", len(results), time.Since(start).Round(time.Second))
		if *writeDoc {
			for _, r := range results {
				if r.Skipped != "" {
					t.Errorf("-write: case %s was skipped (%s); docs/CORPUS.md needs every case", r.Case.Name, r.Skipped)
					return
				}
			}
			if len(results) != len(cases) {
				t.Errorf("-write: %d of %d cases ran (a -run filter?); docs/CORPUS.md needs every case", len(results), len(cases))
				return
			}
			if err := writeCorpusDoc(results, time.Since(start)); err != nil {
				t.Error(err)
			} else {
				t.Log("wrote docs/CORPUS.md")
			}
		}
	})
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			r := &caseResult{Case: c}
			defer func() {
				if t.Failed() && r.Skipped == "" {
					// The harness failed (it says why): no verdicts.
					r.Modes, r.Skipped = nil, "the harness failed"
				}
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
			}()
			if msg := missing(c); msg != "" {
				r.Skipped = msg
				if os.Getenv("CI") == "true" {
					t.Fatalf("CI=true: %s", msg)
				}
				t.Skip(msg)
			}
			t0 := time.Now()
			runCase(t, b, c, r)
			r.Duration = time.Since(t0)
			for _, m := range r.Modes {
				for _, o := range oracles {
					cl := m.Cells[o]
					mark := "✓"
					if !cl.Pass {
						mark = "✗"
					}
					t.Logf("%s/%s/%s %s %s", c.Name, m.Mode, o, mark, cl.Reason)
				}
			}
		})
	}
}

func caseIndex(c *Case) int {
	for i, x := range cases {
		if x == c {
			return i
		}
	}
	return -1
}

// judge compares the cells with the expected table and returns the cells
// that changed, each with what it was expected to be and what it is.
func judge(results []*caseResult) []string {
	var changed []string
	for _, r := range results {
		if r.Skipped != "" || len(r.Modes) == 0 {
			continue
		}
		for _, m := range r.Modes {
			for _, o := range oracles {
				key := r.Case.Name + "/" + m.Mode + "/" + o
				cl := m.Cells[o]
				if _, ok := flaky[key]; ok {
					continue // either way; the table says why
				}
				why, listed := expected[key]
				switch {
				case !cl.Pass && !listed:
					changed = append(changed, fmt.Sprintf("%s: REGRESSION: fails and is not listed as expected: %s", key, cl.Reason))
				case cl.Pass && listed:
					changed = append(changed, fmt.Sprintf("%s: FIXED: passes now; remove it from expected (it was: %s)", key, why))
				}
			}
		}
	}
	known := map[string]bool{}
	for _, c := range cases {
		known[c.Name] = true
	}
	var stale []string
	for _, table := range []map[string]string{expected, flaky} {
		for key := range table {
			parts := strings.Split(key, "/")
			if len(parts) != 3 || !known[parts[0]] || (parts[1] != "ptrace" && parts[1] != "preload") || !strings.Contains("abcd", parts[2]) || len(parts[2]) != 1 {
				stale = append(stale, fmt.Sprintf("%s: no such cell (case/mode/oracle); remove it", key))
			}
		}
	}
	for key := range flaky {
		if _, ok := expected[key]; ok {
			stale = append(stale, fmt.Sprintf("%s: both expected and flaky; keep one", key))
		}
	}
	sort.Strings(stale)
	return append(changed, stale...)
}

// missing says what of c's needs is not installed, naming the package.
func missing(c *Case) string {
	for _, n := range append([]Need{needStrace, needCC}, c.Needs...) {
		if n.Check != nil {
			if err := n.Check(); err != nil {
				return fmt.Sprintf("%s: %s is missing (%v); install Debian package %s", c.Name, n.Desc, err, n.Pkg)
			}
			continue
		}
		if _, err := exec.LookPath(n.Prog); err != nil {
			return fmt.Sprintf("%s: %s not found; install Debian package %s", c.Name, n.Prog, n.Pkg)
		}
	}
	return ""
}

func buildBins(t *testing.T) bins {
	t.Helper()
	if *binsDir != "" {
		b := bins{iotrace: filepath.Join(*binsDir, "iotrace"), ioreplay: filepath.Join(*binsDir, "ioreplay")}
		for _, p := range []string{b.iotrace, b.ioreplay} {
			if _, err := os.Stat(p); err != nil {
				t.Fatalf("-bins: %v", err)
			}
		}
		return b
	}
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+"/", "./cmd/iotrace", "./cmd/ioreplay")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building iotrace and ioreplay: %v\n%s", err, out)
	}
	return bins{iotrace: filepath.Join(dir, "iotrace"), ioreplay: filepath.Join(dir, "ioreplay")}
}

// warmPreload records one trivial program with --preload, so that the shim
// is built (once, into the cache) before cases run side by side.
func warmPreload(t *testing.T, b bins) {
	t.Helper()
	dir := t.TempDir()
	r := run(dir, nil, 2*time.Minute, b.iotrace, "record", "--preload", "-o", filepath.Join(dir, "w.iot"), "--", "true")
	if r.code != 0 {
		t.Logf("warming the preload shim: exit %d: %s", r.code, lastLine(r.stderr))
	}
}

// result is how a command ended.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	if r.code == -1 {
		return r.stderr
	}
	return fmt.Sprintf("exit %d: %s", r.code, lastLine(r.stderr))
}

// run runs argv in dir with env (nil: the harness's own), within timeout.
func run(dir string, env []string, timeout time.Duration, argv ...string) result {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.code, r.stderr = -1, fmt.Sprintf("%s: no end after %v", argv[0], timeout)
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
		if r.code == -1 {
			r.code = 128 // killed by a signal
			r.stderr += "\n" + ee.String()
		}
	case err != nil:
		r.code, r.stderr = -1, err.Error()
	}
	return r
}

func runQuiet(dir string, argv ...string) error {
	r := run(dir, append(os.Environ(), "LC_ALL=C"), time.Minute, argv...)
	if r.code != 0 {
		return fmt.Errorf("%s: %s", strings.Join(argv, " "), r)
	}
	return nil
}

// lastLine is the last line of a command's error output that says
// something: mpirun's boxes of dashes are skipped, and where mpirun
// reports a rank's exit code, that is the line.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for _, l := range lines {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "Exit code:") {
			code := strings.TrimSpace(strings.TrimPrefix(l, "Exit code:"))
			if code == "139" {
				code += " (SIGSEGV)"
			}
			return "mpirun: a rank exited with " + code
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.Trim(l, "-") != "" {
			return l
		}
	}
	return ""
}

// progEnv is the environment the programs run in: the harness's, without
// anything of iotrace's but the preload shim's cache, with HOME and TMPDIR
// outside DIR, the C locale and UTC, and what Open MPI needs to run as
// root.
func progEnv(c *Case, d *caseDirs) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "IOTRACE_") || k == "LD_PRELOAD" || strings.HasPrefix(k, "LC_") || k == "LANG" ||
			k == "HOME" || k == "TMPDIR" || k == "TZ" || strings.HasPrefix(k, "GIT_") || strings.HasPrefix(k, "OMPI_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+d.Home, "TMPDIR="+d.Tmp, "LC_ALL=C", "TZ=UTC",
		"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "OMPI_MCA_rmaps_base_oversubscribe=1")
	if cache, err := preload.CacheDir(); err == nil {
		// The shim warmPreload built, not one more build per case in its
		// own HOME.
		env = append(env, "IOTRACE_CACHE="+cache)
	}
	return append(env, c.Env...)
}

// mpi wraps argv in mpirun for an MPI case.
func mpi(c *Case, argv ...string) []string {
	if c.Ranks == 0 {
		return argv
	}
	return append([]string{"mpirun", "-np", fmt.Sprint(c.Ranks), "--oversubscribe", "--bind-to", "none"}, argv...)
}

const progTimeout = 3 * time.Minute

// runCase runs c under strace, then records it in each mode and judges
// the recordings.
func runCase(t *testing.T, b bins, c *Case, r *caseResult) {
	root := t.TempDir()
	if *keepDir != "" {
		root = filepath.Join(*keepDir, c.Name)
		if err := os.RemoveAll(root); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(root, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	root, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	var d *caseDirs
	d = &caseDirs{Root: root, Dir: filepath.Join(root, "work"), Prog: filepath.Join(root, "prog"),
		Home: filepath.Join(root, "home"), Inputs: filepath.Join(root, "inputs")}
	// TMPDIR is short: Open MPI puts its session directory, with Unix
	// sockets of at most 107 bytes of path, in it.
	tmp, err := os.MkdirTemp("", "corpus-tmp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	d.Tmp = tmp
	for _, p := range []string{d.Prog, d.Home, d.Inputs} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if c.Prepare != nil {
		if err := c.Prepare(d); err != nil {
			t.Fatalf("preparing %s: %v", c.Name, err)
		}
	}
	if err := c.Inputs(d, d.Inputs); err != nil {
		t.Fatalf("making the inputs of %s: %v", c.Name, err)
	}
	if err := fixTimes(d.Inputs); err != nil {
		t.Fatal(err)
	}
	env := progEnv(c, d)
	argv := c.Argv(d)

	// The reference: the program under strace, on its own copy of the inputs.
	fresh(t, d)
	sdir := filepath.Join(root, "strace")
	os.MkdirAll(sdir, 0o755)
	var sargv []string
	sflags := []string{"strace", "-f", "-y", "-qq", "-e", "signal=none", "-e", "trace=" + straceExpr()}
	if c.Ranks > 0 {
		// One output per rank: the rank is known only inside mpirun.
		sargv = mpi(c, append([]string{"sh", "-c", `exec "$@" -o "` + sdir + `/s.$OMPI_COMM_WORLD_RANK" -- ` + strings.Join(quoteAll(argv), " "), "sh"}, sflags...)...)
	} else {
		sargv = append(append(sflags, "-o", filepath.Join(sdir, "s.0"), "--"), argv...)
	}
	if res := run(d.Dir, env, progTimeout, sargv...); res.code != 0 {
		t.Fatalf("%s under strace: %s\n%s", c.Name, res, res.stderr)
	}
	sfiles, _ := filepath.Glob(filepath.Join(sdir, "s.*"))
	if len(sfiles) == 0 {
		t.Fatalf("%s: strace wrote no output", c.Name)
	}
	var list io.Writer
	if *keepDir != "" {
		f, err := os.Create(filepath.Join(root, "strace-counted.txt"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		list = f
	}
	ref, err := parseStraceFiles(sfiles, d.Dir, d.Dir, list)
	if err != nil {
		t.Fatal(err)
	}
	// The strace importer takes each log as strace wrote it for a program
	// nobody here wrote (a failure is a bug of the importer, not a cell).
	for _, sf := range sfiles {
		imp := filepath.Join(root, "imported-"+filepath.Base(sf)+".iot")
		if res := run(root, nil, progTimeout, b.iotrace, "convert", "--from", "strace", "-o", imp, sf); res.code != 0 {
			t.Errorf("iotrace convert --from strace %s: %s\n%s", sf, res, res.stderr)
		}
	}
	refEnd, err := snapshot(d.Dir)
	if err != nil {
		t.Fatal(err)
	}

	for _, mode := range modes {
		m := &modeResult{Mode: mode, Cells: map[string]cell{}}
		r.Modes = append(r.Modes, m)
		fresh(t, d)
		before, err := snapshot(d.Dir)
		if err != nil {
			t.Fatal(err)
		}
		tr := filepath.Join(root, "T-"+mode+".iot")
		rec := []string{b.iotrace, "record"}
		if mode == "preload" {
			rec = append(rec, "--preload")
		}
		rec = append(append(rec, "--include", d.Dir, "-o", tr, "--"), argv...)
		res := run(d.Dir, env, progTimeout, mpi(c, rec...)...)
		after, err := snapshot(d.Dir)
		if err != nil {
			t.Fatal(err)
		}
		if res.code != 0 {
			why := "record: " + res.String()
			for _, o := range oracles {
				m.Cells[o] = cell{Reason: why}
			}
			continue
		}
		m.TraceBytes = pathSize(tr)
		st, err := stats(b, tr)
		if err != nil {
			for _, o := range oracles {
				m.Cells[o] = cell{Reason: "stats of the trace: " + err.Error()}
			}
			continue
		}
		m.Events = st.Events
		m.Cells["a"] = oracleCapture(c, mode, st, ref)
		if diff := sameShape(refEnd, after); diff != "" {
			// (a) compares with the strace run: it holds only if the
			// program did the same work under both.
			a := m.Cells["a"]
			a.Pass = false
			a.Reason = strings.TrimPrefix(a.Reason+"; ", "; ") + "the program's end state differs from its run under strace: " + diff
			m.Cells["a"] = a
		}
		m.Cells["b"], m.Cells["c"] = oracleReplay(b, d, mode, tr, st, before, after)
		m.Cells["d"] = oracleScript(b, d, mode, tr, st)
	}
	// Reasons name DIR and the case's directory, not this run's temporary path.
	for _, m := range r.Modes {
		for o, cl := range m.Cells {
			cl.Reason = strings.ReplaceAll(cl.Reason, d.Dir, "DIR")
			cl.Reason = strings.ReplaceAll(cl.Reason, d.Root, "ROOT")
			m.Cells[o] = cl
		}
	}
}

func quoteAll(argv []string) []string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return q
}

// fresh makes DIR a new copy of the inputs, and TMPDIR empty.
func fresh(t *testing.T, d *caseDirs) {
	t.Helper()
	for _, p := range []string{d.Dir, d.Tmp} {
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(d.Tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := copyTree(d.Inputs, d.Dir); err != nil {
		t.Fatal(err)
	}
	if err := fixTimes(d.Dir); err != nil {
		t.Fatal(err)
	}
}

// inputTime is every input's mtime: long past, the same in every run, so
// that programs that compare times (make, git's racy-clean check) decide
// alike every time.
var inputTime = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

func fixTimes(dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			dirs = append(dirs, p)
			return nil
		}
		return os.Chtimes(p, inputTime, inputTime)
	})
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chtimes(dirs[i], inputTime, inputTime); err != nil {
			return err
		}
	}
	return nil
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if e.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		return copyFile(p, to)
	})
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// pathSize is the size of a file, or of the files of a directory.
func pathSize(p string) int64 {
	var n int64
	filepath.WalkDir(p, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
