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
	chunk := (256 << 20) / max(ranks, 1)
	chunk = min(max(chunk, 64<<10), replay.PatternChunk) &^ (replay.DirectAlign - 1)
	x := &rankExec{
		b:     b,
		rank:  rank,
		cur:   b.pattern().Cursor(uint64(rank)),
		chunk: chunk,
		raw:   !b.opts.NoRawSyscalls && ranks < runtime.GOMAXPROCS(0),
		align: 1,
		files: map[int32]*mpiFile{},
	}
	if b.opts.Direct {
		x.align = replay.DirectAlign
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
	b     *Backend
	rank  uint32
	fds   []fdEntry // by trace descriptor
	files map[int32]*mpiFile
	cur   replay.Cursor
	rbuf  []byte
	chunk int
	raw   bool
	align int
	iov   []unix.Iovec
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
		r, _, en = unix.RawSyscall6(trap, uintptr(fd), ptr, uintptr(len(p)), a3, a4, a5)
	} else {
		r, _, en = unix.Syscall6(trap, uintptr(fd), ptr, uintptr(len(p)), a3, a4, a5)
	}
	runtime.KeepAlive(p)
	return int(r), en
}

// readBuf returns a buffer of n bytes (n ≤ chunk) to read into.
func (x *rankExec) readBuf(n int) []byte {
	if cap(x.rbuf) < n {
		size := min(max(n, 64<<10), x.chunk)
		raw := make([]byte, size+replay.DirectAlign)
		off := 0
		if r := int(uintptr(unsafe.Pointer(&raw[0])) % replay.DirectAlign); r != 0 {
			off = replay.DirectAlign - r
		}
		x.rbuf = raw[off : off+size : off+size]
	}
	return x.rbuf[:n]
}

// rw reads or writes size bytes, at off if explicit, else at the file
// position, in pieces of at most chunk bytes. It returns the bytes moved,
// or −errno if nothing moved.
func (x *rankExec) rw(fd int, write, explicit bool, off, size int64) int64 {
	size = max(size, 0)
	var done int64
	for {
		n := int(min(size-done, int64(x.chunk)))
		var p []byte
		if write {
			p = x.cur.Next(n, x.align)
		} else {
			p = x.readBuf(n)
		}
		var r int
		var en unix.Errno
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
		if en != 0 {
			if en == unix.EINTR {
				continue
			}
			if done > 0 {
				return done
			}
			return -int64(en)
		}
		done += int64(r)
		if r == 0 || done >= size {
			return done
		}
	}
}

// vector replays a vector call: Count buffers (1–1024) of equal length
// summing to Size. Calls larger than the executor's chunk are issued as
// plain calls of chunk bytes.
func (x *rankExec) vector(fd int, e *trace.Event) int64 {
	write := e.Op.Dir() == trace.DirWrite
	explicit := e.Op != trace.OpReadv && e.Op != trace.OpWritev
	size := max(e.Size, 0)
	if size > int64(x.chunk) {
		if e.Offset < 0 {
			explicit = false
		}
		return x.rw(fd, write, explicit, e.Offset, size)
	}
	cnt := int(min(max(e.Count, 1), 1024))
	cnt = max(min(cnt, int(size)), 1)
	var p []byte
	if write {
		p = x.cur.Next(int(size), x.align)
	} else {
		p = x.readBuf(int(size))
	}
	x.iov = x.iov[:0]
	per := int(size) / cnt
	for i := 0; i < cnt; i++ {
		b := p[i*per:]
		n := per
		if i == cnt-1 {
			n = len(b)
		}
		var v unix.Iovec
		if n > 0 {
			v.Base = &b[0]
		}
		v.SetLen(n)
		x.iov = append(x.iov, v)
	}
	iov := uintptr(unsafe.Pointer(&x.iov[0]))
	lo, hi := uintptr(e.Offset), uintptr(uint64(e.Offset)>>(longBits/2)>>(longBits/2))
	var trap uintptr
	var a3, a4, a5 uintptr
	switch e.Op {
	case trace.OpReadv:
		trap = unix.SYS_READV
	case trace.OpWritev:
		trap = unix.SYS_WRITEV
	case trace.OpPreadv:
		trap, a3, a4 = unix.SYS_PREADV, lo, hi
	case trace.OpPwritev:
		trap, a3, a4 = unix.SYS_PWRITEV, lo, hi
	case trace.OpPreadv2:
		trap, a3, a4, a5 = unix.SYS_PREADV2, lo, hi, uintptr(e.Flags)
	case trace.OpPwritev2:
		trap, a3, a4, a5 = unix.SYS_PWRITEV2, lo, hi, uintptr(e.Flags)
	}
	for {
		var r uintptr
		var en unix.Errno
		if x.raw {
			r, _, en = unix.RawSyscall6(trap, uintptr(fd), iov, uintptr(len(x.iov)), a3, a4, a5)
		} else {
			r, _, en = unix.Syscall6(trap, uintptr(fd), iov, uintptr(len(x.iov)), a3, a4, a5)
		}
		runtime.KeepAlive(p)
		runtime.KeepAlive(x.iov)
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
