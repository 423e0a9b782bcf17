package strace

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/state"
)

func read(t *testing.T, opts Options, ins ...Input) (*Reader, []trace.Event, error) {
	t.Helper()
	r := NewReader(ins, opts)
	evs, err := trace.ReadAll(r)
	return r, evs, err
}

func text(name, s string) Input { return Input{Name: name, R: strings.NewReader(s)} }

// line renders an event compactly for comparisons.
func line(r *Reader, e trace.Event) string {
	s := fmt.Sprintf("t%d %s", e.Thread, e.Op)
	if e.Path != 0 {
		s += " " + r.Path(e.Path)
	}
	if e.Path2 != 0 {
		s += " -> " + r.Path(e.Path2)
	}
	if e.FD != 0 {
		s += fmt.Sprintf(" fd=%d", e.FD)
	}
	if e.Op.Dir() != trace.DirNone || e.Op == trace.OpLseek {
		s += fmt.Sprintf(" off=%d size=%d", e.Offset, e.Size)
	}
	return s + fmt.Sprintf(" = %d", e.Ret)
}

// A stderr capture of strace -f -ttt -T -y by hand: [pid N] prefixes
// once a second process exists, a child that runs before its clone
// returns, strace's message cutting a line, unfinished and resumed
// halves, signals, exits, errors, escaped decorations.
const stderrLog = `1700000000.000000 execve("/bin/prog", ["prog", "a"], 0x7ffd /* 3 vars */) = 0 <0.000100>
1700000000.000100 openat(AT_FDCWD</home/u>, "in put", O_RDONLY) = 3</home/u/in put> <0.000010>
1700000000.000200 read(3</home/u/in put>, "abc"..., 4096) = 4096 <0.000020>
1700000000.000300 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD/usr/bin/strace: Process 501 attached
 <unfinished ...>
[pid   501] 1700000000.000400 read(3</home/u/in put>, "x", 10) = 10 <0.000010>
[pid   500] 1700000000.000410 <... clone resumed>, child_tidptr=0x7f) = 501 <0.000200>
[pid   500] 1700000000.000500 read(3</home/u/in put>,  <unfinished ...>
[pid   501] 1700000000.000600 write(1</dev/pts/0>, "hi\n", 3) = 3 <0.000005>
[pid   501] 1700000000.000700 openat(AT_FDCWD</home/u>, "o>ut", O_WRONLY|O_CREAT|O_APPEND, 0600) = 4</home/u/o\76ut> <0.000010>
[pid   501] 1700000000.000800 write(4</home/u/o\76ut>, "yy", 2) = 2 <0.000003>
[pid   501] 1700000000.000900 +++ killed by SIGKILL +++
[pid   500] 1700000000.001000 <... read resumed>"defg", 100) = 4 <0.000500>
./strace: Process 999 detached
1700000000.001100 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_KILLED, si_pid=501, si_uid=0, si_status=SIGKILL} ---
1700000000.001200 openat(AT_FDCWD</home/u>, "nope", O_RDONLY) = -1 ENOENT (No such file or directory) <0.000004>
1700000000.001300 read(3</home/u/in put>, 0x7f, 8) = ? ERESTARTSYS (To be restarted if SA_RESTART is set) <0.000004>
1700000000.001400 lseek(3</home/u/in put>, 0, SEEK_CUR) = 4110 <0.000002>
1700000000.001500 exit_group(0)                = ?
1700000000.001600 +++ exited with 0 +++
`

