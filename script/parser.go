package script

import (
	"fmt"
	"strings"
)

// Parse reads a script. name is the file name errors give. A syntax error
// is returned as an ErrorList with one *Error ("file:line:col: message").
func Parse(name string, src []byte) (*File, error) {
	p := &parser{file: name, lx: newLexer(name, string(src), Pos{Line: 1, Col: 1})}
	f, err := p.parseFile()
	if err != nil {
		return nil, ErrorList{err}
	}
	return f, nil
}

// ParseExpr reads one expression; name is what errors call its source
// (a command-line flag, say).
func ParseExpr(name, src string) (Expr, error) {
	p := &parser{file: name, lx: newLexer(name, src, Pos{Line: 1, Col: 1})}
	var e Expr
	err := p.catch(func() {
		e = p.expr()
		p.skipNewlines()
		if p.tok().kind != tEOF {
			p.failf(p.tok().pos, "unexpected %s after the expression", p.tok())
		}
	})
	if err != nil {
		return nil, ErrorList{err}
	}
	return e, nil
}

// parser reads tokens from its lexer as it goes: it holds the tokens of
// a few statements, never those of the whole file.
type parser struct {
	file     string
	lx       *lexer
	ci       int // next comment not yet attached
	lastLine int // line of the last token or comment attached
	stmtSeen bool
	depth    int // blocks and expressions the parser is inside (MaxNesting)
}

// MaxNesting bounds how deep blocks and expressions nest inside one
// another: a block in a block, a parenthesis, a sign, an operand of an
// operator of another precedence, an index, an argument. Every pass over a
// script (checker, formatter, interpreter) recurses this deep at most, so
// no script, however long, overflows a stack. A chain of operators of one
// precedence (a + b + … + z, the || chains of a converted trace) and an
// else-if chain do not nest: they are read, checked, printed and run in a
// loop, whatever their length. The limit is fixed.
const MaxNesting = 1000

// nest enters one more level of nesting at pos; leave with p.depth--.
func (p *parser) nest(pos Pos) {
	p.depth++
	if p.depth > MaxNesting {
		p.failf(pos, "nesting deeper than %d levels (blocks, parentheses, signs and operands inside one another; the limit is fixed)", MaxNesting)
	}
}

// bailout carries the first syntax error up to Parse.
type bailout struct{ err *Error }

func (p *parser) catch(f func()) (err *Error) {
	defer func() {
		if r := recover(); r != nil {
			b, ok := r.(bailout)
			if !ok {
				panic(r)
			}
			err = b.err
		}
	}()
	f()
	return nil
}

func (p *parser) failf(pos Pos, format string, args ...any) {
	panic(bailout{&Error{File: p.file, Pos: pos, Msg: fmt.Sprintf(format, args...)}})
}

func (p *parser) tok() token { return p.peek(0) }

// peek returns the token n after the current one (the end of file token
// past the end). A lexical error ends the parse.
func (p *parser) peek(n int) token {
	t, err := p.lx.peek(n)
	if err != nil {
		panic(bailout{err})
	}
	return t
}

func (p *parser) next() token {
	t := p.tok()
	p.lx.take()
	if t.kind != tNewline && t.kind != tEOF {
		p.lastLine = t.pos.Line
	}
	return t
}

func (p *parser) isOp(text string) bool {
	t := p.tok()
	return t.kind == tOp && t.text == text
}

func (p *parser) isWord(w string) bool {
	t := p.tok()
	return t.kind == tIdent && t.text == w
}

func (p *parser) expectOp(text, context string) token {
	if !p.isOp(text) {
		p.failf(p.tok().pos, "expected '%s' %s, found %s", text, context, p.tok())
	}
	return p.next()
}

func (p *parser) skipNewlines() {
	for p.tok().kind == tNewline {
		p.next()
	}
}

// takeComments returns the comments before offset off not yet attached.
func (p *parser) takeComments(off int) []Comment {
	var cs []Comment
	for p.ci < len(p.lx.comments) && p.lx.comments[p.ci].Pos.Off < off {
		c := p.lx.comments[p.ci]
		c.BlankBefore = p.lastLine > 0 && c.Pos.Line-p.lastLine > 1
		p.lastLine = c.Pos.Line
		cs = append(cs, c)
		p.ci++
	}
	return cs
}

