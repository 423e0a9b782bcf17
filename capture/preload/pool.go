package preload

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// PoolSlots is how many spool files a Pool keeps made ahead.
const PoolSlots = 8

// poolFirst is how many bytes a pool file holds allocated: a spool's
// header and its first blocks, as the shim's size_spool makes them.
const poolFirst = headerSize + 4*blockSize

// Pool keeps spool files made ahead in a spool directory ("pool-K", K
// below PoolSlots), which the shim claims by renaming one to the name of
// its process's spool (IOTRACE_POOL, PoolEnv). A process that starts
// then creates no file: on ext4, creating one after many deletions (the
// spools of the records before) scans the inodes deleted in the last
// seconds, a millisecond and more of the program's time at every process
// it starts. The pool remakes a slot as it is taken, in the recorder's
// own process; a slot it has not remade yet makes the shim create its
// spool as before. Files the shim has not claimed are not spools (the
// readers look for spool-*.sp) and Stop removes them.
type Pool struct {
	dir   string
	in    *os.File // inotify: the slots renamed away
	done  chan struct{}
	mu    sync.Mutex
	err   error
	taken int // slots the shim took
}

// PoolEnv is the environment that tells the shim a pool runs in its
// spool directory.
func PoolEnv() []string { return []string{"IOTRACE_POOL=" + strconv.Itoa(PoolSlots)} }

// StartPool starts keeping the pool's files made in dir, until Stop: it
// makes them in a goroutine of its own (the program starts meanwhile,
// and its first processes may find a slot not made yet), and remakes
// each one the shim takes. It fails where it cannot tell renames
// (inotify); where the file system cannot allocate a file's blocks ahead
// it makes none (Stop says why). Either way the shim creates the spools
// the pool does not give.
func StartPool(dir string) (*Pool, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("spool pool: %w", err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_MOVED_FROM); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("spool pool: %w", err)
	}
	p := &Pool{dir: dir, in: os.NewFile(uintptr(fd), "inotify"), done: make(chan struct{})}
	go func() {
		for k := range PoolSlots {
			if err := p.make(k); err != nil {
				p.fail(err)
				break
			}
		}
		p.refill()
	}()
	return p, nil
}

func (p *Pool) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = err
	}
}

// make makes slot k: a file of poolFirst bytes allocated, made under
// another name and renamed into the slot whole.
func (p *Pool) make(k int) error {
	slot := filepath.Join(p.dir, "pool-"+strconv.Itoa(k))
	tmp := slot + ".new"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("spool pool: %w", err)
	}
	err = unix.Fallocate(int(f.Fd()), 0, 0, poolFirst)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, slot)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("spool pool: %w", err)
	}
	return nil
}

// refill remakes each slot the shim takes, until Stop closes the watch.
func (p *Pool) refill() {
	defer close(p.done)
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := p.in.Read(buf)
		if err != nil {
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			end := off + unix.SizeofInotifyEvent + int(ev.Len)
			if end > n {
				break
			}
			name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:end]), "\x00")
			off = end
			k, ok := poolSlot(name)
			if !ok {
				continue
			}
			p.mu.Lock()
			p.taken++
			p.mu.Unlock()
			if err := p.make(k); err != nil {
				p.fail(err)
			}
		}
	}
}

// poolSlot reads the slot of a pool file's name ("pool-K").
func poolSlot(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, "pool-")
	if !ok {
		return 0, false
	}
	k, err := strconv.Atoi(s)
	return k, err == nil && k >= 0 && k < PoolSlots
}

// Stop stops remaking slots and removes the files not taken. It returns
// the first error the pool had remaking one (the shim then made its
// spools itself: nothing was lost).
func (p *Pool) Stop() error {
	p.in.Close()
	<-p.done
	p.remove()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Taken is how many of the pool's files the shim took so far.
func (p *Pool) Taken() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.taken
}

// remove removes the pool's files.
func (p *Pool) remove() { RemovePool(p.dir) }

// RemovePool removes the files a pool left in dir (a record killed before
// it stopped its pool): they are not spools.
func RemovePool(dir string) {
	for k := range PoolSlots {
		slot := filepath.Join(dir, "pool-"+strconv.Itoa(k))
		os.Remove(slot)
		os.Remove(slot + ".new")
	}
}
