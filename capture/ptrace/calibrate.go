//go:build linux && (amd64 || arm64)

package ptrace

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"syscall"
	"time"
	"unsafe"

	"github.com/iotrace/iotrace/capture"
	"golang.org/x/sys/unix"
)

// calibrationCalls is how many calls each part of the calibration makes:
// about 10 ms of tracing in all.
const calibrationCalls = 200

// helperCalibrate is the value of helperEnv that makes the helper the
// calibration's program (runCalibration).
const helperCalibrate = "calibrate"

// baseline is what the calibration's program measures of its calls
// before it is traced, and the descriptors it then calls on.
type baseline struct {
	dur    int64 // median duration of a 1-byte read of /dev/zero, less a clock reading
	period int64 // median time from one such call's start to the next
	rec    int32 // the descriptor of the calls the tracer handles as recorded
	unrec  int32 // the descriptor of the calls it handles as not recorded
}

const baselineLen = 1 + 8 + 8 + 4 + 4

// Calibrate measures what tracing costs a program per call on this
// machine now (Cost), as Run would trace it: the helper (helper as in
// Config.Helper) reads one byte of /dev/zero calibrationCalls times
// untraced, timing each call with the clock the tracer uses; then, with
// the seccomp filter installed, as many times with the tracer stopping
// it at each call's entry and exit as it does for a recorded call, and
// as many stopping it at the entry only, as it does for a call it does
// not record. The differences are the tracer's shares.
// The traced calls come in calibrationRounds rounds; the middle round is
// kept: a burst of other work on the machine makes a round dearer, a quiet
// moment cheaper than the run will be. Run's account keeps a calibration
// that came out too dear from taking more than the run's calls can have
// cost. It takes a few tens of ms.
func Calibrate(helper string) (capture.Cost, error) {
	if helper == "" {
		helper = "/proc/self/exe"
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if runtime.GOMAXPROCS(0) < 2 {
		// As Run: the tracer's P is not taken at every wait.
		runtime.GOMAXPROCS(2)
		defer runtime.SetDefaultGOMAXPROCS()
	}
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return capture.Cost{}, fmt.Errorf("socketpair: %w", err)
	}
	ours := os.NewFile(uintptr(sp[0]), "helper-socket")
	theirs := os.NewFile(uintptr(sp[1]), "helper-socket")
	defer ours.Close()
	defer theirs.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		return capture.Cost{}, err
	}
	defer null.Close()
	env := []string{helperEnv + "=" + helperCalibrate}
	pid, err := syscall.ForkExec(helper, []string{"iotrace-helper"}, &syscall.ProcAttr{
		Env:   env,
		Files: []uintptr{null.Fd(), null.Fd(), os.Stderr.Fd(), theirs.Fd()},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return capture.Cost{}, fmt.Errorf("starting %s: %w", helper, err)
	}
	theirs.Close()
	var ws unix.WaitStatus
	fail := func(err error) (capture.Cost, error) {
		unix.Kill(pid, unix.SIGKILL)
		unix.Wait4(pid, &ws, unix.WALL, nil)
		return capture.Cost{}, err
	}
	var b [baselineLen]byte
	if n, _ := ours.Read(b[:]); n != baselineLen || b[0] != helperReady {
		return fail(errors.New("the calibration's helper did not start"))
	}
	base := baseline{
		dur:    int64(binary.LittleEndian.Uint64(b[1:])),
		period: int64(binary.LittleEndian.Uint64(b[9:])),
		rec:    int32(binary.LittleEndian.Uint32(b[17:])),
		unrec:  int32(binary.LittleEndian.Uint32(b[21:])),
	}
	if err := ptraceRaw(unix.PTRACE_SEIZE, pid, 0, unix.PTRACE_O_TRACESYSGOOD|unix.PTRACE_O_TRACESECCOMP|unix.PTRACE_O_EXITKILL); err != nil {
		return fail(fmt.Errorf("ptrace(PTRACE_SEIZE): %w", err))
	}
	if _, err := ours.Write([]byte{helperGo}); err != nil {
		return fail(err)
	}
	ours.Close()

	// The loop does at each stop what Run's does: wait, read the call,
	// stamp the time, resume.
	tr := &tracer{calls: newCallTable(archCalls)}
	t0 := time.Now()
	now := func() int64 { return int64(time.Since(t0)) }
	var durs, recStarts, stopStarts []int64
	var s int64
	inCall := false
	// After the rounds, calibrationStopped calls more, between which the
	// helper's schedstat is read at each exit stop and at the next entry
	// stop (stopped).
	st := &stoppedCal{fd: -1}
	defer st.close()
	for {
		tid, err := tr.waiter.wait(pid, &ws) // as Run waits
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fail(fmt.Errorf("wait4: %w", err))
		}
		if tid != pid || ws.Exited() || ws.Signaled() {
			break
		}
		if !ws.Stopped() {
			continue
		}
		sig := ws.StopSignal()
		event := int(ws) >> 16 & 0xff
		switch {
		case sig == unix.SIGTRAP|0x80:
			if inCall {
				tr.getInfo(pid)
				if len(durs) < calibrationRounds*calibrationCalls {
					durs = append(durs, now()-s)
				} else {
					st.mark(pid, now)
				}
				inCall = false
			}
			tr.cont(pid, 0)
		case sig == unix.SIGTRAP && event == unix.PTRACE_EVENT_SECCOMP:
			nr, fd, ok := tr.calibrationCall(pid)
			switch {
			case ok && tr.calls.kind(nr) == kRead && fd == base.rec:
				s = now()
				if len(recStarts) < calibrationRounds*calibrationCalls {
					recStarts = append(recStarts, s)
				} else {
					st.entry(pid, s)
				}
				inCall = true
				ptraceRaw(unix.PTRACE_SYSCALL, pid, 0, 0)
			case ok && tr.calls.kind(nr) == kRead && fd == base.unrec:
				stopStarts = append(stopStarts, now())
				tr.cont(pid, 0)
			default:
				tr.cont(pid, 0)
			}
		case event != 0:
			tr.cont(pid, 0)
		default:
			tr.cont(pid, int(sig))
		}
	}
	if ws.Exited() && ws.ExitStatus() != 0 {
		return capture.Cost{}, fmt.Errorf("the calibration's helper failed (exit status %d)", ws.ExitStatus())
	}
	const n = calibrationCalls
	if len(durs) != calibrationRounds*n || len(recStarts) != calibrationRounds*n || len(stopStarts) != calibrationRounds*n {
		// (Those after the rounds measure the time stopped: stoppedCal.)
		return capture.Cost{}, fmt.Errorf("the calibration saw %d and %d of its %d calls", len(durs), len(stopStarts), calibrationRounds*n)
	}
	var rounds []capture.Cost
	for r := 0; r < calibrationRounds; r++ {
		rounds = append(rounds, base.cost(durs[r*n:(r+1)*n], recStarts[r*n:(r+1)*n], stopStarts[r*n:(r+1)*n]))
	}
	slices.SortFunc(rounds, func(a, b capture.Cost) int { return cmp.Compare(a.InCall+a.Between, b.InCall+b.Between) })
	c := rounds[len(rounds)/2]
	c.Stopped = st.cost()
	return c, nil
}

