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
// every path inside (see target.Mapper). Writes of files with other hard
// links, and opens of devices, FIFOs and sockets found in the target, are
// skipped.
package posix

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/state"
	"github.com/iotrace/iotrace/trace/target"
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
	// KeepDirs lets each rank keep the directories of its latest calls on
	// paths open for its next ones (dircache.go). Only for a replay whose
	// ranks are the only ones to rename or remove directories in the
	// target: not for one process of several (--mpi), whose cache the
	// others' renames would not reach.
	KeepDirs bool
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
	opts      Options
	conflicts []string
	root      *root
	pat       *replay.Pattern
	names     byName  // for Name
	escaped   escaped // the trace's symbolic links out, not made
}

// New opens the target directory.
func New(opts Options) (*Backend, error) {
	r, err := openRoot(opts.Target, opts.Walk)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", opts.Target, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(r.fd, &st); err != nil {
		r.close()
		return nil, fmt.Errorf("target %s: %w", opts.Target, err)
	}
	if err := checkTargetStat(opts.Target, &st); err != nil {
		r.close()
		return nil, err
	}
	return &Backend{opts: opts, root: r}, nil
}

// CheckTarget refuses a target directory that is, once its symbolic
// links are followed, the root directory (a link to /, /proc/self/root,
// a bind mount of /) or a directory of /proc, /sys or /dev (but
// /dev/shm, a tmpfs of ordinary files): the name is
// not what the replay works in, the directory it resolves to is. A
// target that does not exist yet is checked by its name only.
func CheckTarget(dir string) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return checkTargetName(dir, dir)
		}
		return fmt.Errorf("--target %s: %w", dir, err)
	}
	if err := checkTargetName(dir, real); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Stat(real, &st); err != nil {
		return fmt.Errorf("--target %s: %w", dir, err)
	}
	return checkTargetStat(dir, &st)
}

func checkTargetName(dir, real string) error {
	real = filepath.Clean(real)
	if real == "/" {
		return fmt.Errorf("--target %s: is the root directory; refusing to replay into it", dir)
	}
	if real == "/dev/shm" || strings.HasPrefix(real, "/dev/shm/") {
		return nil // a tmpfs of ordinary files, as the path rules say
	}
	for _, sys := range []string{"/proc", "/sys", "/dev"} {
		if real == sys || strings.HasPrefix(real, sys+"/") {
			return fmt.Errorf("--target %s: is in %s (%s); refusing to replay into it", dir, sys, real)
		}
	}
	return nil
}

// checkTargetStat refuses a target that is the root directory, whatever
// its name (device and inode).
func checkTargetStat(dir string, st *unix.Stat_t) error {
	var root unix.Stat_t
	if unix.Stat("/", &root) == nil && st.Dev == root.Dev && st.Ino == root.Ino {
		return fmt.Errorf("--target %s: is the root directory; refusing to replay into it", dir)
	}
	return nil
}

// Options returns the options the backend was made with.
func (b *Backend) Options() Options { return b.opts }

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
//
// What the target already holds in the way (a symbolic link or a file
// where the trace found a directory, a device, a file with other hard
// links) is left alone: it is a conflict, listed by Conflicts, and the
// calls on it fail or are skipped in the replay, as the safety rules say.
// Other errors stop the prepare phase.
func (b *Backend) Prepare(ctx context.Context, p *target.Layout) error {
	for _, d := range p.Dirs {
		if err := b.mkdirAll(d); err != nil {
			if b.conflict(d, err) {
				continue
			}
			return fmt.Errorf("prepare directory %s: %w", d, err)
		}
	}
	pat := b.pattern()
	cur := pat.Cursor(1 << 40)
	for _, f := range p.Files {
		if err := b.prepareFile(ctx, f, &cur); err != nil {
			if b.conflict(f.Path, err) {
				continue
			}
			return fmt.Errorf("prepare %s: %w", f.Path, err)
		}
	}
	return nil
}

// errInTheWay is what the target holds where the plan needs something
// else.
var errInTheWay = errors.New("in the way")