func (p *parser) parseFile() (*File, *Error) {
	f := &File{Name: p.file}
	err := p.catch(func() {
		f.Stmts, f.EndComments = p.stmtList(true, Pos{})
	})
	return f, err
}

// stmtList parses statements up to '}' (left for the caller) or, at the
// top level, the end of the file.
func (p *parser) stmtList(top bool, open Pos) ([]Stmt, []Comment) {
	var stmts []Stmt
	for {
		for p.tok().kind == tNewline || p.tok().kind == tSemi {
			p.next()
		}
		t := p.tok()
		if t.kind == tEOF || (t.kind == tOp && t.text == "}") {
			if t.kind == tEOF && !top {
				p.failf(t.pos, "expected '}' to close the block opened at %s, found end of file", open)
			}
			if t.kind == tOp && top {
				p.failf(t.pos, "unexpected '}' (no block is open)")
			}
			end := p.takeComments(t.pos.Off)
			if len(stmts) == 0 && len(end) > 0 {
				end[0].BlankBefore = false
			}
			return stmts, end
		}
		leading := p.takeComments(t.pos.Off)
		blank := p.lastLine > 0 && t.pos.Line-p.lastLine > 1
		s := p.stmt(top)
		in := s.info()
		in.Pos = t.pos
		in.Leading = leading
		in.BlankBefore = blank
		if len(stmts) == 0 {
			if len(leading) > 0 {
				in.Leading[0].BlankBefore = false
			} else {
				in.BlankBefore = false
			}
		}
		// A comment on the line where the statement ends is its own.
		if p.ci < len(p.lx.comments) {
			c := p.lx.comments[p.ci]
			if c.Pos.Line == p.lastLine && c.Pos.Off < p.tok().end {
				in.Trailing = &c
				p.ci++
			}
		}
		stmts = append(stmts, s)
		switch t := p.tok(); {
		case t.kind == tNewline || t.kind == tSemi || t.kind == tEOF:
			p.next()
		case t.kind == tOp && t.text == "}":
		default:
			p.failf(t.pos, "expected end of statement after %s, found %s", describeStmt(s), t)
		}
	}
}

func describeStmt(s Stmt) string {
	switch s := s.(type) {
	case *CommandStmt:
		return s.Name + " command"
	case *ParamStmt:
		return "param"
	case *GroupStmt:
		return "group"
	case *LetStmt:
		return "let"
	case *AssignStmt:
		return "assignment"
	case *IfStmt:
		return "if block"
	case *RepeatStmt:
		return "repeat block"
	case *OnStmt:
		return "on block"
	case *TimeStmt:
		return "time block"
	}
	return "statement"
}

func (p *parser) block(context string) *Block {
	if !p.isOp("{") {
		p.failf(p.tok().pos, "expected '{' %s, found %s", context, p.tok())
	}
	lb := p.next()
	p.nest(lb.pos)
	b := &Block{Lbrace: lb.pos}
	b.Stmts, b.EndComments = p.stmtList(false, lb.pos)
	rb := p.next() // '}'
	b.Rbrace = rb.pos
	p.depth--
	return b
}

func (p *parser) ident(context string) *Ident {
	t := p.tok()
	if t.kind != tIdent {
		p.failf(t.pos, "expected a name %s, found %s", context, t)
	}
	if reserved(t.text) {
		kind := "a keyword"
		if commands()[t.text] != nil {
			kind = "a command"
		}
		p.failf(t.pos, "%q is %s and cannot be used as a name %s", t.text, kind, context)
	}
	p.next()
	return &Ident{Pos: t.pos, Name: t.text}
}

