/*
 * A collective strided write through a file view, as Parabench's level 3:
 * each of the P ranks sees blocks of B bytes every P·B bytes from rank·B
 * and writes K of them with MPI_File_write_all. Prints, on rank 0, the
 * seconds from the open to the end of the close on the slowest rank.
 *
 *   mpirun -np P strided FILE B K
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc < 4) {
		if (rank == 0) fprintf(stderr, "usage: strided FILE B K\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	int b = atoi(argv[2]), k = atoi(argv[3]);
	char *buf = malloc(b);
	for (int i = 0; i < b; i++) buf[i] = (char)(i * 131 + rank);
	MPI_Datatype blk, ft;
	MPI_Type_contiguous(b, MPI_BYTE, &blk);
	MPI_Type_create_resized(blk, 0, (MPI_Aint)size * b, &ft);
	MPI_Type_commit(&ft);
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	MPI_File fh;
	MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
	MPI_File_set_view(fh, (MPI_Offset)rank * b, MPI_BYTE, ft, "native", MPI_INFO_NULL);
	for (int i = 0; i < k; i++) MPI_File_write_all(fh, buf, b, MPI_BYTE, MPI_STATUS_IGNORE);
	MPI_File_close(&fh);
	double t = MPI_Wtime() - t0, tmax;
	MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	if (rank == 0) printf("%.6f\n", tmax);
	MPI_Type_free(&ft);
	MPI_Type_free(&blk);
	free(buf);
	MPI_Finalize();
	return 0;
}
