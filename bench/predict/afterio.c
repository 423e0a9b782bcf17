/*
 * afterio DIR N: how long the same computation takes right after different
 * file calls on the file system of DIR — why think time captured on one
 * file system is not the same program's think time on another (docs/
 * REPLAY.md, "What a prediction cannot know"; bench/predict/run.sh prints
 * it beside the prediction tables).
 *
 * For each kind, N times: the kind's file calls on DIR/afterio.dat, then a
 * fixed computation (a loop over a 1 MiB buffer, about 4 µs on an idle
 * processor), timed by CLOCK_MONOTONIC (wall) and CLOCK_THREAD_CPUTIME_ID
 * (this thread's processor time). Kinds:
 *   none      no call: the computation alone, back to back
 *   write     a 4 KiB pwrite into the page cache
 *   fdatasync a 4 KiB pwrite and fdatasync (on a disk, the thread sleeps)
 *   unlink    close, unlink, create, 4 KiB pwrite, fdatasync (a database's
 *             journal, a compiler's temporary file)
 * Prints one line per kind: "kind wall_ns cpu_ns", the medians over the N
 * computations.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long ns(clockid_t c) {
	struct timespec t;
	clock_gettime(c, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static volatile double sink;
static char big[1 << 20];

static void compute(void) {
	double x = 1;
	for (int i = 0; i < 2000; i++) x = x * 1.0000001 + big[(i * 4099) & ((1 << 20) - 1)];
	sink = x;
}

static int cmp(const void *a, const void *b) {
	long long x = *(const long long *)a, y = *(const long long *)b;
	return x < y ? -1 : x > y;
}

static long long median(long long *v, int n) {
	qsort(v, n, sizeof v[0], cmp);
	return v[n / 2];
}

int main(int argc, char **argv) {
	if (argc != 3 || atoi(argv[2]) < 1) {
		fprintf(stderr, "usage: afterio DIR N\n");
		return 2;
	}
	int n = atoi(argv[2]);
	char path[4096];
	if (snprintf(path, sizeof path, "%s/afterio.dat", argv[1]) >= (int)sizeof path) return 2;
	static char buf[4096];
	memset(buf, 1, sizeof buf);
	memset(big, 1, sizeof big);
	long long *wall = malloc(n * sizeof *wall), *cpu = malloc(n * sizeof *cpu);
	if (!wall || !cpu) return 1;
	const char *kinds[] = {"none", "write", "fdatasync", "unlink"};
	for (int k = 0; k < 4; k++) {
		int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
		if (fd < 0) {
			perror(path);
			return 1;
		}
		for (int i = 0; i < n; i++) {
			int bad = 0;
			switch (k) {
			case 1:
				bad = pwrite(fd, buf, sizeof buf, (i % 256) * 4096L) != sizeof buf;
				break;
			case 2:
				bad = pwrite(fd, buf, sizeof buf, 0) != sizeof buf || fdatasync(fd) != 0;
				break;
			case 3:
				close(fd);
				unlink(path);
				fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
				bad = fd < 0 || pwrite(fd, buf, sizeof buf, 0) != sizeof buf || fdatasync(fd) != 0;
				break;
			}
			if (bad) {
				perror(path);
				return 1;
			}
			long long w0 = ns(CLOCK_MONOTONIC), c0 = ns(CLOCK_THREAD_CPUTIME_ID);
			compute();
			cpu[i] = ns(CLOCK_THREAD_CPUTIME_ID) - c0;
			wall[i] = ns(CLOCK_MONOTONIC) - w0;
		}
		close(fd);
		unlink(path);
		printf("%s %lld %lld\n", kinds[k], median(wall, n), median(cpu, n));
	}
	return 0;
}
