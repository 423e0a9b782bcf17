// Package pagecache helps tests see the page cache: which pages of a file
// are in it (mincore), dropping a file's pages, and a directory on a file
// system whose pages can be dropped (not tmpfs, where the pages are the
// file). Without one a test is skipped, except under CI (CI=true), where
// it fails.
package pagecache

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Pages says which pages of the file at p are in the page cache.
func Pages(p string) ([]bool, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return nil, err
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	defer unix.Munmap(m)
	ps := os.Getpagesize()
	vec := make([]byte, (len(m)+ps-1)/ps)
	if _, _, en := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); en != 0 {
		return nil, fmt.Errorf("mincore %s: %w", p, en)
	}
	in := make([]bool, len(vec))
	for i, v := range vec {
		in[i] = v&1 != 0
	}
	return in, nil
}

// Resident returns how many pages of the file at p are in the page
// cache; the test fails if it cannot tell.
func Resident(t testing.TB, p string) int {
	t.Helper()
	in, err := Pages(p)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, b := range in {
		if b {
			n++
		}
	}
	return n
}

// Evict writes the file at p back and drops its pages from the cache.
func Evict(t testing.TB, p string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Sync()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
}

// ColdFile writes n random bytes to the file name in dir (a directory of
// Dir) and drops its pages from the cache; it returns the file's path.
func ColdFile(t testing.TB, dir, name string, n int) string {
	t.Helper()
	data := make([]byte, n)
	rand.Read(data)
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	Evict(t, p)
	return p
}

// Dir returns a new directory, removed after the test, whose files'
// pages the cache can drop: under the test's temporary directory, or
// under /var/tmp.
func Dir(t testing.TB) string {
	t.Helper()
	for _, parent := range []string{"", "/var/tmp"} {
		var dir string
		if parent == "" {
			dir = t.TempDir()
		} else if d, err := os.MkdirTemp(parent, "iotrace-cache-"); err == nil {
			dir = d
			t.Cleanup(func() { os.RemoveAll(d) })
		} else {
			continue
		}
		p := filepath.Join(dir, "probe")
		if err := os.WriteFile(p, make([]byte, 64<<10), 0o644); err != nil {
			continue
		}
		Evict(t, p)
		n := Resident(t, p)
		os.Remove(p)
		if n == 0 {
			return dir
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no directory here whose pages the page cache drops (the temporary directory and /var/tmp are tmpfs?)")
	}
	t.Skip("no directory here whose pages the page cache drops (the temporary directory and /var/tmp are tmpfs?)")
	return ""
}
