// Package profile writes a CPU profile of the running program, for the
// --cpuprofile option of the commands.
package profile

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// CPU starts writing a CPU profile of this process to path (in the
// format of runtime/pprof, for go tool pprof, and the input of the build's
// profile-guided optimisation: bench/pgo). With perProcess (the processes
// of an MPI job) each process writes its own, path.PID. The returned
// function stops the profile and closes the file; with path "" both do
// nothing.
func CPU(path string, perProcess bool) (func() error, error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	if perProcess {
		path = fmt.Sprintf("%s.%d", path, os.Getpid())
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		return nil
	}, nil
}
