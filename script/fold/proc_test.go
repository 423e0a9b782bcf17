package fold

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
)

// evs builds one rank's events in order, times back to back.
type evs struct {
	m   *trace.MemTrace
	now int64
}

func newEvs() *evs { return &evs{m: trace.NewMemTrace()} }

func (b *evs) p(s string) trace.PathID { return b.m.Paths.Intern(s) }

func (b *evs) add(e trace.Event) {
	e.Start, e.Dur = b.now, 1000
	b.now += 2000
	b.m.Add(e)
}

// wantIn converts tr (checking the round trip) and checks the script
// says each of want.
func wantIn(t *testing.T, tr trace.Trace, want ...string) string {
	t.Helper()
	out, _ := convertTrace(t, tr, Options{})
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("the script has no %q:\n%s", w, numbered([]byte(out)))
		}
	}
	return out
}

// TestRoundTripProcesses converts a trace in the event model captures
// record now: the descriptors a process inherited (OpInherit), a fork
// whose child works on its copies of the parent's descriptors, closes
// them, replaces its standard output with dup2 and execs, a thread, and
// the ends of both.
func TestRoundTripProcesses(t *testing.T) {
	b := newEvs()
	tty, a, log := b.p("/dev/pts/0"), b.p("/run/a.txt"), b.p("/run/log")
	b.add(trace.Event{Op: trace.OpInherit, FD: 0, Ret: 0, Path: tty, Flags: trace.ORdwr})
	b.add(trace.Event{Op: trace.OpInherit, FD: 1, Ret: 1, Path: tty, Flags: trace.ORdwr | trace.OAppend})
	b.add(trace.Event{Op: trace.OpInherit, FD: 2, Ret: 2, Path: tty, Flags: trace.ORdwr, Offset: 100})
	b.add(trace.Event{Op: trace.OpOpenat, Path: a, Flags: trace.OWronly | trace.OCreat | trace.OTrunc, Mode: 0o666, Ret: 3, FD: 3})
	b.add(trace.Event{Op: trace.OpOpenat, Path: log, Flags: trace.OWronly | trace.OCreat | trace.OAppend | 0x80000, Mode: 0o644, Ret: 4})
	b.add(trace.Event{Op: trace.OpWrite, FD: 3, Path: a, Size: 10, Ret: 10})
	b.add(trace.Event{Op: trace.OpFork, Ret: 5})
	// The child: its copy of 3 shares the position.
	b.add(trace.Event{Op: trace.OpWrite, Thread: 5, FD: 3, Path: a, Offset: 10, Size: 5, Ret: 5})
	b.add(trace.Event{Op: trace.OpDup2, Thread: 5, FD: 3, Path: a, Ret: 1})
	b.add(trace.Event{Op: trace.OpClose, Thread: 5, FD: 3, Path: a})
	b.add(trace.Event{Op: trace.OpWrite, Thread: 5, FD: 1, Path: a, Offset: 15, Size: 6, Ret: 6})
	b.add(trace.Event{Op: trace.OpExec, Thread: 5, Path: b.p("/bin/true")})
	b.add(trace.Event{Op: trace.OpExit, Thread: 5})
	// The parent still has 3 and 1; 4 (close-on-exec) too.
	b.add(trace.Event{Op: trace.OpClone, Ret: 6})
	b.add(trace.Event{Op: trace.OpWrite, Thread: 6, FD: 4, Path: log, Size: 80, Ret: 80})
	b.add(trace.Event{Op: trace.OpExit, Thread: 6})
	b.add(trace.Event{Op: trace.OpWrite, FD: 3, Path: a, Offset: 21, Size: 1, Ret: 1})
	b.add(trace.Event{Op: trace.OpWrite, FD: 1, Path: tty, Size: 7, Ret: 7})
	b.add(trace.Event{Op: trace.OpWrite, FD: 2, Path: tty, Offset: 100, Size: 7, Ret: 7})
	b.add(trace.Event{Op: trace.OpCloseRange, FD: 3, Size: 1<<32 - 1})
	b.add(trace.Event{Op: trace.OpOpenat, Path: a, Flags: trace.ORdonly, Ret: 3, FD: 3})
	b.add(trace.Event{Op: trace.OpClose, FD: 3, Path: a})
	b.add(trace.Event{Op: trace.OpExit, Ret: 0})
	wantIn(t, b.m,
		`inherit "/dev/pts/0" as stdout fd 1 flags O_RDWR | O_APPEND`,
		`inherit "/dev/pts/0" as stderr fd 2 flags O_RDWR at 100`,
		`mode 0o666 call openat`,
		"fork 5",
		"dup f_a as f_a2 call dup2 fd 1 thread 5",
		"write f_a2 size 6 thread 5",
		"exec \"/bin/true\" thread 5",
		"clone 6",
		"closerange 3 to 4294967295",
		"exit",
	)
}

