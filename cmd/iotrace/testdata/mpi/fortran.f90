! MPI-IO and communication from Fortran: Open MPI's Fortran bindings call
! the PMPI_ layer, which the shim intercepts too. Per rank: 1 bcast of 8
! doubles from rank 0, 1 file open, 1 write_at_all of 8 doubles at
! rank*64, 1 close, 1 barrier.
program fio
  use mpi
  implicit none
  integer :: ierr, rank, fh
  integer(kind=MPI_OFFSET_KIND) :: off
  double precision :: buf(8)
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  buf = rank
  call MPI_Bcast(buf, 8, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  call MPI_File_open(MPI_COMM_WORLD, 'fortran.dat', MPI_MODE_CREATE + MPI_MODE_WRONLY, MPI_INFO_NULL, fh, ierr)
  off = rank * 64
  call MPI_File_write_at_all(fh, off, buf, 8, MPI_DOUBLE_PRECISION, MPI_STATUS_IGNORE, ierr)
  call MPI_File_close(fh, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Finalize(ierr)
end program fio
