package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// straceProgC makes the calls of the event model from a main thread, a
// forked child sharing a descriptor, and a thread; it changes directory,
// appends, and makes calls fail.
const straceProgC = `
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static char buf[65536];

static void *thread(void *arg) {
	int fd = open("t.dat", O_CREAT|O_RDWR|O_TRUNC, 0600);
	pwrite(fd, buf, 4096, 8192);
	write(fd, buf, 100);
	read(fd, buf, 10);
	close(fd);
	return 0;
}

int main(void) {
	struct iovec iov[3] = {{buf, 100}, {buf + 100, 200}, {buf + 300, 50}};
	struct stat st;
	memset(buf, 'x', sizeof buf);
	mkdir("sub", 0750);
	chdir("sub");
	int fd = openat(AT_FDCWD, "f", O_CREAT|O_RDWR|O_TRUNC, 0644);
	for (int i = 0; i < 5; i++) write(fd, buf, 1000 + i);
	pwrite(fd, buf, 512, 100000);
	writev(fd, iov, 3);
	pwritev(fd, iov, 2, 200000);
	lseek(fd, 10, SEEK_SET);
	read(fd, buf, 4096);
	readv(fd, iov, 3);
	pread(fd, buf, 300, 50);
	preadv(fd, iov, 3, 7);
	lseek(fd, -20, SEEK_END);
	read(fd, buf, 100);
	fsync(fd);
	fdatasync(fd);
	ftruncate(fd, 150000);
	fstat(fd, &st);
	int d = dup(fd);
	dup2(fd, 20);
	dup3(fd, 21, O_CLOEXEC);
	fcntl(fd, F_DUPFD, 30);
	if (fork() == 0) {
		write(d, buf, 77);   /* at the shared position */
		lseek(d, 0, SEEK_CUR);
		_exit(0);
	}
	wait(0);
	write(fd, buf, 33);      /* after the child's write */
	pthread_t th;
	pthread_create(&th, 0, thread, 0);
	pthread_join(th, 0);
	int a = open("log", O_CREAT|O_WRONLY|O_APPEND, 0644);
	write(a, buf, 10);
	write(a, buf, 20);
	close(a);
	a = open("log", O_WRONLY|O_APPEND);
	write(a, buf, 5);        /* lands at 30 */
	close(a);
	stat("f", &st);
	lstat("f", &st);
	access("f", R_OK|W_OK);
	rename("f", "g");
	creat("c", 0600);
	truncate("c", 99);
	unlink("c");
	mkdir("dir", 0700);
	rmdir("dir");
	open("missing", O_RDONLY);
	read(999, buf, 1);
	syscall(SYS_close_range, 30, 30, 0);
	close(20); close(21); close(d); close(fd);
	unlink("g"); unlink("t.dat"); unlink("log");
	chdir("..");
	rmdir("sub");
	return 0;
}
`

// eventKey is what an imported call and a recorded one must share.
type eventKey struct {
	Thread            uint32
	Op                trace.Op
	Path, Path2       string
	FD                int32
	Offset, Size, Ret int64
	Flags, Mode       uint32
	Whence, Count     int32
}

func keysOf(t *testing.T, name, dir string) []eventKey {
	t.Helper()
	r, evs := readTrace(t, name)
	var keys []eventKey
	for _, e := range evs {
		if e.Flags&trace.SizeSeen != 0 && trace.SeesSize(e.Op) && e.Op.Info().Family != "stat" {
			// The size of the file a rename or link moved: the recorder
			// looks before the call; strace's line does not show it.
			e.Size, e.Flags = 0, e.Flags&^trace.SizeSeen
		}
		k := eventKey{Thread: e.Thread, Op: e.Op, Path: r.Path(e.Path), Path2: r.Path(e.Path2), FD: e.FD,
			Offset: e.Offset, Size: e.Size, Ret: e.Ret, Flags: e.Flags, Mode: e.Mode, Whence: e.Whence, Count: e.Count}
		// Only the program's own files: the loader's reads of system
		// libraries are the same, but say nothing more.
		if !strings.HasPrefix(k.Path, dir) && !strings.HasPrefix(k.Path2, dir) {
			continue
		}
		keys = append(keys, k)
	}
	return keys
}

