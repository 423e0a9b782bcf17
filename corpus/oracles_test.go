package corpus

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/iotrace/iotrace/trace"
)

// Oracle (a) leaves these op families out, per mode, because the mode
// cannot see them where strace does; docs/CORPUS.md repeats the list.
var modeExclusions = map[string]map[string]string{
	"ptrace":  {},
	"preload": {},
}

// Not compared in (a) in either mode: close_range names descriptors by
// number, which strace -y does not decorate (strace_test.go).
var notCompared = map[string]string{"close_range": "names a range of descriptor numbers; strace -y shows no files for it"}

// statsReport is the part of `iotrace stats --format json` the oracles
// read (docs/FORMAT.md).
type statsReport struct {
	Ranks  int       `json:"ranks"`
	Events int       `json:"events"`
	Ops    []statsOp `json:"ops"`
}

type statsOp struct {
	Op     string `json:"op"`
	Class  string `json:"class"`
	Count  int64  `json:"count"`
	Bytes  int64  `json:"bytes"`
	Errors int64  `json:"errors"`
}

// stats runs iotrace stats --detail --format json (one row per call).
func stats(b bins, input string, extra ...string) (*statsReport, error) {
	args := append([]string{b.iotrace, "stats", "--detail", "--format", "json"}, extra...)
	res := run("", nil, time.Minute, append(args, input)...)
	if res.code != 0 {
		return nil, fmt.Errorf("%s", res)
	}
	var st statsReport
	if err := json.Unmarshal([]byte(res.stdout), &st); err != nil {
		return nil, fmt.Errorf("reading iotrace stats json: %v", err)
	}
	return &st, nil
}

// rows is the report's rows by name (TOTAL left out).
func (s *statsReport) rows() map[string]famCount {
	m := map[string]famCount{}
	for _, o := range s.Ops {
		if o.Op == "TOTAL" {
			continue
		}
		fc := m[o.Op]
		fc.Count += o.Count
		fc.Bytes += o.Bytes
		m[o.Op] = fc
	}
	return m
}

// callOf is the call of a --detail row: "pwrite (in MPI-IO)" is pwrite.
func callOf(row string) string {
	return strings.TrimSuffix(row, " (in MPI-IO)")
}

// isWait reports whether a row is of an op that is no call but a wait
// between calls (trace.OpInfo.Wait: pagein): strace has no line for it,
// and a script no command.
func isWait(row string) bool {
	op, ok := trace.ParseOp(callOf(row))
	return ok && op.Info().Wait
}

// oracleCapture is oracle (a): the capture's calls and bytes per op
// family equal strace's on the program's files. refOps is strace's count
// per op.
func oracleCapture(c *Case, mode string, st *statsReport, refOps map[string]famCount) cell {
	gotOps := map[string]famCount{}
	for row, fc := range st.rows() {
		call := callOf(row)
		if _, skip := notCompared[call]; skip || isWait(row) {
			continue
		}
		if op, ok := trace.ParseOp(call); ok {
			if cl := op.Info().Class; cl != trace.ClassPOSIX && cl != trace.ClassMeta {
				continue // MPI-IO, communication, markers, processes: strace sees none of them as such
			}
		}
		g := gotOps[call]
		g.Count += fc.Count
		g.Bytes += fc.Bytes
		gotOps[call] = g
	}
	got, ref := families(gotOps), families(refOps)
	fams := map[string]bool{}
	for f := range got {
		fams[f] = true
	}
	for f := range ref {
		fams[f] = true
	}
	var names []string
	for f := range fams {
		names = append(names, f)
	}
	sort.Strings(names)
	var diffs []string
	for _, f := range names {
		if _, ok := modeExclusions[mode][f]; ok {
			continue
		}
		g, w := got[f], ref[f]
		if slack := c.Slack[f]; slack > 0 && g.Count != w.Count && abs(g.Count-w.Count) <= slack {
			w.Count = g.Count // within what two runs of the program differ by
		}
		if slack := c.ByteSlack[f]; slack > 0 && g.Bytes != w.Bytes && abs(g.Bytes-w.Bytes) <= slack {
			w.Bytes = g.Bytes
		}
		var d string
		switch {
		case g.Count != w.Count && g.Bytes != w.Bytes:
			d = fmt.Sprintf("%s %d≠%d (%s≠%s)", f, g.Count, w.Count, size(g.Bytes), size(w.Bytes))
		case g.Count != w.Count:
			d = fmt.Sprintf("%s %d≠%d", f, g.Count, w.Count)
		case g.Bytes != w.Bytes:
			d = fmt.Sprintf("%s bytes %d≠%d", f, g.Bytes, w.Bytes)
		default:
			continue
		}
		if mode == "ptrace" {
			d += opDiffs(f, gotOps, refOps) // ptrace records system calls: the ops say which
		}
		diffs = append(diffs, d)
	}
	if len(diffs) > 0 {
		return cell{Reason: "capture≠strace: " + strings.Join(diffs, ", ")}
	}
	return cell{Pass: true}
}

