package filter

import (
	"flag"
	"slices"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

func TestParseRanks(t *testing.T) {
	rs, err := ParseRanks("3,0-2,8,2")
	if err != nil || !slices.Equal(rs, []uint32{0, 1, 2, 3, 8}) {
		t.Fatalf("ParseRanks = %v, %v", rs, err)
	}
	if got := FormatRanks(rs); got != "0-3,8" {
		t.Errorf("FormatRanks = %q, want 0-3,8", got)
	}
	for _, bad := range []string{"", "a", "3-1", "1-", "-2", "0-99999999"} {
		if _, err := ParseRanks(bad); err == nil {
			t.Errorf("ParseRanks(%q): no error", bad)
		}
	}
}

func TestParseOps(t *testing.T) {
	s, err := ParseOps("write", "MPI_FILE_READ_AT,Open", "COMM")
	if err != nil {
		t.Fatal(err)
	}
	for op, want := range map[trace.Op]bool{
		trace.OpWrite: true, trace.OpPwrite: true, trace.OpRead: false, trace.OpMPIFileReadAt: true,
		trace.OpOpenat: true, trace.OpMPIBarrier: true, trace.OpMPIFileWriteAt: false, trace.Op(60000): false,
	} {
		if s.Has(op) != want {
			t.Errorf("Has(%s) = %v, want %v", op, !want, want)
		}
	}
	u, err := ParseOps("unknown")
	if err != nil || !u.Has(trace.Op(60000)) || u.Has(trace.OpWrite) {
		t.Errorf("unknown: %v", err)
	}
	all := AllOps()
	all.Remove(s)
	if all.Has(trace.OpPwrite) || !all.Has(trace.OpRead) {
		t.Error("Remove")
	}
	_, err = ParseOps("wirte")
	if err == nil || !strings.Contains(err.Error(), `"wirte" is no call, family or class`) || !strings.Contains(err.Error(), "write") {
		t.Errorf("error = %v", err)
	}
	if _, err := ParseOps("read,"); err == nil {
		t.Error("an empty name was accepted")
	}
}

func TestWindow(t *testing.T) {
	for s, want := range map[string]Window{"1s:2s": {1e9, 2e9}, "1.5:": {15e8, 0}, ":200ms": {0, 2e8}} {
		if w, err := ParseWindow(s); err != nil || w != want {
			t.Errorf("ParseWindow(%q) = %v, %v; want %v", s, w, err, want)
		}
	}
	for _, bad := range []string{"1s", "2s:1s", "x:", "-1:"} {
		if _, err := ParseWindow(bad); err == nil {
			t.Errorf("ParseWindow(%q): no error", bad)
		}
	}
	w := Window{From: 10, To: 20}
	if w.Has(9) || !w.Has(10) || w.Has(20) || !(Window{}).Has(1<<62) {
		t.Error("Has")
	}
}

func TestSelection(t *testing.T) {
	paths, _ := NewPaths([]string{"/data"}, nil, false)
	ops, _ := ParseOps("write")
	s := Selection{Ranks: []uint32{1, 3}, Ops: ops, Paths: paths, Window: Window{From: 5}}
	name := func(id trace.PathID) string { return []string{"", "/data/x", "/home/y"}[id] }
	for _, c := range []struct {
		e    trace.Event
		want bool
	}{
		{trace.Event{Rank: 1, Op: trace.OpWrite, Path: 1, Start: 5}, true},
		{trace.Event{Rank: 2, Op: trace.OpWrite, Path: 1, Start: 5}, false},
		{trace.Event{Rank: 3, Op: trace.OpRead, Path: 1, Start: 5}, false},
		{trace.Event{Rank: 3, Op: trace.OpWrite, Path: 2, Start: 5}, false},
		{trace.Event{Rank: 3, Op: trace.OpWrite, Path: 1, Start: 4}, false},
	} {
		if got := s.Keeper().Keep(&c.e, name); got != c.want {
			t.Errorf("Keep(%+v) = %v", c.e, got)
		}
	}
	if err := s.CheckRanks("--rank", []uint32{0, 1, 2}); err == nil || err.Error() != "--rank 3: the trace has no rank 3 (its ranks: 0-2)" {
		t.Errorf("CheckRanks: %v", err)
	}
}

// TestSelectionFollowsDescriptors checks that the path selector keeps
// the reads and writes on a descriptor of a chosen file, which name no
// path themselves, and that excludes keep calls that reached no file.
func TestSelectionFollowsDescriptors(t *testing.T) {
	name := func(id trace.PathID) string { return []string{"", "/data/x", "/usr/lib/y", "pipe:[4]"}[id] }
	evs := []trace.Event{
		{Op: trace.OpOpen, Path: 1, Ret: 3},
		{Op: trace.OpOpen, Path: 2, Ret: 4},
		{Op: trace.OpRead, FD: 4, Size: 10, Ret: 10},
		{Op: trace.OpWrite, FD: 3, Size: 10, Ret: 10},
		{Op: trace.OpDup, FD: 4, Ret: 5},
		{Op: trace.OpRead, FD: 5, Size: 10, Ret: 10},
		{Op: trace.OpMPIBarrier},
		{Op: trace.OpFork, Ret: 1},
		{Op: trace.OpWrite, FD: 1, Path: 3, Size: 1, Ret: 1},
	}
	run := func(include, exclude []string) []trace.Op {
		p, err := NewPaths(include, exclude, false)
		if err != nil {
			t.Fatal(err)
		}
		k := (&Selection{Paths: p}).Keeper()
		var kept []trace.Op
		for i := range evs {
			e := evs[i]
			if k.Keep(&e, name) {
				kept = append(kept, e.Op)
			}
		}
		return kept
	}
	if got, want := run([]string{"/data"}, nil), []trace.Op{trace.OpOpen, trace.OpWrite, trace.OpFork}; !slices.Equal(got, want) {
		t.Errorf("--path /data keeps %v, want %v", got, want)
	}
	want := []trace.Op{trace.OpOpen, trace.OpWrite, trace.OpMPIBarrier, trace.OpFork, trace.OpWrite}
	if got := run(nil, []string{"/usr"}); !slices.Equal(got, want) {
		t.Errorf("--exclude /usr keeps %v, want %v", got, want)
	}
}

// TestApply checks the trace a selection makes: its ranks, and streams
// that end as their source does.
func TestApply(t *testing.T) {
	var f Flags
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	f.AddFlags(fs)
	if err := fs.Parse([]string{"--rank-subset", "1", "--skip-ops", "read", "--include", "/data"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Ranks, []string{"1"}) || !slices.Equal(f.SkipOps, []string{"read"}) || !slices.Equal(f.Paths, []string{"/data"}) {
		t.Fatalf("aliases: %+v", f)
	}
	sel, err := f.Selection()
	if err != nil {
		t.Fatal(err)
	}
	m := trace.NewMemTrace()
	p := m.Paths.Intern("/data/f")
	for r := uint32(0); r < 3; r++ {
		m.Add(trace.Event{Rank: r, Op: trace.OpOpen, Path: p, Ret: 3}, trace.Event{Rank: r, Op: trace.OpRead, FD: 3, Ret: 1},
			trace.Event{Rank: r, Op: trace.OpWrite, FD: 3, Ret: 1})
	}
	got := Apply(m, sel)
	if rs := got.Ranks(); !slices.Equal(rs, []uint32{1}) {
		t.Fatalf("ranks %v", rs)
	}
	src, _ := got.Rank(1)
	var ops []trace.Op
	buf := make([]trace.Event, 1)
	for {
		n, err := src.ReadEvents(buf)
		for _, e := range buf[:n] {
			ops = append(ops, e.Op)
		}
		if err != nil {
			break
		}
	}
	if !slices.Equal(ops, []trace.Op{trace.OpOpen, trace.OpWrite}) {
		t.Errorf("rank 1: %v", ops)
	}
	if !(&Selection{}).Empty() || Apply(m, &Selection{}) != trace.Trace(m) {
		t.Error("an empty selection")
	}
}

func TestFlags(t *testing.T) {
	var f Flags
	fs := flag.NewFlagSet("dump", flag.ContinueOnError)
	f.AddFlags(fs)
	if err := fs.Parse([]string{"--rank", "0-1", "--rank", "3", "--op", "write,read", "--path", "/data", "--time", "1s:"}); err != nil {
		t.Fatal(err)
	}
	s, err := f.Selection()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Ranks, []uint32{0, 1, 3}) || !s.Ops.Has(trace.OpPread) || !s.Paths.Match("/data/x") || s.Window.From != 1e9 {
		t.Errorf("selection %+v", s)
	}
	for _, bad := range []Flags{{Ranks: []string{"x"}}, {Ops: []string{"nope"}}, {SkipOps: []string{"nope"}}, {Paths: []string{"rel"}}, {Excludes: []string{"rel"}}, {Time: "5"}} {
		if _, err := bad.Selection(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// FuzzSelectors: whatever a user types for a rank list, an op selector or
// a time window is read or refused with an error, never a panic, and a
// rank list read formats back to itself.
func FuzzSelectors(f *testing.F) {
	for _, s := range []string{"0-3,8", "write,MPI_Bcast", "1s:2m", ":5", "4294967295", "0-16777216", "op#7", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if rs, err := ParseRanks(s); err == nil {
			if again, err := ParseRanks(FormatRanks(rs)); err != nil || !slices.Equal(again, rs) {
				t.Fatalf("%q: %v reads back as %v, %v", s, rs, again, err)
			}
		}
		ParseOps(s)
		if w, err := ParseWindow(s); err == nil && w.To != 0 && w.To <= w.From {
			t.Fatalf("%q: window %+v", s, w)
		}
	})
}
