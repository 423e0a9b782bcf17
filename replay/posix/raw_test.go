package posix

import (
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/iotrace/iotrace/replay"
	"golang.org/x/sys/unix"
)

// TestRawSyscall checks the raw system call's results and errors against
// the file it wrote.
func TestRawSyscall(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "raw"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := []byte("hello, raw")
	r, en := rawSyscall(unix.SYS_PWRITE64, f.Fd(), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), 3, 0, 0)
	if r != uintptr(len(p)) || en != 0 {
		t.Fatalf("pwrite: %d, errno %d", r, en)
	}
	if b, _ := os.ReadFile(f.Name()); string(b) != "\x00\x00\x00hello, raw" {
		t.Fatalf("file holds %q", b)
	}
	r, en = rawSyscall(unix.SYS_PWRITE64, ^uintptr(0)>>1, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), 0, 0, 0)
	if unix.Errno(en) != unix.EBADF || int(r) != -1 {
		t.Fatalf("pwrite on a bad descriptor: %d, %v", int(r), unix.Errno(en))
	}
}

// TestWrite1IsRW: write1, Do's short way for a write of one slice of the
// pattern, returns what rw returns and leaves the file and the pattern's
// cursor as rw does: at an offset and at the position, sizes from 0 to
// PatternChunk, aligned, and on a bad descriptor.
func TestWrite1IsRW(t *testing.T) {
	dir := t.TempDir()
	open := func(name string) *os.File {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	fa, fb := open("write1"), open("rw")
	pat := replay.NewPattern()
	a := &rankExec{cur: pat.Cursor(5), raw: true, align: 1}
	b := &rankExec{cur: pat.Cursor(5), raw: true, align: 1}
	for _, c := range []struct {
		explicit bool
		off      int64
		size     int
		align    int
		badFD    bool
	}{
		{true, 0, 4096, 1, false},
		{true, 8192, 1, 1, false},
		{false, 0, 100, 1, false},
		{true, 3, 0, 1, false},
		{true, 1 << 20, replay.PatternChunk, 1, false},
		{false, 0, 5000, replay.DirectAlign, false},
		{true, 0, 10, 1, true},
	} {
		fda, fdb := int(fa.Fd()), int(fb.Fd())
		if c.badFD {
			fda, fdb = 1<<30, 1<<30
		}
		trap := uintptr(unix.SYS_WRITE)
		if c.explicit {
			trap = unix.SYS_PWRITE64
		}
		ra, _ := a.write1(uintptr(fda), trap, c.off, c.size, c.align)
		rb := b.rw(fdb, true, c.explicit, c.off, int64(c.size), c.align)
		if ra != rb {
			t.Errorf("%+v: write1 returned %d, rw %d", c, ra, rb)
		}
		if c.badFD && ra != -int64(unix.EBADF) {
			t.Errorf("write1 on a bad descriptor returned %d, want -EBADF", ra)
		}
		if a.cur != b.cur {
			t.Errorf("%+v: the cursors part: %+v, %+v", c, a.cur, b.cur)
		}
	}
	da, _ := os.ReadFile(fa.Name())
	db, _ := os.ReadFile(fb.Name())
	if len(da) < 1<<20 || string(da) != string(db) {
		t.Errorf("the files differ (%d and %d bytes)", len(da), len(db))
	}
}
