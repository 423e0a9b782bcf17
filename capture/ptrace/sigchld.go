//go:build linux && (amd64 || arm64)

package ptrace

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// kernelSigaction is the kernel's struct sigaction on amd64 and arm64.
type kernelSigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

const saNoCldStop = 1 // SA_NOCLDSTOP

// quietStops sets SA_NOCLDSTOP on the process's SIGCHLD handler, keeping
// the handler the Go runtime installed. Without it every ptrace stop sends
// the tracer a SIGCHLD, and running the handler costs more than the rest
// of the stop. Exits still send SIGCHLD. It returns a func that restores
// the previous flags.
func quietStops() (restore func()) {
	var old kernelSigaction
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGCHLD), 0,
		uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
		return func() {}
	}
	if old.flags&saNoCldStop != 0 {
		return func() {}
	}
	act := old
	act.flags |= saNoCldStop
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGCHLD),
		uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0); e != 0 {
		return func() {}
	}
	return func() {
		var cur kernelSigaction
		unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGCHLD), 0, uintptr(unsafe.Pointer(&cur)), 8, 0, 0)
		if cur.handler == old.handler {
			cur.flags &^= saNoCldStop
			unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGCHLD), uintptr(unsafe.Pointer(&cur)), 0, 8, 0, 0)
		}
	}
}
