package memlimit

import (
	"math"

	"golang.org/x/sys/unix"
)

// MaxThreads bounds Threads: Go stops a program that makes more than
// 10,000 threads (runtime/debug.SetMaxThreads), with a stack trace.
const MaxThreads = 8000

// defaultStack is the stack glibc gives a thread when RLIMIT_STACK is
// unlimited.
const defaultStack = 8 << 20

// Threads is how many goroutines of this process may be in a blocking
// system call at once — each holds an OS thread there — within the
// process's limits. A thread the runtime starts through cgo (these
// binaries link it: the net package does) gets a stack of RLIMIT_STACK
// bytes of address space, which RLIMIT_AS and RLIMIT_DATA count: the
// threads share what the runtime's memory limit leaves of the smaller
// one (1 − Fraction). RLIMIT_NPROC, where it applies (not to root),
// counts every thread of the user: half of it. At most MaxThreads, at
// least 4.
//
// Past it, pthread_create fails and the runtime aborts with a stack
// trace: a standalone replay of 4,096 ranks under ulimit -d 1048576 did.
func Threads() int {
	n := MaxThreads
	var as, data, stack unix.Rlimit
	bound := int64(0)
	for _, l := range []struct {
		res int
		out *unix.Rlimit
	}{{unix.RLIMIT_AS, &as}, {unix.RLIMIT_DATA, &data}} {
		if unix.Getrlimit(l.res, l.out) == nil && l.out.Cur != unix.RLIM_INFINITY && l.out.Cur < math.MaxInt64 {
			if v := int64(l.out.Cur); bound == 0 || v < bound {
				bound = v
			}
		}
	}
	if bound > 0 {
		size := int64(defaultStack)
		if unix.Getrlimit(unix.RLIMIT_STACK, &stack) == nil && stack.Cur != unix.RLIM_INFINITY && stack.Cur > 0 && stack.Cur < math.MaxInt64 {
			size = int64(stack.Cur)
		}
		n = min(n, int(float64(bound)*(1-Fraction)/float64(size)))
	}
	var nproc unix.Rlimit
	if unix.Geteuid() != 0 && unix.Getrlimit(unix.RLIMIT_NPROC, &nproc) == nil && nproc.Cur != unix.RLIM_INFINITY && nproc.Cur < math.MaxInt32 {
		n = min(n, int(nproc.Cur/2))
	}
	return max(n, 4)
}
