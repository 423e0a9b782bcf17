/*
 * ior FILE BLOCK XFER ITER [loop]: the system calls of one rank of
 *
 *   ior -a POSIX -w -r -t XFER -b BLOCK -F -i ITER
 *
 * as IOR's POSIX backend (src/aiori-POSIX.c) makes them: per iteration,
 * the write phase (open64 O_CREAT|O_RDWR 0664; per transfer an lseek64 to
 * its offset and a write of XFER bytes; close), the file's size (stat),
 * the read phase (open64 O_RDWR; per transfer an lseek64 and a read;
 * close), and the file removed (unlink), IOR's default without -k. IOR
 * changes the buffer's data signature before each write; so does this.
 *
 * With "loop", a tight loop of the same calls instead: the file opened
 * once, then ITER passes over it, each transfer an lseek64 and a write
 * of XFER bytes in place (no page-cache growth, no other call), closed
 * at the end.
 *
 * Prints, for the two phases together (open to close, as IOR times them):
 * the transfers, the wall time and this process's CPU time in ns, then the
 * process's CPU time from its start to the end (the shim's start and
 * exit included): "transfers wall cpu proccpu".
 */
#define _GNU_SOURCE
#define _LARGEFILE64_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static long long ns(clockid_t c) {
	struct timespec t;
	clock_gettime(c, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void fail(const char *what) {
	perror(what);
	exit(1);
}

int main(int argc, char **argv) {
	if (argc != 5 && !(argc == 6 && strcmp(argv[5], "loop") == 0)) {
		fprintf(stderr, "usage: ior FILE BLOCK XFER ITER [loop]\n");
		return 2;
	}
	const char *name = argv[1];
	long long block = atoll(argv[2]), xfer = atoll(argv[3]);
	long iter = atol(argv[4]);
	if (xfer <= 0 || block < xfer || block % xfer != 0 || iter < 0) {
		fprintf(stderr, "ior: BLOCK must be a multiple of XFER\n");
		return 2;
	}
	long long n = block / xfer;
	uint64_t *buf = aligned_alloc(4096, xfer);
	if (!buf) fail("aligned_alloc");
	for (long long i = 0; i < xfer / 8; i++) buf[i] = i;
	long long wall = 0, cpu = 0;
	if (argc == 6) {
		long long w0 = ns(CLOCK_MONOTONIC), c0 = ns(CLOCK_PROCESS_CPUTIME_ID);
		int fd = open64(name, O_CREAT | O_RDWR, 0664);
		if (fd < 0) fail("open64");
		for (long it = 0; it < iter; it++)
			for (long long i = 0; i < n; i++) {
				buf[0] = (uint64_t)it << 32 | (uint64_t)i;
				if (lseek64(fd, i * xfer, SEEK_SET) == -1) fail("lseek64");
				if (write(fd, buf, xfer) != xfer) fail("write");
			}
		if (close(fd) != 0) fail("close");
		wall = ns(CLOCK_MONOTONIC) - w0;
		cpu = ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
		printf("%lld %lld %lld %lld\n", n * iter, wall, cpu, ns(CLOCK_PROCESS_CPUTIME_ID));
		return 0;
	}
	for (long it = 0; it < iter; it++) {
		long long w0 = ns(CLOCK_MONOTONIC), c0 = ns(CLOCK_PROCESS_CPUTIME_ID);
		int fd = open64(name, O_CREAT | O_RDWR, 0664);
		if (fd < 0) fail("open64");
		for (long long i = 0; i < n; i++) {
			buf[0] = (uint64_t)it << 32 | (uint64_t)i;
			if (lseek64(fd, i * xfer, SEEK_SET) == -1) fail("lseek64");
			if (write(fd, buf, xfer) != xfer) fail("write");
		}
		if (close(fd) != 0) fail("close");
		wall += ns(CLOCK_MONOTONIC) - w0;
		cpu += ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
		struct stat st;
		if (stat(name, &st) != 0 || st.st_size != block) fail("stat");
		w0 = ns(CLOCK_MONOTONIC), c0 = ns(CLOCK_PROCESS_CPUTIME_ID);
		fd = open64(name, O_RDWR);
		if (fd < 0) fail("open64");
		for (long long i = 0; i < n; i++) {
			if (lseek64(fd, i * xfer, SEEK_SET) == -1) fail("lseek64");
			if (read(fd, buf, xfer) != xfer) fail("read");
		}
		if (close(fd) != 0) fail("close");
		wall += ns(CLOCK_MONOTONIC) - w0;
		cpu += ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
		if (unlink(name) != 0) fail("unlink");
	}
	printf("%lld %lld %lld %lld\n", 2 * n * iter, wall, cpu, ns(CLOCK_PROCESS_CPUTIME_ID));
	return 0;
}
