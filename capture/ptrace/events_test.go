//go:build linux && (amd64 || arm64)

package ptrace

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
	"golang.org/x/sys/unix"
)

// evq finds events in a recorded run.
type evq struct {
	t   *testing.T
	evs []trace.Event
	s   *trace.SliceSink
	dir string
}

func newEvq(t *testing.T, evs []trace.Event, s *trace.SliceSink, dir string) *evq {
	return &evq{t: t, evs: evs, s: s, dir: dir}
}

// rel is the path of id relative to the test directory ("" for none).
func (q *evq) rel(id trace.PathID) string {
	if id == 0 {
		return ""
	}
	return strings.TrimPrefix(q.s.Paths.Lookup(id), q.dir+"/")
}

// all returns the events of op whose path (relative) is path, or any
// path if path is "*".
func (q *evq) all(op trace.Op, path string) []trace.Event {
	var out []trace.Event
	for _, e := range q.evs {
		if e.Op == op && (path == "*" || q.rel(e.Path) == path) {
			out = append(out, e)
		}
	}
	return out
}

// one returns the only event of op on path, failing the test if there is
// not exactly one.
func (q *evq) one(op trace.Op, path string) trace.Event {
	q.t.Helper()
	evs := q.all(op, path)
	if len(evs) != 1 {
		q.t.Fatalf("%d %s events on %q, want 1\n%s", len(evs), op, path, dumpEvents(q.evs, q.s))
	}
	return evs[0]
}

// index returns the position of the first event that matches, or -1.
func (q *evq) index(match func(trace.Event) bool) int {
	for i, e := range q.evs {
		if match(e) {
			return i
		}
	}
	return -1
}

// checkProcessOrder checks that every thread but 0 appears first in the
// fork or clone event that made it, that no thread has an event after its
// exit, and that every thread exits once.
func checkProcessOrder(t *testing.T, res Result, evs []trace.Event, s *trace.SliceSink) {
	t.Helper()
	born := map[uint32]bool{0: true}
	exited := map[uint32]bool{}
	for _, e := range evs {
		if exited[e.Thread] {
			t.Errorf("event of thread %d after its exit: %s", e.Thread, formatEvent(e, s))
		}
		if !born[e.Thread] {
			t.Errorf("event of thread %d before the fork or clone that made it: %s", e.Thread, formatEvent(e, s))
		}
		switch e.Op {
		case trace.OpFork, trace.OpClone:
			if born[uint32(e.Ret)] {
				t.Errorf("thread %d made twice: %s", e.Ret, formatEvent(e, s))
			}
			born[uint32(e.Ret)] = true
			if e.Dur != 0 {
				t.Errorf("%s lasts %d ns", e.Op, e.Dur)
			}
		case trace.OpExit:
			exited[e.Thread] = true
		}
	}
	for _, th := range res.Threads {
		if !exited[th.Index] {
			t.Errorf("thread %d (pid %d tid %d) has no exit event", th.Index, th.PID, th.TID)
		}
		if th.Index != 0 && !born[th.Index] {
			t.Errorf("thread %d has no fork or clone event", th.Index)
		}
	}
	if t.Failed() {
		t.Logf("events:\n%s", dumpEvents(evs, s))
	}
}

