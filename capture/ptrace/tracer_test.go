//go:build linux && (amd64 || arm64)

package ptrace

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
)

// offsetsC does a known sequence of calls whose offsets, paths and
// descriptors the test checks one by one.
const offsetsC = `
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static char buf[4096];
static int fd;

static void *thread(void *arg) {
	write(fd, buf, 4);
	return 0;
}

int main(void) {
	struct iovec iov[3] = {{buf, 1}, {buf, 2}, {buf, 3}};
	struct stat st;
	/* Descriptors the test inherited would shift the numbers below. */
	syscall(SYS_close_range, 3, ~0U, 0);
	int dfd = open(".", O_RDONLY|O_DIRECTORY);
	mkdirat(dfd, "sub", 0755);
	int sfd = openat(dfd, "sub", O_RDONLY|O_DIRECTORY);
	fd = openat(sfd, "a", O_CREAT|O_RDWR|O_TRUNC, 0600);
	write(fd, buf, 100);
	int d = dup(fd);
	write(d, buf, 50);
	lseek(fd, 10, SEEK_SET);
	read(d, buf, 20);
	writev(fd, iov, 3);
	readv(d, iov, 3);
	lseek(fd, 0, SEEK_END);
	pwrite(fd, buf, 5, 1000);
	write(fd, buf, 1);
	pid_t pid = fork();
	if (pid == 0) {
		write(fd, buf, 10);
		_exit(0);
	}
	waitpid(pid, 0, 0);
	write(d, buf, 1);
	pthread_t th;
	pthread_create(&th, 0, thread, 0);
	pthread_join(th, 0);
	int ap = open("sub/app", O_CREAT|O_WRONLY|O_APPEND, 0600);
	write(ap, buf, 7);
	int other = open("sub/app", O_WRONLY);
	pwrite(other, buf, 3, 20);
	write(ap, buf, 2);
	pwritev2(fd, iov, 3, -1, 0);
	preadv(fd, iov, 3, 2);
	chdir("sub");
	int b = open("b", O_CREAT|O_WRONLY, 0600);
	int b2 = open("../sub/./b", O_RDONLY);
	rename("b", "c");
	stat("c", &st);
	dup2(fd, 50);
	write(50, buf, 2);
	int f60 = fcntl(fd, F_DUPFD, 60);
	read(f60, buf, 3);
	close(50);
	write(50, buf, 1);
	return 0;
}
`

type wantEv struct {
	family string // op family ("open", "write", …), or an op name
	path   string // relative to the test directory; "" for none
	fd     int32
	off    int64
	size   int64
	ret    int64
	thread uint32
	path2  string
}

