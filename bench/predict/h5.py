# An HDF5 application for the prediction benchmark (bench/predict/run.sh):
# P ranks write STEPS time steps of a 2-D dataset collectively through
# h5py's MPI driver (driver="mpio": HDF5 over MPI-IO), each rank N doubles
# a step, close the file, then open it again and read their part of every
# step back, collectively.
#
#   mpirun -np P python3 -I h5.py FILE STEPS N
#
# Prints, on rank 0, "io_seconds S": from the earliest rank's first file
# call (the first h5py.File) to the end of the latest rank's last (the
# second file's close), CLOCK_MONOTONIC on one host; the interpreter's
# start-up, its imports and MPI_Init come before, outside the span.
import sys
import time

from mpi4py import MPI
import h5py
import numpy as np

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
path, steps, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = np.arange(n, dtype="f8") + rank
comm.Barrier()
t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
with h5py.File(path, "w", driver="mpio", comm=comm) as f:
    d = f.create_dataset("field", (steps, size * n), dtype="f8")
    for s in range(steps):
        with d.collective:
            d[s, rank * n:(rank + 1) * n] = data + s
    f.attrs["steps"] = steps
with h5py.File(path, "r", driver="mpio", comm=comm) as f:
    d = f["field"]
    total = 0.0
    for s in range(steps):
        with d.collective:
            total += float(d[s, rank * n:(rank + 1) * n].sum())
t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
lo = comm.reduce(t0, op=MPI.MIN, root=0)
hi = comm.reduce(t1, op=MPI.MAX, root=0)
if rank == 0:
    print("io_seconds %.6f" % ((hi - lo) / 1e9))
