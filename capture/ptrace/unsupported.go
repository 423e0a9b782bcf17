//go:build !linux || !(amd64 || arm64)

package ptrace

import (
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/iotrace/iotrace/capture"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
)

// Supported reports whether this build can trace programs.
const Supported = false

// Config says what to run and where its events go (see the Linux build).
type Config struct {
	Argv                  []string
	Env                   []string
	Dir                   string
	Stdin, Stdout, Stderr *os.File
	Sink                  trace.Sink
	Flush                 func() error
	FlushInterval         time.Duration
	Rank                  uint32
	Base                  time.Time
	Rules                 *filter.Paths
	All                   bool
	Helper                string
	OnStart               func(pid int)
	ForwardSignals        bool
	Cost                  capture.Cost
}

// LookPath fails on this platform.
func LookPath(name, dir string, env []string) (string, error) {
	return "", errors.New("recording needs Linux on amd64 or arm64")
}

// Thread is one thread (or process) the tracer followed.
type Thread struct {
	Index  uint32
	PID    int
	TID    int
	Parent int
}

// Result describes a finished run.
type Result struct {
	PID      int
	ExitCode int
	Signal   syscall.Signal
	Events   int64
	// What the trace cannot show (see the Linux build).
	Mmaps, MmapFiles int
	IOUring, AIO     int
	PtraceDenied     int
	PtraceBy         string
	Threads          []Thread
	Corrections      capture.Corrections
	Virtual          func(t int64) int64
}

// Status is the exit status a shell would report.
func (r Result) Status() int {
	if r.Signal != 0 {
		return 128 + int(r.Signal)
	}
	return r.ExitCode
}

// HelperMain does nothing on this platform.
func HelperMain() {}

// Run fails on this platform: tracing needs Linux on amd64 or arm64.
func Run(cfg Config) (Result, error) {
	return Result{}, errors.New("recording needs Linux on amd64 or arm64")
}

// Calibrate fails on this platform.
func Calibrate(helper string) (capture.Cost, error) {
	return capture.Cost{}, errors.New("recording needs Linux on amd64 or arm64")
}
