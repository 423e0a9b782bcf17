/*
 * cpu OUT CMD [ARG...]: runs CMD and writes to the file OUT its wall time
 * and the CPU time (user + system) of CMD and every process it waited for
 * (getrusage RUSAGE_CHILDREN), in ns: "wall cpu". Under iotrace record,
 * that is the program's CPU and iotrace's (the helper's) together.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: cpu OUT CMD [ARG...]\n");
		return 2;
	}
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		perror(argv[2]);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0) {
		perror("waitpid");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	long long cpu = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
	FILE *f = fopen(argv[1], "w");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	fprintf(f, "%lld %lld\n", (b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec), cpu);
	fclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