// TestRoundTripInherited converts a trace of an older capture: no
// inherit or fork events, calls on the standard streams, a pipe (a
// descriptor without a path) moved onto standard output with dup2 over
// an open descriptor, fcntl commands, calls of a second thread.
func TestRoundTripInherited(t *testing.T) {
	b := newEvs()
	out, f := b.p("/tmp/out"), b.p("/data/f")
	b.add(trace.Event{Op: trace.OpWrite, FD: 1, Path: out, Offset: 40, Size: 10, Ret: 10})
	b.add(trace.Event{Op: trace.OpOpen, Path: f, Flags: trace.ORdwr | trace.OCreat, Mode: 0o644, Ret: 4})
	b.add(trace.Event{Op: trace.OpFcntl, FD: 4, Path: f, Flags: trace.FSetfd, Size: 1})
	b.add(trace.Event{Op: trace.OpFcntl, FD: 4, Path: f, Flags: trace.FSetfl, Size: trace.OAppend})
	b.add(trace.Event{Op: trace.OpFcntl, FD: 4, Path: f, Flags: trace.FDupfd, Size: 10, Ret: 10})
	b.add(trace.Event{Op: trace.OpWrite, FD: 10, Path: f, Size: 5, Ret: 5})
	b.add(trace.Event{Op: trace.OpWrite, FD: 4, Path: f, Offset: 5, Size: 5, Ret: 5, Thread: 2})
	// dup2 of a pipe onto standard output, which is open.
	b.add(trace.Event{Op: trace.OpDup2, FD: 7, Ret: 1})
	b.add(trace.Event{Op: trace.OpWrite, FD: 1, Size: 3, Ret: 3})
	b.add(trace.Event{Op: trace.OpClose, FD: 7})
	// A close of a descriptor the trace never saw.
	b.add(trace.Event{Op: trace.OpClose, FD: 9, Ret: -9})
	b.add(trace.Event{Op: trace.OpCloseRange, FD: 3, Size: 20, Flags: trace.CloseRangeCloexec})
	b.add(trace.Event{Op: trace.OpClose, FD: 4, Path: f})
	b.add(trace.Event{Op: trace.OpClose, FD: 10, Path: f})
	wantIn(t, b.m,
		"inherit \"/tmp/out\" as stdout fd 1 quiet\nwrite stdout size 10 pos 40",
		"fcntl f_f cmd F_SETFD arg 1",
		"fcntl f_f cmd F_SETFL arg O_APPEND",
		"dup f_f as f_f2 arg 10 call fcntl fd 10",
		"write f_f size 5 thread 2",
		`inherit "" as pipe fd 7 quiet`,
		"dup pipe as pipe2 call dup2 fd 1",
		"close pipe3 ret -EBADF",
		"closerange 3 to 20 flags 0x4",
	)
}

