//go:build !(linux && amd64)

package posix

import "golang.org/x/sys/unix"

// rawSyscall is unix.RawSyscall6 (see raw_linux_amd64.go).
func rawSyscall(trap, a1, a2, a3, a4, a5, a6 uintptr) (r, errno uintptr) {
	r, _, en := unix.RawSyscall6(trap, a1, a2, a3, a4, a5, a6)
	return r, uintptr(en)
}

// rawSyscallTSC is rawSyscall; there is no counter to return (0).
func rawSyscallTSC(trap, a1, a2, a3, a4, a5, a6 uintptr) (r, errno uintptr, tsc int64) {
	r, errno = rawSyscall(trap, a1, a2, a3, a4, a5, a6)
	return r, errno, 0
}
