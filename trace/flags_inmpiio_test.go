package trace

import "testing"

func TestInMPIIOFlag(t *testing.T) {
	for _, c := range []struct {
		op   Op
		f    uint32
		want string
	}{
		{OpPwrite, InMPIIO, "IN_MPIIO"},
		{OpPwrite, 0, "0"},
		{OpOpen, OWronly | OCreat | InMPIIO, "O_WRONLY|O_CREAT|IN_MPIIO"},
		{OpOpen, InMPIIO, "O_RDONLY|IN_MPIIO"},
		{OpPwritev2, 4 | InMPIIO, "0x4|IN_MPIIO"},
	} {
		s := FormatFlags(c.op, c.f)
		if s != c.want {
			t.Errorf("FormatFlags(%s, %#x) = %q, want %q", c.op, c.f, s, c.want)
		}
		if back, err := ParseFlags(s); err != nil || back != c.f {
			t.Errorf("ParseFlags(%q) = %#x, %v; want %#x", s, back, err, c.f)
		}
	}
}
