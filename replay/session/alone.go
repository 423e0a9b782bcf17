package session

import (
	"fmt"
	"os"

	"github.com/iotrace/iotrace/launcher"
	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/replay/posix"
)

// Alone is the team of one process that runs every rank: ranks are
// goroutines, and their messages and collectives match in the process
// (replay/comm).
type Alone struct{}

// NewAlone returns the team of this process alone. It fails when an MPI
// launcher started this process as one of several: every process would
// replay the whole trace into the same target (replay/mpi.Team spreads
// the ranks over them).
func NewAlone() (Alone, error) {
	if rk, err := launcher.Detect(os.Getenv); err == nil && rk.Size > 1 {
		return Alone{}, fmt.Errorf("running as one of %d processes of an MPI job (%s): add --mpi to spread the trace ranks over them, or every process would replay the whole trace", rk.Size, rk.Source)
	}
	return Alone{}, nil
}

var _ Team = Alone{}

func (Alone) Lead() bool                    { return true }
func (Alone) Agree(err error) error         { return err }
func (Alone) Broadcast(s string) string     { return s }
func (Alone) Join(*replay.Options)          {}
func (Alone) Share(ranks []uint32) []uint32 { return ranks }
func (Alone) Parted() bool                  { return false }
func (Alone) Plan(*replay.Replay) error     { return nil }
func (Alone) SameTarget(string) error       { return nil }
func (Alone) Start()                        {}
func (Alone) Barrier()                      {}
func (Alone) Describe([]uint32) string      { return "" }
func (Alone) Summary([]uint32) string       { return "" }

func (Alone) Backend(px *posix.Backend) (replay.Backend, error) { return px, nil }

func (Alone) Finish(*replay.Result, error) error { return nil }

func (Alone) Parts(string) ([]string, error) { return nil, nil }
