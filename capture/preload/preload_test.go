package preload

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
)

// needCC skips t without a C compiler (fails under CI, which has one).
func needCC(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("cc"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("cc is required under CI")
		}
		t.Skip("no C compiler (cc)")
	}
}

var shim struct {
	sync.Once
	libs Libs
	err  error
}

func TestMain(m *testing.M) {
	cache, err := os.MkdirTemp("", "iotrace-shim-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("IOTRACE_CACHE", cache)
	code := m.Run()
	os.RemoveAll(cache)
	os.Exit(code)
}

// buildShim builds the shim into a fresh cache, once for the tests.
func buildShim(t testing.TB) Libs {
	t.Helper()
	needCC(t)
	shim.Do(func() { shim.libs, shim.err = Build() })
	if shim.err != nil {
		t.Fatal(shim.err)
	}
	return shim.libs
}

func compile(t testing.TB, dir, name, src string, flags ...string) string {
	t.Helper()
	c := filepath.Join(dir, name+".c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	if len(flags) == 0 {
		flags = []string{"-O1"}
	}
	args := append(flags, "-pthread", "-o", bin, c)
	if out, err := exec.Command("cc", args...).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	return bin
}

// record runs bin with the shim in dir and returns its spool directory.
func record(t testing.TB, libs Libs, dir, bin string, args ...string) (string, error) {
	t.Helper()
	spool, _, err := recordOutput(t, libs, dir, bin, args...)
	return spool, err
}

// recordOutput is record, returning the program's output too. The
// spools are made ready to read as iotrace record makes them (Recover).
func recordOutput(t testing.TB, libs Libs, dir, bin string, args ...string) (string, []byte, error) {
	t.Helper()
	return recordEnv(t, libs, dir, nil, bin, args...)
}

// recordEnv is recordOutput with env added to the program's environment,
// after the shim's own (a value there wins).
func recordEnv(t testing.TB, libs Libs, dir string, env []string, bin string, args ...string) (string, []byte, error) {
	t.Helper()
	spool := filepath.Join(dir, "spool")
	os.RemoveAll(spool)
	if err := os.Mkdir(spool, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(append(append(os.Environ(), "LD_PRELOAD="+libs.Preload("")), Env(spool)...), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Logf("%s: %v\n%s", bin, err, out)
	}
	if rerr := Recover(spool); rerr != nil {
		t.Fatal(rerr)
	}
	return spool, out, err
}

// encode reads the spools of dir and returns each rank's events.
func encode(t *testing.T, spool string, rules *filter.Paths) (map[uint32][]trace.Event, *trace.Paths, []Stats) {
	t.Helper()
	run, err := ReadDir(spool, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if len(run.Warnings) > 0 {
		t.Errorf("warnings: %v", run.Warnings)
	}
	sink := trace.NewSliceSink()
	out := map[uint32][]trace.Event{}
	var stats []Stats
	for _, r := range run.Ranks() {
		sink.Events = nil
		st, err := run.Encode(r, sink, rules)
		if err != nil {
			t.Fatal(err)
		}
		out[r] = append([]trace.Event(nil), sink.Events...)
		stats = append(stats, st)
	}
	return out, sink.Paths, stats
}

const posixProg = `
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static void *worker(void *arg) {
	int fd = open("thread.dat", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	char b[100] = {0};
	for (int i = 0; i < 5; i++) write(fd, b, 100);
	close(fd);
	return arg;
}

int main(void) {
	char buf[4096] = {0};
	mkdir("sub", 0755);
	int d = open("sub", O_RDONLY | O_DIRECTORY);
	int fd = openat(d, "data.dat", O_RDWR | O_CREAT | O_TRUNC, 0600);
	for (int i = 0; i < 4; i++) pwrite(fd, buf, 4096, i * 4096);
	write(fd, buf, 100);           /* at 0 */
	lseek(fd, 8192, SEEK_SET);
	read(fd, buf, 1000);           /* at 8192 */
	struct iovec iov[2] = {{buf, 10}, {buf, 20}};
	writev(fd, iov, 2);            /* at 9192 */
	fsync(fd);
	ftruncate(fd, 20000);
	int fd2 = dup(fd);
	write(fd2, buf, 8);            /* at 9222 */
	close(fd);
	close(fd2);
	close(d);
	FILE *f = fopen("log.txt", "w");
	fwrite(buf, 1, 50, f);
	fseek(f, 10, SEEK_SET);
	fwrite(buf, 2, 5, f);
	fclose(f);
	f = fopen("log.txt", "r");
	fread(buf, 1, 60, f);
	fclose(f);
	struct stat st;
	stat("sub/data.dat", &st);
	access("log.txt", R_OK);
	rename("log.txt", "log2.txt");
	unlink("log2.txt");
	pthread_t th;
	pthread_create(&th, NULL, worker, NULL);
	pthread_join(th, NULL);
	pid_t p = fork();
	if (p == 0) {
		int c = open("child.dat", O_WRONLY | O_CREAT, 0644);
		pwrite(c, buf, 77, 0);
		close(c);
		_exit(0);
	}
	waitpid(p, NULL, 0);
	write(1, "x", 1); /* a terminal or pipe: not a file */
	return 0;
}
`

// TestShimPOSIX records a program doing every kind of POSIX and stdio
// call, with a thread and a child process, and checks the events.
func TestShimPOSIX(t *testing.T) {
	libs := buildShim(t)
	dir := t.TempDir()
	bin := compile(t, dir, "posix", posixProg)
	spool, err := record(t, libs, dir, bin)
	if err != nil {
		t.Fatal(err)
	}
	rules, _ := filter.NewPaths([]string{dir}, nil, true)
	evs, paths, stats := encode(t, spool, rules)
	if len(evs) != 1 {
		t.Fatalf("ranks %v, want rank 0 only", len(evs))
	}
	if stats[0].Processes != 2 || stats[0].Threads < 3 {
		t.Errorf("stats %+v: want 2 processes and 3 threads", stats[0])
	}
	real, _ := filepath.EvalSymlinks(dir)
	var lines []string
	threads := map[uint32]bool{}
	for _, e := range evs[0] {
		name := paths.Lookup(e.Path)
		name = strings.TrimPrefix(strings.TrimPrefix(name, real), dir)
		threads[e.Thread] = true
		s := fmt.Sprintf("%s %s", e.Op, name)
		if e.Op.Dir() != trace.DirNone {
			s += fmt.Sprintf(" off=%d size=%d ret=%d", e.Offset, e.Size, e.Ret)
		}
		lines = append(lines, s)
	}
	got := strings.Join(lines, "\n")
	for _, want := range []string{
		"mkdir /sub",
		"open /sub",
		"openat /sub/data.dat",
		"pwrite  off=12288 size=4096 ret=4096",
		"write  off=0 size=100 ret=100",
		"lseek ",
		"read  off=8192 size=1000 ret=1000",
		"writev  off=9192 size=30 ret=30",
		"fsync ",
		"ftruncate ",
		"dup ",
		"write  off=9222 size=8 ret=8",
		// stdio as the kernel sees it: fwrite's bytes are written when
		// fseek flushes them, and at fclose; fread refills the buffer.
		"fopen /log.txt\nfstat \nwrite  off=0 size=50 ret=50\nlseek \nwrite  off=10 size=10 ret=10\nfclose ",
		"fopen /log.txt\nfstat \nread  off=0 size=4096 ret=50\nread  off=50 size=4096 ret=0\nfclose ",
		"stat /sub/data.dat",
		"access /log.txt",
		"rename /log.txt",
		"unlink /log2.txt",
		"open /thread.dat",
		"open /child.dat",
		"pwrite  off=0 size=77 ret=77",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in the events:\n%s", want, got)
		}
	}
	count := map[trace.Op]int{}
	for _, e := range evs[0] {
		count[e.Op]++
	}
	if count[trace.OpWrite] != 2+5+2 || count[trace.OpPwrite] != 4+1 || count[trace.OpFwrite] != 0 || count[trace.OpClose] != 3+1+1 {
		t.Errorf("write %d, pwrite %d, fwrite %d, close %d; want 9, 5, 0, 5\n%s",
			count[trace.OpWrite], count[trace.OpPwrite], count[trace.OpFwrite], count[trace.OpClose], got)
	}
	if len(threads) != 3 {
		t.Errorf("threads %v, want the main thread, the worker and the child", threads)
	}
	for i := 1; i < len(evs[0]); i++ {
		if evs[0][i].Start < evs[0][i-1].Start {
			t.Fatalf("events not in start order at %d", i)
		}
	}
}

// TestShimCrash checks that a process killed mid-run keeps every call it
// finished: the spool is shared memory, not a buffer.
func TestShimCrash(t *testing.T) {
	libs := buildShim(t)
	dir := t.TempDir()
	bin := compile(t, dir, "crash", `
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
int main(void) {
	char b[64] = {0};
	int fd = open("crash.dat", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	for (int i = 0; i < 100000; i++) pwrite(fd, b, 64, (off_t)i * 64);
	raise(SIGKILL);
	return 0;
}
`)
	spool, err := record(t, libs, dir, bin)
	if err == nil {
		t.Fatal("the program was not killed")
	}
	evs, _, stats := encode(t, spool, nil)
	n := 0
	for _, e := range evs[0] {
		if e.Op == trace.OpPwrite && e.Ret == 64 {
			n++
		}
	}
	if n != 100000 || stats[0].Incomplete != 0 {
		t.Errorf("%d of 100000 pwrites survived the crash, %d incomplete", n, stats[0].Incomplete)
	}
}

// TestShimMPIPartLoadsWithoutMPI checks that the MPI part, preloaded into
// a program without MPI, lets it run (it finds the library at run time).
func TestShimMPIPartLoadsWithoutMPI(t *testing.T) {
	libs := buildShim(t)
	if libs.MPI == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the MPI part was not built under CI: %v", libs.MPIErr)
		}
		t.Skipf("MPI part not built: %v", libs.MPIErr)
	}
	dir := t.TempDir()
	bin := compile(t, dir, "plain", "#include <stdio.h>\nint main(void){FILE*f=fopen(\"p.txt\",\"w\");fputs(\"x\",f);fclose(f);return 0;}\n")
	spool, err := record(t, libs, dir, bin)
	if err != nil {
		t.Fatal(err)
	}
	evs, _, _ := encode(t, spool, nil)
	if len(evs[0]) < 2 {
		t.Errorf("events %v", evs[0])
	}
}

