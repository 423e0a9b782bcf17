package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iotrace/iotrace/internal/mpitest"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
	"github.com/iotrace/iotrace/trace/state"
	"golang.org/x/sys/unix"
)

// TestRecordPreload records a C program with --preload, as a user runs
// it, and checks its calls; then encodes a kept spool again with
// --from-spool.
func TestRecordPreload(t *testing.T) {
	dir := t.TempDir()
	bin := recBuildC(t, dir, "prog", `
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
int main(void) {
	char b[512] = {0};
	int fd = open("out.dat", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	for (int i = 0; i < 100; i++) write(fd, b, 512);
	fsync(fd);
	close(fd);
	FILE *f = fopen("out.dat", "r");
	fread(b, 1, 512, f);
	fclose(f);
	return 3;
}
`)
	// The first --preload run builds the shim, for seconds: it says so,
	// once. A compiler that thinks for 2 s and fails stands for it (a
	// real build here takes a minute on a loaded machine).
	slowCC := filepath.Join(dir, "slow-cc")
	if err := os.WriteFile(slowCC, []byte("#!/bin/sh\nsleep 2\necho 'slow-cc: no compiler here' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "fresh-cache")
	_, stderr, code := recRun(t, dir, []string{"IOTRACE_CACHE=" + fresh, "CC=" + slowCC}, "", "record", "--preload", "-o", filepath.Join(dir, "n.iot"), "--", bin)
	if n := strings.Count(stderr, "building the preload shim with cc into "+fresh+": "); code != 1 || n != 1 || !strings.Contains(stderr, "slow-cc: no compiler here") {
		t.Errorf("a slow first build: exit %d, said %d times:\n%s", code, n, stderr)
	}
	env := []string{"IOTRACE_CACHE=" + shimCache(t)}
	out := filepath.Join(dir, "p.iot")
	spool := filepath.Join(dir, "spool")
	_, stderr, code = recRun(t, dir, env, "", "record", "--preload", "--spool", spool, "-o", out, "--", bin)
	if code != 3 {
		t.Fatalf("exit %d, want the program's 3\n%s", code, stderr)
	}
	// With the shim in the cache, record says nothing of it.
	if strings.Contains(stderr, "building") {
		t.Errorf("a run with the shim in the cache says it builds it:\n%s", stderr)
	}
	got, _ := tallies(t, out)
	want := map[trace.Op]tally{trace.OpOpen: {1, 0}, trace.OpWrite: {100, 51200}, trace.OpFsync: {1, 0},
		trace.OpClose: {1, 0}, trace.OpFopen: {1, 0}, trace.OpRead: {1, 4096}, trace.OpFclose: {1, 0}}
	for op, w := range want {
		if g := got[0][op]; g != w {
			t.Errorf("%s: %d calls, %d bytes; want %d, %d", op, g.n, g.bytes, w.n, w.bytes)
		}
	}
	// fread of 512 bytes is the read that fills stdio's buffer (4096
	// bytes: the file system's block), as the kernel sees it.
	if g := got[0][trace.OpFread]; g.n != 0 {
		t.Errorf("fread recorded as a library call: %+v", g)
	}
	// --spool keeps the spools: encode them again.
	again := filepath.Join(dir, "again.iot")
	if _, stderr, code := recRun(t, dir, env, "", "record", "--from-spool", spool, "-o", again); code != 0 || strings.Contains(stderr, "killed") {
		// A record that ended leaves no owner file: its spools are not a
		// killed record's.
		t.Fatalf("--from-spool: exit %d\n%s", code, stderr)
	}
	if g, _ := tallies(t, again); g[0][trace.OpWrite] != want[trace.OpWrite] {
		t.Errorf("--from-spool: writes %+v", g[0][trace.OpWrite])
	}
	// A spool directory already used is refused; an empty one has nothing.
	if _, stderr, code := recRun(t, dir, env, "", "record", "--preload", "--spool", spool, "-o", out, "--", bin); code == 0 || !strings.Contains(stderr, "another run") {
		t.Errorf("reused --spool: exit %d, %q", code, stderr)
	}
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	if _, stderr, code := recRun(t, dir, env, "", "record", "--from-spool", empty, "-o", filepath.Join(dir, "e.iot")); code == 0 || !strings.Contains(stderr, "no process wrote a spool") {
		t.Errorf("empty --from-spool: exit %d, %q", code, stderr)
	}
}

// fileTallies reads a trace and counts, for each file, the opens, reads
// and writes and the bytes moved (one process per rank, or processes
// whose descriptors do not collide).
func fileTallies(t *testing.T, path string) map[string]map[trace.Op]tally {
	t.Helper()
	r, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	src := trace.All(r)
	evs, err := trace.ReadAll(src)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[trace.Op]tally{}
	f := state.New[struct{}, struct{}](nil)
	for i := range evs {
		e := &evs[i]
		name := src.Path(f.Apply(e).Path)
		if name == "" {
			continue
		}
		if out[name] == nil {
			out[name] = map[trace.Op]tally{}
		}
		tl := out[name][e.Op]
		tl.n++
		if e.Op.Dir() != trace.DirNone {
			tl.bytes += max(e.Ret, 0)
		}
		out[name][e.Op] = tl
	}
	return out
}

// TestRecordPreloadTar records GNU tar creating and extracting an
// archive: it opens with __openat_2 and reads with read, which the shim
// records (they were unseen), and writes every file.
func TestRecordPreloadTar(t *testing.T) {
	tar := recNeedTool(t, "tar")
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	os.MkdirAll(filepath.Join(src, "d"), 0o755)
	for i, n := range []int{30000, 5000, 70000} {
		if err := os.WriteFile(filepath.Join(src, "d", fmt.Sprintf("f%d", i)), make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"IOTRACE_CACHE=" + shimCache(t)}
	out := filepath.Join(dir, "c.iot")
	if _, stderr, code := recRun(t, dir, env, "", "record", "--preload", "-o", out, "--", tar, "cf", "a.tar", "src"); code != 0 {
		t.Fatalf("tar cf: exit %d\n%s", code, stderr)
	}
	real, _ := filepath.EvalSymlinks(dir)
	got := fileTallies(t, out)
	for i, n := range []int64{30000, 5000, 70000} {
		f := got[filepath.Join(real, "src", "d", fmt.Sprintf("f%d", i))]
		if f[trace.OpOpenat].n != 1 || f[trace.OpRead].bytes != n || f[trace.OpClose].n != 1 {
			t.Errorf("tar cf: f%d: %v: want an openat, %d bytes read, a close", i, f, n)
		}
	}
	st, _ := os.Stat(filepath.Join(dir, "a.tar"))
	if a := got[filepath.Join(real, "a.tar")]; a[trace.OpWrite].bytes != st.Size() {
		t.Errorf("tar cf: the archive: %v: want %d bytes written", a, st.Size())
	}
	x := filepath.Join(dir, "x")
	os.Mkdir(x, 0o755)
	out = filepath.Join(dir, "x.iot")
	if _, stderr, code := recRun(t, x, env, "", "record", "--preload", "-o", out, "--", tar, "xf", "../a.tar"); code != 0 {
		t.Fatalf("tar xf: exit %d\n%s", code, stderr)
	}
	got = fileTallies(t, out)
	if a := got[filepath.Join(real, "a.tar")]; a[trace.OpRead].bytes != st.Size() {
		t.Errorf("tar xf: the archive: %v: want %d bytes read", a, st.Size())
	}
	for i, n := range []int64{30000, 5000, 70000} {
		f := got[filepath.Join(real, "x", "src", "d", fmt.Sprintf("f%d", i))]
		if f[trace.OpOpenat].n != 1 || f[trace.OpWrite].bytes != n {
			t.Errorf("tar xf: f%d: %v: want an openat and %d bytes written", i, f, n)
		}
	}
}

// TestRecordPreloadWaitsForLeftProcesses records a shell that leaves a
// background job running: record waits for it, and its late write is in
// the trace.
func TestRecordPreloadWaitsForLeftProcesses(t *testing.T) {
	sh := recNeedTool(t, "sh")
	dir := t.TempDir()
	env := []string{"IOTRACE_CACHE=" + shimCache(t)}
	out := filepath.Join(dir, "w.iot")
	if _, stderr, code := recRun(t, dir, env, "", "record", "--preload", "-o", out, "--", sh, "-c", "(sleep 0.3; echo late > f) & exit 0"); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	real, _ := filepath.EvalSymlinks(dir)
	if f := fileTallies(t, out)[filepath.Join(real, "f")]; f[trace.OpOpen].n != 1 || f[trace.OpWrite].bytes != 5 {
		t.Errorf("the background job's file: %v: want its open and 5 bytes written", f)
	}
}

// TestRecordPreloadStopsWaiting interrupts record while it waits for a
// process the program left running: it stops, says how many still run,
// and writes the trace of what was recorded.
func TestRecordPreloadStopsWaiting(t *testing.T) {
	sh := recNeedTool(t, "sh")
	dir := t.TempDir()
	shimCache(t) // built before the clock starts
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := filepath.Join(dir, "s.iot")
	cmd := exec.CommandContext(ctx, iotraceBin, "record", "--preload", "-o", out, "--", sh, "-c", "(sleep 30; echo late > f) & echo early > e; exit 0")
	cmd.Dir = dir
	cmd.Env = append(recCleanEnv(), "IOTRACE_CACHE="+shimCache(t))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var lines []string
	pids := regexp.MustCompile(`\b\d+\b`)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		switch {
		case strings.Contains(sc.Text(), "waiting for"):
			cmd.Process.Signal(os.Interrupt)
		case strings.Contains(sc.Text(), "stopped waiting"):
			// The background job and its sleep hold stderr open: end them.
			for _, p := range pids.FindAllString(sc.Text(), -1)[1:] {
				if pid, err := strconv.Atoi(p); err == nil {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v\n%s", err, strings.Join(lines, "\n"))
	}
	got := strings.Join(lines, "\n")
	left := regexp.MustCompile(`waiting for 2 processes the program left running \(pids (\d+) (\d+)\); interrupt to stop\n` +
		`iotrace: record: stopped waiting: 2 processes still running \(pids (\d+) (\d+)\); their later calls are not recorded`).FindStringSubmatch(got)
	if left == nil {
		t.Fatalf("stderr:\n%s", got)
	}
	real, _ := filepath.EvalSymlinks(dir)
	if f := fileTallies(t, out)[filepath.Join(real, "e")]; f[trace.OpWrite].bytes != 6 {
		t.Errorf("the program's own write: %v", f)
	}
}

// TestRecordPreloadMPILoadedLocal records an MPI program whose MPI
// library comes in with a module the program dlopens with RTLD_LOCAL (as
// Python loads mpi4py): the library is not in the shim's scope, so
// dlsym(RTLD_NEXT) does not find it. The shim must find it all the same
// (each rank records its MPI-IO calls) and never call a function it did
// not find. The file view is a type of one block at a rank's own place in
// its extent (HDF5's hyperslab of a dataset): the view the shim records
// starts at that block.
func TestRecordPreloadMPILoadedLocal(t *testing.T) {
	mpitest.Need(t)
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod.c")
	if err := os.WriteFile(mod, []byte(`
#include <mpi.h>
int run(void) {
	int rank, size, block = 4096;
	MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &size);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Datatype part, ft;
	int sizes[1] = {block * size}, subs[1] = {block}, starts[1] = {block * rank};
	MPI_Type_create_subarray(1, sizes, subs, starts, MPI_ORDER_C, MPI_BYTE, &part);
	MPI_Type_commit(&part);
	ft = part;
	static char buf[4096];
	MPI_File fh;
	MPI_File_open(MPI_COMM_WORLD, "local.dat", MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
	MPI_File_set_view(fh, 512, MPI_BYTE, ft, "native", MPI_INFO_NULL);
	MPI_File_write_at_all(fh, 0, buf, block, MPI_BYTE, MPI_STATUS_IGNORE);
	MPI_Offset end;
	MPI_File_get_size(fh, &end);
	MPI_File_close(&fh);
	MPI_Type_free(&part);
	MPI_Finalize();
	return end > 0 ? 0 : 9;
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command("mpicc", "-shared", "-fPIC", "-O1", "-o", filepath.Join(dir, "mod.so"), mod).CombinedOutput(); err != nil {
		t.Fatalf("mpicc: %v\n%s", err, b)
	}
	host := recBuildC(t, dir, "host", `
#include <dlfcn.h>
#include <stdio.h>
int main(void) {
	void *h = dlopen("./mod.so", RTLD_NOW | RTLD_LOCAL);
	if (!h) { fprintf(stderr, "%s\n", dlerror()); return 2; }
	int (*run)(void) = (int (*)(void))dlsym(h, "run");
	return run();
}
`)
	env := []string{"IOTRACE_CACHE=" + shimCache(t)}
	out := filepath.Join(dir, "local.iot")
	mpitest.MustRun(t, dir, 2*time.Minute, 2, env, iotraceBin, "record", "--preload", "-o", out, "--", host)
	got, evs := tallies(t, out)
	for r := uint32(0); r < 2; r++ {
		want := map[trace.Op]tally{trace.OpMPIFileOpen: {1, 0}, trace.OpMPIFileSetView: {1, 0},
			trace.OpMPIFileWriteAtAll: {1, 4096}, trace.OpMPIFileClose: {1, 0}}
		for op, w := range want {
			if g := got[r][op]; g != w {
				t.Errorf("rank %d: %s: %d calls, %d bytes; want %d, %d", r, op, g.n, g.bytes, w.n, w.bytes)
			}
		}
	}
	var views int
	for _, e := range evs {
		switch {
		case e.Op == trace.OpMPIFileSetView:
			views++
			if e.Offset != 512+4096*int64(e.Rank) || e.Size != 4096 || e.Stride != 8192 {
				t.Errorf("rank %d: view at %d, %d bytes every %d; want %d, 4096 every 8192", e.Rank, e.Offset, e.Size, e.Stride, 512+4096*int64(e.Rank))
			}
		case e.Op == trace.OpLseek && e.Flags&trace.InMPIIO == 0:
			t.Errorf("rank %d: an lseek outside MPI-IO (MPI_File_get_size's must count as the library's)", e.Rank)
		}
	}
	if views != 2 {
		t.Errorf("%d views recorded, want 2", views)
	}
}

const recTickerC = `
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 300;
	FILE *p = fopen("pid", "w");
	fprintf(p, "%d\n", getpid());
	fclose(p);
	int fd = open("ticks", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	for (int i = 0; i < n; i++) {
		write(fd, "x", 1);
		usleep(10000);
	}
	close(fd);
	return 0;
}
`

// TestRecordPreloadKilled kills record --preload (SIGKILL) while its
// program runs: the spool directory is found from the output's name
// (OUT.spool), --from-spool refuses it while the recorder lives, and once
// it is dead encodes every call of the program into the killed record's
// -o, saying the recorder was killed.
func TestRecordPreloadKilled(t *testing.T) {
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	bin := recBuildC(t, dir, "ticker", "#include <stdlib.h>\n"+recTickerC)
	env := append(recCleanEnv(), "IOTRACE_CACHE="+shimCache(t))
	out := filepath.Join(dir, "k.iot")
	cmd := exec.Command(iotraceBin, "record", "--preload", "-o", out, "--", bin, "200")
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	ticks := filepath.Join(dir, "ticks")
	for i := 0; i < 1000; i++ {
		if st, err := os.Stat(ticks); err == nil && st.Size() >= 5 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	link := out + ".spool"
	spool, err := filepath.EvalSymlinks(link)
	if err != nil {
		t.Fatalf("no spool link beside the output: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(spool) })
	// The recorder runs: its spools are not to be encoded under it.
	_, stderr, code := recRun(t, dir, nil, "", "record", "--from-spool", link)
	if code == 0 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, fmt.Sprintf("its recorder, iotrace pid %d, still runs", cmd.Process.Pid)) {
		t.Errorf("--from-spool of a live record: exit %d\n%s", code, stderr)
	}
	cmd.Process.Kill()
	cmd.Wait()
	// The program runs on, recording: let it end.
	b, _ := os.ReadFile(filepath.Join(dir, "pid"))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	for i := 0; i < 3000 && pid > 0 && procState(pid) != 0 && procState(pid) != 'Z'; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatalf("a killed record wrote %s", out)
	}
	// Reading the trace that is not there names the spools and the
	// command that encodes them.
	if _, stderr, code := recRun(t, dir, nil, "", "stats", out); code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "'iotrace record --from-spool "+link+"' encodes them") {
		t.Errorf("stats of the killed record's output: exit %d\n%s", code, stderr)
	}
	_, stderr, code = recRun(t, dir, nil, "", "record", "--from-spool", link)
	if code != 0 || !strings.Contains(stderr, "are those of a record that was killed (iotrace pid "+strconv.Itoa(cmd.Process.Pid)) || strings.Contains(stderr, "goroutine") {
		t.Fatalf("--from-spool %s: exit %d\n%s", link, code, stderr)
	}
	f := fileTallies(t, out)[ticks]
	if f[trace.OpWrite].n != 200 || f[trace.OpOpen].n != 1 || f[trace.OpClose].n != 1 {
		t.Errorf("the recovered trace holds %+v of ticks; want 1 open, 200 writes, 1 close", f)
	}
	// A link to nothing says so.
	os.RemoveAll(spool)
	if _, stderr, code := recRun(t, dir, nil, "", "record", "--from-spool", link); code == 0 || !strings.Contains(stderr, "is gone") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("--from-spool of a dangling link: exit %d\n%s", code, stderr)
	}
}

// TestRecordPreloadSpoolLinkRemoved: a record that ends normally leaves
// no link and no spool directory.
func TestRecordPreloadSpoolLinkRemoved(t *testing.T) {
	sh := recNeedTool(t, "sh")
	dir := t.TempDir()
	out := filepath.Join(dir, "n.iot")
	tmp := filepath.Join(dir, "tmp")
	os.Mkdir(tmp, 0o755)
	if _, stderr, code := recRun(t, dir, []string{"IOTRACE_CACHE=" + shimCache(t), "TMPDIR=" + tmp}, "", "record", "--preload", "-o", out, "--", sh, "-c", "echo a > f"); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if _, err := os.Lstat(out + ".spool"); err == nil {
		t.Error("the spool link outlived the record")
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("left in TMPDIR: %v", left)
	}
}

// startPreloadRecording starts record --preload of bin args in dir, in a
// new session whose controlling terminal is a pseudo-terminal (record in
// its foreground process group, as a shell runs a command); it returns
// the terminal's master side and the program's pid.
func startPreloadRecording(t *testing.T, dir, bin, out string, args ...string) (*exec.Cmd, *os.File, *bytes.Buffer, int) {
	t.Helper()
	env := append(recCleanEnv(), "IOTRACE_CACHE="+shimCache(t))
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ptmx.Close() })
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	os.Remove(filepath.Join(dir, "pid"))
	cmd := exec.Command(iotraceBin, append([]string{"record", "--preload", "-o", out, "--", bin}, args...)...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin, cmd.Stdout = tty, tty
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Drain the terminal, so that nothing the program writes blocks.
	go io.Copy(io.Discard, ptmx)
	for i := 0; i < 3000; i++ {
		if b, err := os.ReadFile(filepath.Join(dir, "pid")); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			return cmd, ptmx, &stderr, pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	t.Fatalf("the program did not start: %s", stderr.String())
	return nil, nil, nil, 0
}

// TestRecordPreloadSignals: under --preload a terminal's Ctrl-C (SIGINT
// to the foreground process group, record and program) reaches the
// program once, as does a SIGTERM sent to record alone; the handler's
// work is in the trace, the status is the program's, and record says in
// one line how the run ended. A program that ignores the signal is given
// a bounded grace, then record encodes what it recorded and says so.
func TestRecordPreloadSignals(t *testing.T) {
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	bin := recBuildC(t, dir, "sleeper", recSleeperC)
	for _, c := range []struct {
		name string
		send func(cmd *exec.Cmd, tty *os.File)
		want string
	}{
		{"ctrl-c", func(_ *exec.Cmd, tty *os.File) { tty.Write([]byte{3}) }, "SIGINT: the program ended (exit status 5)"},
		{"sigterm", func(cmd *exec.Cmd, _ *os.File) { cmd.Process.Signal(syscall.SIGTERM) }, "SIGTERM: the program ended (exit status 5)"},
	} {
		out := filepath.Join(dir, c.name+".iot")
		os.Remove(filepath.Join(dir, "got"))
		cmd, tty, stderr, _ := startPreloadRecording(t, dir, bin, out, "h")
		time.Sleep(100 * time.Millisecond)
		c.send(cmd, tty)
		if code := waitExit(t, cmd); code != 5 || strings.Count(stderr.String(), c.want) != 1 || strings.Contains(stderr.String(), "goroutine ") {
			t.Errorf("%s: exit %d, want 5 and %q\n%s", c.name, code, c.want, stderr)
			continue
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "got")); string(b) != "x" {
			t.Errorf("%s: the program got the signal %d times", c.name, len(b))
		}
		if f := fileTallies(t, out)[filepath.Join(dir, "got")]; f[trace.OpWrite].n != 1 {
			t.Errorf("%s: the handler's write is not in the trace: %+v", c.name, f)
		}
	}

	// A program that ignores SIGTERM. It ignores SIGHUP too: here record
	// is the session leader of the terminal (in a shell the shell is), so
	// record's exit hangs the terminal up and the kernel sends SIGHUP to
	// the foreground process group, the program's; without this the
	// program died of it, or not yet, depending on the load.
	ign := recBuildC(t, dir, "ignorer", `
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
int main(void) {
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	FILE *p = fopen("pid", "w");
	fprintf(p, "%d\n", getpid());
	fclose(p);
	int fd = open("ticks", O_CREAT|O_WRONLY|O_TRUNC, 0644);
	for (int i = 0; i < 6000; i++) {
		write(fd, "t", 1);
		usleep(10000);
	}
	return 0;
}
`)
	out := filepath.Join(dir, "ign.iot")
	cmd, _, stderr, pid := startPreloadRecording(t, dir, ign, out)
	defer syscall.Kill(pid, syscall.SIGKILL)
	time.Sleep(200 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	code := waitExit(t, cmd)
	want := fmt.Sprintf("the program (pid %d) did not end within 5s of SIGTERM", pid)
	if code != 143 || strings.Count(stderr.String(), want) != 1 {
		t.Errorf("a program that ignores SIGTERM: exit %d, want 143 and %q\n%s", code, want, stderr)
	}
	time.Sleep(300 * time.Millisecond) // time for a signal to end it, if one were sent
	if st := procState(pid); st == 0 || st == 'Z' {
		t.Errorf("the program was ended (state %q); it ignores SIGTERM and should run on", st)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	if f := fileTallies(t, out)[filepath.Join(dir, "ticks")]; f[trace.OpWrite].n < 20 {
		t.Errorf("the ticks before the grace ended: %+v", f)
	}
}

// TestRecordPreloadProcessStarts: a recorded shell that starts commands
// (as a shell's children, and one whose exec replaces an image with
// records) has the shim's cost per process start taken out, at each start
// of each kind, as the trace's recorder cost says: measured after the
// program (auto: the value depends on the machine's state, so only that
// it was measured is checked here; TestImageCost checks the measurement),
// or as --start-cost gives it. --raw-times and --start-cost 0 take out
// nothing; a program that starts none is not made to wait for the
// measurement; a --start-cost that is not a duration is one line.
func TestRecordPreloadProcessStarts(t *testing.T) {
	dir := t.TempDir()
	env := []string{"IOTRACE_CACHE=" + shimCache(t)}
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `cat f >/dev/null; cat f >/dev/null; sh -c 'exec cat f' >/dev/null`
	record := func(name string, flags ...string) (string, string) {
		out := filepath.Join(dir, name)
		args := append(append([]string{"record", "--preload"}, flags...), "-o", out, "--", "sh", "-c", script)
		_, stderr, code := recRun(t, dir, env, "", args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr)
		}
		c, cerr, code := recRun(t, dir, env, "", "check", out)
		if code != 0 {
			t.Fatalf("check %s: exit %d\n%s", out, code, cerr)
		}
		return c, stderr
	}
	// The shell's children: three forks and execs (cat, cat, sh), and the
	// inner sh's exec of cat replaces an image with records.
	c, _ := record("given.iot", "--start-cost", "150us")
	if !strings.Contains(c, "150.0 µs at each of 3 process starts; 150.0 µs at each of 1 execs that replaced an image with records") {
		dump, _, _ := recRun(t, dir, env, "", "dump", filepath.Join(dir, "given.iot"))
		t.Errorf("--start-cost 150us: check:\n%s\nwant 150 µs at 3 process starts and 1 exec that replaced an image; the trace:\n%s", c, dump)
	}
	if _, stderr := record("auto.iot", "-v"); !(strings.Contains(stderr, "the shim's cost per process start: ") && strings.Contains(stderr, " at 3 starts, ")) &&
		!strings.Contains(stderr, "too busy to measure the shim's cost per process start") {
		t.Errorf("--start-cost auto: stderr:\n%s\nwant the measured cost at 3 starts (or that the machine was too busy)", stderr)
	}
	for _, flags := range [][]string{{"--raw-times"}, {"--start-cost", "0"}} {
		if c, _ := record("none.iot", flags...); strings.Contains(c, "process starts") || strings.Contains(c, "replaced an image") {
			t.Errorf("%v: check:\n%s\nwant no cost per process start", flags, c)
		}
	}
	one := filepath.Join(dir, "one.iot")
	start := time.Now()
	if _, stderr, code := recRun(t, dir, env, "", "record", "--preload", "-v", "-o", one, "--", "cat", "f"); code != 0 || strings.Contains(stderr, "cost per process start") {
		t.Fatalf("record cat: exit %d, measured a cost per process start:\n%s", code, stderr)
	}
	t.Logf("record of one process: %v", time.Since(start))
	if _, stderr, code := recRun(t, dir, env, "", "record", "--preload", "--start-cost", "fast", "-o", one, "--", "cat", "f"); code == 0 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, `--start-cost "fast"`) {
		t.Errorf("--start-cost fast: exit %d, stderr:\n%s", code, stderr)
	}
}