func TestStderrLog(t *testing.T) {
	r, evs, err := read(t, Options{}, text("err.txt", stderrLog))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, line(r, e))
	}
	want := []string{
		"t0 exec /bin/prog = 0",
		"t0 openat /home/u/in put fd=3 = 3",
		"t0 read /home/u/in put fd=3 off=0 size=4096 = 4096",
		// The child's first line came before the clone returned: it
		// waits for the fork event, which it follows.
		"t0 fork = 1",
		"t1 read /home/u/in put fd=3 off=4096 size=10 = 10", // the child shares the description
		"t1 openat /home/u/o>ut fd=4 = 4",
		"t1 write /home/u/o>ut fd=4 off=0 size=2 = 2",
		"t1 exit = 137", // killed by SIGKILL
		"t0 read /home/u/in put fd=3 off=4106 size=100 = 4",
		"t0 openat /home/u/nope = -2",
		"t0 read /home/u/in put fd=3 off=4110 size=8 = -512",
		"t0 lseek /home/u/in put fd=3 off=0 size=0 = 4110",
		"t0 exit = 0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The fork starts when the clone did, before the child's first call;
	// its flags are the clone's (none of those it keeps).
	if e := evs[3]; e.Start != 300e3 || e.Dur != 200e3 || e.Flags != 0 || evs[4].Start <= e.Start {
		t.Errorf("fork %+v, child's first call at %d", e, evs[4].Start)
	}
	// The resumed read starts at its first half and lasts what -T says.
	if e := evs[8]; e.Start != 500e3 || e.Dur != 500e3 {
		t.Errorf("resumed read: start %d dur %d", e.Start, e.Dur)
	}
	st := r.Stats()
	if st.Signals != 1 || st.Exits != 2 || st.Killed != 1 || st.Unchosen != 1 || st.Processes != 2 {
		t.Errorf("stats %+v", st)
	}
	m := r.Meta()
	if m.Epoch != 1700000000e9 || fmt.Sprint(m.Command) != "[prog a]" || !strings.Contains(m.Clock, "-ttt") {
		t.Errorf("meta %+v", m)
	}
	notes := strings.Join(r.Notes(), "\n")
	for _, want := range []string{"calls outside the event model left out (", "pipes, sockets", "O_APPEND writes"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
}

// TestFFMerge: strace -ff files merge in time order, and give what the
// single stderr capture of the same program gives.
func TestFFMerge(t *testing.T) {
	open := func(name string, pid int) Input {
		f, err := os.Open(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return Input{Name: name, R: f, PID: pid}
	}
	rf, ff, err := read(t, Options{}, open("allcalls-ff.21715", 21715), open("allcalls-ff.21716", 21716), open("allcalls-ff.21717", 21717))
	if err != nil {
		t.Fatal(err)
	}
	rs, se, err := read(t, Options{}, open("allcalls-stderr.txt", 0))
	if err != nil {
		t.Fatal(err)
	}
	strip := func(r *Reader, evs []trace.Event) []string {
		var out []string
		for _, e := range evs {
			out = append(out, line(r, e))
		}
		return out
	}
	a, b := strip(rf, ff), strip(rs, se)
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Errorf("-ff:\n%s\n\nstderr:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	ops := map[trace.Op]int{}
	threads := map[uint32]bool{}
	for _, e := range ff {
		ops[e.Op]++
		threads[e.Thread] = true
	}
	// Every call of the program's list, from three threads.
	for _, op := range []trace.Op{trace.OpPwritev2, trace.OpPreadv2, trace.OpOpenat2, trace.OpCloseRange, trace.OpStatx, trace.OpRenameat2, trace.OpDup3, trace.OpFcntl, trace.OpCreat, trace.OpMkdirat, trace.OpUnlinkat, trace.OpTruncate} {
		if ops[op] == 0 {
			t.Errorf("no %s", op)
		}
	}
	if len(threads) != 3 {
		t.Errorf("threads %v", threads)
	}
}

func TestAll(t *testing.T) {
	_, evs, err := read(t, Options{All: true}, text("x", stderrLog))
	if err != nil {
		t.Fatal(err)
	}
	// The write to the terminal too, after the inherit event of its
	// descriptor.
	if len(evs) != 15 || evs[5].Op != trace.OpInherit || evs[5].FD != 1 || evs[5].Offset != -1 || evs[6].Op != trace.OpWrite {
		t.Errorf("%d events with All", len(evs))
	}
}

func TestFormats(t *testing.T) {
	// -tt times of day across midnight, a PID column, no -y, -T absent.
	log := `100 23:59:59.900000 openat(AT_FDCWD, "/d/f", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 3
100 00:00:00.100000 write(3, "x", 1) = 1
100 00:00:00.200000 chdir("/d/sub") = 0
100 00:00:00.300000 mkdir("rel", 0777) = 0
`
	r, evs, err := read(t, Options{}, text("x", log))
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 || evs[1].Start-evs[0].Start != 200e6 || r.Path(evs[2].Path) != "/d/sub/rel" || evs[2].Mode != 0o777 {
		t.Errorf("%+v", evs)
	}
	if m := r.Meta(); !strings.Contains(m.Clock, "time of day") || m.Epoch != 0 {
		t.Errorf("meta %+v", m)
	}
	// No times, no PIDs, relative paths with the directory unknown.
	r, evs, err = read(t, Options{}, text("x", `open("rel/f", O_RDONLY) = 3`+"\n"+`read(3, "", 10) = 0`+"\n"))
	if err != nil || len(evs) != 2 || r.Path(evs[1].Path) != "rel/f" || r.Stats().Relative != 1 {
		t.Errorf("%v %+v", err, evs)
	}
	if n := strings.Join(r.Notes(), "\n"); !strings.Contains(n, "no timestamps") || !strings.Contains(n, "relative") {
		t.Errorf("notes %q", n)
	}
}

func TestErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"hello world\n", `x.txt:1: not a line of strace output: "hello world"`},
		{"1700000000.0 openat(AT_FDCWD, \"a\", O_RDONLY\n", "x.txt:1: openat: no closing parenthesis"},
		{"1.0 x() = 0\n1.1 read(3, \"a\", 1) = zz\n", `x.txt:2: read: result "zz" is not a number`},
		{"1.0 openat(AT_FDCWD, \"a, O_RDONLY) = 3\n", "x.txt:1: openat: unterminated string"},
		{"1.0 read(3</a, \"a\", 1) = 1\n", "x.txt:1: read: unterminated <…> decoration"},
		{"1.0 read(3, \"a\", 1) = -1 EWHAT (?)\n", `x.txt:1: read: unknown errno "EWHAT"`},
		{"[pid x] 1.0 read(3, \"a\", 1) = 1\n", "x.txt:1: bad [pid N] prefix"},
		{"99:99:99 read(3, \"a\", 1) = 1\n", `x.txt:1: bad timestamp "99:99:99"`},
		{"1.0 +++ frobbed +++\n", "x.txt:1: unknown +++ line"},
		{"1.0 read(x, \"a\", 1) = 1\n", `x.txt:1: read: descriptor "x"`},
		{"1.0 open(0x1234, O_RDONLY) = 3\n", `x.txt:1: open: path argument "0x1234" is not a string`},
		{"1.0 lseek(3, 0, SEEK_NOWHERE) = 0\n", `x.txt:1: lseek: whence "SEEK_NOWHERE"`},
		// Durations strace -T cannot have written are refused, not 0.
		{"1.0 read(3, \"a\", 1) = 1 <nan>\n", "x.txt:1: read: duration <nan>: want the seconds strace -T writes, 0 to 4611686018"},
		{"1.0 read(3, \"a\", 1) = 1 <-1.5>\n", "x.txt:1: read: duration <-1.5>"},
		{"1.0 read(3, \"a\", 1) = 1 <99999999999999999999.0>\n", "x.txt:1: read: duration <99999999999999999999.0>"},
		{"1.0 read(3, \"a\", 1) = 1 <Inf>\n", "x.txt:1: read: duration <Inf>"},
		{"1.0 read(3, \"a\", 1) = 1 <0.1234567891>\n", "x.txt:1: read: duration <0.1234567891>"},
		// Paths and lines are bounded as in every text importer.
		{"1.0 openat(AT_FDCWD, \"/" + strings.Repeat("q", 4095) + "\", O_RDONLY) = 3 <0.1>\n", "x.txt:1: openat: path of 4096 bytes: a path holds at most 4095 bytes"},
		{"1.0 read(3</" + strings.Repeat("q", 5000) + ">, \"a\", 1) = 1\n", "x.txt:1: read: path of 5001 bytes"},
		{"1.0 write(1, \"" + strings.Repeat("w", 1<<20) + "\", 1048576) = 1048576\n", "x.txt:1: line longer than 1048576 bytes (the limit of every text importer; it is fixed)"},
	} {
		_, _, err := read(t, Options{}, text("x.txt", c.in))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
}

var oneLine = regexp.MustCompile(`^[^\n]+:[0-9]+: [^\n]+$`)

// TestDecorationLikeDuration: a -y decoration that ends like a duration
// is a path, and a duration after it is read.
func TestDecorationLikeDuration(t *testing.T) {
	_, evs, err := read(t, Options{All: true}, text("x.txt", "1.0 openat(AT_FDCWD, \"/a <b>\", O_RDONLY) = 3</a <b>> <0.000100>\n"))
	if err != nil || len(evs) != 1 || evs[0].Dur != 100_000 {
		t.Fatalf("%v %+v", err, evs)
	}
}

// FuzzReader: any input reads to its end or stops with one error line
// naming the file and line; never a panic.
func FuzzReader(f *testing.F) {
	f.Add(stderrLog)
	for _, name := range []string{"prog-o.txt", "allcalls-ff.21715", "allcalls-stderr.txt", "subshell.strace", "tar.strace", "cp.strace", "links.strace"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		// Seeds of a few hundred lines at most keep the fuzzer quick.
		lines := strings.SplitAfter(string(b), "\n")
		for i := 0; i < len(lines); i += 40 {
			f.Add(strings.Join(lines[i:min(i+40, len(lines))], ""))
		}
	}
	f.Add("1.0 close_range(3, ~0U, CLOSE_RANGE_UNSHARE) = 0\n")
	f.Add("1 1.0 clone3({flags=CLONE_VM|CLONE_FILES, exit_signal=0} => {parent_tid=[2]}, 88) = 2\n2 1.1 read(3</x>, \"\", 1) = 0\n")
	f.Add("1 1.0 vfork( <unfinished ...>\n2 1.1 execve(\"/x\", [], 0x1 <pid changed to 1 ...>\n1 1.2 +++ superseded by execve in pid 2 +++\n1 1.3 <... vfork resumed>) = 2\n2 1.4 +++ killed by SIGRT_3 +++\n")
	f.Fuzz(func(t *testing.T, in string) {
		r := NewReader([]Input{{Name: "f.txt", R: strings.NewReader(in)}}, Options{All: true})
		// The events are followed as a reader of the trace follows them.
		ns := state.NewNamespace(r.Path)
		fl := state.New[struct{}, struct{}](ns)
		buf := make([]trace.Event, 7)
		for {
			n, err := r.ReadEvents(buf)
			for i, e := range buf[:n] {
				if !e.Op.Known() {
					t.Fatalf("unknown op %v", e.Op)
				}
				fl.Apply(&buf[i])
			}
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				if !oneLine.MatchString(err.Error()) {
					t.Fatalf("error %q is not one line naming file and line", err)
				}
				return
			}
		}
	})
}

