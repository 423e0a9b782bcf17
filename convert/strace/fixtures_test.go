package strace

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/state"
)

// The fixtures were made here, in /tmp/iotrace-fx (a.txt; tree/a.txt,
// tree/sub/b.txt of 2,000 lines), with
//
//	env -i PATH=/usr/bin:/bin LANG=C strace -f -ttt -T -y -o NAME.strace CMD </dev/null >/dev/null 2>&1
//
// (strace 6.1, Debian 12, x86-64), CMD being:
//
//	subshell.strace  sh -c 'exec 3>a.txt; (exec 3>b.txt; echo child >&3); echo parent >&3'
//	tar.strace       tar czf out.tgz tree
//	cp.strace        cp tree/sub/b.txt copy.txt
//	links.strace     sh -c 'ln copy.txt hard.txt; ln -s copy.txt soft.txt; ls; readlink soft.txt'
const fx = "/tmp/iotrace-fx/"

func readFixture(t *testing.T, name string) (*Reader, []trace.Event) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, evs, err := read(t, Options{}, Input{Name: name, R: f})
	if err != nil {
		t.Fatal(err)
	}
	checkProcesses(t, name, evs)
	return r, evs
}

// consumer follows an imported trace as its readers do: a fresh
// follower, with a namespace, fed the events in order.
type consumer struct {
	r     *Reader
	f     *state.Follower[struct{}, struct{}]
	ns    *state.Namespace
	steps []state.Step[struct{}, struct{}]
}

func consume(r *Reader, evs []trace.Event) *consumer {
	c := &consumer{r: r, ns: state.NewNamespace(r.Path)}
	c.f = state.New[struct{}, struct{}](c.ns)
	for i := range evs {
		c.steps = append(c.steps, c.f.Apply(&evs[i]))
	}
	return c
}

// path returns the file event i reached, as a reader of the trace sees
// it.
func (c *consumer) path(i int) string { return c.r.Path(c.steps[i].Path) }

// checkProcesses: threads are numbered from 0 in the order they are made;
// every thread but the first is made by a fork or clone event before its
// first event, which does not start before it; every thread exits once,
// and makes no event after.
func checkProcesses(t *testing.T, name string, evs []trace.Event) {
	t.Helper()
	made := map[uint32]int64{0: 0} // thread: start of its fork
	exited := map[uint32]bool{}
	next := uint32(1)
	for i, e := range evs {
		if _, ok := made[e.Thread]; !ok {
			t.Fatalf("%s: event %d (%s) of thread %d before its fork", name, i, e.Op, e.Thread)
		}
		if exited[e.Thread] {
			t.Fatalf("%s: event %d (%s) of thread %d after its exit", name, i, e.Op, e.Thread)
		}
		if e.Start < made[e.Thread] {
			t.Errorf("%s: event %d of thread %d starts before its fork", name, i, e.Thread)
		}
		switch e.Op {
		case trace.OpFork, trace.OpClone:
			if e.Ret != int64(next) {
				t.Errorf("%s: event %d makes thread %d, want %d", name, i, e.Ret, next)
			}
			made[uint32(e.Ret)] = e.Start
			next++
		case trace.OpExit:
			exited[e.Thread] = true
		}
	}
	for th := range made {
		if !exited[th] {
			t.Errorf("%s: thread %d never exits", name, th)
		}
	}
}

// TestSubshellDescriptors: a subshell's descriptor 3 is its own; the
// child's write goes to b.txt, the parent's to a.txt, as every reader
// of the trace sees them.
func TestSubshellDescriptors(t *testing.T) {
	r, evs := readFixture(t, "subshell.strace")
	c := consume(r, evs)
	var writes []string
	for i, e := range evs {
		if e.Op == trace.OpWrite {
			writes = append(writes, fmt.Sprintf("%s@t%d", strings.TrimPrefix(c.path(i), fx), e.Thread))
			if r.Path(e.Path) != c.path(i) {
				t.Errorf("write %d: event path %s, reader's %s", i, r.Path(e.Path), c.path(i))
			}
		}
	}
	if got := strings.Join(writes, " "); got != "b.txt@t1 a.txt@t0" {
		t.Errorf("writes %s, want the child's to b.txt, the parent's to a.txt", got)
	}
	var fork *trace.Event
	for i := range evs {
		if evs[i].Op == trace.OpFork {
			fork = &evs[i]
			break
		}
	}
	if fork == nil || fork.Thread != 0 || fork.Ret != 1 || fork.Flags != 0 {
		t.Errorf("fork %+v", fork)
	}
	if n := r.Stats(); n.Learnt != 0 || n.Resynced != 0 || n.Unborn != 0 {
		t.Errorf("stats %+v", n)
	}
}

