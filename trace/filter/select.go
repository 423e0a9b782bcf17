package filter

import (
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/iotrace/iotrace/trace"
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
	return fmt.Errorf("%q is no call, family or class of calls (calls such as pwrite or MPI_File_write_at_all; families %s; classes %s)",
		n, strings.Join(fams, ", "), strings.Join(classNames, ", "))
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
// that is set keeps it.
type Selection struct {
	Ranks  []uint32 // sorted; nil: every rank
	Ops    *Ops     // nil: every op
	Paths  *Paths   // nil: every event; otherwise the events with a chosen path or second path
	Window Window
}

// KeepRank reports whether the selection keeps rank r.
func (s *Selection) KeepRank(r uint32) bool {
	if s.Ranks == nil {
		return true
	}
	_, ok := slices.BinarySearch(s.Ranks, r)
	return ok
}

// Keep reports whether the selection keeps e; path resolves its path ids.
func (s *Selection) Keep(e *trace.Event, path func(trace.PathID) string) bool {
	if !s.KeepRank(e.Rank) || s.Ops != nil && !s.Ops.Has(e.Op) || !s.Window.Has(e.Start) {
		return false
	}
	if s.Paths == nil {
		return true
	}
	return e.Path != 0 && s.Paths.Match(path(e.Path)) || e.Path2 != 0 && s.Paths.Match(path(e.Path2))
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

// Flags are the selectors as a command line gives them: --rank (rank
// lists, repeatable), --op (names, repeatable or comma lists), --path
// (path prefixes an event's path must be under, repeatable) and --time
// (a window FROM:TO). AddFlags registers them; Selection checks them.
type Flags struct {
	Ranks, Ops, Paths []string
	Time              string
}

// AddFlags registers the selectors on fs.
func (f *Flags) AddFlags(fs *flag.FlagSet) {
	fs.Var((*listValue)(&f.Ranks), "rank", "only these `ranks`, e.g. 0-3,8 (repeatable)")
	fs.Var((*listValue)(&f.Ops), "op", "only these calls, families or classes, e.g. pwrite, write, mpiio (repeatable, or a comma `list`)")
	fs.Var((*listValue)(&f.Paths), "path", "only calls on paths under this absolute `prefix` (repeatable)")
	fs.StringVar(&f.Time, "time", "", "only calls that start in this `window` from the trace's start, FROM:TO, e.g. 10s:1m")
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
	if len(f.Paths) > 0 {
		if sel.Paths, err = NewPaths(f.Paths, nil, false); err != nil {
			return nil, fmt.Errorf("--path: %w", err)
		}
	}
	if f.Time != "" {
		if sel.Window, err = ParseWindow(f.Time); err != nil {
			return nil, fmt.Errorf("--time: %w", err)
		}
	}
	return sel, nil
}
