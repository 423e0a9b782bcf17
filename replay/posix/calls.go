package posix

import (
	"errors"
	"path"
	"strings"

	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/state"
	"golang.org/x/sys/unix"
)

// openFlagBits maps the open flags of a trace (Linux x86-64 values) to
// this machine's.
var openFlagBits = []struct {
	trace uint32
	local int
}{
	{0x40, unix.O_CREAT}, {0x80, unix.O_EXCL}, {0x100, unix.O_NOCTTY}, {0x200, unix.O_TRUNC},
	{0x400, unix.O_APPEND}, {0x800, unix.O_NONBLOCK}, {0x1000, unix.O_DSYNC}, {0x2000, unix.O_ASYNC},
	{0x4000, unix.O_DIRECT}, {0x10000, unix.O_DIRECTORY}, {0x20000, unix.O_NOFOLLOW},
	{0x40000, unix.O_NOATIME}, {0x80000, unix.O_CLOEXEC}, {0x100000, unix.O_SYNC &^ unix.O_DSYNC},
	{0x200000, unix.O_PATH}, {0x400000, unix.O_TMPFILE &^ unix.O_DIRECTORY},
}

// localFlags converts trace open flags to this machine's.
func localFlags(f uint32) int {
	out := int(f & trace.OAccMode)
	for _, b := range openFlagBits {
		if f&b.trace != 0 {
			out |= b.local
		}
	}
	return out
}

// openReal opens rel with the trace's flags, made fit for a replay: a
// FIFO found in the target must not block the open (O_NONBLOCK changes
// nothing for regular files), O_PATH takes only the flags it allows, the
// truncation waits for the checks. It returns the replay's side of the
// description.
func (x *rankExec) openReal(rel string, flags int, mode uint32, trunc bool) realFile {
	if flags&unix.O_PATH != 0 {
		flags &= unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	} else {
		flags |= unix.O_NONBLOCK
		if x.b.opts.Direct && flags&unix.O_DIRECTORY == 0 {
			flags |= unix.O_DIRECT
		}
	}
	fd, created, err := x.openFile(rel, flags, mode)
	if err != nil {
		if _, skip := result(err); skip != replay.NotSkipped {
			return realFile{state: fdSkipped, skip: skip}
		}
		return realFile{state: fdFailed, fd: int32(errno(err))}
	}
	if created {
		// A new, empty regular file of one link: nothing to check or cut.
		return realFile{state: fdOpen, fd: int32(fd), direct: flags&unix.O_DIRECT != 0}
	}
	if skip := checkFile(fd, flags, trunc); skip != replay.NotSkipped {
		unix.Close(fd)
		return realFile{state: fdSkipped, skip: skip}
	}
	if trunc && flags&unix.O_ACCMODE != unix.O_RDONLY {
		t := x.sw.Start()
		err := unix.Ftruncate(fd, 0)
		x.sw.Stop(t)
		if err != nil {
			unix.Close(fd)
			return realFile{state: fdFailed, fd: int32(errno(err))}
		}
	}
	return realFile{state: fdOpen, fd: int32(fd), direct: flags&unix.O_DIRECT != 0}
}

// open replays an open; d is the description the trace's open made (nil
// if it failed there).
func (x *rankExec) open(c *replay.Call, d *state.Desc[realFile]) (int64, replay.Skip) {
	e := c.Ev
	set := func(rf realFile) {
		if d != nil {
			d.Aux = rf
		}
	}
	if c.PathSkip != replay.NotSkipped {
		set(realFile{state: fdSkipped, skip: c.PathSkip})
		return 0, c.PathSkip
	}
	if c.Path == "" {
		set(realFile{state: fdFailed})
		return -int64(unix.ENOENT), replay.NotSkipped
	}
	flags := localFlags(e.Flags)
	if e.Op == trace.OpCreat {
		flags = unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC
	}
	trunc := flags&unix.O_TRUNC != 0
	flags &^= unix.O_TRUNC
	mode := e.Mode & 0o7777
	if mode == 0 {
		mode = 0o644
	}
	rf := x.openReal(c.Path, flags, mode, trunc)
	switch rf.state {
	case fdSkipped:
		set(rf)
		return 0, rf.skip
	case fdFailed:
		set(realFile{state: fdFailed})
		return int64(rf.fd), replay.NotSkipped
	}
	if d == nil {
		// The original open failed or returned no descriptor: nothing will
		// use this one.
		unix.Close(int(rf.fd))
		return int64(rf.fd), replay.NotSkipped
	}
	d.Aux = rf
	return e.Ret, replay.NotSkipped
}

