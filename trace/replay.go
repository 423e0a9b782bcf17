package trace

import "github.com/iotrace/iotrace/trace/hist"

// ReplayRank is how the replay of one rank went, as a replay records it
// in its own trace (docs/FORMAT.md, "Replay block"): so that a report of
// that trace alone says how the replay went, and a comparison of a trace
// with its replay shows the issue lag.
type ReplayRank struct {
	Rank    uint32 // the rank (as the block names it)
	Timing  string // original, think or afap
	Planned int64  // events the rank was to replay (a script's: of its nominal run)
	Events  int64  // events it got to: replayed, failed or skipped
	Elapsed int64  // ns from the replay's common start to the rank's end
	// Interrupted says the replay was stopped (Ctrl-C) before the end;
	// Stopped says why, when something other than the user stopped it
	// (a process of an MPI job that stopped answering).
	Interrupted bool
	Stopped     string
	// Script says a pattern script was replayed: its time-driven loops
	// may make more or fewer calls than Planned.
	Script bool
	// Lag is the issue lag of the rank's calls, by op: how much later
	// than its intended start (the timing's) each call started, ns.
	// Empty as fast as possible, where no call has an intended start.
	Lag map[Op]*hist.Hist
	// Skips count the calls a safety rule or a limit of the backend
	// skipped, by op and reason.
	Skips []ReplaySkip
	// Errors count the calls that failed, by op and errno.
	Errors []ReplayError
	// Unmatched counts communication calls no rank could complete;
	// Notes describe the first of them.
	Unmatched int64
	Notes     []string
	// Predict says the replay ran as ioreplay --predict (think timing, a
	// cold cache, the MPI-IO library's cost kept).
	Predict bool
	// LibCalls counts the MPI-IO calls at which the replay kept the
	// MPI library's cost in the capture beyond the POSIX calls inside
	// them (a backend without an MPI library, think or original
	// timing); LibTime is that cost, ns.
	LibCalls, LibTime int64
	// IOTime is the ns the rank spent in its I/O calls in the replay
	// (POSIX, metadata and MPI-IO calls, each once: not the POSIX calls
	// inside MPI-IO calls), kept library cost included; CapturedIOTime
	// the recorded ns of the same calls. Both 0 in traces written
	// before they were recorded.
	IOTime, CapturedIOTime int64
	// IOSpan is, under --predict, the predicted I/O time of the whole
	// application (every rank's, not this rank's): from the start of its
	// first file call to the end of its last on the timelines rebuilt from
	// the replay's call times and the captured think times;
	// CapturedIOSpan the same span in the capture. Both 0 where the
	// replay did not predict (or a process replayed only some ranks).
	IOSpan, CapturedIOSpan int64
}

// SkipReasonInMPIIO is the reason of the calls a replay skips because an
// MPI library made them inside an MPI-IO call (Flags InMPIIO): the
// replay's MPI-IO call makes its own. Reports count such skips with the
// rows of those calls, not with the other calls of their op.
const SkipReasonInMPIIO = "made by the MPI library inside an MPI-IO call (replayed by that call)"

// ReplaySkip counts the calls of one op skipped for one reason.
type ReplaySkip struct {
	Op     Op
	Reason string
	Count  int64
}

// ReplayError counts the calls of one op that failed with one errno.
type ReplayError struct {
	Op  Op
	Ret int64 // −errno
	// Expected says the original call failed the same way.
	Expected bool
	Count    int64
	// Detail is what the backend's library said of the first of them (an
	// MPI error string), if anything.
	Detail string
}

// A Replayed trace is the own trace of a replay: it says how the replay
// of each of its ranks went.
type Replayed interface {
	Trace
	// Replay returns how rank r's replay went, or nil if the trace does
	// not say (it is no replay's trace, or the replay did not end).
	Replay(r uint32) *ReplayRank
}
