package strace

import (
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// lines imports a log (PID column, -ttt times) and renders its events
// as line does, one a line.
func lines(t *testing.T, opts Options, log string) (*Reader, []trace.Event, string) {
	t.Helper()
	r, evs, err := read(t, opts, text("x.txt", log))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, line(r, e))
	}
	return r, evs, strings.Join(out, "\n")
}

func wantLines(t *testing.T, got string, want ...string) {
	t.Helper()
	if w := strings.Join(want, "\n"); got != w {
		t.Errorf("events:\n%s\nwant:\n%s", got, w)
	}
}

// TestForkCopiesTableAtFork: the child's descriptor table is the
// parent's at the fork, not when the child's first line shows: the
// parent's directory opened at the number of the pipe's end it closed is
// not the child's, with -y and without.
func TestForkCopiesTableAtFork(t *testing.T) {
	const y = `100 1.000 pipe2([3<pipe:[7]>, 4<pipe:[7]>], 0) = 0
100 1.001 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x7f) = 101
100 1.002 close(3<pipe:[7]>) = 0
100 1.003 openat(AT_FDCWD</d>, "tree", O_RDONLY|O_DIRECTORY) = 3</d/tree>
101 1.004 dup2(3<pipe:[7]>, 0) = 0<pipe:[7]>
101 1.005 read(0<pipe:[7]>, "x", 10) = 1
100 1.006 getdents64(3</d/tree>, 0x55 /* 2 entries */, 32768) = 48
101 1.007 +++ exited with 0 +++
100 1.008 +++ exited with 0 +++
`
	noY := strings.NewReplacer("<pipe:[7]>", "", "</d/tree>", "", "</d>", "").Replace(y) + "\n"
	for _, log := range []string{y, `100 1.0 chdir("/d") = 0` + "\n" + noY} {
		_, _, got := lines(t, Options{}, log)
		wantLines(t, got,
			"t0 fork = 1",
			"t0 openat /d/tree fd=3 = 3",
			"t0 getdents /d/tree fd=3 = 48",
			"t1 exit = 0",
			"t0 exit = 0",
		)
	}
}

// TestNonLeaderExec: a thread other than the leader runs execve: the
// leader exits (status 0), the thread goes on under the leader's PID
// with its own index.
func TestNonLeaderExec(t *testing.T) {
	const log = `200 1.000 execve("/bin/prog", ["prog"], 0x7f /* 1 var */) = 0 <0.000100>
200 1.001 clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM, exit_signal=0, stack=0x7f, stack_size=0x7f00}, 88) = 201 <0.000050>
200 1.002 openat(AT_FDCWD</w>, "f", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 3</w/f> <0.000010>
201 1.003 write(3</w/f>, "ab", 2) = 2 <0.000010>
201 1.004 execve("/bin/other", ["other"], 0x7f /* 1 var */ <pid changed to 200 ...>
200 1.005 +++ superseded by execve in pid 201 +++
200 1.006 <... execve resumed>) = 0 <0.002000>
200 1.007 write(3</w/f>, "cd", 2) = 2 <0.000010>
200 1.008 +++ killed by SIGSEGV (core dumped) +++
`
	_, evs, got := lines(t, Options{}, log)
	wantLines(t, got,
		"t0 exec /bin/prog = 0",
		"t0 clone = 1",
		"t0 openat /w/f fd=3 = 3",
		"t1 write /w/f fd=3 off=0 size=2 = 2",
		"t0 exit = 0",
		"t1 exec /bin/other = 0",
		"t1 write /w/f fd=3 off=2 size=2 = 2",
		"t1 exit = 139",
	)
	if f := evs[1].Flags; f != cloneFiles|cloneVM|cloneThrd {
		t.Errorf("clone flags %#x", f)
	}
	// The exec started when the thread called it.
	if e := evs[5]; e.Start != 4e6 || e.Dur != 2e6 {
		t.Errorf("exec %+v", e)
	}
}

