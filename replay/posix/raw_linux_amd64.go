package posix

// rawSyscall issues a system call without the Go scheduler's
// bookkeeping (raw_linux_amd64.s). It is unix.RawSyscall6 in one
// function instead of three (x/sys/unix jumps to syscall.RawSyscall6
// through an ABI wrapper, which calls the runtime's own): a data call of
// a rank with a processor of its own goes through fewer code pages, which
// matters where every system call flushes the TLB (kernel page-table
// isolation without PCID, as on the benchmark machine).
func rawSyscall(trap, a1, a2, a3, a4, a5, a6 uintptr) (r, errno uintptr)

// rawSyscallTSC is rawSyscall that also returns the time-stamp counter,
// read as the call returns (replay.Clock.At).
func rawSyscallTSC(trap, a1, a2, a3, a4, a5, a6 uintptr) (r, errno uintptr, tsc int64)