// TestShimKeepsDescriptorsFree checks that the shim holds no descriptor
// of the program's: its first open gets the descriptor it gets without
// the shim (3, unless the test inherited some), and a
// program that closes every descriptor but the standard ones (as daemons
// do) still has its later calls recorded, in windows of its spool the
// shim maps after that.
func TestShimKeepsDescriptorsFree(t *testing.T) {
	libs := buildShim(t)
	dir := t.TempDir()
	bin := compile(t, dir, "fds", `
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
	int fd = open("first.dat", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (argc > 1 && fd != atoi(argv[1])) { fprintf(stderr, "first open got %d, %s without the shim\n", fd, argv[1]); return 1; }
	if (argc == 1) { printf("%d\n", fd); return 0; }
	close(fd);
	for (int i = 3; i < 4096; i++) close(i);
	char b[64] = {0};
	fd = open("after.dat", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	/* more records than a window of the spool holds: the shim maps more */
	for (int i = 0; i < 200000; i++) pwrite(fd, b, 64, (off_t)i * 64);
	close(fd);
	return 0;
}
`)
	cmd := exec.Command(bin)
	cmd.Dir = dir
	plain, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	first := strings.TrimSpace(string(plain))
	spool, err := record(t, libs, dir, bin, first)
	if err != nil {
		t.Fatal(err)
	}
	evs, _, stats := encode(t, spool, nil)
	n := 0
	for _, e := range evs[0] {
		if e.Op == trace.OpPwrite && e.Ret == 64 {
			n++
		}
	}
	if n != 200000 || stats[0].Dropped != 0 {
		t.Errorf("%d of 200000 pwrites after closing every descriptor, %d dropped", n, stats[0].Dropped)
	}
}