// TestDecorations: -y decorations are the truth of which file a
// descriptor holds. A descriptor the log never showed opened becomes an
// inherit event (flags and position unknown); a descriptor the model has
// as another file, with no rename between, too; a rename changes the
// name without one.
func TestDecorations(t *testing.T) {
	const log = `300 1.000 write(1</w/out.txt>, "x", 1) = 1
300 1.001 openat(AT_FDCWD</w>, "a", O_RDWR|O_CREAT, 0644) = 3</w/a>
300 1.002 rename("/w/a", "/w/b") = 0
300 1.003 write(3</w/b>, "yy", 2) = 2
300 1.004 unlink("/w/b") = 0
300 1.005 write(3</w/b (deleted)>, "z", 1) = 1
300 1.0055 dup(3</w/b>(deleted)) = 4</w/b>(deleted)
300 1.0056 close(4</w/b>(deleted)) = 0
300 1.006 fcntl(1</w/out.txt>, F_SETFD, FD_CLOEXEC) = 0
300 1.007 read(3</w/c>, "", 8) = 0
300 1.008 write(1</dev/null>, "q", 1) = 1
`
	r, evs, got := lines(t, Options{}, log)
	wantLines(t, got,
		"t0 inherit /w/out.txt fd=1 = 1",
		"t0 write /w/out.txt fd=1 off=0 size=1 = 1",
		"t0 openat /w/a fd=3 = 3",
		"t0 rename /w/a -> /w/b = 0",
		"t0 write /w/a fd=3 off=0 size=2 = 2", // the description's path as opened
		"t0 unlink /w/b = 0",
		"t0 write /w/a fd=3 off=2 size=1 = 1",
		// strace 6 puts (deleted) after the decoration.
		"t0 dup /w/a fd=3 = 4",
		"t0 close /w/a fd=4 = 0",
		"t0 fcntl /w/out.txt fd=1 = 0",
		// Descriptor 3 holds another file than the one opened there: a
		// call the log lacks changed it.
		"t0 inherit /w/c fd=3 = 3",
		"t0 read /w/c fd=3 off=0 size=8 = 0",
	)
	if e := evs[0]; e.Offset != -1 || e.Flags != 0 {
		t.Errorf("inherit %+v", e)
	}
	if e := evs[9]; e.Flags != trace.FSetfd || e.Size != 1 {
		t.Errorf("fcntl %+v", e)
	}
	s := r.Stats()
	if s.Learnt != 1 || s.Resynced != 1 || s.Positions != 2 || s.Unchosen != 1 {
		t.Errorf("stats %+v", s)
	}
	notes := strings.Join(r.Notes(), "\n")
	for _, w := range []string{"1 descriptors the log does not show opened", "1 times a -y decoration named another file", "placed from offset 0"} {
		if !strings.Contains(notes, w) {
			t.Errorf("notes lack %q:\n%s", w, notes)
		}
	}
}