// TestStderrLogThreadEndsLate: strace's stderr output drops the [pid N]
// prefix once it traces one task only, and a thread's exit line can come
// after its process's next, unprefixed calls: those are the first
// process's (as its threads left), not a process the log never showed.
func TestStderrLogThreadEndsLate(t *testing.T) {
	const log = `1700000000.000100 execve("/bin/prog", ["prog"], 0x7ffd /* 1 var */) = 0 <0.000100>
1700000000.000200 openat(AT_FDCWD</w>, "f", O_WRONLY|O_CREAT, 0644) = 3</w/f> <0.000010>
1700000000.000300 clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM|CLONE_SETTLS|CLONE_PARENT_SETTID|CLONE_CHILD_CLEARTID, child_tid=0x7f, parent_tid=0x7f, exit_signal=0, stack=0x7f, stack_size=0x7fff00, tls=0x7f} => {parent_tid=[601]}, 88) = 601 <0.000050>
[pid   601] 1700000000.000400 write(3</w/f>, "ab", 2) = 2 <0.000010>
[pid   600] 1700000000.000450 futex(0x7f, FUTEX_WAIT_BITSET|FUTEX_CLOCK_REALTIME, 601, NULL, FUTEX_BITSET_MATCH_ANY <unfinished ...>
[pid   601] 1700000000.000500 exit(0)           = ?
1700000000.000600 <... futex resumed>)   = 0 <0.000150>
1700000000.000700 write(3</w/f>, "cde", 3) = 3 <0.000010>
[pid   601] 1700000000.000650 +++ exited with 0 +++
1700000000.000800 close(3</w/f>)          = 0 <0.000010>
1700000000.000900 exit_group(0)           = ?
1700000000.001000 +++ exited with 0 +++
`
	_, _, got := lines(t, Options{}, log)
	wantLines(t, got,
		"t0 exec /bin/prog = 0",
		"t0 openat /w/f fd=3 = 3",
		"t0 clone = 1",
		"t1 write /w/f fd=3 off=0 size=2 = 2",
		"t0 write /w/f fd=3 off=2 size=3 = 3", // before the thread's exit line
		"t1 exit = 0",
		"t0 close /w/f fd=3 = 0",
		"t0 exit = 0",
	)
}