// opDiffs lists the ops of family fam whose counts differ: " [readlink 0≠7]".
func opDiffs(fam string, got, ref map[string]famCount) string {
	ops := map[string]bool{}
	for _, m := range []map[string]famCount{got, ref} {
		for name := range m {
			if op, ok := trace.ParseOp(name); ok && op.Info().Family == fam {
				ops[name] = true
			}
		}
	}
	var names []string
	for n := range ops {
		names = append(names, n)
	}
	sort.Strings(names)
	var d []string
	for _, n := range names {
		if got[n].Count != ref[n].Count {
			d = append(d, fmt.Sprintf("%s %d≠%d", n, got[n].Count, ref[n].Count))
		}
	}
	if len(d) == 0 || len(names) == 1 {
		return ""
	}
	return " [" + strings.Join(d, ", ") + "]"
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// size writes a byte count short: 512B, 86.5K, 12.3M.
func size(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%dB", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1fK", float64(n)/1024)
	default:
		return fmt.Sprintf("%.1fM", float64(n)/(1<<20))
	}
}

// entry is one name of a snapshot.
type entry struct {
	Type string // "file", "dir", "symlink", "other"
	Size int64  // files only
	Hash string // files: sha256 of the content; symlinks: the target
}

// snapshot maps every path under dir (relative) to its entry.
func snapshot(dir string) (map[string]entry, error) {
	snap := map[string]entry{}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case e.Type().IsRegular():
			fi, err := e.Info()
			if err != nil {
				return err
			}
			h, err := hashFile(p)
			if err != nil {
				return err
			}
			snap[rel] = entry{Type: "file", Size: fi.Size(), Hash: h}
		case e.IsDir():
			snap[rel] = entry{Type: "dir"}
		case e.Type()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			snap[rel] = entry{Type: "symlink", Hash: l}
		default:
			snap[rel] = entry{Type: "other"}
		}
		return nil
	})
	return snap, err
}

func hashFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func entryOf(p string) (entry, bool) {
	fi, err := os.Lstat(p)
	if err != nil {
		return entry{}, false
	}
	switch {
	case fi.Mode().IsRegular():
		return entry{Type: "file", Size: fi.Size()}, true
	case fi.IsDir():
		return entry{Type: "dir"}, true
	case fi.Mode()&fs.ModeSymlink != 0:
		return entry{Type: "symlink"}, true
	}
	return entry{Type: "other"}, true
}

func (e entry) short() string {
	if e.Type == "file" {
		return fmt.Sprintf("%d B", e.Size)
	}
	return e.Type
}

// sameShape compares two end states by names, types and sizes (contents
// differ where a program writes times or random names into its files);
// it returns the first differences, or "".
func sameShape(want, got map[string]entry) string {
	names := map[string]bool{}
	for n := range want {
		names[n] = true
	}
	for n := range got {
		names[n] = true
	}
	var sorted []string
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	var d []string
	for _, n := range sorted {
		w, okw := want[n]
		g, okg := got[n]
		switch {
		case !okg:
			d = append(d, n+" missing")
		case !okw:
			d = append(d, n+" extra")
		case w.Type != g.Type || w.Size != g.Size:
			d = append(d, fmt.Sprintf("%s %s (want %s)", n, g.short(), w.short()))
		}
	}
	if len(d) > 3 {
		d = append(d[:3], fmt.Sprintf("+%d more", len(d)-3))
	}
	return strings.Join(d, "; ")
}

