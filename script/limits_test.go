package script

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/trace"
)

// TestNestingLimit: whatever nests deeper than MaxNesting — signs,
// parentheses, blocks, interpolations, indexes — is one error naming the
// limit, found before anything deep is built (the lexer runs no further
// than the parser).
func TestNestingLimit(t *testing.T) {
	deep := MaxNesting + 1
	for name, src := range map[string]string{
		"signs":     "let x = " + strings.Repeat("-", 500_000) + "1\n",
		"nots":      "let x = " + strings.Repeat("!", deep) + "true\n",
		"parens":    "let x = " + strings.Repeat("(", 1_000_000) + "1" + strings.Repeat(")", 1_000_000) + "\n",
		"blocks":    strings.Repeat("repeat 1 {\n", deep) + strings.Repeat("}\n", deep),
		"right":     "let x = " + strings.Repeat("2 ^ ", deep) + "1\n",
		"lists":     "let x = " + strings.Repeat("[", deep) + "1" + strings.Repeat("]", deep) + "\n",
		"calls":     "let x = " + strings.Repeat("max(", deep) + "1" + strings.Repeat(")", deep) + "\n",
		"indexes":   "let l = [1]\nlet x = l" + strings.Repeat("[0]", deep) + "\n",
		"interpol":  "let s = \"${" + strings.Repeat("(", deep) + "1" + strings.Repeat(")", deep) + "}\"\n",
		"rightsums": "let x = " + strings.Repeat("1 + (", deep) + "1" + strings.Repeat(")", deep) + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Compile("t.iop", []byte(src))
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("nesting deeper than %d levels", MaxNesting)) ||
				!strings.Contains(err.Error(), "the limit is fixed") || strings.Count(err.Error(), "\n") > 0 {
				t.Fatalf("got %v", err)
			}
		})
	}
	// MaxNesting levels are fine.
	ok := "let x = " + strings.Repeat("(", MaxNesting-1) + "1" + strings.Repeat(")", MaxNesting-1) + "\n"
	if _, err := Compile("t.iop", []byte(ok)); err != nil {
		t.Fatalf("%d parentheses: %v", MaxNesting-1, err)
	}
}

// TestLongChains: a chain of operators of one precedence and an else-if
// chain do not nest. However long, they parse, check, format and run, in
// time linear in their length (a quadratic checker took over a minute for
// 100,000 terms; this test allows a hundredth of that for twice as many).
func TestLongChains(t *testing.T) {
	const n = 200_000
	start := time.Now()
	var b strings.Builder
	b.WriteString("let x = rank")
	for range n {
		b.WriteString(" + 1")
	}
	b.WriteString("\nlet b = rank == -1")
	for i := range n {
		fmt.Fprintf(&b, " || rank == %d", i+7)
	}
	b.WriteString("\nlet s = \"a\"")
	for range 1000 {
		b.WriteString(` + "b"`)
	}
	b.WriteString("\nif rank == -1 {\n    barrier\n}")
	for i := range n {
		fmt.Fprintf(&b, " else if rank == %d {\n    write \"f%d\" size x\n}", i, i)
	}
	b.WriteString(" else {\n    barrier\n}\nif b {\n    write s size 1\n}\n")
	src := b.String()
	f, err := Parse("t.iop", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if out := Format(f); string(out) != src {
		t.Errorf("format changed the script (%d bytes to %d)", len(src), len(out))
	}
	p, err := Check(f)
	if err != nil {
		t.Fatal(err)
	}
	x, err := Expand(p, Config{Ranks: 8})
	if err != nil {
		t.Fatal(err)
	}
	for r, want := range map[uint32][]string{
		3: {"f3"},
		7: {"f7", "a" + strings.Repeat("b", 1000)},
	} {
		src, err := x.Rank(r)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := trace.ReadAll(src)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i := range evs {
			if evs[i].Op == trace.OpWrite {
				got = append(got, x.Path(evs[i].Path))
				if want := int64(r) + n; x.Path(evs[i].Path)[0] == 'f' && evs[i].Size != want {
					t.Errorf("rank %d: size %d, want %d", r, evs[i].Size, want)
				}
			}
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("rank %d: %q", r, got)
		}
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("took %v", d)
	}
}

// TestHandleStateLinear: what the checker knows of each handle is merged
// over blocks and if arms at the cost of what they change, not of every
// handle: many handles and many blocks check at once.
func TestHandleStateLinear(t *testing.T) {
	const n = 20_000
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "open \"f%d\" as h%d\n", i, i)
	}
	for i := range n {
		fmt.Fprintf(&b, "repeat 1 {\n    write h%d size 1\n}\nif rank == 0 {\n    close h%d\n} else if rank == 1 {\n    close h%d\n} else {\n    close h%d\n}\n", i, i, i, i)
	}
	start := time.Now()
	if _, err := Compile("t.iop", []byte(b.String())); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("took %v", d)
	}
}

