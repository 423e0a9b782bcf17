package preload

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Ring mode. Writing each record to fresh memory costs the traced program
// a page fault per 42 records and a cache miss per record (far more on
// some virtual machines). With IOTRACE_RING and IOTRACE_CONSUMER set, the
// shim instead writes into a ring of RingSlots slots of a shared file
// (ring-PID-NS.sp), which iotrace drains while the program runs: it copies
// every complete record, in slot order, to the process's linear spool
// (spool-PID-NS.sp), clears the slots and moves the ring's tail. The
// program then writes the same few megabytes of warm memory again and
// again. A full ring makes the program wait for the consumer; a dead
// consumer makes it count its records as dropped.

// RingSlots is the size of a process's ring: 3 MiB.
const RingSlots = 32768

// Header offsets of ring mode.
const (
	offHead     = 3200
	offRing     = 3208
	offConsumer = 3212
	offClosed   = 3216 // the consumer stopped: a writer that finds the ring full drops its records
	offTail     = 3264 // a cache line of its own: the consumer writes it
)

// Env returns the environment that makes the shim write rings drained by
// this process, in spool directory dir.
func Env(dir string) []string {
	return []string{"IOTRACE_SPOOL=" + dir, fmt.Sprintf("IOTRACE_RING=%d", RingSlots), fmt.Sprintf("IOTRACE_CONSUMER=%d", os.Getpid())}
}

// ring is one process's ring being drained.
type ring struct {
	name  string
	mem   []byte // the whole file, mapped
	slots uint64
	tail  uint64
	out   *os.File
	outN  int64 // bytes written after the header
	buf   []byte
	holes int64
}

func (r *ring) u64(off int) *uint64 { return (*uint64)(unsafe.Pointer(&r.mem[off])) }

func (r *ring) slot(i uint64) []byte {
	off := headerSize + (i%r.slots)*recSize
	return r.mem[off : off+recSize]
}

// openRing maps a ring file and opens (or continues) its linear spool.
func openRing(name string) (*ring, error) {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() < headerSize {
		return nil, &SpoolError{name, st.Size(), "ring shorter than its header"}
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	r := &ring{name: name, mem: mem}
	if string(mem[:8]) != ringMagic {
		r.close()
		return nil, &SpoolError{name, 0, "not a ring spool (the process is still starting, or damage)"}
	}
	r.slots = uint64(binary.LittleEndian.Uint32(mem[offRing:]))
	if r.slots == 0 || int64(headerSize+r.slots*recSize) != st.Size() {
		r.close()
		return nil, &SpoolError{name, offRing, fmt.Sprintf("ring of %d slots in a file of %d bytes", r.slots, st.Size())}
	}
	r.tail = atomic.LoadUint64(r.u64(offTail))
	lin := linearName(name)
	r.out, err = os.OpenFile(lin, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		r.close()
		return nil, err
	}
	// The linear spool: a header, written when the ring is done, then
	// the records.
	if ost, err := r.out.Stat(); err == nil && ost.Size() >= headerSize {
		r.outN = (ost.Size() - headerSize) / recSize * recSize
	} else if err := r.out.Truncate(headerSize); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

func linearName(ringName string) string {
	dir, base := filepath.Split(ringName)
	return filepath.Join(dir, "spool-"+strings.TrimPrefix(base, "ring-"))
}

func (r *ring) close() {
	if r.mem != nil {
		unix.Munmap(r.mem)
		r.mem = nil
	}
	if r.out != nil {
		r.out.Close()
		r.out = nil
	}
}

// drain copies the complete records from the tail on to the linear
// spool, clears their slots and moves the tail. With final (the process
// is gone) a slot that is not a complete record is a call that never
// ended: it is kept as an empty slot (an incomplete call) and skipped.
// It returns the records copied.
func (r *ring) drain(final bool) (int, error) {
	head := atomic.LoadUint64(r.u64(offHead))
	r.buf = r.buf[:0]
	start := r.tail
	n := 0
	for r.tail < head {
		s := r.slot(r.tail)
		commit := atomic.LoadUint32((*uint32)(unsafe.Pointer(&s[0])))
		seq := binary.LittleEndian.Uint32(s[92:])
		k := uint64(commit & 0xffffff)
		ok := commit&0xff000000 == recCommit && seq == uint32(r.tail) && k >= 1 && k <= 2+2*maxPath/recSize && r.tail+k <= head
		if !ok {
			if !final {
				break // being written
			}
			r.buf = append(r.buf, make([]byte, recSize)...)
			r.tail++
			r.holes++
			continue
		}
		for j := uint64(0); j < k; j++ {
			r.buf = append(r.buf, r.slot(r.tail+j)...)
		}
		r.tail += k
		n++
		if len(r.buf) >= 1<<20 {
			if err := r.flush(start); err != nil {
				return n, err
			}
			start = r.tail
		}
	}
	return n, r.flush(start)
}

// flush writes the copied records, then gives their slots back to the
// writer: a record leaves the ring only once it is in the linear spool.
// Slots are not cleared: a slot holds a record of this lap only when its
// number (seq) says so, and the consumer only reads the ring, which keeps
// the writer's cache lines its own.
func (r *ring) flush(uint64) error {
	if len(r.buf) == 0 {
		return nil
	}
	if _, err := r.out.WriteAt(r.buf, headerSize+r.outN); err != nil {
		return fmt.Errorf("%s: %w", r.out.Name(), err)
	}
	r.outN += int64(len(r.buf))
	r.buf = r.buf[:0]
	atomic.StoreUint64(r.u64(offTail), r.tail)
	return nil
}

// finish drains what is left of a ring whose process is gone, writes the
// linear spool's header and removes the ring.
func (r *ring) finish() error {
	defer r.close()
	// A process still running (one the program left, when record stops
	// waiting for it) must not wait for a consumer that is gone.
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&r.mem[offClosed])), 1)
	if _, err := r.drain(true); err != nil {
		return err
	}
	h := make([]byte, headerSize)
	copy(h, r.mem[:headerSize])
	copy(h, spoolMagic)
	binary.LittleEndian.PutUint32(h[offRing:], 0)
	if _, err := r.out.WriteAt(h, 0); err != nil {
		return fmt.Errorf("%s: %w", r.out.Name(), err)
	}
	if err := r.out.Sync(); err != nil {
		return err
	}
	return os.Remove(r.name)
}

