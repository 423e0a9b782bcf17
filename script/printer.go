package script

import (
	"bytes"
	"io"
	"strconv"
	"strings"
)

// indent is one level of indentation in formatted scripts.
const indent = "    "

// Format returns the canonical text of f: one statement per line, blocks
// indented by four spaces, one space around binary operators, command
// arguments in a fixed order, comments kept, runs of empty lines shortened
// to one. Formatting is idempotent: Format(Parse(Format(f))) == Format(f).
func Format(f *File) []byte {
	pr := &printer{}
	pr.stmts(f.Stmts, 0)
	pr.comments(f.EndComments, 0, len(f.Stmts) > 0)
	return pr.buf.Bytes()
}

// Fprint writes Format(f) to w.
func Fprint(w io.Writer, f *File) error {
	_, err := w.Write(Format(f))
	return err
}

// FormatSource parses src and returns its canonical form.
func FormatSource(name string, src []byte) ([]byte, error) {
	f, err := Parse(name, src)
	if err != nil {
		return nil, err
	}
	return Format(f), nil
}

// FormatExpr returns the text of an expression.
func FormatExpr(e Expr) string {
	pr := &printer{}
	pr.expr(e)
	return pr.buf.String()
}

type printer struct {
	buf bytes.Buffer
}

func (pr *printer) indent(depth int) {
	for range depth {
		pr.buf.WriteString(indent)
	}
}

func (pr *printer) comments(cs []Comment, depth int, after bool) {
	for i, c := range cs {
		if c.BlankBefore && (after || i > 0) {
			pr.buf.WriteByte('\n')
		}
		pr.indent(depth)
		pr.buf.WriteString(c.Text)
		pr.buf.WriteByte('\n')
	}
}

func (pr *printer) stmts(ss []Stmt, depth int) {
	for i, s := range ss {
		in := s.info()
		pr.comments(in.Leading, depth, i > 0)
		if in.BlankBefore && (i > 0 || len(in.Leading) > 0) {
			pr.buf.WriteByte('\n')
		}
		pr.indent(depth)
		pr.stmt(s, depth)
		if in.Trailing != nil {
			pr.buf.WriteByte(' ')
			pr.buf.WriteString(in.Trailing.Text)
		}
		pr.buf.WriteByte('\n')
	}
}

func (pr *printer) block(b *Block, depth int) {
	if b == nil {
		pr.buf.WriteString("{}")
		return
	}
	if len(b.Stmts) == 0 && len(b.EndComments) == 0 {
		pr.buf.WriteString("{}")
		return
	}
	pr.buf.WriteString("{\n")
	pr.stmts(b.Stmts, depth+1)
	pr.comments(b.EndComments, depth+1, len(b.Stmts) > 0)
	pr.indent(depth)
	pr.buf.WriteByte('}')
}

func (pr *printer) name(id *Ident) {
	if id != nil {
		pr.buf.WriteString(id.Name)
	}
}

func (pr *printer) stmt(s Stmt, depth int) {
	b := &pr.buf
	switch s := s.(type) {
	case *ParamStmt:
		b.WriteString("param ")
		pr.name(s.Name)
		b.WriteString(" = ")
		pr.expr(s.Value)
	case *GroupStmt:
		b.WriteString("group ")
		pr.name(s.Name)
		if s.Size != nil {
			b.WriteString(" = ")
			pr.expr(s.Size)
		}
	case *LetStmt:
		b.WriteString("let ")
		pr.name(s.Name)
		b.WriteString(" = ")
		pr.expr(s.Value)
	case *AssignStmt:
		pr.name(s.Name)
		if s.Index != nil {
			b.WriteByte('[')
			pr.expr(s.Index)
			b.WriteByte(']')
		}
		b.WriteString(" = ")
		pr.expr(s.Value)
	case *IfStmt:
		for {
			b.WriteString("if ")
			pr.expr(s.Cond)
			b.WriteByte(' ')
			pr.block(s.Then, depth)
			if s.ElseIf != nil {
				b.WriteString(" else ")
				s = s.ElseIf
				continue
			}
			if s.Else != nil {
				b.WriteString(" else ")
				pr.block(s.Else, depth)
			}
			break
		}
	case *RepeatStmt:
		b.WriteString("repeat ")
		if s.For {
			b.WriteString("for ")
		}
		pr.expr(s.Count)
		if s.As != nil {
			b.WriteString(" as ")
			pr.name(s.As)
		}
		b.WriteByte(' ')
		pr.block(s.Body, depth)
	case *OnStmt:
		b.WriteString("on ")
		pr.name(s.Group)
		b.WriteByte(' ')
		pr.block(s.Body, depth)
	case *TimeStmt:
		b.WriteString("time ")
		pr.expr(s.Label)
		b.WriteByte(' ')
		pr.block(s.Body, depth)
	case *CommandStmt:
		b.WriteString(s.Name)
		if s.Operand != nil {
			b.WriteByte(' ')
			pr.expr(s.Operand)
		}
		args := s.Args
		if spec := commands()[s.Name]; spec != nil {
			args = make([]*Arg, 0, len(s.Args))
			for _, a := range spec.args {
				if x := s.Arg(a.key); x != nil {
					args = append(args, x)
				}
			}
		}
		for _, a := range args {
			b.WriteByte(' ')
			b.WriteString(a.Key)
			switch {
			case a.Value != nil:
				b.WriteByte(' ')
				pr.expr(a.Value)
			case a.Name != nil:
				b.WriteByte(' ')
				pr.name(a.Name)
			case a.Word != "":
				b.WriteByte(' ')
				b.WriteString(a.Word)
			}
		}
	}
}

