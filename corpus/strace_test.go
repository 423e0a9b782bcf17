package corpus

// An independent reader of `strace -f -y` output, for oracle (a): it knows
// nothing of iotrace's capture code, only strace's text. For every system
// call of the families the event model has, it finds the files the call
// names — the `<path>` decorations -y prints on descriptors, path
// arguments resolved against their directory descriptor or the process's
// working directory, the decoration on the descriptor an open returns —
// and counts the call, with the bytes it moved, when one of them is under
// the directory of the run.

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/iotrace/iotrace/trace"
)

// sysSpec says where a system call names its files.
type sysSpec struct {
	op    string   // the op trace.ParseOp knows it by ("" = the syscall's own name)
	fds   []int    // arguments that are descriptors of the file(s)
	paths [][2]int // (directory descriptor argument or -1, path argument)
	// fcntlDup: count only the commands of fcntl the captures record
	// (family dup): F_DUPFD and F_DUPFD_CLOEXEC, which make a descriptor,
	// and F_SETFD and F_SETFL, which change what the descriptor tables
	// follow (close-on-exec, O_APPEND); the others are no I/O.
	fcntlDup bool
}

// syscalls are the system calls of the op families oracle (a) compares,
// as x86-64 Linux names them. Not here, on purpose:
//   - close_range: it names descriptors by number range, which -y does
//     not decorate, so which of them were the run's files is unknown;
//   - sync: it names no file.
var syscalls = map[string]sysSpec{
	"open":            {paths: [][2]int{{-1, 0}}},
	"openat":          {paths: [][2]int{{0, 1}}},
	"openat2":         {paths: [][2]int{{0, 1}}},
	"creat":           {paths: [][2]int{{-1, 0}}},
	"close":           {fds: []int{0}},
	"read":            {fds: []int{0}},
	"pread64":         {fds: []int{0}},
	"readv":           {fds: []int{0}},
	"preadv":          {fds: []int{0}},
	"preadv2":         {fds: []int{0}},
	"write":           {fds: []int{0}},
	"pwrite64":        {fds: []int{0}},
	"writev":          {fds: []int{0}},
	"pwritev":         {fds: []int{0}},
	"pwritev2":        {fds: []int{0}},
	"copy_file_range": {fds: []int{0, 2}},
	"splice":          {fds: []int{0, 2}},
	"sendfile":        {fds: []int{0, 1}},
	"lseek":           {fds: []int{0}},
	"fsync":           {fds: []int{0}},
	"fdatasync":       {fds: []int{0}},
	"syncfs":          {fds: []int{0}},
	"ftruncate":       {fds: []int{0}},
	"fallocate":       {fds: []int{0}},
	"fadvise64":       {fds: []int{0}},
	"mmap":            {fds: []int{4}},
	"readahead":       {fds: []int{0}},
	"munmap":          {}, // by address: see countCalls
	"msync":           {},
	"dup":             {fds: []int{0}},
	"dup2":            {fds: []int{0, 1}}, // its target too: the call closes the file open there
	"dup3":            {fds: []int{0, 1}},
	"fcntl":           {fds: []int{0}, fcntlDup: true},
	"fstat":           {fds: []int{0}},
	"getdents":        {fds: []int{0}},
	"getdents64":      {fds: []int{0}},
	"stat":            {paths: [][2]int{{-1, 0}}},
	"lstat":           {paths: [][2]int{{-1, 0}}},
	"newfstatat":      {paths: [][2]int{{0, 1}}},
	"statx":           {paths: [][2]int{{0, 1}}},
	"access":          {paths: [][2]int{{-1, 0}}},
	"faccessat":       {op: "access", paths: [][2]int{{0, 1}}},
	"faccessat2":      {op: "access", paths: [][2]int{{0, 1}}},
	"readlink":        {paths: [][2]int{{-1, 0}}},
	"readlinkat":      {paths: [][2]int{{0, 1}}},
	"truncate":        {paths: [][2]int{{-1, 0}}},
	"unlink":          {paths: [][2]int{{-1, 0}}},
	"unlinkat":        {paths: [][2]int{{0, 1}}},
	"rmdir":           {paths: [][2]int{{-1, 0}}},
	"mkdir":           {paths: [][2]int{{-1, 0}}},
	"mkdirat":         {paths: [][2]int{{0, 1}}},
	"rename":          {paths: [][2]int{{-1, 0}, {-1, 1}}},
	"renameat":        {paths: [][2]int{{0, 1}, {2, 3}}},
	"renameat2":       {paths: [][2]int{{0, 1}, {2, 3}}},
	"link":            {paths: [][2]int{{-1, 0}, {-1, 1}}},
	"linkat":          {paths: [][2]int{{0, 1}, {2, 3}}},
	"symlink":         {paths: [][2]int{{-1, 1}}}, // argument 0 is the link's text, not a file
	"symlinkat":       {paths: [][2]int{{1, 2}}},
}

