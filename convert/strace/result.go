package strace

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/iotrace/iotrace/convert/internal/textutil"
)

// call is a complete call: its arguments and result.
type call struct {
	name      string
	args      []string
	ret       int64 // the result, -errno for an error
	known     bool  // false for "= ?"
	retPath   string
	decorated bool // the result carried a -y <path>
	dur       int64
}

// parseCall reads "ARGS) = RET [ERRNO (text)] [<DUR>]": body is what
// follows "NAME(".
func parseCall(name, body string) (*call, error) {
	args, rest, err := splitArgs(body)
	if err != nil {
		return nil, err
	}
	c := &call{name: name, args: args}
	rest = strings.TrimLeft(rest, " ")
	if !strings.HasPrefix(rest, "=") {
		return nil, errors.New(`no " = RESULT" after the arguments`)
	}
	rest = strings.TrimLeft(rest[1:], " ")
	// -T: the time spent in the call, last, in <seconds>.
	if strings.HasSuffix(rest, ">") {
		if i := strings.LastIndex(rest, " <"); i >= 0 {
			d, ok := textutil.Seconds(rest[i+2 : len(rest)-1])
			switch {
			case ok:
				c.dur = d
				rest = strings.TrimRight(rest[:i], " ")
			case durationLike(rest[i+2 : len(rest)-1]):
				// Not a path decoration: a time strace cannot have
				// written (<nan>, <-1.5>, centuries).
				return nil, fmt.Errorf("duration <%s>: want the seconds strace -T writes, 0 to %d", rest[i+2:len(rest)-1], int64(1<<62)/1_000_000_000)
			}
		}
	}
	// The result: a number, maybe decorated (3</path>), or ?.
	var tok string
	j := 0
	for j < len(rest) && isDigit(rest[j]) {
		j++
	}
	if j > 0 && j < len(rest) && rest[j] == '<' {
		k := strings.IndexByte(rest[j:], '>')
		if k < 0 {
			return nil, errors.New("unterminated <…> decoration of the result")
		}
		p, ok := unescape(rest[j+1 : j+k])
		if !ok {
			return nil, errors.New("bad escape in the result's decoration")
		}
		c.retPath, c.decorated = p, true
		tok, rest = rest[:j], rest[j+k+1:]
		if strings.HasPrefix(rest, deletedMark) {
			c.retPath += " " + deletedMark
			rest = rest[len(deletedMark):]
		}
	} else {
		tok = rest
		if i := strings.IndexByte(rest, ' '); i >= 0 {
			tok = rest[:i]
		}
		rest = rest[len(tok):]
	}
	rest = strings.TrimLeft(rest, " ")
	if tok != "?" {
		v, ok := intArg(tok)
		if !ok {
			return nil, errors.New("result " + strconv.Quote(tok) + " is not a number")
		}
		c.ret, c.known = v, true
	}
	// An error: -1 ENOENT (No such file or directory), ? ERESTARTSYS (…).
	if rest != "" && rest[0] == 'E' {
		name := rest
		if i := strings.IndexByte(rest, ' '); i >= 0 {
			name = rest[:i]
		}
		if e, ok := errnos()[name]; ok {
			c.ret, c.known = -e, true
		} else if c.ret == -1 {
			return nil, errors.New("unknown errno " + strconv.Quote(name))
		}
	}
	return c, nil
}

// arg returns argument i, or "".
func (c *call) arg(i int) string {
	if i < len(c.args) {
		return c.args[i]
	}
	return ""
}

// durationLike reports whether s is meant as a number (of seconds), not
// the end of a path decoration.
func durationLike(s string) bool {
	if s == "" {
		return false
	}
	if c := s[0]; isDigit(c) || c == '-' || c == '+' || c == '.' {
		return true
	}
	switch strings.ToLower(s) {
	case "nan", "inf", "infinity":
		return true
	}
	return false
}