// calibrationStopped is how many calls the calibration's helper makes
// after its rounds, for stoppedCal.
const calibrationStopped = 100

// stoppedCal measures how long the tracer keeps a thread stopped at a
// recorded call's entry, as the thread's schedstat shows it (Run's waits
// for mapped pages take it out of a gap's sleep, pagein.go): between a
// recorded call's exit stop, where the tracer reads the thread's
// schedstat and lets it go, and the entry stop of the next call, which
// follows at once, the thread slept only stopped (the time neither on a
// processor nor runnable).
type stoppedCal struct {
	fd        int
	marked    bool
	at        int64
	cpu, wait int64
	sleeps    []int64
	buf       [128]byte
}

func (c *stoppedCal) read(pid int) (cpu, wait int64, ok bool) {
	if c.fd < 0 {
		fd, err := unix.Open(fmt.Sprintf("/proc/%d/task/%d/schedstat", pid, pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return 0, 0, false
		}
		c.fd = fd
	}
	n, err := unix.Pread(c.fd, c.buf[:], 0)
	if err != nil || n <= 0 {
		return 0, 0, false
	}
	return parseSchedstat(c.buf[:n])
}

// mark reads at an exit stop, before the thread is let go.
func (c *stoppedCal) mark(pid int, now func() int64) {
	var ok bool
	c.cpu, c.wait, ok = c.read(pid)
	c.at, c.marked = now(), ok
}

// entry reads at the next call's entry stop, stamped at s.
func (c *stoppedCal) entry(pid int, s int64) {
	if !c.marked {
		return
	}
	c.marked = false
	if cpu, wait, ok := c.read(pid); ok {
		c.sleeps = append(c.sleeps, max(s-c.at-(cpu-c.cpu)-(wait-c.wait), 0))
	}
}

// cost is the median stopped time, 0 without enough samples.
func (c *stoppedCal) cost() int64 {
	if len(c.sleeps) < calibrationStopped/2 {
		return 0
	}
	return capture.Median(c.sleeps)
}

func (c *stoppedCal) close() {
	if c.fd >= 0 {
		unix.Close(c.fd)
	}
}

// calibrationRounds is how many rounds of traced calls Calibrate makes.
const calibrationRounds = 3

// cost is the tracer's cost of one round: the durations of its calls
// traced as recorded ones, when they started, and when the calls traced
// as unrecorded ones started.
func (base baseline) cost(durs, recStarts, stopStarts []int64) capture.Cost {
	periods := func(starts []int64) []int64 {
		var p []int64
		for i := 1; i < len(starts); i++ {
			p = append(p, starts[i]-starts[i-1])
		}
		return p
	}
	durs = slices.Clone(durs)
	recP, stopP := periods(recStarts), periods(stopStarts)
	c := capture.Cost{Samples: len(durs), Call: base.dur}
	c.InCall = max(capture.Median(durs)-base.dur, 0)
	// The gaps add up to the think time a replay keeps: their costs are
	// means (without the extreme twentieths), the durations' a median.
	c.Between = max(capture.TrimmedMean(recP)-base.period-c.InCall, 0)
	c.Stop = max(capture.TrimmedMean(stopP)-base.period, 0)
	q1, q3 := capture.Quartiles(recP)
	c.Spread = (q3 - q1) / 2
	return c
}

// calibrationCall reads the number and first argument of the call at a
// seccomp stop of tid, as onSeccomp does.
func (tr *tracer) calibrationCall(tid int) (nr uint64, fd int32, ok bool) {
	var args [6]uint64
	if err := tr.getInfo(tid); err == nil && tr.info.Op == unix.PTRACE_SYSCALL_INFO_SECCOMP {
		nr, args = tr.info.Nr, tr.info.Args
	} else if err := tr.regs.entry(tid, &nr, &args); err != nil {
		return 0, 0, false
	}
	return nr, fdArg(args[0]), true
}

// runCalibration is the helper as Calibrate's program: it times its
// calls untraced, says so, waits for the tracer, installs the filter and
// makes the traced calls.
func runCalibration() int {
	runtime.LockOSThread()
	fd, err := unix.Open("/dev/zero", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 127
	}
	fd2, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return 127
	}
	var buf [1]byte
	p := uintptr(unsafe.Pointer(&buf[0]))
	read := func(fd int) {
		unix.RawSyscall(unix.SYS_READ, uintptr(fd), p, 1)
	}
	// Untraced: each call's duration between two clock readings, less
	// what a reading costs, and the period from one call to the next.
	t0 := time.Now()
	now := func() int64 { return int64(time.Since(t0)) }
	clk := make([]int64, calibrationCalls)
	for i := range clk {
		a := now()
		clk[i] = now() - a
	}
	durs := make([]int64, calibrationCalls)
	periods := make([]int64, 0, calibrationCalls)
	prev := int64(0)
	for i := range durs {
		a := now()
		read(fd)
		durs[i] = now() - a
		if i > 0 {
			periods = append(periods, a-prev)
		}
		prev = a
	}
	var b [baselineLen]byte
	b[0] = helperReady
	binary.LittleEndian.PutUint64(b[1:], uint64(max(capture.Median(durs)-capture.Median(clk), 0)))
	binary.LittleEndian.PutUint64(b[9:], uint64(capture.Median(periods)))
	binary.LittleEndian.PutUint32(b[17:], uint32(fd))
	binary.LittleEndian.PutUint32(b[21:], uint32(fd2))
	if _, err := unix.Write(helperFD, b[:]); err != nil {
		return 127
	}
	for {
		n, err := unix.Read(helperFD, b[:1])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if n != 1 || b[0] != helperGo {
			return 127
		}
		break
	}
	unix.Close(helperFD)
	prog, err := buildFilter(archCalls)
	if err != nil {
		return 127
	}
	if err := installFilter(prog); err != nil {
		return 127
	}
	// The loops as untraced, so that the periods compare.
	for r := 0; r < calibrationRounds; r++ {
		for i := 0; i < calibrationCalls; i++ {
			_ = now()
			read(fd)
			_ = now()
		}
		for i := 0; i < calibrationCalls; i++ {
			_ = now()
			read(fd2)
			_ = now()
		}
	}
	for i := 0; i < calibrationStopped; i++ {
		_ = now()
		read(fd)
		_ = now()
	}
	return 0
}
