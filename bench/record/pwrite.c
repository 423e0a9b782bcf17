/* N × 4 KiB pwrite to one file; prints the loop's time in ns. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
	static char buf[4096];
	long n = argc > 2 ? atol(argv[2]) : 200000;
	int fd = open(argc > 1 ? argv[1] : "pwrite.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (fd < 0) {
		perror("open");
		return 1;
	}
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++) {
		if (pwrite(fd, buf, sizeof buf, (i % 256) * 4096) != sizeof buf) {
			perror("pwrite");
			return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	close(fd);
	printf("%lld\n", (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
	return 0;
}
