//go:build linux && (amd64 || arm64)

package ptrace

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/capture"
	"github.com/iotrace/iotrace/internal/pagecache"
	"github.com/iotrace/iotrace/trace"
)

// diskDir returns a directory whose files' pages the cache can drop
// (pagecache.Dir), its symbolic links resolved as the rules see paths.
func diskDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(pagecache.Dir(t))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// pageinProg is capture/testdata/pagein.c: it maps the file argv[1],
// drops its pages from the cache and touches every page (waits for the
// device), closes it, touches them again (cached: no wait) and stats the
// file.
func pageinProg(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "testdata", "pagein.c"))
	if err != nil {
		t.Fatal(err)
	}
	return string(src)
}

// TestPageinWaits checks that the time a program waits for the pages of
// a file mapping between two calls is recorded as a pagein of that file
// (docs/FORMAT.md, "Waits for mapped pages"), where it lay: after the
// mmap, before the next call, inside the gap the trace shows; and that
// loads of pages already cached leave none. With the tracer's cost taken
// out (Calibrate), as iotrace record does.
func TestPageinWaits(t *testing.T) {
	dir := diskDir(t)
	file := pagecache.ColdFile(t, dir, "mapped.dat", 8<<20)
	bin := buildC(t, dir, "pagein", pageinProg(t))
	cost, err := Calibrate("")
	if err != nil {
		t.Fatal(err)
	}
	for _, stat := range []bool{false, true} {
		name := "perf"
		if stat {
			name = "stat" // the major faults from /proc, where perf events are not allowed
		}
		t.Run(name, func(t *testing.T) {
			defer func(v bool) { noPerf = v }(noPerf)
			noPerf = stat
			checkPagein(t, dir, bin, file, cost)
		})
	}
}

func checkPagein(t *testing.T, dir, bin, file string, cost capture.Cost) {
	t.Helper()
	res, evs, s := record(t, Config{Argv: []string{bin, file}, Dir: dir, Rules: mustRules(t, dir), Cost: cost})
	if res.Status() != 0 {
		t.Fatalf("status %d", res.Status())
	}
	var ops []string
	var mine []trace.Event
	for _, e := range evs {
		if e.Thread == 0 && e.Op.Class() != trace.ClassProcess {
			ops = append(ops, e.Op.String())
			mine = append(mine, e)
		}
	}
	got := strings.Join(ops, " ")
	t.Logf("events: %s", got)
	// (stat(2) is fstatat in the C library's hands.)
	if want := "mmap pagein close fstatat munmap"; !strings.Contains(strings.Replace(got, "close stat ", "close fstatat ", 1), want) {
		t.Fatalf("events %q: want %q in them (one wait for the cold pages, none for the cached ones)\n%s", got, want, dumpEvents(evs, s))
	}
	pagecache.CheckWait(t, mine, s.Paths.Lookup)
	if res.usageReads == 0 {
		t.Errorf("no usage read")
	}
}

// TestNoMappingNoPagein: a program that reads a cold file with read(2)
// and maps nothing gets no pagein (its reads from the device are in its
// calls) and costs the tracer no reading of its usage.
func TestNoMappingNoPagein(t *testing.T) {
	dir := diskDir(t)
	file := pagecache.ColdFile(t, dir, "read.dat", 4<<20)
	bin := buildC(t, dir, "reads", `
#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>
int main(int argc, char **argv) {
	static char buf[65536];
	int fd = open(argv[1], O_RDONLY);
	if (fd < 0) return 1;
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	while (read(fd, buf, sizeof buf) > 0) {
		volatile unsigned s = 0; /* a little computation between the calls */
		for (int i = 0; i < 20000; i++) s += buf[i];
	}
	close(fd);
	return 0;
}`)
	res, evs, s := record(t, Config{Argv: []string{bin, file}, Dir: dir, Rules: mustRules(t, dir)})
	if res.Status() != 0 {
		t.Fatalf("status %d", res.Status())
	}
	q := newEvq(t, evs, s, dir)
	if n := len(q.all(trace.OpRead, "read.dat")); n < 64 {
		t.Fatalf("%d reads, want at least 64\n%s", n, dumpEvents(evs, s))
	}
	if pg := q.all(trace.OpPagein, "*"); len(pg) != 0 {
		t.Errorf("%d pageins in a program without mappings:\n%s", len(pg), dumpEvents(pg, s))
	}
	if res.usageReads != 0 {
		t.Errorf("%d usage reads in a program without mappings, want none", res.usageReads)
	}
}

