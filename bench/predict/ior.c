/*
 * The calls IOR makes (IOR 3.3's aiori-POSIX and aiori-MPIIO backends), for
 * the prediction benchmark (bench/predict/run.sh): Debian has no IOR
 * package, so this program makes exactly the calls of one IOR test with
 * the options below, and times itself as the benchmark needs.
 *
 *   mpirun -np P ior [-a POSIX|MPIIO] [-c] [-d] [-F] [-e] [-w] [-r]
 *                    [-b BLOCK] [-t XFER] [-s SEGMENTS] -o FILE
 *
 *   -a   API: POSIX (open/lseek/write/read/fsync/close, as IOR's POSIX
 *        backend) or MPIIO (MPI_File_open/_write_at(_all)/_read_at(_all)/
 *        _sync/_get_size/_close)
 *   -c   collective MPI-IO (MPI_File_write_at_all, _read_at_all)
 *   -d   O_DIRECT (POSIX; IOR's --posix.odirect); buffers page-aligned
 *   -F   file per process (FILE.00000000, FILE.00000001, …), else one
 *        shared file, segmented as IOR lays it out: segment s of rank r at
 *        (s × P + r) × BLOCK
 *   -e   fsync (MPI_File_sync) after the write phase, before the close
 *   -w, -r  write phase, read phase (both when neither is given)
 *   -b, -t, -s  block size (bytes per rank per segment), transfer size
 *        (bytes per call), segments: IOR's meaning; sizes take k, m, g
 *
 * Each phase is what IOR does: open (a shared POSIX file is created by
 * rank 0 before the others open it), then for every transfer lseek + write
 * (POSIX) or one write_at call (MPI-IO), the optional sync, a stat of the
 * file (IOR checks the size it wrote: stat, or MPI_File_get_size), close;
 * an MPI_Barrier between the phases, as IOR's.
 *
 * Output, on rank 0: "io_seconds S", the span from the earliest rank's
 * first file call to the latest rank's last one (CLOCK_MONOTONIC, one
 * host; the ranks' readings are gathered after the span): the
 * application's I/O time the benchmark predicts. MPI_Init, the buffers'
 * allocation and MPI_Finalize are outside it.
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

static int rank, nprocs;

static void die(const char *what) {
	fprintf(stderr, "ior: rank %d: %s\n", rank, what);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

static long long size_arg(const char *s) {
	char *end;
	long long v = strtoll(s, &end, 10);
	switch (*end) {
	case 'k': case 'K': v <<= 10; break;
	case 'm': case 'M': v <<= 20; break;
	case 'g': case 'G': v <<= 30; break;
	case 0: break;
	default: die("bad size");
	}
	return v;
}

static int64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	const char *api = "POSIX", *path = NULL;
	int collective = 0, direct = 0, fpp = 0, fsync_ = 0, wr = 0, rd = 0, c;
	long long block = 1 << 20, xfer = 256 << 10, segs = 1;
	while ((c = getopt(argc, argv, "a:cdFewrb:t:s:o:")) != -1) {
		switch (c) {
		case 'a': api = optarg; break;
		case 'c': collective = 1; break;
		case 'd': direct = 1; break;
		case 'F': fpp = 1; break;
		case 'e': fsync_ = 1; break;
		case 'w': wr = 1; break;
		case 'r': rd = 1; break;
		case 'b': block = size_arg(optarg); break;
		case 't': xfer = size_arg(optarg); break;
		case 's': segs = size_arg(optarg); break;
		case 'o': path = optarg; break;
		default: die("usage: ior [-a POSIX|MPIIO] [-c] [-d] [-F] [-e] [-w] [-r] [-b B] [-t T] [-s S] -o FILE");
		}
	}
	if (!path || xfer <= 0 || block % xfer) die("need -o FILE and a block size that is a multiple of the transfer size");
	if (!wr && !rd) wr = rd = 1;
	int mpiio = strcmp(api, "MPIIO") == 0;
	if (!mpiio && strcmp(api, "POSIX")) die("-a takes POSIX or MPIIO");

	char name[4096];
	if (fpp) snprintf(name, sizeof name, "%s.%08d", path, rank);
	else snprintf(name, sizeof name, "%s", path);
	char *buf;
	if (posix_memalign((void **)&buf, 4096, xfer)) die("out of memory");
	for (long long i = 0; i < xfer; i++) buf[i] = (char)(i * 131 + rank);
	long long per_seg = block / xfer;

	MPI_Barrier(MPI_COMM_WORLD);
	int64_t t0 = now_ns();
	for (int phase = 0; phase < 2; phase++) {
		int writing = phase == 0;
		if ((writing && !wr) || (!writing && !rd)) continue;
		if (!writing && wr) MPI_Barrier(MPI_COMM_WORLD);
		if (mpiio) {
			MPI_File fh;
			int amode = writing ? MPI_MODE_CREATE | MPI_MODE_RDWR : MPI_MODE_RDONLY;
			if (MPI_File_open(fpp ? MPI_COMM_SELF : MPI_COMM_WORLD, name, amode, MPI_INFO_NULL, &fh) != MPI_SUCCESS) die("MPI_File_open");
			for (long long s = 0; s < segs; s++)
				for (long long i = 0; i < per_seg; i++) {
					MPI_Offset off = fpp ? s * block + i * xfer : (s * nprocs + rank) * block + i * xfer;
					int rc;
					if (writing)
						rc = collective ? MPI_File_write_at_all(fh, off, buf, (int)xfer, MPI_BYTE, MPI_STATUS_IGNORE)
						                : MPI_File_write_at(fh, off, buf, (int)xfer, MPI_BYTE, MPI_STATUS_IGNORE);
					else
						rc = collective ? MPI_File_read_at_all(fh, off, buf, (int)xfer, MPI_BYTE, MPI_STATUS_IGNORE)
						                : MPI_File_read_at(fh, off, buf, (int)xfer, MPI_BYTE, MPI_STATUS_IGNORE);
					if (rc != MPI_SUCCESS) die(writing ? "MPI_File_write_at" : "MPI_File_read_at");
				}
			if (writing && fsync_ && MPI_File_sync(fh) != MPI_SUCCESS) die("MPI_File_sync");
			MPI_Offset size;
			if (writing) MPI_File_get_size(fh, &size);
			MPI_File_close(&fh);
		} else {
			int flags = writing ? O_CREAT | O_RDWR : O_RDONLY;
			if (direct) flags |= O_DIRECT;
			int fd;
			if (writing && !fpp) { /* IOR: rank 0 creates the shared file, then the others open it */
				if (rank == 0 && (fd = open(name, flags, 0664)) < 0) die("open");
				MPI_Barrier(MPI_COMM_WORLD);
				if (rank != 0 && (fd = open(name, flags & ~O_CREAT, 0664)) < 0) die("open");
			} else if ((fd = open(name, flags, 0664)) < 0)
				die("open");
			for (long long s = 0; s < segs; s++)
				for (long long i = 0; i < per_seg; i++) {
					off_t off = fpp ? s * block + i * xfer : (s * nprocs + rank) * block + i * xfer;
					if (lseek(fd, off, SEEK_SET) < 0) die("lseek");
					ssize_t n = writing ? write(fd, buf, xfer) : read(fd, buf, xfer);
					if (n != xfer) die(writing ? "write" : "read");
				}
			if (writing && fsync_ && fsync(fd) < 0) die("fsync");
			struct stat st;
			if (writing && stat(name, &st) < 0) die("stat");
			if (close(fd) < 0) die("close");
		}
	}
	int64_t t1 = now_ns(), lo, hi;
	MPI_Reduce(&t0, &lo, 1, MPI_INT64_T, MPI_MIN, 0, MPI_COMM_WORLD);
	MPI_Reduce(&t1, &hi, 1, MPI_INT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
	if (rank == 0) printf("io_seconds %.6f\n", (hi - lo) / 1e9);
	free(buf);
	MPI_Finalize();
	return 0;
}
