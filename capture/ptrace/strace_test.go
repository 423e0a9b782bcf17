//go:build linux && (amd64 || arm64)

package ptrace

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// allCallsC makes every traced call at least once, from a forked child
// and a thread too, and some of them fail.
const allCallsC = `
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

struct how { unsigned long long flags, mode, resolve; };

static void *thread(void *arg) {
	char buf[64] = "thread";
	int fd = open("t.out", O_CREAT|O_WRONLY|O_TRUNC, 0644);
	write(fd, buf, 6);
	pwrite(fd, buf, 6, 100);
	fsync(fd);
	close(fd);
	return 0;
}

int main(void) {
	static char buf[8192];
	struct iovec iov[2] = {{buf, 100}, {buf + 100, 200}};
	struct stat st;
	struct statx stx;
	memset(buf, 'x', sizeof buf);

	mkdir("d", 0755);
	mkdirat(AT_FDCWD, "d/e", 0755);
	int dfd = open("d", O_RDONLY|O_DIRECTORY);
	int fd = openat(dfd, "f", O_CREAT|O_RDWR|O_TRUNC, 0644);
	write(fd, buf, 1000);
	pwrite(fd, buf, 100, 2000);
	writev(fd, iov, 2);
	pwritev(fd, iov, 2, 3000);
	pwritev2(fd, iov, 2, -1, 0);
	lseek(fd, 0, SEEK_SET);
	read(fd, buf, 10);
	pread(fd, buf, 10, 5);
	readv(fd, iov, 2);
	preadv(fd, iov, 2, 7);
	preadv2(fd, iov, 2, 9, 0);
	fsync(fd);
	fdatasync(fd);
	ftruncate(fd, 500);
	int fd2 = dup(fd);
	dup2(fd, 20);
	dup3(fd, 21, O_CLOEXEC);
	fcntl(fd, F_DUPFD, 30);
	fcntl(fd, F_DUPFD_CLOEXEC, 40);
	fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, O_APPEND);
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	fstat(fd, &st);
	fstatat(dfd, "f", &st, 0);
	fstatat(fd, "", &st, AT_EMPTY_PATH);
	statx(dfd, "f", 0, STATX_SIZE, &stx);
	access("d/f", R_OK);
	faccessat(dfd, "f", R_OK, 0);
#ifdef SYS_faccessat2
	syscall(SYS_faccessat2, dfd, "f", R_OK, 0);
#endif
#ifdef SYS_stat
	syscall(SYS_stat, "d/f", &st);
	syscall(SYS_lstat, "d/f", &st);
	syscall(SYS_access, "d/f", R_OK);
	int c = syscall(SYS_creat, "c", 0644);
	close(c);
	c = syscall(SYS_open, "c", O_RDONLY);
	close(c);
	syscall(SYS_rename, "c", "c1");
	syscall(SYS_mkdir, "m", 0755);
	syscall(SYS_rmdir, "m");
	syscall(SYS_dup2, fd, 22);
	syscall(SYS_unlink, "c1");
#endif
	c = creat("c", 0644);
	close(c);
	struct how how = {O_RDONLY, 0, 0};
	c = syscall(SYS_openat2, AT_FDCWD, "c", &how, sizeof how);
	close(c);
	truncate("c", 10);
	renameat(AT_FDCWD, "c", dfd, "c3");
	syscall(SYS_renameat2, dfd, "c3", AT_FDCWD, "c4", 0);
	unlinkat(AT_FDCWD, "c4", 0);

	pid_t pid = fork();
	if (pid == 0) {
		write(fd2, buf, 50);
		close(fd2);
		_exit(0);
	}
	waitpid(pid, 0, 0);
	pthread_t th;
	pthread_create(&th, 0, thread, 0);
	pthread_join(th, 0);

	/* copies, allocation, advice, syncs, mappings, links, directories */
	int src = openat(dfd, "f", O_RDONLY);
	int cp = open("cp", O_CREAT|O_RDWR|O_TRUNC, 0644);
	loff_t o1 = 0, o2 = 100;
	copy_file_range(src, &o1, cp, &o2, 50, 0);
	copy_file_range(src, 0, cp, 0, 50, 0);
	sendfile(cp, src, 0, 20);
	off_t so = 5;
	sendfile(cp, src, &so, 20);
	int pp[2];
	pipe(pp);
	splice(src, 0, pp[1], 0, 30, 0);
	splice(pp[0], 0, cp, 0, 30, 0);
	fallocate(cp, 0, 0, 8192);
	posix_fadvise(cp, 0, 100, POSIX_FADV_DONTNEED);
	syncfs(cp);
	sync();
	void *m = mmap(0, 4096, PROT_READ, MAP_SHARED, cp, 0);
	munmap(m, 4096);
	m = mmap(0, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0);
	munmap(m, 4096);
	mmap(0, 4096, PROT_READ, MAP_SHARED, 999, 0); /* EBADF */
	link("cp", "cp2");
	linkat(AT_FDCWD, "cp2", dfd, "cp3", 0);
	symlink("cp", "sl");
	symlinkat("../cp", dfd, "sl2");
	char lb[64];
	readlink("sl", lb, sizeof lb);
	readlinkat(dfd, "sl2", lb, sizeof lb);
	DIR *dir = opendir("d");
	while (readdir(dir))
		;
	closedir(dir);
#ifdef SYS_getdents
	int dd = open("d", O_RDONLY|O_DIRECTORY);
	syscall(SYS_getdents, dd, buf, sizeof buf);
	close(dd);
#endif
	close(src);
	close(cp);
	close(pp[0]);
	close(pp[1]);
	unlink("cp");
	unlink("cp2");
	unlinkat(dfd, "cp3", 0);
	unlink("sl");
	unlinkat(dfd, "sl2", 0);

	/* failures */
	open("does-not-exist", O_RDONLY);
	read(999, buf, 1);
	close(999);
	lseek(fd, -1, SEEK_SET);

	syscall(SYS_close_range, 30, 40, 0);
	close(fd);
	close(fd2);
	close(20);
	close(21);
	unlinkat(dfd, "f", 0);
	unlinkat(dfd, "e", AT_REMOVEDIR);
	close(dfd);
	rmdir("d");
	unlink("t.out");
	unlink("c");
	return 0;
}
`