// recordedFcntl are the commands of fcntl the captures record.
var recordedFcntl = map[string]bool{"F_DUPFD": true, "F_DUPFD_CLOEXEC": true, "F_SETFD": true, "F_SETFL": true}

// bookkeeping are traced too, but only to follow working directories.
var bookkeeping = []string{"chdir", "fchdir", "clone", "clone3", "fork", "vfork"}

// straceExpr is the -e trace= argument.
func straceExpr() string {
	names := make([]string, 0, len(syscalls)+len(bookkeeping))
	for n := range syscalls {
		names = append(names, n)
	}
	names = append(names, bookkeeping...)
	sort.Strings(names)
	return strings.Join(names, ",")
}

// sysOp is the op of a traced system call.
func sysOp(name string) (trace.Op, bool) {
	spec, ok := syscalls[name]
	if !ok {
		return 0, false
	}
	n := name
	if spec.op != "" {
		n = spec.op
	}
	return trace.ParseOp(n)
}

// famCount is the calls and bytes of one op, or of one op family.
type famCount struct {
	Count int64
	Bytes int64
}

// straceCall is one complete system call of strace's output.
type straceCall struct {
	pid  int
	name string
	args []string
	ret  string // after "= ": "3</x>", "-1 ENOENT (…)", "0x7f…", "?"
	line string // the whole call, for the list of counted calls
}

// parseStraceFiles reads strace outputs and counts, per op (the op a
// system call is, by name: newfstatat is fstatat), the calls (and bytes
// moved) on files under dir. cwd is the working
// directory the traced program started in. With list, each counted call
// is written there, after its family.
func parseStraceFiles(files []string, dir, cwd string, list io.Writer) (map[string]famCount, error) {
	out := map[string]famCount{}
	for _, f := range files {
		calls, err := readStrace(f)
		if err != nil {
			return nil, err
		}
		countCalls(calls, dir, cwd, out, list)
	}
	return out, nil
}

// readStrace parses one output file into complete calls, joining
// "<unfinished ...>" with its "<... resumed>".
func readStrace(file string) ([]straceCall, error) {
	fh, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	var calls []straceCall
	pending := map[int]string{}
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	ln := 0
	for sc.Scan() {
		ln++
		line := sc.Text()
		pid := 0
		if i := strings.IndexByte(line, ' '); i > 0 {
			if n, err := strconv.Atoi(line[:i]); err == nil {
				pid, line = n, strings.TrimLeft(line[i+1:], " ")
			}
		}
		switch {
		case line == "", strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"):
			continue
		case strings.HasSuffix(line, " <unfinished ...>"):
			pending[pid] = strings.TrimSuffix(line, " <unfinished ...>")
			continue
		case strings.HasPrefix(line, "<... "):
			i := strings.Index(line, " resumed>")
			if i < 0 {
				return nil, fmt.Errorf("%s:%d: cannot read %q", file, ln, line)
			}
			head, ok := pending[pid]
			if !ok {
				continue // its start was before strace attached
			}
			delete(pending, pid)
			line = head + line[i+len(" resumed>"):]
		}
		c, ok := parseCall(line)
		if !ok {
			continue // "exit_group(0) = ?" and the like still parse; this is no call
		}
		c.pid, c.line = pid, line
		calls = append(calls, c)
	}
	return calls, sc.Err()
}

// parseCall splits `name(arg, arg) = ret`.
func parseCall(line string) (straceCall, bool) {
	open := strings.IndexByte(line, '(')
	if open <= 0 {
		return straceCall{}, false
	}
	name := line[:open]
	for _, r := range name {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return straceCall{}, false
		}
	}
	args, end, ok := splitArgs(line, open+1)
	if !ok {
		return straceCall{}, false
	}
	rest := strings.TrimLeft(line[end+1:], " ")
	if !strings.HasPrefix(rest, "=") {
		return straceCall{}, false
	}
	return straceCall{name: name, args: args, ret: strings.TrimSpace(rest[1:])}, true
}