// TestOffsetsPathsDescriptors follows positions and paths through dup,
// fork, a thread, openat with directory descriptors, O_APPEND, vectors,
// seeks, chdir and dup2/fcntl.
func TestOffsetsPathsDescriptors(t *testing.T) {
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	bin := buildC(t, dir, "offsets", offsetsC, "-pthread")
	res, evs, s := record(t, Config{Argv: []string{bin}, Dir: dir})
	if res.Status() != 0 {
		t.Fatalf("exit status %d", res.Status())
	}
	want := []wantEv{
		{"open", "", 3, 0, 0, 3, 0, ""},
		{"mkdirat", "sub", 0, 0, 0, 0, 0, ""},
		{"open", "sub", 4, 0, 0, 4, 0, ""},
		{"open", "sub/a", 5, 0, 0, 5, 0, ""},
		{"write", "sub/a", 5, 0, 100, 100, 0, ""},
		{"dup", "sub/a", 5, 0, 0, 6, 0, ""},
		{"write", "sub/a", 6, 100, 50, 50, 0, ""},
		{"lseek", "sub/a", 5, 10, 0, 10, 0, ""},
		{"read", "sub/a", 6, 10, 20, 20, 0, ""},
		{"writev", "sub/a", 5, 30, 6, 6, 0, ""},
		{"readv", "sub/a", 6, 36, 6, 6, 0, ""},
		{"lseek", "sub/a", 5, 0, 0, 150, 0, ""},
		{"pwrite", "sub/a", 5, 1000, 5, 5, 0, ""},
		{"write", "sub/a", 5, 150, 1, 1, 0, ""},
		{"write", "sub/a", 5, 151, 10, 10, 1, ""},
		{"write", "sub/a", 6, 161, 1, 1, 0, ""},
		{"write", "sub/a", 5, 162, 4, 4, 2, ""},
		{"open", "sub/app", 7, 0, 0, 7, 0, ""},
		{"write", "sub/app", 7, 0, 7, 7, 0, ""},
		{"open", "sub/app", 8, 0, 0, 8, 0, ""},
		{"pwrite", "sub/app", 8, 20, 3, 3, 0, ""},
		{"write", "sub/app", 7, 23, 2, 2, 0, ""},
		{"pwritev2", "sub/a", 5, 166, 6, 6, 0, ""},
		{"preadv", "sub/a", 5, 2, 6, 6, 0, ""},
		{"open", "sub/b", 9, 0, 0, 9, 0, ""},
		{"open", "sub/b", 10, 0, 0, 10, 0, ""},
		{"rename", "sub/b", 0, 0, 0, 0, 0, "sub/c"},
		{"stat", "sub/c", 0, 0, 0, 0, 0, ""},
		{"dup", "sub/a", 5, 0, 0, 50, 0, ""},
		{"write", "sub/a", 50, 172, 2, 2, 0, ""},
		{"fcntl", "sub/a", 5, 0, 60, 60, 0, ""}, // F_DUPFD: Size is the lowest descriptor asked for
		{"read", "sub/a", 60, 174, 3, 3, 0, ""},
		{"close", "sub/a", 50, 0, 0, 0, 0, ""},
	}
	var got []trace.Event
	for _, e := range evs {
		p := s.Paths.Lookup(e.Path)
		if p == dir || strings.HasPrefix(p, dir+"/") {
			if p == bin {
				continue // the dynamic loader reads the program
			}
			got = append(got, e)
		}
	}
	rel := func(id trace.PathID) string {
		if id == 0 {
			return ""
		}
		p := s.Paths.Lookup(id)
		if p == dir {
			return ""
		}
		return strings.TrimPrefix(p, dir+"/")
	}
	for i := 0; i < max(len(got), len(want)); i++ {
		if i >= len(got) || i >= len(want) {
			t.Errorf("%d events under %s, want %d", len(got), dir, len(want))
			break
		}
		e, w := got[i], want[i]
		info := e.Op.Info()
		ok := (info.Family == w.family || info.Name == w.family) && rel(e.Path) == w.path && e.FD == w.fd &&
			e.Offset == w.off && e.Size == w.size && e.Ret == w.ret && e.Thread == w.thread && rel(e.Path2) == w.path2
		if !ok {
			t.Errorf("event %d: %s\n  want %+v", i, formatEvent(e, s), w)
		}
	}
	if t.Failed() {
		t.Logf("all events:\n%s", dumpEvents(evs, s))
	}
}

// TestExitStatus checks exit codes and deaths by signal.
func TestExitStatus(t *testing.T) {
	dir := t.TempDir()
	bin := buildC(t, dir, "exiter", `
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
	if (argv[1][0] == 'k') { kill(getpid(), atoi(argv[1] + 1)); pause(); }
	return atoi(argv[1]);
}`)
	for _, c := range []struct {
		arg    string
		code   int
		signal syscall.Signal
	}{
		{"0", 0, 0}, {"7", 7, 0}, {"255", 255, 0},
		{"k9", 0, syscall.SIGKILL}, {"k15", 0, syscall.SIGTERM}, {"k11", 0, syscall.SIGSEGV},
	} {
		res, _, _ := record(t, Config{Argv: []string{bin, c.arg}})
		if res.ExitCode != c.code || res.Signal != c.signal {
			t.Errorf("%s: exit %d signal %v, want %d %v", c.arg, res.ExitCode, res.Signal, c.code, c.signal)
		}
		want := c.code
		if c.signal != 0 {
			want = 128 + int(c.signal)
		}
		if res.Status() != want {
			t.Errorf("%s: status %d, want %d", c.arg, res.Status(), want)
		}
	}
	if _, err := Run(Config{Argv: []string{filepath.Join(dir, "missing")}, Sink: trace.NewSliceSink()}); err == nil {
		t.Error("no error for a missing program")
	}
	if _, err := Run(Config{Argv: []string{"no-such-command-anywhere"}, Sink: trace.NewSliceSink()}); err == nil ||
		!strings.Contains(err.Error(), "not found") {
		t.Errorf("error %v for an unknown command", err)
	}
}