// TestRoundTripCalls converts the calls the language learnt with the
// trace model's new ops: copies (a splice from a pipe), fallocate,
// posix_fadvise, mmap, getdents, links, SEEK_DATA, fstat as fstatat on
// a descriptor, path calls whose directory descriptor is AT_FDCWD.
func TestRoundTripCalls(t *testing.T) {
	b := newEvs()
	in, out, dir := b.p("/d/in"), b.p("/d/out"), b.p("/d")
	const atFDCWD = -100
	b.add(trace.Event{Op: trace.OpOpenat, FD: atFDCWD, Path: in, Flags: trace.ORdonly, Ret: 3})
	b.add(trace.Event{Op: trace.OpOpenat, FD: atFDCWD, Path: out, Flags: trace.OWronly | trace.OCreat, Mode: 0o600, Ret: 4})
	b.add(trace.Event{Op: trace.OpFstatat, FD: 3, Flags: 0x1000})
	b.add(trace.Event{Op: trace.OpFstatat, FD: atFDCWD, Path: out, Flags: 0x100})
	b.add(trace.Event{Op: trace.OpStatx, FD: 3, Path: in, Flags: 0x1000})
	b.add(trace.Event{Op: trace.OpFadvise, FD: 3, Path: in, Flags: 2})
	b.add(trace.Event{Op: trace.OpCopyFileRange, FD: 3, Path: in, FD2: 4, Path2: out, Size: 1 << 20, Ret: 1 << 20})
	b.add(trace.Event{Op: trace.OpCopyFileRange, FD: 3, Path: in, FD2: 4, Path2: out, Offset: 1 << 20, Offset2: 1 << 20, Size: 1 << 20, Ret: 1000})
	b.add(trace.Event{Op: trace.OpSendfile, FD: 3, Path: in, FD2: 4, Path2: out, Offset: 0, Offset2: 1<<20 + 1000, Size: 100, Ret: 100, Flags: trace.CopyInAt})
	b.add(trace.Event{Op: trace.OpSplice, FD: 5, FD2: 4, Path2: out, Offset2: 1<<20 + 1100, Size: 64, Ret: 64})
	b.add(trace.Event{Op: trace.OpFallocate, FD: 4, Path: out, Offset: 0, Size: 4 << 20})
	b.add(trace.Event{Op: trace.OpMmap, FD: 3, Path: in, Offset: 4096, Size: 8192, Flags: 1, Mode: 1})
	b.add(trace.Event{Op: trace.OpMsync, FD: -1, Path: in, Offset: 8192, Size: 4096, Flags: 4})
	b.add(trace.Event{Op: trace.OpMunmap, FD: -1, Path: in, Offset: 4096, Size: 8192})
	b.add(trace.Event{Op: trace.OpReadahead, FD: 3, Path: in, Offset: 0, Size: 65536})
	b.add(trace.Event{Op: trace.OpLseek, FD: 3, Path: in, Offset: 0, Whence: 3, Ret: 8192})
	b.add(trace.Event{Op: trace.OpSyncfs, FD: 4, Path: out})
	b.add(trace.Event{Op: trace.OpSync})
	b.add(trace.Event{Op: trace.OpOpenat, FD: atFDCWD, Path: dir, Flags: trace.ORdonly | 0x10000, Ret: 5})
	b.add(trace.Event{Op: trace.OpGetdents, FD: 5, Path: dir, Size: 32768, Ret: 480})
	b.add(trace.Event{Op: trace.OpGetdents, FD: 5, Path: dir, Size: 32768})
	b.add(trace.Event{Op: trace.OpClose, FD: 5, Path: dir})
	b.add(trace.Event{Op: trace.OpLinkat, FD: atFDCWD, Path: out, Path2: b.p("/d/out2")})
	b.add(trace.Event{Op: trace.OpSymlink, Path: b.p("/d/lnk"), Path2: b.p("../in")})
	b.add(trace.Event{Op: trace.OpReadlink, Path: b.p("/d/lnk"), Size: 4096, Ret: 5})
	b.add(trace.Event{Op: trace.OpUnlinkat, FD: atFDCWD, Path: b.p("/d/out2")})
	b.add(trace.Event{Op: trace.OpClose, FD: 3, Path: in})
	b.add(trace.Event{Op: trace.OpClose, FD: 4, Path: out})
	wantIn(t, b.m,
		"stat in flags AT_EMPTY_PATH call fstatat",
		"stat \"/d/out\" flags AT_SYMLINK_NOFOLLOW call fstatat",
		"stat in flags AT_EMPTY_PATH call statx",
		"advise in advice 2",
		"copy in to out size 1MiB ret 1000",
		"copy in to out at 0 size 100 call sendfile",
		"copy pipe to out size 64 call splice",
		"allocate out size 4MiB",
		"map in at 4KiB size 8KiB prot 0x1 flags 0x1",
		"msync \"/d/in\" at 8KiB size 4KiB flags 0x4",
		"unmap \"/d/in\" at 4KiB size 8KiB",
		"advise in size 64KiB call readahead",
		"seek in to 0 from data ret 8KiB",
		"sync out call syncfs",
		"readdir f_d size 32KiB ret 480",
		"link \"/d/out\" to \"/d/out2\" call linkat",
		"symlink \"/d/lnk\" target \"../in\"",
		"readlink \"/d/lnk\" size 4KiB ret 5",
	)
}

