package filter

import (
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/iotrace/iotrace/internal/suggest"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/state"
)

// ParseRanks reads a rank list: ranks and ranges separated by commas,
// "0-3,8,10-11". The result is sorted, without repeats.
func ParseRanks(s string) ([]uint32, error) {
	var out []uint32
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseUint(strings.TrimSpace(lo), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("rank list %q: bad rank %q (want ranks and ranges such as 0-3,8)", s, part)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(strings.TrimSpace(hi), 10, 32); err != nil || b < a {
				return nil, fmt.Errorf("rank list %q: bad range %q (want FIRST-LAST, FIRST ≤ LAST)", s, part)
			}
			if b-a > 1<<24 {
				return nil, fmt.Errorf("rank list %q: range %q too large", s, part)
			}
		}
		for r := a; r <= b; r++ {
			out = append(out, uint32(r))
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// FormatRanks writes sorted ranks as ParseRanks reads them: "0-3,8".
func FormatRanks(rs []uint32) string {
	var b strings.Builder
	for i := 0; i < len(rs); {
		j := i
		for j+1 < len(rs) && rs[j+1] == rs[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", rs[i], rs[j])
		} else {
			fmt.Fprint(&b, rs[i])
		}
		i = j + 1
	}
	return b.String()
}

// Ops is a set of ops. The zero Ops is empty.
type Ops struct {
	bits [1 << 16 / 64]uint64
}

// classNames are the names of the classes of ops, as Class.String gives
// them.
var classNames = []string{"posix", "meta", "mpiio", "comm", "marker", "process", "unknown"}

// ParseOps reads op names: each argument is a name or a comma list of
// them. A name is a call ("pwrite", "MPI_File_write_at_all", "op#300"), a
// family ("write": write, pwrite, writev…; MPI calls are families of
// their own) or a class (posix, meta, mpiio, comm, marker, process, and
// unknown: ops this build does not know), in any case; it stands for
// every op it names.
func ParseOps(names ...string) (*Ops, error) {
	s := &Ops{}
	for _, list := range names {
		for _, n := range strings.Split(list, ",") {
			n = strings.TrimSpace(n)
			if !s.addName(n) {
				return nil, errUnknownOp(n)
			}
		}
	}
	return s, nil
}

func (s *Ops) addName(n string) bool {
	if n == "" {
		return false
	}
	found := false
	if op, ok := trace.ParseOp(n); ok {
		s.Add(op)
		found = true
	} else if op, ok := trace.ParseOp(strings.ToLower(n)); ok {
		s.Add(op)
		found = true
	}
	for _, op := range trace.Ops() {
		info := op.Info()
		if strings.EqualFold(info.Family, n) || strings.EqualFold(info.Class.String(), n) {
			s.Add(op)
			found = true
		}
	}
	if strings.EqualFold(n, "unknown") {
		for i := range 1 << 16 {
			if !trace.Op(i).Known() {
				s.Add(trace.Op(i))
			}
		}
		found = true
	}
	return found
}

func errUnknownOp(n string) error {
	var fams []string
	for _, op := range trace.Ops() {
		if c := op.Class(); (c == trace.ClassPOSIX || c == trace.ClassMeta) && !slices.Contains(fams, op.Info().Family) {
			fams = append(fams, op.Info().Family)
		}
	}
	slices.Sort(fams)
	names := append(slices.Clone(fams), classNames...)
	for _, op := range trace.Ops() {
		names = append(names, op.Info().Name)
	}
	mean := ""
	if m := suggest.Closest(n, names); m != "" {
		mean = fmt.Sprintf(": did you mean %s?", m)
	}
	return fmt.Errorf("%q is no call, family or class of calls%s (calls such as pwrite or MPI_File_write_at_all; families %s; classes %s)",
		n, mean, strings.Join(fams, ", "), strings.Join(classNames, ", "))
}

// Add puts op in the set.
func (s *Ops) Add(op trace.Op) { s.bits[op/64] |= 1 << (op % 64) }

// Remove takes every op of o out of the set.
func (s *Ops) Remove(o *Ops) {
	for i := range s.bits {
		s.bits[i] &^= o.bits[i]
	}
}

// Has reports whether op is in the set.
func (s *Ops) Has(op trace.Op) bool { return s.bits[op/64]&(1<<(op%64)) != 0 }

// AllOps returns the set of every op.
func AllOps() *Ops {
	s := &Ops{}
	for i := range s.bits {
		s.bits[i] = math.MaxUint64
	}
	return s
}

// Window is a span of time from a trace's epoch: the events that start
// in [From, To). The zero Window holds every event.
type Window struct {
	From, To int64 // ns; To 0: no end
}

// ParseWindow reads FROM:TO, each a duration from the trace's epoch
// ("1.5s", "200ms", "2m") or a number of seconds; either may be left out
// ("10s:", ":1m").
func ParseWindow(s string) (Window, error) {
	from, to, ok := strings.Cut(s, ":")
	if !ok {
		return Window{}, fmt.Errorf("time window %q: want FROM:TO, e.g. 10s:1m, 10s: or :1m", s)
	}
	var w Window
	var err error
	if w.From, err = parseTime(from); err != nil {
		return Window{}, fmt.Errorf("time window %q: %w", s, err)
	}
	if w.To, err = parseTime(to); err != nil {
		return Window{}, fmt.Errorf("time window %q: %w", s, err)
	}
	if w.To != 0 && w.To <= w.From {
		return Window{}, fmt.Errorf("time window %q: the end is not after the start", s)
	}
	return w, nil
}

func parseTime(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 || f > math.MaxInt64/1e9 || math.IsNaN(f) {
			return 0, fmt.Errorf("bad time %q", s)
		}
		return int64(f * 1e9), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("bad time %q (want a duration such as 1.5s or 200ms, or seconds)", s)
	}
	return int64(d), nil
}

// Has reports whether an event that starts at start is in the window.
func (w Window) Has(start int64) bool {
	return start >= w.From && (w.To == 0 || start < w.To)
}

// Selection combines the selectors: an event is kept when every selector
// that is set keeps it. The path selector looks at the file a call
// reached, following the rank's descriptors and MPI file handles
// (trace/state): a read on a descriptor is on the file it was opened on.
type Selection struct {
	Ranks  []uint32 // sorted; nil: every rank
	Ops    *Ops     // nil: every op
	Paths  *Paths   // nil: every event (see Keeper.Keep)
	Window Window
	// Structural, when set, names ops kept whatever Ops and Window say
	// (the path selector still applies): a replay keeps the calls that
	// make and close descriptors, or the calls it keeps would find none.
	Structural func(trace.Op) bool
}

// Empty reports whether the selection keeps every event of every rank.
func (s *Selection) Empty() bool {
	return s == nil || s.Ranks == nil && s.Ops == nil && s.Paths == nil && s.Window == (Window{})
}

// KeepRank reports whether the selection keeps rank r.
func (s *Selection) KeepRank(r uint32) bool {
	if s.Ranks == nil {
		return true
	}
	_, ok := slices.BinarySearch(s.Ranks, r)
	return ok
}

// Keeper applies a selection to the events of one rank, which it must
// see in call order, every one of them (it follows the rank's state).
type Keeper struct {
	sel    *Selection
	follow *state.Follower[struct{}, struct{}]
}

// Keeper returns a Keeper of one rank's stream.
func (s *Selection) Keeper() *Keeper {
	k := &Keeper{sel: s}
	if s.Paths != nil {
		k.follow = state.New[struct{}, struct{}](nil)
	}
	return k
}

// Keep reports whether the selection keeps e, the rank's next event; path
// resolves its path ids. With a path selector, process events (fork,
// exec, exit, inherit) are kept, as the structure of the rank's
// processes; a call is kept when a file it reached (or the second path
// of a rename, a link, a copy) is chosen by the path rules; a call that
// reached no file (communication, markers) is kept unless there are
// include prefixes.
func (k *Keeper) Keep(e *trace.Event, path func(trace.PathID) string) bool {
	s := k.sel
	var st state.Step[struct{}, struct{}]
	if k.follow != nil {
		st = k.follow.Apply(e)
	}
	if !s.KeepRank(e.Rank) {
		return false
	}
	if s.Structural == nil || !s.Structural(e.Op) {
		if s.Ops != nil && !s.Ops.Has(e.Op) || !s.Window.Has(e.Start) {
			return false
		}
	}
	if s.Paths == nil || e.Op.Class() == trace.ClassProcess {
		return true
	}
	p2 := e.Path2
	if st.Desc2 != nil && st.Desc2.Path != 0 {
		p2 = st.Desc2.Path
	}
	if st.Path == 0 && p2 == 0 {
		return !s.Paths.includes
	}
	return st.Path != 0 && s.Paths.chosen(path(st.Path)) || p2 != 0 && s.Paths.chosen(path(p2))
}

// chosen is Match for the files of a selection: a name that is no
// absolute path (a pipe, a socket, "<stdout>") is chosen unless there are
// include prefixes.
func (r *Paths) chosen(name string) bool {
	if !strings.HasPrefix(name, "/") {
		return !r.includes
	}
	return r.Match(name)
}

// CheckRanks fails when the selection names a rank the trace, whose ranks
// are have, does not hold; flag names the option in the error.
func (s *Selection) CheckRanks(flag string, have []uint32) error {
	for _, r := range s.Ranks {
		if _, ok := slices.BinarySearch(have, r); !ok {
			return fmt.Errorf("%s %d: the trace has no rank %d (its ranks: %s)", flag, r, r, FormatRanks(have))
		}
	}
	return nil
}

// Flags are the selectors as a command line gives them, the same in
// every command that reads a trace: --rank (rank lists, repeatable),
// --op and --skip-op (calls, families or classes, repeatable or comma
// lists), --path and --exclude (path prefixes, repeatable) and --time (a
// window FROM:TO). AddFlags registers them; Selection checks them.
type Flags struct {
	Ranks, Ops, SkipOps, Paths, Excludes []string
	Time                                 string
}

// Aliases are other spellings of the selectors that AddFlags registers
// too, for command lines written before they were one vocabulary
// (ioreplay's --rank-subset, --ops and --skip-ops; record's --include):
// a command hides them from its help.
var Aliases = map[string]string{"rank-subset": "rank", "ops": "op", "skip-ops": "skip-op", "include": "path"}

// AddFlags registers the selectors, and their Aliases, on fs.
func (f *Flags) AddFlags(fs *flag.FlagSet) {
	fs.Var((*listValue)(&f.Ranks), "rank", "only these `ranks`, e.g. 0-3,8 (repeatable)")
	fs.Var((*listValue)(&f.Ops), "op", "only these calls, families or classes, e.g. pwrite, write, mpiio (repeatable, or a comma `list`)")
	fs.Var((*listValue)(&f.SkipOps), "skip-op", "leave out these calls, families or classes (repeatable, or a comma `list`)")
	fs.Var((*listValue)(&f.Paths), "path", "only calls on files under this absolute `prefix` (repeatable)")
	fs.Var((*listValue)(&f.Excludes), "exclude", "leave out calls on files under this absolute `prefix` (repeatable; the longest prefix of --path and --exclude decides)")
	fs.StringVar(&f.Time, "time", "", "only calls that start in this `window` from the trace's start, FROM:TO, e.g. 10s:1m")
	for alias, name := range Aliases {
		fl := fs.Lookup(name)
		fs.Var(fl.Value, alias, "same as --"+name)
	}
}

// Empty reports whether the flags select nothing: every event of every
// rank.
func (f *Flags) Empty() bool {
	return len(f.Ranks)+len(f.Ops)+len(f.SkipOps)+len(f.Paths)+len(f.Excludes) == 0 && f.Time == ""
}

// listValue is a repeatable option: each use adds a value.
type listValue []string

func (l *listValue) String() string     { return strings.Join(*l, ",") }
func (l *listValue) Set(s string) error { *l = append(*l, s); return nil }

// Selection checks the flags and returns their selection; an error names
// the flag.
func (f *Flags) Selection() (*Selection, error) {
	sel := &Selection{}
	var err error
	if len(f.Ranks) > 0 {
		if sel.Ranks, err = ParseRanks(strings.Join(f.Ranks, ",")); err != nil {
			return nil, fmt.Errorf("--rank: %w", err)
		}
	}
	if len(f.Ops) > 0 {
		if sel.Ops, err = ParseOps(f.Ops...); err != nil {
			return nil, fmt.Errorf("--op: %w", err)
		}
	}
	if len(f.SkipOps) > 0 {
		skip, err := ParseOps(f.SkipOps...)
		if err != nil {
			return nil, fmt.Errorf("--skip-op: %w", err)
		}
		if sel.Ops == nil {
			sel.Ops = AllOps()
		}
		sel.Ops.Remove(skip)
	}
	if len(f.Paths)+len(f.Excludes) > 0 {
		if sel.Paths, err = NewPaths(f.Paths, f.Excludes, false); err != nil {
			return nil, fmt.Errorf("--path/--exclude: %w", err)
		}
	}
	if f.Time != "" {
		if sel.Window, err = ParseWindow(f.Time); err != nil {
			return nil, fmt.Errorf("--time: %w", err)
		}
	}
	return sel, nil
}
