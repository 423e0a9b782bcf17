/*
 * A two-phase write of 3-D block-distributed arrays, as the astro3d code
 * of Thakur et al. does it: 4 ranks hold (block,block,*) blocks of a
 * 32×32×32 array of floats on a 2×2 grid; each array is redistributed
 * to (*,*,block) slabs — counts with MPI_Alltoall, data with
 * MPI_Alltoallv — and each rank writes its slab, contiguous in the file,
 * with one MPI_File_write_at after a header rank 0 writes. Rank 0 also
 * keeps a log with stdio. The test pins every count: per rank 3
 * MPI_Alltoall of 16 bytes (4 ints), 3 MPI_Alltoallv of 32 KiB, 1
 * MPI_File_open, 3 MPI_File_write_at of 32 KiB (rank 0: one more of 24
 * bytes), 1 MPI_File_close; rank 0: fopen, 3 fwrite of 16 bytes, fclose.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 32
#define ARRAYS 3
#define HEADER 24

int main(int argc, char **argv) {
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 4) MPI_Abort(MPI_COMM_WORLD, 2);
	int bx = N / 2, by = N / 2;   /* my block: bx × by × N */
	int px = rank % 2, py = rank / 2;
	int slab = N / size;          /* z-planes per slab */
	size_t blockn = (size_t)bx * by * N, slabn = (size_t)N * N * slab;
	float *block = malloc(blockn * sizeof(float)), *recv = malloc(slabn * sizeof(float));
	float *send = malloc(blockn * sizeof(float)), *out = malloc(slabn * sizeof(float));
	FILE *log = rank == 0 ? fopen("twophase.log", "w") : NULL;
	MPI_File fh;
	MPI_File_open(MPI_COMM_WORLD, "twophase.dat", MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
	if (rank == 0) {
		float header[HEADER / 4] = {1, 2, 3, 4, 5, 6};
		MPI_File_write_at(fh, 0, header, HEADER, MPI_BYTE, MPI_STATUS_IGNORE);
	}
	for (int a = 0; a < ARRAYS; a++) {
		for (size_t i = 0; i < blockn; i++) block[i] = a * 1000 + rank + i;
		/* Phase one: my block goes, by z-slab, to the rank owning it. */
		int scount[4], rcount[4], sdisp[4], rdisp[4];
		for (int q = 0; q < size; q++) scount[q] = bx * by * slab * (int)sizeof(float);
		MPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, MPI_COMM_WORLD);
		for (int q = 0, s = 0, r = 0; q < size; q++) {
			sdisp[q] = s;
			rdisp[q] = r;
			s += scount[q];
			r += rcount[q];
		}
		/* Pack my block z-slab by z-slab (z is the slowest index). */
		memcpy(send, block, blockn * sizeof(float));
		MPI_Alltoallv(send, scount, sdisp, MPI_BYTE, recv, rcount, rdisp, MPI_BYTE, MPI_COMM_WORLD);
		/* Unpack into x-fastest slab order. */
		for (int q = 0; q < size; q++) {
			int qx = q % 2, qy = q / 2;
			float *part = recv + rdisp[q] / sizeof(float);
			for (int z = 0; z < slab; z++)
				for (int y = 0; y < by; y++)
					memcpy(out + ((size_t)z * N + qy * by + y) * N + qx * bx, part + ((size_t)z * by + y) * bx, bx * sizeof(float));
		}
		(void)px;
		(void)py;
		/* Phase two: one contiguous write of my slab. */
		MPI_Offset off = HEADER + (MPI_Offset)a * N * N * N * sizeof(float) + (MPI_Offset)rank * slabn * sizeof(float);
		MPI_File_write_at(fh, off, out, (int)(slabn * sizeof(float)), MPI_BYTE, MPI_STATUS_IGNORE);
		if (log) fwrite("array written\n\0\0", 1, 16, log);
	}
	MPI_File_close(&fh);
	if (log) fclose(log);
	free(block);
	free(recv);
	free(send);
	free(out);
	MPI_Finalize();
	return 0;
}
