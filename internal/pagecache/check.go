package pagecache

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// CheckWait checks the events of capture/testdata/pagein.c's thread (its
// process events left out), recorded by either recorder: the one pagein,
// a wait (Dur > 0) for at least one fault and a page read from the
// device, of the mapped file (named mapped.dat; path names it), lying in
// the gap between the mmap and the close that follow it.
func CheckWait(t testing.TB, mine []trace.Event, path func(trace.PathID) string) {
	t.Helper()
	n := 0
	var mmap, pg, cl trace.Event
	for i, e := range mine {
		if e.Op == trace.OpPagein && i > 0 && i+1 < len(mine) {
			mmap, pg, cl = mine[i-1], e, mine[i+1]
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d pageins between two calls, want 1", n)
	}
	t.Logf("mmap ends %d, pagein %d+%d (%d faults, %d bytes), close at %d; gap %d", mmap.Start+mmap.Dur, pg.Start, pg.Dur, pg.Count, pg.Size, cl.Start, cl.Start-mmap.Start-mmap.Dur)
	if pg.Count < 1 || pg.Size < 4096 || pg.Dur <= 0 || pg.FD != -1 {
		t.Errorf("pagein %+v: want a wait (Dur > 0) with at least one fault (Count) and a page (Size) read from the device, FD -1", pg)
	}
	if name := path(pg.Path); filepath.Base(name) != "mapped.dat" {
		t.Errorf("pagein of %q, want the one mapped file", name)
	}
	if pg.Start < mmap.Start+mmap.Dur || pg.Start+pg.Dur > cl.Start {
		t.Errorf("pagein [%d, %d] outside the gap [%d, %d] between the mmap and the close", pg.Start, pg.Start+pg.Dur, mmap.Start+mmap.Dur, cl.Start)
	}
}

// CheckNoWaitAcrossStart checks the events of a run of
// capture/testdata/pagein_fork.c (how: fork or spawn), recorded by either
// recorder: its main thread's mmap and fsync with no pagein between them
// (the gap started a process and waited for it), and no pagein as long as
// the child's run.
func CheckNoWaitAcrossStart(t testing.TB, how string, evs []trace.Event) {
	t.Helper()
	var ops []string
	for _, e := range evs {
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
