package jsonl

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// value is one value of a flat JSON object: a string or an integer.
type value struct {
	str   string
	num   int64
	isStr bool
}

// scanObject calls fn for each member of the flat JSON object in b, whose
// values must be strings or integers. It is a small hand-written scanner:
// the JSON lines of a trace are flat, and encoding/json costs ten times as
// much per line.
func scanObject(b []byte, fn func(key string, v value) error) error {
	p := &parser{b: b}
	p.ws()
	if !p.eat('{') {
		return p.errorf("want a JSON object")
	}
	p.ws()
	if p.eat('}') {
		return p.end()
	}
	for {
		p.ws()
		if p.peek() != '"' {
			return p.errorf("want a field name in quotes")
		}
		key, err := p.string()
		if err != nil {
			return err
		}
		p.ws()
		if !p.eat(':') {
			return p.errorf("want ':' after field %q", key)
		}
		p.ws()
		var v value
		switch c := p.peek(); {
		case c == '"':
			s, err := p.string()
			if err != nil {
				return err
			}
			v = value{str: s, isStr: true}
		case c == '-' || c >= '0' && c <= '9':
			n, err := p.number(key)
			if err != nil {
				return err
			}
			v = value{num: n}
		case c == 0:
			return errors.New("incomplete JSON object")
		default:
			return fmt.Errorf("field %q: want a string or an integer", key)
		}
		if err := fn(key, v); err != nil {
			return err
		}
		p.ws()
		if p.eat('}') {
			return p.end()
		}
		if !p.eat(',') {
			if p.i >= len(p.b) {
				return errors.New("incomplete JSON object")
			}
			return p.errorf("want ',' or '}'")
		}
	}
}

type parser struct {
	b []byte
	i int
}

func (p *parser) errorf(format string, args ...any) error {
	if p.i >= len(p.b) {
		return errors.New("incomplete JSON object")
	}
	return fmt.Errorf("column %d: %s", p.i+1, fmt.Sprintf(format, args...))
}

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\r', '\n':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) peek() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func (p *parser) eat(c byte) bool {
	if p.peek() == c {
		p.i++
		return true
	}
	return false
}

func (p *parser) end() error {
	p.ws()
	if p.i != len(p.b) {
		return p.errorf("more than one JSON value on the line")
	}
	return nil
}

func (p *parser) number(key string) (int64, error) {
	start := p.i
	if p.peek() == '-' {
		p.i++
	}
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	if c := p.peek(); c == '.' || c == 'e' || c == 'E' {
		return 0, fmt.Errorf("field %q: want an integer, got a fraction", key)
	}
	s := string(p.b[start:p.i])
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || (len(s) > 1 && s[0] == '0') || (len(s) > 2 && s[:2] == "-0") {
		return 0, fmt.Errorf("field %q: %q is not an int64", key, s)
	}
	return n, nil
}

// string reads a JSON string at p.i (which is '"').
func (p *parser) string() (string, error) {
	p.i++
	start := p.i
	// Fast path: no escapes.
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c == '"' {
			s := p.b[start:p.i]
			p.i++
			if !utf8.Valid(s) {
				return "", p.errorf("string is not valid UTF-8")
			}
			return string(s), nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		p.i++
	}
	buf := append([]byte(nil), p.b[start:p.i]...)
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			if !utf8.Valid(buf) {
				return "", p.errorf("string is not valid UTF-8")
			}
			return string(buf), nil
		case c < 0x20:
			return "", p.errorf("control character in a string")
		case c != '\\':
			buf = append(buf, c)
			p.i++
			continue
		}
		p.i++
		if p.i >= len(p.b) {
			break
		}
		e := p.b[p.i]
		p.i++
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", p.errorf("bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if p.i+1 < len(p.b) && p.b[p.i] == '\\' && p.b[p.i+1] == 'u' {
					p.i += 2
					r2, ok = p.hex4()
					if !ok {
						return "", p.errorf("bad \\u escape")
					}
				}
				r = utf16.DecodeRune(r, r2)
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", p.errorf("bad escape \\%c", e)
		}
	}
	return "", errors.New("incomplete JSON object")
}

func (p *parser) hex4() (rune, bool) {
	if p.i+4 > len(p.b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(p.b[p.i:p.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.i += 4
	return rune(v), true
}
