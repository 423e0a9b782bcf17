//go:build !mpi

package mpi

// Available reports whether this build has MPI (the build tag mpi).
const Available = false
