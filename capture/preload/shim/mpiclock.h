/*
 * iotrace: one clock for a capture. Each rank measures its clock against
 * rank 0's with a ping-pong over MPI (Cristian's method, as MPI_Wtime-based
 * tools do): it sends rank 0 a question at t1 on its own clock, rank 0
 * answers with its own clock's reading, the answer arrives at t3. Rank 0
 * read its clock between t1 and t3, so the rank's clock read
 * (t1 + t3)/2 − ref more than rank 0's, within ±(t3 − t1)/2. The
 * exchange with the shortest round trip is kept: of CLOCK_ROUNDS, or
 * up to CLOCK_MAX_ROUNDS while none came back within CLOCK_GOOD_RTT (a
 * busy host delays some answers).
 * iotrace turns the readings into the trace's clock samples
 * (docs/FORMAT.md, "One clock").
 *
 * Included by mpi.c (the preload shim, in its MPI_Init and MPI_Finalize
 * wrappers) and clocklib.c (the clock library iotrace's ptrace recorder
 * preloads), after mpilib.h. The exchange runs on a communicator of its
 * own (a duplicate of MPI_COMM_WORLD), so its messages never meet the
 * program's; every rank of the job must take part, which iotrace makes
 * sure of before it asks for it (IOTRACE_CLOCK_SYNC).
 */
#ifndef IOTRACE_MPICLOCK_H
#define IOTRACE_MPICLOCK_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define CLOCK_ROUNDS 10
#define CLOCK_MAX_ROUNDS 64
#define CLOCK_GOOD_RTT 200000 /* ns */
#define CLOCK_TAG 16180

/* One exchange: when the question left and the answer came, on this
 * process's CLOCK_MONOTONIC, and the reference's reading of its clock
 * (its CLOCK_MONOTONIC plus its base: wall-clock ns, as its trace counts). */
struct clock_reading {
	int64_t t1, t3, ref;
};

static int64_t clk_mono(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* clock_wanted says whether iotrace asked every rank of the job to
 * measure its clock. */
static int clock_wanted(void) {
	const char *v = getenv("IOTRACE_CLOCK_SYNC");
	return v && v[0] == '1';
}

/* clock_exchange measures this process's clock against rank 0's of c.
 * base is this process's wall clock minus its CLOCK_MONOTONIC (what its
 * trace adds to monotonic times). Rank 0 answers the others, one after
 * another; each other rank returns 1 with its best reading in *best. */
static int clock_exchange(MPI_Comm c, int64_t base, struct clock_reading *best) {
	int rank = 0, size = 0;
	if (LIB(MPI_Comm_rank, int (*)(MPI_Comm, int *))(c, &rank) != MPI_SUCCESS ||
	    LIB(MPI_Comm_size, int (*)(MPI_Comm, int *))(c, &size) != MPI_SUCCESS || size < 2)
		return 0;
	int (*send)(const void *, int, MPI_Datatype, int, int, MPI_Comm) =
		LIB(MPI_Send, int (*)(const void *, int, MPI_Datatype, int, int, MPI_Comm));
	int (*recv)(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status *) =
		LIB(MPI_Recv, int (*)(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status *));
	/* A question is one byte: 1 when another follows, 0 for the last. */
	char q = 1;
	if (rank == 0) {
		for (int r = 1; r < size; r++)
			for (q = 1; q;) {
				if (recv(&q, 1, MPI_BYTE, r, CLOCK_TAG, c, MPI_STATUS_IGNORE) != MPI_SUCCESS) return 0;
				int64_t t = clk_mono() + base;
				if (send(&t, 8, MPI_BYTE, r, CLOCK_TAG, c) != MPI_SUCCESS) return 0;
			}
		return 0;
	}
	int got = 0;
	for (int k = 0; q; k++) {
		q = k + 1 < CLOCK_MAX_ROUNDS && (k + 1 < CLOCK_ROUNDS || best->t3 - best->t1 > CLOCK_GOOD_RTT);
		int64_t t = 0, t1 = clk_mono();
		if (send(&q, 1, MPI_BYTE, 0, CLOCK_TAG, c) != MPI_SUCCESS ||
		    recv(&t, 8, MPI_BYTE, 0, CLOCK_TAG, c, MPI_STATUS_IGNORE) != MPI_SUCCESS)
			return 0;
		int64_t t3 = clk_mono();
		if (!got || t3 - t1 < best->t3 - best->t1) {
			best->t1 = t1;
			best->t3 = t3;
			best->ref = t;
			got = 1;
		}
	}
	return got;
}

/* The communicator of the exchanges, from MPI_Init to MPI_Finalize. */
static MPI_Comm clock_comm;
static int clock_have;

/* clock_sync makes the exchange of phase 0 (after MPI_Init: it makes the
 * communicator) or 1 (before MPI_Finalize: it frees it), and hands a
 * reading to out. */
static void clock_sync(int phase, int64_t base, void (*out)(int phase, const struct clock_reading *)) {
	if (phase == 0) {
		if (clock_have || !clock_wanted()) return;
		if (LIB(MPI_Comm_dup, int (*)(MPI_Comm, MPI_Comm *))(MPI_COMM_WORLD, &clock_comm) != MPI_SUCCESS) return;
		clock_have = 1;
	}
	if (!clock_have) return;
	struct clock_reading b = {0};
	if (clock_exchange(clock_comm, base, &b)) out(phase, &b);
	if (phase == 1) {
		LIB(MPI_Comm_free, int (*)(MPI_Comm *))(&clock_comm);
		clock_have = 0;
	}
}

#endif