// TestForkPerProcessDescriptors: a shell whose subshell (a forked child)
// puts another file on descriptor 3 writes to it, and the parent to its
// own 3: fork and exit events say which process is which, and each write
// is on the file of its own process's descriptor.
func TestForkPerProcessDescriptors(t *testing.T) {
	sh := needTool(t, "sh")
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	res, evs, s := record(t, Config{Argv: []string{sh, "-c", "exec 3>a.txt; (exec 3>b.txt; echo child >&3); echo parent >&3"},
		Dir: dir, Rules: mustRules(t, dir)})
	if res.Status() != 0 {
		t.Fatalf("status %d", res.Status())
	}
	q := newEvq(t, evs, s, dir)
	checkProcessOrder(t, res, evs, s)
	forks := q.all(trace.OpFork, "*")
	if len(forks) != 1 || forks[0].Thread != 0 || forks[0].Ret != 1 || forks[0].Flags&(unix.CLONE_THREAD|unix.CLONE_FILES) != 0 {
		t.Fatalf("forks %v, want one of thread 0 making 1, without CLONE_THREAD or CLONE_FILES\n%s", forks, dumpEvents(evs, s))
	}
	if len(res.Threads) != 2 || res.Threads[1].Parent != 0 || res.Threads[1].PID == res.Threads[0].PID {
		t.Errorf("threads %+v, want the shell and its subshell", res.Threads)
	}
	child := q.one(trace.OpWrite, "b.txt")
	parent := q.one(trace.OpWrite, "a.txt")
	if child.Thread != 1 || child.Ret != 6 || parent.Thread != 0 || parent.Ret != 7 {
		t.Errorf("writes: child %s, parent %s", formatEvent(child, s), formatEvent(parent, s))
	}
	// The subshell's b.txt on its descriptor 3 (dash opens it on 4 and
	// dup2s it to 3, closing its copy of a.txt), then on 1 for the echo.
	var d3 bool
	for _, e := range q.all(trace.OpDup2, "b.txt") {
		d3 = d3 || (e.Thread == 1 && e.Ret == 3)
	}
	if !d3 {
		t.Errorf("no dup2 of b.txt to 3 in the subshell\n%s", dumpEvents(evs, s))
	}
	// Putting the saved standard output back on 1 replaces a recorded
	// file: recorded, on the saved descriptor, with no path.
	restores := 0
	for _, e := range q.all(trace.OpDup2, "") {
		if e.Ret == 1 && e.FD >= 10 {
			restores++
		}
	}
	if restores != 2 {
		t.Errorf("%d dup2s of the saved stdout over a recorded 1, want 2 (child and parent)\n%s", restores, dumpEvents(evs, s))
	}
	for _, e := range q.all(trace.OpExit, "*") {
		if e.Ret != 0 {
			t.Errorf("exit %s", formatEvent(e, s))
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "parent\n" {
		t.Errorf("a.txt = %q", b)
	}
}

func mustRules(t *testing.T, include ...string) *filter.Paths {
	t.Helper()
	r, err := filter.NewPaths(include, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestThreadsAndExits: pthreads make clone events (CLONE_THREAD, the
// creator's index, the new thread's), every thread exits once, and the
// status of a killed process is 128+N.
func TestThreadsAndExits(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	bin := buildC(t, dir, "threads", `
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
static void *inner(void *arg) { return 0; }
static void *work(void *arg) {
	char name[16];
	snprintf(name, sizeof name, "t%ld", (long)arg);
	int fd = open(name, O_CREAT|O_WRONLY|O_TRUNC, 0644);
	write(fd, name, 2);
	close(fd);
	if ((long)arg == 1) {
		pthread_t th;
		pthread_create(&th, 0, inner, 0);
		pthread_join(th, 0);
	}
	return 0;
}
int main(void) {
	pthread_t th[2];
	for (long i = 0; i < 2; i++) pthread_create(&th[i], 0, work, (void *)i);
	for (int i = 0; i < 2; i++) pthread_join(th[i], 0);
	pid_t pid = fork();
	if (pid == 0) {
		kill(getpid(), SIGTERM);
		pause();
	}
	waitpid(pid, 0, 0);
	return 3;
}`, "-pthread")
	res, evs, s := record(t, Config{Argv: []string{bin}, Dir: dir, Rules: mustRules(t, dir)})
	if res.Status() != 3 {
		t.Fatalf("status %d", res.Status())
	}
	q := newEvq(t, evs, s, dir)
	checkProcessOrder(t, res, evs, s)
	clones := q.all(trace.OpClone, "*")
	if len(clones) != 3 {
		t.Fatalf("%d clone events, want 3\n%s", len(clones), dumpEvents(evs, s))
	}
	want := uint32(unix.CLONE_THREAD | unix.CLONE_VM | unix.CLONE_FILES)
	for _, c := range clones {
		if c.Flags != want {
			t.Errorf("clone flags %#x, want %#x", c.Flags, want)
		}
		th := res.Threads[c.Ret]
		if th.Parent != int(c.Thread) || th.PID != res.Threads[c.Thread].PID {
			t.Errorf("clone %s: thread %+v", formatEvent(c, s), th)
		}
	}
	// The inner thread was made by the thread that wrote t1.
	t1 := q.one(trace.OpWrite, "t1")
	if clones[2].Thread != t1.Thread {
		t.Errorf("inner clone by thread %d, t1 written by %d", clones[2].Thread, t1.Thread)
	}
	fork := q.one(trace.OpFork, "")
	status := map[uint32]int64{}
	for _, e := range q.all(trace.OpExit, "*") {
		status[e.Thread] = e.Ret
	}
	if status[uint32(fork.Ret)] != 128+int64(unix.SIGTERM) || status[0] != 3 || len(status) != 5 {
		t.Errorf("exit statuses %v, want the killed child's 143 and the main's 3 among 5\n%s", status, dumpEvents(evs, s))
	}
}

// TestExecAndInherit: a program started with its standard output on a
// recorded file (opened by the caller, at a position) learns that
// descriptor at its first use: one inherit event before that call, with
// the file's flags and position; exec is an event (not the first one:
// tracing starts there), and descriptors kept across it stay known.
func TestExecAndInherit(t *testing.T) {
	sh := needTool(t, "sh")
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	os.WriteFile(filepath.Join(dir, "in.txt"), []byte("0123456789"), 0o644)
	out, err := os.OpenFile(filepath.Join(dir, "out.txt"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	out.WriteString("before\n")
	in, err := os.Open(filepath.Join(dir, "in.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	in.Seek(4, 0)
	cat := needTool(t, "cat")
	res, evs, s := record(t, Config{Argv: []string{sh, "-c", "echo one; echo two; exec cat"},
		Dir: dir, Stdin: in, Stdout: out, Rules: mustRules(t, dir)})
	if res.Status() != 0 {
		t.Fatalf("status %d", res.Status())
	}
	q := newEvq(t, evs, s, dir)
	checkProcessOrder(t, res, evs, s)
	inh := q.one(trace.OpInherit, "out.txt")
	// (Go opens with O_CLOEXEC, but the program's descriptor 1 is a dup2
	// of it, without; the kernel adds O_LARGEFILE, 0x8000.)
	if inh.FD != 1 || inh.Ret != 1 || inh.Thread != 0 || inh.Offset != 7 || inh.Dur != 0 ||
		inh.Flags&^0x8000 != trace.OWronly|trace.OAppend {
		t.Errorf("inherit of stdout: %s, want fd 1 at 7, O_WRONLY|O_APPEND", formatEvent(inh, s))
	}
	i := q.index(func(e trace.Event) bool { return e.Op == trace.OpInherit && e.FD == 1 })
	if i+1 >= len(evs) || evs[i+1].Op != trace.OpWrite || evs[i+1].FD != 1 || evs[i+1].Start != inh.Start {
		t.Errorf("the inherit is not right before the first write on 1 (with its start)\n%s", dumpEvents(evs, s))
	}
	writes := q.all(trace.OpWrite, "out.txt")
	if len(writes) != 3 || writes[0].Offset != 7 || writes[1].Offset != 11 || writes[2].Offset != 15 {
		t.Errorf("writes to out.txt %v, want at 7, 11 and 15 (appends)\n%s", writes, dumpEvents(evs, s))
	}
	stdin := q.one(trace.OpInherit, "in.txt")
	if stdin.FD != 0 || stdin.Offset != 4 || stdin.Flags&3 != trace.ORdonly {
		t.Errorf("inherit of stdin: %s", formatEvent(stdin, s))
	}
	reads := q.all(trace.OpRead, "in.txt")
	if len(reads) == 0 || reads[0].Offset != 4 || reads[0].Ret != 6 {
		t.Errorf("reads of in.txt %v, want 6 bytes at 4", reads)
	}
	execs := q.all(trace.OpExec, "*")
	if len(execs) != 1 || execs[0].Thread != 0 || execs[0].Ret != 0 || !sameFile(s.Paths.Lookup(execs[0].Path), cat) {
		t.Errorf("exec events %v, want one of %s by thread 0\n%s", execs, cat, dumpEvents(evs, s))
	}
	if len(q.all(trace.OpInherit, "*")) != 2 {
		t.Errorf("inherit events: %v, want stdin and stdout once each", q.all(trace.OpInherit, "*"))
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "out.txt")); string(b) != "before\none\ntwo\n456789" {
		t.Errorf("out.txt = %q", b)
	}
}

func sameFile(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// TestCopies: copy_file_range, sendfile and splice with and without
// offsets, through a pipe and to an O_APPEND file; positions move by
// what was copied; cp records its copy_file_range.
func TestCopies(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	src := make([]byte, 1000)
	for i := range src {
		src[i] = byte('a' + i%26)
	}
	os.WriteFile(filepath.Join(dir, "src"), src, 0o644)
	bin := buildC(t, dir, "copies", `
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/sendfile.h>
#include <unistd.h>
int main(void) {
	int in = open("src", O_RDONLY);
	int out = open("dst", O_CREAT|O_RDWR|O_TRUNC, 0644);
	loff_t oi = 100, oo = 500;
	if (copy_file_range(in, &oi, out, &oo, 50, 0) != 50) return 1;   /* both given */
	if (copy_file_range(in, 0, out, 0, 30, 0) != 30) return 2;       /* positions 0, 0 */
	if (copy_file_range(in, &oi, out, 0, 20, 0) != 20) return 3;     /* in at 150, out at 30 */
	lseek(in, 200, SEEK_SET);
	if (sendfile(out, in, 0, 40) != 40) return 4;                    /* in at 200, out at 50 */
	off_t so = 7;
	if (sendfile(out, in, &so, 10) != 10) return 5;                  /* in at 7, out at 90 */
	int p[2];
	pipe(p);
	if (splice(in, 0, p[1], 0, 25, 0) != 25) return 6;               /* in at 240 */
	loff_t sp = 700;
	if (splice(p[0], 0, out, &sp, 25, 0) != 25) return 7;            /* out at 700 */
	char c;
	read(in, &c, 1);                                                  /* at 265 */
	write(out, "!", 1);                                               /* at 100 */
	int app = open("app", O_CREAT|O_WRONLY|O_APPEND, 0644);
	write(app, "12345", 5);
	sendfile(app, in, 0, 8);               /* EINVAL (O_APPEND) here, else appended: at 5 */
	lseek(in, 300, SEEK_SET);
	if (copy_file_range(in, 0, out, 0, 5, 0) != 5) return 9;         /* in at 300, out at 101 */
	int ex = open("ex/out", O_CREAT|O_WRONLY|O_TRUNC, 0644);          /* not recorded */
	write(ex, "0123456789", 10);
	if (copy_file_range(in, 0, ex, 0, 5, 0) != 5) return 10;         /* in at 305, ex at 10 */
	return 0;
}`)
	os.Mkdir(filepath.Join(dir, "ex"), 0o755)
	rules, err := filter.NewPaths([]string{dir}, []string{filepath.Join(dir, "ex")}, true)
	if err != nil {
		t.Fatal(err)
	}
	res, evs, s := record(t, Config{Argv: []string{bin}, Dir: dir, Rules: rules})
	if res.Status() != 0 {
		t.Fatalf("status %d\n%s", res.Status(), dumpEvents(evs, s))
	}
	q := newEvq(t, evs, s, dir)
	// (A pipe side has no path.)
	type cp struct {
		op          trace.Op
		path, path2 string
		off, off2   int64
		size, ret   int64
		flags       uint32
	}
	want := []cp{
		{trace.OpCopyFileRange, "src", "dst", 100, 500, 50, 50, trace.CopyInAt | trace.CopyOutAt},
		{trace.OpCopyFileRange, "src", "dst", 0, 0, 30, 30, 0},
		{trace.OpCopyFileRange, "src", "dst", 150, 30, 20, 20, trace.CopyInAt},
		{trace.OpSendfile, "src", "dst", 200, 50, 40, 40, 0},
		{trace.OpSendfile, "src", "dst", 7, 90, 10, 10, trace.CopyInAt},
		{trace.OpSplice, "src", "", 240, 0, 25, 25, 0},
		{trace.OpSplice, "", "dst", 0, 700, 25, 25, trace.CopyOutAt},
		// Linux refuses to send to a file opened with O_APPEND (EINVAL);
		// had it, it would have appended, at the end of the file.
		{trace.OpSendfile, "src", "app", 266, 5, 8, -int64(unix.EINVAL), 0},
		{trace.OpCopyFileRange, "src", "dst", 300, 101, 5, 5, 0},
		// To a file that is not recorded: no path; its position (which
		// its write moved unseen) from /proc.
		{trace.OpCopyFileRange, "src", "", 305, 10, 5, 5, 0},
	}
	var got []trace.Event
	for _, e := range evs {
		if e.Op.Info().Dir == trace.DirCopy {
			got = append(got, e)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d copies, want %d\n%s", len(got), len(want), dumpEvents(evs, s))
	}
	for i, w := range want {
		e := got[i]
		if e.Op == trace.OpSendfile && e.Ret == w.size {
			w.ret = w.size // a kernel that appends
		}
		if e.Op != w.op || q.rel(e.Path) != w.path || q.rel(e.Path2) != w.path2 || e.Offset != w.off || e.Offset2 != w.off2 ||
			e.Size != w.size || e.Ret != w.ret || e.Flags != w.flags || e.FD == e.FD2 || e.FD < 3 || e.FD2 < 3 {
			t.Errorf("copy %d: %s\n  want %+v", i, formatEvent(e, s), w)
		}
	}
	if r := q.one(trace.OpRead, "src"); r.Offset != 265 {
		t.Errorf("read after the copies at %d, want 265", r.Offset)
	}
	if w := q.one(trace.OpWrite, "dst"); w.Offset != 100 {
		t.Errorf("write after the copies at %d, want 100", w.Offset)
	}

	// cp copies with copy_file_range (coreutils ≥ 9).
	cpTool := needTool(t, "cp")
	_, evs, s = record(t, Config{Argv: []string{cpTool, "src", "copy"}, Dir: dir, Rules: mustRules(t, dir)})
	q = newEvq(t, evs, s, dir)
	crs := q.all(trace.OpCopyFileRange, "src")
	if len(crs) == 0 {
		t.Skipf("cp made no copy_file_range (an older coreutils?)\n%s", dumpEvents(evs, s))
	}
	var off int64
	for _, e := range crs {
		if q.rel(e.Path2) != "copy" || e.Flags != 0 || e.Offset != off || e.Offset2 != off || e.Ret < 0 {
			t.Errorf("cp: %s, want at %d in both", formatEvent(e, s), off)
		}
		off += e.Ret
	}
	if off != int64(len(src)) {
		t.Errorf("cp copied %d bytes, want %d", off, len(src))
	}
}

// TestFileCalls: fallocate, posix_fadvise, syncfs, sync, mmap (of a file;
// anonymous ones are not stopped at), fcntl F_SETFL/F_SETFD/F_GETFL, dup2
// over a recorded descriptor, and the Result's counts of what a trace
// cannot show (mappings, io_uring, Linux AIO).
func TestFileCalls(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	bin := buildC(t, dir, "filecalls", `
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <linux/io_uring.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void) {
	syscall(SYS_close_range, 3, ~0U, 0);
	fcntl(1, F_SETFL, O_WRONLY|O_APPEND);                             /* the first use of the inherited 1 */
	write(1, "!", 1);                                                 /* appended: at 10 */
	int fd = open("f", O_CREAT|O_RDWR|O_TRUNC, 0644);                 /* 3 */
	fallocate(fd, FALLOC_FL_KEEP_SIZE, 4096, 8192);
	posix_fadvise(fd, 10, 20, POSIX_FADV_WILLNEED);
	syncfs(fd);
	sync();
	write(fd, "0123456789", 10);
	void *m = mmap(0, 4096, PROT_READ|PROT_WRITE, MAP_SHARED, fd, 0);
	((char *)m)[1] = 'x';
	msync(m, 4096, MS_SYNC);
	munmap(m, 4096);
	readahead(fd, 0, 8192);
	m = mmap(0, 4096, PROT_READ, MAP_PRIVATE, fd, 4096);               /* beyond EOF: still maps */
	munmap(m, 4096);
	for (int i = 0; i < 100; i++) {
		m = mmap(0, 65536, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0);
		munmap(m, 65536);
	}
	mmap(0, 4096, PROT_READ, MAP_SHARED, 77, 0);                      /* EBADF: not a recorded file */
	lseek(fd, 0, SEEK_SET);
	fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, O_APPEND | O_RDWR);
	write(fd, "ab", 2);                                               /* appended: at 10 */
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	fcntl(fd, F_GETFD);
	int p[2];
	pipe(p);                                                          /* 4, 5 */
	int g = open("g", O_CREAT|O_WRONLY|O_TRUNC, 0644);                /* 6 */
	dup2(p[1], g);                                                    /* closes g */
	dup2(p[1], 20);                                                   /* not recorded: 20 is not open */
	struct io_uring_params up;
	memset(&up, 0, sizeof up);
	int ring = syscall(SYS_io_uring_setup, 4, &up);
	if (ring >= 0) mmap(0, 4096, PROT_READ|PROT_WRITE, MAP_SHARED|MAP_POPULATE, ring, IORING_OFF_SQ_RING);
	aio_context_t ctx = 0;
	syscall(SYS_io_setup, 4, &ctx);
	return ring >= 0 ? 0 : 9;
}`)
	os.WriteFile(filepath.Join(dir, "out"), []byte("0123456789"), 0o644)
	out, err := os.OpenFile(filepath.Join(dir, "out"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	res, evs, s := record(t, Config{Argv: []string{bin}, Dir: dir, Rules: mustRules(t, dir), Stdout: out})
	if res.Status() == 9 {
		t.Log("io_uring_setup failed in the program")
	} else if res.Status() != 0 {
		t.Fatalf("status %d", res.Status())
	}
	q := newEvq(t, evs, s, dir)
	// F_SETFL O_APPEND as the first use of an inherited descriptor: the
	// inherit shows the flags before, the write lands at the end.
	if e := q.one(trace.OpInherit, "out"); e.FD != 1 || e.Offset != 0 || e.Flags&0xfff != trace.OWronly {
		t.Errorf("inherit of stdout: %s", formatEvent(e, s))
	}
	if e := q.one(trace.OpFcntl, "out"); e.Flags != trace.FSetfl || e.Size != int64(trace.OWronly|trace.OAppend) {
		t.Errorf("fcntl of stdout: %s", formatEvent(e, s))
	}
	if e := q.one(trace.OpWrite, "out"); e.Offset != 10 {
		t.Errorf("write to stdout after F_SETFL O_APPEND at %d, want 10", e.Offset)
	}
	if e := q.one(trace.OpFallocate, "f"); e.FD != 3 || e.Flags != unix.FALLOC_FL_KEEP_SIZE || e.Offset != 4096 || e.Size != 8192 || e.Ret != 0 {
		t.Errorf("fallocate: %s", formatEvent(e, s))
	}
	if e := q.one(trace.OpFadvise, "f"); e.FD != 3 || e.Flags != unix.FADV_WILLNEED || e.Offset != 10 || e.Size != 20 || e.Ret != 0 {
		t.Errorf("posix_fadvise: %s", formatEvent(e, s))
	}
	if e := q.one(trace.OpSyncfs, "f"); e.FD != 3 || e.Ret != 0 {
		t.Errorf("syncfs: %s", formatEvent(e, s))
	}
	if e := q.one(trace.OpSync, ""); e.Ret != 0 {
		t.Errorf("sync: %s", formatEvent(e, s))
	}
	maps := q.all(trace.OpMmap, "f")
	if len(maps) != 2 || maps[0].FD != 3 || maps[0].Size != 4096 || maps[0].Offset != 0 || maps[0].Ret != 0 ||
		maps[0].Flags != unix.MAP_SHARED || maps[0].Mode != unix.PROT_READ|unix.PROT_WRITE ||
		maps[1].Offset != 4096 || maps[1].Flags != unix.MAP_PRIVATE || maps[1].Mode != unix.PROT_READ {
		t.Errorf("mmaps of f: %v\n%s", maps, dumpEvents(evs, s))
	}
	if ms := q.all(trace.OpMsync, "f"); len(ms) != 1 || ms[0].FD != -1 || ms[0].Offset != 0 || ms[0].Size != 4096 || ms[0].Flags != unix.MS_SYNC || ms[0].Ret != 0 {
		t.Errorf("msync of f's mapping: %v\n%s", ms, dumpEvents(evs, s))
	}
	if us := q.all(trace.OpMunmap, "f"); len(us) != 2 || us[0].Offset != 0 || us[0].Size != 4096 || us[1].Offset != 4096 || us[1].Size != 4096 {
		t.Errorf("munmaps of f's mappings: %v\n%s", us, dumpEvents(evs, s))
	}
	if n := len(q.all(trace.OpMunmap, "*")); n != 2 {
		t.Errorf("%d munmap events, want the 2 of f (not the anonymous ones)", n)
	}
	if e := q.one(trace.OpReadahead, "f"); e.FD != 3 || e.Offset != 0 || e.Size != 8192 || e.Ret != 0 {
		t.Errorf("readahead: %s", formatEvent(e, s))
	}
	if n := len(q.all(trace.OpMmap, "*")); n != 2 {
		t.Errorf("%d mmap events, want the 2 of f (not the anonymous ones, not the failed one, not the ring)", n)
	}
	fcntls := q.all(trace.OpFcntl, "f")
	if len(fcntls) != 2 || fcntls[0].Flags != trace.FSetfl || fcntls[0].Size != int64(trace.OAppend|trace.ORdwr) || fcntls[0].Ret != 0 ||
		fcntls[1].Flags != trace.FSetfd || fcntls[1].Size != 1 || fcntls[1].Ret != 0 {
		t.Errorf("fcntls: %v, want F_SETFL O_APPEND|O_RDWR and F_SETFD FD_CLOEXEC\n%s", fcntls, dumpEvents(evs, s))
	}
	ws := q.all(trace.OpWrite, "f")
	if len(ws) != 2 || ws[1].Offset != 10 {
		t.Errorf("writes %v: the one after F_SETFL O_APPEND at 10", ws)
	}
	d := q.all(trace.OpDup2, "*")
	if len(d) != 1 || d[0].FD != 5 || d[0].Ret != 6 || d[0].Path != 0 {
		t.Errorf("dup2s %v, want the pipe's 5 over g's 6, with no path\n%s", d, dumpEvents(evs, s))
	}
	if res.Mmaps != 2 || res.MmapFiles != 1 || res.AIO != 1 || (res.Status() == 0) != (res.IOUring == 1) {
		t.Errorf("result: %d mmaps of %d files, %d io_uring, %d AIO; want 2 of 1, 1, 1", res.Mmaps, res.MmapFiles, res.IOUring, res.AIO)
	}
}

// TestLinksAndDirectories: ln, ln -s, readlink and ls (getdents) from
// coreutils, and linkat of an O_TMPFILE descriptor (AT_EMPTY_PATH).
func TestLinksAndDirectories(t *testing.T) {
	sh := needTool(t, "sh")
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644)
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	res, evs, s := record(t, Config{Argv: []string{sh, "-c", "ln f sub/hard && ln -s ../f sub/soft && readlink sub/soft && ls sub >/dev/null"},
		Dir: dir, Rules: mustRules(t, dir)})
	if res.Status() != 0 {
		t.Fatalf("status %d", res.Status())
	}
	q := newEvq(t, evs, s, dir)
	links := append(q.all(trace.OpLink, "f"), q.all(trace.OpLinkat, "f")...)
	if len(links) != 1 || q.rel(links[0].Path2) != "sub/hard" || links[0].Ret != 0 {
		t.Errorf("links %v\n%s", links, dumpEvents(evs, s))
	}
	syms := append(q.all(trace.OpSymlink, "sub/soft"), q.all(trace.OpSymlinkat, "sub/soft")...)
	if len(syms) != 1 || s.Paths.Lookup(syms[0].Path2) != "../f" || syms[0].Ret != 0 {
		t.Errorf("symlinks %v: want sub/soft → ../f as written\n%s", syms, dumpEvents(evs, s))
	}
	rls := append(q.all(trace.OpReadlink, "sub/soft"), q.all(trace.OpReadlinkat, "sub/soft")...)
	if len(rls) == 0 || rls[len(rls)-1].Ret != 4 || rls[len(rls)-1].Size < 4 {
		t.Errorf("readlinks %v\n%s", rls, dumpEvents(evs, s))
	}
	gds := q.all(trace.OpGetdents, "sub")
	if len(gds) < 2 || gds[0].Ret <= 0 || gds[0].Size <= 0 || gds[len(gds)-1].Ret != 0 {
		t.Errorf("getdents of sub: %v, want entries then 0\n%s", gds, dumpEvents(evs, s))
	}

	bin := buildC(t, dir, "tmpfile", `
#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>
int main(void) {
	int fd = open(".", O_TMPFILE|O_WRONLY, 0644);
	if (fd < 0) return 9;
	write(fd, "tmp", 3);
	return linkat(fd, "", AT_FDCWD, "named", AT_EMPTY_PATH) == 0 ? 0 : 1;
}`)
	res, evs, s = record(t, Config{Argv: []string{bin}, Dir: dir, Rules: mustRules(t, dir)})
	if res.Status() == 9 {
		t.Skip("no O_TMPFILE here")
	}
	if res.Status() != 0 {
		t.Fatalf("status %d", res.Status())
	}
	q = newEvq(t, evs, s, dir)
	la := q.all(trace.OpLinkat, "*")
	if len(la) != 1 || la[0].Path != 0 || la[0].FD != 3 || q.rel(la[0].Path2) != "named" || la[0].Flags != unix.AT_EMPTY_PATH {
		t.Errorf("linkat of an O_TMPFILE descriptor: %v, want no Path, FD 3, Path2 named\n%s", la, dumpEvents(evs, s))
	}
}

// TestNonLeaderExec: a thread other than the main one execs: the main
// thread ends (status 0), the exec is the thread's, and the program
// goes on under the thread's index.
func TestNonLeaderExec(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	bin := buildC(t, dir, "thexec", `
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>
static char *self;
static void *thread(void *arg) {
	char *argv[] = {self, "again", 0};
	execv(self, argv);
	return 0;
}
int main(int argc, char **argv) {
	if (argc > 1) {
		int fd = open("after", O_CREAT|O_WRONLY|O_TRUNC, 0644);
		write(fd, "x", 1);
		return 4;
	}
	self = argv[0];
	pthread_t th;
	pthread_create(&th, 0, thread, 0);
	pause();
	return 1;
}`, "-pthread")
	res, evs, s := record(t, Config{Argv: []string{bin}, Dir: dir, Rules: mustRules(t, dir)})
	if res.Status() != 4 {
		t.Fatalf("status %d", res.Status())
	}
	q := newEvq(t, evs, s, dir)
	checkProcessOrder(t, res, evs, s)
	ex := q.one(trace.OpExec, "thexec")
	w := q.one(trace.OpWrite, "after")
	if ex.Thread != 1 || w.Thread != 1 {
		t.Errorf("exec by thread %d, write by %d, want 1 (the thread that exec'd)", ex.Thread, w.Thread)
	}
	var exits []string
	for _, e := range q.all(trace.OpExit, "*") {
		exits = append(exits, fmt.Sprintf("%d:%d", e.Thread, e.Ret))
	}
	if fmt.Sprint(exits) != "[0:0 1:4]" {
		t.Errorf("exits %v, want the main thread's 0 and then the program's 4 under index 1\n%s", exits, dumpEvents(evs, s))
	}
}
