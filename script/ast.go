package script

import (
	"strconv"
)

// Pos is a place in a script: byte offset, and 1-based line and column
// (the column counts bytes, as Go's tools do).
type Pos struct {
	Off, Line, Col int
}

// IsValid reports whether p was set by the parser.
func (p Pos) IsValid() bool { return p.Line > 0 }

func (p Pos) String() string {
	return strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Col)
}

// File is a parsed script.
type File struct {
	Name        string // file name used in error messages
	Stmts       []Stmt // top-level statements, declarations (param, group) first
	EndComments []Comment
}

// Comment is a "#" comment, Text including the "#".
type Comment struct {
	Pos         Pos
	Text        string
	BlankBefore bool // an empty line separates it from what comes before
}

// StmtInfo is what every statement carries besides its own fields: its
// position, the comments on the lines before it and at the end of its line.
type StmtInfo struct {
	Pos         Pos
	Leading     []Comment
	Trailing    *Comment
	BlankBefore bool // an empty line separates it (or its first comment) from what comes before
}

func (s *StmtInfo) info() *StmtInfo { return s }

// Stmt is a statement: one of *ParamStmt, *GroupStmt, *LetStmt,
// *AssignStmt, *IfStmt, *RepeatStmt, *OnStmt, *TimeStmt, *CommandStmt.
type Stmt interface {
	info() *StmtInfo
}

// Block is a brace-delimited statement list.
type Block struct {
	Lbrace, Rbrace Pos
	Stmts          []Stmt
	EndComments    []Comment // comments after the last statement
}

// Ident is a name.
type Ident struct {
	Pos  Pos
	Name string
}

// ParamStmt is "param NAME = EXPR": a script parameter with a default that
// the command line may override.
type ParamStmt struct {
	StmtInfo
	Name  *Ident
	Value Expr
}

// GroupStmt is "group NAME [= SIZE]": a named, disjoint set of ranks.
type GroupStmt struct {
	StmtInfo
	Name *Ident
	Size Expr // nil: the group takes a share of the ranks no sized group has
}

// LetStmt is "let NAME = EXPR".
type LetStmt struct {
	StmtInfo
	Name  *Ident
	Value Expr
}

// AssignStmt is "NAME = EXPR" for a variable declared with let, or
// "NAME[INDEX] = EXPR" for an element of a list variable.
type AssignStmt struct {
	StmtInfo
	Name  *Ident
	Index Expr // nil unless an element is assigned
	Value Expr
}

// IfStmt is "if COND { … } [else { … } | else if …]".
type IfStmt struct {
	StmtInfo
	Cond   Expr
	Then   *Block
	Else   *Block  // nil unless a plain else
	ElseIf *IfStmt // nil unless "else if"
}

// RepeatStmt is "repeat COUNT [as NAME] { … }" or, with For set,
// "repeat for DURATION [as NAME] { … }".
type RepeatStmt struct {
	StmtInfo
	For   bool
	Count Expr // iterations, or the duration of a time-driven loop
	As    *Ident
	Body  *Block
}

// OnStmt is "on GROUP { … }".
type OnStmt struct {
	StmtInfo
	Group *Ident
	Body  *Block
}

// TimeStmt is `time "label" { … }`: a labelled region.
type TimeStmt struct {
	StmtInfo
	Label Expr
	Body  *Block
}

// CommandStmt is an I/O, communication or other command: its name, an
// operand, and keyword arguments.
type CommandStmt struct {
	StmtInfo
	Name    string
	Operand Expr // nil for commands without one (barrier)
	Args    []*Arg
}

// Arg is a keyword argument of a command: "at EXPR", "as NAME", "from end",
// or a bare flag word ("all").
type Arg struct {
	Pos   Pos
	Key   string
	Value Expr   // for keys that take an expression
	Name  *Ident // for "as NAME"
	Word  string // for keys that take a word ("from end")
}

// Arg returns the argument named key, or nil.
func (c *CommandStmt) Arg(key string) *Arg {
	for _, a := range c.Args {
		if a.Key == key {
			return a
		}
	}
	return nil
}

