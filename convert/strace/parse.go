package strace

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/iotrace/iotrace/convert/internal/textutil"
)

// lineKind is what a line of strace output says.
type lineKind uint8

const (
	kindCall       lineKind = iota + 1 // NAME(ARGS) = RET …
	kindUnfinished                     // NAME(ARGS… <unfinished ...>
	kindResumed                        // <... NAME resumed>…) = RET …
	kindSignal                         // --- SIGCHLD {…} ---
	kindExit                           // +++ exited with 0 +++, +++ killed by SIGKILL +++
	kindSuperseded                     // +++ superseded by execve in pid N +++
	kindMessage                        // strace's own messages
)

// record is one logical line of strace output.
type record struct {
	file   string
	line   int
	pid    int
	hasPID bool // the line named its process ([pid N] or a PID column)
	ts     int64
	hasTS  bool
	tod    bool // the timestamp is a time of day (-tt, -t)
	kind   lineKind
	name   string // the call's name
	// body: for a call, what follows "NAME("; for an unfinished call,
	// its arguments so far; for a resumed call, what follows "resumed>".
	body   string
	newPID int // superseded by execve in this pid
}

func (r *record) errorf(format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", r.file, r.line, fmt.Sprintf(format, args...))
}

// lineReader reads the records of one file of strace output.
type lineReader struct {
	lines *textutil.Lines
	name  string
	pid   int // the process of a -ff file (PREFIX.PID), 0 if unknown
	line  int
	day   int64 // days added to -tt times after midnight passed
	last  int64
	next  *record // read ahead
	err   error
}

func newLineReader(r io.Reader, name string, pid int) *lineReader {
	return &lineReader{lines: textutil.NewLines(r, name), name: name, pid: pid}
}

// readLine reads one physical line without its end.
func (lr *lineReader) readLine() (string, error) {
	b, err := lr.lines.Next()
	lr.line = lr.lines.Line()
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// attachedMsg is the message strace -f writes on stderr when it attaches
// to a new process; on a shared stderr it may cut a line in two.
var attachedMsg = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`strace: Process [0-9]+ (attached|detached|suspended|resumed)$`)
})

// msgStart returns where strace's message that has "strace: " at i
// starts: strace names itself as it was run ("/usr/bin/strace: Process
// 12 attached"), so a path may come first.
func msgStart(s string, i int) int {
	j := i
	for j > 0 && pathByte(s[j-1]) {
		j--
	}
	k := strings.IndexByte(s[j:i], '/')
	if k < 0 {
		return i
	}
	k += j
	for k > j && s[k-1] == '.' {
		k-- // ./strace, ../bin/strace
	}
	return k
}

