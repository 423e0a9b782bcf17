/*
 * The calls mdtest makes (mdtest 3.3, POSIX backend, unique directory per
 * rank: -u), for the prediction benchmark (bench/predict/run.sh): Debian
 * has no mdtest package, so this program makes the calls of one mdtest
 * iteration with the options below, and times itself as the benchmark
 * needs.
 *
 *   mpirun -np P mdtest -n N [-w BYTES] [-y] -d DIR
 *
 *   -n   files (and N/4 directories) per rank
 *   -w   bytes written to each file after its creation (mdtest -w), and
 *        read back in the read phase (mdtest -e)
 *   -y   fsync each file after writing it, before its close (mdtest -y)
 *
 * Each rank works in DIR/mdtest_tree.RANK (mkdir), with an MPI_Barrier
 * between phases as mdtest's: directory creation (mkdir), stat, removal
 * (rmdir); file creation (open O_CREAT|O_WRONLY, write, fsync, close),
 * stat, read (open O_RDONLY, read, close), removal (unlink); then its
 * directory's removal.
 *
 * Output, on rank 0: "io_seconds S", the span from the earliest rank's
 * first file call to the latest rank's last one (CLOCK_MONOTONIC, one
 * host): the application's I/O time the benchmark predicts.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int rank;

static void die(const char *what, const char *path) {
	fprintf(stderr, "mdtest: rank %d: %s %s\n", rank, what, path ? path : "");
	MPI_Abort(MPI_COMM_WORLD, 1);
}

static int64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	const char *dir = NULL;
	int n = 100, wbytes = 0, sync_ = 0, c;
	while ((c = getopt(argc, argv, "n:w:yd:")) != -1) {
		switch (c) {
		case 'n': n = atoi(optarg); break;
		case 'w': wbytes = atoi(optarg); break;
		case 'y': sync_ = 1; break;
		case 'd': dir = optarg; break;
		default: die("usage: mdtest -n N [-w BYTES] [-y] -d DIR", NULL);
		}
	}
	if (!dir || n <= 0 || wbytes < 0) die("need -d DIR and -n N > 0", NULL);
	char *buf = calloc(1, wbytes + 1);
	memset(buf, 'm', wbytes);
	char top[4096], p[4096 + 64];
	snprintf(top, sizeof top, "%s/mdtest_tree.%d", dir, rank);
	int ndirs = n / 4 > 0 ? n / 4 : 1;
	struct stat st;

	MPI_Barrier(MPI_COMM_WORLD);
	int64_t t0 = now_ns();
	if (mkdir(top, 0755) < 0) die("mkdir", top);
	MPI_Barrier(MPI_COMM_WORLD);
	for (int i = 0; i < ndirs; i++) {
		snprintf(p, sizeof p, "%s/dir.mdtest.%d.%d", top, rank, i);
		if (mkdir(p, 0755) < 0) die("mkdir", p);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	for (int i = 0; i < ndirs; i++) {
		snprintf(p, sizeof p, "%s/dir.mdtest.%d.%d", top, rank, i);
		if (stat(p, &st) < 0) die("stat", p);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	for (int i = 0; i < ndirs; i++) {
		snprintf(p, sizeof p, "%s/dir.mdtest.%d.%d", top, rank, i);
		if (rmdir(p) < 0) die("rmdir", p);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	for (int i = 0; i < n; i++) {
		snprintf(p, sizeof p, "%s/file.mdtest.%d.%d", top, rank, i);
		int fd = open(p, O_CREAT | O_WRONLY, 0664);
		if (fd < 0) die("open", p);
		if (wbytes && write(fd, buf, wbytes) != wbytes) die("write", p);
		if (sync_ && fsync(fd) < 0) die("fsync", p);
		if (close(fd) < 0) die("close", p);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	for (int i = 0; i < n; i++) {
		snprintf(p, sizeof p, "%s/file.mdtest.%d.%d", top, rank, i);
		if (stat(p, &st) < 0) die("stat", p);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (wbytes)
		for (int i = 0; i < n; i++) {
			snprintf(p, sizeof p, "%s/file.mdtest.%d.%d", top, rank, i);
			int fd = open(p, O_RDONLY);
			if (fd < 0) die("open", p);
			if (read(fd, buf, wbytes) != wbytes) die("read", p);
			if (close(fd) < 0) die("close", p);
		}
	MPI_Barrier(MPI_COMM_WORLD);
	for (int i = 0; i < n; i++) {
		snprintf(p, sizeof p, "%s/file.mdtest.%d.%d", top, rank, i);
		if (unlink(p) < 0) die("unlink", p);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (rmdir(top) < 0) die("rmdir", top);
	int64_t t1 = now_ns(), lo, hi;
	MPI_Reduce(&t0, &lo, 1, MPI_INT64_T, MPI_MIN, 0, MPI_COMM_WORLD);
	MPI_Reduce(&t1, &hi, 1, MPI_INT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
	if (rank == 0) printf("io_seconds %.6f\n", (hi - lo) / 1e9);
	free(buf);
	MPI_Finalize();
	return 0;
}
