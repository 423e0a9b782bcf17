/*
 * A ring of messages: R rounds of MPI_Send/MPI_Recv of 1000·(round+1)
 * bytes to the next rank (even ranks send first), a round of
 * MPI_Irecv/MPI_Isend/MPI_Waitall, and a gather to rank 0 with
 * MPI_ANY_SOURCE receives. Per rank: R sends and R receives, 1 isend,
 * 1 irecv, 1 waitall (of 2); ranks other than 0 one more send of 64
 * bytes, rank 0 P−1 more receives.
 *
 * Then, after a barrier, shifts with MPI_Sendrecv, whose receive half comes from another
 * rank than its send half goes to: a ring shift to the next rank (100
 * bytes, tag 11), an MPI_Sendrecv_replace shift to the previous rank
 * received with MPI_ANY_TAG (200 bytes, tag 12), a non-periodic shift
 * (50 bytes, tag 13: the last rank sends to MPI_PROC_NULL, rank 0
 * receives from it), and a ring shift on a communicator whose ranks are
 * the world's in reverse (30 bytes, tag 14). Per rank: 1 barrier, 1 comm split, 4
 * sendrecvs of 380 bytes (330 on the last rank, which sends nothing in
 * the non-periodic shift).
 */
#include <mpi.h>
#include <stdlib.h>

#define R 5

int main(int argc, char **argv) {
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	char *buf = calloc(R * 1000 + 8192, 1), *in = calloc(R * 1000 + 8192, 1);
	for (int r = 0; r < R; r++) {
		int n = 1000 * (r + 1);
		if (rank % 2 == 0) {
			MPI_Send(buf, n, MPI_CHAR, next, r, MPI_COMM_WORLD);
			MPI_Recv(in, n, MPI_CHAR, prev, r, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(in, n, MPI_CHAR, prev, r, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(buf, n, MPI_CHAR, next, r, MPI_COMM_WORLD);
		}
	}
	MPI_Request q[2];
	MPI_Irecv(in, 8192, MPI_BYTE, prev, 99, MPI_COMM_WORLD, &q[0]);
	MPI_Isend(buf, 8192, MPI_BYTE, next, 99, MPI_COMM_WORLD, &q[1]);
	MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
	if (rank != 0) {
		MPI_Send(buf, 8, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);
	} else {
		for (int i = 1; i < size; i++) MPI_Recv(in, 8, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	}
	/* Rank 0's wildcard receives must not match a shift's message. */
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Sendrecv(buf, 100, MPI_CHAR, next, 11, in, 100, MPI_CHAR, prev, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Sendrecv_replace(buf, 200, MPI_CHAR, prev, 12, next, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	int up = rank + 1 < size ? rank + 1 : MPI_PROC_NULL, down = rank > 0 ? rank - 1 : MPI_PROC_NULL;
	MPI_Sendrecv(buf, 50, MPI_CHAR, up, 13, in, 50, MPI_CHAR, down, 13, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Comm rev;
	int crank;
	MPI_Comm_split(MPI_COMM_WORLD, 0, size - 1 - rank, &rev);
	MPI_Comm_rank(rev, &crank);
	MPI_Sendrecv(buf, 30, MPI_CHAR, (crank + 1) % size, 14, in, 30, MPI_CHAR, (crank + size - 1) % size, 14, rev, MPI_STATUS_IGNORE);
	MPI_Comm_free(&rev);
	free(buf);
	free(in);
	MPI_Finalize();
	return 0;
}
