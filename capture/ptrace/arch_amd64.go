//go:build linux && amd64

package ptrace

import "golang.org/x/sys/unix"

// auditArch is the seccomp_data.arch word of native system calls.
const auditArch = unix.AUDIT_ARCH_X86_64

// x32Bit marks x32 system call numbers; the filter lets them run untraced,
// like i386 calls (another arch word), which it does not decode.
const x32Bit = 0x40000000

// archCalls maps this architecture's system call numbers to the calls the
// tracer knows.
var archCalls = []callDef{
	{unix.SYS_OPEN, kOpen},
	{unix.SYS_OPENAT, kOpenat},
	{unix.SYS_OPENAT2, kOpenat2},
	{unix.SYS_CREAT, kCreat},
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
	{unix.SYS_STAT, kStat},
	{unix.SYS_LSTAT, kLstat},
	{unix.SYS_FSTAT, kFstat},
	{unix.SYS_NEWFSTATAT, kNewfstatat},
	{unix.SYS_STATX, kStatx},
	{unix.SYS_ACCESS, kAccess},
	{unix.SYS_FACCESSAT, kFaccessat},
	{unix.SYS_FACCESSAT2, kFaccessat2},
	{unix.SYS_UNLINK, kUnlink},
	{unix.SYS_UNLINKAT, kUnlinkat},
	{unix.SYS_RENAME, kRename},
	{unix.SYS_RENAMEAT, kRenameat},
	{unix.SYS_RENAMEAT2, kRenameat2},
	{unix.SYS_MKDIR, kMkdir},
	{unix.SYS_MKDIRAT, kMkdirat},
	{unix.SYS_RMDIR, kRmdir},
	{unix.SYS_DUP, kDup},
	{unix.SYS_DUP2, kDup2},
	{unix.SYS_DUP3, kDup3},
	{unix.SYS_FCNTL, kFcntl},
	{unix.SYS_CLONE, kClone},
	{unix.SYS_CLONE3, kClone3},
	{unix.SYS_FORK, kFork},
	{unix.SYS_VFORK, kFork},
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
	{unix.SYS_LINK, kLink},
	{unix.SYS_LINKAT, kLinkat},
	{unix.SYS_SYMLINK, kSymlink},
	{unix.SYS_SYMLINKAT, kSymlinkat},
	{unix.SYS_READLINK, kReadlink},
	{unix.SYS_READLINKAT, kReadlinkat},
	{unix.SYS_GETDENTS, kGetdents},
	{unix.SYS_GETDENTS64, kGetdents64},
	{unix.SYS_UNSHARE, kUnshare},
	{unix.SYS_IO_URING_SETUP, kIoUringSetup},
	{unix.SYS_IO_SETUP, kIoSetup},
	{unix.SYS_PTRACE, kPtrace},
}

// cloneFlagsArg is the argument of clone(2) that holds its flags.
const cloneFlagsArg = 0

// openFlags converts open flags of this architecture to the x86-64
// numbering traces use: the identity here.
func openFlags(f uint64) uint32 { return uint32(f) }

// regsEntry reads the system call number and arguments from the
// registers, for kernels without PTRACE_GET_SYSCALL_INFO.
func (r *regs) entry(tid int, nr *uint64, args *[6]uint64) error {
	if err := unix.PtraceGetRegs(tid, &r.r); err != nil {
		return err
	}
	*nr = r.r.Orig_rax
	*args = [6]uint64{r.r.Rdi, r.r.Rsi, r.r.Rdx, r.r.R10, r.r.R8, r.r.R9}
	return nil
}

// exit reads the return value of a system call at its exit stop.
func (r *regs) exit(tid int) (int64, error) {
	if err := unix.PtraceGetRegs(tid, &r.r); err != nil {
		return 0, err
	}
	return int64(r.r.Rax), nil
}

// regs holds the register buffer of the fallback decoder.
type regs struct{ r unix.PtraceRegs }
