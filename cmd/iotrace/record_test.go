package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iotrace/iotrace/capture/ptrace"
	"github.com/iotrace/iotrace/report"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
	"github.com/iotrace/iotrace/trace/state"
)

// recNeedTool returns the path of an external tool; without it the test
// is skipped, except under CI, where it fails.
func recNeedTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required under CI: %v", name, err)
		}
		t.Skipf("%s not installed", name)
	}
	return p
}

func recSkipUnsupported(t testing.TB) {
	t.Helper()
	if !ptrace.Supported {
		t.Skip("recording needs Linux on amd64 or arm64")
	}
}

// recBuildC compiles a C program into dir.
func recBuildC(t testing.TB, dir, name, src string) string {
	t.Helper()
	recSkipUnsupported(t)
	cc := recNeedTool(t, "cc")
	c := filepath.Join(dir, name+".c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	if out, err := exec.Command(cc, "-O1", "-pthread", "-o", bin, c).CombinedOutput(); err != nil {
		t.Fatalf("cc %s: %v\n%s", name, err, out)
	}
	return bin
}

// recRun runs iotrace with a deadline, in dir, with extra environment.
func recRun(t testing.TB, dir string, env []string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, iotraceBin, args...)
	cmd.Dir = dir
	cmd.Env = append(recCleanEnv(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Fatalf("iotrace %v was killed by %v\nstderr:\n%s", args, ws.Signal(), stderr.String())
		}
	} else if err != nil {
		t.Fatalf("running iotrace %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}

// recCleanEnv is the environment without the launcher variables a CI
// machine might have, so that tests choose the rank.
func recCleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID", "MV2_COMM_WORLD_RANK",
			"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", "MV2_COMM_WORLD_SIZE":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// readTrace reads a trace back with format.Open.
func readTrace(t testing.TB, names ...string) (*format.Reader, []trace.Event) {
	t.Helper()
	r, err := format.Open(names...)
	if err != nil {
		t.Fatalf("format.Open %v: %v", names, err)
	}
	t.Cleanup(func() { r.Close() })
	evs, err := trace.ReadAll(trace.All(r))
	if err != nil {
		t.Fatalf("reading %v: %v", names, err)
	}
	return r, evs
}

const recProgC = `
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

static void *thread(void *arg) {
	int fd = open("t.dat", O_CREAT|O_WRONLY|O_TRUNC, 0644);
	pwrite(fd, "abcd", 4, 8);
	close(fd);
	return 0;
}

int main(int argc, char **argv) {
	char buf[4096];
	memset(buf, 'x', sizeof buf);
	FILE *p = fopen("pid", "w");
	fprintf(p, "%d\n", getpid());
	fclose(p);
	int fd = open("data", O_CREAT|O_RDWR|O_TRUNC, 0644);
	for (int i = 0; i < 10; i++) write(fd, buf, 1000);
	lseek(fd, 100, SEEK_SET);
	read(fd, buf, 50);
	struct iovec iov[2] = {{buf, 10}, {buf, 20}};
	writev(fd, iov, 2);
	int d = dup(fd);
	if (fork() == 0) {
		write(d, buf, 7);
		_exit(0);
	}
	wait(0);
	pthread_t th;
	pthread_create(&th, 0, thread, 0);
	pthread_join(th, 0);
	struct stat st;
	stat("data", &st);
	rename("data", "data2");
	fsync(fd);
	close(d);
	close(fd);
	unlink("data2");
	mkdir("dir", 0755);
	rmdir("dir");
	return argc > 1 ? atoi(argv[1]) : 0;
}
`

// TestRecordE2E records a C program with a fork and a thread through the
// CLI and reads the trace back.
func TestRecordE2E(t *testing.T) {
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	bin := recBuildC(t, dir, "prog", recProgC)
	out := filepath.Join(dir, "prog.iot")
	_, stderr, code := recRun(t, dir, nil, "", "record", "-v", "-o", out, "--", bin, "5")
	if code != 5 {
		t.Fatalf("exit %d, want the program's 5\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "thread\tpid\ttid\tparent") {
		t.Errorf("-v printed no thread table:\n%s", stderr)
	}
	r, evs := readTrace(t, out)
	m := r.Meta()
	if m.Creator != "iotrace record" || len(m.Command) != 2 || m.Command[0] != bin || m.Clock != "CLOCK_MONOTONIC" {
		t.Errorf("meta %+v", m)
	}
	pidText, _ := os.ReadFile(filepath.Join(dir, "pid"))
	if s := r.Summary(); len(s) != 1 || strconv.Itoa(s[0].PID) != strings.TrimSpace(string(pidText)) {
		t.Errorf("rank summary %+v, program pid %s", s, pidText)
	}
	type key struct {
		op   trace.Op
		path string
	}
	got := map[key][]trace.Event{}
	for _, e := range evs {
		got[key{e.Op, strings.TrimPrefix(r.Path(e.Path), dir+"/")}] = append(got[key{e.Op, strings.TrimPrefix(r.Path(e.Path), dir+"/")}], e)
	}
	writes := got[key{trace.OpWrite, "data"}]
	if len(writes) != 11 {
		t.Fatalf("%d writes to data, want 11", len(writes))
	}
	for i, e := range writes[:10] {
		if e.Offset != int64(1000*i) || e.Size != 1000 || e.Ret != 1000 || e.Thread != 0 {
			t.Errorf("write %d: %+v", i, e)
		}
	}
	if c := writes[10]; c.Offset != 180 || c.Thread != 1 || c.Ret != 7 {
		t.Errorf("the child's write: %+v (want offset 180, thread 1)", c)
	}
	if rd := got[key{trace.OpRead, "data"}]; len(rd) != 1 || rd[0].Offset != 100 || rd[0].Ret != 50 {
		t.Errorf("read %+v", rd)
	}
	if wv := got[key{trace.OpWritev, "data"}]; len(wv) != 1 || wv[0].Offset != 150 || wv[0].Size != 30 || wv[0].Count != 2 {
		t.Errorf("writev %+v", wv)
	}
	if pw := got[key{trace.OpPwrite, "t.dat"}]; len(pw) != 1 || pw[0].Thread != 2 || pw[0].Offset != 8 {
		t.Errorf("thread's pwrite %+v", pw)
	}
	for _, k := range []key{{trace.OpFsync, "data"}, {trace.OpMkdir, "dir"}, {trace.OpRmdir, "dir"}, {trace.OpUnlink, "data2"}} {
		if len(got[k]) != 1 {
			t.Errorf("%v: %d events", k, len(got[k]))
		}
	}
	// The rename names both paths; the descriptor keeps its old name.
	var renamed bool
	for _, e := range evs {
		if e.Op.Info().Family == "rename" && r.Path(e.Path) == dir+"/data" && r.Path(e.Path2) == dir+"/data2" {
			renamed = true
		}
		if strings.HasSuffix(r.Path(e.Path), ".iot") {
			t.Errorf("the trace itself was recorded: %+v", e)
		}
		// Process events are instants; calls take time.
		if e.Start < 0 || (e.Dur <= 0) != (e.Op.Class() == trace.ClassProcess) || e.Rank != 0 {
			t.Errorf("times or rank: %+v", e)
		}
	}
	if !renamed {
		t.Error("rename missing")
	}
	// The process events survive the file: the fork of thread 1, the
	// clone of thread 2, and every exit, the main thread's with the
	// program's status.
	var procs []string
	for _, e := range evs {
		if e.Op.Class() == trace.ClassProcess && e.Op != trace.OpInherit {
			procs = append(procs, fmt.Sprintf("%s:%d:%d", e.Op, e.Thread, e.Ret))
		}
	}
	if fmt.Sprint(procs) != "[fork:0:1 exit:1:0 clone:0:2 exit:2:0 exit:0:5]" {
		t.Errorf("process events %v", procs)
	}
	// The other commands read it.
	if out := mustRun(t, "stats", out); !strings.Contains(out, "write") {
		t.Errorf("stats:\n%s", out)
	}
}

var recStraceNames = map[string]trace.Op{
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

// TestRecordCountsMatchStraceE2E: through the CLI and the trace file,
// every traced call of a program (with a fork, a thread, a shell and
// standard output) is counted exactly as strace -f -c counts it.
func TestRecordCountsMatchStraceE2E(t *testing.T) {
	dir := t.TempDir()
	bin := recBuildC(t, dir, "prog", recProgC)
	strace := recNeedTool(t, "strace")
	sh := recNeedTool(t, "sh")
	var names []string
	for n := range recStraceNames {
		names = append(names, n)
	}
	sort.Strings(names)
	// The shell adds stdout writes, pipes and an exec to the mix.
	argv := []string{sh, "-c", bin + " 0 | cat > out.txt; echo done; cat out.txt pid"}
	sum := filepath.Join(dir, "strace.sum")
	cmd := exec.Command(strace, append([]string{"-f", "-c", "-o", sum, "-e", "trace=" + strings.Join(names, ",")}, argv...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("strace: %v\n%s", err, out)
	}
	b, err := os.ReadFile(sum)
	if err != nil {
		t.Fatal(err)
	}
	want := map[trace.Op]int{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 5 {
			if op, ok := recStraceNames[f[len(f)-1]]; ok {
				n, err := strconv.Atoi(f[3])
				if err != nil {
					t.Fatalf("strace line %q", sc.Text())
				}
				want[op] += n
			}
		}
	}
	out := filepath.Join(dir, "counts.iot")
	if _, stderr, code := recRun(t, dir, nil, "", append([]string{"record", "--all", "-o", out, "--"}, argv...)...); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	_, evs := readTrace(t, out)
	got := map[trace.Op]int{}
	for _, e := range evs {
		// strace -c counts every fcntl, mmap, munmap and msync, but only
		// some commands and the mappings of a descriptor are recorded,
		// and it has no line for process events: capture/ptrace's
		// TestCountsMatchStrace counts those from a strace log. A wait
		// for mapped pages is no call (the program read a page from the
		// device: more likely on a loaded machine).
		if e.Op == trace.OpFcntl || e.Op == trace.OpMmap || e.Op == trace.OpMunmap || e.Op == trace.OpMsync || e.Op == trace.OpPagein || e.Op.Class() == trace.ClassProcess {
			continue
		}
		got[e.Op]++
	}
	var bad []string
	for _, op := range trace.Ops() {
		if got[op] != want[op] {
			bad = append(bad, fmt.Sprintf("%s: iotrace %d, strace %d", op, got[op], want[op]))
		}
	}
	if len(bad) > 0 {
		t.Errorf("counts differ:\n%s", strings.Join(bad, "\n"))
	}
}

// TestRecordMPIRanks: ranks started by a launcher write one file each
// into the output directory, without coordination, and read back as one
// trace.
func TestRecordMPIRanks(t *testing.T) {
	dir := t.TempDir()
	bin := recBuildC(t, dir, "prog", recProgC)
	out := filepath.Join(dir, "run.iot")
	var wg sync.WaitGroup
	errs := make([]string, 4)
	for r := 0; r < 4; r++ {
		rdir := filepath.Join(dir, fmt.Sprint("r", r))
		os.Mkdir(rdir, 0o755)
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			env := []string{"OMPI_COMM_WORLD_RANK=" + fmt.Sprint(r), "OMPI_COMM_WORLD_SIZE=4"}
			if _, stderr, code := recRun(t, rdir, env, "", "record", "-o", out, "--", bin); code != 0 {
				errs[r] = fmt.Sprintf("rank %d: exit %d: %s", r, code, stderr)
			}
		}(r)
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Fatal(e)
		}
	}
	ents, _ := os.ReadDir(out)
	if len(ents) != 4 || ents[0].Name() != "rank-00000.iot" || ents[3].Name() != "rank-00003.iot" {
		t.Fatalf("%s holds %v", out, ents)
	}
	r, evs := readTrace(t, out)
	if rs := r.Ranks(); fmt.Sprint(rs) != "[0 1 2 3]" || r.Meta().Ranks != 4 {
		t.Fatalf("ranks %v, meta ranks %d", rs, r.Meta().Ranks)
	}
	perRank := map[uint32]int{}
	for _, e := range evs {
		if e.Op == trace.OpWrite && strings.HasSuffix(r.Path(e.Path), "/data") {
			perRank[e.Rank]++
			if !strings.Contains(r.Path(e.Path), fmt.Sprintf("/r%d/", e.Rank)) {
				t.Errorf("rank %d wrote %s", e.Rank, r.Path(e.Path))
			}
		}
	}
	for rk := uint32(0); rk < 4; rk++ {
		if perRank[rk] != 11 {
			t.Errorf("rank %d: %d writes, want 11", rk, perRank[rk])
		}
	}
	// Files named one by one read back the same.
	if r2, _ := readTrace(t, filepath.Join(out, "rank-00001.iot"), filepath.Join(out, "rank-00002.iot")); fmt.Sprint(r2.Ranks()) != "[1 2]" {
		t.Errorf("two files: ranks %v", r2.Ranks())
	}

	// --rank with the size from the environment; other launchers' variables.
	out2 := filepath.Join(dir, "run2.iot")
	for _, c := range []struct {
		env  []string
		args []string
		want string
	}{
		{[]string{"PMI_SIZE=5"}, []string{"--rank", "2"}, "rank-00002.iot"},
		{[]string{"PMI_RANK=1", "PMI_SIZE=5"}, nil, "rank-00001.iot"},
		{[]string{"SLURM_PROCID=0", "SLURM_NTASKS=5"}, nil, "rank-00000.iot"},
		{[]string{"PMIX_RANK=3", "SLURM_NTASKS=5"}, nil, "rank-00003.iot"},
		// mpirun_rsh inside a Slurm batch script: the script's SLURM_PROCID
		// and SLURM_NTASKS are stale.
		{[]string{"SLURM_PROCID=0", "SLURM_NTASKS=1", "MV2_COMM_WORLD_RANK=4", "MV2_COMM_WORLD_SIZE=5"}, nil, "rank-00004.iot"},
	} {
		args := append(append([]string{"record", "-o", out2}, c.args...), "--", "true")
		if _, stderr, code := recRun(t, dir, c.env, "", args...); code != 0 {
			t.Fatalf("%v: exit %d %s", c.env, code, stderr)
		}
		if _, err := os.Stat(filepath.Join(out2, c.want)); err != nil {
			t.Errorf("%v %v: %v", c.env, c.args, err)
		}
	}
	if r3, _ := readTrace(t, out2); fmt.Sprint(r3.Ranks()) != "[0 1 2 3 4]" || r3.Meta().Ranks != 5 {
		t.Errorf("run2: ranks %v meta %d", r3.Ranks(), r3.Meta().Ranks)
	}
	// A single-rank run writes a plain file.
	lone := filepath.Join(dir, "lone.iot")
	if _, stderr, code := recRun(t, dir, []string{"SLURM_PROCID=0", "SLURM_NTASKS=1"}, "", "record", "-o", lone, "--", "true"); code != 0 {
		t.Fatalf("lone: %d %s", code, stderr)
	}
	if st, err := os.Stat(lone); err != nil || st.IsDir() {
		t.Errorf("lone run: %v", err)
	}
	// A parallel run onto that file is refused in one line.
	_, stderr, code := recRun(t, dir, []string{"PMI_RANK=1", "PMI_SIZE=2"}, "", "record", "-o", lone, "--", "true")
	if code == 0 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "not a directory") {
		t.Errorf("parallel onto a file: exit %d, %q", code, stderr)
	}
}

// TestRecordExitAndStreams: exit codes, deaths by signal and standard
// streams pass through.
func TestRecordExitAndStreams(t *testing.T) {
	dir := t.TempDir()
	recSkipUnsupported(t)
	sh := recNeedTool(t, "sh")
	for _, c := range []struct {
		script string
		code   int
	}{
		{"exit 0", 0}, {"exit 42", 42}, {"kill -SEGV $$", 139}, {"kill -KILL $$", 137}, {"kill -TERM $$", 143},
	} {
		if _, stderr, code := recRun(t, dir, nil, "", "record", "-o", filepath.Join(dir, "x.iot"), "--", sh, "-c", c.script); code != c.code {
			t.Errorf("%q: exit %d, want %d\n%s", c.script, code, c.code, stderr)
		}
	}
	// (--quiet: record adds nothing to stderr, not its summary line.)
	stdout, stderr, code := recRun(t, dir, nil, "line one\nline two\n", "record", "--quiet", "--include", dir, "-o", filepath.Join(dir, "cat.iot"), "--",
		sh, "-c", "cat; echo to-stderr >&2")
	if code != 0 || stdout != "line one\nline two\n" || stderr != "to-stderr\n" {
		t.Errorf("streams: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	_, stderr, code = recRun(t, dir, nil, "", "record", "-o", filepath.Join(dir, "nf.iot"), "--", "no-such-program-xyz")
	if code != 127 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "no-such-program-xyz") {
		t.Errorf("missing program: exit %d %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "nf.iot")); err == nil {
		t.Error("a trace was left for a program that does not exist")
	}
	for _, args := range [][]string{
		{"record", "--include", "", "--", "true"},
		{"record", "--rank", "-1", "--", "true"},
		{"record"},
	} {
		_, stderr, code := recRun(t, dir, nil, "", args...)
		if code == 0 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || strings.Contains(stderr, "goroutine") {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
}

const recSleeperC = `
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static volatile sig_atomic_t got;
static void on(int s) { got++; }
int main(int argc, char **argv) {
	if (argc > 1 && argv[1][0] == 'h') {
		signal(SIGTERM, on);
		signal(SIGINT, on);
		signal(SIGUSR1, on);
		signal(SIGUSR2, on);
	}
	if (argc > 1 && argv[1][0] == 'c' && fork() == 0) {
		/* A child that would run on forever. */
		FILE *c = fopen("cpid.tmp", "w");
		fprintf(c, "%d\n", getpid());
		fclose(c);
		rename("cpid.tmp", "cpid");
		for (;;) usleep(10000);
	}
	while (argc > 1 && argv[1][0] == 'c' && access("cpid", F_OK) != 0) usleep(1000);
	FILE *p = fopen("pid", "w");
	fprintf(p, "%d\n", getpid());
	fclose(p);
	int fd = open("ticks", O_CREAT|O_WRONLY|O_TRUNC, 0644);
	for (;;) {
		write(fd, "t", 1);
		if (got) {
			/* Give a second delivery of the signal time to arrive. */
			usleep(300000);
			int g = open("got", O_CREAT|O_WRONLY|O_TRUNC, 0644);
			for (int i = 0; i < got; i++) write(g, "x", 1);
			close(g);
			return 5;
		}
		usleep(10000);
	}
}
`

// startRecording starts iotrace record on the sleeper and waits until the
// program runs; it returns the command and the program's pid.
func startRecording(t *testing.T, dir, bin, out string, args ...string) (*exec.Cmd, *bytes.Buffer, int) {
	t.Helper()
	os.Remove(filepath.Join(dir, "pid"))
	cmd := exec.Command(iotraceBin, append([]string{"record", "-o", out, "--", bin}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A program left running keeps the stderr pipe open: Wait must not
	// wait for it forever.
	cmd.WaitDelay = 5 * time.Second
	cmd.Dir = dir
	cmd.Env = recCleanEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 500; i++ {
		if b, err := os.ReadFile(filepath.Join(dir, "pid")); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			return cmd, &stderr, pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	t.Fatalf("the program did not start: %s", stderr.String())
	return nil, nil, 0
}

func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("iotrace did not exit")
	}
	return -1
}

// TestRecordSignals: SIGTERM, SIGINT, SIGHUP and SIGUSR1/2 sent to iotrace reach the
// program; its handler's work is recorded and its status is iotrace's.
func TestRecordSignals(t *testing.T) {
	dir := t.TempDir()
	bin := recBuildC(t, dir, "sleeper", recSleeperC)
	for _, c := range []struct {
		sig     syscall.Signal
		handler bool
		group   bool // sent to the process group, as a terminal does
		code    int
	}{
		{syscall.SIGTERM, true, false, 5}, {syscall.SIGINT, true, false, 5}, {syscall.SIGINT, true, true, 5},
		{syscall.SIGTERM, false, false, 143}, {syscall.SIGINT, false, true, 130}, {syscall.SIGHUP, false, false, 129},
		// Batch systems ask for a checkpoint with SIGUSR1/SIGUSR2, to the
		// job's processes or to the job step's process group.
		{syscall.SIGUSR1, true, false, 5}, {syscall.SIGUSR2, true, true, 5}, {syscall.SIGUSR1, false, false, 138},
	} {
		out := filepath.Join(dir, "sig.iot")
		os.Remove(filepath.Join(dir, "got"))
		arg := "-"
		if c.handler {
			arg = "h"
		}
		cmd, stderr, _ := startRecording(t, dir, bin, out, arg)
		time.Sleep(100 * time.Millisecond)
		if c.group {
			syscall.Kill(-cmd.Process.Pid, c.sig)
		} else {
			cmd.Process.Signal(c.sig)
		}
		if code := waitExit(t, cmd); code != c.code {
			t.Errorf("%v (handler %v): exit %d, want %d\n%s", c.sig, c.handler, code, c.code, stderr)
			continue
		}
		r, evs := readTrace(t, out)
		if len(r.Warnings()) > 0 {
			t.Errorf("%v: the trace was not closed cleanly: %v", c.sig, r.Warnings())
		}
		var gotWrite bool
		for _, e := range evs {
			if e.Op == trace.OpWrite && r.Path(e.Path) == filepath.Join(dir, "got") {
				gotWrite = true
			}
		}
		if gotWrite != c.handler {
			t.Errorf("%v: handler's write recorded %v, want %v", c.sig, gotWrite, c.handler)
		}
		if c.handler {
			// Exactly one delivery, also when the terminal's signal reached
			// the program directly.
			if b, _ := os.ReadFile(filepath.Join(dir, "got")); string(b) != "x" {
				t.Errorf("%v (group %v): the program got the signal %d times", c.sig, c.group, len(b))
			}
		}
	}
}

const recCatcherC = `
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static volatile sig_atomic_t got[65];
static void on(int s) { got[s]++; }
int main(void) {
	int sigs[] = {SIGWINCH, SIGALRM, SIGUSR1, SIGRTMIN + 1, SIGCONT, SIGTERM};
	for (int i = 0; i < 6; i++) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on;
		sa.sa_flags = SA_RESTART;
		sigaction(sigs[i], &sa, 0);
	}
	FILE *p = fopen("pid", "w");
	fprintf(p, "%d\n", getpid());
	fclose(p);
	while (!got[SIGTERM]) usleep(10000);
	FILE *g = fopen("caught", "w");
	for (int s = 1; s < 65; s++)
		if (got[s]) fprintf(g, "%d:%d ", s, (int)got[s]);
	fclose(g);
	return 0;
}
`

// procState returns the state letter of process pid ('R', 'S', 'T'
// stopped, 't' stopped under a tracer…), or 0 if it is gone.
func procState(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

// TestRecordForwardsSignals: every catchable signal that is not the
// tracer's own business reaches the program, once (SIGWINCH, SIGALRM,
// SIGUSR1, a real-time signal, SIGTERM, sent to iotrace alone); SIGTSTP
// stops the program and iotrace both, as a shell's job control needs, and
// SIGCONT wakes both.
func TestRecordForwardsSignals(t *testing.T) {
	dir := t.TempDir()
	bin := recBuildC(t, dir, "catcher", recCatcherC)
	out := filepath.Join(dir, "catch.iot")
	cmd, stderr, pid := startRecording(t, dir, bin, out)
	rt := syscall.Signal(35) // SIGRTMIN+1 with glibc (SIGRTMIN 34)
	for _, sig := range []syscall.Signal{syscall.SIGWINCH, syscall.SIGALRM, syscall.SIGUSR1, rt} {
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitState := func(pid int, want string) bool {
		for i := 0; i < 300; i++ {
			if strings.IndexByte(want, procState(pid)) >= 0 {
				return true
			}
			time.Sleep(10 * time.Millisecond)
		}
		return false
	}
	cmd.Process.Signal(syscall.SIGTSTP)
	if !waitState(pid, "tT") || !waitState(cmd.Process.Pid, "T") {
		t.Errorf("after SIGTSTP: program state %c, iotrace state %c; want both stopped", procState(pid), procState(cmd.Process.Pid))
	}
	cmd.Process.Signal(syscall.SIGCONT)
	if !waitState(pid, "RS") || !waitState(cmd.Process.Pid, "RS") {
		t.Errorf("after SIGCONT: program state %c, iotrace state %c; want both running", procState(pid), procState(cmd.Process.Pid))
	}
	time.Sleep(100 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	if code := waitExit(t, cmd); code != 0 {
		t.Fatalf("exit %d, want 0 (the program handles SIGTERM)\n%s", code, stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "caught"))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d:1 %d:1 %d:1 %d:1 %d:1 %d:1 ", syscall.SIGUSR1, syscall.SIGALRM, syscall.SIGTERM,
		syscall.SIGCONT, syscall.SIGWINCH, rt)
	if string(b) != want {
		t.Errorf("the program caught (signal:times) %q, want %q", b, want)
	}
}

// TestRecordReportsUnseen: record says on stderr, once each, in both
// capture modes, that the program mapped recorded files (how many) and
// used io_uring and Linux AIO, whose I/O the trace cannot show; the
// mappings are in the trace. POSIX AIO's requests (aio_read, lio_listio)
// are in the trace, as glibc's thread's preads under ptrace and, under
// --preload, as the preads they stand for when aio_return collects them.
func TestRecordReportsUnseen(t *testing.T) {
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	bin := recBuildC(t, dir, "unseen", `
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <linux/io_uring.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv) {
	int a = open("a", O_CREAT|O_RDWR|O_TRUNC, 0644), b = open("b", O_CREAT|O_RDWR|O_TRUNC, 0644);
	ftruncate(a, 8192);
	ftruncate(b, 4096);
	mmap(0, 4096, PROT_READ, MAP_SHARED, a, 0);
	mmap(0, 4096, PROT_READ, MAP_SHARED, a, 4096);
	mmap(0, 4096, PROT_READ|PROT_WRITE, MAP_SHARED, b, 0);
	if (argc > 1) {
		struct io_uring_params p;
		memset(&p, 0, sizeof p);
		if (syscall(SYS_io_uring_setup, 4, &p) < 0) return 9;
		aio_context_t ctx = 0;
		if (syscall(SYS_io_setup, 4, &ctx) < 0) return 9;
	}
	if (argc > 2) {
		static char buf[512];
		struct aiocb cb;
		memset(&cb, 0, sizeof cb);
		cb.aio_fildes = a, cb.aio_buf = buf, cb.aio_nbytes = sizeof buf;
		if (aio_read(&cb) != 0) return 8;
		const struct aiocb *list[] = {&cb};
		while (aio_error(&cb) == EINPROGRESS) aio_suspend(list, 1, NULL);
		if (aio_return(&cb) != sizeof buf) return 7;
		cb.aio_lio_opcode = LIO_READ, cb.aio_offset = 512;
		struct aiocb *lio[] = {&cb};
		if (lio_listio(LIO_WAIT, lio, 1, NULL) != 0) return 6;
		aio_return(&cb);
	}
	return 0;
}`)
	out := filepath.Join(dir, "unseen.iot")
	mapped := "iotrace: record: the program mapped 2 recorded files into memory (mmap): reads and writes through the mappings are not seen\n"
	for _, mode := range [][]string{nil, {"--preload"}} {
		name := "ptrace"
		if mode != nil {
			name = "preload"
		}
		t.Run(name, func(t *testing.T) {
			if mode != nil {
				shimCache(t) // built: record says nothing of its build
			}
			args := append(append([]string{"record"}, mode...), "--include", dir, "-o", out, "--", bin)
			// What record says beside its summary line (which ends it).
			recRun := func(t testing.TB, dir string, env []string, stdin string, args ...string) (string, string, int) {
				o, e, c := recRun(t, dir, env, stdin, args...)
				summary := regexp.MustCompile(`(?m)^iotrace: record: ` + regexp.QuoteMeta(out) + `: \d+ events.*\n`)
				if n := len(summary.FindAllString(e, -1)); n != 1 && c == 0 {
					t.Errorf("%d summary lines, want 1:\n%s", n, e)
				}
				return o, summary.ReplaceAllString(e, ""), c
			}
			_, stderr, code := recRun(t, dir, nil, "", append(args, "async")...)
			if code == 9 {
				t.Skip("io_uring or Linux AIO is not available here")
			}
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			want := mapped + "iotrace: record: the program used io_uring and Linux AIO: that I/O is not seen\n"
			if stderr != want {
				t.Errorf("stderr:\n%s\nwant:\n%s", stderr, want)
			}
			r, evs := readTrace(t, out)
			maps := 0
			f := state.New[struct{}, struct{}](nil) // the file of a call on a descriptor
			for i := range evs {
				p := f.Apply(&evs[i]).Path
				if e := evs[i]; e.Op == trace.OpMmap && e.Ret == 0 && strings.HasPrefix(r.Path(p), dir+"/") {
					maps++
				}
			}
			if maps != 3 {
				t.Errorf("%d mmap events, want 3", maps)
			}
			// Without the asynchronous I/O, only the mappings are reported.
			_, stderr, code = recRun(t, dir, nil, "", args...)
			if code != 0 || stderr != mapped {
				t.Errorf("exit %d, stderr %q", code, stderr)
			}
			// POSIX AIO: aio_read's and lio_listio's requests are in the
			// trace (ptrace: glibc's thread's preads; the shim: at
			// aio_return), and nothing is said of them.
			_, stderr, code = recRun(t, dir, nil, "", append(args, "async", "posix")...)
			want = mapped + "iotrace: record: the program used io_uring and Linux AIO: that I/O is not seen\n"
			if code != 0 || stderr != want {
				t.Errorf("exit %d, stderr:\n%s\nwant:\n%s", code, stderr, want)
			}
			r, evs = readTrace(t, out)
			reads := map[int64]int{}
			for _, e := range evs {
				if e.Op == trace.OpPread && e.Size == 512 && e.Ret == 512 {
					reads[e.Offset]++
				}
			}
			if reads[0] != 1 || reads[512] != 1 {
				t.Errorf("preads of 512 bytes by offset in the trace: %v, want one at 0 (aio_read) and one at 512 (lio_listio)", reads)
			}
		})
	}
}

// TestRecordKilled: when iotrace is killed with SIGKILL the program and
// its child die too (never left running with the filter and no tracer,
// where every traced call would fail with ENOSYS), and the trace
// reads back up to its last flushed block.
func TestRecordKilled(t *testing.T) {
	dir := t.TempDir()
	bin := recBuildC(t, dir, "sleeper", recSleeperC)
	out := filepath.Join(dir, "killed.iot")
	os.Remove(filepath.Join(dir, "cpid"))
	cmd, _, pid := startRecording(t, dir, bin, out, "c")
	b, _ := os.ReadFile(filepath.Join(dir, "cpid"))
	cpid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("the child's pid: %q", b)
	}
	time.Sleep(2500 * time.Millisecond)
	cmd.Process.Kill()
	cmd.Wait()
	var left []int
	for _, p := range []int{pid, cpid} {
		gone := false
		for i := 0; i < 200 && !gone; i++ {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
			// Gone, or a zombie waiting for a reaper.
			gone = err != nil || strings.Contains(string(b), ") Z ")
			if !gone {
				time.Sleep(10 * time.Millisecond)
			}
		}
		if !gone {
			left = append(left, p)
		}
	}
	for _, p := range left {
		syscall.Kill(p, syscall.SIGKILL)
	}
	if len(left) > 0 {
		t.Fatalf("processes %v of the program kept running after iotrace was killed", left)
	}
	r, err := format.OpenOptions(format.ReadOptions{}, out)
	if err != nil {
		t.Fatalf("reading the trace of a killed record: %v", err)
	}
	defer r.Close()
	evs, err := trace.ReadAll(trace.All(r))
	if err != nil {
		t.Fatal(err)
	}
	ticks := 0
	for _, e := range evs {
		if e.Op == trace.OpWrite && r.Path(e.Path) == filepath.Join(dir, "ticks") {
			if e.Offset != int64(ticks) {
				t.Errorf("tick %d at offset %d", ticks, e.Offset)
			}
			ticks++
		}
	}
	// At least the first second of ticks (one every 10ms) was flushed.
	if ticks < 50 {
		t.Errorf("%d ticks survived (warnings %v)", ticks, r.Warnings())
	}
}

// TestRecordIncludeExclude: relative prefixes are taken from the current
// directory; the longest prefix decides.
func TestRecordIncludeExclude(t *testing.T) {
	recSkipUnsupported(t)
	sh := recNeedTool(t, "sh")
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	out := filepath.Join(dir, "inc.iot")
	script := "echo a > top.txt; mkdir -p sub/skip; echo b > sub/x; echo c > sub/skip/y; cat sub/x top.txt > /dev/null"
	if _, stderr, code := recRun(t, dir, nil, "", "record", "-o", out, "--include", "sub", "--exclude", "sub/skip", "--", sh, "-c", script); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r, evs := readTrace(t, out)
	seen := map[string]bool{}
	for _, e := range evs {
		seen[strings.TrimPrefix(r.Path(e.Path), dir+"/")] = true
	}
	if !seen["sub/x"] || seen["top.txt"] || seen["sub/skip/y"] || seen["sub/skip"] {
		t.Errorf("recorded paths %v", seen)
	}
}

// recReplayC does a bit of everything a replay must reproduce: sequential,
// positioned and vector reads and writes, seeks, syncs, a truncate, a dup
// shared with a child, a thread of its own file, appends, a failing open
// and metadata calls.
const recReplayC = `
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static char buf[65536];

static void *thread(void *arg) {
	int fd = open("out/t.dat", O_CREAT|O_WRONLY|O_TRUNC, 0644);
	for (int i = 0; i < 8; i++) pwrite(fd, buf, 8192, i * 8192);
	fsync(fd);
	close(fd);
	return 0;
}

int main(void) {
	memset(buf, 'x', sizeof buf);
	mkdir("out", 0755);
	int fd = open("out/data", O_CREAT|O_RDWR|O_TRUNC, 0644);
	for (int i = 0; i < 16; i++) write(fd, buf, 4096);
	struct iovec iov[3] = {{buf, 100}, {buf + 100, 1000}, {buf + 2000, 3000}};
	writev(fd, iov, 3);
	pwritev(fd, iov, 3, 100000);
	pwrite(fd, buf, 512, 200000);
	lseek(fd, 0, SEEK_SET);
	read(fd, buf, 1000);
	pread(fd, buf, 2000, 50000);
	readv(fd, iov, 3);
	preadv(fd, iov, 3, 7);
	fdatasync(fd);
	ftruncate(fd, 150000);
	struct stat st;
	fstat(fd, &st);
	stat("out/data", &st);
	int d = dup(fd);
	if (fork() == 0) {
		lseek(d, 0, SEEK_END);
		write(d, buf, 777);
		_exit(0);
	}
	wait(0);
	pthread_t th;
	pthread_create(&th, 0, thread, 0);
	pthread_join(th, 0);
	read(d, buf, 4096); /* at the end of the file: 0 bytes */
	close(d);
	close(fd);
	int ap = open("out/log", O_CREAT|O_WRONLY|O_APPEND, 0644);
	for (int i = 0; i < 5; i++) write(ap, buf, 33);
	close(ap);
	open("out/missing", O_RDONLY);
	rename("out/data", "out/data2");
	unlink("out/data2");
	mkdir("out/sub", 0755);
	rmdir("out/sub");
	return 0;
}
`

// TestRecordReplaysE2E: a recorded run replays with ioreplay (as fast as
// possible, recording the replay) with the same calls and bytes, op by
// op, and the same failures.
func TestRecordReplaysE2E(t *testing.T) {
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	bin := recBuildC(t, dir, "replayed", recReplayC)
	replayBin := filepath.Join(dir, "ioreplay")
	if out, err := exec.Command("go", "build", "-o", replayBin, "../ioreplay").CombinedOutput(); err != nil {
		t.Fatalf("building ioreplay: %v\n%s", err, out)
	}
	work := filepath.Join(dir, "work")
	os.Mkdir(work, 0o755)
	orig := filepath.Join(dir, "orig.iot")
	if _, stderr, code := recRun(t, work, nil, "", "record", "--include", work, "-o", orig, "--", bin); code != 0 {
		t.Fatalf("record: exit %d\n%s", code, stderr)
	}
	replayed := filepath.Join(dir, "replay.iot")
	target := filepath.Join(dir, "target")
	cmd := exec.Command(replayBin, "--timing", "afap", "--target", target, "--record", replayed, "--quiet", orig)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ioreplay: %v\n%s", err, out)
	}
	stats := func(name string) *report.Stats {
		r, evs := readTrace(t, name)
		if w := r.Warnings(); len(w) > 0 {
			t.Fatalf("%s: %v", name, w)
		}
		if len(evs) == 0 {
			t.Fatalf("%s: no events", name)
		}
		st, err := report.Compute(r, report.Options{Detail: true})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	a, b := stats(orig), stats(replayed)
	c := report.Compare(a, b)
	// The calls are compared: the recorded run's process events (its
	// fork, its thread, their exits) are not calls a replay makes.
	isProc := func(row report.CompareRow) bool {
		return row.A.Class == trace.ClassProcess || row.B.Class == trace.ClassProcess
	}
	var callsA, callsB, bytesA, bytesB int64
	for _, row := range c.Rows {
		if isProc(row) {
			continue
		}
		if !row.CountsMatch() {
			t.Errorf("counts differ in %s: %d → %d", row.Op, row.A.Count, row.B.Count)
		}
		callsA, bytesA = callsA+row.A.Count, bytesA+row.A.Bytes
		callsB, bytesB = callsB+row.B.Count, bytesB+row.B.Bytes
	}
	ops := map[string]bool{}
	for _, row := range c.Rows {
		ops[row.Op] = true
		if row.A.Bytes != row.B.Bytes || row.A.Errors != row.B.Errors {
			t.Errorf("%s: %d bytes → %d, %d errors → %d", row.Op, row.A.Bytes, row.B.Bytes, row.A.Errors, row.B.Errors)
		}
	}
	// The program's fork and thread are in the recorded trace, and in the
	// replay's (reports leave process events out of their op rows).
	for _, name := range []string{orig, replayed} {
		_, evs := readTrace(t, name)
		procs := map[trace.Op]int{}
		for _, e := range evs {
			if e.Op.Class() == trace.ClassProcess {
				procs[e.Op]++
			}
		}
		for _, op := range []trace.Op{trace.OpFork, trace.OpClone, trace.OpExit} {
			if procs[op] == 0 {
				t.Errorf("%s: no %s", filepath.Base(name), op)
			}
		}
	}
	// The program's calls all made it into the trace.
	for _, op := range []string{"openat", "write", "pwrite", "writev", "pwritev", "read", "pread", "readv", "preadv",
		"lseek", "fsync", "fdatasync", "ftruncate", "dup", "rename", "unlink", "mkdir", "rmdir", "close"} {
		if !ops[op] {
			t.Errorf("no %s in the recorded trace", op)
		}
	}
	if bytesA == 0 || bytesA != bytesB || callsA != callsB {
		t.Errorf("total: %d calls, %d bytes → %d calls, %d bytes", callsA, bytesA, callsB, bytesB)
	}
	if t.Failed() {
		var out bytes.Buffer
		report.RenderCompare(&out, c, "text")
		t.Logf("comparison:\n%s", out.String())
	}
}

// TestRecordPtraceUser records a program that uses ptrace itself (strace
// true): the kernel refuses it a second tracer, and record says so in one
// line, naming --preload, with the program's exit status and no stack.
func TestRecordPtraceUser(t *testing.T) {
	recSkipUnsupported(t)
	strace := recNeedTool(t, "strace")
	dir := t.TempDir()
	out := filepath.Join(dir, "s.iot")
	_, stderr, code := recRun(t, dir, nil, "", "record", "-o", out, "--", strace, "-o", "/dev/null", "true")
	if code == 0 {
		t.Errorf("strace under record: exit 0; want strace's failure\n%s", stderr)
	}
	want := "iotrace: record: warning: the program used ptrace (strace), which a ptrace capture cannot allow"
	if strings.Count(stderr, want) != 1 || !strings.Contains(stderr, "record it with --preload") || strings.Contains(stderr, "goroutine ") {
		t.Errorf("stderr:\n%s", stderr)
	}
	// A program that does not use ptrace hears nothing of it.
	if _, stderr, _ := recRun(t, dir, nil, "", "record", "-o", out, "--", "true"); strings.Contains(stderr, "ptrace") {
		t.Errorf("true: %s", stderr)
	}
	// The advice holds: under --preload strace runs, and its own output
	// is in the trace.
	pout := filepath.Join(dir, "p.iot")
	if _, stderr, code := recRun(t, dir, []string{"IOTRACE_CACHE=" + shimCache(t)}, "", "record", "--preload", "-o", pout, "--", strace, "-o", "st.txt", "true"); code != 0 || strings.Contains(stderr, "ptrace") {
		t.Fatalf("strace under --preload: exit %d\n%s", code, stderr)
	}
	real, _ := filepath.EvalSymlinks(dir)
	if f := fileTallies(t, pout)[filepath.Join(real, "st.txt")]; f[trace.OpWrite].n == 0 {
		t.Errorf("strace's writes to st.txt are not in the --preload trace: %+v", f)
	}
}

// TestRecordKilledAtOnce: a record killed before its first block leaves
// a trace header and nothing else, which check calls EMPTY (with why), not
// DAMAGED, with exit status 1 as for other files that are not ok.
func TestRecordKilledAtOnce(t *testing.T) {
	dir := t.TempDir()
	bin := recBuildC(t, dir, "sleeper", recSleeperC)
	out := filepath.Join(dir, "once.iot")
	cmd, _, pid := startRecording(t, dir, bin, out)
	cmd.Process.Kill()
	cmd.Wait()
	syscall.Kill(pid, syscall.SIGKILL)
	stdout, stderr, code := recRun(t, dir, nil, "", "check", out)
	empty := strings.HasPrefix(stdout, out+": EMPTY: ") && strings.Contains(stdout, "killed before its first block") && code == 1
	// On a loaded machine the first block may have been written before
	// the kill: then it is a trace whose writer did not finish.
	flushed := regexp.MustCompile(`: ok \(no index\): \d+ bytes, [1-9]\d* blocks`).MatchString(stdout)
	if !empty && !flushed || strings.Contains(stderr, "goroutine ") {
		t.Errorf("check of a record killed at once: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestQuitNoStack: SIGQUIT to a command that is not running a program
// (check blocked opening a FIFO no one writes) ends it with one line and
// status 131, not the Go runtime's dump of its goroutines; under record
// it still goes to the program, whose status record takes.
func TestQuitNoStack(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(iotraceBin, "check", fifo)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGQUIT)
	if code := waitExit(t, cmd); code != 131 || stderr.String() != "iotrace: quit (SIGQUIT)\n" {
		t.Errorf("check at SIGQUIT: exit %d\n%s", code, stderr.String())
	}

	bin := recBuildC(t, dir, "sleeper", recSleeperC)
	rec, rstderr, _ := startRecording(t, dir, bin, filepath.Join(dir, "q.iot"))
	rec.Process.Signal(syscall.SIGQUIT)
	if code := waitExit(t, rec); code != 131 || strings.Contains(rstderr.String(), "goroutine ") || strings.Contains(rstderr.String(), "quit (SIGQUIT)") {
		t.Errorf("record at SIGQUIT: exit %d, want the program's 131\n%s", code, rstderr.String())
	}
}

// TestRecordOutputCheckedFirst: a trace name that cannot be written
// stops a record before the program runs, with the same line in both
// modes (a preload record used to run the program and fail after it, at
// its encoding), and leaves nothing where the trace would have gone.
func TestRecordOutputCheckedFirst(t *testing.T) {
	recSkipUnsupported(t)
	dir := t.TempDir()
	env := []string{"IOTRACE_CACHE=" + shimCache(t)}
	ran := filepath.Join(dir, "ran")
	missing := filepath.Join(dir, "no", "such", "t.iot")
	taken := filepath.Join(dir, "taken")
	if err := os.MkdirAll(filepath.Join(taken, "rank-00000.iot"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, mode := range [][]string{nil, {"--preload"}} {
		for _, c := range []struct{ out, want string }{
			{missing, "open " + missing + ": no such file or directory"},
			{taken, "already holds rank-00000.iot"},
			{"-", "-o -: a trace is not written to standard output"},
		} {
			args := append(append([]string{"record"}, mode...), "-o", c.out, "--", "sh", "-c", "touch "+ran)
			_, stderr, code := recRun(t, dir, env, "", args...)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if code != 1 || len(lines) != 1 || !strings.Contains(lines[0], c.want) {
				t.Errorf("%v: exit %d, stderr:\n%s\nwant one line with %q", args, code, stderr, c.want)
			}
			if _, err := os.Stat(ran); err == nil {
				t.Errorf("%v: the program ran", args)
				os.Remove(ran)
			}
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left behind in %s: %v", dir, ents)
	}
}

// TestMergeNotToStdout: merge writes a trace file, read back by offset:
// -o - is one clear line, not a file named "-".
func TestMergeNotToStdout(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.iot")
	mustRun(t, "generate", "ior", "-o", in)
	_, stderr, code := runIn(t, dir, "merge", "-o", "-", in)
	if code == 0 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "-o -: a trace is not written to standard output") {
		t.Errorf("merge -o -: exit %d, stderr:\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "-")); err == nil {
		t.Error(`merge -o - made a file named "-"`)
	}
}