// conflict notes err on rel if it is a conflict with what the target
// holds, and reports whether it was.
func (b *Backend) conflict(rel string, err error) bool {
	if !errors.Is(err, errInTheWay) && !errors.Is(err, errEscape) && !errors.Is(err, errSpecial) && !errors.Is(err, unix.ENOTDIR) &&
		!errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.ELOOP) {
		return false
	}
	b.conflicts = append(b.conflicts, fmt.Sprintf("%s: %v", rel, err))
	return true
}

// Conflicts lists what the prepare phase found in the target in the way
// of what the trace needs, and left as it was.
func (b *Backend) Conflicts() []string { return b.conflicts }

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
		return fmt.Errorf("exists and is not a directory: %w", errInTheWay)
	}
	return err
}

func (b *Backend) prepareFile(ctx context.Context, f target.PrepFile, cur *replay.Cursor) error {
	fd, _, err := b.root.openFile(f.Path, unix.O_WRONLY|unix.O_CREAT|unix.O_NONBLOCK, 0o644, nil)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("exists and is not a regular file: %w", errInTheWay)
	}
	if st.Nlink > 1 {
		return fmt.Errorf("has other hard links; not writing it: %w", errInTheWay)
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
	}
	if b.opts.Direct {
		x.align = replay.DirectAlign
	}
	if b.opts.FixedData {
		x.cur = b.pattern().FixedCursor()
	}
	x.st = state.New[realFile, mpiFile](nil)
	x.st.OnRelease = func(d *state.Desc[realFile]) {
		if d.Aux.state == fdOpen {
			t := x.sw.Start()
			x.closeErr = unix.Close(int(d.Aux.fd))
			x.sw.Stop(t)
			d.Aux.state = fdClosed
		}
	}
	x.st.OnHandleClose = func(h *state.Handle[mpiFile]) { x.closeErr = x.closeHandle(h) }
	return x, nil
}

// states of the replay's side of an open file description
const (
	fdUnopened uint8 = iota // learnt from a call: the replay opens it at its first use
	fdStd                   // a standard stream the trace inherited without naming a file
	fdOpen                  // open: fd is the replay's descriptor
	fdSkipped               // an open the replay skipped (skip says why)
	fdFailed                // an open that failed in the replay
	fdClosed                // its last descriptor closed
)

// realFile is the replay's side of an open file description of the
// trace: every trace descriptor that shares the description (dup, fork)
// uses its one descriptor, so positions and O_APPEND are shared as in the
// program.
type realFile struct {
	state  uint8
	skip   replay.Skip
	direct bool // opened with O_DIRECT: buffers and requests are aligned
	fd     int32
}

// mpiFile is an MPI file handle of one rank.
type mpiFile struct {
	open          bool
	fd            int
	rel           string
	deleteOnClose bool
}

// rankExec is one rank's executor. Its open files are the trace's, as
// trace/state follows them: one descriptor table per traced process, open
// file descriptions shared by dup and fork.
type rankExec struct {
	b        *Backend
	rank     uint32
	st       *state.Follower[realFile, mpiFile]
	closeErr error // of the close a release made in the last Apply
	cur      replay.Cursor
	rbuf     []byte
	rtouched int // bytes of rbuf a read has been given (readBuf touched their pages)
	rchunk   int // size of the read buffer at most
	raw      bool
	align    int
	iov      []unix.Iovec
	maps     []liveMap // the mappings of the trace's mmaps (mmap.go)
	dirs     dirCache  // the directories of its latest paths (dircache.go)
	// sw times the system calls of the call being made (Call.Sys): the
	// calls that do the program's work, never the replay's own looks,
	// checks and directory opens.
	sw *replay.SysTime
	// held is the description DoRun followed heldEv to and stopped
	// before (not open): Do makes that call without following it again.
	held   *state.Desc[realFile]
	heldEv *trace.Event
}

// TimesSys implements replay.SysTimer.
func (x *rankExec) TimesSys() bool { return true }

// use returns the replay's descriptor of the description d (nil: the
// trace never had it open), opening it on its path if the trace learnt
// it from a call, or what to do instead.
func (x *rankExec) use(d *state.Desc[realFile], c *replay.Call, fd int32) (int, int64, replay.Skip) {
	if d == nil {
		return -1, 0, replay.SkipUnknownFD
	}
	if d.Aux.state == fdUnopened {
		x.openLearnt(d, c, fd)
	}
	switch d.Aux.state {
	case fdOpen:
		return int(d.Aux.fd), 0, replay.NotSkipped
	case fdStd:
		return -1, 0, replay.SkipStdStream
	case fdSkipped:
		if d.Aux.skip == replay.SkipSpecialPath {
			return -1, 0, replay.SkipSpecialFD
		}
		return -1, 0, d.Aux.skip
	}
	return -1, -int64(unix.EBADF), replay.NotSkipped
}

