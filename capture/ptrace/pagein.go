//go:build linux && (amd64 || arm64)

package ptrace

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strconv"
	"unsafe"

	"github.com/iotrace/iotrace/trace"
	"golang.org/x/sys/unix"
)

// Waits for mapped pages (docs/FORMAT.md, "Waits for mapped pages"): a
// program that reads a file through a mapping waits for uncached pages
// between its calls, where the tracer sees no call. While a process has
// a recorded file mapping, the tracer reads its thread's usage at the
// exit stop of each recorded call (markUsage) and again at the entry
// stop of the thread's next recorded call (pagein); where the thread
// read from the device in between (major faults, bytes the file systems
// read for it), the time it spent neither on a processor nor waiting
// for one in that gap, less the tracer's own stops in it, becomes a
// pagein event that ends where the next call starts. Both readings are
// the tracer's own time, taken out as its other bookkeeping is.

// usage is what the tracer reads of a thread (all counters since it
// started).
type usage struct {
	cpu  int64 // time on a processor, ns (schedstat)
	wait int64 // time runnable, waiting for a processor, ns (schedstat)
	maj  int64 // page faults that read from the device (stat: majflt)
	rd   int64 // bytes the file systems read for it (io: read_bytes; 0 without task I/O accounting)
}

// usageFiles are a thread's usage files, open while it lives (-1: not
// open, or the kernel has none): /proc/TGID/task/TID/schedstat and io,
// a perf counter of its major faults or, where perf events are not
// allowed, its /proc stat (a pread of stat costs 3 µs on the VM of
// docs/BENCHMARKS.md, a read of the counter 0.6 µs).
type usageFiles struct {
	sched, io, maj, stat int
}

// closeUsage closes t's usage files.
func (t *task) closeUsage() {
	if u := t.use; u != nil {
		for _, fd := range []int{u.sched, u.io, u.maj, u.stat} {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
		t.use = nil
	}
	t.fw = false
}

// openUsage opens /proc/TGID/task/TID/{stat,schedstat,io} of t (the
// thread's own counters: /proc/TID/stat and io add up the whole thread
// group's).
func (tr *tracer) openUsage(t *task) *usageFiles {
	u := &usageFiles{-1, -1, -1, -1}
	open := func(name string) int {
		b := append(tr.proc.path[:0], "/proc/"...)
		b = strconv.AppendInt(b, int64(t.tgid), 10)
		b = append(b, "/task/"...)
		b = strconv.AppendInt(b, int64(t.tid), 10)
		b = append(b, '/')
		b = append(b, name...)
		tr.proc.path = b
		fd, err := unix.Open(string(b), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1
		}
		return fd
	}
	u.sched, u.io = open("schedstat"), open("io")
	// Its page faults that read from the device, made in user mode:
	// through its mappings (a fault in a call, copying to or from a
	// mapped buffer, is the call's). A tracer may count them in its
	// tracee whatever perf_event_paranoid says, up to 2.
	attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_PAGE_FAULTS_MAJ,
		Size: uint32(unsafe.Sizeof(unix.PerfEventAttr{})), Bits: unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv}
	if fd, err := unix.PerfEventOpen(&attr, t.tid, -1, -1, unix.PERF_FLAG_FD_CLOEXEC); err == nil && !noPerf {
		u.maj = fd
	} else {
		if err == nil {
			unix.Close(fd)
		}
		u.stat = open("stat")
	}
	return u
}

// readUsage reads t's usage into u; false if it cannot (the thread is
// gone, or the kernel keeps no schedstat).
func (tr *tracer) readUsage(t *task, u *usage) bool {
	if t.use == nil {
		t.use = tr.openUsage(t)
	}
	tr.usageReads++
	f := t.use
	if f.sched < 0 || (f.maj < 0 && f.stat < 0) {
		return false
	}
	buf := tr.ubuf[:]
	n, err := unix.Pread(f.sched, buf, 0)
	if err != nil || n <= 0 {
		return false
	}
	var ok bool
	if u.cpu, u.wait, ok = parseSchedstat(buf[:n]); !ok {
		return false
	}
	if f.maj >= 0 {
		if n, err = unix.Read(f.maj, buf[:8]); err != nil || n != 8 {
			return false
		}
		u.maj = int64(binary.NativeEndian.Uint64(buf[:8]))
	} else {
		if n, err = unix.Pread(f.stat, buf, 0); err != nil || n <= 0 {
			return false
		}
		if u.maj, ok = parseMajflt(buf[:n]); !ok {
			return false
		}
	}
	u.rd = 0
	if f.io >= 0 {
		if n, err = unix.Pread(f.io, buf, 0); err == nil && n > 0 {
			u.rd = parseReadBytes(buf[:n])
		}
	}
	return true
}

// parseSchedstat reads /proc/…/schedstat: "on-CPU-ns runqueue-ns slices".
func parseSchedstat(b []byte) (cpu, wait int64, ok bool) {
	i := bytes.IndexByte(b, ' ')
	if i <= 0 {
		return 0, 0, false
	}
	cpu = parseInt(b[:i], 10)
	rest := b[i+1:]
	if len(rest) == 0 || rest[0] < '0' || rest[0] > '9' {
		return 0, 0, false
	}
	return cpu, parseInt(rest, 10), true
}