// TestOrphanStillTraced: a child that outlives its parent is traced to
// its end, and Run waits for it.
func TestOrphanStillTraced(t *testing.T) {
	dir := t.TempDir()
	bin := buildC(t, dir, "orphan", `
#include <fcntl.h>
#include <unistd.h>
int main(void) {
	if (fork() == 0) {
		usleep(300000);
		int fd = open("late", O_CREAT|O_WRONLY, 0644);
		write(fd, "late", 4);
		close(fd);
		return 0;
	}
	return 3;
}`)
	start := time.Now()
	res, evs, s := record(t, Config{Argv: []string{bin}, Dir: dir})
	if res.ExitCode != 3 {
		t.Errorf("exit %d, want the parent's 3", res.ExitCode)
	}
	if time.Since(start) < 250*time.Millisecond {
		t.Error("Run returned before the orphan ended")
	}
	var found bool
	for _, e := range evs {
		if e.Op == trace.OpWrite && strings.HasSuffix(s.Paths.Lookup(e.Path), "/late") && e.Ret == 4 && e.Thread == 1 {
			found = true
		}
	}
	if !found {
		t.Errorf("the orphan's write is missing:\n%s", dumpEvents(evs, s))
	}
}

// TestExecKeepsDescriptors: descriptors survive exec unless close-on-exec
// (O_CLOEXEC, dup3, close_range CLOSE_RANGE_CLOEXEC, and fcntl F_SETFD,
// which the tracer does not see), and an exec from a thread other than
// the leader keeps tracing.
func TestExecKeepsDescriptors(t *testing.T) {
	dir := t.TempDir()
	bin := buildC(t, dir, "execer", `
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
static char *self;
static void *thread(void *arg) {
	char *argv[] = {self, "child", 0};
	execv(self, argv);
	return 0;
}
int main(int argc, char **argv) {
	if (argc > 1) {
		/* After exec: 5 is kept; 6, 7 and 8 were close-on-exec. */
		write(5, "kept", 4);
		write(6, "gone", 4);
		write(7, "gone", 4);
		write(8, "gone", 4);
		return 0;
	}
	self = argv[0];
	int a = open("kept", O_CREAT|O_WRONLY|O_TRUNC, 0644);
	int b = open("gone", O_CREAT|O_WRONLY|O_TRUNC|O_CLOEXEC, 0644);
	dup2(a, 5);
	dup3(b, 6, O_CLOEXEC);
	dup2(a, 7);
	syscall(SYS_close_range, 7, 7, CLOSE_RANGE_CLOEXEC);
	dup2(a, 8);
	fcntl(8, F_SETFD, FD_CLOEXEC);
	write(5, "x", 1);
	pthread_t th;
	pthread_create(&th, 0, thread, 0);
	pause();
	return 1;
}`, "-pthread")
	res, evs, s := record(t, Config{Argv: []string{bin}, Dir: dir})
	if res.Status() != 0 {
		t.Fatalf("status %d", res.Status())
	}
	var kept []int64
	for _, e := range evs {
		p := s.Paths.Lookup(e.Path)
		if e.Op == trace.OpWrite && (strings.HasSuffix(p, "/gone") || e.FD == 7 || e.FD == 8) {
			t.Errorf("write to a close-on-exec descriptor after exec recorded: %s", formatEvent(e, s))
		}
		if e.Op == trace.OpWrite && strings.HasSuffix(p, "/kept") {
			kept = append(kept, e.Offset)
		}
	}
	if fmt.Sprint(kept) != "[0 1]" {
		t.Errorf("writes to kept at offsets %v, want [0 1]\n%s", kept, dumpEvents(evs, s))
	}
}

