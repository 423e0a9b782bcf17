package preload

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/capture"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
)

// TestShimProcessEvents records a program that starts a thread, forks a
// child that writes to a descriptor it inherited and then execs the
// program again (whose new image writes to it too), and exits with a
// status; and checks the process events the encoder makes: fork, clone,
// exec, inherit and exit, with their threads, in order.
func TestShimProcessEvents(t *testing.T) {
	libs := buildShim(t)
	dir := t.TempDir()
	bin := compile(t, dir, "procs", `
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
static int logfd;
static void *worker(void *arg) { write(logfd, "t", 1); return arg; }
int main(int argc, char **argv) {
	if (argc > 1) {
		write(3, "e", 1);
		int fd = open("exec.dat", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		write(fd, "x", 1);
		close(fd);
		return 5;
	}
	logfd = open("log.dat", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	pthread_t th;
	pthread_create(&th, NULL, worker, NULL);
	pthread_join(th, NULL);
	pid_t p = fork();
	if (p == 0) {
		write(logfd, "c", 1);
		execl(argv[0], argv[0], "again", (char *)NULL);
		_exit(127);
	}
	int st;
	waitpid(p, &st, 0);
	write(logfd, "p", 1);
	return WEXITSTATUS(st) == 5 ? 3 : 1;
}
`)
	spool, err := record(t, libs, dir, bin)
	if err == nil {
		t.Fatal("the program exited with 0, want 3")
	}
	real, _ := filepath.EvalSymlinks(dir)
	rules, _ := filter.NewPaths([]string{real}, nil, true)
	evs, paths, stats := encode(t, spool, rules)
	if stats[0].Processes != 3 || stats[0].Threads != 3 {
		t.Errorf("stats %+v: want 3 process images (parent, child, child after exec) and 3 threads", stats[0])
	}
	var lines []string
	for _, e := range evs[0] {
		name := strings.TrimPrefix(strings.TrimPrefix(paths.Lookup(e.Path), real), dir)
		s := fmt.Sprintf("%d %s", e.Thread, e.Op)
		switch e.Op {
		case trace.OpFork, trace.OpClone, trace.OpExit:
			s += fmt.Sprintf(" ret=%d", e.Ret)
		case trace.OpExec:
			s += " " + filepath.Base(paths.Lookup(e.Path))
		case trace.OpInherit:
			s += fmt.Sprintf(" fd=%d %s", e.FD, name)
		case trace.OpWrite, trace.OpOpen, trace.OpClose:
			s += fmt.Sprintf(" fd=%d %s", e.FD, name)
		}
		lines = append(lines, s)
	}
	got := strings.Join(lines, "\n")
	t.Logf("events:\n%s", got)
	want := `0 open fd=3 /log.dat
0 clone ret=1
1 write fd=3 
1 exit ret=0
0 fork ret=2
2 inherit fd=3 /log.dat
2 write fd=3 
2 exec procs
2 inherit fd=3 /log.dat
2 write fd=3 
2 open fd=4 /exec.dat
2 write fd=4 
2 close fd=4 
2 exit ret=5
0 write fd=3 
0 exit ret=3`
	if got != want {
		t.Errorf("want:\n%s", want)
	}
}

