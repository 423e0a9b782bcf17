package posix

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"github.com/iotrace/iotrace/internal/pagecache"
	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/trace"
	"golang.org/x/sys/unix"
)

func resident(t *testing.T, p string) int { return pagecache.Resident(t, p) }

func residentPages(t *testing.T, p string) []bool {
	t.Helper()
	in, err := pagecache.Pages(p)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func evict(t *testing.T, p string) { pagecache.Evict(t, p) }

func cachedDir(t *testing.T) string { return pagecache.Dir(t) }

// TestMmapTouchesPages: a replayed mmap reads the pages of the mapped
// range that are in the file (without faulting on those past its end);
// msync and munmap act on the
// replay's own mapping, found by the file range; an munmap of a mapping
// the replay never made is a skip, not an error.
func TestMmapTouchesPages(t *testing.T) {
	dir := cachedDir(t)
	_, x := newExec(t, Options{Target: dir})
	paths := trace.NewPaths()
	m := paths.Intern("m")
	data := bytes.Repeat([]byte("0123456789abcdef"), 256<<10) // 4 MiB
	fp := filepath.Join(dir, "m")
	if err := os.WriteFile(fp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	evict(t, fp)
	if n := resident(t, fp); n != 0 {
		t.Fatalf("%d pages cached after the eviction", n)
	}
	doP(x, paths, trace.Event{Op: trace.OpOpen, Path: m, Flags: trace.ORdwr, Ret: 3})
	// A read-only private mapping of 1 MiB from 1 MiB.
	mb := int64(1 << 20)
	if ret, skip := doP(x, paths, trace.Event{Op: trace.OpMmap, FD: 3, Path: m, Offset: mb, Size: mb,
		Flags: unix.MAP_PRIVATE, Mode: unix.PROT_READ}); ret != 0 || skip != replay.NotSkipped {
		t.Fatalf("mmap: %d %v", ret, skip)
	}
	// Each of its pages was read (the kernel reads around a fault too, as
	// far as the device's read-ahead goes: maybe the whole file).
	in := residentPages(t, fp)
	first, end := int(mb/pageSize), int(2*mb/pageSize)
	for i := first; i < end; i++ {
		if !in[i] {
			t.Fatalf("page %d of the mapping not read", i-first)
		}
	}
	if len(x.maps) != 1 {
		t.Fatalf("%d live mappings, want 1", len(x.maps))
	}
	// The capture's wait for those pages (a pagein): no call, the mmap
	// read them; the mappings stay as they are.
	if ret, skip := doP(x, paths, trace.Event{Op: trace.OpPagein, FD: -1, Path: m, Count: 1, Size: mb, Dur: 1e6}); ret != 0 || skip != replay.NotSkipped || len(x.maps) != 1 {
		t.Errorf("pagein: %d %v, %d live mappings", ret, skip, len(x.maps))
	}
	// A shared writable mapping reaching past the end of the file: the
	// pages in the file are touched, the one beyond is not (it would
	// fault), the data is unchanged.
	if ret, skip := doP(x, paths, trace.Event{Op: trace.OpMmap, FD: 3, Path: m, Offset: 4*mb - 4*pageSize, Size: 8 * pageSize,
		Flags: unix.MAP_SHARED, Mode: unix.PROT_READ | unix.PROT_WRITE}); ret != 0 || skip != replay.NotSkipped {
		t.Fatalf("shared mmap: %d %v", ret, skip)
	}
	if ret, skip := doP(x, paths, trace.Event{Op: trace.OpMsync, FD: -1, Path: m, Offset: 4*mb - 3*pageSize, Size: pageSize, Flags: unix.MS_SYNC}); ret != 0 || skip != replay.NotSkipped {
		t.Errorf("msync: %d %v", ret, skip)
	}
	// The munmap of the first mapping releases it, not the other.
	if ret, skip := doP(x, paths, trace.Event{Op: trace.OpMunmap, FD: -1, Path: m, Offset: mb, Size: mb}); ret != 0 || skip != replay.NotSkipped {
		t.Errorf("munmap: %d %v", ret, skip)
	}
	if len(x.maps) != 1 || x.maps[0].off != 4*mb-4*pageSize {
		t.Errorf("live mappings after the munmap: %d, want the shared one", len(x.maps))
	}
	if _, skip := doP(x, paths, trace.Event{Op: trace.OpMunmap, FD: -1, Path: m, Offset: 0, Size: pageSize}); skip != replay.SkipNoMapping {
		t.Errorf("munmap of a range the replay never mapped: skip %v, want %v", skip, replay.SkipNoMapping)
	}
	x.Close()
	if len(x.maps) != 0 {
		t.Errorf("%d mappings left after the rank's end", len(x.maps))
	}
	if got, _ := os.ReadFile(fp); !bytes.Equal(got, data) {
		t.Errorf("the mapped file changed")
	}

	// readahead brings pages in, posix_fadvise(DONTNEED) drops them.
	evict(t, fp)
	_, y := newExec(t, Options{Target: dir})
	doP(y, paths, trace.Event{Op: trace.OpOpen, Path: m, Flags: trace.ORdonly, Ret: 3})
	if ret, skip := doP(y, paths, trace.Event{Op: trace.OpReadahead, FD: 3, Path: m, Offset: 0, Size: 4 * mb}); ret != 0 || skip != replay.NotSkipped {
		t.Fatalf("readahead: %d %v", ret, skip)
	}
	// The kernel may read them in the background: wait for them.
	n := 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if n = resident(t, fp); n == int(4*mb/pageSize) {
			break
		}
	}
	if n != int(4*mb/pageSize) {
		t.Errorf("%d pages cached after the readahead, want %d", n, 4*mb/pageSize)
	}
	if ret, skip := doP(y, paths, trace.Event{Op: trace.OpFadvise, FD: 3, Path: m, Offset: 0, Size: 0, Flags: unix.FADV_DONTNEED}); ret != 0 || skip != replay.NotSkipped {
		t.Fatalf("posix_fadvise: %d %v", ret, skip)
	}
	if n := resident(t, fp); n != 0 {
		t.Errorf("%d pages cached after posix_fadvise(DONTNEED), want 0", n)
	}
}

// TestSymlinkTargets: a replayed symbolic link keeps a relative target
// that stays inside, gets an absolute one mapped into the target made
// relative, and is refused when its target leads out.
func TestSymlinkTargets(t *testing.T) {
	dir := t.TempDir()
	_, x := newExec(t, Options{Target: dir})
	paths := trace.NewPaths()
	os.MkdirAll(filepath.Join(dir, "a/b"), 0o755)
	for _, c := range []struct {
		link, target string
		want         string // "" refused
	}{
		{"a/b/in", "../f", "../f"},
		{"a/b/up", "../../f", "../../f"},
		{"a/b/out", "../../../f", ""},
		{"top", "../x", ""},
		{"a/rel", "b/in", "b/in"},
		{"a/outabs", "/etc/passwd", ""},
		{"a/b/twist", "c/../../../../x", ""},
	} {
		_, skip := doP(x, paths, trace.Event{Op: trace.OpSymlink, Path: paths.Intern(c.link), Path2: paths.Intern(c.target)})
		got, err := os.Readlink(filepath.Join(dir, c.link))
		switch {
		case c.want == "" && (skip != replay.SkipEscape || err == nil):
			t.Errorf("symlink %s → %s: skip %v, link %q; want it refused", c.link, c.target, skip, got)
		case c.want != "" && (skip != replay.NotSkipped || got != c.want):
			t.Errorf("symlink %s → %s: skip %v, link %q (%v); want %q", c.link, c.target, skip, got, err, c.want)
		}
	}
}

// TestReadBufferFaultedIn: a rank's read buffer has its pages in memory
// when readBuf hands it out, so that the first read into it is not timed
// with faulting them in (the program's buffer was in memory already).
func TestReadBufferFaultedIn(t *testing.T) {
	_, x := newExec(t, Options{Target: t.TempDir()})
	x.readBuf(100)
	mem := x.readBuf(1 << 20) // aligned for O_DIRECT: on a page
	vec := make([]byte, (len(mem)+int(pageSize)-1)/int(pageSize))
	if _, _, en := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), uintptr(unsafe.Pointer(&vec[0]))); en != 0 {
		t.Fatal(en)
	}
	out := 0
	for _, v := range vec {
		if v&1 == 0 {
			out++
		}
	}
	if out > 0 {
		t.Errorf("%d of the read buffer's %d pages not in memory", out, len(vec))
	}
}
