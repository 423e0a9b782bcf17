// Package mpi runs a replay spread over the processes of an MPI job
// (mpirun, srun), built with the build tag mpi against an MPI library
// (Debian's Open MPI by default; docs/MPI.md):
//
//   - Job spreads the trace ranks block-wise over the processes and makes
//     one MPI communicator for every communicator of the trace that spans
//     several processes;
//   - World is the communication layer (replay/comm) over MPI: between
//     trace ranks of one process the calls match in the process, as
//     comm.Local matches them; across processes every collective becomes
//     one MPI collective of the processes involved and every message one
//     MPI message, moving the recorded byte counts;
//   - Backend is the MPI-IO backend (--backend mpiio): MPI_File_* calls
//     through cgo bindings, collective where the trace is;
//   - Team is the job as a replay/session.Team: a replay session runs the
//     same steps under MPI as alone, and the team adds what a job needs
//     between them (GOMAXPROCS, agreement on errors, the shared target,
//     the parts of the replay's trace to process 0).
//
// The communication layer and the MPI-IO backend are one package because
// both work on the Job's communicators (the backend opens files on its slot
// communicators), and cgo's C types (C.MPI_Comm) belong to one package: two
// packages would pass MPI handles through MPI_Comm_c2f (docs/DESIGN.md).
//
// Without the build tag the package is empty; Available says so.
package mpi