// TestShimForkExecSpools: a forked child makes its spool when it first
// records, not at the fork: three children that exec at once leave only
// the spools of the images they become (making one for each child as it
// forked cost a file, a header and page faults for nothing: a third of
// the shim's cost of a fork and exec), while a child that writes before
// it execs has its own.
func TestShimForkExecSpools(t *testing.T) {
	libs := buildShim(t)
	dir := t.TempDir()
	bin := compile(t, dir, "forkexec", `
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
	if (argc > 1) return 0;
	for (int i = 0; i < 4; i++) {
		pid_t p = fork();
		if (p == 0) {
			if (i == 3) {
				int fd = open("child.dat", O_WRONLY | O_CREAT | O_TRUNC, 0644);
				write(fd, "c", 1);
				close(fd);
			}
			execl(argv[0], argv[0], "again", (char *)NULL);
			_exit(127);
		}
		int st;
		waitpid(p, &st, 0);
	}
	return 0;
}
`)
	spool, err := record(t, libs, dir, bin)
	if err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(spool, "spool-*.sp"))
	// The parent, the four images the children became, the writing child.
	if len(names) != 6 {
		t.Errorf("%d spools, want 6", len(names))
	}
	real, _ := filepath.EvalSymlinks(dir)
	rules, _ := filter.NewPaths([]string{real}, nil, true)
	evs, _, stats := encode(t, spool, rules)
	writes := 0
	var ops []string
	for _, e := range evs[0] {
		if e.Op == trace.OpWrite {
			writes++
		}
		ops = append(ops, e.Op.String())
	}
	if writes != 1 || stats[0].Processes != 6 {
		t.Errorf("%d writes, %d process images; want 1 and 6", writes, stats[0].Processes)
	}
	// Every child's fork and exec, as when each had its spool.
	if got, want := strings.Join(ops, " "), "fork exec exit fork exec exit fork exec exit fork open write close exec exit exit"; got != want {
		t.Errorf("events\n%s\nwant\n%s", got, want)
	}
}

// TestShimStartIsOver checks that the shim's own start in each image (its
// spool, its header, the calibration) is kept out of the program's time:
// the first record of an image measures it as its Over, the shim's time
// in the gap before that call, which the encoder takes out. And that the
// images a program execs inherit its calibration (IOTRACE_COST) instead
// of measuring again.
func TestShimStartIsOver(t *testing.T) {
	libs := buildShim(t)
	dir := t.TempDir()
	bin := compile(t, dir, "execs", `
#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
	int left = argc > 1 ? atoi(argv[1]) : 3;
	int fd = open("f.dat", O_WRONLY | O_CREAT | O_APPEND, 0644);
	write(fd, "x", 1);
	close(fd);
	if (left == 0) return 0;
	char next[8] = {'0' + left - 1, 0};
	pid_t p = fork();
	if (p == 0) {
		execl(argv[0], argv[0], next, (char *)NULL);
		_exit(127);
	}
	int st;
	waitpid(p, &st, 0);
	return 0;
}
`)
	spool, err := record(t, libs, dir, bin)
	if err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(spool, "spool-*.sp"))
	if len(names) != 4 {
		t.Fatalf("%d spools, want 4 (an image each)", len(names))
	}
	var costs []capture.Cost
	var tails []int64
	for _, n := range names {
		s, err := OpenSpool(n)
		if err != nil {
			t.Fatal(err)
		}
		h := s.Header
		if !h.Exec {
			t.Errorf("%s: not an exec'd image", n)
		}
		costs = append(costs, h.Cost)
		tails = append(tails, h.Tail)
		var first *Record
		s.Records(func(r *Record) error {
			if first == nil && r.Call != 0 {
				c := *r
				first = &c
			}
			return nil
		})
		s.Close()
		if first == nil {
			t.Errorf("%s: no record", n)
			continue
		}
		// The shim's start lies between the image's start and the first
		// call: its Over is more than nothing, less than that gap.
		if first.Over <= 0 || first.Over > first.Start-h.MonoStart {
			t.Errorf("%s: the first record's Over %d ns, its call %d ns after the image's start", n, first.Over, first.Start-h.MonoStart)
		}
	}
	for i, c := range costs {
		if c != costs[0] || c.Samples == 0 || tails[i] != tails[0] {
			t.Errorf("the images' calibrations differ: %+v, tails %v", costs, tails)
			break
		}
	}
	// A calibration in the environment is the one every image uses.
	if spool, _, err = recordEnv(t, libs, dir, []string{"IOTRACE_COST=7 9 3 99 5"}, bin); err != nil {
		t.Fatal(err)
	}
	names, _ = filepath.Glob(filepath.Join(spool, "spool-*.sp"))
	want := capture.Cost{InCall: 7, Between: 9, Spread: 3, Samples: 99}
	for _, n := range names {
		s, err := OpenSpool(n)
		if err != nil {
			t.Fatal(err)
		}
		if s.Header.Cost != want || s.Header.Tail != 5 {
			t.Errorf("%s: cost %+v, tail %d, want the environment's %+v and 5", n, s.Header.Cost, s.Header.Tail, want)
		}
		s.Close()
	}
	if len(names) != 4 {
		t.Errorf("%d spools, want 4", len(names))
	}
	// A value the shim cannot use is not a calibration: the first image
	// measures its own, as with none.
	for _, bad := range []string{"abc", "1 2 3", "-5 1 1 1", "1 2 3 0", "99999999999 1 1 1", "1 2 3 4 -1", "7 9 3 99 5000000"} {
		if spool, _, err = recordEnv(t, libs, dir, []string{"IOTRACE_COST=" + bad}, bin, "0"); err != nil {
			t.Fatalf("IOTRACE_COST=%q: %v", bad, err)
		}
		names, _ = filepath.Glob(filepath.Join(spool, "spool-*.sp"))
		if len(names) != 1 {
			t.Fatalf("IOTRACE_COST=%q: %d spools, want 1", bad, len(names))
		}
		s, err := OpenSpool(names[0])
		if err != nil {
			t.Fatal(err)
		}
		if c := s.Header.Cost; c.Samples < 128 {
			t.Errorf("IOTRACE_COST=%q taken: cost %+v", bad, c)
		}
		s.Close()
	}
}

