package report

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// inMPIIOEvents are an MPI-IO write of 100 bytes with the POSIX calls the
// MPI library made inside it, a barrier, a marker and a fork.
func inMPIIOEvents(paths *trace.Paths) []trace.Event {
	f := paths.Intern("/d/f")
	return []trace.Event{
		{Op: trace.OpRegionBegin, Path: paths.Intern("step"), Start: 0},
		{Op: trace.OpMPIFileOpen, FD: 1, Path: f, Start: 0, Dur: 10},
		{Op: trace.OpOpen, Path: f, Ret: 5, Flags: trace.InMPIIO, Start: 1, Dur: 5},
		{Op: trace.OpMPIFileWriteAt, FD: 1, Size: 100, Ret: 100, Start: 20, Dur: 50},
		{Op: trace.OpPwrite, FD: 5, Size: 100, Ret: 100, Flags: trace.InMPIIO, Start: 21, Dur: 40},
		{Op: trace.OpMPIBarrier, Start: 100, Dur: 930},
		{Op: trace.OpMPIFileClose, FD: 1, Start: 1100, Dur: 10},
		{Op: trace.OpClose, FD: 5, Flags: trace.InMPIIO, Start: 1101, Dur: 2},
		{Op: trace.OpFork, Ret: 7, Start: 1200},
		{Op: trace.OpRegionEnd, Path: paths.Intern("step"), Start: 1300},
	}
}

// TestReportsDoNotMislead checks the figures a newcomer reads first: the
// header says what the events are beside TOTAL's calls, TOTAL's MB/s is
// over the time of I/O calls alone, and the HTML page's cards and size
// table count the calls made inside MPI-IO once.
func TestReportsDoNotMislead(t *testing.T) {
	paths := trace.NewPaths()
	st, err := Compute(sliceTrace(inMPIIOEvents(paths), paths), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.EventsText(strconv.FormatInt), "10 events (4 calls in TOTAL, 2 markers, 1 process event, 3 calls inside MPI-IO (rows apart))"; got != want {
		t.Errorf("events: %q, want %q", got, want)
	}
	var b bytes.Buffer
	if err := Render(&b, st, "op", "text"); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "1 ranks, 10 events (4 calls in TOTAL,") {
		t.Errorf("header:\n%s", b.String())
	}
	// 100 bytes over 70 ns of MPI-IO calls, not over 1000 ns with the barrier.
	if bw, want := st.Total.Bandwidth(), 100/1e6/(70/1e9); bw < want*0.999 || bw > want*1.001 {
		t.Errorf("TOTAL bandwidth %.1f MB/s, want %.1f (I/O time only)", bw, want)
	}
	b.Reset()
	if err := RenderHTML(&b, st, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if !strings.Contains(page, `<div class="label">Data written</div><div class="value">100 B</div><div class="sub">1 call</div>`) {
		i := strings.Index(page, "Data written")
		t.Errorf("the Data written card counts the calls inside MPI-IO again: %.200s", page[max(i, 0):])
	}
	// A trace compared with itself: no size row differs, none is flagged.
	b.Reset()
	if err := RenderCompareHTML(&b, Compare(st, st), HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "count mismatch") {
		t.Error("a trace compared with itself has count mismatches")
	}
}

// TestCompareSkipsAndInMPIIO checks that rows of calls inside MPI-IO, and
// calls a replay skipped by its rules, are no count mismatches in the
// text table nor in the HTML page's cards and size table.
func TestCompareSkipsAndInMPIIO(t *testing.T) {
	paths := trace.NewPaths()
	a, err := Compute(sliceTrace(inMPIIOEvents(paths), paths), Options{})
	if err != nil {
		t.Fatal(err)
	}
	// b: the replay made the MPI-IO calls, with fewer POSIX calls inside
	// them, and skipped a read of /dev/zero the original made.
	evs := inMPIIOEvents(paths)
	evs = append(evs[:4], evs[5:]...) // no pwrite inside MPI-IO
	zero := paths.Intern("/dev/zero")
	a2 := append(inMPIIOEvents(paths), trace.Event{Op: trace.OpOpen, Path: zero, Ret: 9, Start: 1400, Dur: 3},
		trace.Event{Op: trace.OpRead, FD: 9, Size: 10, Ret: 10, Start: 1410, Dur: 3})
	a, _ = Compute(sliceTrace(a2, paths), Options{})
	b, err := Compute(sliceTrace(evs, paths), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b.Replay = &Replay{Skips: []ReplaySkips{{Op: "openat", Reason: "special path (/dev, /proc, /sys)", Count: 1},
		{Op: "read", Reason: "descriptor of a skipped path", Count: 1}}}
	c := Compare(a, b)
	if m := c.Mismatches(); len(m) != 0 {
		t.Errorf("mismatches %v; want none (inside MPI-IO, or skipped by the replay)", m)
	}
	var out bytes.Buffer
	if err := RenderCompare(&out, c, "text"); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); strings.Contains(s, "count mismatch") || !strings.Contains(s, "1 skipped by the replay") ||
		!strings.Contains(s, "All counts match (2 calls the replay skipped") {
		t.Errorf("text comparison:\n%s", s)
	}
	out.Reset()
	if err := RenderCompareHTML(&out, c, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); strings.Contains(s, "count mismatch") || strings.Contains(s, `card warn"><div class="label">Counts`) {
		t.Errorf("the page flags expected differences: %v", strings.Contains(s, "count mismatch"))
	}
	// A real difference stays one.
	b.Replay = nil
	if m := Compare(a, b).Mismatches(); len(m) != 2 {
		t.Errorf("without the skips: mismatches %v, want open and read", m)
	}
}

// TestBandwidthScales checks that two runs far apart in bandwidth get a
// scale each, so that the slower one's chart is not flat near zero.
func TestBandwidthScales(t *testing.T) {
	if a, b, ca, _ := sharedScale(100, 80); a != 100 || b != 100 || ca != "" {
		t.Errorf("close peaks: %v %v %q; want one scale", a, b, ca)
	}
	if a, b, ca, cb := sharedScale(1000, 10); a != 1000 || b != 10 || ca == "" || cb == "" {
		t.Errorf("far peaks: %v %v %q %q; want each its own scale, said", a, b, ca, cb)
	}
}

// TestInMPIIOSkipsStayWithTheirRows: a replay skips the POSIX calls made
// inside MPI-IO calls; those skips are not counted with the other calls
// of their op, which would then differ.
func TestInMPIIOSkipsStayWithTheirRows(t *testing.T) {
	paths := trace.NewPaths()
	a, _ := Compute(sliceTrace(inMPIIOEvents(paths), paths), Options{})
	b, _ := Compute(sliceTrace(inMPIIOEvents(paths), paths), Options{})
	b.Replay = &Replay{Skips: []ReplaySkips{{Op: "pwrite", Reason: trace.SkipReasonInMPIIO, Count: 1}}}
	if m := Compare(a, b).Mismatches(); len(m) != 0 {
		t.Errorf("mismatches %v: the skips of calls inside MPI-IO were counted with the other writes", m)
	}
}
