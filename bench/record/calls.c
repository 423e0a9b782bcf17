/* calls N KIND [FILTER]: makes N untraced system calls of one kind and
 * prints the loop's wall time and CPU time in ns ("wall cpu").
 *
 * KIND: getppid, clock_gettime (through syscall(), not the vDSO), futex
 * (FUTEX_WAKE with no waiter), sched_yield, mmap (an mmap + munmap pair of
 * 4 KiB per iteration: N pairs).
 *
 * FILTER, installed before the loop with no tracer attached:
 *   allow    a one-instruction filter that allows everything: what the
 *            kernel's seccomp entry path costs a call whose filter result
 *            comes from the action cache (Linux >= 5.11);
 *   argload  a filter that loads an argument and then allows everything:
 *            the kernel cannot cache it and runs the BPF program at every
 *            call, as it would for iotrace's filter if it were not
 *            cacheable. */
#define _GNU_SOURCE
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long ns(struct timespec a, struct timespec b) {
	return (b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec);
}

static int filter(const char *mode) {
	struct sock_filter allow[] = {
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_filter argload[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog;
	if (strcmp(mode, "allow") == 0) {
		prog.len = sizeof allow / sizeof allow[0];
		prog.filter = allow;
	} else if (strcmp(mode, "argload") == 0) {
		prog.len = sizeof argload / sizeof argload[0];
		prog.filter = argload;
	} else {
		fprintf(stderr, "calls: unknown filter %s\n", mode);
		return -1;
	}
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	/* SPEC_ALLOW, as iotrace: no speculation mitigations for the filter. */
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_SPEC_ALLOW, &prog) != 0) {
		perror("seccomp");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: calls N getppid|clock_gettime|futex|sched_yield|mmap [allow|argload]\n");
		return 2;
	}
	long n = atol(argv[1]);
	const char *kind = argv[2];
	if (argc > 3 && filter(argv[3]) != 0)
		return 1;
	static int word;
	struct timespec ts, w0, w1, c0, c1;
	long sum = 0;
	int k = strcmp(kind, "getppid") == 0 ? 0 : strcmp(kind, "clock_gettime") == 0 ? 1 :
		strcmp(kind, "futex") == 0 ? 2 : strcmp(kind, "sched_yield") == 0 ? 3 :
		strcmp(kind, "mmap") == 0 ? 4 : -1;
	if (k < 0) {
		fprintf(stderr, "calls: unknown kind %s\n", kind);
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &w0);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	for (long i = 0; i < n; i++) {
		switch (k) {
		case 0:
			sum += syscall(SYS_getppid);
			break;
		case 1:
			sum += syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
			break;
		case 2:
			sum += syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
			break;
		case 3:
			sum += syscall(SYS_sched_yield);
			break;
		case 4: {
			void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p == MAP_FAILED) {
				perror("mmap");
				return 1;
			}
			sum += munmap(p, 4096);
			break;
		}
		}
	}
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	clock_gettime(CLOCK_MONOTONIC, &w1);
	printf("%ld %ld\n", ns(w0, w1), ns(c0, c1));
	return sum == -1;
}
