/*
 * The C peer of the timing-fidelity benchmark: one thread issues N 4 KiB
 * pwrites to FILE, each at its deadline GAP_US apart (start to start, open
 * loop), waiting for it as well as a C program can: clock_nanosleep(2)
 * until a margin before the deadline, with a timer slack of 1 ns, then a
 * spin on the clock. The margin is calibrated as ioreplay calibrates its
 * own: the 90th percentile of how late 15 sleeps of 200 µs wake, plus
 * 20 µs, within [30 µs, 1 ms].
 *
 * Prints, in seconds, "p50 p99 max elapsed": the issue lag (how late each
 * call started) and the time from the first call's start to the last
 * one's end. What it cannot avoid (the virtual processor descheduled by
 * the host, interrupts) is what no replayer on this machine can avoid.
 *
 *   deadlines FILE N GAP_US
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static int64_t now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_until(int64_t t) {
	struct timespec ts = {t / 1000000000, t % 1000000000};
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
	}
}

static int cmp(const void *a, const void *b) {
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv) {
	if (argc != 4) {
		fprintf(stderr, "usage: deadlines FILE N GAP_US\n");
		return 2;
	}
	long n = atol(argv[2]);
	int64_t gap = atol(argv[3]) * 1000;
	if (n < 1 || gap < 1) {
		fprintf(stderr, "deadlines: N and GAP_US must be positive\n");
		return 2;
	}
	int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0);
	int64_t over[15];
	for (int i = 0; i < 15; i++) {
		int64_t t = now();
		sleep_until(t + 200000);
		over[i] = now() - t - 200000;
	}
	qsort(over, 15, sizeof over[0], cmp);
	int64_t margin = over[15 * 9 / 10] + 20000;
	margin = margin < 30000 ? 30000 : margin > 1000000 ? 1000000 : margin;

	char *buf = malloc(4096);
	memset(buf, 'x', 4096);
	int64_t *lag = malloc(n * sizeof *lag);
	int64_t t0 = now() + 1000000, end = 0;
	for (long i = 0; i < n; i++) {
		int64_t d = t0 + i * gap, t = now();
		if (d - t > margin) sleep_until(d - margin);
		while ((t = now()) < d) {
		}
		lag[i] = t - d;
		if (pwrite(fd, buf, 4096, (off_t)i * 4096) != 4096) {
			perror("pwrite");
			return 1;
		}
		end = now();
	}
	close(fd);
	int64_t first = t0 + lag[0];
	qsort(lag, n, sizeof *lag, cmp);
	printf("%.9f %.9f %.9f %.9f\n", lag[(n - 1) / 2] / 1e9, lag[(n * 99 + 99) / 100 - 1] / 1e9, lag[n - 1] / 1e9, (end - first) / 1e9);
	return 0;
}
