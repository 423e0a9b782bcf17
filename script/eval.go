package script

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/iotrace/iotrace/trace"
)

// cexpr is a compiled expression: a closure per type of result. Ints,
// durations, bools (0/1) and groups (their index) evaluate with fi,
// strings with fs. A nil *Interp is fine for constants.
type cexpr struct {
	typ       Type
	pos       Pos
	fi        func(*Interp) (int64, error)
	fs        func(*Interp) (string, error)
	fl        func(*Interp) ([]int64, error) // lists; the slice is the caller's to keep, never to change
	isConst   bool
	ci        int64
	cs        string
	constable bool // every operand is a constant
	// A left-deep run of binary operators evaluates in a loop (chain):
	// link is the run this int-valued expression ends, cat the parts of
	// a run of string +. Both are owned by this expression, which is the
	// operand of at most one other.
	link *ichain
	cat  []strPartC
}

// ichain is a left-deep run of binary operators on ints, durations and
// bools: the first operand, then each operator with its right operand.
type ichain struct {
	first func(*Interp) (int64, error)
	steps []istep
}

type istep struct {
	y     func(*Interp) (int64, error)
	f     func(a, b int64) (int64, error) // nil for && and ||
	logic byte                            // '&' for &&, '|' for ||
}

// extend returns the expression x op y, where step is op with y: x's run
// with one more step, evaluated in one loop however long the run is.
func extend(x cexpr, step istep, t Type, constable bool) cexpr {
	ch := &ichain{first: x.fi, steps: []istep{step}}
	if x.link != nil {
		ch = &ichain{first: x.link.first, steps: append(x.link.steps, step)}
	}
	first, steps := ch.first, ch.steps
	return cexpr{typ: t, constable: constable, link: ch, fi: func(it *Interp) (int64, error) {
		v, err := first(it)
		if err != nil {
			return 0, err
		}
		for i := range steps {
			s := &steps[i]
			switch {
			case s.logic == '&' && v == 0, s.logic == '|' && v != 0:
				continue
			case s.logic != 0:
				v, err = s.y(it)
			default:
				var y int64
				if y, err = s.y(it); err == nil {
					v, err = s.f(v, y)
				}
			}
			if err != nil {
				return 0, err
			}
		}
		return v, nil
	}}
}

// evalError is an error of evaluation at a position of the script.
type evalError struct {
	pos Pos
	msg string
}

func (e *evalError) Error() string { return e.msg }

func errMsg(err error) string {
	if e, ok := err.(*evalError); ok {
		return e.msg
	}
	return err.Error()
}

func evalErr(pos Pos, msg string) error { return &evalError{pos: pos, msg: msg} }

func constInt(t Type, v int64) cexpr {
	return cexpr{typ: t, isConst: true, ci: v, fi: func(*Interp) (int64, error) { return v, nil }}
}

func constStr(s string) cexpr {
	return cexpr{typ: TString, isConst: true, cs: s, fs: func(*Interp) (string, error) { return s, nil }}
}

func builtinExpr(which int) cexpr {
	var f func(*Interp) (int64, error)
	switch which {
	case bRank:
		f = func(it *Interp) (int64, error) { return it.rank, nil }
	case bNranks:
		f = func(it *Interp) (int64, error) { return it.nranks, nil }
	case bGrank:
		f = func(it *Interp) (int64, error) { return it.grank, nil }
	default:
		f = func(it *Interp) (int64, error) { return it.gsize, nil }
	}
	return cexpr{typ: TInt, fi: f}
}

func slotExpr(t Type, slot int) cexpr {
	if t == TList {
		return cexpr{typ: t, fl: func(it *Interp) ([]int64, error) { return it.slots[slot].l, nil }}
	}
	if t == TString {
		return cexpr{typ: t, fs: func(it *Interp) (string, error) { return it.slots[slot].s, nil }}
	}
	return cexpr{typ: t, fi: func(it *Interp) (int64, error) { return it.slots[slot].i, nil }}
}

