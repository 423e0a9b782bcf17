/*
 * Every collective the replay moves bytes for, on MPI_COMM_WORLD and on
 * two halves made by MPI_Comm_split: barrier, bcast, reduce, allreduce,
 * gather(v), scatter(v), allgather(v), alltoall(v) (in alltoallv each
 * rank sends N/2+rank doubles to every rank). Counts per rank: on
 * the world one of each (root 1 where rooted), on the half of the rank
 * one barrier, one bcast and one allreduce; 1 MPI_Comm_split.
 */
#include <mpi.h>
#include <stdlib.h>

#define N 256 /* doubles */

int main(int argc, char **argv) {
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	double *a = calloc((size_t)N * size * 2, sizeof(double)), *b = calloc((size_t)N * size * 2, sizeof(double));
	int *cnt = malloc(size * sizeof(int)), *dsp = malloc(size * sizeof(int)), *mine = malloc(size * sizeof(int));
	for (int i = 0; i < size; i++) {
		cnt[i] = N / 2 + i;  /* what rank i sends */
		mine[i] = N / 2 + rank; /* what this rank sends to each */
		dsp[i] = i * N;
	}
	MPI_Comm w = MPI_COMM_WORLD;
	MPI_Barrier(w);
	MPI_Bcast(a, N, MPI_DOUBLE, 1, w);
	MPI_Reduce(a, b, N, MPI_DOUBLE, MPI_SUM, 1, w);
	MPI_Allreduce(a, b, N, MPI_DOUBLE, MPI_SUM, w);
	MPI_Gather(a, N, MPI_DOUBLE, b, N, MPI_DOUBLE, 1, w);
	MPI_Gatherv(a, cnt[rank], MPI_DOUBLE, b, cnt, dsp, MPI_DOUBLE, 1, w);
	MPI_Scatter(a, N, MPI_DOUBLE, b, N, MPI_DOUBLE, 1, w);
	MPI_Scatterv(a, cnt, dsp, MPI_DOUBLE, b, cnt[rank], MPI_DOUBLE, 1, w);
	MPI_Allgather(a, N, MPI_DOUBLE, b, N, MPI_DOUBLE, w);
	MPI_Allgatherv(a, cnt[rank], MPI_DOUBLE, b, cnt, dsp, MPI_DOUBLE, w);
	MPI_Alltoall(a, N / size, MPI_DOUBLE, b, N / size, MPI_DOUBLE, w);
	MPI_Alltoallv(a, mine, dsp, MPI_DOUBLE, b, cnt, dsp, MPI_DOUBLE, w);
	MPI_Comm half;
	MPI_Comm_split(w, rank % 2, rank, &half);
	MPI_Barrier(half);
	MPI_Bcast(a, N, MPI_DOUBLE, 0, half);
	MPI_Allreduce(a, b, N, MPI_DOUBLE, MPI_MAX, half);
	MPI_Comm_free(&half);
	free(a);
	free(b);
	free(cnt);
	free(dsp);
	free(mine);
	MPI_Finalize();
	return 0;
}
