package script

import (
	"fmt"
	"math/big"
	"strings"
	"unicode/utf8"
)

type tokKind uint8

const (
	tEOF tokKind = iota
	tNewline
	tSemi
	tIdent
	tNumber
	tString
	tOp // operators and punctuation; text says which
)

// token is a lexical token. A string token keeps its parts, interpolations
// still as text (the parser parses them).
type token struct {
	kind  tokKind
	pos   Pos
	end   int // offset just after the token
	text  string
	num   int64
	unit  Unit
	parts []rawPart
}

type rawPart struct {
	lit    string
	isExpr bool
	expr   string // text of the interpolation
	pos    Pos    // where expr starts
	name   bool   // $name form
}

func (t token) String() string {
	switch t.kind {
	case tEOF:
		return "end of file"
	case tNewline:
		return "end of line"
	case tSemi:
		return "';'"
	case tString:
		return "string " + t.text
	case tNumber:
		return t.text
	case tIdent:
		return "'" + t.text + "'"
	}
	return "'" + t.text + "'"
}

type lexer struct {
	file     string
	src      string
	off      int
	line     int
	lineOff  int // offset where the current line starts
	base     Pos // position of src[0] (for interpolations)
	toks     []token
	head     int // toks[head:] are not yet taken (take)
	comments []Comment
	parens   int
	last     token // the last token made
	done     bool  // the EOF token is made
}

// lex splits src into tokens and comments. base is the position of src[0]
// (line 1 col 1 for a file).
func lex(file, src string, base Pos) ([]token, []Comment, *Error) {
	lx := newLexer(file, src, base)
	for !lx.done {
		if err := lx.scan(); err != nil {
			return nil, nil, err
		}
	}
	return lx.toks, lx.comments, nil
}

func newLexer(file, src string, base Pos) *lexer {
	return &lexer{file: file, src: src, line: base.Line, base: base}
}

// peek returns the token n after the next one not yet taken, lexing as
// far as needed: the parser holds a few tokens at a time, not the file's
// (the end of file token past the end).
func (lx *lexer) peek(n int) (token, *Error) {
	for lx.head+n >= len(lx.toks) && !lx.done {
		if err := lx.scan(); err != nil {
			return token{}, err
		}
	}
	if lx.head+n >= len(lx.toks) {
		return lx.toks[len(lx.toks)-1], nil
	}
	return lx.toks[lx.head+n], nil
}

// take drops the next token (never the end of file).
func (lx *lexer) take() {
	if lx.head < len(lx.toks)-1 || !lx.done {
		lx.head++
	}
	if lx.head >= 64 && 2*lx.head >= len(lx.toks) {
		n := copy(lx.toks, lx.toks[lx.head:])
		clear(lx.toks[n:])
		lx.toks = lx.toks[:n]
		lx.head = 0
	}
}

func (lx *lexer) add(t token) {
	lx.toks = append(lx.toks, t)
	lx.last = t
}

func (lx *lexer) pos(off int) Pos {
	if lx.line == lx.base.Line {
		return Pos{Off: lx.base.Off + off, Line: lx.line, Col: lx.base.Col + off - lx.lineOff}
	}
	return Pos{Off: lx.base.Off + off, Line: lx.line, Col: 1 + off - lx.lineOff}
}

func (lx *lexer) errAt(off int, format string, args ...any) *Error {
	return &Error{File: lx.file, Pos: lx.pos(off), Msg: fmt.Sprintf(format, args...)}
}

