package preload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/internal/pagecache"
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
	pagecache.CheckWait(t, evs[0], paths.Lookup)
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
		pagecache.CheckNoWaitAcrossStart(t, how, evs[0])
	}
}
