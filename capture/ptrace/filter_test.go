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
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K,
			unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			ok := acc == in.K
			switch in.Code & 0xf0 {
			case unix.BPF_JGE:
				ok = acc >= in.K
			case unix.BPF_JSET:
				ok = acc&in.K != 0
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
		// (fcntl with cmd 0 is F_DUPFD, mmap of descriptor 0 a file
		// mapping: traced too.)
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
	var fcntlNr, mmapNr uint32
	for _, d := range archCalls {
		switch d.kind {
		case kFcntl:
			fcntlNr = uint32(d.nr)
		case kMmap:
			mmapNr = uint32(d.nr)
		}
	}
	for cmd, want := range map[uint64]uint32{
		unix.F_DUPFD: unix.SECCOMP_RET_TRACE, unix.F_DUPFD_CLOEXEC: unix.SECCOMP_RET_TRACE,
		unix.F_SETFL: unix.SECCOMP_RET_TRACE, unix.F_GETFL: unix.SECCOMP_RET_ALLOW,
		unix.F_SETFD: unix.SECCOMP_RET_TRACE, unix.F_GETFD: unix.SECCOMP_RET_ALLOW,
		unix.F_SETLK: unix.SECCOMP_RET_ALLOW, unix.F_SETLKW: unix.SECCOMP_RET_ALLOW,
		1<<32 | unix.F_DUPFD: unix.SECCOMP_RET_TRACE, // the kernel reads cmd as an int
	} {
		if got := runFilter(t, prog, auditArch, fcntlNr, [6]uint64{3, cmd}); got != want {
			t.Errorf("fcntl cmd %#x: %#x, want %#x", cmd, got, want)
		}
	}
	// mmap(addr, len, prot, flags, fd, off) stops only with a descriptor.
	const minus1 = 1<<64 - 1
	for _, c := range []struct {
		flags, fd uint64
		want      uint32
	}{
		{unix.MAP_PRIVATE | unix.MAP_ANONYMOUS, minus1, unix.SECCOMP_RET_ALLOW},
		{unix.MAP_PRIVATE | unix.MAP_ANONYMOUS, 0xffffffff, unix.SECCOMP_RET_ALLOW}, // an int -1, zero-extended
		{unix.MAP_SHARED | unix.MAP_ANONYMOUS, 0, unix.SECCOMP_RET_ALLOW},           // fd ignored
		{unix.MAP_SHARED | unix.MAP_ANONYMOUS | unix.MAP_FIXED, 5, unix.SECCOMP_RET_ALLOW},
		{unix.MAP_PRIVATE, minus1, unix.SECCOMP_RET_ALLOW}, // EBADF: nothing mapped
		{unix.MAP_PRIVATE, 3, unix.SECCOMP_RET_TRACE},
		{unix.MAP_SHARED, 0, unix.SECCOMP_RET_TRACE},
		{unix.MAP_SHARED | unix.MAP_FIXED, 1<<32 | 7, unix.SECCOMP_RET_TRACE}, // the kernel reads fd as an int
	} {
		if got := runFilter(t, prog, auditArch, mmapNr, [6]uint64{0, 4096, unix.PROT_READ, c.flags, c.fd, 0}); got != c.want {
			t.Errorf("mmap flags %#x fd %#x: %#x, want %#x", c.flags, c.fd, got, c.want)
		}
	}
	if x32Bit != 0 {
		if got := runFilter(t, prog, auditArch, x32Bit|1, [6]uint64{}); got != unix.SECCOMP_RET_ALLOW {
			t.Errorf("x32 write: %#x", got)
		}
	}
}

// constAllow is the kernel's check (seccomp_is_const_allow, Linux ≥ 5.11)
// of whether a filter allows system call nr of arch whatever its
// arguments: it runs the filter knowing only nr and arch, and gives up at
// any load of something else (arguments, instruction pointer) or any
// instruction it does not model. The kernel then allows nr from a bitmap
// without running the filter: the seccomp action cache.
func constAllow(prog []unix.SockFilter, arch, nr uint32) bool {
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			switch in.K {
			case seccompNr:
				acc = nr
			case seccompArch:
				acc = arch
			default:
				return false
			}
		case unix.BPF_RET | unix.BPF_K:
			return in.K == unix.SECCOMP_RET_ALLOW
		case unix.BPF_JMP | unix.BPF_JA:
			pc += int(in.K)
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K,
			unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K, unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			var ok bool
			switch in.Code & 0xf0 {
			case unix.BPF_JEQ:
				ok = acc == in.K
			case unix.BPF_JGE:
				ok = acc >= in.K
			case unix.BPF_JGT:
				ok = acc > in.K
			case unix.BPF_JSET:
				ok = acc&in.K != 0
			}
			if ok {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_ALU | unix.BPF_AND | unix.BPF_K:
			acc &= in.K
		default:
			return false
		}
	}
	return false
}

// TestFilterCacheable: every system call the tracer does not stop at is
// allowed by the kernel's action cache without running the filter (only
// fcntl and mmap, whose arguments the filter reads, run it). The cache is
// what keeps an untraced call at the cost of any seccomp filter.
func TestFilterCacheable(t *testing.T) {
	prog, err := buildFilter(archCalls)
	if err != nil {
		t.Fatal(err)
	}
	stops := map[uint64]bool{}
	for _, d := range archCalls {
		stops[d.nr] = true
	}
	argsRead := map[uint64]bool{}
	for _, d := range archCalls {
		if d.kind == kFcntl || d.kind == kMmap {
			argsRead[d.nr] = true
		}
	}
	cached := 0
	for nr := uint64(0); nr < 1024; nr++ {
		got := constAllow(prog, auditArch, uint32(nr))
		want := !stops[nr] && !argsRead[nr]
		if got != want {
			t.Errorf("system call %d: allowed from the cache %v, want %v", nr, got, want)
		}
		if got {
			cached++
		}
	}
	// The check is not vacuous: a filter that reads an argument first is
	// not cacheable at all.
	reads := append([]unix.SockFilter{{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: seccompArg0}}, prog...)
	if constAllow(reads, auditArch, unix.SYS_GETPPID) {
		t.Error("a filter that loads an argument counted as cacheable")
	}
	t.Logf("%d of 1024 system call numbers allowed from the cache", cached)
}