// endsStmt reports whether a newline after the last token ends a statement.
func (lx *lexer) endsStmt() bool {
	if lx.parens > 0 {
		return false
	}
	switch t := lx.last; t.kind {
	case tIdent, tNumber, tString:
		return true
	case tOp:
		return t.text == ")" || t.text == "]" || t.text == "}"
	}
	return false
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

var ops2 = []string{"==", "!=", "<=", ">=", "&&", "||"}

// scan lexes what comes next: one token, a comment or blanks; at the end
// of the source, the last newline and the end of file token.
func (lx *lexer) scan() *Error {
	src := lx.src
	if lx.off >= len(src) {
		if lx.endsStmt() {
			lx.add(token{kind: tNewline, pos: lx.pos(lx.off), end: lx.off, text: "\n"})
		}
		lx.add(token{kind: tEOF, pos: lx.pos(lx.off), end: lx.off})
		lx.done = true
		return nil
	}
	c := src[lx.off]
	switch {
	case c == '\n':
		if lx.endsStmt() {
			lx.add(token{kind: tNewline, pos: lx.pos(lx.off), end: lx.off + 1, text: "\n"})
		}
		lx.off++
		lx.line++
		lx.lineOff = lx.off
	case c == ' ' || c == '\t' || c == '\r':
		lx.off++
	case c == '#':
		start := lx.off
		for lx.off < len(src) && src[lx.off] != '\n' {
			lx.off++
		}
		text := strings.TrimRight(src[start:lx.off], " \t\r")
		if !utf8.ValidString(text) {
			return lx.errAt(start, "comment is not valid UTF-8")
		}
		lx.comments = append(lx.comments, Comment{Pos: lx.pos(start), Text: text})
	case isLetter(c):
		start := lx.off
		for lx.off < len(src) && (isLetter(src[lx.off]) || isDigit(src[lx.off])) {
			lx.off++
		}
		lx.add(token{kind: tIdent, pos: lx.pos(start), end: lx.off, text: src[start:lx.off]})
	case isDigit(c):
		if err := lx.number(); err != nil {
			return err
		}
	case c == '"':
		if err := lx.str(); err != nil {
			return err
		}
	case c == ';':
		lx.add(token{kind: tSemi, pos: lx.pos(lx.off), end: lx.off + 1, text: ";"})
		lx.off++
	default:
		start := lx.off
		text := ""
		for _, op := range ops2 {
			if strings.HasPrefix(src[lx.off:], op) {
				text = op
				break
			}
		}
		if text == "" {
			if !strings.ContainsRune("+-*/%^|()[]<>{}=,!", rune(c)) {
				r, _ := utf8.DecodeRuneInString(src[lx.off:])
				if r == utf8.RuneError {
					return lx.errAt(start, "invalid UTF-8 byte 0x%02x", c)
				}
				if c == '&' {
					return lx.errAt(start, "unexpected '&' (the logical and is &&)")
				}
				if c == '$' {
					return lx.errAt(start, "unexpected '$': names are written without '$' outside strings")
				}
				return lx.errAt(start, "unexpected character %q", r)
			}
			text = src[lx.off : lx.off+1]
		}
		switch text {
		case "(", "[":
			lx.parens++
		case ")", "]":
			if lx.parens > 0 {
				lx.parens--
			}
		case "{", "}":
			// A block inside parentheses is an error the parser
			// reports; newlines count again from here.
			lx.parens = 0
		}
		lx.off += len(text)
		lx.add(token{kind: tOp, pos: lx.pos(start), end: lx.off, text: text})
	}
	return nil
}

// Units of number literals.
var sizeUnits = map[string]int64{
	"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
}

var durUnits = map[string]int64{
	"ns": 1, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9,
}

const unitList = "sizes B, kB, MB, GB, TB, KiB, MiB, GiB, TiB; durations ns, us, ms, s, m, h"

func (lx *lexer) number() *Error {
	src := lx.src
	start := lx.off
	tok := token{kind: tNumber, pos: lx.pos(start)}
	base := 10
	if src[lx.off] == '0' && lx.off+1 < len(src) && strings.ContainsRune("xXoObB", rune(src[lx.off+1])) {
		switch src[lx.off+1] {
		case 'x', 'X':
			base = 16
		case 'o', 'O':
			base = 8
		default:
			base = 2
		}
		// "0B" could be zero bytes: only a digit of the base after the
		// prefix makes it one.
		if base == 2 && (lx.off+2 >= len(src) || (src[lx.off+2] != '0' && src[lx.off+2] != '1')) {
			base = 10
		}
	}
	var digits, frac string
	if base != 10 {
		lx.off += 2
		ds := lx.off
		for lx.off < len(src) && (isHexDigit(src[lx.off]) || src[lx.off] == '_') {
			lx.off++
		}
		digits = src[ds:lx.off]
		if lx.off < len(src) && (isLetter(src[lx.off]) || isDigit(src[lx.off])) {
			return lx.errAt(lx.off, "unexpected %q in number %s (a unit cannot follow a hex, octal or binary number)", src[lx.off], src[start:lx.off])
		}
	} else {
		for lx.off < len(src) && (isDigit(src[lx.off]) || src[lx.off] == '_') {
			lx.off++
		}
		digits = src[start:lx.off]
		if lx.off+1 < len(src) && src[lx.off] == '.' && isDigit(src[lx.off+1]) {
			lx.off++
			fs := lx.off
			for lx.off < len(src) && (isDigit(src[lx.off]) || src[lx.off] == '_') {
				lx.off++
			}
			frac = src[fs:lx.off]
		}
	}
	numEnd := lx.off
	for lx.off < len(src) && (isLetter(src[lx.off]) || isDigit(src[lx.off])) {
		lx.off++
	}
	if strings.HasPrefix(src[lx.off:], "µs") && lx.off == numEnd {
		lx.off += len("µs")
	}
	suffix := src[numEnd:lx.off]
	tok.text = src[start:lx.off]
	tok.end = lx.off
	if strings.Contains(digits, "__") || strings.HasSuffix(digits, "_") || strings.HasPrefix(frac, "_") || strings.HasSuffix(frac, "_") {
		return lx.errAt(start, "misplaced '_' in number %s (use it between digits: 1_000_000)", tok.text)
	}
	if base == 10 && len(digits) > 1 && digits[0] == '0' {
		return lx.errAt(start, "number %s has a leading zero: write 0o%s for octal or %s for decimal",
			src[start:numEnd], strings.TrimLeft(digits, "0_"), strings.TrimLeft(digits, "0_"))
	}
	clean := strings.ReplaceAll(digits, "_", "")
	if base != 10 {
		if clean == "" {
			return lx.errAt(start, "number %s has no digits", tok.text)
		}
		for _, d := range clean {
			if digitVal(byte(d)) >= base {
				return lx.errAt(start, "invalid digit %q in number %s", d, tok.text)
			}
		}
	}
	mult := int64(1)
	if suffix != "" {
		if v, ok := sizeUnits[suffix]; ok {
			mult, tok.unit = v, UnitSize
		} else if v, ok := durUnits[suffix]; ok {
			mult, tok.unit = v, UnitDuration
		} else {
			switch suffix {
			case "KB", "Kb", "kb", "K", "k":
				return lx.errAt(numEnd, "unit %q is ambiguous: write KiB (1024 bytes) or kB (1000 bytes)", suffix)
			}
			return lx.errAt(numEnd, "unknown unit %q after %s (%s)", suffix, src[start:numEnd], unitList)
		}
	}
	v := new(big.Int)
	v.SetString(clean, base)
	if frac != "" {
		if tok.unit == UnitNone {
			return lx.errAt(start, "fractional number %s needs a unit (plain numbers are integers)", tok.text)
		}
		f := strings.ReplaceAll(frac, "_", "")
		den := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(f))), nil)
		num := new(big.Int).Mul(v, den)
		fv, _ := new(big.Int).SetString(f, 10)
		num.Add(num, fv)
		num.Mul(num, big.NewInt(mult))
		q, r := new(big.Int).QuoRem(num, den, new(big.Int))
		if r.Sign() != 0 {
			what := "bytes"
			if tok.unit == UnitDuration {
				what = "nanoseconds"
			}
			return lx.errAt(start, "%s is not a whole number of %s", tok.text, what)
		}
		v = q
	} else {
		v.Mul(v, big.NewInt(mult))
	}
	if !v.IsInt64() {
		return lx.errAt(start, "number %s does not fit in 64 bits", tok.text)
	}
	tok.num = v.Int64()
	lx.add(tok)
	return nil
}

