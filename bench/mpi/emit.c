/*
 * The shim's own cost per recorded call, without the system call: a loop
 * of what a wrapper does around the call it records — two clock readings
 * and one record into the thread's block of the spool. Built with the
 * shim's source:
 *
 *   cc -O2 -I capture/preload/shim emit.c capture/preload/shim/shim.c -ldl -lpthread
 *   IOTRACE_SPOOL=DIR ./emit N
 *
 * Prints the wall and CPU ns per record of the loop.
 */
#include "shim.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static long long ns(clockid_t c){struct timespec t;clock_gettime(c,&t);return t.tv_sec*1000000000LL+t.tv_nsec;}
int main(int argc, char **argv) {
	long n = atol(argv[1]);
	long long w0 = ns(CLOCK_MONOTONIC), c0 = ns(CLOCK_THREAD_CPUTIME_ID);
	for (long i = 0; i < n; i++) {
		struct rec r = {0};
		r.call = C_PWRITE; r.fd = 3; r.off = i*64; r.size = 64; r.ret = 64;
		int64_t t0 = iotrace_now();
		r.start = t0; r.dur = iotrace_now() - t0;
		iotrace_emit(&r, NULL, NULL);
	}
	long long w1 = ns(CLOCK_MONOTONIC), c1 = ns(CLOCK_THREAD_CPUTIME_ID);
	printf("%.1f %.1f\n", (w1-w0)/(double)n, (c1-c0)/(double)n);
	return 0;
}
