// Package posix is the replay backend that issues every call through the
// POSIX system calls of Linux (golang.org/x/sys/unix): opens with the
// recorded flags and modes, reads and writes at the recorded offsets
// (calls without an explicit offset use the file position, so seeks and
// O_APPEND behave as they did), vector calls, syncs, truncation, metadata
// calls. MPI-IO calls become preads and pwrites at their offsets, mapped
// through the file view (displacement, block length, stride), on a
// descriptor per rank and file handle.
//
// Nothing outside the target directory is touched: paths are resolved
// with openat2(2) and RESOLVE_BENEATH (or, on kernels without it, one
// component at a time with O_NOFOLLOW), and the engine has already mapped
// every path inside (see replay.Mapper). Writes of files with other hard
// links, and opens of devices, FIFOs and sockets found in the target, are
// skipped.
package posix

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/trace"
	"golang.org/x/sys/unix"
)

// Options configure the backend.
type Options struct {
	// Target is the directory the replay works in; it must exist.
	Target string
	// Direct opens regular files with O_DIRECT and uses buffers aligned
	// for it. Requests must then be aligned too (replay's Align).
	Direct bool
	// Sparse prepares files by setting their size only: their holes read
	// as zeros instead of the pattern.
	Sparse bool
	// FixedData makes every write take its bytes from the head of the
	// pattern (replay.Pattern.FixedCursor) instead of the non-repeating
	// stream.
	FixedData bool
	// Walk resolves paths with the O_NOFOLLOW walk even where openat2 is
	// available (for tests).
	Walk bool
	// NoRawSyscalls issues every call through the Go scheduler. By
	// default the data calls (read, write and their variants) of a replay
	// with fewer ranks than processors skip the scheduler's bookkeeping
	// (a raw system call), which a blocked call then holds its processor
	// through.
	NoRawSyscalls bool
}

// Backend replays calls through POSIX system calls. It implements
// replay.Backend.
type Backend struct {
	opts  Options
	root  *root
	pat   *replay.Pattern
	names byName // for Name
}

// New opens the target directory.
func New(opts Options) (*Backend, error) {
	r, err := openRoot(opts.Target, opts.Walk)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", opts.Target, err)
	}
	return &Backend{opts: opts, root: r}, nil
}

// Beneath reports whether paths are resolved with openat2 and
// RESOLVE_BENEATH (false: the O_NOFOLLOW walk).
func (b *Backend) Beneath() bool { return b.root.beneath }

func (b *Backend) pattern() *replay.Pattern {
	if b.pat == nil {
		b.pat = replay.NewPattern()
	}
	return b.pat
}

// Close implements replay.Backend.
func (b *Backend) Close() error { return b.root.close() }

// Prepare implements replay.Backend: it creates p's directories, and its
// files with at least the size p gives them, filled with the pattern. A
// file that already has that size is left as it is.
func (b *Backend) Prepare(ctx context.Context, p *replay.Plan) error {
	for _, d := range p.Dirs {
		if err := b.mkdirAll(d); err != nil {
			return fmt.Errorf("prepare directory %s: %w", d, err)
		}
	}
	pat := b.pattern()
	cur := pat.Cursor(1 << 40)
	for _, f := range p.Files {
		if err := b.prepareFile(ctx, f, &cur); err != nil {
			return fmt.Errorf("prepare %s: %w", f.Path, err)
		}
	}
	return nil
}

func (b *Backend) mkdirAll(rel string) error {
	dfd, base, release, err := b.root.parent(rel)
	if err != nil {
		return err
	}
	defer release()
	err = unix.Mkdirat(dfd, base, 0o755)
	if err == unix.EEXIST {
		var st unix.Stat_t
		if serr := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); serr == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			return nil
		}
		return fmt.Errorf("exists and is not a directory")
	}
	return err
}

func (b *Backend) prepareFile(ctx context.Context, f replay.PrepFile, cur *replay.Cursor) error {
	fd, err := b.root.open(f.Path, unix.O_WRONLY|unix.O_CREAT|unix.O_NONBLOCK, 0o644)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return errors.New("exists and is not a regular file")
	}
	if st.Nlink > 1 {
		return errors.New("has other hard links; not writing it")
	}
	if st.Size >= f.Size {
		return nil
	}
	if b.opts.Sparse {
		return unix.Ftruncate(fd, f.Size)
	}
	for off := st.Size; off < f.Size; {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := int(min(f.Size-off, replay.PatternChunk))
		w, err := unix.Pwrite(fd, cur.Next(n, 1), off)
		if err != nil {
			return err
		}
		off += int64(w)
	}
	return nil
}

