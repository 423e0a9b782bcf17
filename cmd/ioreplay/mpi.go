//go:build mpi

package main

import (
	"strings"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/replay/mpi"
	"github.com/iotrace/iotrace/replay/session"
)

// newTeam returns the team of the replay: the processes of the MPI job
// (--mpi, or a job of one process for --backend mpiio), or this process
// alone.
func newTeam(o *options, s cli.IO) (session.Team, func() error, error) {
	if !o.mpi && o.backend != backendMPIIO {
		return session.Alone{}, func() error { return nil }, nil
	}
	var hints [][2]string
	for _, h := range o.hints {
		k, v, _ := strings.Cut(h, "=")
		hints = append(hints, [2]string{k, v})
	}
	t, err := mpi.NewTeam(mpi.TeamOptions{MPIIO: o.backend == backendMPIIO, Hints: hints, Log: cli.Logger(s.Err, "ioreplay", false)})
	if err != nil {
		return nil, nil, err
	}
	return t, t.Close, nil
}