// TestRestartedCall: a read interrupted by a signal handled with
// SA_RESTART is one call, recorded once, with its whole duration.
func TestRestartedCall(t *testing.T) {
	dir := t.TempDir()
	bin := buildC(t, dir, "restart", `
#include <signal.h>
#include <string.h>
#include <unistd.h>
static void on(int s) {}
int main(void) {
	int p[2];
	pipe(p);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, 0);
	pid_t parent = getpid();
	if (fork() == 0) {
		usleep(100000);
		kill(parent, SIGUSR1);
		usleep(100000);
		write(p[1], "abc", 3);
		_exit(0);
	}
	char buf[8];
	return read(p[0], buf, sizeof buf) == 3 ? 0 : 1;
}`)
	res, evs, s := record(t, Config{Argv: []string{bin}, All: true})
	if res.Status() != 0 {
		t.Fatalf("status %d", res.Status())
	}
	var reads []trace.Event
	for _, e := range evs {
		if e.Op == trace.OpRead && e.Thread == 0 && e.Size == 8 {
			reads = append(reads, e)
		}
	}
	if len(reads) != 1 || reads[0].Ret != 3 || reads[0].Dur < int64(150*time.Millisecond) {
		t.Errorf("pipe reads %d, want one of 3 bytes lasting ≥ 150ms:\n%s", len(reads), dumpEvents(reads, s))
	}
}

// TestRulesAndExclusions: /dev, /proc and non-files are not recorded by
// default; --include narrows, --exclude removes.
func TestRulesAndExclusions(t *testing.T) {
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	os.Mkdir(filepath.Join(dir, "in"), 0o755)
	os.Mkdir(filepath.Join(dir, "out"), 0o755)
	bin := buildC(t, dir, "rules", `
#include <fcntl.h>
#include <unistd.h>
int main(void) {
	char buf[64];
	int fd = open("/proc/self/status", O_RDONLY);
	read(fd, buf, sizeof buf);
	close(fd);
	fd = open("/dev/null", O_WRONLY);
	write(fd, buf, 10);
	close(fd);
	write(1, "hi\n", 3);
	int p[2];
	pipe(p);
	write(p[1], buf, 5);
	fd = open("in/x", O_CREAT|O_WRONLY, 0644);
	write(fd, buf, 1);
	close(fd);
	fd = open("out/y", O_CREAT|O_WRONLY, 0644);
	write(fd, buf, 2);
	close(fd);
	return 0;
}`)
	// Calls per path (process events, always recorded, name none; nor
	// does an *at call on its descriptor, fstat's AT_EMPTY_PATH).
	paths := func(evs []trace.Event, s *trace.SliceSink) map[string]int {
		m := map[string]int{}
		for _, e := range evs {
			if e.Path == 0 && e.Op.Info().FD == trace.FDAt && e.FD >= 0 {
				continue
			}
			if e.Op.Class() != trace.ClassProcess || e.Op == trace.OpInherit {
				m[s.Paths.Lookup(e.Path)]++
			}
		}
		return m
	}
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	_, evs, s := record(t, Config{Argv: []string{bin}, Dir: dir, Stdout: devnull})
	m := paths(evs, s)
	for p := range m {
		if strings.HasPrefix(p, "/proc") || strings.HasPrefix(p, "/dev") || p == "" {
			t.Errorf("recorded %q by default", p)
		}
	}
	if m[dir+"/in/x"] != 3 || m[dir+"/out/y"] != 3 {
		t.Errorf("files in the directory: %v", m)
	}

	rules, err := filter.NewPaths([]string{dir}, []string{dir + "/out"}, true)
	if err != nil {
		t.Fatal(err)
	}
	_, evs, s = record(t, Config{Argv: []string{bin}, Dir: dir, Rules: rules, Stdout: devnull})
	m = paths(evs, s)
	if len(m) != 1 || m[dir+"/in/x"] != 3 {
		t.Errorf("with --include %s --exclude %s/out: %v", dir, dir, m)
	}

	_, evs, s = record(t, Config{Argv: []string{bin}, Dir: dir, All: true, Stdout: devnull})
	m = paths(evs, s)
	if m["/proc/self/status"] != 3 {
		t.Errorf("All: /proc/self/status events %d, want 3 (%v)", m["/proc/self/status"], m)
	}
	if m["/dev/null"] != 5 {
		t.Errorf("All: /dev/null events %d, want 5: open, write, close, stdout learnt (inherit) and the write to it (%v)", m["/dev/null"], m)
	}
	pipeWrites := 0
	for _, e := range evs {
		if e.Op == trace.OpWrite && strings.HasPrefix(s.Paths.Lookup(e.Path), "pipe:") {
			pipeWrites++
		}
	}
	if pipeWrites != 1 {
		t.Errorf("All: %d pipe writes, want 1", pipeWrites)
	}
}