func (p *parser) stmt(top bool) Stmt {
	t := p.tok()
	if t.kind != tIdent {
		p.failf(t.pos, "expected a statement, found %s", t)
	}
	switch t.text {
	case "param", "group":
		if !top {
			p.failf(t.pos, "%s must be at the top level of the script, not inside a block", t.text)
		}
		if p.stmtSeen {
			p.failf(t.pos, "%s must come before the first statement (declare params and groups at the start of the script)", t.text)
		}
		p.next()
		name := p.ident("after " + t.text)
		if t.text == "param" {
			p.expectOp("=", "after the param name (param NAME = DEFAULT)")
			return &ParamStmt{Name: name, Value: p.expr()}
		}
		g := &GroupStmt{Name: name}
		if p.isOp("=") {
			p.next()
			g.Size = p.expr()
		}
		return g
	}
	if top {
		p.stmtSeen = true
	}
	switch t.text {
	case "let":
		p.next()
		name := p.ident("after let")
		p.expectOp("=", "after the variable name (let NAME = VALUE)")
		return &LetStmt{Name: name, Value: p.expr()}
	case "if":
		return p.ifStmt()
	case "else":
		p.failf(t.pos, "else without if (else goes on the line of the if block's closing '}')")
	case "repeat":
		p.next()
		r := &RepeatStmt{}
		ctx := "after repeat count"
		if p.isWord("for") {
			p.next()
			r.For = true
			ctx = "after repeat for duration"
		}
		if p.isOp("{") || p.isWord("as") {
			what := "a count"
			if r.For {
				what = "a duration"
			}
			p.failf(p.tok().pos, "expected %s after repeat%s, found %s", what, map[bool]string{true: " for"}[r.For], p.tok())
		}
		r.Count = p.expr()
		if p.isWord("as") {
			p.next()
			r.As = p.ident("after 'as'")
			ctx = "after 'as " + r.As.Name + "'"
		}
		r.Body = p.block(ctx)
		return r
	case "on":
		p.next()
		g := p.ident("of a group after 'on'")
		return &OnStmt{Group: g, Body: p.block("after 'on " + g.Name + "'")}
	case "time":
		p.next()
		if p.isOp("{") {
			p.failf(p.tok().pos, `expected a label after time (time "label" { … }), found '{'`)
		}
		label := p.expr()
		return &TimeStmt{Label: label, Body: p.block("after the time label")}
	case "for", "as":
		p.failf(t.pos, "unexpected '%s' at the start of a statement", t.text)
	}
	if p.peek(1).kind == tOp && p.peek(1).text == "=" {
		name := p.ident("to assign to")
		p.next()
		return &AssignStmt{Name: name, Value: p.expr()}
	}
	if p.peek(1).kind == tOp && p.peek(1).text == "[" && commands()[t.text] == nil && !keywords[t.text] {
		// NAME[INDEX] = VALUE
		name := p.ident("to assign to")
		lb := p.next()
		a := &AssignStmt{Name: name, Index: p.expr()}
		p.expectOp("]", "to close the '[' at "+lb.pos.String())
		p.expectOp("=", "after "+name.Name+"[…] (NAME[INDEX] = VALUE)")
		a.Value = p.expr()
		return a
	}
	if spec := commands()[t.text]; spec != nil {
		return p.command(spec)
	}
	if s := suggest(t.text, append(commandNames(), "param", "group", "let", "if", "repeat", "on", "time")); s != "" {
		p.failf(t.pos, "unknown command %q (did you mean %s?)", t.text, s)
	}
	p.failf(t.pos, "unknown command %q", t.text)
	return nil
}

// ifStmt reads an if statement and its else-if chain, in a loop: a chain
// of any length nests no deeper than one if.
func (p *parser) ifStmt() *IfStmt {
	var head, cur *IfStmt
	for {
		pos := p.next().pos // if
		if p.isOp("{") {
			p.failf(p.tok().pos, "expected a condition after if, found '{'")
		}
		s := &IfStmt{Cond: p.expr()}
		s.Then = p.block("after the if condition")
		if cur == nil {
			head = s
		} else {
			s.Pos = pos
			cur.ElseIf = s
		}
		cur = s
		// else may follow on the next line.
		j := 0
		for p.peek(j).kind == tNewline {
			j++
		}
		if t := p.peek(j); t.kind != tIdent || t.text != "else" {
			return head
		}
		for range j {
			p.next()
		}
		p.next() // else
		if !p.isWord("if") {
			s.Else = p.block("after else")
			return head
		}
	}
}

func (p *parser) atStmtEnd() bool {
	t := p.tok()
	return t.kind == tNewline || t.kind == tSemi || t.kind == tEOF || (t.kind == tOp && t.text == "}")
}

