/*
 * N × 4 KiB pwrite at (i mod 256) × 4 KiB to one file; prints the loop's
 * time in ns. The modes are the baselines of the replay overhead
 * benchmark (bench/replay/run.sh):
 *
 *   plain    one static 4 KiB buffer, written again and again
 *   pattern  consecutive 4 KiB slices of a 1 MiB + 1 byte xorshift buffer,
 *            as ioreplay writes them (its non-repeating data)
 *   timed    pattern, and the clock read before and after every call with
 *            the durations kept, as a replayer that measures each call does
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PERIOD ((1 << 20) + 1)

static int64_t now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv) {
	if (argc < 4) {
		fprintf(stderr, "usage: pwrite FILE N plain|pattern|timed\n");
		return 2;
	}
	long n = atol(argv[2]);
	const char *mode = argv[3];
	int pattern = strcmp(mode, "plain") != 0, timed = strcmp(mode, "timed") == 0;
	static char hot[4096];
	memset(hot, 0x5a, sizeof hot);
	char *buf = malloc(PERIOD + 4096);
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	for (long i = 0; i + 8 <= PERIOD; i += 8) {
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		uint64_t v = x * 0x2545f4914f6cdd1dULL;
		memcpy(buf + i, &v, 8);
	}
	memcpy(buf + PERIOD, buf, 4096);
	int64_t *durs = timed ? malloc(n * sizeof *durs) : NULL;
	int fd = open(argv[1], O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (fd < 0) {
		perror("open");
		return 1;
	}
	long pos = 12345;
	int64_t a = now();
	for (long i = 0; i < n; i++) {
		const char *p = hot;
		if (pattern) {
			p = buf + pos;
			pos += 4096;
			if (pos >= PERIOD)
				pos -= PERIOD;
		}
		int64_t t0 = timed ? now() : 0;
		if (pwrite(fd, p, 4096, (i % 256) * 4096) != 4096) {
			perror("pwrite");
			return 1;
		}
		if (timed)
			durs[i] = now() - t0;
	}
	int64_t b = now();
	close(fd);
	if (timed) {
		int64_t s = 0;
		for (long i = 0; i < n; i++)
			s += durs[i];
		if (s < 0)
			return 1;
	}
	printf("%lld\n", (long long)(b - a));
	return 0;
}