// straceNames maps each system call strace counts to the op it is
// recorded as.
var straceNames = map[string]trace.Op{
	"open": trace.OpOpen, "openat": trace.OpOpenat, "openat2": trace.OpOpenat2, "creat": trace.OpCreat,
	"close": trace.OpClose, "close_range": trace.OpCloseRange,
	"read": trace.OpRead, "pread64": trace.OpPread, "readv": trace.OpReadv, "preadv": trace.OpPreadv, "preadv2": trace.OpPreadv2,
	"write": trace.OpWrite, "pwrite64": trace.OpPwrite, "writev": trace.OpWritev, "pwritev": trace.OpPwritev, "pwritev2": trace.OpPwritev2,
	"lseek": trace.OpLseek, "fsync": trace.OpFsync, "fdatasync": trace.OpFdatasync,
	"ftruncate": trace.OpFtruncate, "truncate": trace.OpTruncate,
	"stat": trace.OpStat, "lstat": trace.OpLstat, "fstat": trace.OpFstat, "newfstatat": trace.OpFstatat, "statx": trace.OpStatx,
	"access": trace.OpAccess, "faccessat": trace.OpAccess, "faccessat2": trace.OpAccess,
	"unlink": trace.OpUnlink, "unlinkat": trace.OpUnlinkat,
	"rename": trace.OpRename, "renameat": trace.OpRenameat, "renameat2": trace.OpRenameat2,
	"mkdir": trace.OpMkdir, "mkdirat": trace.OpMkdirat, "rmdir": trace.OpRmdir,
	"dup": trace.OpDup, "dup2": trace.OpDup2, "dup3": trace.OpDup3,
	"copy_file_range": trace.OpCopyFileRange, "sendfile": trace.OpSendfile, "splice": trace.OpSplice,
	"fallocate": trace.OpFallocate, "fadvise64": trace.OpFadvise, "syncfs": trace.OpSyncfs, "sync": trace.OpSync,
	"link": trace.OpLink, "linkat": trace.OpLinkat, "symlink": trace.OpSymlink, "symlinkat": trace.OpSymlinkat,
	"readlink": trace.OpReadlink, "readlinkat": trace.OpReadlinkat,
	"getdents": trace.OpGetdents, "getdents64": trace.OpGetdents, "readahead": trace.OpReadahead,
}