func (p *parser) command(spec *cmdSpec) *CommandStmt {
	nt := p.next()
	c := &CommandStmt{Name: spec.name}
	if spec.operand != nil {
		switch {
		case !p.atStmtEnd() && !(p.tok().kind == tIdent && spec.arg(p.tok().text) != nil && p.peek(1).kind != tOp):
			c.Operand = p.expr()
		case !spec.optOperand:
			p.failf(p.tok().pos, "%s needs %s: %s", spec.name, spec.opWhat, spec.synopsis)
		}
	}
	for !p.atStmtEnd() {
		t := p.tok()
		var a *argSpec
		if t.kind == tIdent {
			a = spec.arg(t.text)
		}
		if a == nil {
			if len(spec.keys()) == 0 {
				p.failf(t.pos, "unexpected %s after %s (%s takes no arguments: %s)", t, spec.name, spec.name, spec.synopsis)
			}
			if t.kind == tIdent {
				if s := suggest(t.text, spec.keys()); s != "" {
					p.failf(t.pos, "unexpected %s in %s (did you mean %s?): %s", t, spec.name, s, spec.synopsis)
				}
			}
			p.failf(t.pos, "unexpected %s in %s: expected %s", t, spec.name, orList(spec.keys()))
		}
		if c.Arg(a.key) != nil {
			p.failf(t.pos, "duplicate '%s' in %s", a.key, spec.name)
		}
		p.next()
		arg := &Arg{Pos: t.pos, Key: a.key}
		switch a.kind {
		case argExpr:
			if p.atStmtEnd() {
				p.failf(p.tok().pos, "expected the %s after '%s', found %s", a.what, a.key, p.tok())
			}
			arg.Value = p.expr()
		case argName:
			arg.Name = p.ident("after '" + a.key + "'")
		case argWord:
			w := p.tok()
			ok := w.kind == tIdent
			if ok && len(a.words) > 0 {
				ok = false
				for _, x := range a.words {
					ok = ok || x == w.text
				}
			}
			if !ok {
				want := "a name"
				if len(a.words) > 0 {
					want = orList(a.words)
				}
				p.failf(w.pos, "expected %s after '%s', found %s", want, a.key, w)
			}
			p.next()
			arg.Word = w.text
		}
		c.Args = append(c.Args, arg)
	}
	for _, a := range spec.args {
		if a.required && c.Arg(a.key) == nil {
			p.failf(nt.pos, "%s needs '%s': %s", spec.name, a.key, spec.synopsis)
		}
	}
	// Canonical order: the order of the spec.
	ordered := make([]*Arg, 0, len(c.Args))
	for _, a := range spec.args {
		if x := c.Arg(a.key); x != nil {
			ordered = append(ordered, x)
		}
	}
	c.Args = ordered
	return c
}