// spoolWriter returns what the tests of process images write spools
// with: the header of a process (pid, parent, start, started by exec) of
// a program in /data whose shim measured cost, and a writer of a spool
// file of that header and records in dir.
func spoolWriter(t *testing.T, dir string, cost capture.Cost) (func(pid, ppid uint32, start int64, execd bool) Header, func(name string, h Header, recs ...*Record)) {
	hdr := func(pid, ppid uint32, start int64, execd bool) Header {
		return Header{PID: pid, PPID: ppid, Rank: -1, MonoStart: start, RealStart: 1e18 + start, Cmdline: []string{"prog"},
			Cwd: "/data", Exec: execd, Exe: "/bin/prog", Cost: cost, Tail: 10}
	}
	write := func(name string, h Header, recs ...*Record) {
		if err := os.WriteFile(filepath.Join(dir, name), append(spoolBytes(h, recs), make([]byte, blockSize)...), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return hdr, write
}

// TestLeftOverCrossesImages checks that the shim's time carried by records
// that make no event (calls on files the rules leave out) comes out of the
// trace even where no later record of the image is kept: a forked child
// whose calls before its exec were on /dev/null made its spool at the
// first of them (tens to hundreds of µs on a disk), time the exec passes
// on; a process whose last calls were left out passes it on at its exit.
func TestLeftOverCrossesImages(t *testing.T) {
	cost := capture.Cost{InCall: 20, Between: 20, Spread: 4, Samples: 256}
	// The events of a run of three images (a parent, its child before and
	// after its exec), the child's first image carrying over ns in its
	// left-out open, the parent's last call carrying tail ns after a
	// left-out call before its exit.
	events := func(over, tail int64) []trace.Event {
		dir := t.TempDir()
		hdr, write := spoolWriter(t, dir, cost)
		write("spool-100-1.sp", hdr(100, 1, 1000, true),
			&Record{Call: cOpen, FD: -1, Start: 2000, Dur: 10, Ret: 3, Path: "/data/a"},
			&Record{Call: cRead, FD: 3, Start: 3000, Dur: 10, Off: -1, Size: 10, Ret: 10},
			&Record{Call: cRead, FD: 3, Start: 900000, Dur: 10, Off: -1, Size: 10, Ret: 10},
			&Record{Call: cOpen, FD: -1, Start: 901000, Dur: 10, Ret: 4, Path: "/dev/null", Over: tail},
			&Record{Call: cExit, FD: -1, Start: 950000, Ret: 0})
		write("spool-101-2.sp", hdr(101, 100, 10000, false),
			&Record{Call: cOpen, FD: -1, Start: 10500, Dur: 100, Ret: 4, Path: "/dev/null", Over: over})
		write("spool-101-3.sp", hdr(101, 100, 20000, true),
			&Record{Call: cOpen, FD: -1, Start: 21000, Dur: 10, Ret: 3, Path: "/data/b", Over: 300},
			&Record{Call: cExit, FD: -1, Start: 22000, Ret: 0})
		// A further process of the rank, after the parent's end.
		write("spool-102-4.sp", hdr(102, 1, 960000, true),
			&Record{Call: cOpen, FD: -1, Start: 990000, Dur: 10, Ret: 3, Path: "/data/c"})
		rules, err := filter.NewPaths([]string{"/data"}, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		evs, paths, _ := encode(t, dir, rules)
		for i := range evs[0] {
			if e := &evs[0][i]; e.Path != 0 {
				t.Logf("%s %d %s", e.Op, e.Start, paths.Lookup(e.Path))
			}
		}
		return evs[0]
	}
	start := func(evs []trace.Event, op trace.Op, n int) int64 {
		for _, e := range evs {
			if e.Op == op {
				if n == 0 {
					return e.Start
				}
				n--
			}
		}
		t.Fatalf("no %s number %d in %v", op, n, evs)
		return 0
	}
	base, with := events(0, 0), events(400, 700)
	// It lies before the exec: the exec moves by it, and the gap from the
	// exec to the new image's first call keeps what it had.
	// (With it, the calibrated share pending from the call before goes
	// too: at most cost.Between more.)
	if d := start(base, trace.OpExec, 0) - start(with, trace.OpExec, 0); d < 400 || d > 400+cost.Between {
		t.Errorf("the exec moved by %d ns, want 400 to %d", d, 400+cost.Between)
	}
	if a, b := start(base, trace.OpOpen, 1)-start(base, trace.OpExec, 0), start(with, trace.OpOpen, 1)-start(with, trace.OpExec, 0); b < a || b > a+cost.Between || a <= 0 {
		t.Errorf("exec to the first call: %d ns, %d with the Over passed on; want the same (to the calibrated share), more than 0", a, b)
	}
	// The child's open of /data/b (the 2nd open kept) starts 400 ns
	// earlier: the left-out image's Over comes out of the gap before it.
	if d := start(base, trace.OpOpen, 1) - start(with, trace.OpOpen, 1); d != 400 {
		t.Errorf("the exec'd image's first call moved by %d ns, want 400 (the Over of the image before its exec)", d)
	}
	// The next process's open: the parent's left-out tail (700) too.
	if d := start(base, trace.OpOpen, 2) - start(with, trace.OpOpen, 2); d != 1100 {
		t.Errorf("the last process's call moved by %d ns, want 1100 (400 and the parent's last Over, 700)", d)
	}
}

// TestImageCostAtExecs: Run.ImageCost and ReplaceCost (the shim's costs
// per image that no record carries, ImageCost) come out of the gap before
// the start (fork, exec) of each image a process of the rank exec'd, once
// per image: ImageCost where a forked child exec'd, ReplaceCost where the
// exec replaced an image with records; not at the rank's first image
// (started from outside), nor at a child that forked without exec (it
// loads nothing). The trace says at how many.
func TestImageCostAtExecs(t *testing.T) {
	cost := capture.Cost{InCall: 20, Between: 20, Spread: 4, Samples: 256}
	dir := t.TempDir()
	hdr, write := spoolWriter(t, dir, cost)
	write("spool-100-1.sp", hdr(100, 1, 1000, true),
		&Record{Call: cOpen, FD: -1, Start: 2000, Dur: 10, Ret: 3, Path: "/data/a"},
		&Record{Call: cRead, FD: 3, Start: 900000, Dur: 10, Off: -1, Size: 10, Ret: 10},
		&Record{Call: cExit, FD: -1, Start: 950000, Ret: 0})
	// A child that forked and exec'd (the shell's command).
	write("spool-101-2.sp", hdr(101, 100, 10000, true),
		&Record{Call: cOpen, FD: -1, Start: 21000, Dur: 10, Ret: 3, Path: "/data/b"},
		&Record{Call: cExit, FD: -1, Start: 22000, Ret: 0})
	// A child that forked and did not exec.
	write("spool-103-3.sp", hdr(103, 100, 30000, false),
		&Record{Call: cOpen, FD: -1, Start: 41000, Dur: 10, Ret: 3, Path: "/data/c"},
		&Record{Call: cExit, FD: -1, Start: 42000, Ret: 0})
	// A child that set up its output before its exec (git's
	// run_command): its records, then the image that replaced it.
	write("spool-104-4.sp", hdr(104, 100, 50000, false),
		&Record{Call: cOpen, FD: -1, Start: 50500, Dur: 10, Ret: 3, Path: "/dev/null"})
	write("spool-104-5.sp", hdr(104, 100, 60000, true),
		&Record{Call: cOpen, FD: -1, Start: 61000, Dur: 10, Ret: 3, Path: "/data/d"},
		&Record{Call: cExit, FD: -1, Start: 62000, Ret: 0})
	rules, err := filter.NewPaths([]string{"/data"}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	encodeWith := func(image, replace int64) ([]trace.Event, *trace.Paths, Stats) {
		run, err := ReadDir(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer run.Close()
		if started, replacing := run.Execs(); started != 1 || replacing != 1 {
			t.Errorf("Execs() = %d, %d; want 1, 1 (the child that forked and exec'd, the image that replaced one)", started, replacing)
		}
		run.ImageCost, run.ReplaceCost = image, replace
		sink := trace.NewSliceSink()
		st, err := run.Encode(0, sink, rules)
		if err != nil {
			t.Fatal(err)
		}
		return sink.Events, sink.Paths, st
	}
	opened := func(evs []trace.Event, paths *trace.Paths, name string) int64 {
		for _, e := range evs {
			if e.Op == trace.OpOpen && paths.Lookup(e.Path) == name {
				return e.Start
			}
		}
		t.Fatalf("no open of %s", name)
		return 0
	}
	const image, replace = 5000, 7000
	base, bp, bst := encodeWith(0, 0)
	with, wp, wst := encodeWith(image, replace)
	for _, c := range []struct {
		name string
		want int64
	}{
		{"/data/a", 0},               // the rank's first image: its start precedes the trace
		{"/data/b", image},           // the exec'd child: the gap before its start loses the cost
		{"/data/c", image},           // later events keep that debt; the forked child adds none
		{"/data/d", image + replace}, // the image that replaced one with records: the other cost
	} {
		if d := opened(base, bp, c.name) - opened(with, wp, c.name); d != c.want {
			t.Errorf("open of %s moved by %d ns, want %d", c.name, d, c.want)
		}
	}
	if bst.Corrections.Images+bst.Corrections.Replaced != 0 || wst.Corrections.Images != 1 || wst.Corrections.Replaced != 1 {
		t.Errorf("images corrected: %+v without, %+v with; want none, then 1 and 1", bst.Corrections, wst.Corrections)
	}
	f := wst.Cost.Format(wst.Corrections)
	if f.Image != image || f.Images != 1 || f.Replace != replace || f.Replaced != 1 ||
		!strings.Contains(f.String(), "5.0 µs at each of 1 process starts; 7.0 µs at each of 1 execs that replaced an image with records") {
		t.Errorf("the trace's cost: %+v: %s", f, f.String())
	}
}