// splitArgs splits the arguments starting at line[i] up to the closing
// parenthesis at depth 0; quoted strings, nested brackets, comments and
// -y decorations (`3</path>`) are kept whole.
func splitArgs(line string, i int) ([]string, int, bool) {
	var args []string
	depth := 0
	start := i
	for i < len(line) {
		c := line[i]
		switch {
		case c == '"':
			i++
			for i < len(line) && line[i] != '"' {
				if line[i] == '\\' {
					i++
				}
				i++
			}
		case c == '<' && i > start && isDecorated(line[start:i]):
			j := strings.IndexByte(line[i:], '>')
			if j < 0 {
				return nil, 0, false
			}
			i += j
		case c == '/' && i+1 < len(line) && line[i+1] == '*':
			j := strings.Index(line[i:], "*/")
			if j < 0 {
				return nil, 0, false
			}
			i += j + 1
		case c == '(' || c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		case c == ')':
			if depth == 0 {
				if a := strings.TrimSpace(line[start:i]); a != "" || len(args) > 0 {
					args = append(args, a)
				}
				return args, i, true
			}
			depth--
		case c == ',' && depth == 0:
			args = append(args, strings.TrimSpace(line[start:i]))
			start = i + 1
		}
		i++
	}
	return nil, 0, false
}

