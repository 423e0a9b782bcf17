package capture

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/iotrace/iotrace/launcher"
	"github.com/iotrace/iotrace/trace/format"
)

// One clock for a capture (docs/FORMAT.md, "One clock"): each rank of an
// MPI job measures its clock against rank 0's with a ping-pong over MPI
// made inside the program's MPI_Init and MPI_Finalize, by the preload
// shim (--preload) or by a clock library iotrace preloads for the ptrace
// recorder. These are the rules both share.

// ClockReading is one reading of the exchange, as the shim or the clock
// library took it: when the question left and the answer came (T1, T3,
// the process's CLOCK_MONOTONIC ns), rank 0's reading of its clock in
// the answer (Ref, wall-clock ns as rank 0's trace counts), and Base,
// the process's wall clock minus its CLOCK_MONOTONIC (what its trace
// adds to monotonic times). Phase is 0 at start-up, 1 at the end;
// Reference the rank measured against.
type ClockReading struct {
	Phase     int
	T1, T3    int64
	Ref, Base int64
	Reference uint32
}

// Sample turns r into a clock sample of a rank whose times count from
// epoch (wall-clock ns): rank 0 read its clock at some moment between T1
// and T3, so the rank's clock read the midpoint minus Ref more than rank
// 0's, within half the round trip.
func (r ClockReading) Sample(epoch int64) format.ClockSample {
	rtt := r.T3 - r.T1
	mid := r.T1 + rtt/2 + r.Base
	return format.ClockSample{At: mid - epoch, Offset: mid - r.Ref, Err: (rtt + 1) / 2}
}

// ClockMethodPreload and ClockMethodPtrace name how the samples were
// taken (the trace's clock method field).
const (
	ClockMethodPreload = "mpi-pingpong"
	ClockMethodPtrace  = "mpi-pingpong (clock library)"
)

// Clock makes a rank's clock record of its readings, in order: the best
// reading of each phase.
func Clock(readings []ClockReading, epoch int64, method string) (format.Clock, bool) {
	c := format.Clock{Method: method}
	best := map[int]ClockReading{}
	var phases []int
	for _, r := range readings {
		b, ok := best[r.Phase]
		if !ok {
			phases = append(phases, r.Phase)
		}
		if !ok || r.T3-r.T1 < b.T3-b.T1 {
			best[r.Phase] = r
		}
	}
	for _, p := range phases {
		c.Samples = append(c.Samples, best[p].Sample(epoch))
		c.Ref = best[p].Reference
	}
	return c, len(c.Samples) > 0
}

// ClockSync says whether the ranks of a job measure their clocks.
type ClockSync int

const (
	// ClockAuto measures when iotrace can tell that every rank of the job
	// is recorded: it was started by the MPI launcher itself, and the
	// job runs one program (not an MPMD job of several).
	ClockAuto ClockSync = iota
	ClockOn
	ClockOff
)

// ParseClockSync reads --clock-sync's value.
func ParseClockSync(s string) (ClockSync, error) {
	switch s {
	case "auto":
		return ClockAuto, nil
	case "on":
		return ClockOn, nil
	case "off":
		return ClockOff, nil
	}
	return 0, fmt.Errorf("--clock-sync %q: want auto, on or off", s)
}

// String is the value's name: auto, on or off.
func (c ClockSync) String() string {
	switch c {
	case ClockOn:
		return "on"
	case ClockOff:
		return "off"
	}
	return "auto"
}

// Set implements flag.Value (--clock-sync).
func (c *ClockSync) Set(s string) error {
	v, err := ParseClockSync(s)
	if err != nil {
		return errors.New("want auto, on or off")
	}
	*c = v
	return nil
}

// Type implements pflag.Value.
func (c *ClockSync) Type() string { return "auto|on|off" }

// launcherDaemons are the processes MPI launchers start a job's programs
// from, by their /proc/PID/comm name (at most 15 characters).
var launcherDaemons = []string{"orted", "prted", "mpirun", "mpiexec", "orterun", "prterun",
	"slurmstepd", "hydra_pmi_proxy", "pmi_proxy", "flux-shell"}

// WantClockSync decides whether the recorded program's ranks measure
// their clocks: only in a job of several ranks, and, with ClockAuto,
// only when every rank is surely recorded — the exchange is made by
// every rank of the job, and a rank that does not take part would leave
// the others waiting for it in MPI_Init. ppidComm is the name of
// iotrace's parent process, getenv the environment. The reason says why
// not.
func WantClockSync(mode ClockSync, r launcher.Rank, ppidComm string, getenv func(string) string) (bool, string) {
	if mode == ClockOff {
		return false, "--clock-sync off"
	}
	if !r.Known || r.Size == 1 {
		return false, "not a rank of an MPI job of several ranks"
	}
	if mode == ClockOn {
		return true, ""
	}
	if n := getenv("OMPI_NUM_APP_CTX"); n != "" && n != "1" {
		return false, fmt.Sprintf("an MPMD job (%s programs): other programs' ranks may not be recorded (--clock-sync on if they are)", n)
	}
	for _, d := range launcherDaemons {
		if ppidComm == d {
			return true, ""
		}
	}
	return false, fmt.Sprintf("iotrace was started by %q, not by the MPI launcher: other ranks may not be recorded (--clock-sync on if every rank is)", ppidComm)
}

// ParentComm returns the name of the calling process's parent.
func ParentComm() string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", os.Getppid()))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// ClockEnv is the environment that asks the program's MPI_Init and
// MPI_Finalize (through the shim or the clock library) to make the
// exchange. base and file are the clock library's (ptrace): the wall
// clock minus CLOCK_MONOTONIC of the rank's trace, and where it writes
// its readings; the shim has both of its own.
func ClockEnv(base int64, file string) []string {
	env := []string{"IOTRACE_CLOCK_SYNC=1"}
	if file != "" {
		env = append(env, "IOTRACE_CLOCK_BASE="+strconv.FormatInt(base, 10), "IOTRACE_CLOCK_FILE="+file)
	}
	return env
}

// TestClockShift is a test hook: IOTRACE_TEST_CLOCK_SHIFT (ns) moves the
// wall clock a capture reads, as if its host's clock were off by that
// much (the preload shim reads it too).
func TestClockShift() int64 {
	v, _ := strconv.ParseInt(os.Getenv("IOTRACE_TEST_CLOCK_SHIFT"), 10, 64)
	return v
}

// ReadClockFile reads the clock library's readings ("phase t1 t3 ref"
// lines) from file; base is the one the library was given. A missing
// file is no readings (the program never called MPI_Init).
func ReadClockFile(file string, base int64) ([]ClockReading, error) {
	f, err := os.Open(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []ClockReading
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		var v [4]int64
		fs := strings.Fields(sc.Text())
		if len(fs) != 4 {
			return out, fmt.Errorf("%s:%d: want 4 fields, got %d", file, n, len(fs))
		}
		for i, s := range fs {
			if v[i], err = strconv.ParseInt(s, 10, 64); err != nil {
				return out, fmt.Errorf("%s:%d: %v", file, n, err)
			}
		}
		if v[2] < v[1] || (v[0] != 0 && v[0] != 1) {
			return out, fmt.Errorf("%s:%d: not a clock reading", file, n)
		}
		out = append(out, ClockReading{Phase: int(v[0]), T1: v[1], T3: v[2], Ref: v[3], Base: base})
	}
	return out, sc.Err()
}