// TestShimFileSizeLimit checks that a process with a file size limit
// (RLIMIT_FSIZE, ulimit -f) is not killed by the shim's spool, which the
// shim sizes within the limit, and still has its calls recorded.
func TestShimFileSizeLimit(t *testing.T) {
	libs := buildShim(t)
	dir := t.TempDir()
	bin := compile(t, dir, "fsize", `
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
int main(void) {
	struct rlimit rl = {32 << 20, 32 << 20};
	if (setrlimit(RLIMIT_FSIZE, &rl) != 0) { perror("setrlimit"); return 2; }
	pid_t p = fork(); /* the child's shim opens its spool under the limit */
	if (p == 0) {
		char b[64] = {0};
		int fd = open("limited.dat", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		for (int i = 0; i < 1000; i++) pwrite(fd, b, 64, (off_t)i * 64);
		close(fd);
		_exit(0);
	}
	int st;
	waitpid(p, &st, 0);
	if (!WIFEXITED(st)) { fprintf(stderr, "child killed by signal %d\n", WTERMSIG(st)); return 1; }
	return WEXITSTATUS(st);
}
`)
	spool, err := record(t, libs, dir, bin)
	if err != nil {
		t.Fatal(err)
	}
	evs, _, _ := encode(t, spool, nil)
	n := 0
	for _, e := range evs[0] {
		if e.Op == trace.OpPwrite {
			n++
		}
	}
	if n != 1000 {
		t.Errorf("%d of 1000 pwrites of the limited process recorded", n)
	}
}

