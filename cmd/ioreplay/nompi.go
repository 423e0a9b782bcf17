//go:build !mpi

package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func runMPI(cmd *cobra.Command, f *flags, args []string) error {
	return errors.New("this ioreplay was built without MPI: --mpi and --backend mpiio need 'go build -tags mpi ./cmd/ioreplay' (docs/MPI.md)")
}