// Rank implements replay.Backend.
func (b *Backend) Rank(rank uint32, ranks int) (replay.Executor, error) {
	// The read buffer: 256 MiB over all ranks, 64 KiB to 1 MiB each.
	rchunk := (256 << 20) / max(ranks, 1)
	rchunk = min(max(rchunk, 64<<10), replay.PatternChunk) &^ (replay.DirectAlign - 1)
	x := &rankExec{
		b:      b,
		rank:   rank,
		cur:    b.pattern().Cursor(uint64(rank)),
		rchunk: rchunk,
		raw:    !b.opts.NoRawSyscalls && ranks < runtime.GOMAXPROCS(0),
		align:  1,
		files:  map[int32]*mpiFile{},
	}
	if b.opts.Direct {
		x.align = replay.DirectAlign
	}
	if b.opts.FixedData {
		x.cur = b.pattern().FixedCursor()
	}
	x.fds = make([]fdEntry, 64)
	for i := 0; i < 3; i++ {
		x.fds[i] = fdEntry{state: fdStd}
	}
	return x, nil
}

// descriptor states
const (
	fdFree    uint8 = iota // the trace has not opened it (or closed it)
	fdStd                  // a standard stream the trace inherited
	fdOpen                 // open: real is the replay's descriptor
	fdSkipped              // an open the replay skipped (skip says why)
	fdFailed               // an open that failed in the replay
)

type fdEntry struct {
	state uint8
	skip  replay.Skip
	real  int32
}

// maxFD bounds the trace descriptors the table holds.
const maxFD = 1 << 20

// mpiFile is an MPI file handle of one rank.
type mpiFile struct {
	fd                     int
	rel                    string
	disp, blocklen, stride int64
	deleteOnClose          bool
}

// rankExec is one rank's executor.
type rankExec struct {
	b      *Backend
	rank   uint32
	fds    []fdEntry // by trace descriptor
	files  map[int32]*mpiFile
	cur    replay.Cursor
	rbuf   []byte
	rchunk int // size of the read buffer at most
	raw    bool
	align  int
	iov    []unix.Iovec
}

func (x *rankExec) fd(tfd int32) *fdEntry {
	if tfd < 0 || tfd >= maxFD {
		return nil
	}
	if int(tfd) >= len(x.fds) {
		n := make([]fdEntry, max(int(tfd)+1, 2*len(x.fds)))
		copy(n, x.fds)
		x.fds = n
	}
	return &x.fds[tfd]
}

// use returns the real descriptor behind trace descriptor tfd, or what to
// do instead.
func (x *rankExec) use(tfd int32) (int, int64, replay.Skip) {
	f := x.fd(tfd)
	if f == nil {
		return -1, 0, replay.SkipUnknownFD
	}
	switch f.state {
	case fdOpen:
		return int(f.real), 0, replay.NotSkipped
	case fdStd:
		return -1, 0, replay.SkipStdStream
	case fdSkipped:
		return -1, 0, replay.SkipSpecialFD
	case fdFailed:
		return -1, -int64(unix.EBADF), replay.NotSkipped
	}
	return -1, 0, replay.SkipUnknownFD
}

// Close implements replay.Executor: it closes what the rank left open.
func (x *rankExec) Close() error {
	for i := range x.fds {
		if x.fds[i].state == fdOpen {
			unix.Close(int(x.fds[i].real))
		}
		x.fds[i] = fdEntry{}
	}
	for h, f := range x.files {
		unix.Close(f.fd)
		delete(x.files, h)
	}
	return nil
}

func errno(err error) int64 {
	var en unix.Errno
	if errors.As(err, &en) {
		return -int64(en)
	}
	return -int64(unix.EIO)
}

// result turns an error of a path operation into a call result.
func result(err error) (int64, replay.Skip) {
	if err == nil {
		return 0, replay.NotSkipped
	}
	if errors.Is(err, errEscape) {
		return 0, replay.SkipEscape
	}
	return errno(err), replay.NotSkipped
}