// TestTarPipes: tar czf forks a shell that runs gzip; gzip reads the
// archive's data from a pipe (no event: not a read of a directory tar has
// open at the same number), and the archive's writes are gzip's, on its
// standard output, which the shell's child made of out.tgz.
func TestTarPipes(t *testing.T) {
	r, evs := readFixture(t, "tar.strace")
	c := consume(r, evs)
	exe := map[uint32]string{}
	var archive int64
	for i, e := range evs {
		switch {
		case e.Op == trace.OpExec:
			exe[e.Thread] = r.Path(e.Path)
		case e.Op == trace.OpFork:
			exe[uint32(e.Ret)] = exe[e.Thread]
		}
		p := c.path(i)
		if d := e.Op.Dir(); d == trace.DirRead || d == trace.DirWrite {
			if n := c.ns.Lookup(p); n.Kind == state.KindDir {
				t.Errorf("event %d: %s of directory %s", i, e.Op, p)
			}
			if exe[e.Thread] == "/usr/bin/gzip" && d == trace.DirRead && !strings.HasPrefix(p, "/lib/") {
				t.Errorf("event %d: gzip reads %s (its input is a pipe)", i, p)
			}
		}
		if p == fx+"out.tgz" && e.Op.Dir() == trace.DirWrite {
			if exe[e.Thread] != "/usr/bin/gzip" || e.FD != 1 {
				t.Errorf("event %d: %s writes the archive on %d", i, exe[e.Thread], e.FD)
			}
			archive += e.Ret
		}
		if e.Op == trace.OpRead && strings.HasPrefix(p, fx+"tree/") && exe[e.Thread] != "/usr/bin/tar" {
			t.Errorf("event %d: %s reads %s", i, exe[e.Thread], p)
		}
	}
	if archive != 4499 {
		t.Errorf("%d bytes written to out.tgz, strace shows 4499", archive)
	}
	// tar forks (the child runs /bin/sh -c gzip), the shell vforks gzip,
	// whose first lines came before vfork returned.
	var forks []string
	for _, e := range evs {
		if e.Op == trace.OpFork {
			forks = append(forks, fmt.Sprintf("%d>%d>%s", e.Thread, e.Ret, flagsName(e.Flags)))
		}
	}
	if got := strings.Join(forks, " "); got != "0>1> 1>2>VFORK|VM" {
		t.Errorf("forks %s", got)
	}
	if exe[1] != "/bin/sh" || exe[2] != "/usr/bin/gzip" {
		t.Errorf("programs %v", exe)
	}
}

func fmtInt(v int64) string { return strconv.FormatInt(v, 10) }

func flagsName(f uint32) string {
	var s []string
	for _, n := range []struct {
		bit  uint32
		name string
	}{{cloneFiles, "FILES"}, {cloneVfork, "VFORK"}, {cloneVM, "VM"}, {cloneThrd, "THREAD"}} {
		if f&n.bit != 0 {
			s = append(s, n.name)
		}
	}
	return strings.Join(s, "|")
}

// TestCopies: cp copies with copy_file_range at the descriptors'
// positions, which move; posix_fadvise is an event.
func TestCopies(t *testing.T) {
	r, evs := readFixture(t, "cp.strace")
	c := consume(r, evs)
	var got []string
	for i, e := range evs {
		switch e.Op {
		case trace.OpCopyFileRange:
			if e.FD != 3 || e.FD2 != 4 || e.Flags != 0 || r.Path(e.Path) != fx+"tree/sub/b.txt" || r.Path(e.Path2) != fx+"copy.txt" {
				t.Errorf("copy %+v", e)
			}
			if c.steps[i].Desc2 == nil || r.Path(c.steps[i].Desc2.Path) != fx+"copy.txt" {
				t.Errorf("copy %d: the reader's written side %+v", i, c.steps[i].Desc2)
			}
			got = append(got, strings.Join([]string{fmtInt(e.Offset), fmtInt(e.Offset2), fmtInt(e.Ret)}, "/"))
		case trace.OpFadvise:
			if e.Flags != 2 || e.FD != 3 || e.Offset != 0 || e.Size != 0 {
				t.Errorf("fadvise %+v", e)
			}
		}
	}
	if s := strings.Join(got, " "); s != "0/0/8893 8893/8893/0" {
		t.Errorf("copies (in/out/moved) %s", s)
	}
	for _, e := range c.ns.End() {
		if e.Path == fx+"copy.txt" && (e.Size != 8893 || !e.Exact) {
			t.Errorf("copy.txt ends %+v", e)
		}
	}
}

// TestLinks: ln makes a hard link (Path the existing name, Path2 the
// new), ln -s a symbolic link (Path the link, Path2 its target as
// written), ls reads the directory's entries, readlink reads the link.
func TestLinks(t *testing.T) {
	r, evs := readFixture(t, "links.strace")
	c := consume(r, evs)
	var got []string
	for _, e := range evs {
		switch e.Op {
		case trace.OpLinkat, trace.OpSymlinkat, trace.OpReadlink:
			got = append(got, e.Op.String()+" "+r.Path(e.Path)+" "+r.Path(e.Path2)+" "+fmtInt(e.Ret))
		case trace.OpGetdents:
			got = append(got, "getdents "+r.Path(e.Path)+" "+fmtInt(e.Size)+" "+fmtInt(e.Ret))
		}
	}
	want := []string{
		"linkat " + fx + "copy.txt " + fx + "hard.txt 0",
		"symlinkat " + fx + "soft.txt copy.txt 0",
		"getdents /tmp/iotrace-fx 32768 400",
		"getdents /tmp/iotrace-fx 32768 0",
		"readlink " + fx + "soft.txt  8",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	soft := c.ns.Lookup(fx + "soft.txt")
	if soft.Kind != state.KindSymlink || soft.Target != "copy.txt" || !soft.Made {
		t.Errorf("soft.txt: %+v", soft)
	}
	if hard, cp := c.ns.Lookup(fx+"hard.txt"), c.ns.Lookup(fx+"copy.txt"); hard.File == nil || hard.File != cp.File {
		t.Errorf("hard.txt is not a name of copy.txt's file")
	}
	for _, e := range evs {
		if e.Op == trace.OpReadlink && e.Size != 64 {
			t.Errorf("readlink %+v", e)
		}
	}
}