// openLearnt opens a description the trace never showed opened (an
// inherited descriptor, or one opened by a call the capture left out) on
// the path its calls name, at the position the call used.
func (x *rankExec) openLearnt(d *state.Desc[realFile], c *replay.Call, fd int32) {
	if d.Path == 0 || c.Paths == nil {
		if fd >= 0 && fd <= 2 {
			d.Aux = realFile{state: fdStd}
		} else {
			d.Aux = realFile{state: fdSkipped, skip: replay.SkipUnknownFD}
		}
		return
	}
	rel, skip := c.Paths.MapPath(d.Path)
	if skip != replay.NotSkipped {
		if skip == replay.SkipSpecialPath {
			skip = replay.SkipSpecialFD
		}
		d.Aux = realFile{state: fdSkipped, skip: skip}
		return
	}
	flags := unix.O_RDWR
	if d.Flags != 0 || d.Pos >= 0 {
		// An inherited descriptor whose flags the capture recorded.
		flags = localFlags(d.Flags &^ (trace.OCreat | trace.OTrunc | trace.OExcl))
	}
	pos := d.Pos
	if e := c.Ev; pos < 0 && e.FD == fd && e.Op.Info().Addr == trace.AddrIndividual {
		pos = e.Offset
	}
	d.Aux = x.openReal(rel, flags, 0o644, false)
	if d.Aux.state == fdFailed && flags&unix.O_ACCMODE == unix.O_RDWR {
		d.Aux = x.openReal(rel, flags&^unix.O_ACCMODE|unix.O_RDONLY, 0o644, false) // a directory, or read-only
	}
	if d.Aux.state == fdOpen && pos > 0 {
		unix.Seek(int(d.Aux.fd), pos, 0)
	}
}

// Close implements replay.Executor: it closes what the rank left open.
func (x *rankExec) Close() error {
	x.unmapAll()
	x.st.CloseAll()
	x.dirs.drop(x.b.root)
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
	if errors.Is(err, errSpecial) {
		return 0, replay.SkipNotRegular
	}
	return errno(err), replay.NotSkipped
}

// opInfos is the op table, for the hot path (trace.Op.Info copies).
var opInfos = func() (t [1024]trace.OpInfo) {
	// The known ops only (as trace/state's table): an unknown op's entry
	// is the zero one, of class unknown.
	for _, op := range trace.Ops() {
		if int(op) < len(t) {
			t[op] = op.Info()
		}
	}
	return t
}()

// dataOps holds, for the hot path of Do, how each op reads or writes
// (opInfos' Dir and Addr, in two bytes instead of a whole OpInfo).
var dataOps = func() (t [1024]dataOp) {
	for op := range t {
		in := &opInfos[op]
		t[op] = dataOp{write: in.Dir == trace.DirWrite, explicit: in.Addr == trace.AddrExplicit}
	}
	return t
}()

type dataOp struct{ write, explicit bool }

