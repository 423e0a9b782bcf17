package preload

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
	"golang.org/x/sys/unix"
)

// diskDir returns a directory whose file system keeps its data on a
// device (not tmpfs or ramfs, whose pages are the files themselves and
// are never read in): the test's temporary directory, or one in
// /var/tmp. Under CI a machine without one fails the test.
func diskDir(t *testing.T) string {
	t.Helper()
	onDevice := func(dir string) bool {
		var st unix.Statfs_t
		if unix.Statfs(dir, &st) != nil {
			return false
		}
		return st.Type != unix.TMPFS_MAGIC && st.Type != unix.RAMFS_MAGIC
	}
	if dir := t.TempDir(); onDevice(dir) {
		return dir
	}
	if dir, err := os.MkdirTemp("/var/tmp", "iotrace-pagein-"); err == nil {
		t.Cleanup(func() { os.RemoveAll(dir) })
		if onDevice(dir) {
			return dir
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no directory on a device-backed file system (the temporary directory and /var/tmp are tmpfs)")
	}
	t.Skip("no directory on a device-backed file system")
	return ""
}

// TestPageinWaits checks that the time a program waits for the pages of
// a file mapping between two calls is recorded as a pagein of that file
// (docs/FORMAT.md, "Waits for mapped pages"), where it lay: after the
// mmap, before the next call, and not as think time; and that loads of
// pages already cached leave none.
func TestPageinWaits(t *testing.T) {
	libs := buildShim(t)
	dir := diskDir(t)
	const size = 8 << 20
	data := make([]byte, size)
	rand.Read(data)
	file := filepath.Join(dir, "mapped.dat")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil { // clean pages: DONTNEED drops them
		t.Fatal(err)
	}
	f.Close()
	bin := compile(t, dir, "pagein", `
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
int main(int argc, char **argv) {
	int fd = open(argv[1], O_RDONLY);
	if (fd < 0) return 1;
	off_t n = lseek(fd, 0, SEEK_END);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED); /* cold: the loads below read the device */
	volatile unsigned char *m = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) return 2;
	unsigned sum = 0;
	for (off_t o = 0; o < n; o += 4096) sum += m[o];
	close(fd);
	for (off_t o = 0; o < n; o += 4096) sum += m[o]; /* cached now: no wait */
	struct stat st;
	stat(argv[1], &st);
	munmap((void *)m, n);
	printf("%u\n", sum);
	return 0;
}
`)
	spool, err := record(t, libs, dir, bin, file)
	if err != nil {
		t.Fatal(err)
	}
	rules, _ := filter.NewPaths([]string{dir}, nil, true)
	evs, paths, _ := encode(t, spool, rules)
	var ops []string
	for _, e := range evs[0] {
		ops = append(ops, e.Op.String())
	}
	got := strings.Join(ops, " ")
	t.Logf("events: %s", got)
	if want := "mmap pagein close stat munmap"; !strings.Contains(got, want) {
		t.Fatalf("events %q: want %q in them (one wait for the cold pages, none for the cached ones)", got, want)
	}
	var mmap, pg, cl trace.Event
	for i, e := range evs[0] {
		if e.Op == trace.OpPagein {
			mmap, pg, cl = evs[0][i-1], e, evs[0][i+1]
		}
	}
	t.Logf("mmap ends %d, pagein %d+%d (%d faults, %d bytes), close at %d", mmap.Start+mmap.Dur, pg.Start, pg.Dur, pg.Count, pg.Size, cl.Start)
	if pg.Count < 1 || pg.Size < 4096 || pg.Dur <= 0 || pg.FD != -1 {
		t.Errorf("pagein %+v: want a wait (Dur > 0) with at least one fault (Count) and a page (Size) read from the device, FD -1", pg)
	}
	if name := paths.Lookup(pg.Path); filepath.Base(name) != "mapped.dat" {
		t.Errorf("pagein of %q, want the one mapped file", name)
	}
	if pg.Start < mmap.Start+mmap.Dur || pg.Start+pg.Dur > cl.Start {
		t.Errorf("pagein [%d, %d] outside the gap [%d, %d] between the mmap and the close", pg.Start, pg.Start+pg.Dur, mmap.Start+mmap.Dur, cl.Start)
	}
}