func diffKeys(t *testing.T, what string, got, want []eventKey) {
	t.Helper()
	n := max(len(got), len(want))
	var bad []string
	for i := 0; i < n; i++ {
		var g, w eventKey
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			bad = append(bad, fmt.Sprintf("#%d\n  strace %+v\n  record %+v", i, g, w))
		}
	}
	if len(bad) > 0 {
		if len(bad) > 8 {
			bad = append(bad[:8], fmt.Sprintf("… %d more", len(bad)-8))
		}
		t.Errorf("%s: %d events imported, %d recorded; differences:\n%s", what, len(got), len(want), strings.Join(bad, "\n"))
	}
}

// TestStraceImportMatchesRecord is the acceptance test of the strace
// importer: a C program captured by strace (-o FILE, its stderr, and -ff)
// and by iotrace record imports to the same calls, paths, descriptors,
// offsets, sizes and results, thread by thread.
func TestStraceImportMatchesRecord(t *testing.T) {
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	bin := recBuildC(t, dir, "prog", straceProgC)
	strace := recNeedTool(t, "strace")
	run := filepath.Join(dir, "run")
	// Every capture runs in the same fresh directory, so the paths agree.
	capture := func(name string, stderrTo string, args ...string) {
		t.Helper()
		os.RemoveAll(run)
		if err := os.Mkdir(run, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = run
		var errOut strings.Builder
		cmd.Stderr = &errOut
		if stderrTo != "" {
			f, err := os.Create(stderrTo)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			cmd.Stderr = f
		}
		if out, err := cmd.Output(); err != nil {
			t.Fatalf("%s: %v\n%s%s", name, err, out, errOut.String())
		}
	}
	capture("record", "", iotraceBin, "record", "-o", filepath.Join(dir, "rec.iot"), "--", bin)
	want := keysOf(t, filepath.Join(dir, "rec.iot"), run+"/")
	if len(want) < 50 {
		t.Fatalf("record saw only %d calls on the program's files", len(want))
	}
	threads := map[uint32]bool{}
	for _, k := range want {
		threads[k.Thread] = true
	}
	if len(threads) != 3 {
		t.Fatalf("record: threads %v, want main, child and thread", threads)
	}

	for _, c := range []struct {
		name   string
		args   []string
		stderr bool
		input  string
	}{
		{"o-file", []string{"-f", "-ttt", "-T", "-y", "-o", filepath.Join(dir, "one.txt")}, false, filepath.Join(dir, "one.txt")},
		{"stderr", []string{"-f", "-ttt", "-T", "-y"}, true, filepath.Join(dir, "err.txt")},
		{"ff", []string{"-ff", "-ttt", "-T", "-y", "-o", filepath.Join(dir, "ff")}, false, filepath.Join(dir, "ff")},
		{"no-y", []string{"-f", "-tt", "-o", filepath.Join(dir, "noy.txt")}, false, filepath.Join(dir, "noy.txt")},
	} {
		t.Run(c.name, func(t *testing.T) {
			errTo := ""
			if c.stderr {
				errTo = c.input
			}
			capture("strace "+c.name, errTo, append(append([]string{strace}, c.args...), bin)...)
			out := filepath.Join(dir, c.name+".iot")
			// The form is guessed from the first line (or PREFIX.PID's).
			_, stderr, code := recRun(t, dir, nil, "", "convert", "-o", out, c.input)
			if code != 0 {
				t.Fatalf("convert: exit %d\n%s", code, stderr)
			}
			if !strings.Contains(stderr, "calls outside the event model left out") {
				t.Errorf("no note of the calls left out:\n%s", stderr)
			}
			got := keysOf(t, out, run+"/")
			checkStraceProcesses(t, out, bin)
			if c.name == "no-y" {
				// Without -y the working directory is unknown until the
				// program shows it: compare the calls and sizes only.
				if len(got) == 0 {
					got = keysOf(t, out, "")
				}
				if n := countOps(got); n[trace.OpWrite] != countOps(want)[trace.OpWrite] {
					t.Errorf("no -y: %d writes, record %d", n[trace.OpWrite], countOps(want)[trace.OpWrite])
				}
				return
			}
			diffKeys(t, c.name, got, want)
			r, _ := readTrace(t, out)
			if m := r.Meta(); len(m.Command) != 1 || m.Command[0] != bin || m.Epoch < 1.6e18 || m.Creator != "iotrace convert --from strace" {
				t.Errorf("meta %+v", m)
			}
		})
	}
}

func countOps(keys []eventKey) map[trace.Op]int {
	m := map[trace.Op]int{}
	for _, k := range keys {
		m[k.Op]++
	}
	return m
}

// checkStraceProcesses: the import of straceProgC has its processes and
// threads: the program's exec, a fork (thread 1, a table of its own) and
// a clone (thread 2, sharing the table), each made before its first
// event, and an exit of each.
func checkStraceProcesses(t *testing.T, name, bin string) {
	t.Helper()
	r, evs := readTrace(t, name)
	var got []string
	seen := map[uint32]bool{0: true}
	for i, e := range evs {
		if !seen[e.Thread] {
			t.Errorf("event %d (%s) of thread %d before the event that made it", i, e.Op, e.Thread)
			seen[e.Thread] = true
		}
		switch e.Op {
		case trace.OpExec:
			got = append(got, fmt.Sprintf("t%d exec %s", e.Thread, r.Path(e.Path)))
		case trace.OpFork, trace.OpClone:
			seen[uint32(e.Ret)] = true
			got = append(got, fmt.Sprintf("t%d %s %d flags=%#x", e.Thread, e.Op, e.Ret, e.Flags))
		case trace.OpExit:
			got = append(got, fmt.Sprintf("t%d exit %d", e.Thread, e.Ret))
		}
	}
	want := []string{"t0 exec " + bin, "t0 fork 1 flags=0x0", "t1 exit 0", "t0 clone 2 flags=0x10500", "t2 exit 0", "t0 exit 0"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("process events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestStraceFixturesReplay: the real strace logs of convert/strace
// import and replay. The subshell's write goes to b.txt and the shell's
// to a.txt in the replay too (each process its own descriptor 3); tar,
// cp and ln/ls/readlink replay with --strict. (The subshell's does not:
// the replay skips the dup2 that puts back the shell's saved stdout, a
// descriptor on /dev/null the trace does not follow, instead of closing
// what it replaces.)
func TestStraceFixturesReplay(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"subshell", "tar", "cp", "links"} {
		t.Run(name, func(t *testing.T) {
			in := filepath.Join("..", "..", "convert", "strace", "testdata", name+".strace")
			out := filepath.Join(dir, name+".iot")
			if _, stderr, code := run(t, "convert", "-o", out, in); code != 0 {
				t.Fatalf("convert: exit %d: %s", code, stderr)
			}
			target := filepath.Join(dir, "target-"+name)
			args := []string{"--quiet", "--timing", "afap", "--target", target, out}
			if name != "subshell" {
				args = append([]string{"--strict"}, args...)
			}
			if b, err := exec.Command(ioreplay(t), args...).CombinedOutput(); err != nil {
				t.Fatalf("ioreplay: %v\n%s", err, b)
			}
			if name != "subshell" {
				return
			}
			for f, size := range map[string]int64{"a.txt": 7, "b.txt": 6} {
				// The trace's paths lose their common prefix, /tmp/iotrace-fx
				// (the loader's files, which would have made it /, are left
				// out as iotrace record leaves them).
				st, err := os.Stat(filepath.Join(target, f))
				if err != nil || st.Size() != size {
					t.Errorf("%s: %v %v, want %d bytes", f, st, err, size)
				}
			}
		})
	}
}