// TestShimSignalHandlers records a program whose signal handler writes to
// a file while the main thread writes another: a handler that interrupts
// the shim while it writes a record writes its own into the thread's side
// block. Every call of the main thread is recorded, and those of the
// handler that did not interrupt a call the shim was making (those pass
// through, as the shim's own calls do), in start order.
func TestShimSignalHandlers(t *testing.T) {
	libs := buildShim(t)
	dir := t.TempDir()
	bin := compile(t, dir, "sig", `
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static int hfd;
static volatile sig_atomic_t n, done;
static pthread_t main_thread;
static void on_usr1(int sig) { (void)sig; if (write(hfd, "x", 1) == 1) n++; }
/* signals the main thread as fast as it can: they land anywhere, in the
 * shim writing a record too */
static void *kicker(void *arg) {
	while (!done) pthread_kill(main_thread, SIGUSR1);
	return arg;
}
int main(void) {
	char b[64] = {0};
	hfd = open("handler.dat", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int fd = open("main.dat", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	main_thread = pthread_self();
	pthread_t k;
	pthread_create(&k, NULL, kicker, NULL);
	for (int i = 0; i < 300000; i++) {
		pwrite(fd, b, 64, (off_t)(i % 1024) * 64);
		for (volatile int j = 0; j < 300; j++) {
		} /* time in the program, where the handler's calls are recorded */
	}
	done = 1;
	pthread_join(k, NULL);
	close(fd);
	close(hfd);
	printf("%d\n", (int)n);
	return 0;
}
`)
	spool, out, err := recordOutput(t, libs, dir, bin)
	if err != nil {
		t.Fatal(err)
	}
	handled, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("output %q", out)
	}
	evs, _, stats := encode(t, spool, nil)
	pwrites, writes := 0, 0
	for i, e := range evs[0] {
		switch e.Op {
		case trace.OpPwrite:
			pwrites++
		case trace.OpWrite:
			writes++
		}
		if i > 0 && e.Start < evs[0][i-1].Start {
			t.Fatalf("events not in start order at %d", i)
		}
	}
	if pwrites != 300000 || writes > handled || writes == 0 || stats[0].Incomplete != 0 || stats[0].Dropped != 0 {
		t.Errorf("%d pwrites of 300000, %d handler writes of %d, stats %+v", pwrites, writes, handled, stats[0])
	}
	// How many of the handler's records went to side blocks (it
	// interrupted the shim writing one): logged, not required (timing).
	names, _ := filepath.Glob(filepath.Join(spool, "spool-*.sp"))
	side := 0
	for _, n := range names {
		s, err := OpenSpool(n)
		if err != nil {
			t.Fatal(err)
		}
		bs, _ := s.index()
		for _, b := range bs {
			if b.side {
				side++
			}
		}
		s.Close()
	}
	t.Logf("%d signals handled, %d of their writes recorded, %d side blocks", handled, writes, side)
	if handled >= 10000 && side == 0 {
		t.Errorf("no handler interrupted the shim writing a record in %d signals: the side blocks were not tried", handled)
	}
}

