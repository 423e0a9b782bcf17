package preload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/internal/pagecache"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
)

// TestPageinWaits checks that the time a program waits for the pages of
// a file mapping between two calls is recorded as a pagein of that file
// (docs/FORMAT.md, "Waits for mapped pages"), where it lay: after the
// mmap, before the next call, and not as think time; and that loads of
// pages already cached leave none.
func TestPageinWaits(t *testing.T) {
	libs := buildShim(t)
	dir := pagecache.Dir(t)
	file := pagecache.ColdFile(t, dir, "mapped.dat", 8<<20)
	src, err := os.ReadFile(filepath.Join("..", "testdata", "pagein.c"))
	if err != nil {
		t.Fatal(err)
	}
	bin := compile(t, dir, "pagein", string(src))
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

// TestPageinNotAcrossProcessStart: a gap in which the thread started a
// process (fork, posix_spawn) and waited for it is no wait for mapped
// pages, though the thread read from the device in it: the 300 ms of the
// child's run stay think time (capture/testdata/pagein_fork.c).
func TestPageinNotAcrossProcessStart(t *testing.T) {
	libs := buildShim(t)
	dir := pagecache.Dir(t)
	src, err := os.ReadFile(filepath.Join("..", "testdata", "pagein_fork.c"))
	if err != nil {
		t.Fatal(err)
	}
	bin := compile(t, dir, "pagein_fork", string(src))
	for _, how := range []string{"fork", "spawn"} {
		file := pagecache.ColdFile(t, dir, how+".dat", 4<<20)
		spool, err := record(t, libs, dir, bin, file, how)
		if err != nil {
			t.Fatal(err)
		}
		rules, _ := filter.NewPaths([]string{dir}, nil, true)
		evs, _, _ := encode(t, spool, rules)
		var ops []string
		for _, e := range evs[0] {
			if e.Thread == 0 {
				ops = append(ops, e.Op.String())
			}
			if e.Op == trace.OpPagein && e.Dur >= 100e6 {
				t.Errorf("%s: pagein of %v ms: the wait for the child", how, e.Dur/1e6)
			}
		}
		got := strings.Join(ops, " ")
		t.Logf("%s: %s", how, got)
		if !strings.Contains(got, "mmap") || !strings.Contains(got, "fsync") || strings.Contains(got, "pagein") {
			t.Errorf("%s: events %q, want the mmap and the fsync and no pagein between them (the gap started a process)", how, got)
		}
	}
}