// TestPythonThreads traces python3 writing files from threads.
func TestPythonThreads(t *testing.T) {
	py := needTool(t, "python3")
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	script := `
import os, threading
def work(i):
    with open("t%d" % i, "wb") as f:
        for _ in range(10):
            f.write(b"x" * 100)
            f.flush()
ts = [threading.Thread(target=work, args=(i,)) for i in range(3)]
for t in ts: t.start()
for t in ts: t.join()
os.rename("t0", "r0")
`
	res, evs, s := record(t, Config{Argv: []string{py, "-c", script}, Dir: dir})
	if res.Status() != 0 {
		t.Fatalf("status %d", res.Status())
	}
	writes := map[string][]int64{}
	threads := map[string]uint32{}
	renamed := false
	for _, e := range evs {
		p := s.Paths.Lookup(e.Path)
		if e.Op == trace.OpWrite && strings.HasPrefix(p, dir+"/t") {
			writes[p] = append(writes[p], e.Offset)
			threads[p] = e.Thread
		}
		if e.Op.Info().Family == "rename" && p == dir+"/t0" && s.Paths.Lookup(e.Path2) == dir+"/r0" {
			renamed = true
		}
	}
	seen := map[uint32]bool{}
	for i := 0; i < 3; i++ {
		p := fmt.Sprintf("%s/t%d", dir, i)
		offs := writes[p]
		if len(offs) != 10 {
			t.Errorf("%s: %d writes, want 10", p, len(offs))
			continue
		}
		for j, o := range offs {
			if o != int64(100*j) {
				t.Errorf("%s: write %d at %d", p, j, o)
			}
		}
		if threads[p] == 0 || seen[threads[p]] {
			t.Errorf("%s written by thread %d; threads %v", p, threads[p], threads)
		}
		seen[threads[p]] = true
	}
	if !renamed {
		t.Error("rename missing")
	}
}

// TestGoProgram traces a Go program whose goroutines write files.
func TestGoProgram(t *testing.T) {
	goTool := needTool(t, "go")
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	src := `package main

import (
	"fmt"
	"os"
	"sync"
)

func main() {
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			f, err := os.Create(fmt.Sprintf("g%d", i))
			if err != nil {
				panic(err)
			}
			for j := 0; j < 5; j++ {
				f.Write(make([]byte, 1000))
			}
			f.Sync()
			f.Close()
		}(i)
	}
	wg.Wait()
	b, err := os.ReadFile("g0")
	if err != nil || len(b) != 5000 {
		os.Exit(1)
	}
}
`
	os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module gprog\n\ngo 1.21\n"), 0o644)
	cmd := exec.Command(goTool, "build", "-o", "gprog", ".")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	res, evs, s := record(t, Config{Argv: []string{"./gprog"}, Dir: dir})
	if res.Status() != 0 {
		t.Fatalf("status %d", res.Status())
	}
	writes := map[string]int{}
	syncs := 0
	var reads int64
	for _, e := range evs {
		p := s.Paths.Lookup(e.Path)
		switch {
		case e.Op == trace.OpWrite && strings.HasPrefix(p, dir+"/g"):
			if e.Offset != int64(1000*writes[p]) {
				t.Errorf("%s: write at %d, want %d", p, e.Offset, 1000*writes[p])
			}
			writes[p]++
		case e.Op == trace.OpFsync:
			syncs++
		case e.Op == trace.OpRead && p == dir+"/g0" && e.Ret > 0:
			reads += e.Ret
		}
	}
	if len(writes) != 4 || syncs != 4 || reads != 5000 {
		t.Errorf("writes %v, fsyncs %d, bytes read %d\n%s", writes, syncs, reads, dumpEvents(evs, s))
	}
}