// Do implements replay.Executor.
func (x *rankExec) Do(c *replay.Call) (int64, replay.Skip) {
	e := c.Ev
	x.sw = c.Sys
	d := x.held
	if d == nil || x.heldEv != e {
		d = x.st.Data(e)
	}
	x.held, x.heldEv = nil, nil
	if d != nil && d.Aux.state == fdOpen {
		// The hot path: a read or write on a descriptor of the trace that
		// the replay has open.
		op := dataOps[e.Op]
		align := x.align
		if d.Aux.direct {
			align = replay.DirectAlign
		}
		if op.write && x.sw == nil && x.raw && uint64(e.Size) <= replay.PatternChunk {
			trap := uintptr(unix.SYS_WRITE)
			if op.explicit {
				trap = unix.SYS_PWRITE64
			}
			ret, _ := x.write1(uintptr(d.Aux.fd), trap, e.Offset, int(e.Size), align)
			return ret, replay.NotSkipped
		}
		return x.rw(int(d.Aux.fd), op.write, op.explicit, e.Offset, e.Size, align), replay.NotSkipped
	} else if d != nil {
		st := state.Step[realFile, mpiFile]{Desc: d, Path: d.Path}
		return x.onFD(c, &st, &opInfos[e.Op])
	}
	x.closeErr = nil
	st := x.st.Apply(e)
	if e.Op >= trace.Op(len(opInfos)) {
		return 0, replay.SkipUnsupported
	}
	info := &opInfos[e.Op]
	if c.Path != "" && (info.Class == trace.ClassMeta || info.FD == trace.FDOpen) {
		if skip := x.b.escaped.check(e.Op, info, c.Path, c.Path2); skip != replay.NotSkipped {
			return 0, skip
		}
	}
	switch info.Class {
	case trace.ClassMeta:
		if info.FD == trace.FDOn || info.FD == trace.FDAt && c.Path == "" && st.Desc != nil {
			return x.onFD(c, &st, info)
		}
		return x.meta(c, st)
	case trace.ClassMPIIO:
		return x.mpiio(c, st.Handle)
	case trace.ClassProcess:
		if info.Proc == trace.ProcInherit && st.New != nil {
			// The program found it open: so does the replay.
			x.use(st.New, c, e.FD)
		}
		return 0, replay.NotSkipped
	}
	switch info.FD {
	case trace.FDOpen:
		return x.open(c, st.New)
	case trace.FDClose:
		return x.close(st.Desc, e.FD)
	case trace.FDCloseRange:
		return 0, replay.NotSkipped // the follower released what it closed
	case trace.FDDup:
		return x.dup(c, st)
	case trace.FDOn:
		return x.onFD(c, &st, info)
	}
	switch e.Op {
	case trace.OpSync:
		t := x.sw.Start()
		unix.Sync()
		x.sw.Stop(t)
		return 0, replay.NotSkipped
	case trace.OpMunmap:
		return x.munmap(e)
	case trace.OpMsync:
		return x.msync(e)
	case trace.OpPagein:
		// The program's wait for mapped pages: the replay read them at
		// the mapping's mmap (touch), where their time is.
		return 0, replay.NotSkipped
	}
	return 0, replay.SkipUnsupported
}

// DoRun implements replay.RunExecutor: Do's hot path, in a loop. A call
// on the same thread and descriptor with the same op as the one before,
// which Data would follow to the same description changing nothing
// (Follower.Repeats), is not followed again.
func (x *rankExec) DoRun(r *replay.Run) {
	x.sw = nil
	evs, now := r.Evs, r.Start
	var moved int64
	var d *state.Desc[realFile]
	var prev *trace.Event // the call before, if Data may be skipped after it
	// What Do's hot path works out from the op and the description.
	var (
		op    dataOp
		align int
		fd    uintptr
		trap  uintptr // write1's system call; 0: none (rw)
	)
	r.Fail = 0
	i := 0
	for ; i < len(evs); i++ {
		e := &evs[i]
		if r.Stop.Load() || e.Flags&trace.InMPIIO != 0 {
			break
		}
		if prev == nil || e.Op != prev.Op || e.FD != prev.FD || e.Thread != prev.Thread {
			d, prev = x.st.Data(e), nil
			if d == nil || d.Aux.state != fdOpen {
				if d != nil {
					x.held, x.heldEv = d, e // followed already: Do makes it
				}
				break
			}
			if x.st.Repeats(e.Op) {
				prev = e
			}
			op, align, fd, trap = dataOps[e.Op], x.align, uintptr(d.Aux.fd), 0
			if d.Aux.direct {
				align = replay.DirectAlign
			}
			if op.write && x.raw {
				trap = unix.SYS_WRITE
				if op.explicit {
					trap = unix.SYS_PWRITE64
				}
			}
		} else {
			prev = e
		}
		var ret, end int64
		if trap != 0 && uint64(e.Size) <= replay.PatternChunk {
			// Its system call returns the counter at its end, which
			// the clock converts (Clock.At).
			var tsc int64
			ret, tsc = x.write1(fd, trap, e.Offset, int(e.Size), align)
			var ok bool
			if end, ok = r.Clock.At(tsc); !ok {
				end = r.Clock.Now()
			}
		} else {
			ret = x.rw(int(fd), op.write, op.explicit, e.Offset, e.Size, align)
			end = r.Clock.Now()
		}
		e.Start, e.Dur = now, end-now
		now = end
		if ret < 0 {
			r.Fail = ret
			i++
			break
		}
		e.Ret = ret
		moved += ret
	}
	r.N, r.End, r.Moved = i, now, moved
}

