/*
 * pagein FILE: maps FILE, drops its pages from the cache and touches every
 * page (each load waits for the device), closes it, touches the pages again
 * (cached: no wait) and stats the file. The tests of both recorders run it
 * (capture/preload, capture/ptrace: TestPageinWaits).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
int main(int argc, char **argv) {
	int fd = open(argv[1], O_RDONLY);
	if (fd < 0) return 1;
	off_t n = lseek(fd, 0, SEEK_END);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED); /* cold: the loads below read the device */
	volatile unsigned char *m = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) return 2;
	unsigned sum = 0;
	for (off_t o = 0; o < n; o += 4096) sum += m[o];
	close(fd);
	for (off_t o = 0; o < n; o += 4096) sum += m[o]; /* cached now: no wait */
	struct stat st;
	stat(argv[1], &st);
	munmap((void *)m, n);
	printf("%u\n", sum);
	return 0;
}
