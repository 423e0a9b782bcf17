package strace

import (
	"errors"
	"strconv"
	"strings"
)

// splitArgs splits the arguments of a call: s starts just after the
// opening parenthesis. It returns the top-level arguments (trimmed) and
// the rest of s after the closing parenthesis. Strings ("…" with
// escapes), brackets of every kind and -y's <path> decorations (which may
// hold commas and parentheses) are kept whole.
func splitArgs(s string) (args []string, rest string, err error) {
	depth := 0
	start := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			j, ok := skipString(s, i)
			if !ok {
				return nil, "", errors.New("unterminated string")
			}
			i = j - 1
		case '<':
			// A decoration follows a descriptor number or AT_FDCWD; any
			// other < is an ordinary character.
			if i > 0 && (isDigit(s[i-1]) || strings.HasSuffix(s[:i], "AT_FDCWD")) {
				j := strings.IndexByte(s[i:], '>')
				if j < 0 {
					return nil, "", errors.New("unterminated <…> decoration")
				}
				i += j
			}
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			if depth == 0 {
				if c != ')' {
					return nil, "", errors.New("unbalanced brackets")
				}
				if a := strings.TrimSpace(s[start:i]); a != "" || len(args) > 0 {
					args = append(args, a)
				}
				return args, s[i+1:], nil
			}
			depth--
		case ',':
			if depth == 0 {
				args = append(args, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return nil, "", errors.New("no closing parenthesis")
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// skipString returns the index just after the string that starts at
// s[i] == '"', past a "..." that marks it truncated.
func skipString(s string, i int) (int, bool) {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			j++
			if strings.HasPrefix(s[j:], "...") {
				j += 3
			}
			return j, true
		}
	}
	return 0, false
}

// unquote decodes a string argument: "…" with strace's escapes, possibly
// followed by ... (truncated). NULL and addresses give ok = false.
func unquote(a string) (s string, truncated, ok bool) {
	if !strings.HasPrefix(a, `"`) {
		return "", false, false
	}
	if strings.HasSuffix(a, `"...`) {
		truncated = true
		a = a[:len(a)-3]
	}
	if len(a) < 2 || a[len(a)-1] != '"' {
		return "", false, false
	}
	s, ok = unescape(a[1 : len(a)-1])
	return s, truncated, ok
}

// unescape decodes strace's escapes: \n \t \r \v \f \\ \" \xHH and octal
// \N, \NN, \NNN.
func unescape(s string) (string, bool) {
	if !strings.ContainsRune(s, '\\') {
		return s, true
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b = append(b, c)
			continue
		}
		i++
		if i == len(s) {
			return "", false
		}
		switch c = s[i]; c {
		case 'n':
			b = append(b, '\n')
		case 't':
			b = append(b, '\t')
		case 'r':
			b = append(b, '\r')
		case 'v':
			b = append(b, '\v')
		case 'f':
			b = append(b, '\f')
		case '\\', '"', '\'', '<', '>', '|', ' ':
			b = append(b, c)
		case 'x':
			if i+2 >= len(s) {
				return "", false
			}
			v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil {
				return "", false
			}
			b = append(b, byte(v))
			i += 2
		default:
			if c < '0' || c > '7' {
				return "", false
			}
			v := 0
			n := 0
			for n < 3 && i < len(s) && s[i] >= '0' && s[i] <= '7' {
				v = v*8 + int(s[i]-'0')
				i++
				n++
			}
			i--
			if v > 255 {
				return "", false
			}
			b = append(b, byte(v))
		}
	}
	return string(b), true
}

// fdArg reads a descriptor argument: "3", "3</path>", "AT_FDCWD",
// "AT_FDCWD</cwd>". path is the -y decoration, if any.
func fdArg(a string) (fd int32, path string, decorated, ok bool) {
	num := a
	deleted := strings.HasSuffix(a, ">"+deletedMark)
	a = strings.TrimSuffix(a, deletedMark)
	if i := strings.IndexByte(a, '<'); i >= 0 && strings.HasSuffix(a, ">") {
		num = a[:i]
		p, good := unescape(a[i+1 : len(a)-1])
		if !good {
			return 0, "", false, false
		}
		path, decorated = p, true
		if deleted {
			path += " " + deletedMark
		}
	}
	if num == "AT_FDCWD" {
		return atFDCWD, path, decorated, true
	}
	v, err := strconv.ParseInt(num, 10, 32)
	if err != nil {
		return 0, "", false, false
	}
	return int32(v), path, decorated, true
}