func pathByte(c byte) bool {
	return c == '/' || c == '.' || c == '_' || c == '-' || c == '+' || isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// read returns the next record, or io.EOF.
func (lr *lineReader) read() (*record, error) {
	if lr.next != nil {
		r := lr.next
		lr.next = nil
		return r, nil
	}
	if lr.err != nil {
		return nil, lr.err
	}
	for {
		s, err := lr.readLine()
		if err != nil {
			lr.err = err
			return nil, err
		}
		start := lr.line
		// A line cut by strace's own message goes on on the next line.
		for {
			loc := attachedMsg().FindStringIndex(s)
			if loc == nil {
				break
			}
			cut := msgStart(s, loc[0])
			if cut == 0 {
				break // a line of its own
			}
			more, err := lr.readLine()
			if err != nil {
				more = ""
			}
			s = s[:cut] + more
		}
		if strings.TrimSpace(s) == "" {
			continue
		}
		rec, err := lr.parse(s, start)
		if err != nil {
			lr.err = err
			return nil, err
		}
		if rec.kind == kindMessage {
			continue
		}
		return rec, nil
	}
}

// peek returns the next record without consuming it.
func (lr *lineReader) peek() (*record, error) {
	if lr.next == nil {
		r, err := lr.read()
		if err != nil {
			return nil, err
		}
		lr.next = r
	}
	return lr.next, nil
}

func (lr *lineReader) parse(s string, line int) (*record, error) {
	r := &record{file: lr.name, line: line, pid: lr.pid}
	s = strings.TrimLeft(s, " ")
	if isMessage(s) || (strings.HasPrefix(s, "[ Process PID=") && strings.HasSuffix(s, "]")) {
		r.kind = kindMessage
		return r, nil
	}
	// [pid N] or a PID column.
	if strings.HasPrefix(s, "[pid ") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return nil, r.errorf("unterminated [pid N]")
		}
		pid, err := strconv.Atoi(strings.TrimSpace(s[5:end]))
		if err != nil || pid <= 0 {
			return nil, r.errorf("bad [pid N] prefix %q", s[:end+1])
		}
		r.pid, r.hasPID = pid, true
		s = strings.TrimLeft(s[end+1:], " ")
	} else if i := strings.IndexByte(s, ' '); i > 0 && allDigits(s[:i]) {
		pid, err := strconv.Atoi(s[:i])
		if err != nil || pid <= 0 {
			return nil, r.errorf("bad PID column %q", s[:i])
		}
		r.pid, r.hasPID = pid, true
		s = strings.TrimLeft(s[i:], " ")
	}
	// -ttt (seconds.fraction since the epoch), -tt/-t (time of day).
	if i := strings.IndexByte(s, ' '); i > 0 && (isDigit(s[0])) {
		ts, ok := lr.timestamp(s[:i])
		if !ok {
			return nil, r.errorf("bad timestamp %q (strace -ttt, -tt or -t)", s[:i])
		}
		r.ts, r.hasTS, r.tod = ts, true, strings.IndexByte(s[:i], ':') >= 0
		s = strings.TrimLeft(s[i:], " ")
	}
	switch {
	case strings.HasPrefix(s, "--- "):
		r.kind = kindSignal
		return r, nil
	case strings.HasPrefix(s, "+++ "):
		if m := strings.TrimPrefix(s, "+++ superseded by execve in pid "); m != s {
			pid, err := strconv.Atoi(strings.TrimSuffix(m, " +++"))
			if err != nil {
				return nil, r.errorf("bad line %q", s)
			}
			r.kind, r.newPID = kindSuperseded, pid
			return r, nil
		}
		if strings.HasPrefix(s, "+++ exited with ") || strings.HasPrefix(s, "+++ killed by ") {
			r.kind, r.body = kindExit, s
			return r, nil
		}
		return nil, r.errorf("unknown +++ line %q", s)
	case strings.HasPrefix(s, "<... "):
		end := strings.Index(s, " resumed>")
		switch {
		case strings.HasPrefix(s, "<... resumed>"):
			// Old strace: the name is left out.
			r.kind, r.body = kindResumed, s[len("<... resumed>"):]
		case end < 0:
			return nil, r.errorf("bad resumed line %q", clip(s))
		default:
			r.kind, r.name, r.body = kindResumed, s[5:end], s[end+len(" resumed>"):]
		}
		return r, nil
	case isMessage(s):
		r.kind = kindMessage
		return r, nil
	}
	open := strings.IndexByte(s, '(')
	if open <= 0 || !callName(s[:open]) {
		return nil, r.errorf("not a line of strace output: %q (run strace with -o FILE so that the program's own output stays out)", clip(s))
	}
	r.name, r.body = s[:open], s[open+1:]
	r.kind = kindCall
	if b, ok := strings.CutSuffix(r.body, "<unfinished ...>"); ok {
		r.kind, r.body = kindUnfinished, strings.TrimRight(b, " ")
	} else if i := strings.LastIndex(r.body, "<pid changed to "); i >= 0 && strings.HasSuffix(r.body, " ...>") {
		// An execve by a thread other than the leader: it resumes under
		// the leader's PID, after "+++ superseded by execve in pid …".
		r.kind, r.body = kindUnfinished, strings.TrimRight(r.body[:i], " ")
	}
	return r, nil
}

// isMessage reports whether s is one of strace's own messages:
// "strace: …" or "/usr/bin/strace: …".
func isMessage(s string) bool {
	first, _, _ := strings.Cut(s, " ")
	return strings.HasSuffix(first, "strace:")
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

// callName reports whether s can name a system call ("openat", "_llseek",
// "syscall_0x1b6", "????").
func callName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c) || c == '_' || c == '?') {
			return false
		}
	}
	return true
}

// maxDays bounds the days a -tt log may span (a century): the days are
// counted when times of day go back, and no run lasts longer.
const maxDays = 36500

// timestamp reads -ttt ("1700000000.123456", up to ns) or -tt/-t
// ("12:34:56.123456", "12:34:56") as ns. Times of day count from the
// midnight before the first line; a time lower by more than 12 hours
// than the one before starts the next day.
func (lr *lineReader) timestamp(s string) (int64, bool) {
	if strings.IndexByte(s, ':') < 0 {
		return textutil.Seconds(s)
	}
	hms, frac, _ := strings.Cut(s, ".")
	parts := strings.Split(hms, ":")
	if len(parts) != 3 {
		return 0, false
	}
	var t int64
	for i, p := range parts {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil || v < 0 || (i > 0 && v >= 60) || (i == 0 && v >= 24) {
			return 0, false
		}
		t = t*60 + v
	}
	f, ok := textutil.Fraction(frac)
	if !ok {
		return 0, false
	}
	ns := t*1e9 + f + lr.day*86400e9
	if ns < lr.last-12*3600e9 {
		if lr.day >= maxDays {
			return 0, false // a hostile log: times of day that go back again and again
		}
		lr.day++
		ns += 86400e9
	}
	lr.last = ns
	return ns, true
}