// timed counts a system call of the program's on the stopwatch and
// returns its result: t0 is x.sw.Start() written as the argument before
// the call's (Go evaluates the calls of an argument list left to right,
// so the clock is read before the system call is made).
func (x *rankExec) timed(t0 int64, err error) (int64, replay.Skip) {
	x.sw.Stop(t0)
	return result(err)
}

// checkFile refuses what an open found in the target that the replay
// must not use: devices, FIFOs and sockets, and — when the open may write
// — regular files with other hard links, whose data lives elsewhere too.
func checkFile(fd, flags int, trunc bool) replay.Skip {
	if flags&unix.O_PATH != 0 {
		return replay.NotSkipped
	}
	if looked != nil {
		looked("check")
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return replay.NotSkipped
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if (flags&unix.O_ACCMODE != unix.O_RDONLY || trunc) && st.Nlink > 1 {
			return replay.SkipHardLink
		}
	case unix.S_IFDIR:
	default:
		return replay.SkipNotRegular
	}
	return replay.NotSkipped
}

// close replays a close of descriptor fd, whose description was d: the
// follower released it (closing the replay's descriptor) if it was the
// last one.
func (x *rankExec) close(d *state.Desc[realFile], fd int32) (int64, replay.Skip) {
	if d == nil {
		return 0, replay.SkipUnknownFD
	}
	switch d.Aux.state {
	case fdOpen, fdClosed:
		if x.closeErr != nil {
			return errno(x.closeErr), replay.NotSkipped
		}
		return 0, replay.NotSkipped
	case fdStd:
		return 0, replay.SkipStdStream
	case fdSkipped:
		return 0, replay.SkipSpecialFD
	case fdUnopened:
		if fd >= 0 && fd <= 2 {
			return 0, replay.SkipStdStream
		}
		return 0, replay.SkipUnknownFD
	}
	return -int64(unix.EBADF), replay.NotSkipped
}

// dup replays the dup family and fcntl: the new descriptor shares the
// description, as the follower keeps it; the replay makes no call for it.
func (x *rankExec) dup(c *replay.Call, st state.Step[realFile, mpiFile]) (int64, replay.Skip) {
	e := c.Ev
	if e.Ret < 0 {
		// The original failed; whatever the replay does would be a guess.
		return e.Ret, replay.NotSkipped
	}
	if st.Desc == nil {
		// A dup of a descriptor the trace does not follow (a pipe) onto
		// one it does: the follower closed that one, which is all the
		// replay has to do.
		return e.Ret, replay.NotSkipped
	}
	if _, ret, skip := x.use(st.Desc, c, e.FD); ret < 0 || skip != replay.NotSkipped {
		return ret, skip
	}
	if e.Op == trace.OpFcntl && e.Flags == trace.FSetfl {
		fl := localFlags(uint32(e.Size)) & (unix.O_APPEND | unix.O_NONBLOCK | unix.O_NOATIME | unix.O_ASYNC)
		t := x.sw.Start()
		_, err := unix.FcntlInt(uintptr(st.Desc.Aux.fd), unix.F_SETFL, fl|unix.O_NONBLOCK)
		x.sw.Stop(t)
		if err != nil {
			return errno(err), replay.NotSkipped
		}
	}
	return e.Ret, replay.NotSkipped
}

const (
	atSymlinkNofollow = 0x100
	atRemovedir       = 0x200
	atSymlinkFollow   = 0x400
	atEmptyPath       = 0x1000
)

