//go:build linux && (amd64 || arm64)

package ptrace

import (
	"testing"

	"golang.org/x/sys/unix"
)

// runFilter interprets the subset of classic BPF the filter uses.
func runFilter(t *testing.T, prog []unix.SockFilter, arch uint32, nr uint32, args [6]uint64) uint32 {
	t.Helper()
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			switch {
			case in.K == seccompNr:
				acc = nr
			case in.K == seccompArch:
				acc = arch
			case in.K >= seccompArg0 && in.K < seccompArg0+48 && in.K%8 == 0:
				acc = uint32(args[(in.K-seccompArg0)/8])
			default:
				t.Fatalf("load of offset %d", in.K)
			}
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K:
			ok := acc == in.K
			if in.Code&0xf0 == unix.BPF_JGE {
				ok = acc >= in.K
			}
			if ok {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		default:
			t.Fatalf("instruction %#x", in.Code)
		}
	}
	t.Fatal("fell off the end")
	return 0
}

func TestFilterDecides(t *testing.T) {
	prog, err := buildFilter(archCalls)
	if err != nil {
		t.Fatal(err)
	}
	traced := map[uint64]bool{}
	for _, d := range archCalls {
		traced[d.nr] = true
	}
	for nr := uint32(0); nr < 600; nr++ {
		// (fcntl with cmd 0 is F_DUPFD: traced too.)
		_, isTraced := traced[uint64(nr)]
		got := runFilter(t, prog, auditArch, nr, [6]uint64{})
		want := uint32(unix.SECCOMP_RET_ALLOW)
		if isTraced {
			want = unix.SECCOMP_RET_TRACE
		}
		if got != want {
			t.Errorf("nr %d: %#x, want %#x", nr, got, want)
		}
		// Another architecture's calls run untraced.
		if got := runFilter(t, prog, auditArch^1, nr, [6]uint64{}); got != unix.SECCOMP_RET_ALLOW {
			t.Errorf("nr %d of another arch: %#x", nr, got)
		}
	}
	var fcntlNr uint32
	for _, d := range archCalls {
		if d.kind == kFcntl {
			fcntlNr = uint32(d.nr)
		}
	}
	for cmd, want := range map[uint64]uint32{
		unix.F_DUPFD: unix.SECCOMP_RET_TRACE, unix.F_DUPFD_CLOEXEC: unix.SECCOMP_RET_TRACE,
		unix.F_SETFL: unix.SECCOMP_RET_TRACE, unix.F_GETFL: unix.SECCOMP_RET_ALLOW,
		unix.F_SETFD: unix.SECCOMP_RET_ALLOW, unix.F_SETLK: unix.SECCOMP_RET_ALLOW,
		1<<32 | unix.F_DUPFD: unix.SECCOMP_RET_TRACE, // the kernel reads cmd as an int
	} {
		if got := runFilter(t, prog, auditArch, fcntlNr, [6]uint64{3, cmd}); got != want {
			t.Errorf("fcntl cmd %#x: %#x, want %#x", cmd, got, want)
		}
	}
	if x32Bit != 0 {
		if got := runFilter(t, prog, auditArch, x32Bit|1, [6]uint64{}); got != unix.SECCOMP_RET_ALLOW {
			t.Errorf("x32 write: %#x", got)
		}
	}
}
