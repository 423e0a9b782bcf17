package state

import (
	"fmt"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// builder makes events with a path table.
type builder struct {
	paths *trace.Paths
	evs   []trace.Event
}

func newBuilder() *builder { return &builder{paths: trace.NewPaths()} }

func (b *builder) p(s string) trace.PathID { return b.paths.Intern(s) }

func (b *builder) add(e trace.Event) *builder {
	e.Start = int64(len(b.evs))
	b.evs = append(b.evs, e)
	return b
}

// follow runs the events through a follower with a namespace and returns
// the path each data call wrote or read, by event index.
func (b *builder) follow(t *testing.T) (*Follower[struct{}, struct{}], *Namespace, map[int]string) {
	t.Helper()
	ns := NewNamespace(b.paths.Lookup)
	f := New[struct{}, struct{}](ns)
	files := map[int]string{}
	for i := range b.evs {
		st := f.Apply(&b.evs[i])
		if b.evs[i].Op.Dir() != trace.DirNone {
			files[i] = b.paths.Lookup(st.Path)
		}
	}
	return f, ns, files
}

const (
	wrCreat = trace.OWronly | trace.OCreat | trace.OTrunc
	cloexec = 0x80000
)

// The shell of the issue: sh -c 'exec 3>a.txt; (exec 3>b.txt; echo child >&3); echo parent >&3'
// as the ptrace capture records it, with its fork.
func TestForkKeepsTablesApart(t *testing.T) {
	b := newBuilder()
	a, bb := b.p("/w/a.txt"), b.p("/w/b.txt")
	b.add(trace.Event{Op: trace.OpOpenat, Path: a, Flags: wrCreat, Mode: 0o666, FD: 3, Ret: 3})
	b.add(trace.Event{Op: trace.OpFork, Ret: 1})
	b.add(trace.Event{Op: trace.OpOpenat, Thread: 1, Path: bb, Flags: wrCreat, Mode: 0o666, FD: 4, Ret: 4})
	b.add(trace.Event{Op: trace.OpFcntl, Thread: 1, FD: 3, Path: a, Flags: trace.FDupfd, Size: 10, Ret: 11})
	b.add(trace.Event{Op: trace.OpClose, Thread: 1, FD: 3, Path: a})
	b.add(trace.Event{Op: trace.OpDup2, Thread: 1, FD: 4, Path: bb, Ret: 3})
	b.add(trace.Event{Op: trace.OpClose, Thread: 1, FD: 4, Path: bb})
	b.add(trace.Event{Op: trace.OpClose, Thread: 1, FD: 11, Path: a})
	b.add(trace.Event{Op: trace.OpDup2, Thread: 1, FD: 3, Path: bb, Ret: 1})
	b.add(trace.Event{Op: trace.OpWrite, Thread: 1, FD: 1, Path: bb, Size: 6, Ret: 6}) // 9
	b.add(trace.Event{Op: trace.OpExit, Thread: 1})
	b.add(trace.Event{Op: trace.OpDup2, FD: 3, Path: a, Ret: 1})
	b.add(trace.Event{Op: trace.OpWrite, FD: 1, Size: 7, Ret: 7}) // 12: no path recorded: the table says
	f, ns, files := b.follow(t)
	if files[9] != "/w/b.txt" || files[12] != "/w/a.txt" {
		t.Fatalf("writes went to %q and %q", files[9], files[12])
	}
	if f.Procs() != 1 {
		t.Errorf("%d processes alive, want 1 (the child exited)", f.Procs())
	}
	if end := entries(ns.End()); end != "/w/a.txt 7, /w/b.txt 6" {
		t.Errorf("end state %s", end)
	}
	if d := f.Lookup(0, 1); d == nil || d.Path != a {
		t.Errorf("parent's fd 1 is %+v, want a.txt", d)
	}
}

// A forked child's copy of the table is its own: its descriptors close
// when it exits (the parent's stay open), and OnClose and OnRelease see
// them, in each process, once.
func TestForkedTableClosesWithItsProcess(t *testing.T) {
	b := newBuilder()
	a, c := b.p("/w/a"), b.p("/w/c")
	b.add(trace.Event{Op: trace.OpOpen, Path: a, Flags: wrCreat, Ret: 3})
	b.add(trace.Event{Op: trace.OpFork, Ret: 1})
	b.add(trace.Event{Op: trace.OpOpen, Thread: 1, Path: c, Flags: wrCreat, Ret: 4})
	b.add(trace.Event{Op: trace.OpExit, Thread: 1})
	f := New[struct{}, struct{}](nil)
	var closed, released []string
	f.OnClose = func(p *Proc[struct{}], fd int32, d *Desc[struct{}]) {
		closed = append(closed, fmt.Sprintf("%d:%d %s", p.ID, fd, b.paths.Lookup(d.Path)))
	}
	f.OnRelease = func(d *Desc[struct{}]) { released = append(released, b.paths.Lookup(d.Path)) }
	for i := range b.evs {
		f.Apply(&b.evs[i])
	}
	if got := strings.Join(closed, ", "); got != "1:3 /w/a, 1:4 /w/c" && got != "1:4 /w/c, 1:3 /w/a" {
		t.Errorf("closed at the child's exit: %s", got)
	}
	if got := strings.Join(released, ", "); got != "/w/c" {
		t.Errorf("released: %q, want /w/c (a is still open in the parent)", got)
	}
	if d := f.Lookup(0, 3); d == nil || d.Path != a {
		t.Errorf("parent's fd 3: %+v", d)
	}
	if n := f.Open(0); n != 1 {
		t.Errorf("parent has %d descriptors open, want 1", n)
	}
	if fd := f.Free(0, 3); fd != 4 {
		t.Errorf("parent's lowest free descriptor from 3: %d, want 4", fd)
	}
}

func entries(es []Entry) string {
	var parts []string
	for _, e := range es {
		switch {
		case e.Removed:
			parts = append(parts, e.Path+" removed")
		case e.Kind == KindDir:
			parts = append(parts, e.Path+"/")
		default:
			parts = append(parts, fmt.Sprintf("%s %d", e.Path, e.Size))
		}
	}
	return strings.Join(parts, ", ")
}

func TestDupSharesPositionAndAppend(t *testing.T) {
	b := newBuilder()
	p := b.p("/w/log")
	var released int
	b.add(trace.Event{Op: trace.OpOpen, Path: p, Flags: trace.OWronly | trace.OCreat, Ret: 3})
	b.add(trace.Event{Op: trace.OpDup, FD: 3, Ret: 4})
	b.add(trace.Event{Op: trace.OpWrite, FD: 3, Offset: 0, Size: 10, Ret: 10})
	b.add(trace.Event{Op: trace.OpFcntl, FD: 4, Flags: trace.FSetfl, Size: trace.OAppend})
	ns := NewNamespace(b.paths.Lookup)
	f := New[int, struct{}](ns)
	f.OnRelease = func(d *Desc[int]) { released++ }
	for i := range b.evs {
		f.Apply(&b.evs[i])
	}
	d3, d4 := f.Lookup(0, 3), f.Lookup(0, 4)
	if d3 != d4 || d3.Pos != 10 || !d3.Append() {
		t.Fatalf("fd 3 %+v, fd 4 %+v: want one description at 10 with O_APPEND", d3, d4)
	}
	f.Apply(&trace.Event{Op: trace.OpClose, FD: 3})
	if released != 0 {
		t.Fatal("released with a descriptor left")
	}
	f.Apply(&trace.Event{Op: trace.OpClose, FD: 4})
	if released != 1 {
		t.Fatalf("released %d times, want 1", released)
	}
}

func TestExecClosesCloexec(t *testing.T) {
	f := New[struct{}, struct{}](nil)
	paths := trace.NewPaths()
	for _, e := range []trace.Event{
		{Op: trace.OpOpen, Path: paths.Intern("/a"), Flags: cloexec, Ret: 3},
		{Op: trace.OpOpen, Path: paths.Intern("/b"), Ret: 4},
		{Op: trace.OpDup3, FD: 4, Flags: cloexec, Ret: 5},
		{Op: trace.OpFcntl, FD: 4, Flags: trace.FDupfdCloexec, Ret: 6},
		{Op: trace.OpOpen, Path: paths.Intern("/c"), Ret: 7},
		{Op: trace.OpFcntl, FD: 7, Flags: trace.FSetfd, Size: 1},
		{Op: trace.OpClone, Ret: 1},
		{Op: trace.OpExec, Thread: 1, Path: paths.Intern("/bin/x")},
	} {
		f.Apply(&e)
	}
	var open []int32
	f.Each(1, func(fd int32, d *Desc[struct{}]) { open = append(open, fd) })
	if fmt.Sprint(open) != "[4]" {
		t.Errorf("open after exec: %v, want [4]", open)
	}
	if p := f.Proc(1); p.Exe != paths.Intern("/bin/x") || p.ID != 0 {
		t.Errorf("process after exec: %+v", p)
	}
}

func TestThreadsShareOldTraces(t *testing.T) {
	// No process events: every thread is in one process.
	f := New[struct{}, struct{}](nil)
	f.Apply(&trace.Event{Op: trace.OpOpen, Thread: 3, Path: 1, Ret: 5})
	if d := f.Lookup(7, 5); d == nil || d.Path != 1 {
		t.Fatalf("thread 7 does not see thread 3's descriptor: %+v", d)
	}
}

func TestLearntDescriptors(t *testing.T) {
	b := newBuilder()
	out := b.p("/w/out")
	b.add(trace.Event{Op: trace.OpInherit, FD: 1, Ret: 1, Path: out, Flags: trace.OWronly | trace.OAppend, Offset: 100})
	b.add(trace.Event{Op: trace.OpWrite, FD: 1, Path: out, Offset: 100, Size: 5, Ret: 5})
	b.add(trace.Event{Op: trace.OpRead, FD: 0, Path: b.p("/w/in"), Offset: 0, Size: 4096, Ret: 20})
	f, ns, files := b.follow(t)
	if files[1] != "/w/out" || files[2] != "/w/in" {
		t.Fatalf("files %v", files)
	}
	if d := f.Lookup(0, 1); d.Pos != 105 || !d.Learnt || !d.Append() {
		t.Errorf("fd 1: %+v", d)
	}
	if before := entries(ns.Before()); before != "/w/, /w/in 0, /w/out 0" {
		t.Errorf("before: %s", before)
	}
	for _, e := range ns.Before() {
		switch e.Path {
		case "/w/in":
			if e.Need != 20 || !e.Exact {
				t.Errorf("/w/in needs %d (exact %v), want 20 exactly", e.Need, e.Exact)
			}
		case "/w/out":
			// Appended to at 100: it had 100 bytes.
			if e.Need != 100 || !e.Exact {
				t.Errorf("/w/out needs %d (exact %v), want 100", e.Need, e.Exact)
			}
		}
	}
}

func TestNamespaceFollowsDirectoryRename(t *testing.T) {
	// mkdir d; write d/f; rename d e; read e/f: nothing to prepare.
	b := newBuilder()
	b.add(trace.Event{Op: trace.OpMkdir, Path: b.p("/w/d")})
	b.add(trace.Event{Op: trace.OpOpen, Path: b.p("/w/d/f"), Flags: wrCreat, Ret: 3})
	b.add(trace.Event{Op: trace.OpWrite, FD: 3, Size: 50, Ret: 50})
	b.add(trace.Event{Op: trace.OpClose, FD: 3})
	b.add(trace.Event{Op: trace.OpRename, Path: b.p("/w/d"), Path2: b.p("/w/e")})
	b.add(trace.Event{Op: trace.OpOpen, Path: b.p("/w/e/f"), Ret: 3})
	b.add(trace.Event{Op: trace.OpRead, FD: 3, Size: 4096, Ret: 50})
	_, ns, _ := b.follow(t)
	for _, e := range ns.Before() {
		if e.Path != "/w" && e.Path != "/" {
			t.Errorf("prepares %s", e.Path)
		}
	}
	if got := entries(ns.End()); got != "/w/e/, /w/e/f 50" {
		t.Errorf("end: %s", got)
	}
	if ns.Anomalies != 0 {
		t.Errorf("%d anomalies", ns.Anomalies)
	}
}

func TestNamespaceInitialNamesThroughRenames(t *testing.T) {
	// An existing directory renamed, then a file in it read: prepare
	// d/f, where it was.
	b := newBuilder()
	b.add(trace.Event{Op: trace.OpRename, Path: b.p("/w/d"), Path2: b.p("/w/e")})
	b.add(trace.Event{Op: trace.OpOpenat, Path: b.p("/w/e/f"), Ret: 4})
	b.add(trace.Event{Op: trace.OpPread, FD: 4, Offset: 1000, Size: 24, Ret: 24})
	_, ns, _ := b.follow(t)
	got := entries(ns.Before())
	if got != "/w/, /w/d/, /w/d/f 0" {
		t.Errorf("before: %s", got)
	}
	for _, e := range ns.Before() {
		if e.Path == "/w/d/f" && (e.Need != 1024 || e.Exact) {
			t.Errorf("d/f needs %d (exact %v), want at least 1024", e.Need, e.Exact)
		}
	}
	end := entries(ns.End())
	if !strings.Contains(end, "/w/d removed") || !strings.Contains(end, "/w/e") {
		t.Errorf("end: %s", end)
	}
}

func TestNamespaceTemporaryFiles(t *testing.T) {
	// git: remove a lock that is not there, create it exclusively, write,
	// link it to its final name, remove it; an existing file truncated.
	b := newBuilder()
	lock, obj := b.p("/w/.git/x.lock"), b.p("/w/.git/objects/ab/cd")
	b.add(trace.Event{Op: trace.OpUnlink, Path: lock, Ret: -2})
	b.add(trace.Event{Op: trace.OpOpenat, Path: lock, Flags: trace.ORdwr | trace.OCreat | trace.OExcl, Ret: 3})
	b.add(trace.Event{Op: trace.OpWrite, FD: 3, Size: 70, Ret: 70})
	b.add(trace.Event{Op: trace.OpClose, FD: 3})
	b.add(trace.Event{Op: trace.OpMkdir, Path: b.p("/w/.git/objects/ab")})
	b.add(trace.Event{Op: trace.OpLink, Path: lock, Path2: obj})
	b.add(trace.Event{Op: trace.OpUnlink, Path: lock})
	b.add(trace.Event{Op: trace.OpOpen, Path: b.p("/w/old"), Flags: wrCreat, Ret: 3})
	b.add(trace.Event{Op: trace.OpStat, Path: obj})
	_, ns, _ := b.follow(t)
	before := entries(ns.Before())
	if strings.Contains(before, "lock") || strings.Contains(before, "old") || strings.Contains(before, "/ab") {
		t.Errorf("before: %s", before)
	}
	end := entries(ns.End())
	if !strings.Contains(end, "/w/.git/objects/ab/cd 70") || strings.Contains(end, "lock") ||
		!strings.Contains(end, "/w/old") {
		t.Errorf("end: %s", end)
	}
}

func TestCopiesMoveBothPositions(t *testing.T) {
	b := newBuilder()
	src, dst := b.p("/w/src"), b.p("/w/dst")
	b.add(trace.Event{Op: trace.OpOpen, Path: src, Ret: 3})
	b.add(trace.Event{Op: trace.OpOpen, Path: dst, Flags: wrCreat, Ret: 4})
	b.add(trace.Event{Op: trace.OpCopyFileRange, FD: 3, FD2: 4, Size: 1 << 20, Ret: 5000})
	b.add(trace.Event{Op: trace.OpCopyFileRange, FD: 3, FD2: 4, Offset: 5000, Offset2: 5000, Size: 1 << 20, Ret: 0})
	f, ns, _ := b.follow(t)
	if d := f.Lookup(0, 4); d.Pos != 5000 {
		t.Errorf("dst position %d", d.Pos)
	}
	for _, e := range ns.Before() {
		if e.Path == "/w/src" && (e.Need != 5000 || !e.Exact) {
			t.Errorf("src needs %d exact %v", e.Need, e.Exact)
		}
	}
	if got := entries(ns.End()); got != "/w/dst 5000" {
		t.Errorf("end: %s", got)
	}
}

func TestMPIHandles(t *testing.T) {
	b := newBuilder()
	p := b.p("/w/data")
	b.add(trace.Event{Op: trace.OpMPIFileOpen, FD: 1, Path: p, Flags: trace.MPIModeCreate | trace.MPIModeWronly})
	b.add(trace.Event{Op: trace.OpMPIFileSetView, FD: 1, Offset: 100, Size: 10, Stride: 40})
	b.add(trace.Event{Op: trace.OpMPIFileWrite, FD: 1, Offset: 0, Size: 25, Ret: 25})
	f, ns, files := b.follow(t)
	h := f.Handle(1)
	if h == nil || h.Pos != 25 || h.View.FileOffset(24) != 184 || files[2] != "/w/data" {
		t.Fatalf("handle %+v, files %v", h, files)
	}
	if got := entries(ns.End()); got != "/w/data 185" {
		t.Errorf("end: %s", got)
	}
	f.Apply(&trace.Event{Op: trace.OpMPIFileClose, FD: 1})
	if f.Handle(1) != nil {
		t.Error("handle open after close")
	}
}

func TestCloseRange(t *testing.T) {
	f := New[struct{}, struct{}](nil)
	for fd := int64(3); fd < 10; fd++ {
		f.Apply(&trace.Event{Op: trace.OpOpen, Path: 1, Ret: fd})
	}
	f.Apply(&trace.Event{Op: trace.OpOpen, Path: 1, Ret: 5000})
	f.Apply(&trace.Event{Op: trace.OpCloseRange, FD: 5, Size: 6, Flags: trace.CloseRangeCloexec})
	f.Apply(&trace.Event{Op: trace.OpCloseRange, FD: 8, Size: 1 << 31})
	var open []int32
	f.Each(0, func(fd int32, d *Desc[struct{}]) { open = append(open, fd) })
	if fmt.Sprint(open) != "[3 4 5 6 7]" {
		t.Errorf("open: %v", open)
	}
	f.Apply(&trace.Event{Op: trace.OpFork, Ret: 1})
	f.Apply(&trace.Event{Op: trace.OpExec, Thread: 1})
	open = open[:0]
	f.Each(1, func(fd int32, d *Desc[struct{}]) { open = append(open, fd) })
	if fmt.Sprint(open) != "[3 4 7]" {
		t.Errorf("after exec: %v", open)
	}
}

func TestHostileNumbers(t *testing.T) {
	f := New[struct{}, struct{}](NewNamespace(func(trace.PathID) string { return "/../x/../../y" }))
	for _, e := range []trace.Event{
		{Op: trace.OpOpen, Path: 1, Ret: 1<<31 - 1},
		{Op: trace.OpDup2, FD: 1<<31 - 1, Ret: -5},
		{Op: trace.OpDup2, FD: -7, Ret: 1 << 40},
		{Op: trace.OpFork, Ret: -1},
		{Op: trace.OpFork, Ret: 1 << 40},
		{Op: trace.OpClone, Ret: 0},
		{Op: trace.OpExit, Thread: 99},
		{Op: trace.OpCloseRange, FD: -100, Size: -1},
		{Op: trace.OpRename, Path: 1, Path2: 1},
		{Op: trace.OpRead, FD: 1<<31 - 1, Offset: -1 << 63, Size: 1 << 62, Ret: 1 << 62},
		{Op: trace.OpWrite, FD: 1<<31 - 1, Offset: 1<<63 - 1, Size: 1 << 62, Ret: 1 << 62},
		{Op: trace.OpExec, Thread: 5},
	} {
		f.Apply(&e)
	}
}

// TestNamespaceAppendsAndDirectories: a shell's `echo more >> log` in a
// directory it looked at first: the directory is one (not a file to
// prepare), and the append says how long the log was.
func TestNamespaceAppendsAndDirectories(t *testing.T) {
	b := newBuilder()
	b.add(trace.Event{Op: trace.OpStat, Path: b.p("/x/w")})
	b.add(trace.Event{Op: trace.OpOpenat, Path: b.p("/x/w/log"), Flags: trace.OWronly | trace.OCreat | trace.OAppend, Ret: 3})
	b.add(trace.Event{Op: trace.OpWrite, FD: 3, Offset: 6, Size: 5, Ret: 5})
	b.add(trace.Event{Op: trace.OpWrite, FD: 3, Offset: 11, Size: 5, Ret: 5})
	_, ns, _ := b.follow(t)
	if got := entries(ns.Before()); got != "/x/, /x/w/, /x/w/log 0" {
		t.Errorf("before: %s", got)
	}
	for _, e := range ns.Before() {
		if e.Path == "/x/w/log" && (e.Need != 6 || !e.Exact) {
			t.Errorf("the log needs %d bytes (exact %v), want 6", e.Need, e.Exact)
		}
	}
	if got := entries(ns.End()); got != "/x/w/log 16" {
		t.Errorf("end: %s", got)
	}
}

// TestNamespaceAppendsOutOfOrder: two threads append through O_APPEND;
// a trace can hold their calls in another order than the kernel ran
// them: the file had as many bytes as the lowest append's offset.
func TestNamespaceAppendsOutOfOrder(t *testing.T) {
	b := newBuilder()
	b.add(trace.Event{Op: trace.OpOpen, Path: b.p("/w/log"), Flags: trace.OWronly | trace.OCreat | trace.OAppend, Ret: 3})
	b.add(trace.Event{Op: trace.OpDup, FD: 3, Ret: 4})
	b.add(trace.Event{Op: trace.OpWrite, Thread: 1, FD: 4, Offset: 43, Size: 18, Ret: 18})
	b.add(trace.Event{Op: trace.OpWrite, Thread: 2, FD: 3, Offset: 25, Size: 18, Ret: 18})
	_, ns, _ := b.follow(t)
	for _, e := range ns.Before() {
		if e.Path == "/w/log" && (e.Need != 25 || !e.Exact) {
			t.Errorf("the log needs %d (exact %v), want 25", e.Need, e.Exact)
		}
	}
	if got := entries(ns.End()); got != "/w/log 61" {
		t.Errorf("end: %s", got)
	}
}

// TestNamespaceAppendsRaced: a capture that learns where an append landed
// from the file's size after it records two racing appends at the same
// offset; the bytes appended and where they ended say how long the file
// was.
func TestNamespaceAppendsRaced(t *testing.T) {
	b := newBuilder()
	b.add(trace.Event{Op: trace.OpOpen, Path: b.p("/w/log"), Flags: trace.OWronly | trace.OCreat | trace.OAppend, Ret: 3})
	b.add(trace.Event{Op: trace.OpWrite, Thread: 1, FD: 3, Offset: 43, Size: 18, Ret: 18})
	b.add(trace.Event{Op: trace.OpWrite, Thread: 2, FD: 3, Offset: 43, Size: 18, Ret: 18})
	b.add(trace.Event{Op: trace.OpWrite, Thread: 2, FD: 3, Offset: 61, Size: 18, Ret: 18})
	_, ns, _ := b.follow(t)
	for _, e := range ns.Before() {
		if e.Path == "/w/log" && (e.Need != 25 || !e.Exact) {
			t.Errorf("the log needs %d (exact %v), want 25", e.Need, e.Exact)
		}
	}
}

func TestNamespaceFollowsLinksTheTraceMade(t *testing.T) {
	// python -m venv: env/bin/python3 → /usr/bin/python3, env/bin/python
	// → python3, then a stat through python: the interpreter existed
	// before the trace, and a replay prepares it. An lstat of a link
	// made to a missing file, and a stat that failed, find nothing.
	b := newBuilder()
	b.add(trace.Event{Op: trace.OpMkdir, Path: b.p("/w/env")})
	b.add(trace.Event{Op: trace.OpMkdir, Path: b.p("/w/env/bin")})
	b.add(trace.Event{Op: trace.OpSymlink, Path: b.p("/w/env/bin/python3"), Path2: b.p("/usr/bin/python3")})
	b.add(trace.Event{Op: trace.OpSymlink, Path: b.p("/w/env/bin/python"), Path2: b.p("python3")})
	b.add(trace.Event{Op: trace.OpFstatat, Path: b.p("/w/env/bin/python"), FD: -100})
	b.add(trace.Event{Op: trace.OpSymlink, Path: b.p("/w/dangling"), Path2: b.p("gone")})
	b.add(trace.Event{Op: trace.OpLstat, Path: b.p("/w/dangling")})
	b.add(trace.Event{Op: trace.OpStat, Path: b.p("/w/dangling"), Ret: -2})
	_, ns, _ := b.follow(t)
	before := entries(ns.Before())
	if !strings.Contains(before, "/usr/bin/python3") || strings.Contains(before, "gone") || strings.Contains(before, "/w/env") {
		t.Errorf("before: %s", before)
	}
	if ns.Anomalies != 0 {
		t.Errorf("%d anomalies", ns.Anomalies)
	}
}

func TestNamespaceSizesStatsFound(t *testing.T) {
	// rsync --link-dest: the old snapshot's files are only stat'ed (the
	// size a stat found, SizeSeen) and linked: they had those sizes. A
	// stat without the size, or of a file the trace wrote, says nothing
	// of the size before.
	b := newBuilder()
	old, other, made := b.p("/w/snap1/a"), b.p("/w/snap1/b"), b.p("/w/made")
	b.add(trace.Event{Op: trace.OpLstat, Path: old, Size: 70000, Flags: trace.SizeSeen})
	b.add(trace.Event{Op: trace.OpLink, Path: old, Path2: b.p("/w/snap2/a")})
	b.add(trace.Event{Op: trace.OpStat, Path: other})
	b.add(trace.Event{Op: trace.OpOpen, Path: made, Flags: wrCreat | trace.OExcl, Ret: 3})
	b.add(trace.Event{Op: trace.OpWrite, FD: 3, Size: 10, Ret: 10})
	b.add(trace.Event{Op: trace.OpFstat, FD: 3, Size: 10, Flags: trace.SizeSeen})
	_, ns, _ := b.follow(t)
	need := needs(ns)
	if need["/w/snap1/a"] != "70000 true" || need["/w/snap1/b"] != "0 false" {
		t.Errorf("before: %v", need)
	}
	if _, ok := need["/w/made"]; ok {
		t.Errorf("before: %v", need)
	}
}

func TestNamespaceSizesMovedFiles(t *testing.T) {
	// find -exec mv: a file only renamed, whose recorder looked at it just
	// before (SizeSeen on the rename), and one only linked: they had
	// those sizes before the trace.
	b := newBuilder()
	b.add(trace.Event{Op: trace.OpRenameat2, Path: b.p("/w/a.txt"), Path2: b.p("/w/a.txt.bak"), Size: 2000, Flags: 1 | trace.SizeSeen})
	b.add(trace.Event{Op: trace.OpLinkat, Path: b.p("/w/b.txt"), Path2: b.p("/w/c.txt"), Size: 70000, Flags: trace.SizeSeen})
	_, ns, _ := b.follow(t)
	need := needs(ns)
	if need["/w/a.txt"] != "2000 true" || need["/w/b.txt"] != "70000 true" {
		t.Errorf("before: %v", need)
	}
}

// needs is what the names before the trace need: "size exact" by path.
func needs(ns *Namespace) map[string]string {
	need := map[string]string{}
	for _, e := range ns.Before() {
		need[e.Path] = fmt.Sprintf("%d %v", e.Need, e.Exact)
	}
	return need
}