// TestPageinThreads: two threads each wait for the cold pages of their
// own mapping between two calls of their own: each gets its pagein, of
// its own thread, in its own gap, of no one file (the process maps two).
func TestPageinThreads(t *testing.T) {
	dir := diskDir(t)
	bin := buildC(t, dir, "threads", `
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
static void *touch(void *arg) {
	const char *path = arg;
	int fd = open(path, O_RDONLY);
	if (fd < 0) return NULL;
	off_t n = lseek(fd, 0, SEEK_END);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	volatile unsigned char *m = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) return NULL;
	unsigned sum = 0;
	for (off_t o = 0; o < n; o += 4096) sum += m[o];
	fsync(fd); /* the call after the wait */
	close(fd);
	munmap((void *)m, n);
	return (void *)(unsigned long)sum;
}
int main(int argc, char **argv) {
	pthread_t t1, t2;
	pthread_create(&t1, NULL, touch, argv[1]);
	pthread_create(&t2, NULL, touch, argv[2]);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	return 0;
}`, "-pthread")
	cost, err := Calibrate("")
	if err != nil {
		t.Fatal(err)
	}
	// A thread whose pages come back from the device while it waits for
	// a processor the whole time has slept for none of it, and has no
	// pagein: on a loaded machine, 1 run in about 35 (busy, 2 spinning
	// threads). Three runs, each on files just made cold; the first that
	// shows both threads' waits passes.
	var errs []string
	for try := range 3 {
		a := pagecache.ColdFile(t, dir, fmt.Sprintf("a%d.dat", try), 4<<20)
		b := pagecache.ColdFile(t, dir, fmt.Sprintf("b%d.dat", try), 4<<20)
		res, evs, s := record(t, Config{Argv: []string{bin, a, b}, Dir: dir, Rules: mustRules(t, dir), Cost: cost})
		if res.Status() != 0 {
			t.Fatalf("status %d", res.Status())
		}
		if errs = threadWaits(t, evs, s); len(errs) == 0 {
			return
		}
	}
	t.Error(strings.Join(errs, "\n"))
}

// threadWaits checks that each thread of evs that mapped a file has one
// pagein after its mmap, inside the gap before its next call; it returns
// what it found wrong.
func threadWaits(t *testing.T, evs []trace.Event, s *trace.SliceSink) []string {
	t.Helper()
	var errs []string
	byThread := map[uint32][]trace.Event{}
	for _, e := range evs {
		if e.Op.Class() != trace.ClassProcess {
			byThread[e.Thread] = append(byThread[e.Thread], e)
		}
	}
	waited := 0
	for th, tevs := range byThread {
		var ops []string
		for _, e := range tevs {
			ops = append(ops, e.Op.String())
		}
		got := strings.Join(ops, " ")
		t.Logf("thread %d: %s", th, got)
		if !strings.Contains(got, "mmap") {
			continue
		}
		if !strings.Contains(got, "mmap pagein fsync close munmap") {
			errs = append(errs, fmt.Sprintf("thread %d: events %q, want its wait after its mmap", th, got))
			continue
		}
		waited++
		for i, e := range tevs {
			if e.Op != trace.OpPagein {
				continue
			}
			prev, next := tevs[i-1], tevs[i+1]
			if e.Count < 1 || e.Size < 4096 || e.Dur <= 0 || e.Start < prev.Start+prev.Dur || e.Start+e.Dur > next.Start {
				errs = append(errs, fmt.Sprintf("thread %d: pagein %+v after %s ending %d, before %s at %d", th, e, prev.Op, prev.Start+prev.Dur, next.Op, next.Start))
			}
		}
	}
	if waited != 2 {
		errs = append(errs, fmt.Sprintf("%d threads with a mapping and a wait, want 2\n%s", waited, dumpEvents(evs, s)))
	}
	return errs
}

// TestPageinNotAcrossProcessStart: a gap in which the thread started a
// process (fork, posix_spawn) and waited for it is no wait for mapped
// pages, though the thread read from the device in it: the 300 ms of the
// child's run stay think time (capture/testdata/pagein_fork.c).
func TestPageinNotAcrossProcessStart(t *testing.T) {
	dir := diskDir(t)
	src, err := os.ReadFile(filepath.Join("..", "testdata", "pagein_fork.c"))
	if err != nil {
		t.Fatal(err)
	}
	bin := buildC(t, dir, "pagein_fork", string(src))
	cost, err := Calibrate("")
	if err != nil {
		t.Fatal(err)
	}
	for _, how := range []string{"fork", "spawn"} {
		file := pagecache.ColdFile(t, dir, how+".dat", 4<<20)
		res, evs, _ := record(t, Config{Argv: []string{bin, file, how}, Dir: dir, Rules: mustRules(t, dir), Cost: cost})
		if res.Status() != 0 {
			t.Fatalf("%s: status %d", how, res.Status())
		}
		pagecache.CheckNoWaitAcrossStart(t, how, evs)
	}
}
