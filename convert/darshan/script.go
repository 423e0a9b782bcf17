package darshan

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/access"
)

// honoured lists the counters a script made by Script is built to give
// back exactly, per module: Check compares these. Made when first needed,
// not at every command's start.
var honoured = sync.OnceValue(func() map[string][]string {
	return map[string][]string{
		"POSIX": append([]string{"POSIX_OPENS", "POSIX_FILENOS", "POSIX_DUPS", "POSIX_READS", "POSIX_WRITES",
			"POSIX_SEEKS", "POSIX_STATS", "POSIX_FSYNCS", "POSIX_FDSYNCS", "POSIX_RENAME_SOURCES",
			"POSIX_RENAME_TARGETS", "POSIX_MODE", "POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN",
			"POSIX_MAX_BYTE_READ", "POSIX_MAX_BYTE_WRITTEN", "POSIX_CONSEC_READS", "POSIX_CONSEC_WRITES",
			"POSIX_SEQ_READS", "POSIX_SEQ_WRITES", "POSIX_RW_SWITCHES", "POSIX_FILE_NOT_ALIGNED",
			"POSIX_FILE_ALIGNMENT"}, commonNames("POSIX", true)...),
		"MPI-IO": append([]string{"MPIIO_INDEP_OPENS", "MPIIO_COLL_OPENS", "MPIIO_INDEP_READS", "MPIIO_INDEP_WRITES",
			"MPIIO_COLL_READS", "MPIIO_COLL_WRITES", "MPIIO_SPLIT_READS", "MPIIO_SPLIT_WRITES", "MPIIO_NB_READS",
			"MPIIO_NB_WRITES", "MPIIO_SYNCS", "MPIIO_VIEWS", "MPIIO_MODE", "MPIIO_BYTES_READ",
			"MPIIO_BYTES_WRITTEN", "MPIIO_RW_SWITCHES"}, commonNames("MPIIO", false)...),
		"STDIO": {"STDIO_OPENS", "STDIO_READS", "STDIO_WRITES", "STDIO_SEEKS", "STDIO_FLUSHES",
			"STDIO_BYTES_READ", "STDIO_BYTES_WRITTEN", "STDIO_MAX_BYTE_READ", "STDIO_MAX_BYTE_WRITTEN"},
	}
})

func commonNames(p string, strides bool) []string {
	var out []string
	agg := ""
	if p == "MPIIO" {
		agg = "AGG_"
	}
	for _, b := range access.BucketNames {
		out = append(out, p+"_SIZE_READ_"+agg+b, p+"_SIZE_WRITE_"+agg+b)
	}
	for i := 1; i <= 4; i++ {
		out = append(out, fmt.Sprintf("%s_ACCESS%d_ACCESS", p, i), fmt.Sprintf("%s_ACCESS%d_COUNT", p, i))
		if strides {
			out = append(out, fmt.Sprintf("%s_STRIDE%d_STRIDE", p, i), fmt.Sprintf("%s_STRIDE%d_COUNT", p, i))
		}
	}
	return out
}

// Approximated are what a script made by Script does not give back
// exactly, and why.
var Approximated = []string{
	"*_F_*_START/END_TIMESTAMP: every file's opens, reads, writes and closes are placed (with sleep) at the log's first and last times, spread between them; calls take the nominal durations of script expansion (docs/SCRIPT.md), so cumulative times (*_F_READ/WRITE/META_TIME, *_F_MAX_*_TIME, *_MAX_*_TIME_SIZE) and the fastest and slowest ranks (*_FASTEST/SLOWEST_RANK*, *_F_VARIANCE_*) are the model's, not the log's; a replay measures its own",
	"POSIX_MEM_NOT_ALIGNED, POSIX_MEM_ALIGNMENT: buffer addresses are the replay's",
	"POSIX_MMAPS: Darshan did not monitor them (-1)",
	"POSIX_RENAMED_FROM, MPIIO_HINTS: not made; STDIO_FDOPENS: made as fopen",
}

// Mismatch is a counter of a record the expansion does not give back.
type Mismatch struct {
	Module, File string
	Rank         int
	Counter      string
	Log, Script  int64
}

