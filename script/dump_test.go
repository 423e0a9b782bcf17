package script

import (
	"fmt"
	"strings"
)

// dump renders an AST without positions, for comparing the trees of two
// parses: comments and empty lines are part of it.
func dump(f *File) string {
	var b strings.Builder
	dumpStmts(&b, f.Stmts)
	dumpComments(&b, "end", f.EndComments)
	return b.String()
}

func dumpComments(b *strings.Builder, what string, cs []Comment) {
	for _, c := range cs {
		fmt.Fprintf(b, "(%s-comment %q blank=%v)", what, c.Text, c.BlankBefore)
	}
}

func dumpStmts(b *strings.Builder, ss []Stmt) {
	b.WriteString("[")
	for _, s := range ss {
		in := s.info()
		dumpComments(b, "lead", in.Leading)
		if in.BlankBefore {
			b.WriteString("(blank)")
		}
		dumpStmt(b, s)
		if in.Trailing != nil {
			fmt.Fprintf(b, "(trailing %q)", in.Trailing.Text)
		}
	}
	b.WriteString("]")
}

func dumpBlock(b *strings.Builder, bl *Block) {
	if bl == nil {
		b.WriteString("nil")
		return
	}
	dumpStmts(b, bl.Stmts)
	dumpComments(b, "end", bl.EndComments)
}

func dumpStmt(b *strings.Builder, s Stmt) {
	switch s := s.(type) {
	case *ParamStmt:
		fmt.Fprintf(b, "(param %s %s)", s.Name.Name, dumpExpr(s.Value))
	case *GroupStmt:
		fmt.Fprintf(b, "(group %s %s)", s.Name.Name, dumpExpr(s.Size))
	case *LetStmt:
		fmt.Fprintf(b, "(let %s %s)", s.Name.Name, dumpExpr(s.Value))
	case *AssignStmt:
		fmt.Fprintf(b, "(set %s %s %s)", s.Name.Name, dumpExpr(s.Index), dumpExpr(s.Value))
	case *IfStmt:
		fmt.Fprintf(b, "(if %s ", dumpExpr(s.Cond))
		dumpBlock(b, s.Then)
		if s.ElseIf != nil {
			b.WriteString(" elseif ")
			dumpStmt(b, s.ElseIf)
		}
		if s.Else != nil {
			b.WriteString(" else ")
			dumpBlock(b, s.Else)
		}
		b.WriteString(")")
	case *RepeatStmt:
		as := ""
		if s.As != nil {
			as = s.As.Name
		}
		fmt.Fprintf(b, "(repeat for=%v %s as=%s ", s.For, dumpExpr(s.Count), as)
		dumpBlock(b, s.Body)
		b.WriteString(")")
	case *OnStmt:
		fmt.Fprintf(b, "(on %s ", s.Group.Name)
		dumpBlock(b, s.Body)
		b.WriteString(")")
	case *TimeStmt:
		fmt.Fprintf(b, "(time %s ", dumpExpr(s.Label))
		dumpBlock(b, s.Body)
		b.WriteString(")")
	case *CommandStmt:
		fmt.Fprintf(b, "(%s %s", s.Name, dumpExpr(s.Operand))
		for _, a := range s.Args {
			fmt.Fprintf(b, " %s=", a.Key)
			switch {
			case a.Value != nil:
				b.WriteString(dumpExpr(a.Value))
			case a.Name != nil:
				b.WriteString(a.Name.Name)
			default:
				b.WriteString(a.Word)
			}
		}
		b.WriteString(")")
	default:
		fmt.Fprintf(b, "(? %T)", s)
	}
}

func dumpExpr(e Expr) string {
	switch e := e.(type) {
	case nil:
		return "nil"
	case *Ident:
		return e.Name
	case *NumLit:
		return fmt.Sprintf("%s:%d:%d", e.Raw, e.Value, e.Unit)
	case *StringLit:
		var parts []string
		for _, p := range e.Parts {
			if p.Expr != nil {
				parts = append(parts, "{"+dumpExpr(p.Expr)+"}")
			} else {
				parts = append(parts, fmt.Sprintf("%q", p.Lit))
			}
		}
		return "(str " + strings.Join(parts, " ") + ")"
	case *UnaryExpr:
		return "(" + e.Op + " " + dumpExpr(e.X) + ")"
	case *BinaryExpr:
		return "(" + e.Op + " " + dumpExpr(e.X) + " " + dumpExpr(e.Y) + ")"
	case *ParenExpr:
		return "(paren " + dumpExpr(e.X) + ")"
	case *CallExpr:
		var args []string
		for _, a := range e.Args {
			args = append(args, dumpExpr(a))
		}
		return "(call " + e.Fun.Name + " " + strings.Join(args, " ") + ")"
	case *ListLit:
		var els []string
		for _, x := range e.Elems {
			els = append(els, dumpExpr(x))
		}
		return "(list " + strings.Join(els, " ") + ")"
	case *IndexExpr:
		return "(index " + dumpExpr(e.X) + " " + dumpExpr(e.Index) + ")"
	}
	return fmt.Sprintf("(? %T)", e)
}
