package posix

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/target"
	"golang.org/x/sys/unix"
)

// snapshot describes every entry below dir: type, size, mode, link
// target, content hash, modification time.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %v %d %d", strings.TrimPrefix(p, dir), fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			line += " -> " + l
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			line += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// setup makes a target directory full of traps that point at a sentinel
// directory beside it.
func setup(t *testing.T) (target, outside string) {
	t.Helper()
	base := t.TempDir()
	target, outside = filepath.Join(base, "target"), filepath.Join(base, "outside")
	for _, d := range []string{target, outside, filepath.Join(outside, "sub")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("do not touch"), 0o644); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(outside, filepath.Join(target, "abs")))                      // absolute symlink to a directory outside
	must(os.Symlink("../outside", filepath.Join(target, "rel")))                 // relative symlink that climbs out
	must(os.Symlink(secret, filepath.Join(target, "file")))                      // symlink to a file outside
	must(os.Symlink("../outside/new", filepath.Join(target, "dangling")))        // dangling, would create outside
	must(os.Symlink("sub/../../outside/secret", filepath.Join(target, "twist"))) // climbs out through ..
	must(os.Mkdir(filepath.Join(target, "sub"), 0o755))
	must(os.Link(secret, filepath.Join(target, "hard"))) // same file as secret
	must(unix.Mkfifo(filepath.Join(target, "fifo"), 0o644))
	return target, outside
}

