/*
 * pagein_fork FILE: maps FILE, drops its pages from the cache and touches
 * every page (each load waits for the device), then starts a child that
 * sleeps 300 ms and waits for it, and only then makes its next call (an
 * fsync of FILE). The gap before that call holds a process's start: its
 * sleep through the child's run is no wait for mapped pages. With
 * "spawn", the child is started with posix_spawn instead of fork. The
 * tests of both recorders run it (TestPageinNotAcrossProcessStart).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
extern char **environ;
int main(int argc, char **argv) {
	int fd = open(argv[1], O_RDONLY);
	if (fd < 0) return 1;
	off_t n = lseek(fd, 0, SEEK_END);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	volatile unsigned char *m = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) return 2;
	unsigned sum = 0;
	for (off_t o = 0; o < n; o += 4096) sum += m[o];
	pid_t p;
	if (argc > 2 && strcmp(argv[2], "spawn") == 0) {
		char *args[] = {"sleep", "0.3", NULL};
		if (posix_spawnp(&p, "sleep", NULL, NULL, args, environ) != 0) return 3;
	} else if ((p = fork()) == 0) {
		usleep(300000);
		_exit(0);
	}
	int st;
	waitpid(p, &st, 0);
	fsync(fd);
	close(fd);
	munmap((void *)m, n);
	printf("%u\n", sum);
	return 0;
}
