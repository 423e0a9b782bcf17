//go:build mpi

package main

import (
	"strings"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/internal/logline"
	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/replay/mpi"
	"github.com/iotrace/iotrace/replay/session"
	"github.com/iotrace/iotrace/report"
)

// newTeam returns the team of the replay: the processes of the MPI job
// (--mpi, or a job of one process for --backend mpiio), or this process
// alone.
func newTeam(o *options, s cli.IO) (session.Team, func() error, error) {
	if !o.mpi && o.backend != backendMPIIO {
		return alone()
	}
	var hints [][2]string
	for _, h := range o.hints {
		k, v, _ := strings.Cut(h, "=")
		hints = append(hints, [2]string{k, v})
	}
	t, err := mpi.NewTeam(mpi.TeamOptions{MPIIO: o.backend == backendMPIIO, Hints: hints, Log: logline.New(s.Err, "ioreplay", false),
		Failed: func(res *replay.Result) {
			if !o.quiet {
				report.ReplayOf(res.PerRank).WriteText(s.Err)
			}
		}})
	if err != nil {
		return nil, nil, err
	}
	return t, t.Close, nil
}