// TestShellPipeline traces a shell pipeline with a redirection.
func TestShellPipeline(t *testing.T) {
	sh := needTool(t, "sh")
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	os.WriteFile(filepath.Join(dir, "in"), []byte("hello pipeline\n"), 0o644)
	res, evs, s := record(t, Config{Argv: []string{sh, "-c", "cat in | tr a-z A-Z > out; cat out >> out2"}, Dir: dir})
	if res.Status() != 0 {
		t.Fatalf("status %d", res.Status())
	}
	var readIn, wroteOut, appended bool
	threads := map[uint32]bool{}
	for _, e := range evs {
		p := s.Paths.Lookup(e.Path)
		threads[e.Thread] = true
		switch {
		case e.Op == trace.OpRead && p == dir+"/in" && e.Ret == 15:
			readIn = true
		case e.Op == trace.OpWrite && p == dir+"/out" && e.Ret == 15 && e.FD == 1:
			wroteOut = true
		case e.Op == trace.OpWrite && p == dir+"/out2" && e.Ret == 15 && e.Offset == 0:
			appended = true
		}
	}
	if !readIn || !wroteOut || !appended {
		t.Errorf("read in %v, wrote out %v, appended out2 %v\n%s", readIn, wroteOut, appended, dumpEvents(evs, s))
	}
	if len(threads) < 3 {
		t.Errorf("events from threads %v, want the shell and its children", threads)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "out2")); string(b) != "HELLO PIPELINE\n" {
		t.Errorf("out2 = %q", b)
	}
}

