//go:build linux && (amd64 || arm64)

package ptrace

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Offsets in struct seccomp_data.
const (
	seccompNr   = 0
	seccompArch = 4
	seccompArg0 = 16 // args[i] at 16 + 8*i; the low word first (little endian)
)

// fcntl commands the filter lets through to the tracer; every other fcntl
// runs untraced.
const (
	fDupfd        = unix.F_DUPFD
	fDupfdCloexec = unix.F_DUPFD_CLOEXEC
	fSetfd        = unix.F_SETFD
	fSetfl        = unix.F_SETFL
)

// buildFilter returns the seccomp program that asks for a tracer stop
// (SECCOMP_RET_TRACE) on every call of defs and allows everything else,
// but for two calls whose arguments it reads: fcntl stops only for
// F_DUPFD, F_DUPFD_CLOEXEC, F_SETFD and F_SETFL, and mmap only with a
// descriptor (the fd argument, an int, is not -1 and MAP_ANONYMOUS is
// not set), so that anonymous mappings, which programs make by the
// thousand, run untraced. Those two come first: they cannot be in the
// kernel's action cache (which knows only the call number), so the
// filter runs at each of them, and runs a few instructions. The program
// loads the arguments only on their paths, so the action cache lets
// every other untraced call skip the filter altogether.
func buildFilter(defs []callDef) ([]unix.SockFilter, error) {
	var nrs []uint64
	var fcntlNr, mmapNr uint64
	hasFcntl, hasMmap := false, false
	seen := map[uint64]bool{}
	for _, d := range defs {
		if seen[d.nr] {
			continue
		}
		seen[d.nr] = true
		switch d.kind {
		case kFcntl:
			fcntlNr, hasFcntl = d.nr, true
			continue
		case kMmap:
			mmapNr, hasMmap = d.nr, true
			continue
		}
		nrs = append(nrs, d.nr)
	}
	// Jump targets: the next instruction, the two returns, or a label
	// placed later with mark.
	const (
		next  = -1
		allow = -2
		trace = -3
	)
	type jumpFix struct {
		at  int
		toT int
		toF int
	}
	var prog []unix.SockFilter
	var fixes []jumpFix
	labels := map[int]int{} // label (≥ 0) → instruction
	newLabel := func() int { l := len(labels); labels[l] = -1; return l }
	mark := func(l int) { labels[l] = len(prog) }
	stmt := func(code uint16, k uint32) {
		prog = append(prog, unix.SockFilter{Code: code, K: k})
	}
	jump := func(code uint16, k uint32, jt, jf int) {
		fixes = append(fixes, jumpFix{at: len(prog), toT: jt, toF: jf})
		prog = append(prog, unix.SockFilter{Code: code, K: k})
	}
	const (
		ldAbs = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge   = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		jset  = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret   = unix.BPF_RET | unix.BPF_K
	)
	stmt(ldAbs, seccompArch)
	jump(jeq, auditArch, next, allow)
	stmt(ldAbs, seccompNr)
	if x32Bit != 0 {
		jump(jge, x32Bit, allow, next)
	}
	if hasMmap {
		// mmap(addr, len, prot, flags, fd, off)
		notMmap := newLabel()
		jump(jeq, uint32(mmapNr), next, notMmap)
		stmt(ldAbs, seccompArg0+8*4)
		jump(jeq, 0xffffffff, allow, next)
		stmt(ldAbs, seccompArg0+8*3)
		jump(jset, unix.MAP_ANONYMOUS, allow, trace)
		mark(notMmap)
	}
	if hasFcntl {
		notFcntl := newLabel()
		jump(jeq, uint32(fcntlNr), next, notFcntl)
		stmt(ldAbs, seccompArg0+8*1)
		jump(jeq, fDupfd, trace, next)
		jump(jeq, fDupfdCloexec, trace, next)
		jump(jeq, fSetfd, trace, next)
		jump(jeq, fSetfl, trace, allow)
		mark(notFcntl)
	}
	for _, nr := range nrs {
		jump(jeq, uint32(nr), trace, next)
	}
	allowAt := len(prog)
	stmt(ret, unix.SECCOMP_RET_ALLOW)
	traceAt := len(prog)
	stmt(ret, unix.SECCOMP_RET_TRACE)
	resolve := func(from, label int) (uint8, error) {
		to := from + 1
		switch {
		case label == allow:
			to = allowAt
		case label == trace:
			to = traceAt
		case label >= 0:
			to = labels[label]
		}
		d := to - from - 1
		if d < 0 || d > 255 {
			return 0, fmt.Errorf("seccomp filter: jump of %d instructions", d)
		}
		return uint8(d), nil
	}
	for _, f := range fixes {
		var err error
		if prog[f.at].Jt, err = resolve(f.at, f.toT); err != nil {
			return nil, err
		}
		if prog[f.at].Jf, err = resolve(f.at, f.toF); err != nil {
			return nil, err
		}
	}
	if len(prog) > 4096 {
		return nil, errors.New("seccomp filter too long")
	}
	return prog, nil
}

// installFilter installs prog on the calling thread. Without
// CAP_SYS_ADMIN the kernel requires no_new_privs, which is set only then
// (so set-user-ID programs keep working when iotrace runs as root).
//
// The filter is for tracing, not a sandbox: SECCOMP_FILTER_FLAG_SPEC_ALLOW
// keeps the kernel from turning on its speculation mitigations (SSBD,
// STIBP) for the program, which would slow all of its code down where the
// kernel mitigates "for seccomp" (the default).
func installFilter(prog []unix.SockFilter) error {
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	flags := uintptr(unix.SECCOMP_FILTER_FLAG_SPEC_ALLOW)
	seccomp := func() error {
		_, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
		if e == unix.EINVAL && flags != 0 {
			flags = 0 // a kernel before 4.17
			_, _, e = unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
		}
		if e != 0 {
			return e
		}
		return nil
	}
	err := seccomp()
	if errors.Is(err, unix.EACCES) {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
		}
		err = seccomp()
	}
	if err != nil {
		return fmt.Errorf("installing the seccomp filter: %w", err)
	}
	return nil
}