// linkFD gives the file open on the replay's descriptor fd the name
// c.Path2, inside the target. The program's way, a link of
// /proc/self/fd/N that follows it, needs no privilege (linkat with
// AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH): the replay's own descriptor,
// on a file it opened inside the target.
func (x *rankExec) linkFD(c *replay.Call, fd int) (int64, replay.Skip) {
	if c.Path2 == "." {
		return 0, replay.SkipTargetRoot
	}
	if c.Path2 == "" {
		return -int64(unix.ENOENT), replay.NotSkipped
	}
	d2, b2, rel2, err := x.secondParent(c.Path2)
	if err != nil {
		return result(err)
	}
	defer rel2()
	t := x.sw.Start()
	err = unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), d2, b2, unix.AT_SYMLINK_FOLLOW)
	if err == unix.ENOENT {
		if _, serr := os.Stat("/proc/self/fd"); serr != nil {
			err = unix.Linkat(fd, "", d2, b2, unix.AT_EMPTY_PATH) // no /proc
		}
	}
	return x.timed(t, err)
}

// onFD replays a call on a descriptor.
func (x *rankExec) onFD(c *replay.Call, st *state.Step[realFile, mpiFile], info *trace.OpInfo) (int64, replay.Skip) {
	e := c.Ev
	fd, ret, skip := x.use(st.Desc, c, e.FD)
	if fd < 0 {
		return ret, skip
	}
	align := x.align
	if st.Desc.Aux.direct {
		align = replay.DirectAlign
	}
	switch info.Dir {
	case trace.DirRead, trace.DirWrite:
		if info.Vector {
			return x.vector(fd, e, align), replay.NotSkipped
		}
		return x.rw(fd, info.Dir == trace.DirWrite, info.Addr == trace.AddrExplicit, e.Offset, e.Size, align), replay.NotSkipped
	case trace.DirCopy:
		return x.copy(c, st, fd)
	}
	var err error
	t := x.sw.Start()
	switch e.Op {
	case trace.OpLseek, trace.OpFseek:
		off, err := unix.Seek(fd, e.Offset, int(e.Whence))
		x.sw.Stop(t)
		if err != nil {
			return errno(err), replay.NotSkipped
		}
		if e.Op == trace.OpFseek {
			return 0, replay.NotSkipped
		}
		return off, replay.NotSkipped
	case trace.OpFsync:
		err = unix.Fsync(fd)
	case trace.OpFdatasync:
		err = unix.Fdatasync(fd)
	case trace.OpSyncfs:
		err = unix.Syncfs(fd)
	case trace.OpFtruncate:
		err = unix.Ftruncate(fd, max(e.Size, 0))
	case trace.OpFallocate:
		err = unix.Fallocate(fd, e.Flags, e.Offset, e.Size)
	case trace.OpFadvise:
		err = unix.Fadvise(fd, e.Offset, e.Size, int(e.Flags))
	case trace.OpMmap:
		return x.mmap(fd, st.Path, e)
	case trace.OpReadahead:
		_, _, en := unix.Syscall(unix.SYS_READAHEAD, uintptr(fd), uintptr(e.Offset), uintptr(max(e.Size, 0)))
		if en != 0 {
			err = en
		}
	case trace.OpFstat, trace.OpFstatat, trace.OpStatx:
		var s unix.Stat_t
		err = unix.Fstat(fd, &s)
	case trace.OpAccess:
		// faccessat2(fd, "", mode, AT_EMPTY_PATH): the file open on fd.
		if err = unix.Faccessat2(fd, "", e.Mode&7, unix.AT_EMPTY_PATH); err == unix.ENOSYS || err == unix.EINVAL {
			var s unix.Stat_t
			err = unix.Fstat(fd, &s) // a kernel before 5.8: the look alone
		}
	case trace.OpLink, trace.OpLinkat:
		// linkat(fd, "", …, AT_EMPTY_PATH), or of /proc/self/fd/N with
		// AT_SYMLINK_FOLLOW: the file open on fd gets a name (a file
		// made with O_TMPFILE, its first).
		x.sw.Stop(t)
		return x.linkFD(c, fd)
	case trace.OpReadlinkat:
		// readlinkat(fd, "", …): the symbolic link open on fd (O_PATH).
		buf := x.readBuf(int(min(max(e.Size, 1), 4096)))
		n, err := unix.Readlinkat(fd, "", buf)
		x.sw.Stop(t)
		if err != nil {
			return errno(err), replay.NotSkipped
		}
		return int64(n), replay.NotSkipped
	case trace.OpGetdents:
		buf := x.readBuf(int(min(max(e.Size, 64), 1<<20, int64(x.rchunk))))
		n, err := unix.Getdents(fd, buf)
		x.sw.Stop(t)
		if err != nil {
			return errno(err), replay.NotSkipped
		}
		return int64(n), replay.NotSkipped
	case trace.OpFflush:
		// fflush moves data from a stdio buffer with a write the trace
		// holds on its own: nothing to do here.
		return 0, replay.NotSkipped
	default:
		return 0, replay.SkipUnsupported
	}
	x.sw.Stop(t)
	if err != nil {
		return errno(err), replay.NotSkipped
	}
	return 0, replay.NotSkipped
}