// Do implements replay.Executor.
func (x *rankExec) Do(c *replay.Call) (int64, replay.Skip) {
	e := c.Ev
	switch e.Op {
	case trace.OpPwrite, trace.OpWrite, trace.OpFwrite, trace.OpPread, trace.OpRead, trace.OpFread:
		fd, ret, skip := x.use(e.FD)
		if fd < 0 {
			return ret, skip
		}
		explicit := e.Op == trace.OpPwrite || e.Op == trace.OpPread
		return x.rw(fd, e.Op.Dir() == trace.DirWrite, explicit, e.Offset, e.Size), replay.NotSkipped
	case trace.OpReadv, trace.OpWritev, trace.OpPreadv, trace.OpPwritev, trace.OpPreadv2, trace.OpPwritev2:
		fd, ret, skip := x.use(e.FD)
		if fd < 0 {
			return ret, skip
		}
		return x.vector(fd, e), replay.NotSkipped
	case trace.OpOpen, trace.OpOpenat, trace.OpOpenat2, trace.OpCreat, trace.OpFopen:
		return x.open(c)
	case trace.OpClose, trace.OpFclose:
		return x.close(e.FD)
	case trace.OpCloseRange:
		if e.Flags&unix.CLOSE_RANGE_CLOEXEC != 0 {
			return 0, replay.NotSkipped
		}
		last := min(e.Size, int64(len(x.fds)-1))
		for fd := int64(e.FD); fd >= 0 && fd <= last; fd++ {
			x.close(int32(fd))
		}
		return 0, replay.NotSkipped
	case trace.OpDup, trace.OpDup2, trace.OpDup3, trace.OpFcntl:
		return x.dup(e)
	case trace.OpLseek, trace.OpFseek:
		fd, ret, skip := x.use(e.FD)
		if fd < 0 {
			return ret, skip
		}
		off, err := unix.Seek(fd, e.Offset, int(e.Whence))
		if err != nil {
			return errno(err), replay.NotSkipped
		}
		return off, replay.NotSkipped
	case trace.OpFsync, trace.OpFdatasync, trace.OpFflush, trace.OpFtruncate, trace.OpFstat:
		fd, ret, skip := x.use(e.FD)
		if fd < 0 {
			return ret, skip
		}
		var err error
		switch e.Op {
		case trace.OpFsync:
			err = unix.Fsync(fd)
		case trace.OpFdatasync:
			err = unix.Fdatasync(fd)
		case trace.OpFtruncate:
			err = unix.Ftruncate(fd, max(e.Size, 0))
		case trace.OpFstat:
			var st unix.Stat_t
			err = unix.Fstat(fd, &st)
		}
		// fflush moves data from a stdio buffer with a write the trace
		// holds on its own: nothing to do here.
		if err != nil {
			return errno(err), replay.NotSkipped
		}
		return 0, replay.NotSkipped
	}
	switch e.Op.Class() {
	case trace.ClassMeta:
		return x.meta(c)
	case trace.ClassMPIIO:
		return x.mpiio(c)
	}
	return 0, replay.SkipUnsupported
}

// sys issues a read or write system call, raw when the executor may.
func (x *rankExec) sys(trap uintptr, fd int, p []byte, a3, a4, a5 uintptr) (int, unix.Errno) {
	ptr := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	var r uintptr
	var en unix.Errno
	if x.raw {
		var e uintptr
		r, e = rawSyscall(trap, uintptr(fd), ptr, uintptr(len(p)), a3, a4, a5)
		en = unix.Errno(e)
	} else {
		r, _, en = unix.Syscall6(trap, uintptr(fd), ptr, uintptr(len(p)), a3, a4, a5)
	}
	runtime.KeepAlive(p)
	return int(r), en
}

// readBuf returns a buffer of n bytes (n ≤ rchunk) to read into.
func (x *rankExec) readBuf(n int) []byte {
	if cap(x.rbuf) < n {
		size := min(max(n, 64<<10), x.rchunk)
		raw := make([]byte, size+replay.DirectAlign)
		off := 0
		if r := int(uintptr(unsafe.Pointer(&raw[0])) % replay.DirectAlign); r != 0 {
			off = replay.DirectAlign - r
		}
		x.rbuf = raw[off : off+size : off+size]
	}
	return x.rbuf[:n]
}

// maxIov is the most buffers one vector call takes (IOV_MAX).
const maxIov = 1024

// rw reads or writes size bytes, at off if explicit, else at the file
// position, with one system call as the trace did: a plain one when the
// bytes fit one buffer (PatternChunk bytes of the pattern, or the read
// buffer), else a vector call over several — writes take consecutive
// slices of the pattern, reads land in the read buffer again and again.
// Only a request larger than maxIov buffers takes more than one call. It
// returns the bytes moved, or −errno if nothing moved.
func (x *rankExec) rw(fd int, write, explicit bool, off, size int64) int64 {
	size = max(size, 0)
	piece := int64(replay.PatternChunk)
	if !write {
		piece = int64(x.rchunk)
	}
	var done int64
	for {
		n := min(size-done, piece*maxIov)
		var r int
		var en unix.Errno
		if n <= piece {
			var p []byte
			if write {
				p = x.cur.Next(int(n), x.align)
			} else {
				p = x.readBuf(int(n))
			}
			switch {
			case explicit && write:
				r, en = x.sys(unix.SYS_PWRITE64, fd, p, uintptr(off+done), 0, 0)
			case explicit:
				r, en = x.sys(unix.SYS_PREAD64, fd, p, uintptr(off+done), 0, 0)
			case write:
				r, en = x.sys(unix.SYS_WRITE, fd, p, 0, 0, 0)
			default:
				r, en = x.sys(unix.SYS_READ, fd, p, 0, 0, 0)
			}
		} else {
			x.iov = x.iov[:0]
			for left := n; left > 0; left -= piece {
				k := int(min(left, piece))
				if write {
					x.addIov(x.cur.Next(k, x.align))
				} else {
					x.addIov(x.readBuf(int(piece))[:k])
				}
			}
			trap := uintptr(unix.SYS_READV)
			switch {
			case explicit && write:
				trap = unix.SYS_PWRITEV
			case explicit:
				trap = unix.SYS_PREADV
			case write:
				trap = unix.SYS_WRITEV
			}
			var a3, a4 uintptr
			if explicit {
				a3, a4 = posLo(off+done), posHi(off+done)
			}
			r, en = x.sysv(trap, fd, a3, a4, 0)
		}
		if en == unix.EINTR {
			continue
		}
		if en != 0 {
			if done > 0 {
				return done
			}
			return -int64(en)
		}
		done += int64(r)
		if int64(r) < n || done >= size {
			return done
		}
	}
}