// TestGroupStop: a program stopped by SIGSTOP stays stopped until
// SIGCONT, and goes on after it.
func TestGroupStop(t *testing.T) {
	dir := t.TempDir()
	bin := buildC(t, dir, "stopper", `
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
int main(void) {
	int p[2];
	pipe(p);
	pid_t child = fork();
	if (child == 0) {
		close(p[1]);
		char c;
		read(p[0], &c, 1);
		return 0;
	}
	kill(child, SIGSTOP);
	int st;
	waitpid(child, &st, WUNTRACED);
	if (!WIFSTOPPED(st)) return 2;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	usleep(200000);
	kill(child, SIGCONT);
	write(p[1], "x", 1);
	waitpid(child, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 3;
}`)
	done := make(chan Result, 1)
	go func() {
		res, _, _ := record(t, Config{Argv: []string{bin}})
		done <- res
	}()
	select {
	case res := <-done:
		if res.Status() != 0 {
			t.Errorf("status %d", res.Status())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the program hung after SIGSTOP/SIGCONT")
	}
}

// TestFewAllocations: the hot path allocates nothing per event.
func TestFewAllocations(t *testing.T) {
	dir := t.TempDir()
	bin := buildC(t, dir, "many", `
#include <fcntl.h>
#include <unistd.h>
int main(void) {
	char buf[512] = {0};
	int fd = open("f", O_CREAT|O_RDWR|O_TRUNC, 0644);
	for (int i = 0; i < 5000; i++) {
		pwrite(fd, buf, sizeof buf, (i % 64) * 512);
		write(fd, buf, 16);
	}
	close(fd);
	return 0;
}`)
	var before, after runtime.MemStats
	sink := &countSink{}
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := Run(Config{Argv: []string{bin}, Dir: dir, Sink: sink})
	runtime.ReadMemStats(&after)
	if err != nil || res.Status() != 0 {
		t.Fatalf("run: %v, status %d", err, res.Status())
	}
	if sink.n < 10000 {
		t.Fatalf("%d events", sink.n)
	}
	if allocs := after.Mallocs - before.Mallocs; allocs > 1000 {
		t.Errorf("%d allocations for %d events", allocs, sink.n)
	} else {
		t.Logf("%d allocations for %d events", allocs, sink.n)
	}
}

// countSink counts events and keeps nothing.
type countSink struct {
	n     int
	paths trace.Paths
}

func (c *countSink) WriteEvents(evs []trace.Event) error { c.n += len(evs); return nil }
func (c *countSink) Intern(p string) trace.PathID        { return 1 }

// TestSharedTableAndSpawn: a process made with CLONE_FILES shares its
// parent's descriptor table; posix_spawn (vfork-style clone) and
// unshare(CLONE_FILES) work too.
func TestSharedTableAndSpawn(t *testing.T) {
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	bin := buildC(t, dir, "sharedprog", `
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
extern char **environ;
static int child(void *arg) {
	int fd = open("shared", O_CREAT|O_WRONLY|O_TRUNC, 0644);
	return fd == 7 ? 0 : 1;
}
int main(void) {
	syscall(SYS_close_range, 3, ~0U, 0); /* inherited descriptors would shift 7 */
	dup2(2, 6); /* keep 3..6 busy so that the child's open gets 7 */
	dup2(2, 5); dup2(2, 4); dup2(2, 3);
	char *stack = malloc(1 << 16);
	pid_t pid = clone(child, stack + (1 << 16), CLONE_FILES | SIGCHLD, 0);
	int st;
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return 2;
	write(7, "shared table", 12);
	unshare(CLONE_FILES);
	write(7, "!", 1);
	pid_t sp;
	char *argv[] = {"sh", "-c", "echo spawned >> spawned", 0};
	if (posix_spawn(&sp, "/bin/sh", 0, 0, argv, environ) != 0) return 3;
	waitpid(sp, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 4;
}`)
	res, evs, s := record(t, Config{Argv: []string{bin}, Dir: dir})
	if res.Status() != 0 {
		t.Fatalf("status %d\n%s", res.Status(), dumpEvents(evs, s))
	}
	var offs []int64
	spawned := false
	for _, e := range evs {
		p := s.Paths.Lookup(e.Path)
		if e.Op == trace.OpWrite && p == dir+"/shared" && e.FD == 7 {
			offs = append(offs, e.Offset)
		}
		if e.Op == trace.OpWrite && p == dir+"/spawned" && e.Ret == 8 && e.Thread >= 2 {
			spawned = true
		}
	}
	if fmt.Sprint(offs) != "[0 12]" || !spawned {
		t.Errorf("writes to shared at %v, spawned child recorded %v\n%s", offs, spawned, dumpEvents(evs, s))
	}
}

// dupFamilyC goes through every way of making, sharing and dropping a
// descriptor: dup3, fcntl F_DUPFD_CLOEXEC and F_DUPFD, dup2, close_range,
// vfork (a copied table whose file positions are shared) and a thread
// (a shared table), with every vector and positioned call in between.
const dupFamilyC = `
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static char buf[64];
static int fd, td;

static void *thread(void *arg) {
	td = dup(fd);
	return 0;
}

int main(void) {
	struct iovec iov[2] = {{buf, 3}, {buf + 3, 5}};
	syscall(SYS_close_range, 3, ~0U, 0);
	fd = open("f", O_CREAT|O_RDWR|O_TRUNC, 0644);
	write(fd, buf, 10);
	int a = dup3(fd, 10, O_CLOEXEC);
	write(a, buf, 5);
	int b = fcntl(fd, F_DUPFD_CLOEXEC, 20);
	write(b, buf, 5);
	int c = dup2(fd, 30);
	pwritev(c, iov, 2, 100);
	write(c, buf, 1);
	preadv2(c, iov, 2, -1, 0);
	lseek(fd, -4, SEEK_CUR);
	readv(a, iov, 2);
	pwritev2(fd, iov, 2, 50, 0);
	pwritev2(fd, iov, 2, -1, 0);
	preadv(b, iov, 2, 0);
	syscall(SYS_close_range, 10, 20, 0);
	if (write(a, buf, 1) != -1) return 2;
	int g = open("g", O_CREAT|O_WRONLY|O_TRUNC, 0644);
	int g10 = fcntl(g, F_DUPFD, 10);
	write(g10, buf, 2);
	pid_t pid = vfork();
	if (pid == 0) {
		write(fd, buf, 4);
		_exit(0);
	}
	waitpid(pid, 0, 0);
	write(c, buf, 1);
	pthread_t th;
	pthread_create(&th, 0, thread, 0);
	pthread_join(th, 0);
	write(td, buf, 2);
	return 0;
}
`

// TestDescriptorFamily checks descriptors, paths and offsets through the
// dup family, close_range, vfork and a thread's dup, and the vector and
// positioned calls, event by event.
func TestDescriptorFamily(t *testing.T) {
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	bin := buildC(t, dir, "dupfamily", dupFamilyC, "-pthread")
	res, evs, s := record(t, Config{Argv: []string{bin}, Dir: dir})
	if res.Status() != 0 {
		t.Fatalf("exit status %d\n%s", res.Status(), dumpEvents(evs, s))
	}
	want := []wantEv{
		{"openat", "f", 3, 0, 0, 3, 0, ""},
		{"write", "f", 3, 0, 10, 10, 0, ""},
		{"dup3", "f", 3, 0, 0, 10, 0, ""},
		{"write", "f", 10, 10, 5, 5, 0, ""},
		{"fcntl", "f", 3, 0, 20, 20, 0, ""},
		{"write", "f", 20, 15, 5, 5, 0, ""},
		{"dup2", "f", 3, 0, 0, 30, 0, ""},
		{"pwritev", "f", 30, 100, 8, 8, 0, ""},
		{"write", "f", 30, 20, 1, 1, 0, ""},
		{"preadv2", "f", 30, 21, 8, 8, 0, ""},
		{"lseek", "f", 3, -4, 0, 25, 0, ""},
		{"readv", "f", 10, 25, 8, 8, 0, ""},
		{"pwritev2", "f", 3, 50, 8, 8, 0, ""},
		{"pwritev2", "f", 3, 33, 8, 8, 0, ""},
		{"preadv", "f", 20, 0, 8, 8, 0, ""},
		{"close_range", "", 10, 0, 20, 0, 0, ""},
		// The write to the closed descriptor 10 is not recorded: it names
		// no file any more.
		{"openat", "g", 4, 0, 0, 4, 0, ""},
		{"fcntl", "g", 4, 0, 10, 10, 0, ""},
		{"write", "g", 10, 0, 2, 2, 0, ""},
		{"write", "f", 3, 41, 4, 4, 1, ""}, // the vfork child
		{"write", "f", 30, 45, 1, 1, 0, ""},
		{"dup", "f", 3, 0, 0, 4 + 1, 2, ""}, // the thread
		{"write", "f", 5, 46, 2, 2, 0, ""},
	}
	var got []trace.Event
	for _, e := range evs {
		p := s.Paths.Lookup(e.Path)
		if (p == dir || strings.HasPrefix(p, dir+"/")) && p != bin || e.Op == trace.OpCloseRange {
			got = append(got, e)
		}
	}
	rel := func(id trace.PathID) string {
		if id == 0 {
			return ""
		}
		return strings.TrimPrefix(s.Paths.Lookup(id), dir+"/")
	}
	for i := 0; i < max(len(got), len(want)); i++ {
		if i >= len(got) || i >= len(want) {
			t.Errorf("%d events, want %d", len(got), len(want))
			break
		}
		e, w := got[i], want[i]
		if e.Op.Info().Name != w.family || rel(e.Path) != w.path || e.FD != w.fd || e.Offset != w.off ||
			e.Size != w.size || e.Ret != w.ret || e.Thread != w.thread || rel(e.Path2) != w.path2 {
			t.Errorf("event %d: %s\n  want %+v", i, formatEvent(e, s), w)
		}
	}
	if len(res.Threads) != 3 || res.Threads[1].Parent != 0 || res.Threads[2].Parent != 0 {
		t.Errorf("threads %+v, want main, the vfork child and the thread", res.Threads)
	}
	if t.Failed() {
		t.Logf("all events:\n%s", dumpEvents(evs, s))
	}
}

// TestStatSizes: a stat of the family that found a regular file records
// its size (trace.SizeSeen); one of a directory, one that failed and an
// lstat of a symbolic link record none.
func TestStatSizes(t *testing.T) {
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, 12345), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Symlink("f", filepath.Join(dir, "l"))
	bin := buildC(t, dir, "stats", `
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
int main(void) {
	struct stat st;
	struct statx sx;
	stat("f", &st);
	lstat("l", &st);
	stat(".", &st);
	stat("missing", &st);
	statx(AT_FDCWD, "f", 0, STATX_SIZE | STATX_TYPE, &sx);
	int fd = open("f", O_RDONLY);
	fstat(fd, &st);
	fstatat(AT_FDCWD, "l", &st, 0);
	close(fd);
	return 0;
}`)
	_, evs, s := record(t, Config{Argv: []string{bin}, Dir: dir})
	// glibc makes stat and lstat fstatat, fstat fstatat(fd, "",
	// AT_EMPTY_PATH); the program's calls come after the loader's.
	var got []string
	mine := false
	for _, e := range evs {
		mine = mine || strings.HasPrefix(s.Paths.Lookup(e.Path), dir)
		if !mine || e.Op.Info().Family != "stat" || e.Op == trace.OpAccess {
			continue
		}
		p := filepath.Base(s.Paths.Lookup(e.Path))
		if e.Path == 0 {
			p = "fd"
		}
		got = append(got, fmt.Sprintf("%v %s %d %v", e.Op, p, e.Size, e.Flags&trace.SizeSeen != 0))
	}
	want := []string{
		"fstatat f 12345 true", "fstatat l 0 false", "fstatat " + filepath.Base(dir) + " 0 false", "fstatat missing 0 false",
		"statx f 12345 true", "fstatat fd 12345 true", "fstatat l 12345 true",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