// summary is ioreplay's --summary JSON (docs/REPLAY.md).
type summary struct {
	Events  int `json:"events"`
	Planned int `json:"planned"`
	Errors  []struct {
		Op       string `json:"op"`
		Errno    string `json:"errno"`
		Count    int    `json:"count"`
		Expected bool   `json:"expected"`
		Detail   string `json:"detail"`
	} `json:"errors"`
	Skips []struct {
		Op     string `json:"op"`
		Reason string `json:"reason"`
		Count  int    `json:"count"`
	} `json:"skips"`
	Unmatched int `json:"unmatched"`
}

var prefixRE = regexp.MustCompile(`(?m)^paths \(common prefix (.*)\):$`)

// oracleReplay is oracles (b) and (c): the trace replayed into an empty
// directory leaves the program's end state there (names, types, sizes),
// failing no call the program did not fail; and the replay's own trace
// has the trace's calls and bytes per op.
func oracleReplay(b bins, d *caseDirs, mode, tr string, st *statsReport, before, after map[string]entry) (cell, cell) {
	dry := run("", nil, time.Minute, b.ioreplay, "--dry-run", tr)
	if dry.code != 0 {
		f := cell{Reason: "ioreplay --dry-run: " + dry.String()}
		return f, f
	}
	m := prefixRE.FindStringSubmatch(dry.stdout)
	if m == nil {
		f := cell{Reason: "ioreplay --dry-run printed no common prefix"}
		return f, f
	}
	prefix := m[1]
	target := filepath.Join(d.Root, "replay-"+mode)
	sum := filepath.Join(d.Root, "summary-"+mode+".json")
	rtr := filepath.Join(d.Root, "R-"+mode+".iot")
	res := run("", nil, progTimeout, b.ioreplay, "--timing", "afap", "--quiet", "--target", target,
		"--summary", sum, "--record", rtr, "-o", os.DevNull, tr)
	if res.code != 0 {
		f := cell{Reason: "ioreplay: " + res.String()}
		return f, f
	}
	var s summary
	if data, err := os.ReadFile(sum); err != nil {
		f := cell{Reason: "ioreplay --summary: " + err.Error()}
		return f, f
	} else if err := json.Unmarshal(data, &s); err != nil {
		f := cell{Reason: "ioreplay --summary: " + err.Error()}
		return f, f
	}

	// (b) The end state.
	where := func(rel string) (string, bool) {
		abs := filepath.Join(d.Dir, rel)
		if prefix != "/" && abs != prefix && !strings.HasPrefix(abs, prefix+"/") {
			return "", false
		}
		return filepath.Join(target, strings.TrimPrefix(abs, prefix)), true
	}
	var probs []string
	var names []string
	for rel := range after {
		names = append(names, rel)
	}
	sort.Strings(names)
	for _, rel := range names {
		want := after[rel]
		if old, ok := before[rel]; ok && old == want {
			continue // not changed by the program
		}
		p, ok := where(rel)
		if !ok {
			probs = append(probs, rel+": outside the replay's mapping (prefix "+prefix+")")
			continue
		}
		got, ok := entryOf(p)
		switch {
		case !ok:
			probs = append(probs, fmt.Sprintf("%s missing (want %s)", rel, want.short()))
		case got.Type != want.Type:
			probs = append(probs, fmt.Sprintf("%s is %s (want %s)", rel, got.short(), want.short()))
		case want.Type == "file" && got.Size != want.Size:
			probs = append(probs, fmt.Sprintf("%s %d B (want %d B)", rel, got.Size, want.Size))
		}
	}
	names = names[:0]
	for rel := range before {
		if _, ok := after[rel]; !ok {
			names = append(names, rel)
		}
	}
	sort.Strings(names)
	for _, rel := range names {
		if p, ok := where(rel); ok {
			if _, there := entryOf(p); there {
				probs = append(probs, rel+" still there (the program removed it)")
			}
		}
	}
	var failed []string
	for _, e := range s.Errors {
		if !e.Expected {
			failed = append(failed, fmt.Sprintf("%s %s ×%d", e.Op, e.Errno, e.Count))
		}
	}
	var bparts []string
	if len(probs) > 0 {
		more := ""
		if len(probs) > 3 {
			more = fmt.Sprintf(" (+%d more)", len(probs)-3)
			probs = probs[:3]
		}
		bparts = append(bparts, strings.Join(probs, "; ")+more)
	}
	if len(failed) > 0 {
		bparts = append(bparts, "replay failed "+strings.Join(failed, ", "))
	}
	bc := cell{Pass: len(bparts) == 0, Reason: strings.Join(bparts, "; ")}

	// (c) The replay's own trace.
	rst, err := stats(b, rtr)
	if err != nil {
		return bc, cell{Reason: "stats of the replay's trace: " + err.Error()}
	}
	// Calls an MPI library made inside an MPI-IO call ("X (in MPI-IO)"
	// rows) are replayed by that call, not one by one (docs/FORMAT.md):
	// the replay's trace has the MPI-IO call, not them.
	want := st.rows()
	for row := range want {
		if strings.HasSuffix(row, " (in MPI-IO)") {
			delete(want, row)
		}
	}
	cc := compareRows(want, rst.rows(), true, "trace→replay")
	if !cc.Pass && len(s.Skips) > 0 {
		var sk []string
		for _, x := range s.Skips {
			sk = append(sk, fmt.Sprintf("%s ×%d: %s", x.Op, x.Count, x.Reason))
		}
		cc.Reason += "; skipped " + strings.Join(sk, ", ")
	}
	return bc, cc
}

