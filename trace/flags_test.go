package trace

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestFlagsRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	values := []uint32{0, 1, 2, 3, OWronly | OCreat | OTrunc, ORdwr | OSync, OSync, ODsync, 0x410000, 0xffffffff, 0x80000000}
	for range 2000 {
		values = append(values, r.Uint32()&(1<<r.IntN(33)-1))
	}
	for _, f := range values {
		for name, format := range map[string]func(uint32) string{"open": FormatOpenFlags, "mpi": FormatMPIMode} {
			s := format(f)
			got, err := ParseFlags(s)
			if err != nil || got != f {
				t.Fatalf("%s flags %#x: %q reads back as %#x, %v", name, f, s, got, err)
			}
		}
	}
	if s := FormatOpenFlags(OWronly | OCreat | OTrunc); s != "O_WRONLY|O_CREAT|O_TRUNC" {
		t.Errorf("got %q", s)
	}
	if s := FormatOpenFlags(OSync); s != "O_RDONLY|O_SYNC" {
		t.Errorf("O_SYNC printed as %q", s)
	}
	if s := FormatFlags(OpMPIFileOpen, MPIModeCreate|MPIModeWronly); s != "MPI_MODE_CREATE|MPI_MODE_WRONLY" {
		t.Errorf("got %q", s)
	}
	for _, s := range []string{"O_BOGUS", "O_CREAT|", "0x1ffffffff", "-1"} {
		if _, err := ParseFlags(s); err == nil {
			t.Errorf("ParseFlags(%q) accepted", s)
		}
	}
	if f, err := ParseFlags(" O_RDWR | 0100 | 0x80000 "); err != nil || f != ORdwr|0o100|0x80000 {
		t.Errorf("mixed flags: %#x %v", f, err)
	}
}

func TestWhenceAndErrno(t *testing.T) {
	for w := int32(-3); w < 10; w++ {
		if got, err := ParseWhence(WhenceName(w)); err != nil || got != w {
			t.Errorf("whence %d: %q reads back as %d, %v", w, WhenceName(w), got, err)
		}
	}
	if _, err := ParseWhence("SEEK_UP"); err == nil {
		t.Error("SEEK_UP accepted")
	}
	for _, name := range ErrnoNames() {
		v, ok := ParseErrno(name)
		if !ok || Errno(-v) != name {
			t.Errorf("errno %s: %d %v %q", name, v, ok, Errno(-v))
		}
	}
	if Errno(0) != "" || Errno(5) != "" || Errno(-2) != "ENOENT" || Errno(-300) != "E300" {
		t.Error("Errno")
	}
	if !strings.HasPrefix(FormatFlags(OpWrite, 0x80000), "0x") {
		t.Errorf("flags of a write: %q", FormatFlags(OpWrite, 0x80000))
	}
}
