// Package textutil holds what the text importers and exporters of
// convert/ share: lines read with a bound on their length (and CSV
// records), the bound on paths, decimal seconds read exactly, and counts
// listed for the notes users read.
package textutil

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/iotrace/iotrace/trace"
)

// Seconds reads a non-negative decimal number of seconds ("12", "0.0041",
// "1700000000.123456789") as ns, exactly: at most 9 decimals.
func Seconds(s string) (int64, bool) {
	sec, frac, _ := strings.Cut(s, ".")
	v, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || v < 0 || v > (1<<62)/1_000_000_000 || sec == "" || sec[0] == '+' {
		return 0, false
	}
	f, ok := Fraction(frac)
	if !ok {
		return 0, false
	}
	return v*1_000_000_000 + f, true
}

// Fraction reads the digits after a decimal point (at most 9) as ns.
func Fraction(s string) (int64, bool) {
	if len(s) > 9 {
		return 0, false
	}
	var v int64
	for i := 0; i < 9; i++ {
		v *= 10
		if i < len(s) {
			c := s[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			v += int64(c - '0')
		}
	}
	return v, true
}

// CountList renders counts as "name n, name n, …", the largest first (then
// by name), at most limit of them and "k more kinds" after.
func CountList(m map[string]int64, limit int) string {
	type kv struct {
		k string
		v int64
	}
	var l []kv
	for k, v := range m {
		l = append(l, kv{k, v})
	}
	slices.SortFunc(l, func(a, b kv) int {
		if a.v != b.v {
			if a.v > b.v {
				return -1
			}
			return 1
		}
		return strings.Compare(a.k, b.k)
	})
	var parts []string
	for i, e := range l {
		if i == limit {
			parts = append(parts, fmt.Sprintf("%d more kinds", len(l)-limit))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d", e.k, e.v))
	}
	return strings.Join(parts, ", ")
}

// MaxLine is the longest line every text importer reads (JSON lines, CSV
// rows, strace, Darshan DXT and fio iolog lines), in bytes: a reader holds
// one line at a time, so its memory is bounded whatever the input.
const MaxLine = 1 << 20

// MaxPath is the longest path an importer takes, in bytes: no capture
// records a longer one (trace.MaxPath, Linux's PATH_MAX).
const MaxPath = trace.MaxPath

// LineError is an error in one line of a text input: "name:line: err".
type LineError struct {
	Name string // name of the input
	Line int    // 1-based line number
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.Name, e.Line, e.Err) }

func (e *LineError) Unwrap() error { return e.Err }

// ErrLongLine is the error of a line longer than MaxLine.
var ErrLongLine = fmt.Errorf("line longer than %d bytes (the limit of every text importer; it is fixed)", MaxLine)

// CheckPath returns an error for a path longer than MaxPath.
func CheckPath(n int) error {
	if n > MaxPath {
		return fmt.Errorf("path of %d bytes: a path holds at most %d bytes (Linux's PATH_MAX)", n, MaxPath)
	}
	return nil
}

// Lines reads lines of at most MaxLine bytes: the mechanism every text
// importer reads its input with.
type Lines struct {
	br   *bufio.Reader
	name string
	line int
	long []byte // a line longer than the buffer
	err  error
}

// NewLines returns a reader of the lines of r, called name in errors.
func NewLines(r io.Reader, name string) *Lines {
	return &Lines{br: bufio.NewReaderSize(r, 64<<10), name: name}
}

// Line returns the number of the last line read (1-based).
func (l *Lines) Line() int { return l.line }

// Next returns the next line without its end ("\n" or "\r\n"), valid until
// the next call. At the end of the input it returns io.EOF; a line longer
// than MaxLine is a *LineError wrapping ErrLongLine, and read errors are
// wrapped with the input's name. Errors are sticky.
func (l *Lines) Next() ([]byte, error) {
	if l.err != nil {
		return nil, l.err
	}
	l.line++
	l.long = l.long[:0]
	for {
		b, err := l.br.ReadSlice('\n')
		if len(l.long)+len(b) > MaxLine+2 { // +2: the line end
			l.err = &LineError{Name: l.name, Line: l.line, Err: ErrLongLine}
			l.long = nil
			return nil, l.err
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			l.long = append(l.long, b...)
			continue
		}
		if len(l.long) > 0 {
			l.long = append(l.long, b...)
			b = l.long
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			if len(b) == 0 {
				l.line-- // no line there
				l.err = io.EOF
				return nil, io.EOF
			}
		default:
			l.err = fmt.Errorf("%s: %w", l.name, err)
			return nil, l.err
		}
		b = bytes.TrimSuffix(b, []byte("\n"))
		b = bytes.TrimSuffix(b, []byte("\r"))
		if len(b) > MaxLine {
			l.err = &LineError{Name: l.name, Line: l.line, Err: ErrLongLine}
			return nil, l.err
		}
		return b, nil
	}
}

// CSVRecords bounds the records of CSV read from r to MaxLine bytes each
// (a quoted cell may hold newlines: a record ends at a newline outside
// quotes), so that encoding/csv never holds a longer one. Errors name
// the physical line where the record starts.
func CSVRecords(r io.Reader, name string) io.Reader {
	return &csvLimit{r: r, name: name, line: 1, start: 1}
}

type csvLimit struct {
	r           io.Reader
	name        string
	n           int  // bytes of the record so far
	quoted      bool // inside a quoted cell
	line, start int  // the current line, the line the record started on
	err         error
}

func (c *csvLimit) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	k, err := c.r.Read(p)
	for i, b := range p[:k] {
		switch b {
		case '"':
			c.quoted = !c.quoted // "" inside a quoted cell toggles twice
		case '\n':
			c.line++
			if !c.quoted {
				c.n, c.start = 0, c.line
				continue
			}
		}
		if c.n++; c.n > MaxLine {
			c.err = &LineError{Name: c.name, Line: c.start, Err: fmt.Errorf("record longer than %d bytes (the limit of every text importer; it is fixed)", MaxLine)}
			return i, c.err
		}
	}
	return k, err
}
