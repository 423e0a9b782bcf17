/* iotrace-spawn: the calibration of what the shim costs a process start
 * (preload.ImageCost). "iotrace-spawn N FILE" starts itself N times, one
 * after another, as a shell starts its commands (fork, exec, wait), each
 * child opening and closing FILE (one recorded call), and prints the
 * loop's time in ns. "iotrace-spawn N FILE pre": each child first sets
 * up its standard output before its exec, as git's run_command and make
 * do (an open of /dev/null, which makes the child's spool before the
 * exec replaces it). Run under the shim and without it: the difference
 * per process, less what the trace keeps of it, is the shim's cost per
 * process image that no record measures (loading the library, unmapping
 * the spools). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv) {
	if (argc == 3 && argv[1][0] == '-' && argv[1][1] == 'c' && !argv[1][2]) {
		int fd = open(argv[2], O_RDONLY);
		if (fd >= 0) close(fd);
		return 0;
	}
	if (argc != 3 && !(argc == 4 && argv[3][0] == 'p')) {
		fprintf(stderr, "usage: iotrace-spawn N FILE [pre]\n");
		return 2;
	}
	int pre = argc == 4;
	int n = atoi(argv[1]);
	long long t0 = now();
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p < 0) return 1;
		if (p == 0) {
			if (pre) {
				int fd = open("/dev/null", O_WRONLY);
				if (fd >= 0 && fd != 1) {
					dup2(fd, 1);
					close(fd);
				}
			}
			char *a[] = {argv[0], "-c", argv[2], NULL};
			execv("/proc/self/exe", a);
			_exit(127);
		}
		int st;
		if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 1;
	}
	printf("%lld\n", now() - t0);
	return 0;
}