// copy replays copy_file_range, sendfile and splice. A splice has a pipe
// on one side, which the trace does not hold: its file side is replayed
// as the read or write it was.
func (x *rankExec) copy(c *replay.Call, st *state.Step[realFile, mpiFile], in int) (int64, replay.Skip) {
	e := c.Ev
	out, ret, skip := x.use(st.Desc2, c, e.FD2)
	size := max(e.Size, 0)
	switch {
	case out < 0 && e.Op == trace.OpSplice && skip != replay.NotSkipped:
		return x.rw(in, false, e.Flags&trace.CopyInAt != 0, e.Offset, min(size, max(e.Ret, 0)), 1), replay.NotSkipped
	case out < 0:
		return ret, skip
	}
	var offIn, offOut *int64
	if e.Flags&trace.CopyInAt != 0 {
		o := e.Offset
		offIn = &o
	}
	if e.Flags&trace.CopyOutAt != 0 {
		o := e.Offset2
		offOut = &o
	}
	var n int
	var err error
	t := x.sw.Start()
	defer x.sw.Stop(t)
	switch e.Op {
	case trace.OpCopyFileRange:
		n, err = unix.CopyFileRange(in, offIn, out, offOut, int(min(size, 1<<30)), 0)
	case trace.OpSendfile:
		n, err = unix.Sendfile(out, in, offIn, int(min(size, 1<<30)))
	default:
		n, err = unix.CopyFileRange(in, offIn, out, offOut, int(min(size, 1<<30)), 0)
	}
	if err != nil {
		return errno(err), replay.NotSkipped
	}
	return int64(n), replay.NotSkipped
}

// sys issues a read or write system call, raw when the executor may.
func (x *rankExec) sys(trap uintptr, fd int, p []byte, a3, a4, a5 uintptr) (int, unix.Errno) {
	ptr := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	var r uintptr
	var en unix.Errno
	t := x.sw.Start()
	if x.raw {
		var e uintptr
		r, e = rawSyscall(trap, uintptr(fd), ptr, uintptr(len(p)), a3, a4, a5)
		en = unix.Errno(e)
	} else {
		r, _, en = unix.Syscall6(trap, uintptr(fd), ptr, uintptr(len(p)), a3, a4, a5)
	}
	x.sw.Stop(t)
	runtime.KeepAlive(p)
	return int(r), en
}