// TestRoundTripPositions: the converter predicts where the interpreter
// has a handle's position by the one model both use (trace/state): a
// failed read leaves it where it was, even at an offset the trace gives;
// fseek from the end reaches the size the script knows; an O_APPEND
// write goes to the end; a copy moves both sides. Each call whose offset
// the model predicts has no pos; the round trip is exact.
func TestRoundTripPositions(t *testing.T) {
	b := newEvs()
	f, g := b.p("/d/f"), b.p("/d/g")
	b.add(trace.Event{Op: trace.OpOpen, Path: f, Flags: trace.ORdwr | trace.OCreat, Mode: 0o644, Ret: 3})
	b.add(trace.Event{Op: trace.OpWrite, FD: 3, Path: f, Size: 100, Ret: 100})
	b.add(trace.Event{Op: trace.OpRead, FD: 3, Path: f, Offset: 50, Size: 10, Ret: -5}) // failed, at a pos
	b.add(trace.Event{Op: trace.OpRead, FD: 3, Path: f, Offset: 100, Size: 10, Ret: 0}) // where the write left it
	b.add(trace.Event{Op: trace.OpFseek, FD: 3, Path: f, Offset: -20, Whence: 2})
	b.add(trace.Event{Op: trace.OpRead, FD: 3, Path: f, Offset: 80, Size: 10, Ret: 10})
	b.add(trace.Event{Op: trace.OpOpen, Path: g, Flags: trace.OWronly | trace.OCreat | trace.OAppend, Mode: 0o644, Ret: 4})
	b.add(trace.Event{Op: trace.OpWrite, FD: 4, Path: g, Size: 7, Ret: 7})
	b.add(trace.Event{Op: trace.OpCopyFileRange, FD: 3, Path: f, FD2: 4, Path2: g, Offset: 90, Offset2: 7, Size: 10, Ret: 10})
	b.add(trace.Event{Op: trace.OpRead, FD: 3, Path: f, Offset: 100, Size: 10, Ret: 0})
	b.add(trace.Event{Op: trace.OpClose, FD: 3, Path: f})
	b.add(trace.Event{Op: trace.OpClose, FD: 4, Path: g})
	out := wantIn(t, b.m, "read f_f size 10 ret -EIO pos 50", "seek f_f to -20 from end call fseek", "copy f_f to f_g size 10\n")
	if n := strings.Count(out, " pos "); n != 1 {
		t.Errorf("%d calls with pos, want 1 (the failed read):\n%s", n, numbered([]byte(out)))
	}
}