type strPartC struct {
	lit string
	x   *cexpr
}

func formatValue(it *Interp, t Type, v int64) string {
	switch t {
	case TDuration:
		return FormatDuration(v)
	case TBool:
		if v != 0 {
			return "true"
		}
		return "false"
	case TGroup:
		if it != nil && int(v) < len(it.inst.groups) {
			return it.inst.groups[v].Name
		}
	}
	return strconv.FormatInt(v, 10)
}

// MaxString bounds the length of a string a script makes, in bytes: every
// string ends as a path or a label of the trace, and no capture records a
// path longer than trace.MaxPath. The limit is fixed.
const MaxString = trace.MaxPath

func errLong(pos Pos, n int) error {
	return evalErr(pos, fmt.Sprintf("string of %d bytes or more: a string holds at most %d bytes (the longest path a trace holds; the limit is fixed)", n, MaxString))
}

// concatExpr joins parts into one string, at most MaxString bytes long
// (pos is where the error points).
func concatExpr(parts []strPartC, pos Pos) cexpr {
	return cexpr{typ: TString, fs: func(it *Interp) (string, error) {
		var b strings.Builder
		for _, p := range parts {
			switch {
			case p.x == nil:
				b.WriteString(p.lit)
			case p.x.typ == TString:
				s, err := p.x.fs(it)
				if err != nil {
					return "", err
				}
				b.WriteString(s)
			case p.x.typ == TList:
				l, err := p.x.fl(it)
				if err != nil {
					return "", err
				}
				if len(l) > MaxString/2 {
					return "", errLong(pos, 2*len(l))
				}
				b.WriteString(formatList(l))
			default:
				v, err := p.x.fi(it)
				if err != nil {
					return "", err
				}
				b.WriteString(formatValue(it, p.x.typ, v))
			}
			if b.Len() > MaxString {
				return "", errLong(pos, b.Len())
			}
		}
		return b.String(), nil
	}}
}

// plusStr is the string x + y: a run of + joins all its operands once.
func plusStr(x, y cexpr, pos Pos) cexpr {
	part := func(e cexpr) strPartC {
		if e.isConst {
			return strPartC{lit: e.cs}
		}
		return strPartC{x: &e}
	}
	parts := x.cat
	if parts == nil {
		parts = []strPartC{part(x)}
	}
	parts = append(parts, part(y))
	c := concatExpr(parts, pos)
	c.cat = parts
	c.constable = x.isConst && y.isConst
	return c
}

func negExpr(x cexpr, pos Pos) cexpr {
	f := x.fi
	return cexpr{typ: x.typ, constable: x.isConst, fi: func(it *Interp) (int64, error) {
		v, err := f(it)
		if err != nil {
			return 0, err
		}
		if v == math.MinInt64 {
			return 0, evalErr(pos, "integer overflow in -")
		}
		return -v, nil
	}}
}

func notExpr(x cexpr) cexpr {
	f := x.fi
	return cexpr{typ: TBool, constable: x.isConst, fi: func(it *Interp) (int64, error) {
		v, err := f(it)
		return 1 - v, err
	}}
}

func logicExpr(op string, x, y cexpr) cexpr {
	return extend(x, istep{y: y.fi, logic: op[0]}, TBool, x.isConst && y.isConst)
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func cmpExpr(op string, x, y cexpr) cexpr {
	k := x.isConst && y.isConst
	if x.typ == TString {
		fx, fy := x.fs, y.fs
		return cexpr{typ: TBool, constable: k, fi: func(it *Interp) (int64, error) {
			a, err := fx(it)
			if err != nil {
				return 0, err
			}
			b, err := fy(it)
			if err != nil {
				return 0, err
			}
			return b2i(compare(op, strings.Compare(a, b))), nil
		}}
	}
	return extend(x, istep{y: y.fi, f: func(a, b int64) (int64, error) {
		c := 0
		if a < b {
			c = -1
		} else if a > b {
			c = 1
		}
		return b2i(compare(op, c)), nil
	}}, TBool, k)
}

func compare(op string, c int) bool {
	switch op {
	case "==":
		return c == 0
	case "!=":
		return c != 0
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	}
	return c >= 0
}

// Checked 64-bit arithmetic: overflow is an error, never a wrap.

func addOv(a, b int64) (int64, bool) {
	c := a + b
	return c, (a^c)&(b^c) < 0
}

func subOv(a, b int64) (int64, bool) {
	c := a - b
	return c, (a^b)&(a^c) < 0
}

func mulOv(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, false
	}
	c := a * b
	if (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) || c/b != a {
		return 0, true
	}
	return c, false
}

