//go:build linux && arm64

package ptrace

import "golang.org/x/sys/unix"

// auditArch is the seccomp_data.arch word of native system calls.
const auditArch = unix.AUDIT_ARCH_AARCH64

// x32Bit is 0: arm64 has no second ABI sharing the arch word.
const x32Bit = 0

// archCalls maps this architecture's system call numbers to the calls the
// tracer knows. arm64 has only the *at forms: no open, creat, stat, lstat,
// access, unlink, rename, mkdir, rmdir, link, symlink, readlink, dup2,
// getdents, fork or vfork.
var archCalls = []callDef{
	{unix.SYS_OPENAT, kOpenat},
	{unix.SYS_OPENAT2, kOpenat2},
	{unix.SYS_CLOSE, kClose},
	{unix.SYS_CLOSE_RANGE, kCloseRange},
	{unix.SYS_READ, kRead},
	{unix.SYS_PREAD64, kPread},
	{unix.SYS_READV, kReadv},
	{unix.SYS_PREADV, kPreadv},
	{unix.SYS_PREADV2, kPreadv2},
	{unix.SYS_WRITE, kWrite},
	{unix.SYS_PWRITE64, kPwrite},
	{unix.SYS_WRITEV, kWritev},
	{unix.SYS_PWRITEV, kPwritev},
	{unix.SYS_PWRITEV2, kPwritev2},
	{unix.SYS_LSEEK, kLseek},
	{unix.SYS_FSYNC, kFsync},
	{unix.SYS_FDATASYNC, kFdatasync},
	{unix.SYS_FTRUNCATE, kFtruncate},
	{unix.SYS_TRUNCATE, kTruncate},
	{unix.SYS_FSTAT, kFstat},
	{unix.SYS_NEWFSTATAT, kNewfstatat},
	{unix.SYS_STATX, kStatx},
	{unix.SYS_FACCESSAT, kFaccessat},
	{unix.SYS_FACCESSAT2, kFaccessat2},
	{unix.SYS_UNLINKAT, kUnlinkat},
	{unix.SYS_RENAMEAT, kRenameat},
	{unix.SYS_RENAMEAT2, kRenameat2},
	{unix.SYS_MKDIRAT, kMkdirat},
	{unix.SYS_DUP, kDup},
	{unix.SYS_DUP3, kDup3},
	{unix.SYS_FCNTL, kFcntl},
	{unix.SYS_CLONE, kClone},
	{unix.SYS_CLONE3, kClone3},
	{unix.SYS_COPY_FILE_RANGE, kCopyFileRange},
	{unix.SYS_SENDFILE, kSendfile},
	{unix.SYS_SPLICE, kSplice},
	{unix.SYS_FALLOCATE, kFallocate},
	{unix.SYS_FADVISE64, kFadvise},
	{unix.SYS_SYNCFS, kSyncfs},
	{unix.SYS_SYNC, kSync},
	{unix.SYS_MMAP, kMmap},
	{unix.SYS_MUNMAP, kMunmap},
	{unix.SYS_MSYNC, kMsync},
	{unix.SYS_READAHEAD, kReadahead},
	{unix.SYS_LINKAT, kLinkat},
	{unix.SYS_SYMLINKAT, kSymlinkat},
	{unix.SYS_READLINKAT, kReadlinkat},
	{unix.SYS_GETDENTS64, kGetdents64},
	{unix.SYS_UNSHARE, kUnshare},
	{unix.SYS_IO_URING_SETUP, kIoUringSetup},
	{unix.SYS_IO_SETUP, kIoSetup},
	{unix.SYS_PTRACE, kPtrace},
}

// cloneFlagsArg is the argument of clone(2) that holds its flags.
const cloneFlagsArg = 0

// arm64 numbers four open flags differently from x86-64.
const (
	arm64ODirectory = 0o40000
	arm64ONofollow  = 0o100000
	arm64ODirect    = 0o200000
	arm64OLargefile = 0o400000

	x86ODirect    = 0o40000
	x86OLargefile = 0o100000
	x86ODirectory = 0o200000
	x86ONofollow  = 0o400000
)

// openFlags converts open flags of this architecture to the x86-64
// numbering traces use.
func openFlags(f uint64) uint32 {
	const moved = arm64ODirectory | arm64ONofollow | arm64ODirect | arm64OLargefile
	out := uint32(f) &^ moved
	if f&arm64ODirectory != 0 {
		out |= x86ODirectory
	}
	if f&arm64ONofollow != 0 {
		out |= x86ONofollow
	}
	if f&arm64ODirect != 0 {
		out |= x86ODirect
	}
	if f&arm64OLargefile != 0 {
		out |= x86OLargefile
	}
	return out
}

// regs holds the register buffer of the fallback decoder.
type regs struct{ r unix.PtraceRegsArm64 }

// ntPrstatus is the regset of the general registers.
const ntPrstatus = 1

// entry reads the system call number (x8) and arguments (x0–x5) from the
// registers, for kernels without PTRACE_GET_SYSCALL_INFO. x0 still holds
// the first argument until the call returns.
func (r *regs) entry(tid int, nr *uint64, args *[6]uint64) error {
	if err := unix.PtraceGetRegSetArm64(tid, ntPrstatus, &r.r); err != nil {
		return err
	}
	*nr = r.r.Regs[8]
	copy(args[:], r.r.Regs[:6])
	return nil
}

// exit reads the return value (x0) of a system call at its exit stop.
func (r *regs) exit(tid int) (int64, error) {
	if err := unix.PtraceGetRegSetArm64(tid, ntPrstatus, &r.r); err != nil {
		return 0, err
	}
	return int64(r.r.Regs[0]), nil
}
