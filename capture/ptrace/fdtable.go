//go:build linux && (amd64 || arm64)

package ptrace

import (
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/state"
)

// The tracer's descriptor tables are trace/state's: a follower fed every
// call the tracer sees (recorded or not) and the process events keeps one
// table per process of open file descriptions, with their positions and
// flags; what the tracer needs beyond that lives on each description.

// file is what the tracer keeps on an open file description.
type file struct {
	name string       // absolute path, or the kernel's name ("pipe:[12]")
	id   trace.PathID // id in the sink, 0 until the file is first recorded
	rec  bool         // calls on it are recorded
	// lazy: learnt from /proc rather than seen opened. Another process may
	// share it unseen, so its position is read from /proc/TID/fdinfo after
	// each call at the position.
	lazy bool
}

// desc is an open file description as the tracer follows it.
type desc = state.Desc[file]

// follower keeps the descriptor tables of the traced processes.
type follower = state.Follower[file, struct{}]