const atFDCWD = -100

// deletedMark follows the decoration of a descriptor whose file was
// removed (strace 6: 3</path>(deleted)); older versions put it inside the
// brackets, after a space (3</path (deleted)>), the form the reader
// keeps.
const deletedMark = "(deleted)"

// intArg reads an integer in decimal, hex (0x) or octal (0…).
func intArg(a string) (int64, bool) {
	a = strings.TrimSpace(a)
	neg := strings.HasPrefix(a, "-")
	u := strings.TrimPrefix(a, "-")
	var v uint64
	var err error
	switch {
	case strings.HasPrefix(u, "0x"):
		v, err = strconv.ParseUint(u[2:], 16, 64)
	case len(u) > 1 && u[0] == '0':
		v, err = strconv.ParseUint(u[1:], 8, 64)
	default:
		v, err = strconv.ParseUint(u, 10, 64)
	}
	if err != nil {
		return 0, false
	}
	if neg {
		return -int64(v), true
	}
	return int64(v), true
}

// flagsArg reads "A|B|0x10" with names from table. Names the table does
// not hold are ignored (they carry no information the trace keeps).
func flagsArg(a string, table map[string]uint64) (uint64, bool) {
	a = strings.TrimSpace(a)
	if a == "" {
		return 0, false
	}
	var v uint64
	for _, p := range strings.Split(a, "|") {
		p = strings.TrimSpace(p)
		if n, ok := table[p]; ok {
			v |= n
			continue
		}
		if n, ok := intArg(p); ok {
			v |= uint64(n)
			continue
		}
		if p == "" {
			return 0, false
		}
	}
	return v, true
}

// field returns the value of name=… in a struct argument "{a=1, b=2}".
func field(a, name string) (string, bool) {
	a = strings.TrimSpace(a)
	if !strings.HasPrefix(a, "{") {
		return "", false
	}
	inner := a[1:]
	// "{…} => {…}" (clone3, the struct before and after the call): the
	// first struct.
	if i := strings.Index(inner, "} =>"); i >= 0 {
		inner = inner[:i+1]
	}
	inner = strings.TrimSuffix(inner, "}")
	parts, _, err := splitArgs(inner + ")")
	if err != nil {
		return "", false
	}
	for _, p := range parts {
		if k, v, ok := strings.Cut(p, "="); ok && strings.TrimSpace(k) == name {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// iovSum sums the iov_len of an iovec array argument. truncated is set
// when strace printed only part of the array.
func iovSum(a string) (sum int64, truncated, ok bool) {
	a = strings.TrimSpace(a)
	if !strings.HasPrefix(a, "[") || !strings.HasSuffix(a, "]") {
		return 0, false, false
	}
	elems, _, err := splitArgs(a[1:len(a)-1] + ")")
	if err != nil {
		return 0, false, false
	}
	for _, e := range elems {
		if e == "..." {
			truncated = true
			continue
		}
		v, has := field(e, "iov_len")
		if !has {
			return 0, false, false
		}
		n, good := intArg(v)
		if !good {
			return 0, false, false
		}
		sum += n
	}
	return sum, truncated, true
}

// arrayStrings reads an array of strings: ["a", "b"].
func arrayStrings(a string) []string {
	a = strings.TrimSpace(a)
	if !strings.HasPrefix(a, "[") || !strings.HasSuffix(a, "]") {
		return nil
	}
	elems, _, err := splitArgs(a[1:len(a)-1] + ")")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range elems {
		if s, truncated, ok := unquote(e); ok {
			if truncated {
				s += "..."
			}
			out = append(out, s)
		}
	}
	return out
}