// TestDescriptorCalls: dup2 of a pipe onto a followed descriptor tells
// the follower it holds something else; F_SETFL's O_APPEND moves writes
// to the end of the file; preadv2 at offset -1 reads at the position and
// moves it; close_range closes followed descriptors; mmap of a file, its
// failure, its msync and munmap (by address); the copies at offsets and
// at positions.
func TestDescriptorCalls(t *testing.T) {
	const log = `400 1.000 openat(AT_FDCWD</w>, "f", O_RDWR|O_CREAT|O_TRUNC, 0644) = 3</w/f>
400 1.001 write(3</w/f>, "0123456789", 10) = 10
400 1.002 lseek(3</w/f>, 2, SEEK_SET) = 2
400 1.003 fcntl(3</w/f>, F_SETFL, O_APPEND|O_NONBLOCK) = 0
400 1.004 write(3</w/f>, "ab", 2) = 2
400 1.005 lseek(3</w/f>, 1, SEEK_SET) = 1
400 1.006 preadv2(3</w/f>, [{iov_base="234", iov_len=3}], 1, -1, RWF_NOWAIT) = 3
400 1.007 read(3</w/f>, "5", 1) = 1
400 1.008 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_SHARED, 3</w/f>, 0x1000) = 0x7f0000000000
400 1.009 mmap(NULL, 4096, PROT_READ, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x7f0000001000
400 1.010 mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, 3</w/f>, 0) = -1 EACCES (Permission denied)
400 1.0101 msync(0x7f0000000000, 4096, MS_SYNC) = 0
400 1.0102 munmap(0x7f0000001000, 4096) = 0
400 1.0103 munmap(0x7f0000000000, 4096) = 0
400 1.0104 msync(0x7f0000000000, 4096, MS_SYNC) = -1 ENOMEM (Cannot allocate memory)
400 1.0105 readahead(3</w/f>, 4096, 8192) = 0
400 1.011 openat(AT_FDCWD</w>, "g", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 4</w/g>
400 1.012 sendfile(4</w/g>, 3</w/f>, [2] => [6], 4) = 4
400 1.013 splice(5<pipe:[9]>, NULL, 4</w/g>, [100], 7, SPLICE_F_MOVE) = 7
400 1.014 copy_file_range(3</w/f>, NULL, 4</w/g>, NULL, 3, 0) = 3
400 1.015 dup2(5<pipe:[9]>, 4</w/g>) = 4<pipe:[9]>
400 1.016 write(4<pipe:[9]>, "p", 1) = 1
400 1.017 fallocate(3</w/f>, FALLOC_FL_KEEP_SIZE, 0, 8192) = 0
400 1.018 close_range(3, ~0U, 0) = 0
400 1.019 sendfile(5<pipe:[9]>, 6</w/h>, NULL, 2) = 2
400 1.020 write(5</w/now-a-file>, "x", 1) = 1
`
	_, evs, got := lines(t, Options{}, log)
	wantLines(t, got,
		"t0 openat /w/f fd=3 = 3",
		"t0 write /w/f fd=3 off=0 size=10 = 10",
		"t0 lseek /w/f fd=3 off=2 size=0 = 2",
		"t0 fcntl /w/f fd=3 = 0",
		"t0 write /w/f fd=3 off=10 size=2 = 2", // appended
		"t0 lseek /w/f fd=3 off=1 size=0 = 1",
		"t0 preadv2 /w/f fd=3 off=1 size=3 = 3",
		"t0 read /w/f fd=3 off=4 size=1 = 1",
		"t0 mmap /w/f fd=3 = 0",
		"t0 mmap /w/f fd=3 = -13",
		"t0 msync /w/f fd=-1 = 0",
		"t0 munmap /w/f fd=-1 = 0",
		"t0 readahead /w/f fd=3 = 0",
		"t0 openat /w/g fd=4 = 4",
		"t0 sendfile /w/f -> /w/g fd=3 off=2 size=4 = 4",
		"t0 splice -> /w/g fd=5 off=0 size=7 = 7",
		"t0 copy_file_range /w/f -> /w/g fd=3 off=5 size=3 = 3",
		"t0 dup2 fd=5 = 4", // no path: the pipe is not followed
		"t0 fallocate /w/f fd=3 = 0",
		"t0 close_range fd=3 = 0",
		// The pipe side of a copy has no path (a reader learns the
		// descriptor without one); a decoration that later names a file
		// there makes it that file.
		"t0 inherit /w/h fd=6 = 6",
		"t0 sendfile /w/h fd=6 off=0 size=2 = 2",
		"t0 inherit /w/now-a-file fd=5 = 5",
		"t0 write /w/now-a-file fd=5 off=0 size=1 = 1",
	)
	byOp := map[trace.Op]trace.Event{} // the first of each op
	for _, e := range evs {
		if _, ok := byOp[e.Op]; !ok {
			byOp[e.Op] = e
		}
	}
	if e := byOp[trace.OpFcntl]; e.Flags != trace.FSetfl || e.Size != trace.OAppend|0x800 {
		t.Errorf("fcntl %+v", e)
	}
	if e := evs[8]; e.Offset != 0x1000 || e.Size != 4096 || e.Mode != 3 || e.Flags != 1 {
		t.Errorf("mmap %+v", e)
	}
	if e := byOp[trace.OpSendfile]; e.FD2 != 4 || e.Flags != trace.CopyInAt || e.Offset2 != 0 {
		t.Errorf("sendfile %+v", e)
	}
	if e := byOp[trace.OpSplice]; e.FD2 != 4 || e.Flags != trace.CopyOutAt || e.Offset2 != 100 || e.Path != 0 {
		t.Errorf("splice %+v", e)
	}
	// The copy reads at f's position (after the read: 5) and writes at
	// g's (after sendfile's 4 bytes; splice wrote at an offset).
	if e := byOp[trace.OpCopyFileRange]; e.Offset2 != 4 || e.Flags != 0 {
		t.Errorf("copy_file_range %+v", e)
	}
	// msync and munmap name the mapping's file range; the munmap of
	// anonymous memory, and the msync after the unmap, are not events.
	if e := byOp[trace.OpMsync]; e.Offset != 0x1000 || e.Size != 4096 || e.Flags != 4 {
		t.Errorf("msync %+v", e)
	}
	if e := byOp[trace.OpMunmap]; e.Offset != 0x1000 || e.Size != 4096 {
		t.Errorf("munmap %+v", e)
	}
	if e := byOp[trace.OpReadahead]; e.Offset != 4096 || e.Size != 8192 {
		t.Errorf("readahead %+v", e)
	}
	if e := byOp[trace.OpFallocate]; e.Flags != 1 || e.Offset != 0 || e.Size != 8192 {
		t.Errorf("fallocate %+v", e)
	}
	if e := byOp[trace.OpCloseRange]; e.FD != 3 || e.Size != 1<<32-1 || e.Flags != 0 {
		t.Errorf("close_range %+v", e)
	}
}

// TestExitLines: exit statuses, signals by name and number, and the
// lines that are not exits.
func TestExitLines(t *testing.T) {
	for _, c := range []struct {
		in     string
		status int64
		err    string
	}{
		{"+++ exited with 3 +++", 3, ""},
		{"+++ killed by SIGKILL +++", 137, ""},
		{"+++ killed by SIGABRT (core dumped) +++", 134, ""},
		{"+++ killed by SIGRT_2 +++", 162, ""},
		{"+++ killed by SIG40 +++", 168, ""},
		{"+++ killed by SIGWHAT +++", 0, `unknown signal "SIGWHAT"`},
		{"+++ exited with x +++", 0, "bad exit status"},
	} {
		st, _, err := exitStatus(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || st != c.status {
			t.Errorf("%q: %d %v, want %d", c.in, st, err, c.status)
		}
	}
	_, _, err := read(t, Options{}, text("x.txt", "1 1.0 read(3, \"\", 1) = 0\n1 1.1 +++ killed by SIGNOPE +++\n"))
	if err == nil || err.Error() != `x.txt:2: unknown signal "SIGNOPE"` {
		t.Errorf("%v", err)
	}
}