func isHexDigit(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func digitVal(c byte) int {
	switch {
	case isDigit(c):
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return 99
}

// str lexes a string: literal text with \\ \" \$ \n \t escapes, $name and
// ${expr} interpolations. A string ends on its line.
func (lx *lexer) str() *Error {
	src := lx.src
	start := lx.off
	tok := token{kind: tString, pos: lx.pos(start)}
	lx.off++
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			tok.parts = append(tok.parts, rawPart{lit: lit.String()})
			lit.Reset()
		}
	}
	for {
		if lx.off >= len(src) || src[lx.off] == '\n' {
			return lx.errAt(start, "string not terminated (a string ends on the line it starts)")
		}
		c := src[lx.off]
		switch {
		case c == '"':
			lx.off++
			flush()
			tok.end = lx.off
			tok.text = src[start:lx.off]
			lx.add(tok)
			return nil
		case c == '\\':
			if lx.off+1 >= len(src) {
				return lx.errAt(lx.off, "string not terminated (a string ends on the line it starts)")
			}
			switch e := src[lx.off+1]; e {
			case '\\', '"', '$':
				lit.WriteByte(e)
			case 'n':
				lit.WriteByte('\n')
			case 't':
				lit.WriteByte('\t')
			default:
				r, _ := utf8.DecodeRuneInString(src[lx.off+1:])
				return lx.errAt(lx.off, `unknown escape '\%c' in string (use \\, \", \$, \n or \t)`, r)
			}
			lx.off += 2
		case c == '$':
			flush()
			if lx.off+1 < len(src) && src[lx.off+1] == '{' {
				es := lx.off + 2
				end := es
				for end < len(src) && src[end] != '}' {
					if src[end] == '"' || src[end] == '\n' {
						return lx.errAt(lx.off, "'${' without a closing '}' (strings cannot nest inside ${…})")
					}
					end++
				}
				if end >= len(src) {
					return lx.errAt(lx.off, "'${' without a closing '}'")
				}
				if strings.TrimSpace(src[es:end]) == "" {
					return lx.errAt(lx.off, "empty interpolation '${}'")
				}
				tok.parts = append(tok.parts, rawPart{isExpr: true, expr: src[es:end], pos: lx.pos(es)})
				lx.off = end + 1
			} else if lx.off+1 < len(src) && isLetter(src[lx.off+1]) {
				ns := lx.off + 1
				end := ns
				for end < len(src) && (isLetter(src[end]) || isDigit(src[end])) {
					end++
				}
				tok.parts = append(tok.parts, rawPart{isExpr: true, name: true, expr: src[ns:end], pos: lx.pos(ns)})
				lx.off = end
			} else {
				return lx.errAt(lx.off, `'$' must be followed by a name or '{' (write \$ for a dollar sign)`)
			}
		case c < 0x20 && c != '\t':
			return lx.errAt(lx.off, "control character 0x%02x in string (write \\n or \\t)", c)
		default:
			r, n := utf8.DecodeRuneInString(src[lx.off:])
			if r == utf8.RuneError && n == 1 {
				return lx.errAt(lx.off, "invalid UTF-8 byte 0x%02x in string", c)
			}
			lit.WriteString(src[lx.off : lx.off+n])
			lx.off += n
		}
	}
}
