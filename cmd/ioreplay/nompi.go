//go:build !mpi

package main

import (
	"errors"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/replay/session"
)

// newTeam returns the team of the replay: this process alone; --mpi and
// --backend mpiio need MPI.
func newTeam(o *options, _ cli.IO) (session.Team, func() error, error) {
	if o.mpi || o.backend == backendMPIIO {
		return nil, nil, errors.New("this ioreplay was built without MPI: --mpi and --backend mpiio need 'go build -tags mpi ./cmd/ioreplay' (docs/MPI.md)")
	}
	return alone()
}