// readBuf returns a buffer of n bytes (n ≤ rchunk) to read into. The
// pages a read will copy into are touched here first, once: fresh memory
// from the system faults a page at a time as a read first copies into
// it, which the call would be timed with (a rank's first 256 KiB read on
// tmpfs: 64 faults more than the program's, whose buffer its writes had
// touched). Only as far as the reads have reached (rtouched): a replay of
// many ranks with small reads keeps its memory small.
func (x *rankExec) readBuf(n int) []byte {
	if cap(x.rbuf) < n {
		size := min(max(n, 64<<10), x.rchunk)
		raw := make([]byte, size+replay.DirectAlign)
		off := 0
		if r := int(uintptr(unsafe.Pointer(&raw[0])) % replay.DirectAlign); r != 0 {
			off = replay.DirectAlign - r
		}
		x.rbuf = raw[off : off+size : off+size]
		x.rtouched = 0
	}
	if n > x.rtouched {
		b := x.rbuf[:n]
		for i := x.rtouched &^ (int(pageSize) - 1); i < n; i += int(pageSize) {
			b[i] = 0
		}
		x.rtouched = n
	}
	return x.rbuf[:n]
}

// write1 is rw for the calls most replays are made of, in fewer
// instructions: a write of size bytes (0 to PatternChunk: one slice of
// the pattern), untimed (no Call.Sys) and raw, through the system call
// trap (SYS_WRITE or SYS_PWRITE64). It returns the result and the
// time-stamp counter read as the call returned (DoRun's clock reading:
// Clock.At).
func (x *rankExec) write1(fd, trap uintptr, off int64, size, align int) (ret, tsc int64) {
	p := x.cur.Next(size, align)
	for {
		r, en, t := rawSyscallTSC(trap, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)), uintptr(off), 0, 0)
		switch {
		case en == 0:
			return int64(r), t
		case en != uintptr(unix.EINTR):
			return -int64(en), t
		}
	}
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
func (x *rankExec) rw(fd int, write, explicit bool, off, size int64, align int) int64 {
	size = max(size, 0)
	piece := int64(replay.PatternChunk)
	if !write {
		piece = int64(x.rchunk)
	}
	if size <= piece {
		// One buffer: what most calls are.
		var p []byte
		var trap uintptr
		switch {
		case write:
			p, trap = x.cur.Next(int(size), align), unix.SYS_WRITE
			if explicit {
				trap = unix.SYS_PWRITE64
			}
		default:
			p, trap = x.readBuf(int(size)), unix.SYS_READ
			if explicit {
				trap = unix.SYS_PREAD64
			}
		}
		for {
			var r int
			var en unix.Errno
			if x.sw == nil && x.raw {
				// Untimed and raw (a rank with a processor of its own):
				// the system call itself.
				var e uintptr
				var ur uintptr
				ur, e = rawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)), uintptr(off), 0, 0)
				r, en = int(ur), unix.Errno(e)
			} else {
				r, en = x.sys(trap, fd, p, uintptr(off), 0, 0)
			}
			switch en {
			case 0:
				return int64(r)
			case unix.EINTR:
				continue
			}
			return -int64(en)
		}
	}
	var done int64
	for {
		n := min(size-done, piece*maxIov)
		x.iov = x.iov[:0]
		for left := n; left > 0; left -= piece {
			k := int(min(left, piece))
			if write {
				x.addIov(x.cur.Next(k, align))
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
		r, en := x.sysv(trap, fd, a3, a4, 0)
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
	t := x.sw.Start()
	if x.raw {
		var e uintptr
		r, e = rawSyscall(trap, uintptr(fd), iov, uintptr(len(x.iov)), a3, a4, a5)
		en = unix.Errno(e)
	} else {
		r, _, en = unix.Syscall6(trap, uintptr(fd), iov, uintptr(len(x.iov)), a3, a4, a5)
	}
	x.sw.Stop(t)
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
func (x *rankExec) vector(fd int, e *trace.Event, align int) int64 {
	write := e.Op.Dir() == trace.DirWrite
	explicit := e.Op != trace.OpReadv && e.Op != trace.OpWritev && e.Offset >= 0 && e.Flags&trace.AtPosition == 0
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
		return x.rw(fd, write, explicit, e.Offset, size, align)
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
			x.addIov(x.cur.Next(int(n), align))
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
	case trace.OpPreadv2, trace.OpPwritev2:
		trap, a3, a4, a5 = unix.SYS_PREADV2, posLo(e.Offset), posHi(e.Offset), uintptr(e.Flags&^trace.AtPosition)
		if e.Op == trace.OpPwritev2 {
			trap = unix.SYS_PWRITEV2
		}
		if e.Flags&trace.AtPosition != 0 {
			a3, a4 = posLo(-1), posHi(-1) // at the position, as the program did
		}
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
