package posix

import (
	"os"
	"path/filepath"
	"testing"
	"unsafe"

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