func powOv(a, b int64) (int64, bool) {
	r := int64(1)
	for b > 0 {
		if b&1 == 1 {
			var ov bool
			if r, ov = mulOv(r, a); ov {
				return 0, true
			}
		}
		b >>= 1
		if b > 0 {
			var ov bool
			if a, ov = mulOv(a, a); ov {
				return 0, true
			}
		}
	}
	return r, false
}

func arithExpr(op string, t Type, x, y cexpr, pos Pos) cexpr {
	k := x.isConst && y.isConst
	if t == TString {
		return plusStr(x, y, pos)
	}
	var f func(a, b int64) (int64, error)
	overflow := evalErr(pos, "integer overflow in "+op)
	switch op {
	case "+":
		f = func(a, b int64) (int64, error) {
			c, ov := addOv(a, b)
			if ov {
				return 0, overflow
			}
			return c, nil
		}
	case "-":
		f = func(a, b int64) (int64, error) {
			c, ov := subOv(a, b)
			if ov {
				return 0, overflow
			}
			return c, nil
		}
	case "*":
		f = func(a, b int64) (int64, error) {
			c, ov := mulOv(a, b)
			if ov {
				return 0, overflow
			}
			return c, nil
		}
	case "/", "%":
		div := op == "/"
		f = func(a, b int64) (int64, error) {
			if b == 0 {
				return 0, evalErr(pos, "division by zero")
			}
			if b == -1 && a == math.MinInt64 {
				return 0, overflow
			}
			if div {
				return a / b, nil
			}
			return a % b, nil
		}
	case "^":
		f = func(a, b int64) (int64, error) {
			if b < 0 {
				return 0, evalErr(pos, "negative exponent "+strconv.FormatInt(b, 10))
			}
			c, ov := powOv(a, b)
			if ov {
				return 0, overflow
			}
			return c, nil
		}
	case "|":
		f = func(a, b int64) (int64, error) { return a | b, nil }
	}
	return extend(x, istep{y: y.fi, f: f}, t, k)
}

func minMaxExpr(isMax bool, t Type, args []cexpr) cexpr {
	k := true
	fs := make([]func(*Interp) (int64, error), len(args))
	for i, a := range args {
		k = k && a.isConst
		fs[i] = a.fi
	}
	return cexpr{typ: t, constable: k, fi: func(it *Interp) (int64, error) {
		var r int64
		for i, f := range fs {
			v, err := f(it)
			if err != nil {
				return 0, err
			}
			if i == 0 || (isMax && v > r) || (!isMax && v < r) {
				r = v
			}
		}
		return r, nil
	}}
}

func absExpr(x cexpr, pos Pos) cexpr {
	f := x.fi
	return cexpr{typ: x.typ, constable: x.isConst, fi: func(it *Interp) (int64, error) {
		v, err := f(it)
		if err != nil {
			return 0, err
		}
		if v == math.MinInt64 {
			return 0, evalErr(pos, "integer overflow in abs")
		}
		if v < 0 {
			v = -v
		}
		return v, nil
	}}
}