// TestHandleStateMerge: the checker's knowledge after blocks and if
// chains, as errors show it.
func TestHandleStateMerge(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		// Closed on every path: using it is an error.
		{"open \"f\" as h\nif rank == 0 {\n    close h\n} else if rank == 1 {\n    close h\n} else {\n    close h\n}\nwrite h size 1\n",
			"t.iop:9:7: h is used after it was closed (at 3:5)"},
		// Closed on some paths only: unknown, no error.
		{"open \"f\" as h\nif rank == 0 {\n    close h\n} else if rank == 1 {\n    close h\n}\nwrite h size 1\n", ""},
		{"open \"f\" as h\nif rank == 0 {\n    close h\n}\nwrite h size 1\n", ""},
		// Closed then opened again in a loop: as before it.
		{"open \"f\" as h\nrepeat 2 {\n    close h\n    open \"f\" as h\n}\nclose h\nclose h\n",
			"t.iop:7:7: h is already closed (at 6:1)"},
		// Closed in a loop: unknown after it.
		{"open \"f\" as h\nrepeat 2 {\n    close h\n}\nwrite h size 1\n", ""},
		// exec forgets every handle, inside a branch too.
		{"open \"f\" as h\nclose h\nif rank == 0 {\n    exec \"x\"\n}\nwrite h size 1\n", ""},
		{"open \"f\" as h\nclose h\nif rank == 0 {\n    barrier\n} else {\n    barrier\n}\nwrite h size 1\n",
			"t.iop:8:7: h is used after it was closed (at 2:1)"},
	} {
		_, err := Compile("t.iop", []byte(tc.src))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s\ngot  %q\nwant %q", tc.src, got, tc.want)
		}
	}
}

// TestStringLimit: no string grows past MaxString, however it is made.
func TestStringLimit(t *testing.T) {
	want := fmt.Sprintf("a string holds at most %d bytes", MaxString)
	for name, tc := range map[string]struct {
		src  string
		line string // the error's position
	}{
		"doubling":  {"let s = \"x\"\nrepeat 40 {\n    s = s + s\n}\nwrite s size 1\n", "t.iop:3:11: rank 0: string of "},
		"appending": {"let s = \"\"\nrepeat 100000 {\n    s = s + \"0123456789\"\n}\n", "t.iop:3:11: rank 0: string of "},
		"interp":    {"let s = \"xxxxxxxxxxxxxxxx\"\nrepeat 20 {\n    s = \"$s$s\"\n}\n", "t.iop:3:9: rank 0: string of "},
		"literal":   {"let s = \"" + strings.Repeat("y", MaxString+1) + "\"\n", "t.iop:1:9: string of "},
		"constant":  {"let s = \"" + strings.Repeat("y", MaxString) + "\" + \"z\"\n", "t.iop:1:4107: string of "},
		"list":      {"let l = [" + strings.Repeat("1, ", MaxString/2) + "1]\nwrite \"$l\" size 1\n", "t.iop:2:7: rank 0: string of "},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := Compile("t.iop", []byte(tc.src))
			if err == nil {
				var x *Expansion
				if x, err = Expand(p, Config{Ranks: 1}); err == nil {
					var src trace.Source
					if src, err = x.Rank(0); err == nil {
						_, err = trace.ReadAll(src)
					}
				}
			}
			if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), tc.line) {
				t.Fatalf("got %v", err)
			}
		})
	}
	// MaxString bytes are fine.
	p := mustCompile(t, "let s = \"x\"\nrepeat 11 {\n    s = s + s\n}\nlet t = \"${s}\" + \""+strings.Repeat("z", MaxString-2048)+"\"\nwrite t size 1\n")
	x, err := Expand(p, Config{Ranks: 1})
	if err != nil {
		t.Fatal(err)
	}
	src, _ := x.Rank(0)
	evs, err := trace.ReadAll(src)
	if err != nil || len(x.Path(evs[1].Path)) != MaxString {
		t.Fatalf("%v %d", err, len(evs))
	}
}