// meta replays a metadata call on a path.
func (x *rankExec) meta(c *replay.Call, st state.Step[realFile, mpiFile]) (int64, replay.Skip) {
	e := c.Ev
	if c.PathSkip != replay.NotSkipped {
		return 0, c.PathSkip
	}
	if c.Path == "" {
		return -int64(unix.ENOENT), replay.NotSkipped
	}
	r := x.b.root
	switch e.Op {
	case trace.OpStat, trace.OpLstat, trace.OpFstatat, trace.OpStatx, trace.OpAccess:
		nofollow := e.Op == trace.OpLstat || (e.Op == trace.OpFstatat || e.Op == trace.OpStatx) && e.Flags&atSymlinkNofollow != 0
		if nofollow || e.Op != trace.OpAccess && x.b.opts.KeepDirs {
			dfd, base, release, err := x.parent(c.Path)
			if err != nil {
				return result(err)
			}
			var st unix.Stat_t
			t := x.sw.Start()
			err = unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
			x.sw.Stop(t)
			release()
			if nofollow || err != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
				return result(err)
			}
			// A stat that follows a symbolic link: the kernel resolves it
			// beneath the target, below.
		}
		// The program's call resolved the path and looked at the file:
		// here the open of the path and the look are timed.
		t := x.sw.Start()
		fd, err := r.open(c.Path, unix.O_PATH, 0)
		if err != nil {
			return x.timed(t, err)
		}
		defer unix.Close(fd)
		if e.Op == trace.OpAccess && e.Mode&7 != 0 {
			if err := unix.Faccessat2(fd, "", e.Mode&7, unix.AT_EMPTY_PATH); err != nil && err != unix.ENOSYS && err != unix.EINVAL {
				return x.timed(t, err)
			}
			return x.timed(t, nil)
		}
		var st unix.Stat_t
		return x.timed(t, unix.Fstat(fd, &st))
	case trace.OpReadlink, trace.OpReadlinkat:
		dfd, base, release, err := x.parent(c.Path)
		if err != nil {
			return result(err)
		}
		defer release()
		buf := x.readBuf(int(min(max(e.Size, 1), 4096)))
		t := x.sw.Start()
		n, err := unix.Readlinkat(dfd, base, buf)
		x.sw.Stop(t)
		if err != nil {
			return result(err)
		}
		return int64(n), replay.NotSkipped
	case trace.OpUnlink, trace.OpUnlinkat, trace.OpRmdir:
		if c.Path == "." {
			return 0, replay.SkipTargetRoot
		}
		flags := 0
		if e.Op == trace.OpRmdir || e.Op == trace.OpUnlinkat && e.Flags&atRemovedir != 0 {
			flags = unix.AT_REMOVEDIR
		}
		dfd, base, release, err := x.parent(c.Path)
		if err != nil {
			return result(err)
		}
		defer release()
		t := x.sw.Start()
		err = unix.Unlinkat(dfd, base, flags)
		x.sw.Stop(t)
		if flags != 0 {
			r.moved()
		}
		return result(err)
	case trace.OpMkdir, trace.OpMkdirat:
		dfd, base, release, err := x.parent(c.Path)
		if err != nil {
			return result(err)
		}
		defer release()
		mode := e.Mode & 0o7777
		if mode == 0 {
			mode = 0o755
		}
		return x.timed(x.sw.Start(), unix.Mkdirat(dfd, base, mode))
	case trace.OpRename, trace.OpRenameat, trace.OpRenameat2, trace.OpLink, trace.OpLinkat:
		if c.Path == "." || c.Path2 == "." {
			return 0, replay.SkipTargetRoot
		}
		if c.Path2 == "" {
			return -int64(unix.ENOENT), replay.NotSkipped
		}
		d1, b1, rel1, err := x.parent(c.Path)
		if err != nil {
			return result(err)
		}
		defer rel1()
		d2, b2, rel2, err := x.secondParent(c.Path2)
		if err != nil {
			return result(err)
		}
		defer rel2()
		switch e.Op {
		case trace.OpLink, trace.OpLinkat:
			// Never AT_SYMLINK_FOLLOW: a link in the target could lead out.
			return x.timed(x.sw.Start(), unix.Linkat(d1, b1, d2, b2, 0))
		}
		var flags uint
		if e.Op == trace.OpRenameat2 {
			flags = uint(e.Flags) & (unix.RENAME_NOREPLACE | unix.RENAME_EXCHANGE)
		}
		t := x.sw.Start()
		err = unix.Renameat2(d1, b1, d2, b2, flags)
		x.sw.Stop(t)
		r.moved()
		return result(err)
	case trace.OpSymlink, trace.OpSymlinkat:
		if c.Path == "." {
			return 0, replay.SkipTargetRoot
		}
		dfd, base, release, err := x.parent(c.Path)
		if err != nil {
			return result(err)
		}
		defer release()
		target, ok := x.linkTarget(c)
		if !ok {
			x.b.escaped.add(c.Path)
			return 0, replay.SkipEscape
		}
		return x.timed(x.sw.Start(), unix.Symlinkat(target, dfd, base))
	case trace.OpTruncate:
		return x.truncatePath(c.Path, e.Size)
	}
	return 0, replay.SkipUnsupported
}

