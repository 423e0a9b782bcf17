package script

import (
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// TestSyntaxErrors holds one case per error the lexer and parser report,
// with the exact "file:line:col: message".
func TestSyntaxErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"let x = 1 @ 2", `t.iop:1:11: unexpected character '@'`},
		{"let x = a & b", `t.iop:1:11: unexpected '&' (the logical and is &&)`},
		{"open \"f\" as f call 3", `t.iop:1:20: expected a name after 'call', found 3`},
		{"let x = $y", `t.iop:1:9: unexpected '$': names are written without '$' outside strings`},
		{"let s = \"abc\nbarrier", `t.iop:1:9: string not terminated (a string ends on the line it starts)`},
		{`let s = "a\qb"`, `t.iop:1:11: unknown escape '\q' in string (use \\, \", \$, \n or \t)`},
		{`let s = "cost: $5"`, `t.iop:1:16: '$' must be followed by a name or '{' (write \$ for a dollar sign)`},
		{`let s = "${rank"`, `t.iop:1:10: '${' without a closing '}' (strings cannot nest inside ${…})`},
		{`let s = "${}"`, `t.iop:1:10: empty interpolation '${}'`},
		{`let s = "${rank +}"`, `t.iop:1:18: expected an expression, found end of file`},
		{"let x = 4Kb", `t.iop:1:10: unit "Kb" is ambiguous: write KiB (1024 bytes) or kB (1000 bytes)`},
		{"let x = 4KB", `t.iop:1:10: unit "KB" is ambiguous: write KiB (1024 bytes) or kB (1000 bytes)`},
		{"let x = 4mb", `t.iop:1:10: unknown unit "mb" after 4 (sizes B, kB, MB, GB, TB, KiB, MiB, GiB, TiB; durations ns, us, ms, s, m, h)`},
		{"let x = 0644", `t.iop:1:9: number 0644 has a leading zero: write 0o644 for octal or 644 for decimal`},
		{"let x = 1.5", `t.iop:1:9: fractional number 1.5 needs a unit (plain numbers are integers)`},
		{"let x = 1.0000000001s", `t.iop:1:9: 1.0000000001s is not a whole number of nanoseconds`},
		{"let x = 0.3B", `t.iop:1:9: 0.3B is not a whole number of bytes`},
		{"let x = 99999999999999999999", `t.iop:1:9: number 99999999999999999999 does not fit in 64 bits`},
		{"let x = 0x1KiB", `t.iop:1:12: unexpected 'K' in number 0x1 (a unit cannot follow a hex, octal or binary number)`},
		{"let x = 0b102", `t.iop:1:9: invalid digit '2' in number 0b102`},
		{"let x = 1__000", `t.iop:1:9: misplaced '_' in number 1__000 (use it between digits: 1_000_000)`},
		{"repeat 10 write \"f\" size 1", `t.iop:1:11: expected '{' after repeat count, found 'write'`},
		{"repeat 10\n{\n}", `t.iop:1:10: expected '{' after repeat count, found end of line`},
		{"repeat for 10s barrier", `t.iop:1:16: expected '{' after repeat for duration, found 'barrier'`},
		{"repeat 3 as i barrier", `t.iop:1:15: expected '{' after 'as i', found 'barrier'`},
		{"repeat as i {}", `t.iop:1:8: expected a count after repeat, found 'as'`},
		{"let l = [1, 2", `t.iop:1:14: expected ',' between the elements of the list opened at 1:9, found end of file`},
		{"let l = [1,, 2]", `t.iop:1:12: expected an expression, found ','`},
		{"let x = l[1", `t.iop:1:12: expected ']' to close the '[' at 1:10, found end of file`},
		{"l[1] 2", `t.iop:1:6: expected '=' after l[…] (NAME[INDEX] = VALUE), found 2`},
		{"repeat for {}", `t.iop:1:12: expected a duration after repeat for, found '{'`},
		{"repeat 3 as 5 {}", `t.iop:1:13: expected a name after 'as', found 5`},
		{"if {}", `t.iop:1:4: expected a condition after if, found '{'`},
		{"if true barrier", `t.iop:1:9: expected '{' after the if condition, found 'barrier'`},
		{"time {}", `t.iop:1:6: expected a label after time (time "label" { … }), found '{'`},
		{"on {}", `t.iop:1:4: expected a name of a group after 'on', found '{'`},
		{"wrte \"f\" size 1", `t.iop:1:1: unknown command "wrte" (did you mean write?)`},
		{"frobnicate", `t.iop:1:1: unknown command "frobnicate"`},
		{"42", `t.iop:1:1: expected a statement, found 42`},
		{"write size 1", `t.iop:1:7: write needs a path or a file handle: write PATH|HANDLE [at OFFSET] size N [all|shared|ordered]`},
		{"write \"f\" at 0", `t.iop:1:1: write needs 'size': write PATH|HANDLE [at OFFSET] size N [all|shared|ordered]`},
		{"write \"f\" size", `t.iop:1:15: expected the size after 'size', found end of line`},
		{"write \"f\" size 1 size 2", `t.iop:1:18: duplicate 'size' in write`},
		{"write \"f\" at 0 size 1 foo", `t.iop:1:23: unexpected 'foo' in write: expected 'at', 'size', 'all', 'shared' or 'ordered'`},
		{"write \"f\" at 0 size 1 al", `t.iop:1:23: unexpected 'al' in write (did you mean all?): write PATH|HANDLE [at OFFSET] size N [all|shared|ordered]`},
		{"seek h to 0 from middle", `t.iop:1:18: expected 'start', 'current', 'end', 'data' or 'hole' after 'from', found 'middle'`},
		{"barrier 5", `t.iop:1:9: unexpected 5 after barrier (barrier takes no arguments: barrier)`},
		{"open \"f\" as write", `t.iop:1:13: "write" is a command and cannot be used as a name after 'as'`},
		{"let x = (1 + 2", `t.iop:1:15: expected ')' to close the '(' at 1:9, found end of file`},
		{"let x = ()", `t.iop:1:10: expected an expression inside '()', found ')'`},
		{"let x = max(1 2)", `t.iop:1:15: expected ',' between the arguments of max, found 2`},
		{"let x =", `t.iop:1:8: expected an expression, found end of file`},
		{"let x = write", `t.iop:1:9: expected an expression, found 'write'`},
		{"let x", `t.iop:1:6: expected '=' after the variable name (let NAME = VALUE), found end of line`},
		{"let let = 3", `t.iop:1:5: "let" is a keyword and cannot be used as a name after let`},
		{"let x = 1 2", `t.iop:1:11: expected end of statement after let, found 2`},
		{"let x = a < b < c", `t.iop:1:15: comparisons do not chain: write (a < b) && (b < c)`},
		{"if rank == 0 {", `t.iop:1:15: expected '}' to close the block opened at 1:14, found end of file`},
		{"barrier\n}", `t.iop:2:1: unexpected '}' (no block is open)`},
		{"repeat 2 {\n    param p = 1\n}", `t.iop:2:5: param must be at the top level of the script, not inside a block`},
		{"barrier\ngroup g = 2", `t.iop:2:1: group must come before the first statement (declare params and groups at the start of the script)`},
		{"param p 1", `t.iop:1:9: expected '=' after the param name (param NAME = DEFAULT), found 1`},
		{"else {}", `t.iop:1:1: else without if (else goes on the line of the if block's closing '}')`},
		{"let s = \"a\x01\"", `t.iop:1:11: control character 0x01 in string (write \n or \t)`},
		{"let x = 1 # \xff", `t.iop:1:11: comment is not valid UTF-8`},
	} {
		_, err := Parse("t.iop", []byte(tc.src))
		if err == nil {
			t.Errorf("%q: no error, want %s", tc.src, tc.want)
			continue
		}
		if got := err.Error(); got != tc.want {
			t.Errorf("%q:\n got %s\nwant %s", tc.src, got, tc.want)
		}
	}
}