func exprPrec(e Expr) int {
	switch e := e.(type) {
	case *BinaryExpr:
		return binaryPrec(e.Op)
	case *UnaryExpr:
		return precUnary
	}
	return precPrimary
}

// leftPrec is the least precedence the left operand of op is printed
// without parentheses at: comparisons do not chain.
func leftPrec(op string) int {
	if p := binaryPrec(op); p != precCmp {
		return p
	}
	return precCmp + 1
}

// sub prints x, in parentheses when its precedence is below min.
func (pr *printer) sub(x Expr, min int) {
	if exprPrec(x) < min {
		pr.buf.WriteByte('(')
		pr.expr(x)
		pr.buf.WriteByte(')')
		return
	}
	pr.expr(x)
}

func (pr *printer) expr(e Expr) {
	b := &pr.buf
	switch e := e.(type) {
	case nil:
		b.WriteString("<nil>")
	case *Ident:
		b.WriteString(e.Name)
	case *NumLit:
		if e.Raw != "" {
			b.WriteString(e.Raw)
		} else {
			b.WriteString(strconv.FormatInt(e.Value, 10))
			switch e.Unit {
			case UnitSize:
				b.WriteByte('B')
			case UnitDuration:
				b.WriteString("ns")
			}
		}
	case *StringLit:
		pr.str(e)
	case *ParenExpr:
		b.WriteByte('(')
		pr.expr(e.X)
		b.WriteByte(')')
	case *UnaryExpr:
		b.WriteString(e.Op)
		pr.sub(e.X, precUnary)
	case *BinaryExpr:
		if e.Op == "^" {
			pr.sub(e.X, precPrimary)
			b.WriteString("^")
			pr.sub(e.Y, precUnary)
			return
		}
		// The left operands that need no parentheses are printed in a
		// loop, so that a chain of any length costs no stack.
		spine := []*BinaryExpr{e}
		for {
			x, ok := spine[len(spine)-1].X.(*BinaryExpr)
			if !ok || x.Op == "^" || binaryPrec(x.Op) < leftPrec(spine[len(spine)-1].Op) {
				break
			}
			spine = append(spine, x)
		}
		last := spine[len(spine)-1]
		pr.sub(last.X, leftPrec(last.Op))
		for i := len(spine) - 1; i >= 0; i-- {
			n := spine[i]
			b.WriteByte(' ')
			b.WriteString(n.Op)
			b.WriteByte(' ')
			pr.sub(n.Y, binaryPrec(n.Op)+1)
		}
	case *ListLit:
		pr.list('[', e.Elems, ']')
	case *IndexExpr:
		pr.sub(e.X, precPrimary)
		b.WriteByte('[')
		pr.expr(e.Index)
		b.WriteByte(']')
	case *CallExpr:
		pr.name(e.Fun)
		pr.list('(', e.Args, ')')
	}
}

// list prints expressions separated by ", " between open and close.
func (pr *printer) list(open byte, xs []Expr, close byte) {
	pr.buf.WriteByte(open)
	for i, x := range xs {
		if i > 0 {
			pr.buf.WriteString(", ")
		}
		pr.expr(x)
	}
	pr.buf.WriteByte(close)
}

func (pr *printer) str(s *StringLit) {
	b := &pr.buf
	b.WriteByte('"')
	for i, p := range s.Parts {
		if p.Expr == nil {
			b.WriteString(escapeLit(p.Lit))
			continue
		}
		if id, ok := p.Expr.(*Ident); ok {
			nextIdent := false
			if i+1 < len(s.Parts) && s.Parts[i+1].Expr == nil && s.Parts[i+1].Lit != "" {
				c := s.Parts[i+1].Lit[0]
				nextIdent = isLetter(c) || isDigit(c)
			}
			if !nextIdent {
				b.WriteByte('$')
				b.WriteString(id.Name)
				continue
			}
		}
		b.WriteString("${")
		pr.expr(p.Expr)
		b.WriteByte('}')
	}
	b.WriteByte('"')
}

var litEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`, "\n", `\n`, "\t", `\t`)

func escapeLit(s string) string { return litEscaper.Replace(s) }