func (m Mismatch) String() string {
	return fmt.Sprintf("%s %s (rank %d): log %d, script %d", m.Counter, m.File, m.Rank, m.Log, m.Script)
}

// Result is a script made from a log and what it honours.
type Result struct {
	Script   []byte
	Ranks    int
	Off      []Mismatch // honoured counters the expansion does not give back
	Notes    []string   // what the plan could not express
	Skipped  []string   // records not in the script: modules it does not make
	Counters int        // counters compared
	// Unchecked is the number of calls of a script too big to check as
	// it is made (MaxCheck): 0 when it was checked.
	Unchecked int64
}

// MaxCheck is the most calls Script expands to check a script against
// its log; a bigger one is written unchecked (its header says so), and
// Check can be run on it.
const MaxCheck = 20_000_000

// Script makes a pattern script from the log, checks its expansion
// against the log's counters, and writes what it found in its header.
func Script(l *Log, source string) (*Result, error) {
	p := &plan{log: l, fileIx: map[string]int{}, ranks: make([][]item, l.NProcs)}
	mpiFiles := map[string]bool{}
	var skipped []string
	skip := map[string]int{}
	for _, r := range l.Records {
		if r.Module == "MPI-IO" {
			mpiFiles[r.File] = true
		}
	}
	for _, r := range l.Records {
		switch r.Module {
		case "POSIX":
			p.posixRecord(r, mpiFiles[r.File], uint32(r.C("POSIX_MODE")))
		case "MPI-IO":
			p.mpiioRecord(r)
		case "STDIO":
			if strings.HasPrefix(r.File, "<") {
				skip["STDIO "+r.File]++ // the standard streams: the console, not a file to replay
				continue
			}
			p.stdioRecord(r)
		default:
			skip[r.Module]++
		}
	}
	for m, n := range skip {
		skipped = append(skipped, fmt.Sprintf("%s: %d record(s)", m, n))
	}
	slices.Sort(skipped)
	p.sortItems()
	body := p.render()
	res := &Result{Ranks: l.NProcs, Notes: p.notes, Skipped: skipped}
	src := []byte(header(l, source, res) + body)
	if calls := p.calls(); calls > MaxCheck {
		res.Unchecked = calls
	} else {
		off, n, err := Check(l, src)
		if err != nil {
			return nil, fmt.Errorf("%s: the script made from it does not run: %w", l.Name, err)
		}
		res.Off, res.Counters = off, n
	}
	res.Script = []byte(header(l, source, res) + body)
	return res, nil
}

func header(l *Log, source string, res *Result) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, "# "+format+"\n", args...) }
	w("Made by iotrace convert from the Darshan log %s (darshan-parser text, log format %s).", source, l.Version)
	if l.Exe != "" {
		w("The job: %s", l.Exe)
	}
	w("%d processes, run time %gs, job %s. Run it with --ranks %d.", l.NProcs, l.RunTime, l.JobID, l.NProcs)
	w("")
	w("Its expansion with %d ranks gives back, for every POSIX and MPI-IO record of the", l.NProcs)
	w("log (a file and a rank, or rank -1: a file every rank used, reduced as Darshan")
	w("reduces it), these counters exactly, as trace/access counts them:")
	for _, m := range []string{"POSIX", "MPI-IO", "STDIO"} {
		w("  %s: %s", m, wrapNames(honoured()[m]))
	}
	if res.Unchecked > 0 {
		w("(not checked when it was made: its %d calls are more than %d)", res.Unchecked, MaxCheck)
	} else if len(res.Off) == 0 {
		w("(checked when it was made: %d counters, all equal)", res.Counters)
	} else {
		w("but for these, which it could not meet (checked when it was made):")
		for _, m := range res.Off {
			w("  %s", m)
		}
	}
	for _, n := range res.Notes {
		w("  note: %s", n)
	}
	w("")
	w("It approximates:")
	for _, a := range Approximated {
		w("  - %s", a)
	}
	if len(res.Skipped) > 0 {
		w("Not made (modules a script does not make): %s.", strings.Join(res.Skipped, "; "))
	}
	w("")
	w("How: each record's accesses take the sizes its common access sizes, size")
	w("histogram and byte counts allow; per rank, consecutive runs, forward gaps of")
	w("its common strides and jumps back give its sequential and consecutive counts;")
	w("the ranks of a shared file start where its highest byte ends right; POSIX")
	w("calls of a file also used through MPI-IO carry the IN_MPIIO mark (0x80000000),")
	w("so a replay leaves them to its MPI-IO calls. docs/CONVERT.md has the details.")
	b.WriteString("\n")
	fmt.Fprintf(&b, "if nranks != %d {\n    fail \"this workload was recorded with %d processes: run it with --ranks %d\"\n}\n", l.NProcs, l.NProcs, l.NProcs)
	return b.String()
}