func orList(ws []string) string {
	q := make([]string, len(ws))
	for i, w := range ws {
		q[i] = "'" + w + "'"
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// Expressions, from the loosest operator to the tightest:
//
//	||   &&   == != < <= > >=   + - |   * / %   unary - !   ^   primary
const (
	precOr = iota + 1
	precAnd
	precCmp
	precAdd
	precMul
	precUnary
	precPow
	precPrimary
)

func binaryPrec(op string) int {
	switch op {
	case "||":
		return precOr
	case "&&":
		return precAnd
	case "==", "!=", "<", "<=", ">", ">=":
		return precCmp
	case "+", "-", "|":
		return precAdd
	case "*", "/", "%":
		return precMul
	case "^":
		return precPow
	}
	return 0
}

func (p *parser) expr() Expr { return p.binary(precOr) }

func (p *parser) binary(prec int) Expr {
	if prec == precUnary {
		return p.unary()
	}
	x := p.binary(prec + 1)
	for {
		t := p.tok()
		if t.kind != tOp || binaryPrec(t.text) != prec {
			return x
		}
		p.next()
		// The left operands of a chain are read in this loop and walked
		// in loops; the right operand is one level deeper.
		p.nest(t.pos)
		y := p.binary(prec + 1)
		p.depth--
		x = &BinaryExpr{OpPos: t.pos, Op: t.text, X: x, Y: y}
		if prec == precCmp {
			if n := p.tok(); n.kind == tOp && binaryPrec(n.text) == precCmp {
				p.failf(n.pos, "comparisons do not chain: write (a %s b) && (b %s c)", t.text, n.text)
			}
			return x
		}
	}
}

func (p *parser) unary() Expr {
	t := p.tok()
	if t.kind == tOp && (t.text == "-" || t.text == "!") {
		p.next()
		p.nest(t.pos)
		x := p.unary()
		p.depth--
		return &UnaryExpr{Pos: t.pos, Op: t.text, X: x}
	}
	x := p.primary()
	if p.isOp("^") {
		op := p.next()
		// Right-associative, and tighter than unary minus: -2^2 is -(2^2).
		p.nest(op.pos)
		y := p.unary()
		p.depth--
		return &BinaryExpr{OpPos: op.pos, Op: "^", X: x, Y: y}
	}
	return x
}

func (p *parser) primary() Expr {
	x := p.operand()
	d := p.depth
	for p.isOp("[") {
		lb := p.next()
		p.nest(lb.pos) // a[i][j] is (a[i])[j]
		ix := &IndexExpr{X: x, Lbrack: lb.pos, Index: p.inner(lb.pos)}
		p.expectOp("]", "to close the '[' at "+lb.pos.String())
		x = ix
	}
	p.depth = d
	return x
}

// inner reads an expression one level deeper than the one it is in.
func (p *parser) inner(pos Pos) Expr {
	p.nest(pos)
	x := p.expr()
	p.depth--
	return x
}

func (p *parser) operand() Expr {
	t := p.tok()
	switch t.kind {
	case tNumber:
		p.next()
		return &NumLit{Pos: t.pos, Raw: t.text, Value: t.num, Unit: t.unit}
	case tString:
		p.next()
		return p.stringLit(t)
	case tIdent:
		if reserved(t.text) {
			p.failf(t.pos, "expected an expression, found %s", t)
		}
		p.next()
		id := &Ident{Pos: t.pos, Name: t.text}
		if p.isOp("(") {
			p.next()
			call := &CallExpr{Fun: id}
			for !p.isOp(")") {
				if len(call.Args) > 0 {
					p.expectOp(",", "between the arguments of "+id.Name)
				}
				call.Args = append(call.Args, p.inner(p.tok().pos))
			}
			p.next()
			return call
		}
		return id
	case tOp:
		if t.text == "(" {
			p.next()
			if p.isOp(")") {
				p.failf(p.tok().pos, "expected an expression inside '()', found ')'")
			}
			x := p.inner(t.pos)
			p.expectOp(")", "to close the '(' at "+t.pos.String())
			return &ParenExpr{Pos: t.pos, X: x}
		}
		if t.text == "[" {
			p.next()
			l := &ListLit{Lbrack: t.pos}
			for !p.isOp("]") {
				if len(l.Elems) > 0 {
					p.expectOp(",", "between the elements of the list opened at "+t.pos.String())
					if p.isOp("]") {
						break // a trailing comma
					}
				}
				l.Elems = append(l.Elems, p.inner(p.tok().pos))
			}
			p.next()
			return l
		}
	}
	p.failf(t.pos, "expected an expression, found %s", t)
	return nil
}

func (p *parser) stringLit(t token) *StringLit {
	s := &StringLit{Pos: t.pos}
	for _, rp := range t.parts {
		if !rp.isExpr {
			s.Parts = append(s.Parts, StrPart{Lit: rp.lit})
			continue
		}
		if rp.name {
			if reserved(rp.expr) {
				p.failf(rp.pos, "%q is a keyword, not a value to interpolate", rp.expr)
			}
			s.Parts = append(s.Parts, StrPart{Expr: &Ident{Pos: rp.pos, Name: rp.expr}})
			continue
		}
		sub := &parser{file: p.file, lx: newLexer(p.file, rp.expr, rp.pos), depth: p.depth}
		if _, comments, lerr := lex(p.file, rp.expr, rp.pos); lerr != nil {
			panic(bailout{lerr})
		} else if len(comments) > 0 {
			p.failf(comments[0].Pos, "'#' inside ${…}")
		}
		e := sub.inner(rp.pos)
		sub.skipNewlines()
		if sub.tok().kind != tEOF {
			p.failf(sub.tok().pos, "unexpected %s in ${…}", sub.tok())
		}
		s.Parts = append(s.Parts, StrPart{Expr: e})
	}
	return s
}