// TestCheckErrors holds one case per error of the semantic checks.
func TestCheckErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"let x = y + 1", `t.iop:1:9: undefined: y`},
		{"let x = O_CREATE", `t.iop:1:9: undefined: O_CREATE (did you mean O_CREAT?)`},
		{"let x = 1\nlet x = 2", `t.iop:2:5: x is already declared (at 1:5); pick another name`},
		{"let x = 1\nrepeat 2 as x {}", `t.iop:2:13: x is already declared (at 1:5); pick another name`},
		{"let rank = 3", `t.iop:1:5: rank is predeclared and cannot be declared again`},
		{"n = 3", `t.iop:1:1: undefined: n (declare it with let n = …)`},
		{"repeat 3 as i { i = 2 }", `t.iop:1:17: cannot assign to i: it is a loop variable (only let variables can change)`},
		{"param p = 1\np = 2", `t.iop:2:1: cannot assign to p: it is a param (only let variables can change)`},
		{"let n = 5\nn = \"a\"", `t.iop:2:5: the value assigned to n must be an int, got a string`},
		{"let x = 1 + 2s", `t.iop:1:11: operator + needs two ints, two durations or two strings, got an int and a duration (give both a unit: 10s + 500ms)`},
		{"let x = \"a\" * 2", `t.iop:1:13: operator * needs ints, or a duration and an int, got a string and an int`},
		{"let x = 1 | true", `t.iop:1:11: operator | needs two ints, got an int and a bool`},
		{"let l = [1, 2s]", `t.iop:1:13: a list element must be an int, got a duration (divide by a unit to count them: d / 1ms)`},
		{"let x = 5[0]", `t.iop:1:10: only lists can be indexed, got an int`},
		{"let l = [1]\nlet x = l[\"a\"]", `t.iop:2:11: a list index must be an int, got a string`},
		{"let l = [1]\nlet b = l == l", `t.iop:2:11: lists cannot be compared; compare their elements`},
		{"let l = [1]\nlet x = l + 1", `t.iop:2:11: operator + needs two ints, two durations or two strings, got a list and an int`},
		{"let n = 1\nn[0] = 2", `t.iop:2:3: n is an int, not a list: only list elements are assigned with [ ]`},
		{"let l = [1]\nl[0] = 2s", `t.iop:2:8: an element of l must be an int, got a duration (divide by a unit to count them: d / 1ms)`},
		{"param p = [1]\np[0] = 2", `t.iop:2:1: cannot assign to p: it is a param (only let variables can change)`},
		{"fail 3", `t.iop:1:6: fail needs a message, got an int`},
		{"let x = len(3)", `t.iop:1:13: the argument of len must be a list, got an int`},
		{"write \"f\" size [1]", `t.iop:1:16: the size of write must be an int, got a list`},
		{"let x = true | false", `t.iop:1:14: operator | needs two ints, got a bool and a bool (the logical or is ||)`},
		{"let x = 1 && true", `t.iop:1:11: operator && needs two bools, got an int and a bool`},
		{"let x = -\"a\"", `t.iop:1:9: operator - needs an int or a duration, got a string`},
		{"let x = !1", `t.iop:1:9: operator ! needs a bool, got an int`},
		{"let x = 1 < 1s", `t.iop:1:11: operator < needs two ints, two durations or two strings, got an int and a duration`},
		{"if rank { barrier }", `t.iop:1:4: an if condition must be a bool, got an int (compare it: x != 0)`},
		{"write \"f\" size 10s", `t.iop:1:16: the size of write must be an int, got a duration (divide by a unit to count them: d / 1ms)`},
		{"write 3 size 1", `t.iop:1:7: write needs a path or a file handle, got an int`},
		{"rename \"a\" to 3", `t.iop:1:15: the new path of rename must be a string, got an int`},
		{"repeat for 10 { sleep 1s }", `t.iop:1:12: the duration of repeat for must be a duration, got an int (write a unit: 10s, 500ms, 20us)`},
		{"repeat 1s {}", `t.iop:1:8: a repeat count must be an int, got a duration (divide by a unit to count them: d / 1ms)`},
		{"repeat -1 {}", `t.iop:1:8: repeat count must not be negative, got -1`},
		{"sleep 5", `t.iop:1:7: sleep needs a duration, got an int`},
		{"time 3 {}", `t.iop:1:6: a time label must be a string, got an int`},
		{"on foo { barrier }", `t.iop:1:4: undefined group foo (declare it at the top: group foo = SIZE)`},
		{"let foo = 1\non foo {}", `t.iop:2:4: foo is not a group, it is a variable`},
		{"group a = 1\ngroup b = 1\non a { on b { barrier } }", `t.iop:3:8: on b inside on a never runs: groups are disjoint`},
		{"group g = -1", `t.iop:1:11: group size must not be negative, got -1`},
		{"group g = 1s", `t.iop:1:11: a group size must be an int, got a duration (divide by a unit to count them: d / 1ms)`},
		{"group g = rank", `t.iop:1:11: a group size cannot use rank: it is the same on every rank`},
		{"param p = rank", `t.iop:1:11: a param default cannot use rank: it is the same on every rank`},
		{"group g\nparam p = size(g)", `t.iop:2:11: a param default cannot use size: groups are sized after params`},
		{"group g\nlet x = g", `t.iop:2:9: a group cannot be stored in a variable`},
		{"write \"f\" size -1", `t.iop:1:16: size must not be negative, got -1`},
		{"write \"f\" at 4 - 5 size 1", `t.iop:1:14: offset must not be negative, got -1`},
		{"bcast -8", `t.iop:1:7: a byte count must not be negative, got -8`},
		{"sleep -1s", `t.iop:1:7: a duration must not be negative, got -1s`},
		{"let x = 1 / 0", `t.iop:1:11: division by zero`},
		{"let x = 2 ^ 64", `t.iop:1:11: integer overflow in ^`},
		{"let x = 2 ^ -1", `t.iop:1:11: negative exponent -1`},
		{"let x = max()", `t.iop:1:9: max needs at least one argument`},
		{"let x = max(1, 1s)", `t.iop:1:16: the arguments of max must be all ints or all durations, got a duration`},
		{"let x = mux(1, 2)", `t.iop:1:9: unknown function mux (did you mean max?)`},
		{"let x = frobnicate(1)", `t.iop:1:9: unknown function frobnicate (functions: abs, first, len, max, min, pad, size, sqrt, xor)`},
		{"let x = pad(1)", `t.iop:1:9: pad takes 2 arguments: pad(n, width)`},
		{"let x = xor(1, 2s)", `t.iop:1:16: the arguments of xor must be an int, got a duration (divide by a unit to count them: d / 1ms)`},
		{"sendrecv 8 to 1", `t.iop:1:1: sendrecv needs 'with PEER', or 'to PEER from PEER': sendrecv N with PEER|to PEER from PEER [tag T] [recvtag T]`},
		{"sendrecv 8", `t.iop:1:1: sendrecv needs 'with PEER', or 'to PEER from PEER': sendrecv N with PEER|to PEER from PEER [tag T] [recvtag T]`},
		{"sendrecv 8 with 1 from 2", `t.iop:1:19: sendrecv names one partner with 'with', or a destination and a source with 'to' and 'from', not both: sendrecv N with PEER|to PEER from PEER [tag T] [recvtag T]`},
		{"sendrecv 8 to 1 from 0 recvtag \"x\"", `t.iop:1:32: the receive tag of sendrecv must be an int, got a string`},
		{"let x = size(3)", `t.iop:1:14: the argument of size must be a group, got an int`},
		{"write \"f\" size 1 all", `t.iop:1:18: 'all' needs an MPI file handle (opened with mpiopen), not a path`},
		{"open \"f\" as h\nwrite h size 1 shared", `t.iop:2:16: 'shared' needs an MPI file handle (opened with mpiopen), not a POSIX file handle`},
		{"open \"f\" as h\nview h", `t.iop:2:6: view needs an MPI file handle, got a file handle (h was opened with open; views need mpiopen)`},
		{"mpiopen \"f\" as h\ndatasync h", `t.iop:2:10: datasync needs a POSIX file handle, got an MPI file handle`},
		{"write h size 1", `t.iop:1:7: undefined: h`},
		{"if true {\n    open \"f\" as h\n}\nclose h", `t.iop:4:7: undefined: h`},
		{"open \"f\" as h\nclose h\nwrite h size 1", `t.iop:3:7: h is used after it was closed (at 2:1)`},
		{"open \"f\" as h\nclose h\nclose h", `t.iop:3:7: h is already closed (at 2:1)`},
		{"open \"f\" as h\nopen \"g\" as h", `t.iop:2:13: h is still open (opened at 1:1); close it before opening it again`},
		{"open \"f\" as h\nclose h\nmpiopen \"g\" as h", `t.iop:3:16: h is a file handle (opened at 1:13); mpiopen needs another name`},
		{"open \"f\" as h\nlet x = h", `t.iop:2:9: h is a file handle, not a value`},
		{"open \"f\" as h\nlet s = \"${h}\"", `t.iop:2:12: h is a file handle, not a value`},
		{"mpiopen \"f\" as h\nwrite h size 1 all shared", `t.iop:2:1: write takes one of 'all', 'shared' and 'ordered' (ordered is the collective shared-pointer call)`},
		{"mpiopen \"f\" as h\nwrite h at 0 size 1 shared", `t.iop:2:9: 'at' does not go with 'shared': the shared file pointer decides the offset`},
		{"mpiopen \"f\" as h\nview h block 10", `t.iop:2:1: view takes 'block' and 'stride' together (or neither, for a contiguous view)`},
		{"mpiopen \"f\" as h\nview h block 10 stride 5", `t.iop:2:17: the stride of a view (5) must be at least its block length (10)`},
		{"mpiopen \"f\" as h\nview h block 0 stride 5", `t.iop:2:8: the block length of a view must be positive`},
		{"let x = 1\nlet y = \"$x\" + x", `t.iop:2:14: operator + needs two ints, two durations or two strings, got a string and an int`},
	} {
		_, err := Compile("t.iop", []byte(tc.src))
		if err == nil {
			t.Errorf("%q: no error, want %s", tc.src, tc.want)
			continue
		}
		el, ok := err.(ErrorList)
		if !ok {
			t.Errorf("%q: error of type %T", tc.src, err)
			continue
		}
		if got := el[0].Error(); got != tc.want {
			t.Errorf("%q:\n got %s\nwant %s", tc.src, got, tc.want)
		}
	}
}

