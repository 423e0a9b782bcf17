/*
 * Collective strided MPI-IO through a file view (Parabench level 3): each
 * of the ranks sees blocks of B bytes every P·B bytes from rank·B, and
 * writes K blocks with MPI_File_write_all, then reads them back with
 * MPI_File_read_at_all after MPI_File_sync and a barrier; a second view
 * (an MPI_Type_vector) is read with MPI_File_read_all. Per rank: 1 open,
 * 2 set_view, K write_all of B bytes, 1 sync, 1 barrier, K read_at_all of
 * B bytes, 1 read_all of 2·B bytes, 1 close.
 */
#include <mpi.h>
#include <stdlib.h>

#define B 4096
#define K 8

int main(int argc, char **argv) {
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	char *buf = malloc(2 * B);
	for (int i = 0; i < 2 * B; i++) buf[i] = (char)(rank + i);
	MPI_File fh;
	MPI_File_open(MPI_COMM_WORLD, "strided.dat", MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
	MPI_Datatype blk, ft;
	MPI_Type_contiguous(B, MPI_BYTE, &blk);
	MPI_Type_create_resized(blk, 0, (MPI_Aint)size * B, &ft);
	MPI_Type_commit(&ft);
	MPI_File_set_view(fh, (MPI_Offset)rank * B, MPI_BYTE, ft, "native", MPI_INFO_NULL);
	for (int k = 0; k < K; k++) MPI_File_write_all(fh, buf, B, MPI_BYTE, MPI_STATUS_IGNORE);
	MPI_File_sync(fh);
	MPI_Barrier(MPI_COMM_WORLD);
	for (int k = 0; k < K; k++) MPI_File_read_at_all(fh, (MPI_Offset)k * B, buf, B, MPI_BYTE, MPI_STATUS_IGNORE);
	MPI_Datatype vec;
	MPI_Type_vector(2, B, size * B, MPI_BYTE, &vec);
	MPI_Type_commit(&vec);
	MPI_File_set_view(fh, (MPI_Offset)rank * B, MPI_BYTE, vec, "native", MPI_INFO_NULL);
	MPI_File_read_all(fh, buf, 2 * B, MPI_BYTE, MPI_STATUS_IGNORE);
	MPI_File_close(&fh);
	MPI_Type_free(&ft);
	MPI_Type_free(&blk);
	MPI_Type_free(&vec);
	free(buf);
	MPI_Finalize();
	return 0;
}