func (x *rankExec) addIov(b []byte) {
	var v unix.Iovec
	if len(b) > 0 {
		v.Base = &b[0]
	}
	v.SetLen(len(b))
	x.iov = append(x.iov, v)
}

// sysv issues a vector system call over x.iov, raw when the executor
// may.
func (x *rankExec) sysv(trap uintptr, fd int, a3, a4, a5 uintptr) (int, unix.Errno) {
	iov := uintptr(unsafe.Pointer(unsafe.SliceData(x.iov)))
	var r uintptr
	var en unix.Errno
	if x.raw {
		var e uintptr
		r, e = rawSyscall(trap, uintptr(fd), iov, uintptr(len(x.iov)), a3, a4, a5)
		en = unix.Errno(e)
	} else {
		r, _, en = unix.Syscall6(trap, uintptr(fd), iov, uintptr(len(x.iov)), a3, a4, a5)
	}
	runtime.KeepAlive(x.iov)
	runtime.KeepAlive(x.rbuf)
	return int(r), en
}

// posLo and posHi split a file offset into the two arguments of
// preadv(2) and its kin.
func posLo(off int64) uintptr { return uintptr(off) }
func posHi(off int64) uintptr { return uintptr(uint64(off) >> (longBits / 2) >> (longBits / 2)) }

// vector replays a vector call: Count buffers (1–1024) of equal length
// summing to Size (the last takes the remainder). Calls whose buffers
// are larger than a slice of the pattern (or the read buffer) go to rw,
// which cuts them into slices, in one vector call still.
func (x *rankExec) vector(fd int, e *trace.Event) int64 {
	write := e.Op.Dir() == trace.DirWrite
	explicit := e.Op != trace.OpReadv && e.Op != trace.OpWritev && e.Offset >= 0
	size := max(e.Size, 0)
	cnt := int64(min(max(e.Count, 1), maxIov))
	cnt = max(min(cnt, size), 1)
	per := size / cnt
	piece := int64(replay.PatternChunk)
	if !write {
		piece = int64(x.rchunk)
	}
	last := size - per*(cnt-1) // the last buffer takes the remainder
	if last > piece {
		return x.rw(fd, write, explicit, e.Offset, size)
	}
	var rb []byte
	if !write {
		rb = x.readBuf(int(last))
	}
	x.iov = x.iov[:0]
	for i := int64(0); i < cnt; i++ {
		n := per
		if i == cnt-1 {
			n = last
		}
		if write {
			x.addIov(x.cur.Next(int(n), x.align))
		} else {
			x.addIov(rb[:n])
		}
	}
	var trap, a3, a4, a5 uintptr
	switch e.Op {
	case trace.OpReadv:
		trap = unix.SYS_READV
	case trace.OpWritev:
		trap = unix.SYS_WRITEV
	case trace.OpPreadv:
		trap, a3, a4 = unix.SYS_PREADV, posLo(e.Offset), posHi(e.Offset)
	case trace.OpPwritev:
		trap, a3, a4 = unix.SYS_PWRITEV, posLo(e.Offset), posHi(e.Offset)
	case trace.OpPreadv2:
		trap, a3, a4, a5 = unix.SYS_PREADV2, posLo(e.Offset), posHi(e.Offset), uintptr(e.Flags)
	case trace.OpPwritev2:
		trap, a3, a4, a5 = unix.SYS_PWRITEV2, posLo(e.Offset), posHi(e.Offset), uintptr(e.Flags)
	}
	for {
		r, en := x.sysv(trap, fd, a3, a4, a5)
		if en == unix.EINTR {
			continue
		}
		if en != 0 {
			return -int64(en)
		}
		return int64(r)
	}
}

const longBits = 32 << (^uintptr(0) >> 63)
