// Package memlimit gives the Go runtime a soft memory limit below the
// limit the process runs under, so that on a bounded machine the garbage
// collector works harder as the heap nears the bound rather than the
// process being killed or failing to map memory: a Go heap grows to twice
// what is live before it is collected (GOGC=100), and the limit makes it
// collect sooner.
package memlimit

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Fraction of the process's limit given to the Go runtime: the rest is
// for what the runtime does not count (thread stacks of system calls,
// the binary, C libraries such as MPI's).
const Fraction = 0.8

// Set sets the runtime's memory limit to Fraction of the smallest of the
// process's limits — the address space (RLIMIT_AS), the data segment
// (RLIMIT_DATA) and its cgroup's memory.max — unless the user set
// GOMEMLIMIT or there is no limit. It returns the limit set (0: none) and
// where it comes from.
func Set() (int64, string) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0, ""
	}
	bound, from := Bound()
	if bound <= 0 {
		return 0, ""
	}
	limit := int64(float64(bound) * Fraction)
	debug.SetMemoryLimit(limit)
	return limit, from
}

// Bound returns the smallest memory limit the process runs under and its
// name, or 0 when there is none.
func Bound() (int64, string) {
	var best int64
	var from string
	take := func(v int64, name string) {
		if v > 0 && (best == 0 || v < best) {
			best, from = v, name
		}
	}
	for _, r := range []struct {
		res  int
		name string
	}{{unix.RLIMIT_AS, "RLIMIT_AS"}, {unix.RLIMIT_DATA, "RLIMIT_DATA"}} {
		var l unix.Rlimit
		if unix.Getrlimit(r.res, &l) == nil && l.Cur != unix.RLIM_INFINITY && l.Cur < math.MaxInt64 {
			take(int64(l.Cur), r.name)
		}
	}
	take(cgroupMax(), "cgroup memory.max")
	return best, from
}

// cgroupMax returns the memory.max of the process's cgroup (v2), or 0.
func cgroupMax() int64 {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			if v := parseMax(filepath.Join("/sys/fs/cgroup", p, "memory.max")); v > 0 {
				return v
			}
		}
	}
	return parseMax("/sys/fs/cgroup/memory.max")
}

// parseMax reads a memory.max file: a number of bytes, or "max".
func parseMax(name string) int64 {
	b, err := os.ReadFile(name)
	if err != nil {
		return 0
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || v <= 0 {
		return 0
	}
	return v
}
