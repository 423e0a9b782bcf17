// Package ptrace records the file I/O of any Linux program: it runs the
// program under ptrace(2) with a seccomp filter that stops it only at the
// calls it records (open, close, read, write, the copies, seek, sync,
// truncate, allocate, advise, readahead, mmap of a file and its msync
// and munmap, stat, readlink, getdents,
// unlink, rename, link, symlink, mkdir, rmdir, dup, fcntl and their
// variants), and follows every process and thread the program starts:
// their forks, clones, execs and exits are events too (whatever the
// paths), and so is each recorded descriptor a process had before the
// tracer saw it (OpInherit), so that a reader can keep one descriptor
// table per process.
//
// How it works: Run re-executes the running program as a small helper
// (HelperMain), attaches to it with PTRACE_SEIZE, and lets it go on; the
// helper installs the filter on itself and execs the target. From then
// on, a traced call stops the program twice (at the seccomp stop, where
// the tracer reads the arguments with PTRACE_GET_SYSCALL_INFO and
// process_vm_readv, and at the call's exit, for the result); every other
// call runs at full speed. One goroutine locked to its OS thread does all
// the tracing (ptrace requires it); events go to the sink in batches from
// another goroutine.
//
// The tracer keeps a descriptor table per process (copied by fork, shared
// under CLONE_FILES, pruned of close-on-exec descriptors at exec) whose
// entries are open file descriptions shared by dup and fork, so a read or
// write without an explicit offset is recorded at the offset it used.
// Descriptors the tracer did not see opened are learnt from /proc. Paths
// are recorded absolute, resolved against the working directory or the
// dirfd at the time of the call.
//
// munmap and msync stop the program whatever their address (the filter
// cannot tell a file's mapping from anonymous memory); they are recorded
// when the range holds one of the process's recorded mappings, as calls
// on the file range it maps (trace/state Maps).
//
// While a process has a recorded mapping, the tracer reads each thread's
// usage (schedstat, io, its major faults) at a recorded call's exit and
// at its next recorded call's entry: where the thread read from the
// device in between, the time it slept there, less the time the tracer
// kept it stopped, is a wait for its mapped pages (OpPagein; pagein.go).
//
// Not seen: reads and writes through mappings (the mmap is recorded, and
// the waits for their pages), io_uring and Linux AIO (Result counts the mappings, rings and
// contexts); 32-bit (i386, x32) system calls of a 64-bit kernel run
// untraced.
package ptrace
