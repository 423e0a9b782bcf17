/*
 * iotrace clock library: what iotrace's ptrace recorder preloads into an
 * MPI program so that the ranks' clocks are measured against rank 0's
 * (mpiclock.h). It wraps MPI_Init, MPI_Init_thread and MPI_Finalize only
 * (as MPI_X and as PMPI_X, for Open MPI's Fortran bindings), records
 * nothing, and writes each reading as a line "phase t1 t3 ref" to the
 * file $IOTRACE_CLOCK_FILE, which iotrace reads when the program ends.
 * $IOTRACE_CLOCK_BASE is the wall clock minus CLOCK_MONOTONIC that the
 * rank's trace counts with.
 *
 * Built by iotrace (capture/preload) as libiotrace-clock.so:
 * cc -shared -fPIC -O2 -I<mpi.h dir> clocklib.c -ldl.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

#include "mpilib.h"
#include "mpiclock.h"

static int64_t base(void) {
	const char *v = getenv("IOTRACE_CLOCK_BASE");
	return v ? strtoll(v, NULL, 10) : 0;
}

static void out(int phase, const struct clock_reading *c) {
	const char *name = getenv("IOTRACE_CLOCK_FILE");
	if (!name || !*name) return;
	char line[128];
	int n = snprintf(line, sizeof line, "%d %lld %lld %lld\n", phase, (long long)c->t1, (long long)c->t3, (long long)c->ref);
	int fd = open(name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0) return;
	ssize_t w = write(fd, line, (size_t)n);
	(void)w;
	close(fd);
}

WRAP(int, MPI_Init, (int *argc, char ***argv), (argc, argv)) {
	REALP(MPI_Init, int (*)(int *, char ***));
	int rc = real(argc, argv);
	if (rc == MPI_SUCCESS && !mpi_off) clock_sync(0, base(), out);
	return rc;
}

WRAP(int, MPI_Init_thread, (int *argc, char ***argv, int req, int *prov), (argc, argv, req, prov)) {
	REALP(MPI_Init_thread, int (*)(int *, char ***, int, int *));
	int rc = real(argc, argv, req, prov);
	if (rc == MPI_SUCCESS && !mpi_off) clock_sync(0, base(), out);
	return rc;
}

WRAP(int, MPI_Finalize, (void), ()) {
	REALP(MPI_Finalize, int (*)(void));
	if (!mpi_off) clock_sync(1, base(), out);
	return real();
}
