//go:build linux && (amd64 || arm64)

package ptrace

import (
	"os"
	"testing"
)

func TestParseFdinfo(t *testing.T) {
	for _, c := range []struct {
		in    string
		pos   int64
		flags uint64
	}{
		{"pos:\t4096\nflags:\t0102002\nmnt_id:\t25\nino:\t1234\n", 4096, 0o102002},
		{"flags:\t02\npos:\t7", 7, 2},
		{"pos:\t99999999999999999999999\nflags:\t0178\n", 1<<63 - 1, 0o17},
		{"", 0, 0},
		{"pos:\nflags:x\n", 0, 0},
	} {
		pos, flags := parseFdinfo([]byte(c.in))
		if pos != c.pos || flags != c.flags {
			t.Errorf("%q: pos %d flags %o, want %d %o", c.in, pos, flags, c.pos, c.flags)
		}
	}
	// The real thing: this process's own descriptor.
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Write(make([]byte, 123))
	p := newProcfs()
	pos, flags, err := p.fdinfo(os.Getpid(), int32(f.Fd()))
	if err != nil || pos != 123 || flags&3 != 2 {
		t.Errorf("fdinfo: pos %d flags %o err %v", pos, flags, err)
	}
	if size, err := p.size(os.Getpid(), int32(f.Fd())); err != nil || size != 123 {
		t.Errorf("size %d %v", size, err)
	}
}

func FuzzParseFdinfo(f *testing.F) {
	f.Add([]byte("pos:\t4096\nflags:\t0102002\nmnt_id:\t25\n"))
	f.Add([]byte("pos:\t-1\nflags:\t9\n"))
	f.Add([]byte("\n\n\npos:"))
	f.Fuzz(func(t *testing.T, b []byte) {
		pos, _ := parseFdinfo(b)
		if pos < 0 {
			t.Fatalf("negative position %d", pos)
		}
	})
}