// straceCounts runs argv under strace -f -c limited to the traced calls
// and returns the calls per op. The calls recorded only with some
// arguments, and the process events, are counted from a strace -f log:
// fcntl with F_DUPFD, F_DUPFD_CLOEXEC, F_SETFD and F_SETFL; mmap of a
// descriptor (not MAP_ANONYMOUS); fork and clone from clone, clone3, fork
// and vfork (clone when CLONE_THREAD); exec from execve but the first
// (the start of the program); exit from the tasks that ended.
func straceCounts(t *testing.T, dir string, argv ...string) map[trace.Op]int {
	t.Helper()
	strace := needTool(t, "strace")
	var names []string
	for n := range straceNames {
		names = append(names, n)
	}
	sort.Strings(names)
	sum := filepath.Join(dir, "strace.sum")
	args := append([]string{"-f", "-c", "-o", sum, "-e", "trace=" + strings.Join(names, ",")}, argv...)
	cmd := exec.Command(strace, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("strace: %v\n%s", err, out)
	}
	counts := parseStraceSummary(t, sum)

	log := filepath.Join(dir, "strace.log")
	args = append([]string{"-f", "-q", "-o", log, "-e", "trace=fcntl,mmap,munmap,msync,clone,clone3,fork,vfork,execve"}, argv...)
	cmd = exec.Command(strace, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("strace: %v\n%s", err, out)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	execs := 0
	fileMaps := map[string]bool{} // addresses the mmaps of descriptors returned
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.Contains(l, "fcntl(") && (strings.Contains(l, "F_DUPFD") || strings.Contains(l, "F_SETFD") ||
			strings.Contains(l, "F_SETFL")):
			counts[trace.OpFcntl]++
		case strings.Contains(l, "mmap("):
			_, call, _ := strings.Cut(l, "mmap(")
			if a := strings.Split(call, ", "); len(a) >= 5 && a[4] != "-1" && !strings.Contains(a[3], "MAP_ANONYMOUS") {
				counts[trace.OpMmap]++
				if _, addr, ok := strings.Cut(call, "= 0x"); ok {
					fileMaps["0x"+addr] = true
				}
			}
		case strings.Contains(l, "munmap(") || strings.Contains(l, "msync("):
			// Only those of a file's mapping: the first in the test
			// programs' calls is the address the mmap returned.
			_, call, _ := strings.Cut(l, "(")
			addr, _, _ := strings.Cut(call, ",")
			if fileMaps[addr] && strings.HasSuffix(l, "= 0") {
				if strings.Contains(l, "munmap(") {
					counts[trace.OpMunmap]++
					delete(fileMaps, addr)
				} else {
					counts[trace.OpMsync]++
				}
			}
		case strings.Contains(l, "clone(") || strings.Contains(l, "clone3("):
			if strings.Contains(l, "CLONE_THREAD") {
				counts[trace.OpClone]++
			} else {
				counts[trace.OpFork]++
			}
		case strings.Contains(l, "fork("):
			counts[trace.OpFork]++
		case strings.Contains(l, "execve(") && !strings.Contains(l, "= -1"):
			if execs++; execs > 1 {
				counts[trace.OpExec]++
			}
		case strings.Contains(l, "+++ exited with") || strings.Contains(l, "+++ killed by"):
			counts[trace.OpExit]++
		}
	}
	return counts
}

func parseStraceSummary(t *testing.T, path string) map[trace.Op]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[trace.Op]int{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		name := f[len(f)-1]
		op, ok := straceNames[name]
		if !ok {
			continue
		}
		n, err := strconv.Atoi(f[3])
		if err != nil {
			t.Fatalf("strace summary line %q: %v", sc.Text(), err)
		}
		counts[op] += n
	}
	if len(counts) == 0 {
		t.Fatalf("no calls in the strace summary:\n%s", b)
	}
	return counts
}

func countOps(evs []trace.Event) map[trace.Op]int {
	m := map[trace.Op]int{}
	for _, e := range evs {
		m[e.Op]++
	}
	return m
}

func compareCounts(t *testing.T, got, want map[trace.Op]int) {
	t.Helper()
	ops := map[trace.Op]bool{}
	for op := range got {
		ops[op] = true
	}
	for op := range want {
		ops[op] = true
	}
	var bad []string
	for op := range ops {
		if got[op] != want[op] {
			bad = append(bad, op.String()+": iotrace "+strconv.Itoa(got[op])+", strace "+strconv.Itoa(want[op]))
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("counts differ from strace -f -c:\n%s", strings.Join(bad, "\n"))
	}
}

// TestCountsMatchStrace checks that every traced call is recorded exactly
// as often as strace -f -c counts it, and every fork, clone, exec and
// exit as often as strace -f shows them, through a fork and a thread,
// with both ways of decoding system calls.
func TestCountsMatchStrace(t *testing.T) {
	dir := t.TempDir()
	bin := buildC(t, dir, "allcalls", allCallsC, "-pthread")
	want := straceCounts(t, dir, bin)
	for _, regs := range []bool{false, true} {
		name := "syscall-info"
		if regs {
			name = "registers"
		}
		t.Run(name, func(t *testing.T) {
			res, evs, s := record(t, Config{Argv: []string{bin}, Dir: dir, All: true, decodeRegs: regs})
			if res.Status() != 0 {
				t.Fatalf("exit status %d", res.Status())
			}
			got := countOps(evs)
			// With All, both ends of the pipe (made by pipe(2), which is
			// not traced) are learnt from /proc at their first use: an
			// inherit event each, which strace has no line for.
			if got[trace.OpInherit] != 2 {
				t.Errorf("%d inherit events, want 2 (the pipe's ends)", got[trace.OpInherit])
			}
			delete(got, trace.OpInherit)
			// A wait for mapped pages is no call: strace has no line for
			// it (the program read a page from the device).
			delete(got, trace.OpPagein)
			compareCounts(t, got, want)
			if t.Failed() {
				t.Logf("events:\n%s", dumpEvents(evs, s))
			}
			if len(res.Threads) != 3 {
				t.Errorf("threads %+v, want main, child and thread", res.Threads)
			}
		})
	}
}
