package record

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/iotrace/iotrace/capture"
	"github.com/iotrace/iotrace/capture/preload"
	"github.com/iotrace/iotrace/launcher"
	"github.com/iotrace/iotrace/trace/format"
	"golang.org/x/sys/unix"
)

// One clock for a capture (docs/FORMAT.md, "One clock"): every rank of an
// MPI job measures its clock against rank 0's in the program's MPI_Init
// and MPI_Finalize, through the preload shim (Preload) or through a small
// library of MPI_Init/MPI_Finalize wrappers alone, the clock library,
// preloaded for the ptrace recorder (Ptrace). capture.WantClockSync says
// when.

// noClockSync says, once per job (on rank 0), that the ranks' clocks are
// not measured, unless the user turned the measuring off.
func noClockSync(log *slog.Logger, mode capture.ClockSync, rk launcher.Rank, why string) {
	if mode != capture.ClockOff && rk.Rank == 0 && rk.Size > 1 {
		log.Info(fmt.Sprintf("the ranks' clocks are not measured against each other (%s): their times are their hosts' clocks", why))
	}
}

// clockLib is the clock library of a ptrace recording: the program's
// environment that loads it, its readings' file, and the paths of both
// (which are not recorded).
type clockLib struct {
	env     []string // nil: the program's environment is iotrace's
	file    string
	base    int64
	private []string
}

// startClockLib prepares the clock library for the program, when its
// ranks are to measure their clocks; base is time 0 of the recording,
// epoch its wall-clock time.
func startClockLib(log *slog.Logger, mode capture.ClockSync, rk launcher.Rank, epoch int64, base time.Time) (*clockLib, error) {
	c := &clockLib{}
	want, why := capture.WantClockSync(mode, rk, capture.ParentComm(), os.Getenv)
	if want {
		libs, err := buildShim(log, rk)
		switch {
		case err != nil:
			want, why = false, err.Error()
		case libs.Clock == "":
			want, why = false, fmt.Sprint(libs.MPIErr)
		default:
			dir, err := os.MkdirTemp("", "iotrace-clock-")
			if err != nil {
				return nil, err
			}
			var ts unix.Timespec
			unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
			// The wall clock minus CLOCK_MONOTONIC of the trace's times
			// (epoch + time since base, on the monotonic clock).
			c.base = epoch - (ts.Nano() - int64(time.Since(base)))
			c.file = filepath.Join(dir, "readings")
			c.private = []string{dir, filepath.Dir(libs.Clock)}
			pre := libs.Clock
			if old := os.Getenv("LD_PRELOAD"); old != "" {
				pre += ":" + old
			}
			c.env = append(append(os.Environ(), "LD_PRELOAD="+pre), capture.ClockEnv(c.base, c.file)...)
		}
	}
	if !want {
		noClockSync(log, mode, rk, why)
	}
	return c, nil
}

// write records what the clock library measured as the rank's clock;
// virtual (nil: none) moves a time of the recording onto the clock of
// its events (the recorder's cost taken out).
func (c *clockLib) write(w *format.Writer, rank uint32, epoch int64, virtual func(int64) int64) error {
	if c.file == "" {
		return nil
	}
	rd, err := capture.ReadClockFile(c.file, c.base)
	if err != nil {
		return err
	}
	if clk, ok := capture.Clock(rd, epoch, capture.ClockMethodPtrace); ok {
		if virtual != nil {
			for i := range clk.Samples {
				clk.Samples[i].At = virtual(clk.Samples[i].At)
			}
		}
		return w.SetRankClock(rank, clk)
	}
	return nil
}

func (c *clockLib) remove() {
	if c.file != "" {
		os.RemoveAll(filepath.Dir(c.file))
	}
}

// preloadClockEnv is the environment that asks the preload shim to
// measure the rank's clock, when it is to (nil when not).
func preloadClockEnv(log *slog.Logger, mode capture.ClockSync, rk launcher.Rank, libs preload.Libs) []string {
	want, why := capture.WantClockSync(mode, rk, capture.ParentComm(), os.Getenv)
	if want && libs.MPI == "" {
		want, why = false, fmt.Sprint(libs.MPIErr)
	}
	if !want {
		noClockSync(log, mode, rk, why)
		return nil
	}
	return capture.ClockEnv(0, "")
}