// TestIdleLimit: a loop that makes no call ends with an error naming the
// limit, on every path that spins: an empty loop (at the real limit), one
// of assignments, a rank's skipped branch, a time-driven loop that only
// sleeps (at a lower limit, to save time).
func TestIdleLimit(t *testing.T) {
	defer func() { maxIdle = MaxIdleSteps }()
	for name, tc := range map[string]struct{ src, pos string }{
		"empty":  {"repeat 9223372036854775807 {\n}\n", "t.iop:1:1"},
		"let":    {"let x = 0\nrepeat 9223372036854775807 {\n    x = x + 1\n}\n", "t.iop:2:1"},
		"branch": {"repeat 9223372036854775807 as i {\n    if rank == 5 {\n        barrier\n    }\n}\n", "t.iop:1:1"},
		"sleep":  {"repeat for 100000h {\n    sleep 1ns\n}\n", "t.iop:1:1"},
	} {
		t.Run(name, func(t *testing.T) {
			maxIdle = MaxIdleSteps
			if name != "empty" {
				maxIdle = 1_000_000
			}
			p := mustCompile(t, tc.src)
			x, err := Expand(p, Config{Ranks: 2})
			if err != nil {
				t.Fatal(err)
			}
			src, err := x.Rank(0)
			if err == nil {
				_, err = trace.ReadAll(src)
			}
			want := fmt.Sprintf("%s: rank 0: %d statements and loop iterations ran without making a call", tc.pos, maxIdle)
			if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "the limit is fixed") {
				t.Fatalf("got %v", err)
			}
		})
	}
}

// TestNominalClockOverflow: sleeps and calls whose nominal times add up
// past the int64 range are an error at the command, not times that wrap
// to the most negative.
func TestNominalClockOverflow(t *testing.T) {
	for name, tc := range map[string]struct{ src, want string }{
		"sleeps":  {"sleep 9223372036854775807ns\nsleep 9223372036854775807ns\nwrite \"f\" size 1\n", "t.iop:2:1: rank 0: the nominal clock passes 2^63-1 ns"},
		"writes":  {"repeat 5 {\n    write \"f\" size 4611686018427387904\n}\n", "t.iop:2:5: rank 0: the nominal clock passes 2^63-1 ns"},
		"barrier": {"repeat 5 {\n    barrier\n    sleep 2562047h\n}\n", "t.iop:3:5: rank 0: the nominal clock passes 2^63-1 ns"},
	} {
		t.Run(name, func(t *testing.T) {
			x, err := Expand(mustCompile(t, tc.src), Config{Ranks: 2})
			if err != nil {
				t.Fatal(err)
			}
			src, _ := x.Rank(0)
			evs, err := trace.ReadAll(src)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("got %v", err)
			}
			for _, e := range evs {
				if e.Start < 0 {
					t.Fatalf("an event at %d ns", e.Start)
				}
			}
		})
	}
}

// TestModelCountsBytesMoved: a data call's nominal duration counts the
// bytes it moved, not those it asked for: cp asks copy_file_range for
// 2^63−1 bytes and gets what the file holds; a failed call moved none.
func TestModelCountsBytesMoved(t *testing.T) {
	m := DefaultModel()
	lat := int64(m.DataLatency)
	for _, c := range []struct {
		ev   trace.Event
		want int64
	}{
		{trace.Event{Op: trace.OpPwrite, Size: 4096, Ret: 4096}, lat + 4096},
		{trace.Event{Op: trace.OpPread, Size: 1 << 62, Ret: 100}, lat + 100},
		{trace.Event{Op: trace.OpCopyFileRange, Size: math.MaxInt64, Ret: 5000}, lat + 5000},
		{trace.Event{Op: trace.OpRead, Size: 4096, Ret: -5}, lat},
	} {
		if got := m.Dur(&c.ev); got != c.want {
			t.Errorf("%v of %d moving %d: %d ns, want %d", c.ev.Op, c.ev.Size, c.ev.Ret, got, c.want)
		}
	}
}