// TestBuildOnce checks that the processes of a job starting at once on a
// node build the shim once (its POSIX part, MPI part and clock library):
// one builds, the others wait for it (each build is seconds of CPU).
func TestBuildOnce(t *testing.T) {
	if c := os.Getenv("IOTRACE_TEST_BUILD_CACHE"); c != "" {
		os.Setenv("IOTRACE_CACHE", c)
		if _, err := Build(); err != nil {
			t.Fatal(err)
		}
		return
	}
	needCC(t)
	dir := t.TempDir()
	cc, _ := exec.LookPath("cc")
	log := filepath.Join(dir, "cc.log")
	wrapper := filepath.Join(dir, "cc")
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\necho \"$@\" >> "+log+"\nexec "+cc+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var cmds []*exec.Cmd
	for range 4 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBuildOnce$")
		cmd.Env = append(os.Environ(), "IOTRACE_TEST_BUILD_CACHE="+filepath.Join(dir, "cache"), "CC="+wrapper)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("a build: %v", err)
		}
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "shim.c"); n != 1 {
		t.Errorf("shim.c compiled %d times by 4 processes at once, want 1:\n%s", n, b)
	}
	// The MPI part and the clock library, where mpi.h is found: once too.
	mpi, clk := strings.Count(string(b), " mpi.c "), strings.Count(string(b), " clocklib.c ")
	if _, err := mpiCFlags(); err == nil && (mpi != 1 || clk != 1) || mpi > 1 || clk > 1 {
		t.Errorf("mpi.c compiled %d times, clocklib.c %d times by 4 processes at once, want 1 each (with mpi.h):\n%s", mpi, clk, b)
	}
}

// TestShimStatSizes: the stats of the family that found a regular file
// record its size (trace.SizeSeen), through every spelling a program
// calls; one of a directory, a failed one and an lstat of a symbolic
// link record none.
func TestShimStatSizes(t *testing.T) {
	libs := buildShim(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, 12345), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Symlink("f", filepath.Join(dir, "l"))
	bin := compile(t, dir, "stats", `
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
int main(void) {
	struct stat st;
	struct stat64 st64;
	struct statx sx;
	stat("f", &st);
	lstat("l", &st);
	stat(".", &st);
	stat("missing", &st);
	stat64("f", &st64);
	statx(AT_FDCWD, "f", 0, STATX_SIZE | STATX_TYPE, &sx);
	int fd = open("f", O_RDONLY);
	fstat(fd, &st);
	fstatat(AT_FDCWD, "l", &st, 0);
	close(fd);
	return 0;
}`)
	spool, err := record(t, libs, dir, bin)
	if err != nil {
		t.Fatal(err)
	}
	rules, _ := filter.NewPaths([]string{dir}, nil, true)
	evs, paths, _ := encode(t, spool, rules)
	var got []string
	for _, e := range evs[0] {
		if e.Op.Info().Family != "stat" {
			continue
		}
		p := filepath.Base(paths.Lookup(e.Path))
		if e.Path == 0 {
			p = "fd" // a call on a descriptor names its file by it
		}
		got = append(got, fmt.Sprintf("%v %s %d %v", e.Op, p, e.Size, e.Flags&trace.SizeSeen != 0))
	}
	want := []string{
		"stat f 12345 true", "lstat l 0 false", "stat " + filepath.Base(dir) + " 0 false", "stat missing 0 false",
		"stat f 12345 true", "statx f 12345 true", "fstat fd 12345 true", "fstatat l 12345 true",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
