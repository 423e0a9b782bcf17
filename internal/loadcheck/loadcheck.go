// Package loadcheck tells a timing test whether the machine was
// overloaded while it ran: whether tasks were ready to run but found no
// free processor for a sizeable share of the time. A timing test asserts
// its bounds on every run; where a bound is missed and the machine was
// demonstrably overloaded, the test tries again (and says why), and a
// machine overloaded on every try leaves the bound unjudged (Retry).
//
// The measure is the kernel's CPU pressure stall information
// (/proc/pressure/cpu, "some": time during which at least one task
// waited for a processor). Where the kernel has no PSI, it is the time
// the threads of this process spent waiting in a run queue
// (/proc/self/task/*/schedstat), which sees only this process's own
// waits (a test that runs a child process then never counts as
// overloaded without PSI). Neither file: never overloaded.
package loadcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Sample is a reading of the clock and of the stall counter.
type Sample struct {
	at     time.Time
	stall  time.Duration
	source string
}

// Now reads the stall counter.
func Now() Sample {
	s := Sample{at: time.Now()}
	if d, ok := psi(); ok {
		s.stall, s.source = d, "CPU pressure"
	} else if d, ok := runQueueWait(); ok {
		s.stall, s.source = d, "run-queue wait of this process"
	}
	return s
}

// Load is what happened between two samples.
type Load struct {
	Wall, Stall time.Duration
	Source      string // where Stall comes from; "" when unknown
}

// Since returns the load from s to now.
func Since(s Sample) Load {
	e := Now()
	l := Load{Wall: e.at.Sub(s.at), Source: s.source}
	if s.source != "" && e.source == s.source {
		l.Stall = e.stall - s.stall
	}
	return l
}

// Overloaded reports whether tasks waited for a processor during more
// than a tenth of the time: a machine on which a timer's wake-up or a
// replay's catch-up may be late for reasons outside the code tested.
func (l Load) Overloaded() bool { return l.Source != "" && l.Stall*10 > l.Wall }

func (l Load) String() string {
	if l.Source == "" {
		return fmt.Sprintf("%v, load unknown", l.Wall.Round(time.Millisecond))
	}
	return fmt.Sprintf("%v of %s in %v", l.Stall.Round(time.Millisecond), l.Source, l.Wall.Round(time.Millisecond))
}

// psi reads the "some" total of /proc/pressure/cpu (microseconds).
func psi() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	if !strings.HasPrefix(line, "some ") {
		return 0, false
	}
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, "total="); ok {
			us, err := strconv.ParseInt(v, 10, 64)
			return time.Duration(us) * time.Microsecond, err == nil
		}
	}
	return 0, false
}

// runQueueWait sums the run-queue wait (the second field of schedstat,
// nanoseconds) of this process's threads. Threads that ended are lost.
func runQueueWait() (time.Duration, bool) {
	files, _ := filepath.Glob("/proc/self/task/*/schedstat")
	var sum int64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		fs := strings.Fields(string(b))
		if len(fs) < 2 {
			continue
		}
		if v, err := strconv.ParseInt(fs[1], 10, 64); err == nil {
			sum += v
		}
	}
	return time.Duration(sum), len(files) > 0
}

// Tries is how many times Retry runs a timing check on an overloaded
// machine before it gives up judging the bound.
const Tries = 3

// Retry runs try, which checks a timing bound and returns what was wrong
// ("" when nothing); the behaviour it checks besides (which calls, in
// which order, never early) it asserts itself with t.Fatal, on every
// try. A bound missed on a machine that was not overloaded while try ran
// fails t, with the load measured. A bound missed on an overloaded
// machine is tried again, Tries times in all; missed on every try, each
// time on an overloaded machine, the bound is not judged: Retry logs
// each miss with its load and returns, and the test stands on the
// behaviour it checked. A test asserts behaviour and passes on a loaded
// machine; speed is measured by benchmarks, on a quiet one.
func Retry(t testing.TB, try func() string) {
	t.Helper()
	retry(t, try, func() func() Load {
		s := Now()
		return func() Load { return Since(s) }
	})
}

// retry is Retry with the load measured by start (a test gives its own).
func retry(t testing.TB, try func() string, start func() func() Load) {
	t.Helper()
	for i := 1; i <= Tries; i++ {
		since := start()
		why := try()
		if why == "" {
			return
		}
		l := since()
		if !l.Overloaded() {
			t.Fatalf("%s (try %d; machine: %v)", why, i, l)
			return
		}
		if i < Tries {
			t.Logf("try %d: %s; the machine was overloaded (%v): trying once more", i, why, l)
		} else {
			t.Logf("try %d: %s; the machine was overloaded (%v) on every try: the timing bound is not judged here", i, why, l)
		}
	}
}

// RunQueueWait returns the time the threads of this process have spent
// ready to run but waiting for a processor, in total
// (/proc/self/task/*/schedstat), and whether the kernel tells. Between two
// readings it bounds how late the process's own timers and wake-ups could
// be made by other work on the machine (threads that ended meanwhile are
// lost, so it may be less).
func RunQueueWait() (time.Duration, bool) { return runQueueWait() }