// Expr is an expression: one of *Ident, *NumLit, *StringLit, *UnaryExpr,
// *BinaryExpr, *ParenExpr, *CallExpr, *ListLit, *IndexExpr.
type Expr interface {
	Start() Pos
}

// Unit is the kind of a number literal.
type Unit uint8

const (
	UnitNone     Unit = iota // a plain integer
	UnitSize                 // bytes, written with a size suffix (4KiB)
	UnitDuration             // nanoseconds, written with a time suffix (10s)
)

// NumLit is a number literal. Value is in bytes for sizes and nanoseconds
// for durations; Raw is the text as written (the printer prints Raw, or
// Value when Raw is empty).
type NumLit struct {
	Pos   Pos
	Raw   string
	Value int64
	Unit  Unit
}

// StringLit is a string with interpolations.
type StringLit struct {
	Pos   Pos
	Parts []StrPart
}

// StrPart is literal text, or an interpolated expression ($name, ${expr}).
type StrPart struct {
	Lit  string
	Expr Expr // non-nil for an interpolation
}

// UnaryExpr is "-X" or "!X".
type UnaryExpr struct {
	Pos Pos
	Op  string
	X   Expr
}

// BinaryExpr is "X op Y".
type BinaryExpr struct {
	OpPos Pos
	Op    string
	X, Y  Expr
}

// ParenExpr is "(X)".
type ParenExpr struct {
	Pos Pos
	X   Expr
}

// CallExpr is a call of a built-in function: "max(a, b)".
type CallExpr struct {
	Fun  *Ident
	Args []Expr
}

// ListLit is a list of ints: "[1KiB, 32KiB, 1MiB]".
type ListLit struct {
	Lbrack Pos
	Elems  []Expr
}

// IndexExpr is an element of a list: "sizes[i]".
type IndexExpr struct {
	X      Expr
	Lbrack Pos
	Index  Expr
}

func (e *ListLit) Start() Pos    { return e.Lbrack }
func (e *IndexExpr) Start() Pos  { return e.X.Start() }
func (e *Ident) Start() Pos      { return e.Pos }
func (e *NumLit) Start() Pos     { return e.Pos }
func (e *StringLit) Start() Pos  { return e.Pos }
func (e *UnaryExpr) Start() Pos  { return e.Pos }
func (e *BinaryExpr) Start() Pos { return e.X.Start() }
func (e *ParenExpr) Start() Pos  { return e.Pos }
func (e *CallExpr) Start() Pos   { return e.Fun.Pos }

// Int returns a literal for n, written in decimal.
func Int(n int64) *NumLit { return &NumLit{Raw: strconv.FormatInt(n, 10), Value: n} }

// Size returns a literal for n bytes, written with the largest binary unit
// that divides it (4096 → 4KiB), in plain bytes otherwise.
func Size(n int64) *NumLit {
	lit := &NumLit{Value: n, Unit: UnitSize}
	units := []struct {
		name string
		v    int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}
	for _, u := range units {
		if n != 0 && n%u.v == 0 {
			lit.Raw = strconv.FormatInt(n/u.v, 10) + u.name
			return lit
		}
	}
	lit.Raw = strconv.FormatInt(n, 10)
	lit.Unit = UnitNone
	return lit
}

// Duration returns a literal for ns nanoseconds, written with the largest
// unit that divides it (1500000 → 1500us).
func Duration(ns int64) *NumLit {
	return &NumLit{Raw: FormatDuration(ns), Value: ns, Unit: UnitDuration}
}

// FormatDuration writes ns with the largest of h, m, s, ms, us, ns that
// divides it exactly: the form durations take in scripts and interpolations.
func FormatDuration(ns int64) string {
	units := []struct {
		name string
		v    int64
	}{{"h", 3600e9}, {"m", 60e9}, {"s", 1e9}, {"ms", 1e6}, {"us", 1e3}}
	for _, u := range units {
		if ns != 0 && ns%u.v == 0 {
			return strconv.FormatInt(ns/u.v, 10) + u.name
		}
	}
	return strconv.FormatInt(ns, 10) + "ns"
}

// Str returns a string literal without interpolation.
func Str(s string) *StringLit {
	if s == "" {
		return &StringLit{}
	}
	return &StringLit{Parts: []StrPart{{Lit: s}}}
}
