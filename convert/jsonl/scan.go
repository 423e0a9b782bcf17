package jsonl

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/iotrace/iotrace/convert/schema"
)

// scanner walks one line of JSON.
type scanner struct {
	b []byte
	i int
}

var errIncomplete = errors.New("incomplete JSON object")

// errorf reports a syntax error at the current position, or an incomplete
// object at the end of the line.
func (s *scanner) errorf(format string, args ...any) error { return s.errorfAt(s.i, format, args...) }

func (s *scanner) errorfAt(i int, format string, args ...any) error {
	if i >= len(s.b) {
		return errIncomplete
	}
	return fmt.Errorf("column %d: %s", i+1, fmt.Sprintf(format, args...))
}

func (s *scanner) ws() {
	for s.i < len(s.b) && isSpace(s.b[s.i]) {
		s.i++
	}
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) done() bool { return s.i >= len(s.b) }

// valueKind names the JSON value that starts at the position, for errors.
func (s *scanner) valueKind() string {
	switch s.peek() {
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "something else"
}

// integer reads the JSON number at the position, which must be an integer
// within int64. It reads the whole number token first, so that "4.5" is
// reported as a fraction rather than as "4" followed by junk.
func (s *scanner) integer(f schema.Field) (int64, error) {
	start := s.i
	neg := s.eat('-')
	digits := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	intEnd := s.i
	frac := false
	if s.eat('.') {
		frac = true
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
		}
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		frac = true
		s.i++
		if c := s.peek(); c == '+' || c == '-' {
			s.i++
		}
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
		}
	}
	tok := s.b[start:s.i]
	n := intEnd - digits
	switch {
	case n == 0 || (frac && (s.b[s.i-1] < '0' || s.b[s.i-1] > '9')):
		return 0, s.errorfAt(start, "%q is not a JSON number", tok)
	case frac:
		return 0, fmt.Errorf("field %q: want an integer, got %s", f, tok)
	case n > 1 && s.b[digits] == '0':
		return 0, s.errorfAt(start, "%q is not a JSON number (leading zero)", tok)
	}
	if n > 19 { // more digits than any int64 has
		return 0, fmt.Errorf("field %q: %s out of range", f, tok)
	}
	var v uint64 // 19 digits fit: 10^19-1 < 2^64
	for _, c := range s.b[digits:intEnd] {
		v = v*10 + uint64(c-'0')
	}
	if neg {
		if v > 1<<63 {
			return 0, fmt.Errorf("field %q: %s out of range", f, tok)
		}
		return -int64(v), nil // -(1<<63) wraps to itself, which is right
	}
	if v > 1<<63-1 {
		return 0, fmt.Errorf("field %q: %s out of range", f, tok)
	}
	return int64(v), nil
}

// validUTF8 is utf8.Valid with a fast path for ASCII.
func validUTF8(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return utf8.Valid(b)
		}
	}
	return true
}

// unescape decodes the rest of a JSON string, from the position up to and
// past its closing quote, appending it to dst.
func (s *scanner) unescape(dst []byte) ([]byte, error) {
	for {
		start := s.i
		for s.i < len(s.b) && s.b[s.i] != '"' && s.b[s.i] != '\\' && s.b[s.i] >= 0x20 {
			s.i++
		}
		if !validUTF8(s.b[start:s.i]) {
			return dst, s.errorfAt(start, "string is not valid UTF-8")
		}
		dst = append(dst, s.b[start:s.i]...)
		if s.i >= len(s.b) {
			return dst, errIncomplete
		}
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return dst, nil
		case c < 0x20:
			return dst, s.errorf("control character %#02x in a string (escape it)", c)
		}
		// A backslash.
		at := s.i
		s.i++
		if s.i >= len(s.b) {
			return dst, errIncomplete
		}
		c := s.b[s.i]
		s.i++
		switch c {
		case '"', '\\', '/':
			dst = append(dst, c)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return dst, s.errorfAt(at, `bad \u escape`)
			}
			switch {
			case r >= 0xd800 && r < 0xdc00: // high surrogate: a pair?
				if s.i+6 <= len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
					save := s.i
					s.i += 2
					if r2, ok := s.hex4(); ok && r2 >= 0xdc00 && r2 < 0xe000 {
						r = 0x10000 + (r-0xd800)<<10 + (r2 - 0xdc00)
						dst = utf8.AppendRune(dst, r)
						continue
					}
					s.i = save
				}
				dst = utf8.AppendRune(dst, utf8.RuneError)
			case r >= 0xdc80 && r <= 0xdcff: // a raw byte (see AppendString)
				dst = append(dst, byte(r-0xdc00))
			case r >= 0xdc00 && r < 0xe000:
				dst = utf8.AppendRune(dst, utf8.RuneError)
			default:
				dst = utf8.AppendRune(dst, r)
			}
		default:
			return dst, s.errorfAt(at, "bad escape \\%c", c)
		}
	}
}

func (s *scanner) hex4() (rune, bool) {
	if s.i+4 > len(s.b) {
		return 0, false
	}
	var r rune
	for _, c := range s.b[s.i : s.i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	s.i += 4
	return r, true
}
