package text

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// goldenEvents covers every class and the arguments each shows.
func goldenEvents(paths *trace.Paths) []trace.Event {
	out, miss, dump := paths.Intern("/scratch/out.0"), paths.Intern("/scratch/missing"), paths.Intern("dump 3")
	odd := paths.Intern("/tmp/a b\n\xff")
	return []trace.Event{
		{Op: trace.OpOpen, Path: out, Ret: 3, Flags: trace.OWronly | trace.OCreat | trace.OTrunc, Mode: 0o644, Start: 171, Dur: 24440},
		{Op: trace.OpPwrite, FD: 3, Offset: 4096, Size: 4096, Ret: 4096, Start: 24771, Dur: 3946},
		{Op: trace.OpWrite, FD: 3, Size: 100, Ret: 100, Start: 1_000_000_000, Dur: 999_999},
		{Op: trace.OpWritev, FD: 3, Size: 8192, Count: 2, Ret: 8192, Start: 12_345_678_901, Dur: 4200},
		{Op: trace.OpLseek, FD: 3, Offset: -8, Whence: 2, Ret: 4088, Start: 1, Dur: 2},
		{Op: trace.OpLseek, FD: 3, Ret: 0, Start: 2, Dur: 950},
		{Op: trace.OpClose, FD: 0, Ret: 0, Start: 3, Dur: 1_500_000},
		{Op: trace.OpOpen, Rank: 1, Path: miss, Ret: -2, Start: 90, Dur: 1800},
		{Op: trace.OpStat, Rank: 12, Thread: 3, Path: odd, Ret: -13, Start: 4, Dur: 12_300_000_000},
		{Op: trace.OpRename, Rank: 123456, Path: out, Path2: miss, Ret: 0, Start: -5, Dur: 4021_000_000_000},
		{Op: trace.OpFtruncate, FD: 4, Size: 1 << 20, Ret: -5000},
		{Op: trace.OpMPIFileOpen, Path: out, Flags: trace.MPIModeCreate | trace.MPIModeWronly, Comm: 5, FD: 1},
		{Op: trace.OpMPIFileWriteAtAll, FD: 1, Offset: 1 << 20, Size: 1 << 20, Count: 262144, Ret: 1 << 20, Comm: 1},
		{Op: trace.OpMPIFileSetView, FD: 1, Offset: 0, Size: 4096, Stride: 65536},
		{Op: trace.OpMPIBcast, Peer: 0, Bytes: 24, Start: 30000, Dur: 5000},
		{Op: trace.OpMPISend, Peer: 3, Tag: 7, Bytes: 1 << 16},
		{Op: trace.OpMPIRecv, Peer: -1, Tag: -1, Bytes: 8},
		{Op: trace.OpMPIBarrier, Dur: 120_000},
		{Op: trace.OpMPIAllreduce, Bytes: 8, Comm: 2},
		{Op: trace.OpMPIWaitall, Count: 4},
		{Op: trace.OpRegionBegin, Path: dump, Start: 40000},
		{Op: trace.OpRegionEnd, Path: dump, Start: 50000},
		{Op: trace.OpMark, Path: paths.Intern("phase \"two\"")},
		{Op: 999, FD: 2, Size: 7, Ret: -1, Flags: 0x10},
		{Op: trace.OpMPISendrecv, Rank: 2, Peer: 3, Tag: 5, Bytes: 4096, Flags: trace.RecvHalf, Source: 1, RecvTag: 5},
		{Op: trace.OpMPISendrecv, Rank: 3, Peer: trace.ProcNull, Tag: 5, Flags: trace.RecvHalf | trace.PostedAnyTag, Source: 2, RecvTag: 5},
		{Op: trace.OpMPISendrecv, Rank: 3, Peer: 0, Tag: 5, Bytes: 4096}, // an old trace's: no receive half
	}
}