// parseMajflt reads majflt (field 12) of /proc/…/stat: the fields after
// the command name, which is in parentheses and may hold any byte.
func parseMajflt(b []byte) (int64, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	b = b[i+1:]
	// Fields 3 (state) to 12 (majflt): the tenth after the name.
	for f := 0; f < 10; f++ {
		for len(b) > 0 && b[0] == ' ' {
			b = b[1:]
		}
		if f == 9 {
			if len(b) == 0 || b[0] < '0' || b[0] > '9' {
				return 0, false
			}
			return parseInt(b, 10), true
		}
		j := bytes.IndexByte(b, ' ')
		if j < 0 {
			return 0, false
		}
		b = b[j:]
	}
	return 0, false
}

// parseReadBytes reads the "read_bytes:" line of /proc/…/io (0 if none).
func parseReadBytes(b []byte) int64 {
	const key = "\nread_bytes:"
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return 0
	}
	return parseInt(bytes.TrimLeft(b[i+len(key):], " "), 10)
}

// stoppedIn returns how long the tracer kept t stopped in a gap with
// stops stops (the next call's entry stop, and those of calls not
// recorded): the thread's median stopped time per stop in its latest
// gaps without a wait for the device, once it has stoppedMin of them;
// else the calibration's (Cost.Stopped, scaled as the run scales the
// costs between calls); else the tracer's cost of the gap as the
// account has it for the thread (Between and a Stop for each call not
// recorded, as the run scales them), of which its stops are a part —
// the thread's resuming and stopping on a processor or runnable, which
// its sleep has not, make the rest. Never more than that cost: a sleep
// in a call not recorded is no stop. (Not the account's take of the
// gap: that holds other threads' costs, or none when another thread's
// call took them.) 0 with --raw-times, which keeps the tracer's cost in
// the times.
func (tr *tracer) stoppedIn(t *task, stops int64) int64 {
	c := &tr.acct.C
	cost := tr.acct.Follow(t.idx, c.Between) + (stops-1)*tr.acct.Follow(t.idx, c.Stop)
	if c.Samples == 0 || cost <= 0 {
		return 0
	}
	switch {
	case t.stopped.n >= stoppedMin:
		return min(stops*t.stopped.median(), cost)
	case c.Stopped > 0:
		return min(stops*tr.acct.Follow(t.idx, c.Stopped), cost)
	}
	return cost
}

// stoppedWindow keeps a thread's latest stoppedWindow times stopped per
// stop (ns).
type stoppedWindow struct {
	v [32]int64
	n int
}

// stoppedMin is how many gaps a thread's stopped time needs before it
// replaces the account's cost.
const stoppedMin = 8

func (w *stoppedWindow) add(x int64) {
	w.v[w.n%len(w.v)] = x
	w.n++
}

func (w *stoppedWindow) median() int64 {
	var s [len(stoppedWindow{}.v)]int64
	k := copy(s[:], w.v[:min(w.n, len(w.v))])
	slices.Sort(s[:k])
	return s[k/2]
}

// markUsage reads t's usage at the exit stop of its recorded call (its
// event just written), while its process has a recorded file mapping:
// the start of the gap to its next recorded call. The reading's time is
// the tracer's, in that gap (Account.Over).
func (tr *tracer) markUsage(t *task) {
	if tr.st.Proc(t.idx).Maps.Len() == 0 {
		t.fw = false
		return
	}
	a := tr.now()
	ok := tr.readUsage(t, &t.fwU)
	b := tr.now()
	tr.acct.Over(b - a)
	t.fw, t.fwAt, t.pend, t.fwStops = ok, b, t.ev.Start+t.ev.Dur, 0
}

// pagein reads t's usage at the entry stop of its next recorded call
// (t.ev, starting at s0 on the real clock) and writes a pagein event before it if the thread read from
// the device since markUsage. The wait is the time the thread slept
// (neither on a processor nor runnable) from the tracer letting it go to
// s0, less the time it was stopped for the tracer meanwhile (stopped):
// at most the gap the trace shows.
func (tr *tracer) pagein(t *task, s0 int64) {
	t.fw = false
	stops := int64(t.fwStops) + 1 // this entry stop, and those of the calls between
	t.fwStops = 0
	var u usage
	if !tr.readUsage(t, &u) {
		return
	}
	wall := s0 - t.fwAt
	sleep := wall - (u.cpu - t.fwU.cpu) - (u.wait - t.fwU.wait)
	maj, rd := u.maj-t.fwU.maj, u.rd-t.fwU.rd
	if maj <= 0 && rd <= 0 {
		// No wait for the device: what the thread slept is the time the
		// tracer kept it stopped (or a call that slept: the median).
		t.stopped.add(sleep / stops)
		return
	}
	maps := &tr.st.Proc(t.idx).Maps
	if maps.Len() == 0 {
		return
	}
	dur := min(sleep-tr.stoppedIn(t, stops), t.ev.Start-t.pend)
	if wall <= 0 || dur <= 0 {
		return
	}
	ev := trace.Event{Op: trace.OpPagein, Rank: tr.rank, Thread: t.idx, Start: t.ev.Start - dur, Dur: dur,
		FD: -1, Count: int32(min(max(maj, 0), 1<<31-1)), Size: max(rd, 0)}
	if id, ok := maps.OneFile(); ok {
		ev.Path = id
	}
	tr.add(&ev)
}

// noPerf makes the tracer read major faults from /proc stat (tests).
var noPerf = false