// Drainer drains the rings of a spool directory while a program runs.
type Drainer struct {
	dir   string
	stop  chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	rings map[string]*ring
	err   error
}

// StartDrainer starts draining the rings that appear in dir.
func StartDrainer(dir string) *Drainer {
	d := &Drainer{dir: dir, stop: make(chan struct{}), done: make(chan struct{}), rings: map[string]*ring{}}
	go d.loop()
	return d
}

func (d *Drainer) loop() {
	defer close(d.done)
	idle := time.Millisecond
	lastScan := time.Time{}
	for {
		if time.Since(lastScan) > 20*time.Millisecond {
			d.scan()
			lastScan = time.Now()
		}
		moved := 0
		for _, r := range d.rings {
			n, err := r.drain(false)
			moved += n
			if err != nil && d.err == nil {
				d.err = err
			}
		}
		if moved > 0 {
			idle = time.Millisecond // the next pass in a millisecond: the ring holds 30 ms of calls at 1 M/s
		}
		select {
		case <-d.stop:
			return
		case <-time.After(idle):
		}
		idle = min(2*idle, 10*time.Millisecond)
	}
}

// scan opens the rings not seen yet.
func (d *Drainer) scan() {
	names, _ := filepath.Glob(filepath.Join(d.dir, "ring-*.sp"))
	for _, n := range names {
		if _, ok := d.rings[n]; ok {
			continue
		}
		r, err := openRing(n)
		if err != nil {
			var se *SpoolError
			if errors.As(err, &se) && se.Offset == 0 {
				continue // still starting: next scan
			}
			if d.err == nil {
				d.err = err
			}
			continue
		}
		d.rings[n] = r
	}
}

// Stop stops draining after the program has ended: it drains every ring
// to its end and leaves only linear spools in the directory.
func (d *Drainer) Stop() error {
	close(d.stop)
	<-d.done
	d.scan()
	for _, r := range d.rings {
		if err := r.finish(); err != nil && d.err == nil {
			d.err = err
		}
	}
	return d.err
}

// Recover drains the rings a killed iotrace (or one that stopped waiting
// for processes the program left running) left in dir into linear spools
// (--from-spool). A ring without a header, of a process that ended (or
// was still running) as its shim started, is removed: it holds no record.
func Recover(dir string) error {
	names, err := filepath.Glob(filepath.Join(dir, "ring-*.sp"))
	if err != nil {
		return err
	}
	for _, n := range names {
		r, err := openRing(n)
		var se *SpoolError
		if errors.As(err, &se) && se.Offset == 0 {
			if err := os.Remove(n); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if err := r.finish(); err != nil {
			return err
		}
	}
	return nil
}

// LiveProducers returns the pids of the processes that write rings in
// dir and still run (not zombies; the same process the ring names, by its
// start time, not another that got its pid). gone caches the rings found
// ended, for the next call.
func LiveProducers(dir string, gone map[string]bool) []int {
	names, _ := filepath.Glob(filepath.Join(dir, "ring-*.sp"))
	var pids []int
	for _, n := range names {
		if gone[n] {
			continue
		}
		pid, start := ringProducer(n)
		if pid <= 0 || !procAlive(pid, start) {
			gone[n] = true
			continue
		}
		if !slices.Contains(pids, pid) {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids
}

// ringProducer reads the pid and process start time of a ring's writer
// (a ring whose header is not written yet: the pid in its name).
func ringProducer(name string) (int, uint64) {
	f, err := os.Open(name)
	if err == nil {
		defer f.Close()
		h := make([]byte, offProcStart+8)
		if _, err := f.ReadAt(h, 0); err == nil && string(h[:8]) == ringMagic {
			return int(binary.LittleEndian.Uint32(h[20:])), binary.LittleEndian.Uint64(h[offProcStart:])
		}
	}
	var pid int
	var ns int64
	if _, err := fmt.Sscanf(filepath.Base(name), "ring-%d-%d.sp", &pid, &ns); err != nil {
		return 0, 0
	}
	return pid, 0
}

// procAlive says whether process pid runs (a zombie has ended), and, with
// start, whether it is the process that started then.
func procAlive(pid int, start uint64) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return false
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3, the state
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return false
	}
	if start != 0 {
		st, err := strconv.ParseUint(f[19], 10, 64) // field 22
		return err == nil && st == start
	}
	return true
}