// linkTarget is the target a replayed symbolic link gets: the trace's,
// where it is relative and stays inside the target directory; an
// absolute one that maps into the target is made relative to the link,
// so that it names the same file there. A target that leads out of the
// target directory (absolute and not mapped, or relative with more ".."
// than the link is deep) is refused (ok false): the replay leaves no link
// out behind it, and never follows one.
func (x *rankExec) linkTarget(c *replay.Call) (string, bool) {
	e := c.Ev
	if c.Paths == nil || e.Path2 == 0 {
		return ".", true
	}
	t := c.Paths.TracePath(e.Path2)
	from := path.Dir(c.Path)
	if !path.IsAbs(t) {
		j := path.Join(from, t)
		return t, j != ".." && !strings.HasPrefix(j, "../")
	}
	rel, skip := c.Paths.MapPath(e.Path2)
	if skip != replay.NotSkipped || rel == "" || path.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	up := strings.Count(from, "/") + 1
	if from == "." {
		up = 0
	}
	if rel == "." {
		if up == 0 {
			return ".", true
		}
		return strings.TrimSuffix(strings.Repeat("../", up), "/"), true
	}
	return strings.Repeat("../", up) + rel, true
}

// truncatePath sets the size of a file named by path, with the same
// checks as an open for writing.
func (x *rankExec) truncatePath(rel string, size int64) (int64, replay.Skip) {
	fd, _, err := x.openFile(rel, unix.O_WRONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return result(err)
	}
	defer unix.Close(fd)
	if skip := checkFile(fd, unix.O_WRONLY, true); skip != replay.NotSkipped {
		return 0, skip
	}
	return x.timed(x.sw.Start(), unix.Ftruncate(fd, max(size, 0)))
}

// mpiFlags converts an MPI amode to open flags.
func mpiFlags(amode uint32) int {
	var f int
	switch {
	case amode&trace.MPIModeRdwr != 0:
		f = unix.O_RDWR
	case amode&trace.MPIModeWronly != 0:
		f = unix.O_WRONLY
	default:
		f = unix.O_RDONLY
	}
	if amode&trace.MPIModeCreate != 0 {
		f |= unix.O_CREAT
	}
	if amode&trace.MPIModeExcl != 0 {
		f |= unix.O_EXCL
	}
	return f
}

const mpiModeDeleteOnClose = 16

// closeHandle closes the replay's descriptor of an MPI file handle.
func (x *rankExec) closeHandle(h *state.Handle[mpiFile]) error {
	f := &h.Aux
	if !f.open {
		return nil
	}
	f.open = false
	err := unix.Close(f.fd)
	if f.deleteOnClose {
		if dfd, base, release, derr := x.parent(f.rel); derr == nil {
			unix.Unlinkat(dfd, base, 0) // another rank may have been first
			release()
		}
	}
	return err
}

