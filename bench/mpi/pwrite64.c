/* N × 64-byte pwrite to one file; prints the loop's wall and CPU time in ns. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long long ns(clockid_t c) {
	struct timespec t;
	clock_gettime(c, &t);
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv) {
	static char buf[64];
	long n = argc > 2 ? atol(argv[2]) : 1000000;
	int fd = open(argc > 1 ? argv[1] : "pwrite.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (fd < 0) {
		perror("open");
		return 1;
	}
	long long w0 = ns(CLOCK_MONOTONIC), c0 = ns(CLOCK_PROCESS_CPUTIME_ID);
	for (long i = 0; i < n; i++) {
		if (pwrite(fd, buf, sizeof buf, (i % 1024) * 64) != sizeof buf) {
			perror("pwrite");
			return 1;
		}
	}
	long long w1 = ns(CLOCK_MONOTONIC), c1 = ns(CLOCK_PROCESS_CPUTIME_ID);
	close(fd);
	printf("%lld %lld\n", w1 - w0, c1 - c0);
	return 0;
}