func TestErrorListReportsAll(t *testing.T) {
	_, err := Compile("t.iop", []byte("let a = x\nlet b = y\nlet c = z"))
	el := err.(ErrorList)
	if len(el) != 3 || el.Error() != "t.iop:1:9: undefined: x (and 2 more errors)" {
		t.Errorf("got %d errors: %v", len(el), err)
	}
	if want := "t.iop:1:9: undefined: x\nt.iop:2:9: undefined: y\nt.iop:3:9: undefined: z\n"; el.Lines() != want {
		t.Errorf("Lines:\n%s", el.Lines())
	}
}

// runErr expands src and returns the first error any rank's stream gives.
func runErr(t *testing.T, src string, cfg Config) string {
	t.Helper()
	p := mustCompile(t, src)
	x, err := Expand(p, cfg)
	if err != nil {
		return err.Error()
	}
	for _, r := range x.Ranks() {
		s, err := x.Rank(r)
		if err != nil {
			return err.Error()
		}
		if _, err := trace.ReadAll(s); err != nil {
			return err.Error()
		}
	}
	return ""
}

// TestRunErrors holds the errors only a run finds, and the errors of a
// configuration.
func TestRunErrors(t *testing.T) {
	for _, tc := range []struct {
		src  string
		cfg  Config
		want string
	}{
		{"let x = 1 / (rank - 1)", Config{Ranks: 2}, `t.iop:1:11: rank 1: division by zero`},
		{"write \"f\" size 1 - rank", Config{Ranks: 3}, `t.iop:1:16: rank 2: size must not be negative, got -1`},
		{"repeat rank - 1 {}", Config{Ranks: 1}, `t.iop:1:8: rank 0: a repeat count must not be negative, got -1`},
		{"let x = 2 ^ (62 + rank)", Config{Ranks: 2}, `t.iop:1:11: rank 1: integer overflow in ^`},
		{"send 8 to rank + 1", Config{Ranks: 2}, `t.iop:1:11: rank 1: peer 2 out of range: the run has 2 ranks (0 to 1)`},
		{"group g = 2\non g {\n    bcast 8 root 2\n}", Config{Ranks: 3}, `t.iop:3:18: rank 0: root 2 out of range: group g has 2 ranks (0 to 1)`},
		{"send 8 to 0 tag -1", Config{Ranks: 1}, `t.iop:1:17: rank 0: tag -1 out of range (0 to 2^30)`},
		{"sendrecv 8 with xor(rank, 2)", Config{Ranks: 3}, `t.iop:1:17: rank 1: peer 3 out of range: the run has 3 ranks (0 to 2)`},
		{"let l = [1, 2]\nlet x = l[rank + 1]", Config{Ranks: 2}, `t.iop:2:11: rank 1: index 2 out of range: the list has 2 elements (0 to 1)`},
		{"let l = [7]\nl[rank - 1] = 2", Config{Ranks: 1}, `t.iop:2:3: rank 0: index -1 out of range: the list has 1 element (0 to 0)`},
		{"let q = sqrt(rank - 1)", Config{Ranks: 1}, `t.iop:1:14: rank 0: sqrt of a negative number (-1)`},
		{"if sqrt(nranks) ^ 2 != nranks {\n    fail \"a square number of ranks, please, not $nranks\"\n}", Config{Ranks: 3},
			`t.iop:2:5: rank 0: a square number of ranks, please, not 3`},
		{"let l = []\nlet x = l[0]", Config{Ranks: 1}, `t.iop:2:11: rank 0: index 0 out of range: the list is empty`},
		{"sendrecv 8 with any", Config{Ranks: 2}, `t.iop:1:17: rank 0: peer -1 out of range: the run has 2 ranks (0 to 1)`},
		{"open \"f\" as h\nif rank == 0 {\n    close h\n}\nwrite h size 1", Config{Ranks: 1}, `t.iop:5:7: rank 0: h is not open (closed at 3:5)`},
		{"repeat 2 {\n    open \"f\" as h\n}", Config{Ranks: 1}, `t.iop:2:17: rank 0: h is still open (opened at 2:5); close it before opening it again`},
		{"open \"f\" as h\nseek h to -1", Config{Ranks: 1}, `t.iop:2:11: rank 0: seek of h to a negative or too large offset`},
		{"let p = pad(1, 100 + rank)", Config{Ranks: 1}, `t.iop:1:9: rank 0: pad width must be 0 to 64, got 100`},
		{"if rank == 0 {\n    barrier\n}", Config{Ranks: 2}, `t.iop:2:5: rank 0 waits here in MPI_Barrier on all ranks, but rank 1 ended without calling it`},
		{"if rank == 0 {\n    barrier\n} else {\n    bcast 8\n}", Config{Ranks: 2}, `t.iop:2:5: rank 0 is here in MPI_Barrier on all ranks while rank 1 is at 4:5 in MPI_Bcast with root 0 on all ranks: the ranks' calls do not match`},
		{"bcast 8 root rank", Config{Ranks: 2}, `t.iop:1:1: rank 0 is here in MPI_Bcast with root 0 on all ranks while rank 1 is at 1:1 in MPI_Bcast with root 1 on all ranks: the ranks' calls do not match`},
		{"group g = 2\nif rank == 0 {\n    barrier\n}\non g {\n    barrier\n}\nif rank == 1 {\n    barrier\n}", Config{Ranks: 2},
			`t.iop:6:5: deadlock: rank 1 waits here in MPI_Barrier on group g while rank 0 waits at 3:5 in MPI_Barrier on all ranks`},
		{"repeat for 1s {\n    let x = 1\n}", Config{Ranks: 2}, `t.iop:1:1: time-driven loop: an iteration took no nominal time, so the loop would never end (give it an I/O call, a communication call or a sleep)`},
		{"repeat for rank * 1s {\n    sleep 1ms\n}", Config{Ranks: 2}, `t.iop:1:1: the ranks disagree on the duration of this loop: 0ns on rank 0, 1s on rank 1`},
		{"if rank == 0 {\n    repeat for 1s {\n        sleep 1ms\n    }\n}", Config{Ranks: 2}, `t.iop:2:5: rank 0 waits here in a time-driven loop on all ranks, but rank 1 ended without reaching it`},
		{"barrier", Config{Ranks: 0}, `t.iop: the number of ranks must be 1 to 1048576, got 0`},
		{"param T = 60s", Config{Ranks: 1, Params: map[string]string{"X": "1"}}, `--param X: t.iop has no parameter X (it has T)`},
		{"param T = 60s", Config{Ranks: 1, Params: map[string]string{"T": "10"}}, `--param T=10: want a duration, got an int (write a unit: 10s)`},
		{"param T = 60s", Config{Ranks: 1, Params: map[string]string{"T": "10 s"}}, `--param T=10 s: unexpected 's' after the expression`},
		{"param T = 60s", Config{Ranks: 1, Params: map[string]string{"T": "rank * 1s"}}, `--param T=rank * 1s: a command-line value cannot use rank: it is the same on every rank`},
		{"param n = 4\nparam m = 10 / (n - 4)", Config{Ranks: 1}, `t.iop: param m: division by zero`},
		{"group g = 1", Config{Ranks: 1, Groups: map[string]string{"h": "1"}}, `--group h: t.iop has no group h (it has g)`},
		{"group a = 3\ngroup b = 2", Config{Ranks: 4}, `t.iop: the groups need 5 ranks (a 3, b 2) but the run has 4`},
		{"group a", Config{Ranks: 4, Groups: map[string]string{"a": "5"}}, `t.iop: --group a=5: size 5 out of range (the run has 4 ranks)`},
	} {
		got := runErr(t, tc.src, tc.cfg)
		if got != tc.want {
			t.Errorf("%q:\n got %s\nwant %s", tc.src, got, tc.want)
		}
	}
}

func TestStandaloneTimeless(t *testing.T) {
	in, err := mustCompile(t, "repeat for 1s {\n    let x = 1\n}").Instantiate(Config{Ranks: 1})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := in.Source(0, nil, nil)
	_, err = trace.ReadAll(s)
	if err == nil || !strings.Contains(err.Error(), "t.iop: rank 0: time-driven loop at 1:1: an iteration took no nominal time") {
		t.Errorf("got %v", err)
	}
}
