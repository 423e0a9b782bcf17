package replay

import (
	"context"
	"sync/atomic"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/target"
)

// Backend carries out the file I/O of a replay: POSIX (replay/posix), or
// MPI-IO later. The engine gives it calls whose paths are already mapped
// into the target directory; the backend keeps the rest of the safety
// rules (no symlink leads out of the target) and the descriptor tables.
type Backend interface {
	// Prepare creates the directories and the files of l before the
	// replay starts.
	Prepare(ctx context.Context, l *target.Layout) error
	// Rank returns the executor of one rank's calls. ranks is how many
	// ranks the replay runs, so that a backend can size its buffers.
	Rank(rank uint32, ranks int) (Executor, error)
	// Close releases what the backend holds (not the target directory).
	Close() error
}

// A NativeMPIIO backend says whether it issues MPI-IO calls through an
// MPI library (the mpiio backend of replay/mpi): their library's cost is
// then in the replay's calls. A backend that is none (POSIX: an MPI-IO
// call becomes the system calls it stands for) replays without the
// library, and under think or original timing the replay keeps the cost
// the library had in the capture (Plan's LibCost) at each MPI-IO call.
type NativeMPIIO interface {
	NativeMPIIO() bool
}

// Executor carries out the calls of one rank, from one goroutine.
type Executor interface {
	// Do carries out c and returns the call's result (bytes moved, new
	// offset, 0, or −errno) or a reason it skipped the call. Do does not
	// allocate for data calls.
	Do(c *Call) (ret int64, skip Skip)
	// Close closes whatever the rank left open.
	Close() error
}

// A RunExecutor is an Executor that can make a run of plain calls in
// one loop: the engine hands it the calls of a replay as fast as
// possible (no waits between them) that are reads and writes on a
// descriptor, with nothing of the engine's to do between two of them, and
// does its own accounting once the run is over. What the executor cannot
// make so goes the long way, through Do.
type RunExecutor interface {
	Executor
	// DoRun makes the calls of r.Evs in order, as Do would make each,
	// as long as it can make them the plain way: a read or write on a
	// descriptor the replay has open, not inside an MPI-IO call
	// (trace.InMPIIO). It reads r.Clock once after each call: a call's
	// Start is the end of the one before (r.Start for the first), its
	// Dur the difference. It stops before the first call it cannot make
	// so (having followed it, if it did, so that Do then makes it),
	// before any call once r.Stop is set, and after a call that fails. It
	// sets r.N to the calls made, r.End to the last reading of the clock
	// (r.Start if none), r.Moved to the bytes they moved, and gives each
	// call made its Start, Dur and result (Ret) — but the one that
	// failed, whose Ret stays the trace's and whose result (−errno) is
	// r.Fail (0: none failed).
	DoRun(r *Run)
}

// Run is a run of calls handed to a RunExecutor.
type Run struct {
	Evs   []trace.Event
	Clock *Clock
	Stop  *atomic.Bool
	Start int64

	N     int
	End   int64
	Moved int64
	Fail  int64
}

// An ErrorDetailer is an Executor whose calls can fail for more reasons
// than an errno tells (an MPI library's error classes, many of which
// become EIO). ErrorDetail returns what the library said of the last
// call Do made, if it failed there, or "". The engine asks only after a
// call failed; the first detail of each op and errno is in the result.
type ErrorDetailer interface {
	ErrorDetail() string
}

// Call is one event as an executor receives it.
type Call struct {
	Ev *trace.Event
	// Path and Path2 are the event's paths mapped into the target
	// directory: clean, relative, never above it ("." is the target
	// itself). They are empty when the op names no path.
	Path, Path2 string
	// PathSkip is set when Path must not be touched (/dev, /proc, /sys);
	// an open of it marks its descriptor so that the calls on it are
	// skipped too.
	PathSkip Skip
	// Paths maps other path ids of the rank's trace into the target, as
	// Path is: an executor that meets a descriptor the trace never
	// showed opened opens it on the path its calls name. Nil: none.
	Paths PathMapper
	// Sys, when not nil, times the system calls the executor makes for
	// the program's call (a replay that predicts sets it; SysTime).
	Sys *SysTime
}