// isDecorated reports whether the argument text so far is a descriptor
// that -y decorates: a number or AT_FDCWD.
func isDecorated(s string) bool {
	s = strings.TrimSpace(s)
	if s == "AT_FDCWD" {
		return true
	}
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// fdPath is the path -y printed on a descriptor argument ("3</x>" → "/x";
// a file removed while open: "3</x>(deleted)").
func fdPath(arg string) (string, bool) {
	arg = strings.TrimSuffix(arg, "(deleted)")
	i := strings.IndexByte(arg, '<')
	if i < 0 || !strings.HasSuffix(arg, ">") {
		return "", false
	}
	p := unescape(arg[i+1 : len(arg)-1])
	if !strings.HasPrefix(p, "/") {
		return "", false // pipe:[…], socket:[…], anon_inode:…
	}
	return p, true
}

// strArg is a quoted string argument, unescaped.
func strArg(arg string) (string, bool) {
	if len(arg) < 2 || arg[0] != '"' {
		return "", false
	}
	end := len(arg) - 1
	for end > 0 && arg[end] != '"' {
		end-- // a truncated string ends in `"...`
	}
	if end == 0 {
		return "", false
	}
	return unescape(arg[1:end]), true
}

// unescape undoes strace's C-style escapes.
func unescape(s string) string {
	if !strings.ContainsRune(s, '\\') {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; {
		case c == 'n':
			b.WriteByte('\n')
		case c == 't':
			b.WriteByte('\t')
		case c == 'x' && i+2 < len(s):
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
			}
		case c >= '0' && c <= '7':
			j := i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			v, _ := strconv.ParseUint(s[i:j], 8, 8)
			b.WriteByte(byte(v))
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// retValue reads the result: its number (an address counts as 0 or more)
// and whether the call failed.
func retValue(ret string) (int64, bool) {
	f := strings.Fields(ret)
	if len(f) == 0 || f[0] == "?" {
		return 0, false
	}
	num := f[0]
	if i := strings.IndexByte(num, '<'); i >= 0 {
		num = num[:i]
	}
	if strings.HasPrefix(num, "0x") {
		return 0, true
	}
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, false
	}
	return v, true
}

// countCalls adds the calls on files under dir to out.
func countCalls(calls []straceCall, dir, rootCwd string, out map[string]famCount, list io.Writer) {
	cwd := map[int]string{}
	parent := map[int]int{}
	for _, c := range calls {
		switch c.name {
		case "clone", "clone3", "fork", "vfork":
			if v, ok := retValue(c.ret); ok && v > 0 {
				parent[int(v)] = c.pid
			}
		}
	}
	var cwdOf func(pid, depth int) string
	cwdOf = func(pid, depth int) string {
		if d, ok := cwd[pid]; ok {
			return d
		}
		d := rootCwd
		if p, ok := parent[pid]; ok && depth < 64 {
			d = cwdOf(p, depth+1)
		}
		cwd[pid] = d // a child starts where its parent is at its first call
		return d
	}
	under := func(p string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
	// The mappings of files under dir, by process and address: a munmap
	// or msync at such an address is a call on the file. A process finds
	// its parent's mappings (threads share them, fork copies them).
	mapped := map[int]map[string]bool{}
	mappedIn := func(pid int, addr string) (int, bool) {
		for d := 0; d < 64; d++ {
			if mapped[pid][addr] {
				return pid, true
			}
			p, ok := parent[pid]
			if !ok {
				break
			}
			pid = p
		}
		return 0, false
	}
	for _, c := range calls {
		// Every AT_FDCWD decoration says where the process is.
		for _, a := range c.args {
			if strings.HasPrefix(a, "AT_FDCWD<") {
				if p, ok := fdPath(a); ok {
					cwd[c.pid] = p
				}
			}
		}
		switch c.name {
		case "chdir":
			if v, ok := retValue(c.ret); ok && v == 0 && len(c.args) > 0 {
				if p, ok := strArg(c.args[0]); ok {
					cwd[c.pid] = resolve(cwdOf(c.pid, 0), p)
				}
			}
			continue
		case "fchdir":
			if v, ok := retValue(c.ret); ok && v == 0 && len(c.args) > 0 {
				if p, ok := fdPath(c.args[0]); ok {
					cwd[c.pid] = p
				}
			}
			continue
		}
		spec, ok := syscalls[c.name]
		if !ok {
			continue
		}
		hit := false
		switch c.name {
		case "mmap":
			if len(c.args) > 4 && strings.HasPrefix(c.ret, "0x") {
				if p, ok := fdPath(c.args[4]); ok && under(p) {
					if mapped[c.pid] == nil {
						mapped[c.pid] = map[string]bool{}
					}
					mapped[c.pid][c.ret] = true
				}
			}
		case "munmap", "msync":
			if len(c.args) > 0 {
				if pid, ok := mappedIn(c.pid, c.args[0]); ok {
					hit = true
					if v, ok := retValue(c.ret); c.name == "munmap" && ok && v == 0 && pid == c.pid {
						delete(mapped[pid], c.args[0]) // its own (a forked child's leaves its parent's)
					}
				}
			}
		}
		if spec.fcntlDup && (len(c.args) < 2 || !recordedFcntl[c.args[1]]) {
			continue
		}
		for _, i := range spec.fds {
			if i < len(c.args) {
				if p, ok := fdPath(c.args[i]); ok && under(p) {
					hit = true
				}
			}
		}
		for _, pa := range spec.paths {
			if pa[1] >= len(c.args) {
				continue
			}
			s, ok := strArg(c.args[pa[1]])
			if !ok {
				continue
			}
			base := cwdOf(c.pid, 0)
			if pa[0] >= 0 && pa[0] < len(c.args) {
				if p, ok := fdPath(c.args[pa[0]]); ok {
					base = p
				} else if !strings.HasPrefix(c.args[pa[0]], "AT_FDCWD") && !filepath.IsAbs(s) {
					continue // relative to a pipe, a socket or a bad descriptor: no file here
				}
			}
			if under(resolve(base, s)) {
				hit = true
			}
		}
		if !hit {
			continue
		}
		op, ok := sysOp(c.name)
		if !ok {
			continue
		}
		fam := op.Info().Name
		fc := out[fam]
		fc.Count++
		if v, ok := retValue(c.ret); ok && v > 0 && op.Dir() != trace.DirNone {
			fc.Bytes += v
		}
		out[fam] = fc
		if list != nil {
			fmt.Fprintf(list, "%-8s %d %s\n", op.Info().Family, c.pid, c.line)
		}
	}
}

// resolve is p against directory base, lexically (as the kernel would
// without symlinks; the runs' directories have none on their way).
func resolve(base, p string) string {
	if p == "" {
		return filepath.Clean(base) // AT_EMPTY_PATH: the descriptor itself
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(base, p)
}

// families sums per-op counts into their families.
func families(ops map[string]famCount) map[string]famCount {
	out := map[string]famCount{}
	for name, fc := range ops {
		fam := "unknown:" + name
		if op, ok := trace.ParseOp(name); ok {
			fam = op.Info().Family
		}
		f := out[fam]
		f.Count += fc.Count
		f.Bytes += fc.Bytes
		out[fam] = f
	}
	return out
}
