package jsonl

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/iotrace/iotrace/convert/internal/textutil"
	"github.com/iotrace/iotrace/convert/schema"
	"github.com/iotrace/iotrace/trace"
)

// MaxLine is the longest line a Reader accepts, in bytes: the limit of
// every text importer.
const MaxLine = textutil.MaxLine

// Reader reads events from JSON lines. It is a trace.Source: each event
// carries its Rank, so one stream holds the events of every rank, in the
// order of the lines. It holds one line in memory at a time.
type Reader struct {
	lines *textutil.Lines
	name  string
	line  int
	b     *schema.Builder
	arena []byte // unescaped strings of the current line
	err   error  // sticky: io.EOF or the first error
}

// NewReader returns a Reader of r; name (a file name, "stdin") starts
// every error message: "in.jsonl:17: unknown field "sise"".
func NewReader(r io.Reader, name string) *Reader {
	return &Reader{lines: textutil.NewLines(r, name), name: name, b: schema.NewBuilder()}
}

// Path implements trace.Source: it resolves the path ids of the events
// read so far.
func (r *Reader) Path(id trace.PathID) string { return r.b.Paths().Lookup(id) }

// Paths returns the table the events' path ids refer to.
func (r *Reader) Paths() *trace.Paths { return r.b.Paths() }

// Line returns the number of the last line read.
func (r *Reader) Line() int { return r.line }

// Read reads the next event into e. At the end of the input it returns
// io.EOF. Errors are *schema.LineError, except for those of the underlying
// reader, which are wrapped with the input's name.
func (r *Reader) Read(e *trace.Event) error {
	if r.err != nil {
		return r.err
	}
	for {
		raw, err := r.readLine()
		if err != nil {
			r.err = err
			return err
		}
		t := trimSpace(raw)
		if r.line == 1 {
			t = bytes.TrimPrefix(t, []byte("\xef\xbb\xbf")) // a byte order mark
		}
		if len(t) == 0 || t[0] == '#' {
			continue
		}
		if err := r.parse(t, e); err != nil {
			r.err = &schema.LineError{Name: r.name, Line: r.line, Err: err}
			return r.err
		}
		return nil
	}
}

// ReadEvents implements trace.Source.
func (r *Reader) ReadEvents(evs []trace.Event) (int, error) {
	for n := range evs {
		if err := r.Read(&evs[n]); err != nil {
			if n > 0 && errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, err
		}
	}
	return len(evs), nil
}

func (r *Reader) readLine() ([]byte, error) {
	b, err := r.lines.Next()
	r.line = r.lines.Line()
	return b, err
}

func trimSpace(b []byte) []byte {
	i, j := 0, len(b)
	for i < j && isSpace(b[i]) {
		i++
	}
	for j > i && isSpace(b[j-1]) {
		j--
	}
	return b[i:j]
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// parse reads the flat JSON object of one line into e. The scanner is
// written by hand: a line's values are only strings and integers, and
// integers must stay exact int64s, which encoding/json would either
// round through float64 or cost a map and a dozen allocations per line.
func (r *Reader) parse(line []byte, e *trace.Event) error {
	r.arena = r.arena[:0]
	r.b.Begin(e)
	s := scanner{b: line}
	s.ws()
	if !s.eat('{') {
		return s.errorf("want a JSON object")
	}
	s.ws()
	if !s.eat('}') {
		for {
			s.ws()
			if s.peek() != '"' {
				return s.errorf("want a field name in quotes")
			}
			key, err := r.string(&s)
			if err != nil {
				return err
			}
			f, ok := schema.LookupBytes(key)
			if !ok {
				return fmt.Errorf("unknown field %q", key)
			}
			s.ws()
			if !s.eat(':') {
				return s.errorf("want ':' after %q", key)
			}
			s.ws()
			switch c := s.peek(); {
			case c == '"':
				v, err := r.string(&s)
				if err != nil {
					return err
				}
				if err := r.b.SetString(f, v); err != nil {
					return err
				}
			case c == '-' || c >= '0' && c <= '9':
				v, err := s.integer(f)
				if err != nil {
					return err
				}
				if err := r.b.SetInt(f, v); err != nil {
					return err
				}
			case c == 't' || c == 'f' || c == 'n' || c == '{' || c == '[':
				want := "an integer"
				switch f.Kind() {
				case schema.KindString:
					want = "a string"
				case schema.KindEither:
					want = "a string or an integer"
				}
				return fmt.Errorf("field %q: want %s, got %s", f, want, s.valueKind())
			default:
				return s.errorf("want a value for %q", f)
			}
			s.ws()
			if s.eat('}') {
				break
			}
			if !s.eat(',') {
				return s.errorf("want ',' or '}'")
			}
		}
	}
	s.ws()
	if !s.done() {
		return s.errorf("more than one JSON value on the line")
	}
	return r.b.End()
}

// string reads the JSON string at the scanner's position. Without escapes
// it returns a slice of the line; otherwise it decodes into the arena.
func (r *Reader) string(s *scanner) ([]byte, error) {
	s.i++ // the quote
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c == '"' {
			v := s.b[start:s.i]
			s.i++
			if !validUTF8(v) {
				return nil, s.errorfAt(start, "string is not valid UTF-8")
			}
			return v, nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		s.i++
	}
	if !validUTF8(s.b[start:s.i]) {
		return nil, s.errorfAt(start, "string is not valid UTF-8")
	}
	from := len(r.arena)
	r.arena = append(r.arena, s.b[start:s.i]...)
	var err error
	r.arena, err = s.unescape(r.arena)
	if err != nil {
		return nil, err
	}
	return r.arena[from:len(r.arena):len(r.arena)], nil
}