// TestTmpfileLink: a file made with O_TMPFILE gets its name by a link of
// /proc/self/fd/N that follows it, and glibc's fstat is
// fstatat(fd, "", AT_EMPTY_PATH): both are calls on descriptor N, with
// no Path, as the captures write them.
func TestTmpfileLink(t *testing.T) {
	const log = `100 openat(AT_FDCWD</d>, ".", O_RDWR|O_CLOEXEC|O_TMPFILE, 0644) = 3</d/#1234>(deleted)
100 write(3</d/#1234>(deleted), "abc", 3) = 3
100 newfstatat(3</d/#1234>(deleted), "", {st_mode=S_IFREG|0644, st_size=3, ...}, AT_EMPTY_PATH) = 0
100 linkat(AT_FDCWD</d>, "/proc/self/fd/3", AT_FDCWD</d>, "named.txt", AT_SYMLINK_FOLLOW) = 0
100 linkat(AT_FDCWD</d>, "/proc/self/fdinfo/3", AT_FDCWD</d>, "other.txt", AT_SYMLINK_FOLLOW) = -1 EPERM (Operation not permitted)
100 close(3</d/named.txt>) = 0
`
	r, evs, err := read(t, Options{}, text("s.txt", log))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		if e.Op == trace.OpFstatat || e.Op == trace.OpLinkat {
			got = append(got, line(r, e))
		}
		if e.Op == trace.OpFstatat && (e.Size != 3 || e.Flags&trace.SizeSeen == 0) {
			t.Errorf("fstatat: size %d, flags %#x; want the 3 bytes st_size shows, SizeSeen", e.Size, e.Flags)
		}
	}
	want := []string{
		"t0 fstatat fd=3 = 0",
		"t0 linkat -> /d/named.txt fd=3 = 0",
		"t0 linkat /proc/self/fdinfo/3 -> /d/other.txt = -1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