// compareRows compares two reports row by row: counts, and bytes too when
// withBytes.
func compareRows(want, got map[string]famCount, withBytes bool, label string) cell {
	rows := map[string]bool{}
	for r := range want {
		rows[r] = true
	}
	for r := range got {
		rows[r] = true
	}
	var names []string
	for r := range rows {
		names = append(names, r)
	}
	sort.Strings(names)
	var diffs []string
	for _, r := range names {
		w, g := want[r], got[r]
		switch {
		case w.Count != g.Count:
			diffs = append(diffs, fmt.Sprintf("%s %d→%d", r, w.Count, g.Count))
		case withBytes && w.Bytes != g.Bytes:
			diffs = append(diffs, fmt.Sprintf("%s bytes %d→%d", r, w.Bytes, g.Bytes))
		}
	}
	if len(diffs) == 0 {
		return cell{Pass: true}
	}
	return cell{Reason: label + ": " + strings.Join(diffs, ", ")}
}

var ranksRE = regexp.MustCompile(`--ranks (\d+)`)

// oracleScript is oracle (d): the trace converts to a pattern script
// (convert verifies it call by call), and the script expands to the
// trace's calls and bytes per op.
func oracleScript(b bins, d *caseDirs, mode, tr string, st *statsReport) cell {
	script := filepath.Join(d.Root, "S-"+mode+".iop")
	res := run("", nil, progTimeout, b.iotrace, "convert", "--to", "script", "-o", script, tr)
	if res.code != 0 {
		line := lastLine(res.stderr)
		line = strings.TrimPrefix(line, "iotrace: ")
		line = strings.TrimPrefix(line, tr+": ")
		return cell{Reason: "convert: " + line}
	}
	ranks := "1"
	if f, err := os.Open(script); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() && strings.HasPrefix(sc.Text(), "#") {
			if m := ranksRE.FindStringSubmatch(sc.Text()); m != nil {
				ranks = m[1]
				break
			}
		}
		f.Close()
	}
	sst, err := stats(b, script, "--ranks", ranks)
	if err != nil {
		return cell{Reason: "stats of the script: " + err.Error()}
	}
	want := st.rows()
	for row := range want {
		if isWait(row) {
			delete(want, row) // the script's map reads the pages (docs/SCRIPT.md)
		}
	}
	return compareRows(want, sst.rows(), true, "trace→script")
}