// SysTime times the system calls an executor makes for the program's call,
// so that a predicting replay (--predict) counts what the file system took
// for the call, as the capture measured it around the program's call, and
// not what the replay's engine adds to it. An executor that times its
// calls says so (SysTimer); its methods on a nil *SysTime do nothing.
//
// What the replay's safety rules add is counted as the file system's
// share of it: a look at a name before the call (is it a device? a
// symbolic link?) resolves the name the call then finds cached, so the
// two together cost the file system about what the slower of them took —
// the look, where it read the name from the device; the call, where it
// was cached already (a call and its looks count max(calls, longest look),
// not their sum, which on tmpfs made an open of an existing file half as
// long again as the program's). Resolving the directory a name is in is
// the program's path walk: it adds (Dir).
type SysTime struct {
	ticks int64 // the program's calls, SysClock ticks
	look  int64 // the longest look at the call's name
	dirs  int64 // resolving the directories of its names
	calls int   // the program's calls timed
}

// StopLook counts a look at the call's name, started when Start returned t0.
func (s *SysTime) StopLook(t0 int64) {
	if s != nil {
		s.look = max(s.look, SysClock()-t0)
	}
}

// StopDir counts resolving a directory of the call's names, started when
// Start returned t0.
func (s *SysTime) StopDir(t0 int64) {
	if s != nil {
		s.dirs += SysClock() - t0
	}
}

// total is the file system's share of the call, SysClock ticks.
func (s *SysTime) total() int64 { return s.dirs + max(s.ticks, s.look) }

// Start reads the clock before a system call to time (0 on nil).
func (s *SysTime) Start() int64 {
	if s == nil {
		return 0
	}
	return SysClock()
}

// Stop counts one system call, started when Start returned t0.
func (s *SysTime) Stop(t0 int64) {
	if s != nil {
		s.ticks += SysClock() - t0
		s.calls++
	}
}

// Calls returns how many system calls were timed.
func (s *SysTime) Calls() int { return s.calls }

// SysTimer is an Executor that times the system calls of every call it
// makes through Call.Sys. A call it makes no system call for (a dup, a
// close that leaves the description open) keeps its captured duration
// in the prediction.
type SysTimer interface {
	TimesSys() bool
}

// PathMapper maps a trace path id into the target directory: a clean
// relative path, or why the path must not be touched.
type PathMapper interface {
	MapPath(id trace.PathID) (rel string, skip Skip)
	// TracePath returns the path as the trace has it (a symbolic link's
	// target is text, not a path to map).
	TracePath(id trace.PathID) string
}

// Skip is why a call was not carried out.
type Skip uint8

const (
	NotSkipped       Skip = iota
	SkipStdStream         // a standard stream (descriptor 0–2 the trace did not open)
	SkipSpecialPath       // a path under /dev, /proc or /sys
	SkipSpecialFD         // a descriptor of a skipped path
	SkipUnknownFD         // a descriptor (or MPI file handle) the trace never opened
	SkipTargetRoot        // would remove or rename the target directory itself
	SkipNotRegular        // the file in the target is a device, FIFO or socket
	SkipHardLink          // writing would change a file that has other hard links
	SkipUnsupported       // an op this backend cannot replay
	SkipPeer              // communication with a rank that is not replayed
	SkipEscape            // the kernel refused to resolve a path inside the target (a symlink out)
	SkipInMPIIO           // a POSIX call the MPI library made inside an MPI-IO call: the replay's MPI-IO call makes its own
	SkipKernelObject      // a pipe, socket or other descriptor that is no file (pipe:[N], anon_inode:…)
	SkipNoMapping         // an munmap or msync of a mapping the replay did not make (its mmap failed or was skipped)
	numSkips
)

var skipNames = [numSkips]string{
	"", "standard stream", "special path (/dev, /proc, /sys)", "descriptor of a skipped path",
	"descriptor the trace never opened", "would remove the target directory", "not a regular file",
	"file has other hard links", "op not supported", "peer rank not replayed", "path leads out of the target",
	trace.SkipReasonInMPIIO,
	"pipe, socket or other kernel object", "mapping the replay did not make",
}

func (s Skip) String() string {
	if s < numSkips {
		return skipNames[s]
	}
	return "skipped"
}
