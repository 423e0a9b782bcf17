package corpus

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"time"
)

const docPath = "../docs/CORPUS.md"

// writeCorpusDoc writes docs/CORPUS.md from a run of every case.
func writeCorpusDoc(results []*caseResult, elapsed time.Duration) error {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w(`# The corpus: real programs, recorded, replayed, converted

<!-- Written by the corpus test (corpus/run.sh, or: go test ./corpus -run TestCorpus -args -write). Do not edit. -->

The corpus (` + "`corpus/`" + `) runs programs nobody here wrote — tar, gzip, xz, zip,
sqlite3, git, cp, ln, sed, perl, find, sort, split, rsync, dd, make with gcc,
python3, dash, bash, fio, h5py and PnetCDF under mpirun — each doing real work on inputs the harness makes in a fresh
directory DIR, and a threaded C program the harness compiles. Every case is
recorded in both capture modes,

    iotrace record          --include DIR -o DIR/../T.iot -- PROG   # ptrace
    iotrace record --preload --include DIR -o DIR/../T.iot -- PROG   # LD_PRELOAD shim

(MPI cases: ` + "`mpirun -np 2 --oversubscribe iotrace record … -- PROG`" + `), and each
recording is judged by four oracles:

- **(a) capture**: the calls and bytes per op family (` + "`trace.Op.Info().Family`" + `:
  open, close, read, write, copy, seek, sync, stat, unlink, rename, mkdir,
  rmdir, link, truncate, allocate, advise, dup, readdir, mmap) on the files
  under DIR equal what strace sees for the same program on the same inputs:
  the program runs once more under ` + "`strace -f -y -qq -e signal=none -e trace=…`" + `
  (the system calls of those families, and chdir/fchdir/clone/fork to follow
  working directories), and a parser of its own in the test
  (` + "`corpus/strace_test.go`" + `) finds the files each call names — the ` + "`<path>`" + `
  decorations of -y, path arguments resolved against their directory
  descriptor or the working directory — and maps each system call to its
  family with ` + "`trace.ParseOp`" + `. A call counts when a file it names is DIR or
  under it; failed calls count too; bytes are the results of data calls. The
  capture's side is ` + "`iotrace stats --detail --format json`" + ` of the trace
  (POSIX and metadata rows; a row "X (in MPI-IO)" counts as X). The
  comparison holds only if the program did the same work in both runs, so
  (a) also requires DIR to end with the same names, types and sizes as in
  the strace run. The reason of a ✗ lists the families that differ as
  *capture≠strace* (for ptrace, with the calls that differ in brackets).
- **(b) end state**: DIR is snapshotted (path → type, size, content hash)
  after the inputs are made and after the program ran. The trace is replayed
  with ` + "`ioreplay --timing afap --target EMPTY --summary S.json`" + `; DIR's files land
  in the target under their path less the common prefix ` + "`ioreplay --dry-run`" + `
  prints. Passes when every file and directory the program created or changed
  is in the target with the same type and size (the content is the replay's
  pattern), every input the program removed is absent, and the replay failed
  no call the original did not fail (the summary's errors not marked
  expected). A ✗ names the first three files that differ (found, and wanted)
  and the replay's new failures by op and errno.
- **(c) replay trace**: the replay's own trace (` + "`ioreplay --record R.iot`" + `) has
  the input trace's calls and bytes per op: ` + "`iotrace stats --detail --format json`" + `
  of both, row by row — except the rows "X (in MPI-IO)", calls an MPI library
  made inside an MPI-IO call, which a replay makes through that call and not
  one by one (docs/FORMAT.md). A ✗ lists the rows as *trace→replay* and the
  replay's skips.
- **(d) script**: ` + "`iotrace convert --to script -o S.iop TRACE`" + ` succeeds (it verifies
  the script against the trace call by call) and ` + "`iotrace stats --detail --format json --ranks N S.iop`" + `
  (N from the script's header) has the trace's calls and bytes per op. A ✗
  gives convert's error line, or the rows as *trace→script*.

**What (a) leaves out, per mode.** ptrace sees system calls, so every family
is compared. preload sees the calls a program makes into the C library, not
the system calls the library makes for itself; where glibc makes them inside
a function the shim wraps, the shim records them as glibc makes them (stdio's
reads, writes, lseeks and fstats, opendir's openat and fstat, realpath's
readlinks, …: capture/preload/shim/shim.c), and what is left is:

`)
	for _, mode := range modes {
		var fams []string
		for f := range modeExclusions[mode] {
			fams = append(fams, f)
		}
		sort.Strings(fams)
		for _, f := range fams {
			w("- %s: **%s** — %s.\n", mode, f, modeExclusions[mode][f])
		}
	}
	w(`- preload, not excluded (no program here makes them on DIR's files): the
  calls inside glibc's fts_read and fts_children, glob, nftw and ftw, the
  refills of the scanf family, posix_spawn's file actions, fcloseall, and a
  library's loading by dlopen.
`)
	var nc []string
	for call, why := range notCompared {
		nc = append(nc, fmt.Sprintf("`%s` (%s)", call, why))
	}
	sort.Strings(nc)
	w("- both: %s; sync(2), which names no file, is not traced; a `pagein` (a wait for mapped pages read from the device, no call: trace.OpInfo.Wait) is in neither (a) nor (d), where a script's `map` reads the pages.\n", strings.Join(nc, "; "))
	w(`
**Known failures.** Cells that fail are what the corpus is for.
`+"`corpus/expected_test.go`"+` lists every failing cell with the reason seen; the test
fails when a cell fails that is not listed (a regression) and when a listed
cell passes (delete its line), and names exactly the cells that changed.

**Running it.** `+"`go test ./corpus`"+` (part of `+"`go test ./...`"+`; skipped with
-short) runs every case, two at a time; a program that is missing skips its
case with the package to install, except under CI=true, where it fails.
`+"`corpus/run.sh`"+` runs it and rewrites this file; `+"`go test ./corpus -run 'TestCorpus/sqlite3' -v`"+`
runs one case and logs its cells; `+"`-args -keep DIR`"+` keeps every case's inputs, strace
output (and the calls it counted), traces, replays and scripts in DIR/CASE;
`+"`-args -bins DIR`"+` judges the iotrace and ioreplay in DIR (another branch's) instead
of this checkout's. This run took %s on %d processors.

## Cases

The time is the case's, from its strace run to its last oracle.

| case | what it does | time |
|---|---|---:|
`, elapsed.Round(time.Second), runtime.NumCPU())
	for _, r := range results {
		what := r.Case.What
		if r.Case.Note != "" {
			what += ". *Stability:* " + r.Case.Note
		}
		w("| %s | %s | %.1fs |\n", r.Case.Name, esc(what), r.Duration.Seconds())
	}
	w(`
## Results

✓ passes, ✗ fails (with the reason). Events and trace size are the
recording's (all ranks).

| case | mode | (a) capture | (b) end state | (c) replay trace | (d) script | events | trace |
|---|---|---|---|---|---|---:|---:|
`)
	total, passed := 0, 0
	for _, r := range results {
		for _, m := range r.Modes {
			w("| %s | %s |", r.Case.Name, m.Mode)
			for _, o := range oracles {
				c := m.Cells[o]
				total++
				mark := "✗"
				if c.Pass {
					passed++
					mark = "✓"
				}
				if _, ok := flaky[r.Case.Name+"/"+m.Mode+"/"+o]; ok {
					mark += " (flaky)"
				}
				if c.Reason != "" {
					w(" %s %s |", mark, esc(c.Reason))
				} else {
					w(" %s |", mark)
				}
			}
			ev, sz := "–", "–"
			if m.Events > 0 {
				ev = fmt.Sprint(m.Events)
				sz = size(m.TraceBytes)
			}
			w(" %s | %s |\n", ev, sz)
		}
	}
	w("\n%d of %d cells pass.\n", passed, total)
	if len(flaky) > 0 {
		w("\nCells marked (flaky) pass in some runs and fail in others, for a reason the\nharness does not control; the test accepts either verdict:\n\n")
		var keys []string
		for k := range flaky {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			w("- %s: %s\n", k, flaky[k])
		}
	}

	w("\n## Versions\n\nRun on %s", time.Now().UTC().Format("2006-01-02"))
	if rev := gitRev(); rev != "" && *binsDir == "" {
		w(" with iotrace at %s (the last commit outside the corpus)", rev)
	}
	w(", %s, %s.\n\n| package | version |\n|---|---|\n", runtime.Version(), osRelease())
	pkgs := map[string]bool{"strace": true}
	for _, r := range results {
		for _, p := range r.Case.Pkgs {
			pkgs[p] = true
		}
	}
	var names []string
	for p := range pkgs {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		w("| %s | %s |\n", p, pkgVersion(p))
	}
	return os.WriteFile(docPath, []byte(b.String()), 0o644)
}

func esc(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

func pkgVersion(p string) string {
	out, err := exec.Command("dpkg-query", "-W", "-f", "${Version}", p).Output()
	if err != nil || len(out) == 0 {
		return "?"
	}
	return strings.TrimSpace(string(out))
}

// gitRev is the last commit of the code under test: the checkout's last
// commit outside the corpus, its page and CI, with "-dirty" when that code has
// changes not committed.
func gitRev() string {
	paths := []string{"--", ".", ":(exclude)corpus", ":(exclude)docs/CORPUS.md", ":(exclude).ci"}
	cmd := exec.Command("git", append([]string{"log", "-1", "--format=%h"}, paths...)...)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	rev := strings.TrimSpace(string(out))
	cmd = exec.Command("git", append([]string{"status", "--porcelain", "--untracked-files=no"}, paths...)...)
	cmd.Dir = ".."
	if st, err := cmd.Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		rev += "-dirty"
	}
	return rev
}

func osRelease() string {
	data, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return runtime.GOOS
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return runtime.GOOS
}