func newExec(t *testing.T, opts Options) (*Backend, *rankExec) {
	t.Helper()
	b, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	x, err := b.Rank(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return b, x.(*rankExec)
}

func do(x *rankExec, e trace.Event, path, path2 string) (int64, replay.Skip) {
	return x.Do(&replay.Call{Ev: &e, Path: path, Path2: path2})
}

// TestNothingOutsideChanges replays calls that every trap in the target
// would turn into changes outside, with openat2 and with the O_NOFOLLOW
// walk, with and without kept directories, and checks that the directory outside is byte for byte the same.
func TestNothingOutsideChanges(t *testing.T) {
	for _, o := range []Options{{}, {Walk: true}, {KeepDirs: true}, {Walk: true, KeepDirs: true}} {
		walk := o.Walk
		t.Run(fmt.Sprintf("walk=%v,keepdirs=%v", walk, o.KeepDirs), func(t *testing.T) {
			target, outside := setup(t)
			before := snapshot(t, outside)
			o.Target = target
			b, x := newExec(t, o)
			if !walk && !b.Beneath() {
				t.Log("openat2 unavailable: both runs use the walk")
			}
			var wr uint32 = trace.OWronly | trace.OCreat | trace.OTrunc
			fd := int64(10)
			open := func(p string, flags uint32) (int64, replay.Skip) {
				fd++
				return do(x, trace.Event{Op: trace.OpOpen, Flags: flags, Mode: 0o644, Ret: fd}, p, "")
			}
			// A FIFO is refused, not opened (which would block).
			if _, skip := open("fifo", trace.ORdonly); skip != replay.SkipNotRegular {
				t.Fatalf("open of a FIFO: skip %v", skip)
			}
			// A file with another link is refused for writing.
			if _, skip := open("hard", trace.OWronly); skip != replay.SkipHardLink {
				t.Fatalf("open of a hard link for writing: skip %v", skip)
			}
			// The symlinks out are refused.
			if _, skip := open("abs/secret", trace.ORdonly); skip != replay.SkipEscape {
				t.Fatalf("open through an absolute symlink: skip %v", skip)
			}
			if _, skip := do(x, trace.Event{Op: trace.OpUnlink}, "rel/secret", ""); skip != replay.SkipEscape {
				t.Fatalf("unlink through a relative symlink out: skip %v", skip)
			}
			for _, p := range []string{"abs/new", "abs/secret", "rel/secret", "rel/new", "file", "dangling", "twist", "abs/sub/x", "hard"} {
				ret, skip := open(p, wr)
				if ret >= 0 && skip == replay.NotSkipped {
					// Opened: it must be inside. Write through it.
					do(x, trace.Event{Op: trace.OpWrite, FD: int32(fd), Size: 100, Ret: 100}, "", "")
				}
				open(p, trace.ORdwr|trace.OAppend)
				do(x, trace.Event{Op: trace.OpPwrite, FD: int32(fd), Size: 100, Ret: 100}, "", "")
				do(x, trace.Event{Op: trace.OpFtruncate, FD: int32(fd)}, "", "")
			}
			for _, p := range []string{"abs/secret", "rel/secret", "file", "twist", "hard", "abs", "abs/sub"} {
				do(x, trace.Event{Op: trace.OpTruncate}, p, "")
				do(x, trace.Event{Op: trace.OpUnlink}, p, "")
				do(x, trace.Event{Op: trace.OpRmdir}, p, "")
				do(x, trace.Event{Op: trace.OpRename}, p, "moved")
				do(x, trace.Event{Op: trace.OpRename}, "sub", p)
				do(x, trace.Event{Op: trace.OpMkdir}, p+"/newdir", "")
				do(x, trace.Event{Op: trace.OpStat}, p, "")
				do(x, trace.Event{Op: trace.OpMPIFileOpen, FD: 1, Flags: trace.MPIModeCreate | trace.MPIModeWronly}, p, "")
				do(x, trace.Event{Op: trace.OpMPIFileWriteAt, FD: 1, Size: 10}, "", "")
				do(x, trace.Event{Op: trace.OpMPIFileSetSize, FD: 1}, "", "")
				do(x, trace.Event{Op: trace.OpMPIFileDelete}, p, "")
			}
			// Removing or renaming the target itself is refused.
			if _, skip := do(x, trace.Event{Op: trace.OpRmdir}, ".", ""); skip != replay.SkipTargetRoot {
				t.Fatalf("rmdir of the target: skip %v", skip)
			}
			x.Close()
			if after := snapshot(t, outside); after != before {
				t.Fatalf("outside changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			if _, err := os.Stat(target); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDescriptors checks the descriptor table: positions shared by dup,
// O_APPEND, seeks, standard streams, closes and reuse of numbers.
func TestDescriptors(t *testing.T) {
	dir := t.TempDir()
	_, x := newExec(t, Options{Target: dir})
	mustOK := func(ret int64, skip replay.Skip) int64 {
		t.Helper()
		if ret < 0 || skip != replay.NotSkipped {
			t.Fatalf("ret %d skip %v", ret, skip)
		}
		return ret
	}
	if ret := mustOK(do(x, trace.Event{Op: trace.OpOpen, Flags: trace.ORdwr | trace.OCreat | trace.OTrunc, Ret: 7}, "a", "")); ret != 7 {
		t.Fatalf("open returned %d, want the trace's descriptor 7", ret)
	}
	mustOK(do(x, trace.Event{Op: trace.OpWrite, FD: 7, Size: 10, Ret: 10}, "", ""))
	mustOK(do(x, trace.Event{Op: trace.OpWrite, FD: 7, Size: 10, Ret: 10}, "", ""))
	if off := mustOK(do(x, trace.Event{Op: trace.OpLseek, FD: 7, Offset: 5, Whence: 0}, "", "")); off != 5 {
		t.Fatalf("lseek returned %d", off)
	}
	mustOK(do(x, trace.Event{Op: trace.OpDup2, FD: 7, Ret: 9}, "", ""))
	mustOK(do(x, trace.Event{Op: trace.OpWrite, FD: 9, Size: 30, Ret: 30}, "", "")) // at 5, through the dup
	if off := mustOK(do(x, trace.Event{Op: trace.OpLseek, FD: 7, Whence: 1}, "", "")); off != 35 {
		t.Fatalf("position after a write through the dup: %d, want 35", off)
	}
	mustOK(do(x, trace.Event{Op: trace.OpClose, FD: 7}, "", ""))
	mustOK(do(x, trace.Event{Op: trace.OpPwrite, FD: 9, Offset: 100, Size: 5, Ret: 5}, "", ""))
	if n := len(readFile(t, filepath.Join(dir, "a"))); n != 105 {
		t.Fatalf("file has %d bytes, want 105", n)
	}
	if _, skip := do(x, trace.Event{Op: trace.OpWrite, FD: 7, Size: 1}, "", ""); skip != replay.SkipUnknownFD {
		t.Fatalf("write to a closed descriptor: skip %v", skip)
	}
	// O_APPEND: writes land at the end whatever the position.
	mustOK(do(x, trace.Event{Op: trace.OpOpen, Flags: trace.OWronly | trace.OAppend, Ret: 4}, "a", ""))
	mustOK(do(x, trace.Event{Op: trace.OpLseek, FD: 4, Offset: 0, Whence: 0}, "", ""))
	mustOK(do(x, trace.Event{Op: trace.OpWrite, FD: 4, Size: 7, Ret: 7}, "", ""))
	if n := len(readFile(t, filepath.Join(dir, "a"))); n != 112 {
		t.Fatalf("after an append the file has %d bytes, want 112", n)
	}
	// Standard streams are skipped until the trace closes one and opens a
	// file in its place.
	if _, skip := do(x, trace.Event{Op: trace.OpWrite, FD: 1, Size: 5, Ret: 5}, "", ""); skip != replay.SkipStdStream {
		t.Fatalf("write to stdout: skip %v", skip)
	}
	if _, skip := do(x, trace.Event{Op: trace.OpClose, FD: 1}, "", ""); skip != replay.SkipStdStream {
		t.Fatalf("close of stdout: skip %v", skip)
	}
	mustOK(do(x, trace.Event{Op: trace.OpOpen, Flags: trace.OWronly | trace.OCreat, Ret: 1}, "out1", ""))
	mustOK(do(x, trace.Event{Op: trace.OpWrite, FD: 1, Size: 5, Ret: 5}, "", ""))
	if n := len(readFile(t, filepath.Join(dir, "out1"))); n != 5 {
		t.Fatalf("file opened as descriptor 1 has %d bytes", n)
	}
	// A descriptor the trace never opened is skipped; so is one of /dev.
	if _, skip := do(x, trace.Event{Op: trace.OpRead, FD: 50, Size: 5}, "", ""); skip != replay.SkipUnknownFD {
		t.Fatalf("read of an unknown descriptor: skip %v", skip)
	}
	x.Do(&replay.Call{Ev: &trace.Event{Op: trace.OpOpen, Ret: 12}, PathSkip: replay.SkipSpecialPath})
	if _, skip := do(x, trace.Event{Op: trace.OpRead, FD: 12, Size: 5}, "", ""); skip != replay.SkipSpecialFD {
		t.Fatalf("read of /dev/zero's descriptor: skip %v", skip)
	}
	// A failed open leaves a descriptor whose calls fail with EBADF.
	if ret, _ := do(x, trace.Event{Op: trace.OpOpen, Flags: trace.ORdonly, Ret: 13}, "missing", ""); ret != -int64(unix.ENOENT) {
		t.Fatalf("open of a missing file: %d", ret)
	}
	if ret, _ := do(x, trace.Event{Op: trace.OpRead, FD: 13, Size: 5}, "", ""); ret != -int64(unix.EBADF) {
		t.Fatalf("read after a failed open: %d", ret)
	}
	// close_range closes what it covers.
	do(x, trace.Event{Op: trace.OpCloseRange, FD: 0, Size: 100}, "", "")
	if _, skip := do(x, trace.Event{Op: trace.OpWrite, FD: 9, Size: 1}, "", ""); skip != replay.SkipUnknownFD {
		t.Fatalf("write after close_range: skip %v", skip)
	}
}

func TestVectorAndMetadata(t *testing.T) {
	dir := t.TempDir()
	_, x := newExec(t, Options{Target: dir})
	do(x, trace.Event{Op: trace.OpMkdir, Mode: 0o755}, "d", "")
	if ret, _ := do(x, trace.Event{Op: trace.OpOpen, Flags: trace.ORdwr | trace.OCreat, Ret: 3}, "d/v", ""); ret != 3 {
		t.Fatalf("open: %d", ret)
	}
	if ret, _ := do(x, trace.Event{Op: trace.OpWritev, FD: 3, Count: 3, Size: 300}, "", ""); ret != 300 {
		t.Fatalf("writev: %d", ret)
	}
	if ret, _ := do(x, trace.Event{Op: trace.OpPwritev, FD: 3, Count: 2, Offset: 1000, Size: 24}, "", ""); ret != 24 {
		t.Fatalf("pwritev: %d", ret)
	}
	if ret, _ := do(x, trace.Event{Op: trace.OpPreadv, FD: 3, Count: 4, Offset: 0, Size: 2000}, "", ""); ret != 1024 {
		t.Fatalf("preadv to the end: %d, want 1024", ret)
	}
	data := readFile(t, filepath.Join(dir, "d/v"))
	if bytes.Count(data[:300], []byte{0}) > 20 {
		t.Fatal("written data is mostly zeros")
	}
	for _, c := range []struct {
		op          trace.Op
		path, path2 string
		want        int64
	}{
		{trace.OpStat, "d/v", "", 0},
		{trace.OpAccess, "d/v", "", 0},
		{trace.OpRename, "d/v", "d/w", 0},
		{trace.OpStat, "d/v", "", -int64(unix.ENOENT)},
		{trace.OpTruncate, "d/w", "", 0},
		{trace.OpUnlink, "d/w", "", 0},
		{trace.OpRmdir, "d", "", 0},
		{trace.OpLstat, "d", "", -int64(unix.ENOENT)},
	} {
		if ret, skip := do(x, trace.Event{Op: c.op, Size: 10}, c.path, c.path2); ret != c.want || skip != replay.NotSkipped {
			t.Fatalf("%v %s: %d %v, want %d", c.op, c.path, ret, skip, c.want)
		}
	}
}

// TestMPIIOView checks that MPI-IO calls go through the file view.
func TestMPIIOView(t *testing.T) {
	dir := t.TempDir()
	_, x := newExec(t, Options{Target: dir})
	do(x, trace.Event{Op: trace.OpMPIFileOpen, FD: 1, Flags: trace.MPIModeCreate | trace.MPIModeRdwr}, "m", "")
	do(x, trace.Event{Op: trace.OpMPIFileSetView, FD: 1, Offset: 100, Size: 10, Stride: 30}, "", "")
	if ret, _ := do(x, trace.Event{Op: trace.OpMPIFileWriteAtAll, FD: 1, Offset: 5, Size: 25}, "", ""); ret != 25 {
		t.Fatalf("write through the view: %d", ret)
	}
	do(x, trace.Event{Op: trace.OpMPIFileClose, FD: 1}, "", "")
	data := readFile(t, filepath.Join(dir, "m"))
	// View bytes 5..29 are file bytes 105–109, 130–139, 160–169.
	if len(data) != 170 {
		t.Fatalf("file of %d bytes, want 170", len(data))
	}
	for i, b := range data {
		in := i >= 105 && i < 110 || i >= 130 && i < 140 || i >= 160
		if !in && b != 0 {
			t.Fatalf("byte %d written outside the view", i)
		}
	}
	if _, skip := do(x, trace.Event{Op: trace.OpMPIFileWriteAt, FD: 1, Size: 5}, "", ""); skip != replay.SkipUnknownFD {
		t.Fatalf("write to a closed handle: skip %v", skip)
	}
}

func TestPrepare(t *testing.T) {
	dir := t.TempDir()
	b, err := New(Options{Target: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	os.WriteFile(filepath.Join(dir, "big"), bytes.Repeat([]byte("x"), 5000), 0o644)
	p := &target.Layout{Dirs: []string{"in", "in/deep"}, Files: []target.PrepFile{{Path: "in/deep/a", Size: 3 << 20}, {Path: "big", Size: 100}}}
	if err := b.Prepare(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	a := readFile(t, filepath.Join(dir, "in/deep/a"))
	if len(a) != 3<<20 || bytes.Count(a, []byte{0}) > len(a)/100 {
		t.Fatalf("prepared file: %d bytes, %d zeros", len(a), bytes.Count(a, []byte{0}))
	}
	if string(readFile(t, filepath.Join(dir, "big"))[:3]) != "xxx" {
		t.Fatal("a file already large enough was rewritten")
	}
	sp, _ := New(Options{Target: dir, Sparse: true})
	defer sp.Close()
	if err := sp.Prepare(context.Background(), &target.Layout{Files: []target.PrepFile{{Path: "sparse", Size: 1 << 30}}}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "sparse")); fi.Size() != 1<<30 {
		t.Fatal("sparse file has the wrong size")
	}
}

// TestDataCallsDoNotAllocate checks the backend's hot path.
func TestDataCallsDoNotAllocate(t *testing.T) {
	dir := t.TempDir()
	_, x := newExec(t, Options{Target: dir})
	do(x, trace.Event{Op: trace.OpOpen, Flags: trace.ORdwr | trace.OCreat, Ret: 3}, "f", "")
	calls := []trace.Event{
		{Op: trace.OpPwrite, FD: 3, Offset: 4096, Size: 4096},
		{Op: trace.OpPread, FD: 3, Offset: 0, Size: 4096},
		{Op: trace.OpWrite, FD: 3, Size: 100},
		{Op: trace.OpRead, FD: 3, Size: 100},
		{Op: trace.OpPwritev, FD: 3, Count: 4, Size: 4096},
		{Op: trace.OpLseek, FD: 3, Offset: 0},
	}
	c := &replay.Call{}
	for i := range calls {
		c.Ev = &calls[i]
		x.Do(c)
	}
	allocs := testing.AllocsPerRun(50, func() {
		for i := range calls {
			c.Ev = &calls[i]
			if ret, skip := x.Do(c); ret < 0 || skip != replay.NotSkipped {
				t.Fatalf("%v: %d %v", calls[i].Op, ret, skip)
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per round of data calls", allocs)
	}
}

// threadSyscalls returns the read and write system calls of this thread
// so far (/proc/thread-self/io), less those of reading the file itself.
func threadSyscalls(t *testing.T) (r, w int64) {
	t.Helper()
	b, err := os.ReadFile("/proc/thread-self/io")
	if err != nil {
		t.Skipf("no per-thread I/O counts: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		var v int64
		if _, err := fmt.Sscanf(line, "syscr: %d", &v); err == nil {
			r = v
		}
		if _, err := fmt.Sscanf(line, "syscw: %d", &v); err == nil {
			w = v
		}
	}
	return r, w
}

// TestLargeCallsAreOneSystemCall checks that a read or write larger than
// a slice of the pattern is still one system call (a vector call over
// several slices), at the recorded offset or the file position, and
// that the data it writes does not repeat block for block.
func TestLargeCallsAreOneSystemCall(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dir := t.TempDir()
	_, x := newExec(t, Options{Target: dir})
	do(x, trace.Event{Op: trace.OpOpen, Flags: trace.ORdwr | trace.OCreat, Ret: 3}, "big", "")
	r0, w0 := threadSyscalls(t)
	r1, w1 := threadSyscalls(t)
	dr, dw := r1-r0, w1-w0 // what reading the counts costs
	count := func(e trace.Event, want int64) (reads, writes int64) {
		t.Helper()
		a, b := threadSyscalls(t)
		ret, skip := do(x, e, "", "")
		c, d := threadSyscalls(t)
		if ret != want || skip != replay.NotSkipped {
			t.Fatalf("%v of %d bytes: %d %v, want %d", e.Op, e.Size, ret, skip, want)
		}
		return c - a - dr, d - b - dw
	}
	const big = 3<<20 + 100
	for _, c := range []struct {
		e      trace.Event
		want   int64
		reads  int64
		writes int64
	}{
		{trace.Event{Op: trace.OpPwrite, FD: 3, Offset: 4096, Size: big}, big, 0, 1},
		{trace.Event{Op: trace.OpWrite, FD: 3, Size: 2 << 20}, 2 << 20, 0, 1}, // at position 0
		{trace.Event{Op: trace.OpPread, FD: 3, Offset: 0, Size: big}, big, 1, 0},
		{trace.Event{Op: trace.OpRead, FD: 3, Size: big}, big + 4096 - 2<<20, 1, 0}, // from 2 MiB to the end
		{trace.Event{Op: trace.OpPwritev, FD: 3, Count: 3, Offset: 0, Size: big}, big, 0, 1},
		{trace.Event{Op: trace.OpPreadv2, FD: 3, Count: 2, Offset: -1, Size: 100}, 0, 1, 0}, // at the position: the end
	} {
		if r, w := count(c.e, c.want); r != c.reads || w != c.writes {
			t.Errorf("%v of %d bytes: %d reads, %d writes; want %d and %d", c.e.Op, c.e.Size, r, w, c.reads, c.writes)
		}
	}
	data := readFile(t, filepath.Join(dir, "big"))
	if len(data) != 4096+big {
		t.Fatalf("file of %d bytes, want %d", len(data), 4096+big)
	}
	seen := map[[sha256.Size]byte]int{}
	for off := 0; off+4096 <= len(data); off += 4096 {
		h := sha256.Sum256(data[off : off+4096])
		if prev, ok := seen[h]; ok {
			t.Fatalf("blocks at %d and %d are equal", prev, off)
		}
		seen[h] = off
	}
}

// TestSyncTruncateAndDirect checks fsync, fdatasync and ftruncate on a
// replayed descriptor, and that --direct opens with O_DIRECT: aligned
// calls work from the aligned pattern and read buffer, an unaligned one
// fails as O_DIRECT makes it.
func TestSyncTruncateAndDirect(t *testing.T) {
	dir := t.TempDir()
	_, x := newExec(t, Options{Target: dir})
	do(x, trace.Event{Op: trace.OpOpen, Flags: trace.ORdwr | trace.OCreat, Ret: 3}, "s", "")
	for _, e := range []trace.Event{
		{Op: trace.OpPwrite, FD: 3, Offset: 0, Size: 10000},
		{Op: trace.OpFsync, FD: 3},
		{Op: trace.OpFdatasync, FD: 3},
		{Op: trace.OpFtruncate, FD: 3, Size: 777},
	} {
		if ret, skip := do(x, e, "", ""); ret < 0 || skip != replay.NotSkipped {
			t.Fatalf("%v: %d %v", e.Op, ret, skip)
		}
	}
	if n := len(readFile(t, filepath.Join(dir, "s"))); n != 777 {
		t.Fatalf("after ftruncate the file has %d bytes", n)
	}

	_, d := newExec(t, Options{Target: dir, Direct: true})
	ret, _ := do(d, trace.Event{Op: trace.OpOpen, Flags: trace.ORdwr | trace.OCreat, Ret: 3}, "d", "")
	if ret == -int64(unix.EINVAL) {
		t.Skip("the file system of the test directory has no O_DIRECT")
	}
	fd := d.st.Lookup(0, 3).Aux.fd
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err != nil || fl&unix.O_DIRECT == 0 {
		t.Fatalf("flags %#x, %v: no O_DIRECT", fl, err)
	}
	for _, e := range []trace.Event{
		{Op: trace.OpPwrite, FD: 3, Offset: 4096, Size: 8192},
		{Op: trace.OpWrite, FD: 3, Size: 3 << 20}, // a vector call of aligned slices
		{Op: trace.OpPread, FD: 3, Offset: 0, Size: 3 << 20},
		{Op: trace.OpPwritev, FD: 3, Count: 2, Offset: 8192, Size: 8192},
	} {
		if ret, _ := do(d, e, "", ""); ret != e.Size {
			t.Fatalf("aligned %v of %d bytes under O_DIRECT: %d", e.Op, e.Size, ret)
		}
	}
	if ret, _ := do(d, trace.Event{Op: trace.OpPwrite, FD: 3, Offset: 100, Size: 100}, "", ""); ret != -int64(unix.EINVAL) {
		t.Logf("an unaligned write under O_DIRECT returned %d (this file system accepts it)", ret)
	}
}

// TestFixedData checks --data fixed: every write has the same bytes, not
// zeros.
func TestFixedData(t *testing.T) {
	dir := t.TempDir()
	_, x := newExec(t, Options{Target: dir, FixedData: true})
	do(x, trace.Event{Op: trace.OpOpen, Flags: trace.OWronly | trace.OCreat, Ret: 3}, "f", "")
	for i := int64(0); i < 3; i++ {
		do(x, trace.Event{Op: trace.OpPwrite, FD: 3, Offset: i * 4096, Size: 4096}, "", "")
	}
	data := readFile(t, filepath.Join(dir, "f"))
	if !bytes.Equal(data[:4096], data[4096:8192]) || !bytes.Equal(data[:4096], data[8192:]) {
		t.Fatal("fixed data differs between writes")
	}
	if bytes.Count(data, []byte{0}) > len(data)/100 {
		t.Fatal("fixed data is mostly zeros")
	}
}

// mapper is a replay.PathMapper over a path table whose paths are
// already relative to the target.
type mapper struct{ p *trace.Paths }

func (m mapper) MapPath(id trace.PathID) (string, replay.Skip) {
	s := m.p.Lookup(id)
	if s == "" {
		return "", replay.SkipUnknownFD
	}
	if strings.HasPrefix(s, "/dev/") {
		return "", replay.SkipSpecialPath
	}
	return s, replay.NotSkipped
}

func (m mapper) TracePath(id trace.PathID) string { return m.p.Lookup(id) }

// doP replays e with the path table p: its paths go to the target as they
// are.
func doP(x *rankExec, p *trace.Paths, e trace.Event) (int64, replay.Skip) {
	m := mapper{p}
	c := &replay.Call{Ev: &e, Paths: m}
	if e.Path != 0 {
		c.Path, _ = m.MapPath(e.Path)
	}
	if e.Path2 != 0 {
		c.Path2, _ = m.MapPath(e.Path2)
	}
	return x.Do(c)
}

// TestProcessesKeepTheirTables replays what the programs did that
// a replay with one descriptor table per rank got wrong: a shell whose
// child opens its own descriptor 3 (sh -c 'exec 3>a.txt; (exec 3>b.txt;
// echo child >&3); echo parent >&3'), and tar's gzip child, which writes
// the archive through its standard output, a dup of the archive's
// descriptor.
func TestProcessesKeepTheirTables(t *testing.T) {
	dir := t.TempDir()
	_, x := newExec(t, Options{Target: dir})
	p := trace.NewPaths()
	a, b, arc := p.Intern("a.txt"), p.Intern("b.txt"), p.Intern("x.tgz")
	wr := uint32(trace.OWronly | trace.OCreat | trace.OTrunc)
	for _, e := range []trace.Event{
		{Op: trace.OpOpenat, Path: a, Flags: wr, Mode: 0o666, Ret: 3},
		{Op: trace.OpFork, Ret: 1},
		{Op: trace.OpOpenat, Thread: 1, Path: b, Flags: wr, Mode: 0o666, Ret: 4},
		{Op: trace.OpFcntl, Thread: 1, FD: 3, Flags: trace.FDupfd, Size: 10, Ret: 11},
		{Op: trace.OpClose, Thread: 1, FD: 3},
		{Op: trace.OpDup2, Thread: 1, FD: 4, Ret: 3},
		{Op: trace.OpClose, Thread: 1, FD: 4},
		{Op: trace.OpClose, Thread: 1, FD: 11},
		{Op: trace.OpDup2, Thread: 1, FD: 3, Ret: 1},
		{Op: trace.OpWrite, Thread: 1, FD: 1, Size: 6, Ret: 6},
		{Op: trace.OpExit, Thread: 1},
		{Op: trace.OpDup2, FD: 3, Ret: 1},
		{Op: trace.OpWrite, FD: 1, Size: 7, Ret: 7},
		// tar: the archive, a child that writes it through stdout.
		{Op: trace.OpOpenat, Path: arc, Flags: wr, Ret: 5},
		{Op: trace.OpFork, Ret: 2},
		{Op: trace.OpDup2, Thread: 2, FD: 5, Ret: 1},
		{Op: trace.OpClose, Thread: 2, FD: 5},
		{Op: trace.OpExec, Thread: 2, Path: p.Intern("/bin/gzip")},
		{Op: trace.OpWrite, Thread: 2, FD: 1, Size: 4000, Ret: 4000},
		{Op: trace.OpWrite, Thread: 2, FD: 1, Size: 96, Ret: 96},
		{Op: trace.OpExit, Thread: 2},
		{Op: trace.OpClose, FD: 5},
	} {
		if ret, skip := doP(x, p, e); ret < 0 || skip != replay.NotSkipped {
			t.Fatalf("%v (thread %d fd %d): %d, %v", e.Op, e.Thread, e.FD, ret, skip)
		}
	}
	for name, want := range map[string]int{"a.txt": 7, "b.txt": 6, "x.tgz": 4096} {
		if n := len(readFile(t, filepath.Join(dir, name))); n != want {
			t.Errorf("%s has %d bytes, want %d", name, n, want)
		}
	}
}

// TestOpenFlagsTheProgramsUsed: directories open as directories, O_PATH
// opens work (and their closes), and a trace whose opens carry O_DIRECT
// writes with aligned buffers without --direct.
func TestOpenFlagsTheProgramsUsed(t *testing.T) {
	dir := t.TempDir()
	_, x := newExec(t, Options{Target: dir})
	p := trace.NewPaths()
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	const oDirectory, oPath, oCloexec = 0x10000, 0x200000, 0x80000
	d := p.Intern("d")
	for _, e := range []trace.Event{
		{Op: trace.OpOpenat, Path: d, Flags: trace.ORdonly | oDirectory | oCloexec | 0x800, Ret: 3},
		{Op: trace.OpGetdents, FD: 3, Size: 32768, Ret: 48},
		{Op: trace.OpFstat, FD: 3},
		{Op: trace.OpClose, FD: 3},
		{Op: trace.OpOpenat, Path: d, Flags: oPath | oDirectory | oCloexec, Ret: 4},
		{Op: trace.OpClose, FD: 4},
	} {
		if ret, skip := doP(x, p, e); ret < 0 || skip != replay.NotSkipped {
			t.Fatalf("%v flags %s: %d (%s), %v", e.Op, trace.FormatOpenFlags(e.Flags), ret, trace.Errno(ret), skip)
		}
	}
	f := p.Intern("direct.dat")
	ret, _ := doP(x, p, trace.Event{Op: trace.OpOpen, Path: f, Flags: trace.ORdwr | trace.OCreat | trace.ODirect, Ret: 5})
	if ret == -int64(unix.EINVAL) {
		t.Skip("the test directory's file system has no O_DIRECT")
	}
	for _, e := range []trace.Event{
		{Op: trace.OpPwrite, FD: 5, Offset: 0, Size: 8192, Ret: 8192},
		{Op: trace.OpWrite, FD: 5, Offset: 8192, Size: 4096, Ret: 4096},
		{Op: trace.OpPread, FD: 5, Offset: 0, Size: 4096, Ret: 4096},
	} {
		if ret, _ := doP(x, p, e); ret != e.Ret {
			t.Fatalf("%v under the trace's O_DIRECT: %d (%s)", e.Op, ret, trace.Errno(ret))
		}
	}
}

// TestSpecialFilesNotOpened: a FIFO in the target with a writer waiting
// for a reader is never opened, by a replayed open, a truncate by name,
// an MPI open or the prepare phase: opening it would release the writer
// and throw its data away.
func TestSpecialFilesNotOpened(t *testing.T) {
	for _, rel := range []string{"fifo", "d/fifo"} {
		for _, keep := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s,keepdirs=%v", rel, keep), func(t *testing.T) { testSpecialFileNotOpened(t, rel, keep) })
		}
	}
}

func testSpecialFileNotOpened(t *testing.T, rel string, keep bool) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, rel)
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	released := make(chan error, 1)
	go func() {
		fd, err := unix.Open(fifo, unix.O_WRONLY, 0) // blocks until a reader opens it
		if err == nil {
			unix.Close(fd)
		}
		released <- err
	}()
	b, x := newExec(t, Options{Target: dir, KeepDirs: keep})
	if err := b.Prepare(context.Background(), &target.Layout{Files: []target.PrepFile{{Path: rel, Size: 10}}}); err != nil {
		t.Fatal(err)
	}
	if len(b.Conflicts()) != 1 {
		t.Errorf("prepare: conflicts %q, want the FIFO's", b.Conflicts())
	}
	for _, e := range []trace.Event{
		{Op: trace.OpOpen, Flags: trace.ORdonly, Ret: 5},
		{Op: trace.OpOpen, Flags: trace.ORdwr, Ret: 6},
		{Op: trace.OpOpen, Flags: trace.OWronly | trace.OCreat, Ret: 7},
		{Op: trace.OpOpenat, Flags: trace.ORdwr | trace.OCreat | trace.OTrunc, Ret: 8},
		{Op: trace.OpCreat, Ret: 9},
		{Op: trace.OpTruncate, Size: 0},
		{Op: trace.OpMPIFileOpen, Flags: trace.MPIModeRdonly, FD: 1, Comm: trace.CommSelf},
		{Op: trace.OpMPIFileOpen, Flags: trace.MPIModeWronly | trace.MPIModeCreate, FD: 2, Comm: trace.CommSelf},
	} {
		if _, skip := do(x, e, rel, ""); skip != replay.SkipNotRegular {
			t.Errorf("%v %s of a FIFO: skip %v, want %v", e.Op, trace.FormatFlags(e.Op, e.Flags), skip, replay.SkipNotRegular)
		}
	}
	// An exclusive create finds the name taken, as the program would have.
	if ret, skip := do(x, trace.Event{Op: trace.OpOpen, Flags: trace.OWronly | trace.OCreat | trace.OExcl, Ret: 10}, rel, ""); ret != -int64(unix.EEXIST) || skip != replay.NotSkipped {
		t.Errorf("O_CREAT|O_EXCL open of a FIFO: %d (%s), skip %v; want EEXIST", ret, trace.Errno(ret), skip)
	}
	time.Sleep(50 * time.Millisecond) // a released writer would have returned
	select {
	case err := <-released:
		t.Fatalf("the FIFO's writer was released (open: %v)", err)
	default:
	}
	fd, err := unix.Open(fifo, unix.O_RDONLY, 0) // let the writer go
	if err != nil {
		t.Fatal(err)
	}
	<-released
	unix.Close(fd)
}

// TestCreateLooksAtNothing: an open that creates its file is one open
// (no look before it, no fstat after it), with openat2 and with the
// O_NOFOLLOW walk, with and without kept directories; an O_CREAT open of a name that exists still looks:
// a file with another hard link is not written (nor truncated), an
// existing file is truncated by O_TRUNC, and an exclusive create finds
// the name taken without looking.
func TestCreateLooksAtNothing(t *testing.T) {
	var looks []string
	looked = func(what string) { looks = append(looks, what) }
	t.Cleanup(func() { looked = nil })
	for _, o := range []Options{{}, {Walk: true}, {KeepDirs: true}, {Walk: true, KeepDirs: true}} {
		t.Run(fmt.Sprintf("walk=%v,keepdirs=%v", o.Walk, o.KeepDirs), func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "sub", "old"), []byte("old data"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "a"), []byte("linked"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "sub", "hard")); err != nil {
				t.Fatal(err)
			}
			o.Target = dir
			_, x := newExec(t, o)
			open := func(flags uint32, rel string, fd int32) (int64, replay.Skip) {
				t.Helper()
				looks = looks[:0]
				return do(x, trace.Event{Op: trace.OpOpenat, Flags: flags, Mode: 0o600, Ret: int64(fd)}, rel, "")
			}
			for i, flags := range []uint32{trace.OWronly | trace.OCreat | trace.OTrunc, trace.ORdwr | trace.OCreat, trace.OWronly | trace.OCreat | trace.OExcl} {
				rel := fmt.Sprintf("sub/new%d", i)
				if ret, skip := open(flags, rel, 3); ret != 3 || skip != replay.NotSkipped {
					t.Fatalf("create %s (%s): %d (%s), skip %v", rel, trace.FormatOpenFlags(flags), ret, trace.Errno(ret), skip)
				}
				if len(looks) != 0 {
					t.Errorf("create %s (%s) looked first or after: %q", rel, trace.FormatOpenFlags(flags), looks)
				}
				if ret, _ := do(x, trace.Event{Op: trace.OpWrite, FD: 3, Size: 5, Ret: 5}, "", ""); ret != 5 {
					t.Fatalf("write to the new file: %d (%s)", ret, trace.Errno(ret))
				}
				do(x, trace.Event{Op: trace.OpClose, FD: 3}, "", "")
				if fi, err := os.Stat(filepath.Join(dir, rel)); err != nil || !fi.Mode().IsRegular() || fi.Size() != 5 || fi.Mode().Perm()&^0o600 != 0 {
					t.Fatalf("created %s: %v, %v", rel, fi, err)
				}
			}
			if ret, skip := open(trace.OWronly|trace.OCreat|trace.OExcl, "sub/old", 4); ret != -int64(unix.EEXIST) || skip != replay.NotSkipped || len(looks) != 0 {
				t.Errorf("O_EXCL create of an existing file: %d (%s), skip %v, looked at %q; want EEXIST, no look", ret, trace.Errno(ret), skip, looks)
			}
			for _, flags := range []uint32{trace.OWronly | trace.OCreat, trace.ORdwr | trace.OCreat | trace.OTrunc} {
				if _, skip := open(flags, "sub/hard", 4); skip != replay.SkipHardLink {
					t.Errorf("%s of a hard-linked file: skip %v, want %v", trace.FormatOpenFlags(flags), skip, replay.SkipHardLink)
				}
				if len(looks) != 2 {
					t.Errorf("%s of a hard-linked file looked at %q, want a probe and a check", trace.FormatOpenFlags(flags), looks)
				}
			}
			if b := readFile(t, filepath.Join(dir, "a")); string(b) != "linked" {
				t.Errorf("the hard-linked file holds %q", b)
			}
			if ret, skip := open(trace.OWronly|trace.OCreat|trace.OTrunc, "sub/old", 4); ret != 4 || skip != replay.NotSkipped {
				t.Fatalf("O_CREAT|O_TRUNC of an existing file: %d (%s), skip %v", ret, trace.Errno(ret), skip)
			}
			do(x, trace.Event{Op: trace.OpClose, FD: 4}, "", "")
			if b := readFile(t, filepath.Join(dir, "sub", "old")); len(b) != 0 {
				t.Errorf("O_CREAT|O_TRUNC left %q in the existing file", b)
			}
		})
	}
}

// TestKeptDirectories: with KeepDirs, a rank's calls one directory down
// reuse the directory it kept (and those resolved through a symbolic link
// are not kept); a rename or directory removal by any rank makes every
// rank resolve its paths again, so that a name another rank moved — or
// replaced with a symbolic link out of the target — is not used through
// the old directory; at most maxHeld descriptors are kept over all ranks,
// and a rank's Close gives them back.
func TestKeptDirectories(t *testing.T) {
	for _, walk := range []bool{false, true} {
		t.Run(fmt.Sprintf("walk=%v", walk), func(t *testing.T) {
			target, outside := setup(t)
			before := snapshot(t, outside)
			b, err := New(Options{Target: target, Walk: walk, KeepDirs: true})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			rank := func() *rankExec {
				x, err := b.Rank(0, 2)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { x.Close() })
				return x.(*rankExec)
			}
			x, y := rank(), rank()
			ok := func(x *rankExec, op trace.Op, p, p2 string) {
				t.Helper()
				if ret, skip := do(x, trace.Event{Op: op, Mode: 0o755}, p, p2); ret < 0 || skip != replay.NotSkipped {
					t.Fatalf("%v %s %s: %d (%s), skip %v", op, p, p2, ret, trace.Errno(ret), skip)
				}
			}
			exists := func(p string, want bool) {
				t.Helper()
				if _, err := os.Lstat(filepath.Join(target, p)); (err == nil) != want {
					t.Errorf("%s: %v, want it there: %v", p, err, want)
				}
			}
			ok(x, trace.OpMkdir, "sub/a", "")
			ok(x, trace.OpMkdir, "sub/b", "")
			ok(x, trace.OpStat, "sub/a", "")
			ok(x, trace.OpLstat, "sub/b", "")
			if x.dirs.n != 1 || x.dirs.e[0].dir != "sub" || b.root.held.Load() != 1 {
				t.Fatalf("after four calls in sub: kept %d (%q), held %d; want sub kept", x.dirs.n, x.dirs.e[0].dir, b.root.held.Load())
			}
			// Through a symlink: resolved every time, not kept.
			ok(x, trace.OpSymlink, "sub/a/l", "") // l -> .
			if walk {
				// The walk follows no symlink: the mkdir is refused.
				if _, skip := do(x, trace.Event{Op: trace.OpMkdir, Mode: 0o755}, "sub/a/l/e", ""); skip != replay.SkipEscape {
					t.Errorf("the walk's mkdir through a symlink: skip %v, want %v", skip, replay.SkipEscape)
				}
			} else {
				ok(x, trace.OpMkdir, "sub/a/l/e", "")
			}
			exists("sub/a/e", !walk)
			if _, skip := do(x, trace.Event{Op: trace.OpLstat}, "abs/secret", ""); skip != replay.SkipEscape {
				t.Errorf("lstat through a link out: skip %v", skip)
			}
			if x.dirs.n != 4 || b.root.held.Load() != 2 || x.dirs.e[0].dir != "abs" || x.dirs.e[0].fd != -1 || x.dirs.e[1].dir != "sub/a/l" || x.dirs.e[1].fd != -1 {
				t.Fatalf("kept %+v (%d held), want abs and sub/a/l as links, sub/a and sub open", x.dirs.e, b.root.held.Load())
			}
			// Opens in a kept directory: a create, an open of what exists,
			// one through a symlink (which the kernel resolves).
			for i, c := range []struct {
				p     string
				flags uint32
			}{{"sub/f", trace.OWronly | trace.OCreat | trace.OTrunc}, {"sub/f", trace.ORdwr}, {"sub/f", trace.OWronly | trace.OCreat | trace.OTrunc}, {"sub/lf", trace.ORdonly}} {
				if i == 3 {
					if err := os.Symlink("f", filepath.Join(target, "sub", "lf")); err != nil {
						t.Fatal(err)
					}
					if walk {
						if _, skip := do(x, trace.Event{Op: trace.OpOpen, Flags: c.flags, Ret: 20}, c.p, ""); skip != replay.SkipEscape {
							t.Errorf("the walk opened through a symlink: skip %v", skip)
						}
						continue // it follows none
					}
				}
				if ret, skip := do(x, trace.Event{Op: trace.OpOpen, Flags: c.flags, Ret: 20}, c.p, ""); ret != 20 || skip != replay.NotSkipped {
					t.Fatalf("open %s %s: %d (%s), skip %v", c.p, trace.FormatOpenFlags(c.flags), ret, trace.Errno(ret), skip)
				}
				do(x, trace.Event{Op: trace.OpWrite, FD: 20, Size: 3, Ret: 3}, "", "")
				do(x, trace.Event{Op: trace.OpClose, FD: 20}, "", "")
			}
			if fi, err := os.Stat(filepath.Join(target, "sub", "f")); err != nil || fi.Size() != 3 {
				t.Fatalf("sub/f: %v, %v; want 3 bytes", fi, err)
			}
			// Another rank renames sub and moves the trap "rel" (../outside)
			// into its place: x must not use its old sub, nor get out.
			ok(y, trace.OpRename, "sub", "sub2")
			ok(y, trace.OpRename, "rel", "sub")
			for _, flags := range []uint32{trace.ORdonly, trace.OWronly | trace.OCreat | trace.OTrunc} {
				if ret, skip := do(x, trace.Event{Op: trace.OpOpen, Flags: flags, Ret: 21}, "sub/secret", ""); skip != replay.SkipEscape {
					t.Errorf("open sub/secret %s after sub became a link out: %d (%s), skip %v; want it refused", trace.FormatOpenFlags(flags), ret, trace.Errno(ret), skip)
				}
			}
			if ret, skip := do(x, trace.Event{Op: trace.OpMkdir, Mode: 0o755}, "sub/c", ""); skip != replay.SkipEscape {
				t.Errorf("mkdir sub/c after sub became a link out: %d (%s), skip %v; want it refused", ret, trace.Errno(ret), skip)
			}
			exists("sub2/c", false)
			// Symlinks out in a kept directory: an open there (create or
			// not) leaves them to the kernel, which refuses them.
			for name, to := range map[string]string{"dangling": "../../outside/new", "file": filepath.Join(outside, "secret"), "up": "../../outside"} {
				if err := os.Symlink(to, filepath.Join(target, "sub2", name)); err != nil {
					t.Fatal(err)
				}
			}
			ok(x, trace.OpStat, "sub2/a", "")
			for _, p := range []string{"sub2/dangling", "sub2/file", "sub2/up/secret", "sub2/up/new"} {
				for _, flags := range []uint32{trace.OWronly | trace.OCreat | trace.OTrunc, trace.ORdwr, trace.OWronly | trace.OCreat | trace.OExcl} {
					ret, skip := do(x, trace.Event{Op: trace.OpOpen, Flags: flags, Ret: 22}, p, "")
					if skip != replay.SkipEscape && !(flags&trace.OExcl != 0 && ret == -int64(unix.EEXIST)) && !(walk && ret < 0) {
						t.Errorf("open %s %s in a kept directory: %d (%s), skip %v; want it refused", p, trace.FormatOpenFlags(flags), ret, trace.Errno(ret), skip)
					}
				}
				do(x, trace.Event{Op: trace.OpTruncate}, p, "")
				do(x, trace.Event{Op: trace.OpMkdir}, p+"/d", "")
			}
			// A directory removed and made again is the new one.
			ok(x, trace.OpMkdir, "sub2/b/q", "")
			ok(y, trace.OpRmdir, "sub2/b/q", "")
			ok(y, trace.OpRmdir, "sub2/b", "")
			ok(y, trace.OpMkdir, "sub2/b", "")
			ok(x, trace.OpMkdir, "sub2/b/c", "")
			exists("sub2/b/c", true)
			// A rank's own rename too: the file goes where the name leads now.
			ok(x, trace.OpStat, "sub2/b/c", "")
			ok(x, trace.OpRename, "sub2/b", "sub2/bb")
			ok(x, trace.OpMkdir, "sub2/b", "")
			ok(x, trace.OpMkdir, "sub2/b/d", "")
			exists("sub2/b/d", true)
			exists("sub2/bb/d", false)
			// At most four a rank; at most maxHeld over all ranks.
			for i := range 6 {
				ok(x, trace.OpMkdir, fmt.Sprintf("sub2/m%d", i), "")
				ok(x, trace.OpMkdir, fmt.Sprintf("sub2/m%d/n", i), "")
			}
			if x.dirs.n != 4 {
				t.Errorf("a rank kept %d directories, want 4", x.dirs.n)
			}
			y.dirs.drop(b.root)
			b.root.maxHeld = b.root.held.Load()
			for i := range 4 {
				ok(y, trace.OpMkdir, fmt.Sprintf("sub2/m%d/y", i), "")
				exists(fmt.Sprintf("sub2/m%d/y", i), true)
			}
			if y.dirs.n != 0 || b.root.held.Load() != 4 {
				t.Errorf("over the limit: the second rank kept %d, %d held; want 0 and 4", y.dirs.n, b.root.held.Load())
			}
			// Another rank's rename between a call's two directories
			// closes neither.
			d1, _, rel1, err := x.parent("sub2/m0/x")
			if err != nil {
				t.Fatal(err)
			}
			b.root.moved()
			d2, _, rel2, err := x.secondParent("sub2/m1/y")
			if err != nil {
				t.Fatal(err)
			}
			for _, fd := range []int{d1, d2} {
				if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
					t.Errorf("a directory the call holds was closed: %v", err)
				}
			}
			rel1()
			rel2()
			x.Close()
			y.Close()
			if h := b.root.held.Load(); h != 0 {
				t.Errorf("%d descriptors held after the ranks closed", h)
			}
			if after := snapshot(t, outside); after != before {
				t.Fatalf("outside changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// TestKeptDirectoriesRanks: ranks that make, use, rename and remove
// directories at once, each keeping its own while the others' renames
// and removals make it resolve them again, find every file where the
// trace put it (go test -race watches the shared counters).
func TestKeptDirectoriesRanks(t *testing.T) {
	dir := t.TempDir()
	b, err := New(Options{Target: dir, KeepDirs: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const ranks, rounds = 4, 100
	run := func(i int, x *rankExec) error {
		top := fmt.Sprintf("r%d", i)
		type step struct {
			op    trace.Op
			flags uint32
			p, p2 string
		}
		steps := []step{{trace.OpMkdir, 0, top, ""}}
		for j := range rounds {
			d, e := fmt.Sprintf("%s/d%d", top, j), fmt.Sprintf("%s/e%d", top, j)
			steps = append(steps,
				step{trace.OpMkdir, 0, d, ""},
				step{trace.OpOpen, trace.OWronly | trace.OCreat, d + "/f", ""},
				step{trace.OpClose, 0, "", ""},
				step{trace.OpStat, 0, d + "/f", ""},
				step{trace.OpRename, 0, d, e},
				step{trace.OpOpen, trace.ORdonly, e + "/f", ""},
				step{trace.OpClose, 0, "", ""},
				step{trace.OpLstat, 0, e + "/f", ""},
				step{trace.OpUnlink, 0, e + "/f", ""},
				step{trace.OpMkdir, 0, e + "/g", ""},
				step{trace.OpRmdir, 0, e + "/g", ""},
				step{trace.OpRmdir, 0, e, ""})
		}
		for _, s := range steps {
			ev := trace.Event{Op: s.op, Flags: s.flags, Mode: 0o755, Ret: 3}
			if s.op == trace.OpClose {
				ev.FD = 3
			}
			if ret, skip := x.Do(&replay.Call{Ev: &ev, Path: s.p, Path2: s.p2}); ret < 0 || skip != replay.NotSkipped {
				return fmt.Errorf("rank %d: %v %s %s: %d (%s), skip %v", i, s.op, s.p, s.p2, ret, trace.Errno(ret), skip)
			}
		}
		return nil
	}
	errs := make(chan error, ranks)
	for i := range ranks {
		x, err := b.Rank(uint32(i), ranks)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			err := run(i, x.(*rankExec))
			x.Close()
			errs <- err
		}()
	}
	for range ranks {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if h := b.root.held.Load(); h != 0 {
		t.Errorf("%d descriptors held after the ranks closed", h)
	}
	for i := range ranks {
		if ents, err := os.ReadDir(filepath.Join(dir, fmt.Sprintf("r%d", i))); err != nil || len(ents) != 0 {
			t.Errorf("r%d: %v left, %v", i, ents, err)
		}
	}
}

// TestCheckTarget: a target is what its name resolves to: a symbolic
// link to /, /proc/self/root, or a directory of /proc, /sys or /dev is
// refused by name and by New; an ordinary directory, a link to one, a
// directory not made yet and one in /dev/shm are taken.
func TestCheckTarget(t *testing.T) {
	dir := t.TempDir()
	toRoot := filepath.Join(dir, "root")
	if err := os.Symlink("/", toRoot); err != nil {
		t.Fatal(err)
	}
	toProc := filepath.Join(dir, "proc")
	if err := os.Symlink("/proc/self/root", toProc); err != nil {
		t.Fatal(err)
	}
	ok := filepath.Join(dir, "ok")
	if err := os.Mkdir(ok, 0o755); err != nil {
		t.Fatal(err)
	}
	toOK := filepath.Join(dir, "link")
	if err := os.Symlink(ok, toOK); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"/", "/..", toRoot, toProc, "/proc/self/root", "/proc", "/sys/kernel", "/dev/mqueue", toRoot + "/proc"} {
		err := CheckTarget(bad)
		if err == nil || !strings.Contains(err.Error(), "refusing to replay into it") {
			t.Errorf("CheckTarget(%s) = %v, want a refusal", bad, err)
		}
	}
	for _, bad := range []string{toRoot, "/proc/self/root"} {
		if b, err := New(Options{Target: bad}); err == nil {
			b.Close()
			t.Errorf("New(%s) took it", bad)
		}
	}
	for _, good := range []string{ok, toOK, filepath.Join(dir, "new", "sub"), "/dev/shm/iotrace-replay"} {
		if err := CheckTarget(good); err != nil {
			t.Errorf("CheckTarget(%s) = %v", good, err)
		}
	}
}

// TestSysTimeCountsTheProgramsCalls: with Call.Sys set, the backend
// times the system calls that do the program's work and not the
// replay's own looks: an O_CREAT open of a name that exists is one timed
// call (not the exclusive create that found it, the look, the check
// after), an O_TRUNC open two (the open and the truncation), a dup or a
// close that leaves the description open none, a stat one; with
// openat2 and the O_NOFOLLOW walk, with and without kept directories.
func TestSysTimeCountsTheProgramsCalls(t *testing.T) {
	for _, o := range []Options{{}, {Walk: true}, {KeepDirs: true}, {Walk: true, KeepDirs: true}} {
		t.Run(fmt.Sprintf("walk=%v,keepdirs=%v", o.Walk, o.KeepDirs), func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"old", "old2"} {
				if err := os.WriteFile(filepath.Join(dir, "sub", f), []byte("old data"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			o.Target = dir
			_, x := newExec(t, o)
			steps := []struct {
				e        trace.Event
				path, p2 string
				calls    int
				ret      int64
				what     string
			}{
				{trace.Event{Op: trace.OpOpenat, Flags: trace.ORdwr | trace.OCreat, Ret: 3}, "sub/old", "", 1, 3, "open O_CREAT of a name that exists"},
				{trace.Event{Op: trace.OpPwrite, FD: 3, Size: 5, Ret: 5}, "", "", 1, 5, "pwrite"},
				{trace.Event{Op: trace.OpDup, FD: 3, Ret: 4}, "", "", 0, 4, "dup"},
				{trace.Event{Op: trace.OpClose, FD: 4}, "", "", 0, 0, "close of a duplicate"},
				{trace.Event{Op: trace.OpFsync, FD: 3}, "", "", 1, 0, "fsync"},
				{trace.Event{Op: trace.OpClose, FD: 3}, "", "", 1, 0, "last close"},
				{trace.Event{Op: trace.OpOpenat, Flags: trace.OWronly | trace.OTrunc, Ret: 3}, "sub/old2", "", 2, 3, "open O_TRUNC"},
				{trace.Event{Op: trace.OpClose, FD: 3}, "", "", 1, 0, "close"},
				{trace.Event{Op: trace.OpOpenat, Flags: trace.OWronly | trace.OCreat, Mode: 0o644, Ret: 3}, "sub/new", "", 1, 3, "open that creates"},
				{trace.Event{Op: trace.OpClose, FD: 3}, "", "", 1, 0, "close"},
				{trace.Event{Op: trace.OpStat}, "sub/old", "", 1, 0, "stat"},
				{trace.Event{Op: trace.OpMkdir, Mode: 0o755}, "sub/d", "", 1, 0, "mkdir"},
				{trace.Event{Op: trace.OpRename}, "sub/d", "sub/e", 1, 0, "rename"},
				{trace.Event{Op: trace.OpUnlink}, "sub/old", "", 1, 0, "unlink"},
			}
			for _, s := range steps {
				var sw replay.SysTime
				e := s.e
				ret, skip := x.Do(&replay.Call{Ev: &e, Path: s.path, Path2: s.p2, Sys: &sw})
				if ret != s.ret || skip != replay.NotSkipped {
					t.Fatalf("%s: %d (%s), skip %v", s.what, ret, trace.Errno(ret), skip)
				}
				if sw.Calls() != s.calls {
					t.Errorf("%s: %d system calls timed, want %d", s.what, sw.Calls(), s.calls)
				}
			}
		})
	}
}

// TestCallsOnTheirDescriptor: an *at call with an empty path and
// AT_EMPTY_PATH is on the file open on its descriptor (no Path in the
// trace). tar opens a symbolic link it just made, whose target does not
// exist yet, with O_PATH|O_NOFOLLOW and fstats it; a stat of the name
// would follow the link and fail. readlinkat(fd, "") and
// faccessat2(fd, "", …, AT_EMPTY_PATH) read the link and check the file
// on the descriptor as well; a file removed while open is still there
// for them.
func TestCallsOnTheirDescriptor(t *testing.T) {
	dir := t.TempDir()
	_, x := newExec(t, Options{Target: dir})
	p := trace.NewPaths()
	soft, gone := p.Intern("soft.txt"), p.Intern("gone.txt")
	const atEmpty = 0x1000
	if ret, _ := doP(x, p, trace.Event{Op: trace.OpSymlinkat, FD: -100, Path: soft, Path2: p.Intern("docs/guide.txt")}); ret != 0 {
		t.Fatalf("symlinkat: %d", ret)
	}
	if ret, _ := doP(x, p, trace.Event{Op: trace.OpOpenat, FD: -100, Path: soft, Flags: 0x200000 | 0x20000 | 0x80000, Ret: 4}); ret != 4 {
		t.Fatalf("openat O_PATH|O_NOFOLLOW of the link: %d", ret)
	}
	for _, e := range []trace.Event{
		{Op: trace.OpFstatat, FD: 4, Flags: atEmpty},
		{Op: trace.OpStatx, FD: 4, Flags: atEmpty},
		{Op: trace.OpReadlinkat, FD: 4, Size: 64, Ret: 14},
	} {
		if ret, skip := doP(x, p, e); ret < 0 || skip != replay.NotSkipped {
			t.Errorf("%v on the link's descriptor: %d %v", e.Op, ret, skip)
		} else if e.Op == trace.OpReadlinkat && ret != 14 {
			t.Errorf("readlinkat read %d bytes, want the target's 14", ret)
		}
	}
	// A file removed while open.
	wr := uint32(trace.ORdwr | trace.OCreat)
	if ret, _ := doP(x, p, trace.Event{Op: trace.OpOpenat, FD: -100, Path: gone, Flags: wr, Mode: 0o644, Ret: 5}); ret != 5 {
		t.Fatalf("openat: %d", ret)
	}
	if ret, _ := doP(x, p, trace.Event{Op: trace.OpUnlinkat, FD: -100, Path: gone}); ret != 0 {
		t.Fatalf("unlinkat: %d", ret)
	}
	for _, e := range []trace.Event{
		{Op: trace.OpFstatat, FD: 5, Flags: atEmpty},
		{Op: trace.OpAccess, FD: 5, Flags: atEmpty, Mode: 4},
	} {
		if ret, skip := doP(x, p, e); ret != 0 || skip != replay.NotSkipped {
			t.Errorf("%v on a removed file's descriptor: %d %v", e.Op, ret, skip)
		}
	}
	// A file made with O_TMPFILE, written, then given its name by a link
	// of its descriptor (linkat of /proc/self/fd/6, AT_SYMLINK_FOLLOW).
	tmp := uint32(trace.ORdwr | 0x410000) // O_TMPFILE: __O_TMPFILE | O_DIRECTORY
	if ret, _ := doP(x, p, trace.Event{Op: trace.OpOpenat, FD: -100, Path: p.Intern("."), Flags: tmp, Mode: 0o600, Ret: 6}); ret != 6 {
		t.Fatalf("openat O_TMPFILE: %d", ret)
	}
	doP(x, p, trace.Event{Op: trace.OpWrite, FD: 6, Size: 3000, Ret: 3000})
	named := p.Intern("named.txt")
	if ret, skip := doP(x, p, trace.Event{Op: trace.OpLinkat, FD: 6, Path2: named, Flags: 0x400}); ret != 0 || skip != replay.NotSkipped {
		t.Fatalf("linkat of the descriptor: %d %v", ret, skip)
	}
	if fi, err := os.Stat(filepath.Join(dir, "named.txt")); err != nil || fi.Size() != 3000 {
		t.Errorf("the named file: %v, %v; want 3000 bytes", fi, err)
	}
}

// TestCallsThroughLinksNotMade: a link to /dev/null (a special path, not
// made) and then an open and write through it, a stat and a removal of
// it: each is skipped as the link was ("path leads out of the target"),
// none fails where the program's did not, and no file takes the link's
// place. A rename onto the name makes a file there again.
func TestCallsThroughLinksNotMade(t *testing.T) {
	dir := t.TempDir()
	_, x := newExec(t, Options{Target: dir})
	p := trace.NewPaths()
	do := func(e trace.Event, path, path2 string) (int64, replay.Skip) {
		c := &replay.Call{Ev: &e, Path: path, Path2: path2, Paths: mapper{p}}
		return x.Do(c)
	}
	null := p.Intern("/dev/null")
	e := trace.Event{Op: trace.OpSymlink, Path: p.Intern("/w/hist"), Path2: null}
	if ret, skip := do(e, "hist", ""); ret != 0 || skip != replay.SkipEscape {
		t.Fatalf("symlink to /dev/null: %d %v", ret, skip)
	}
	wr := uint32(trace.OWronly | trace.OCreat | trace.OAppend)
	for _, c := range []struct {
		e           trace.Event
		path, path2 string
	}{
		{trace.Event{Op: trace.OpOpenat, FD: -100, Flags: wr, Mode: 0o600, Ret: 3}, "hist", ""},
		{trace.Event{Op: trace.OpStat}, "hist", ""},
		{trace.Event{Op: trace.OpStat}, "hist/x", ""},
		{trace.Event{Op: trace.OpUnlink}, "hist", ""},
	} {
		if ret, skip := do(c.e, c.path, c.path2); ret != 0 || skip != replay.SkipEscape {
			t.Errorf("%v %s: %d %v, want skipped", c.e.Op, c.path, ret, skip)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "hist")); !os.IsNotExist(err) {
		t.Errorf("a file took the link's place: %v", err)
	}
	// Removed: the name is free again.
	if ret, skip := do(trace.Event{Op: trace.OpOpenat, FD: -100, Flags: wr, Mode: 0o600, Ret: 3}, "hist", ""); ret != 3 || skip != replay.NotSkipped {
		t.Errorf("open after the removal: %d %v", ret, skip)
	}
	// A link not made, then a file renamed onto its name: made.
	do(trace.Event{Op: trace.OpSymlink, Path: p.Intern("/w/cfg"), Path2: null}, "cfg", "")
	do(trace.Event{Op: trace.OpOpenat, FD: -100, Flags: uint32(trace.OWronly | trace.OCreat), Mode: 0o600, Ret: 4}, "cfg.new", "")
	if ret, skip := do(trace.Event{Op: trace.OpRename}, "cfg.new", "cfg"); ret != 0 || skip != replay.NotSkipped {
		t.Errorf("rename onto the link's name: %d %v", ret, skip)
	}
	if ret, skip := do(trace.Event{Op: trace.OpStat}, "cfg", ""); ret != 0 || skip != replay.NotSkipped {
		t.Errorf("stat of the renamed file: %d %v", ret, skip)
	}
}
