/*
 * The shim's own cost per recorded call, without the system call: a loop
 * of what a wrapper does around the call it records — two clock readings
 * and one record into a ring that another thread drains (moving the tail
 * every millisecond, as iotrace does). Built with the shim's source:
 *
 *   cc -O2 -I capture/preload/shim emit.c capture/preload/shim/shim.c -ldl -lpthread
 *   IOTRACE_SPOOL=DIR IOTRACE_RING=32768 IOTRACE_CONSUMER=$$ ./emit N
 *
 * Prints the wall and CPU ns per record of the loop.
 */
#include "shim.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <dirent.h>
static long long ns(clockid_t c){struct timespec t;clock_gettime(c,&t);return t.tv_sec*1000000000LL+t.tv_nsec;}
static volatile int stop;
static void *consumer(void *arg) {
	/* find the ring file, map it, advance tail to head every 1 ms */
	const char *dir = getenv("IOTRACE_SPOOL");
	char name[512] = {0};
	DIR *d = opendir(dir); struct dirent *e;
	while ((e = readdir(d))) if (!strncmp(e->d_name, "ring-", 5)) snprintf(name, sizeof name, "%s/%s", dir, e->d_name);
	closedir(d);
	int fd = open(name, O_RDWR);
	char *m = mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_SHARED, fd, 0);
	while (!stop) {
		uint64_t head = __atomic_load_n((uint64_t*)(m+3200), __ATOMIC_ACQUIRE);
		__atomic_store_n((uint64_t*)(m+3264), head, __ATOMIC_RELEASE);
		usleep(1000);
	}
	return arg;
}
int main(int argc, char **argv) {
	long n = atol(argv[1]);
	pthread_t th; pthread_create(&th, NULL, consumer, NULL);
	usleep(10000);
	long long w0 = ns(CLOCK_MONOTONIC), c0 = ns(CLOCK_THREAD_CPUTIME_ID);
	for (long i = 0; i < n; i++) {
		struct rec r = {0};
		r.call = C_PWRITE; r.fd = 3; r.off = i*64; r.size = 64; r.ret = 64;
		int64_t t0 = iotrace_now();
		r.start = t0; r.dur = iotrace_now() - t0;
		iotrace_emit(&r, NULL, NULL);
	}
	long long w1 = ns(CLOCK_MONOTONIC), c1 = ns(CLOCK_THREAD_CPUTIME_ID);
	stop = 1; pthread_join(th, NULL);
	printf("%.1f %.1f\n", (w1-w0)/(double)n, (c1-c0)/(double)n);
	return 0;
}