// mpiio replays an MPI-IO call on the rank's own descriptor of the file;
// h is its handle as the follower keeps it (its view, its pointer).
func (x *rankExec) mpiio(c *replay.Call, h *state.Handle[mpiFile]) (int64, replay.Skip) {
	e := c.Ev
	switch e.Op {
	case trace.OpMPIFileOpen:
		if c.PathSkip != replay.NotSkipped {
			return 0, c.PathSkip
		}
		flags := mpiFlags(e.Flags) | unix.O_NONBLOCK
		if x.b.opts.Direct {
			flags |= unix.O_DIRECT
		}
		fd, created, err := x.openFile(c.Path, flags, 0o644)
		if err != nil {
			return result(err)
		}
		if !created {
			if skip := checkFile(fd, flags, false); skip != replay.NotSkipped {
				unix.Close(fd)
				return 0, skip
			}
		}
		if h == nil {
			unix.Close(fd) // the trace's open failed
			return 0, replay.NotSkipped
		}
		h.Aux = mpiFile{open: true, fd: fd, rel: c.Path, deleteOnClose: e.Flags&mpiModeDeleteOnClose != 0}
		return 0, replay.NotSkipped
	case trace.OpMPIFileDelete:
		if c.PathSkip != replay.NotSkipped {
			return 0, c.PathSkip
		}
		if c.Path == "." {
			return 0, replay.SkipTargetRoot
		}
		dfd, base, release, err := x.parent(c.Path)
		if err != nil {
			return result(err)
		}
		defer release()
		return x.timed(x.sw.Start(), unix.Unlinkat(dfd, base, 0))
	case trace.OpMPIFileClose:
		if h == nil {
			return 0, replay.SkipUnknownFD
		}
		return result(x.closeErr)
	}
	if h == nil || !h.Aux.open {
		return 0, replay.SkipUnknownFD
	}
	f := &h.Aux
	switch e.Op {
	case trace.OpMPIFileSetView, trace.OpMPIFileSeek, trace.OpMPIFileSeekShared:
		// The follower keeps views and pointers; positions are recorded
		// with each data call.
		return 0, replay.NotSkipped
	case trace.OpMPIFileSync:
		return x.timed(x.sw.Start(), unix.Fsync(f.fd))
	case trace.OpMPIFileSetSize:
		return x.timed(x.sw.Start(), unix.Ftruncate(f.fd, max(e.Size, 0)))
	case trace.OpMPIFilePreallocate:
		t := x.sw.Start()
		err := unix.Fallocate(f.fd, 0, 0, max(e.Size, 0))
		x.sw.Stop(t)
		if err != nil && err != unix.EOPNOTSUPP {
			return errno(err), replay.NotSkipped
		}
		return 0, replay.NotSkipped
	}
	if e.Op.Dir() == trace.DirNone {
		return 0, replay.SkipUnsupported
	}
	return x.viewRW(f.fd, h.View, e.Op.Dir() == trace.DirWrite, max(e.Offset, 0), max(e.Size, 0)), replay.NotSkipped
}

// viewRW reads or writes size bytes at offset off of the view: with a
// block length and a larger stride, the view's bytes are blocks of
// blocklen bytes every stride bytes from the displacement.
func (x *rankExec) viewRW(fd int, v state.View, write bool, off, size int64) int64 {
	var done int64
	var failed int64
	if size == 0 {
		return x.rw(fd, write, true, v.FileOffset(off), 0, x.align)
	}
	v.Pieces(off, size, func(foff, n int64) error {
		r := x.rw(fd, write, true, foff, n, x.align)
		if r < 0 {
			failed = r
			return errStop
		}
		done += r
		if r < n {
			return errStop
		}
		return nil
	})
	if done == 0 && failed < 0 {
		return failed
	}
	return done
}

var errStop = errors.New("stop")