func TestGolden(t *testing.T) {
	paths := trace.NewPaths()
	evs := goldenEvents(paths)
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for i := range evs {
		if err := w.Write(&evs[i], paths.Lookup); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "events.golden")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != string(want) {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	// One line per event, whatever the paths hold.
	if n := strings.Count(buf.String(), "\n"); n != len(evs) {
		t.Fatalf("%d lines for %d events", n, len(evs))
	}
}

// TestLines pins a few lines exactly, so that a change to the layout is a
// deliberate one.
func TestLines(t *testing.T) {
	paths := trace.NewPaths()
	evs := goldenEvents(paths)
	for i, want := range map[int]string{
		0:  "rank 0   t0   0.000000171s +24.4µs  open         /scratch/out.0 flags=O_WRONLY|O_CREAT|O_TRUNC mode=0644 = 3",
		1:  "rank 0   t0   0.000024771s +3.95µs  pwrite       fd=3 off=4096 size=4096 = 4096",
		7:  "rank 1   t0   0.000000090s +1.8µs   open         /scratch/missing flags=O_RDONLY = -2 ENOENT",
		14: "rank 0   t0   0.000030000s +5µs     MPI_Bcast    root=0 bytes=24",
		20: `rank 0   t0   0.000040000s +0       region_begin "dump 3"`,
		17: "rank 0   t0   0.000000000s +120µs   MPI_Barrier",
		24: "rank 2   t0   0.000000000s +0       MPI_Sendrecv peer=3 tag=5 source=1 recvtag=5 bytes=4096",
		25: "rank 3   t0   0.000000000s +0       MPI_Sendrecv peer=none tag=5 source=2 recvtag=5 bytes=0 flags=0x2",
		26: "rank 3   t0   0.000000000s +0       MPI_Sendrecv peer=0 tag=5 bytes=4096",
	} {
		if got := string(AppendEvent(nil, &evs[i], paths.Lookup)); got != want {
			t.Errorf("event %d:\n got %q\nwant %q", i, got, want)
		}
	}
}

func TestAppendDuration(t *testing.T) {
	for ns, want := range map[int64]string{
		0: "0", 1: "1ns", 999: "999ns", 1000: "1µs", 1234: "1.23µs", 4200: "4.2µs", 9_999: "10µs", 42_149: "42.1µs",
		421_000: "421µs", 999_499: "999µs", 999_500: "1ms", 1_500_000: "1.5ms", 12_300_000_000: "12.3s",
		4021_000_000_000: "4021s", -2500: "-2.5µs", math.MinInt64: "-9223372036s",
	} {
		if got := string(AppendDuration(nil, ns)); got != want {
			t.Errorf("AppendDuration(%d) = %q, want %q", ns, got, want)
		}
	}
}

func TestAppendSeconds(t *testing.T) {
	for ns, want := range map[int64]string{
		0: "0.000000000s", 1: "0.000000001s", 12_345_678_901: "12.345678901s", -5: "-0.000000005s",
		math.MinInt64: "-9223372036.854775808s", math.MaxInt64: "9223372036.854775807s",
	} {
		if got := string(appendSeconds(nil, ns)); got != want {
			t.Errorf("appendSeconds(%d) = %q, want %q", ns, got, want)
		}
	}
}

func TestQuotePath(t *testing.T) {
	for in, want := range map[string]string{
		"/a/b": "/a/b", "ünï/日本": "ünï/日本", "": `""`, "a b": `"a b"`, "a\nb": `"a\nb"`,
		"x\xff": `"x\xff"`, `q"`: `"q\""`, "\u2028": `"\u2028"`,
	} {
		if got := quotePath(in); got != want {
			t.Errorf("quotePath(%q) = %s, want %s", in, got, want)
		}
	}
}

func BenchmarkWrite(b *testing.B) {
	paths := trace.NewPaths()
	evs := goldenEvents(paths)
	w := NewWriter(&bytes.Buffer{})
	w.w.Reset(discard{})
	for i := 0; b.Loop(); i++ {
		w.Write(&evs[i%len(evs)], paths.Lookup)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