// listExpr makes a new list of its elements (ints) each time it runs.
func listExpr(elems []cexpr) cexpr {
	fs := make([]func(*Interp) (int64, error), len(elems))
	for i, e := range elems {
		fs[i] = e.fi
	}
	return cexpr{typ: TList, fl: func(it *Interp) ([]int64, error) {
		out := make([]int64, len(fs))
		for i, f := range fs {
			v, err := f(it)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}}
}

// checkIndex is the error of an index outside a list of n elements.
func checkIndex(pos Pos, i int64, n int) error {
	if i < 0 || i >= int64(n) {
		if n == 0 {
			return evalErr(pos, fmt.Sprintf("index %d out of range: the list is empty", i))
		}
		return evalErr(pos, fmt.Sprintf("index %d out of range: the list has %d element%s (0 to %d)", i, n, pick(n == 1, "", "s"), n-1))
	}
	return nil
}

func indexExpr(x, i cexpr, pos Pos) cexpr {
	fl, fi := x.fl, i.fi
	return cexpr{typ: TInt, fi: func(it *Interp) (int64, error) {
		l, err := fl(it)
		if err != nil {
			return 0, err
		}
		k, err := fi(it)
		if err != nil {
			return 0, err
		}
		if err := checkIndex(pos, k, len(l)); err != nil {
			return 0, err
		}
		return l[k], nil
	}}
}

func lenExpr(x cexpr) cexpr {
	fl := x.fl
	return cexpr{typ: TInt, fi: func(it *Interp) (int64, error) {
		l, err := fl(it)
		return int64(len(l)), err
	}}
}

// formatList writes a list as a script does: [1, 2, 3].
func formatList(l []int64) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, v := range l {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatInt(v, 10))
	}
	b.WriteByte(']')
	return b.String()
}

// sqrtExpr is the integer square root of a non-negative int, rounded
// down.
func sqrtExpr(x cexpr, pos Pos) cexpr {
	f := x.fi
	return cexpr{typ: TInt, constable: x.isConst, fi: func(it *Interp) (int64, error) {
		v, err := f(it)
		if err != nil {
			return 0, err
		}
		if v < 0 {
			return 0, evalErr(pos, fmt.Sprintf("sqrt of a negative number (%d)", v))
		}
		r := min(int64(math.Sqrt(float64(v))), 3037000499)
		for r*r > v {
			r--
		}
		for r < 3037000499 && (r+1)*(r+1) <= v { // 3037000499² is the largest square in an int64
			r++
		}
		return r, nil
	}}
}

// xorExpr is the bitwise exclusive or of two ints: the partner of a
// pairwise exchange in step i is xor(rank, i).
func xorExpr(a, b cexpr) cexpr {
	fa, fb := a.fi, b.fi
	return cexpr{typ: TInt, constable: a.isConst && b.isConst, fi: func(it *Interp) (int64, error) {
		x, err := fa(it)
		if err != nil {
			return 0, err
		}
		y, err := fb(it)
		if err != nil {
			return 0, err
		}
		return x ^ y, nil
	}}
}

func padExpr(n, w cexpr, pos Pos) cexpr {
	fn, fw := n.fi, w.fi
	return cexpr{typ: TString, constable: n.isConst && w.isConst, fs: func(it *Interp) (string, error) {
		v, err := fn(it)
		if err != nil {
			return "", err
		}
		width, err := fw(it)
		if err != nil {
			return "", err
		}
		if width < 0 || width > 64 {
			return "", evalErr(pos, "pad width must be 0 to 64, got "+strconv.FormatInt(width, 10))
		}
		s := strconv.FormatInt(v, 10)
		neg := strings.HasPrefix(s, "-")
		s = strings.TrimPrefix(s, "-")
		if int64(len(s)) < width-b2i(neg) {
			s = strings.Repeat("0", int(width-b2i(neg))-len(s)) + s
		}
		if neg {
			s = "-" + s
		}
		return s, nil
	}}
}

func groupFnExpr(size bool, g cexpr) cexpr {
	f := g.fi
	return cexpr{typ: TInt, fi: func(it *Interp) (int64, error) {
		v, err := f(it)
		if err != nil {
			return 0, err
		}
		gr := it.inst.groups[v]
		if size {
			return int64(gr.Size), nil
		}
		return int64(gr.First), nil
	}}
}
