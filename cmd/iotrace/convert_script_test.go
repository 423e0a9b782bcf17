package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/internal/mpitest"
	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/script/fold"
	"github.com/iotrace/iotrace/trace/format"
)

// checkScript compiles the script at name, runs it with ranks and
// compares it call by call with the trace files tr (fold.Compare): the
// test's own check, besides the one convert makes.
func checkScript(t *testing.T, tr, name string, ranks int) string {
	t.Helper()
	src, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	r, err := format.Open(tr)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p, err := script.Compile(name, src)
	if err != nil {
		t.Fatalf("the script does not compile: %v\n%s", err, src)
	}
	x, err := script.Expand(p, script.Config{Ranks: ranks})
	if err != nil {
		t.Fatal(err)
	}
	if err := fold.Compare(r, x); err != nil {
		t.Fatalf("the script does not make the trace's calls: %v\n%s", err, src)
	}
	return string(src)
}

// TestConvertToScriptE2E converts a sample's trace to a script through
// the CLI, with -o and to standard output, and with --explain.
func TestConvertToScriptE2E(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "p2.iot")
	mustRun(t, "convert", "--ranks", "4", "-o", tr, "parabench-listing2")
	out := filepath.Join(dir, "p2.iop")
	report := mustRun(t, "convert", tr, "-o", out, "--explain")
	src := checkScript(t, tr, out, 4)
	for _, want := range []string{"calls of 4 ranks →", "calls made by each line", "repeat 100"} {
		if !strings.Contains(report+src, want) {
			t.Errorf("missing %q in the report or script:\n%s\n%s", want, report, src)
		}
	}
	stdout := mustRun(t, "convert", "--to", "script", tr)
	if stdout != src {
		t.Errorf("standard output differs from -o:\n%s\n%s", stdout, src)
	}
	// The script is canonical: iotrace fmt leaves it alone.
	if _, _, code := run(t, "fmt", "-l", out); code != 0 {
		t.Errorf("iotrace fmt -l %s: exit %d", out, code)
	}
	// A trace the script language cannot express fails with one line.
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"rank":0,"op":"op#999","fd":3,"size":10}`+"\n"), 0o644)
	badIot := filepath.Join(dir, "bad.iot")
	mustRun(t, "convert", "-o", badIot, bad)
	_, errOut, code := run(t, "convert", "--to", "script", badIot)
	if code == 0 || !strings.Contains(errOut, "rank 0, call 1 (op#999): an op this build does not know") || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
		t.Errorf("exit %d, stderr %q: want one line naming the call", code, errOut)
	}
}

// recRegularC does regular I/O a script folds: strided pwrites (the
// offset wraps every 64 blocks), sequential reads up to the end of the
// file (a short read, then 0), a failed stat, a vector write.
const recRegularC = `
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

int main(void) {
	static char buf[4096];
	memset(buf, 'x', sizeof buf);
	int fd = open("data", O_CREAT|O_RDWR|O_TRUNC, 0644);
	for (int i = 0; i < 1000; i++)
		pwrite(fd, buf, 4096, (long)(i % 64) * 4096);
	write(fd, buf, 100);
	lseek(fd, 0, SEEK_SET);
	while (read(fd, buf, 1000) > 0)
		;
	struct iovec iov[2] = {{buf, 10}, {buf, 20}};
	writev(fd, iov, 2);
	fsync(fd);
	close(fd);
	struct stat st;
	stat("missing", &st);
	for (int i = 0; i < 20; i++) {
		char name[32];
		snprintf(name, sizeof name, "out.%03d", i);
		int f = open(name, O_CREAT|O_WRONLY|O_TRUNC, 0644);
		for (int j = 0; j <= i; j++)
			write(f, buf, 512);
		close(f);
		unlink(name);
	}
	unlink("data");
	return 0;
}
`

// TestConvertRecordedE2E records C programs with iotrace record and
// converts their traces: the scripts make the recorded calls exactly, and
// regular loops fold.
func TestConvertRecordedE2E(t *testing.T) {
	for _, c := range []struct {
		name, src string
		maxLines  int
		want      []string
		warning   string
	}{
		{"regular", recRegularC, 70, []string{"repeat", "call openat", "ret -ENOENT", "iov 2", "ret 0"}, ""},
		// The capture tests' program: a fork, a thread, dup, writev,
		// stat, rename, mkdir; the calls keep their threads.
		{"capture", recProgC, 70, []string{"dup data as", "iov 2", "rename", "mkdir", "thread 1"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			dir, _ = filepath.EvalSymlinks(dir)
			bin := recBuildC(t, dir, c.name, c.src)
			tr := filepath.Join(dir, c.name+".iot")
			if _, errOut, code := recRun(t, dir, nil, "", "record", "-o", tr, "--", bin); code != 0 {
				t.Fatalf("record: exit %d\n%s", code, errOut)
			}
			out := filepath.Join(dir, c.name+".iop")
			stdout, errOut, code := recRun(t, dir, nil, "", "convert", tr, "-o", out, "--explain")
			if code != 0 {
				t.Fatalf("convert: exit %d\n%s", code, errOut)
			}
			if !strings.Contains(errOut, c.warning) {
				t.Errorf("stderr %q, want %q", errOut, c.warning)
			}
			src := checkScript(t, tr, out, 1)
			if n := strings.Count(src, "\n"); n > c.maxLines {
				t.Errorf("%d lines, want at most %d:\n%s", n, c.maxLines, src)
			}
			for _, want := range c.want {
				if !strings.Contains(src, want) {
					t.Errorf("the script has no %q:\n%s", want, src)
				}
			}
			t.Logf("%s\n%s", stdout, src)
		})
	}
}

// TestConvertMPIRecordedE2E records the MPI test programs with iotrace
// record --preload under mpirun and converts their traces to scripts:
// the scripts make the recorded calls exactly (convert checks it, and
// checkScript again), and calls no script can make are refused in one
// line.
func TestConvertMPIRecordedE2E(t *testing.T) {
	mpitest.Need(t)
	dir := t.TempDir()
	buildMPIPrograms(t, dir)
	env := []string{"IOTRACE_CACHE=" + shimCache(t)}
	for _, c := range []struct {
		name, refused string
		want          []string
	}{
		{"twophase", "", nil},
		{"strided", "", nil},
		// Non-blocking calls, receives from any source, a communicator
		// split with its ranks in reverse.
		{"ring", "", []string{"call MPI_Isend", "wait 2 call MPI_Waitall", "anysource anytag", "comm sub"}},
		// Collectives on the halves MPI_Comm_split made.
		{"colls", "", []string{"split as sub color rank % 2", "bcast 2KiB comm sub"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := filepath.Join(dir, c.name+".iot")
			mpitest.MustRun(t, dir, 2*time.Minute, 4, env, iotraceBin, "record", "--preload", "-o", tr, "--", "./"+c.name)
			out := filepath.Join(dir, c.name+".iop")
			_, errOut, code := run(t, "convert", tr, "-o", out)
			if c.refused != "" {
				if code == 0 || !strings.Contains(errOut, c.refused) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
					t.Errorf("exit %d, stderr %q: want one line with %q", code, errOut, c.refused)
				}
				return
			}
			if code != 0 {
				t.Fatalf("convert: exit %d\n%s", code, errOut)
			}
			src := checkScript(t, tr, out, 4)
			for _, w := range c.want {
				if !strings.Contains(src, w) {
					t.Errorf("the script has no %q", w)
				}
			}
			t.Logf("%s", src)
		})
	}
}
