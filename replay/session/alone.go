package session

import (
	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/replay/posix"
)

// Alone is the team of one process that runs every rank: ranks are
// goroutines, and their messages and collectives match in the process
// (replay/comm).
type Alone struct{}

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