func wrapNames(names []string) string {
	short := make([]string, len(names))
	for i, n := range names {
		short[i] = strings.TrimPrefix(strings.TrimPrefix(n, "POSIX_"), "MPIIO_")
	}
	var b strings.Builder
	line := 0
	for i, s := range short {
		if i > 0 {
			b.WriteString(", ")
			line += 2
		}
		if line > 60 {
			b.WriteString("\n#    ")
			line = 0
		}
		b.WriteString(s)
		line += len(s)
	}
	return b.String()
}

// Counters expands a script made from l with the log's number of ranks
// and returns the records of its expansion, reduced as Darshan reduces
// them.
func Counters(l *Log, src []byte) ([]*access.Posix, []*access.MPIIO, error) {
	p, m, _, err := CountersAll(l, src)
	return p, m, err
}

// CountersAll is Counters with the STDIO records.
func CountersAll(l *Log, src []byte) ([]*access.Posix, []*access.MPIIO, []*access.Stdio, error) {
	prog, err := script.Compile("darshan.iop", src)
	if err != nil {
		return nil, nil, nil, err
	}
	exp, err := script.Expand(prog, script.Config{Ranks: l.NProcs})
	if err != nil {
		return nil, nil, nil, err
	}
	align := map[string]int64{}
	for _, r := range l.Records {
		if r.Module == "POSIX" {
			align[r.File] = r.C("POSIX_FILE_ALIGNMENT")
		}
	}
	ps, ms, ss, err := access.FromTraceAll(exp, access.Options{Alignment: func(f string) int64 { return align[f] }})
	if err != nil {
		return nil, nil, nil, err
	}
	return access.Reduce(ps, l.NProcs), access.ReduceMPIIO(ms, l.NProcs), access.ReduceStdio(ss, l.NProcs), nil
}

// Check expands src and compares the honoured counters of its records
// with the log's, counter by counter. It returns the counters that
// differ and how many it compared.
func Check(l *Log, src []byte) ([]Mismatch, int, error) {
	ps, ms, ss, err := CountersAll(l, src)
	if err != nil {
		return nil, 0, err
	}
	type key struct {
		file string
		rank int
	}
	got := map[string]map[key]map[string]int64{"POSIX": {}, "MPI-IO": {}, "STDIO": {}}
	for _, r := range ss {
		got["STDIO"][key{r.File, r.Rank}] = r.Counters()
	}
	for _, r := range ps {
		got["POSIX"][key{r.File, r.Rank}] = r.Counters()
	}
	for _, r := range ms {
		got["MPI-IO"][key{r.File, r.Rank}] = r.Counters()
	}
	var off []Mismatch
	n := 0
	for _, r := range l.Records {
		names := honoured()[r.Module]
		if names == nil || (r.Module == "STDIO" && strings.HasPrefix(r.File, "<")) {
			continue
		}
		c := got[r.Module][key{r.File, r.Rank}]
		for _, name := range names {
			want, ok := r.Counters[name]
			if !ok {
				continue
			}
			n++
			if v := c[name]; v != want {
				off = append(off, Mismatch{r.Module, r.File, r.Rank, name, want, v})
			}
		}
	}
	sort.SliceStable(off, func(i, j int) bool { return off[i].File < off[j].File })
	return off, n, nil
}

// secondsClose reports whether two times agree within tol seconds.
func secondsClose(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

var _ = trace.OpOpen