// TestRoundTripProcessScripts expands scripts with processes, threads
// and the new calls, converts them and checks the round trip.
func TestRoundTripProcessScripts(t *testing.T) {
	for _, c := range []struct {
		name     string
		src      string
		maxLines int
	}{
		// Workers forked in a loop: each writes its part of a file with
		// its copy of the parent's descriptor and exits.
		{"workers", `
inherit "/dev/null" as stdin fd 0
open "/scratch/out" as out flags O_WRONLY | O_CREAT
repeat 8 as i {
    fork i + 1
    write out at i * 1MiB size 1MiB thread i + 1
    close out thread i + 1
    exit thread i + 1
}
close out
`, 14},
		// Rows and columns of a 2 × 4 grid made by MPI_Comm_split, a dup,
		// collectives and a ring on them, an MPI file opened on a row.
		{"comm-split", `
split as rows color rank / 4
split as cols color rank % 4
repeat 3 as i {
    allreduce 8 comm rows
    bcast 64 root 1 comm cols
    sendrecv 16 to (grank + 1) % gsize from (grank + 3) % gsize comm rows
}
split as d call MPI_Comm_dup
barrier comm d
mpiopen "row.dat" as f comm rows
write f at grank * 1KiB size 1KiB all
close f
`, 16},
		// Threads reading a file at the shared position.
		{"threads", `
open "/scratch/in" as in flags O_RDONLY
repeat 4 as i {
    clone i + 1
}
repeat 100 as i {
    read in size 4KiB thread i % 4 + 1
}
close in
`, 14},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := roundTrip(t, c.src, 8)
			if n := lines(out); n > c.maxLines {
				t.Errorf("%d lines, want at most %d:\n%s", n, c.maxLines, numbered([]byte(out)))
			}
			t.Logf("\n%s", out)
		})
	}
}

// TestRecordedTraces converts traces recorded from real programs with
// the binaries of the time (testdata/recorded): shells that fork and
// move descriptors onto their standard output, cp -r, sort -o, tar czf,
// under iotrace record (ptrace) and record --preload, with and without
// --include. Their captures record no fork, exit or inherit events: the
// scripts declare the descriptors they use without opening them, and
// make every call exactly.
func TestRecordedTraces(t *testing.T) {
	files, _ := filepath.Glob("testdata/recorded/*.iot")
	if len(files) < 5 {
		t.Fatalf("%d recorded traces", len(files))
	}
	for _, name := range files {
		t.Run(filepath.Base(name), func(t *testing.T) {
			r, err := format.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			out, res := convertTrace(t, r, Options{Source: filepath.Base(name)})
			t.Logf("%d calls → %d lines, warnings %q\n%s", res.Events, lines(out), res.Warnings, firstLines(out, 30))
		})
	}
}

// TestPageinIsNeitherCallNorThink: a capture's wait for mapped pages
// (pagein) between two calls becomes no command, and its time no think
// time: the script's map reads the pages, as a replay's mmap does.
func TestPageinIsNeitherCallNorThink(t *testing.T) {
	m := trace.NewMemTrace()
	in := m.Paths.Intern("/d/in")
	const us = int64(1000)
	m.Add(trace.Event{Op: trace.OpOpen, Path: in, Flags: trace.ORdonly, Ret: 3, Start: 0, Dur: us})
	m.Add(trace.Event{Op: trace.OpMmap, FD: 3, Path: in, Size: 8192, Flags: 1, Mode: 1, Start: 10 * us, Dur: us})
	m.Add(trace.Event{Op: trace.OpPagein, FD: -1, Path: in, Count: 1, Size: 8192, Start: 20 * us, Dur: 20000 * us})
	m.Add(trace.Event{Op: trace.OpClose, FD: 3, Path: in, Start: 20030 * us, Dur: us})
	out := wantIn(t, m, "map in size 8KiB prot 0x1 flags 0x1")
	if strings.Contains(out, "pagein") || strings.Contains(out, "sleep 20ms") || strings.Contains(out, "sleep 20.") {
		t.Errorf("the wait for mapped pages is in the script:\n%s", out)
	}
}
