package posix

import (
	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/trace"
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

func (x *rankExec) open(c *replay.Call) (int64, replay.Skip) {
	e := c.Ev
	tfd := int32(-1)
	if e.Ret >= 0 && e.Ret < maxFD {
		tfd = int32(e.Ret)
	}
	mark := func(st fdEntry) {
		if f := x.fd(tfd); f != nil {
			if f.state == fdOpen {
				unix.Close(int(f.real))
			}
			*f = st
		}
	}
	if c.PathSkip != replay.NotSkipped {
		mark(fdEntry{state: fdSkipped, skip: c.PathSkip})
		return 0, c.PathSkip
	}
	if c.Path == "" {
		mark(fdEntry{state: fdFailed})
		return -int64(unix.ENOENT), replay.NotSkipped
	}
	flags := localFlags(e.Flags)
	if e.Op == trace.OpCreat {
		flags = unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC
	}
	trunc := flags&unix.O_TRUNC != 0
	flags &^= unix.O_TRUNC
	// O_NONBLOCK keeps a FIFO found in the target from blocking the open;
	// it changes nothing for regular files.
	flags |= unix.O_NONBLOCK
	if x.b.opts.Direct && flags&(unix.O_DIRECTORY|unix.O_PATH) == 0 {
		flags |= unix.O_DIRECT
	}
	mode := e.Mode & 0o7777
	if mode == 0 {
		mode = 0o644
	}
	fd, err := x.b.root.open(c.Path, flags, mode)
	if err != nil {
		ret, skip := result(err)
		if skip != replay.NotSkipped {
			mark(fdEntry{state: fdSkipped, skip: skip})
		} else {
			mark(fdEntry{state: fdFailed})
		}
		return ret, skip
	}
	if skip := checkFile(fd, flags, trunc); skip != replay.NotSkipped {
		unix.Close(fd)
		mark(fdEntry{state: fdSkipped, skip: skip})
		return 0, skip
	}
	if trunc && flags&unix.O_ACCMODE != unix.O_RDONLY {
		if err := unix.Ftruncate(fd, 0); err != nil {
			unix.Close(fd)
			mark(fdEntry{state: fdFailed})
			return errno(err), replay.NotSkipped
		}
	}
	if tfd < 0 {
		// The original open failed or returned no descriptor: nothing will
		// use this one.
		unix.Close(fd)
		return int64(fd), replay.NotSkipped
	}
	mark(fdEntry{state: fdOpen, real: int32(fd)})
	return int64(tfd), replay.NotSkipped
}

// checkFile refuses what an open found in the target that the replay
// must not use: devices, FIFOs and sockets, and — when the open may write
// — regular files with other hard links, whose data lives elsewhere too.
func checkFile(fd, flags int, trunc bool) replay.Skip {
	if flags&unix.O_PATH != 0 {
		return replay.NotSkipped
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

func (x *rankExec) close(tfd int32) (int64, replay.Skip) {
	f := x.fd(tfd)
	if f == nil {
		return 0, replay.SkipUnknownFD
	}
	st := *f
	*f = fdEntry{}
	switch st.state {
	case fdOpen:
		if err := unix.Close(int(st.real)); err != nil {
			return errno(err), replay.NotSkipped
		}
		return 0, replay.NotSkipped
	case fdStd:
		return 0, replay.SkipStdStream
	case fdSkipped:
		return 0, replay.SkipSpecialFD
	case fdFailed:
		return -int64(unix.EBADF), replay.NotSkipped
	}
	return 0, replay.SkipUnknownFD
}

func (x *rankExec) dup(e *trace.Event) (int64, replay.Skip) {
	if e.Ret < 0 {
		// The original failed; whatever the replay does would be a guess.
		return e.Ret, replay.NotSkipped
	}
	src := x.fd(e.FD)
	dst := x.fd(int32(min(e.Ret, maxFD)))
	if src == nil || dst == nil {
		return 0, replay.SkipUnknownFD
	}
	if e.Ret == int64(e.FD) {
		return e.Ret, replay.NotSkipped // dup2(fd, fd)
	}
	st := *src
	if dst.state == fdOpen {
		unix.Close(int(dst.real))
	}
	switch st.state {
	case fdOpen:
		nfd, err := unix.FcntlInt(uintptr(st.real), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			*dst = fdEntry{state: fdFailed}
			return errno(err), replay.NotSkipped
		}
		*dst = fdEntry{state: fdOpen, real: int32(nfd)}
		return e.Ret, replay.NotSkipped
	case fdFree:
		*dst = fdEntry{}
		return 0, replay.SkipUnknownFD
	}
	*dst = st
	switch st.state {
	case fdStd:
		return 0, replay.SkipStdStream
	case fdSkipped:
		return 0, replay.SkipSpecialFD
	}
	return -int64(unix.EBADF), replay.NotSkipped
}

const (
	atSymlinkNofollow = 0x100
	atRemovedir       = 0x200
	atEmptyPath       = 0x1000
)

// meta replays a metadata call.
func (x *rankExec) meta(c *replay.Call) (int64, replay.Skip) {
	e := c.Ev
	if c.PathSkip != replay.NotSkipped {
		return 0, c.PathSkip
	}
	if c.Path == "" {
		if (e.Op == trace.OpFstatat || e.Op == trace.OpStatx) && e.Flags&atEmptyPath != 0 {
			fd, ret, skip := x.use(e.FD)
			if fd < 0 {
				return ret, skip
			}
			var st unix.Stat_t
			return result(unix.Fstat(fd, &st))
		}
		return -int64(unix.ENOENT), replay.NotSkipped
	}
	r := x.b.root
	switch e.Op {
	case trace.OpStat, trace.OpLstat, trace.OpFstatat, trace.OpStatx, trace.OpAccess:
		nofollow := e.Op == trace.OpLstat || (e.Op == trace.OpFstatat || e.Op == trace.OpStatx) && e.Flags&atSymlinkNofollow != 0
		if nofollow {
			dfd, base, release, err := r.parent(c.Path)
			if err != nil {
				return result(err)
			}
			defer release()
			var st unix.Stat_t
			return result(unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW))
		}
		fd, err := r.open(c.Path, unix.O_PATH, 0)
		if err != nil {
			return result(err)
		}
		defer unix.Close(fd)
		if e.Op == trace.OpAccess && e.Mode&7 != 0 {
			if err := unix.Faccessat2(fd, "", e.Mode&7, unix.AT_EMPTY_PATH); err != nil && err != unix.ENOSYS && err != unix.EINVAL {
				return result(err)
			}
			return 0, replay.NotSkipped
		}
		var st unix.Stat_t
		return result(unix.Fstat(fd, &st))
	case trace.OpUnlink, trace.OpUnlinkat, trace.OpRmdir:
		if c.Path == "." {
			return 0, replay.SkipTargetRoot
		}
		flags := 0
		if e.Op == trace.OpRmdir || e.Op == trace.OpUnlinkat && e.Flags&atRemovedir != 0 {
			flags = unix.AT_REMOVEDIR
		}
		dfd, base, release, err := r.parent(c.Path)
		if err != nil {
			return result(err)
		}
		defer release()
		return result(unix.Unlinkat(dfd, base, flags))
	case trace.OpMkdir, trace.OpMkdirat:
		dfd, base, release, err := r.parent(c.Path)
		if err != nil {
			return result(err)
		}
		defer release()
		mode := e.Mode & 0o7777
		if mode == 0 {
			mode = 0o755
		}
		return result(unix.Mkdirat(dfd, base, mode))
	case trace.OpRename, trace.OpRenameat, trace.OpRenameat2:
		if c.Path == "." || c.Path2 == "." {
			return 0, replay.SkipTargetRoot
		}
		if c.Path2 == "" {
			return -int64(unix.ENOENT), replay.NotSkipped
		}
		d1, b1, rel1, err := r.parent(c.Path)
		if err != nil {
			return result(err)
		}
		defer rel1()
		d2, b2, rel2, err := r.parent(c.Path2)
		if err != nil {
			return result(err)
		}
		defer rel2()
		var flags uint
		if e.Op == trace.OpRenameat2 {
			flags = uint(e.Flags) & (unix.RENAME_NOREPLACE | unix.RENAME_EXCHANGE)
		}
		return result(unix.Renameat2(d1, b1, d2, b2, flags))
	case trace.OpTruncate:
		return x.truncatePath(c.Path, e.Size)
	}
	return 0, replay.SkipUnsupported
}

// truncatePath sets the size of a file named by path, with the same
// checks as an open for writing.
func (x *rankExec) truncatePath(rel string, size int64) (int64, replay.Skip) {
	fd, err := x.b.root.open(rel, unix.O_WRONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return result(err)
	}
	defer unix.Close(fd)
	if skip := checkFile(fd, unix.O_WRONLY, true); skip != replay.NotSkipped {
		return 0, skip
	}
	return result(unix.Ftruncate(fd, max(size, 0)))
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

// mpiio replays an MPI-IO call on the rank's own descriptor of the file.
func (x *rankExec) mpiio(c *replay.Call) (int64, replay.Skip) {
	e := c.Ev
	switch e.Op {
	case trace.OpMPIFileOpen:
		if c.PathSkip != replay.NotSkipped {
			return 0, c.PathSkip
		}
		if old := x.files[e.FD]; old != nil {
			unix.Close(old.fd)
			delete(x.files, e.FD)
		}
		flags := mpiFlags(e.Flags) | unix.O_NONBLOCK
		if x.b.opts.Direct {
			flags |= unix.O_DIRECT
		}
		fd, err := x.b.root.open(c.Path, flags, 0o644)
		if err != nil {
			return result(err)
		}
		if skip := checkFile(fd, flags, false); skip != replay.NotSkipped {
			unix.Close(fd)
			return 0, skip
		}
		x.files[e.FD] = &mpiFile{fd: fd, rel: c.Path, deleteOnClose: e.Flags&mpiModeDeleteOnClose != 0}
		return 0, replay.NotSkipped
	case trace.OpMPIFileDelete:
		if c.PathSkip != replay.NotSkipped {
			return 0, c.PathSkip
		}
		if c.Path == "." {
			return 0, replay.SkipTargetRoot
		}
		dfd, base, release, err := x.b.root.parent(c.Path)
		if err != nil {
			return result(err)
		}
		defer release()
		return result(unix.Unlinkat(dfd, base, 0))
	}
	f := x.files[e.FD]
	if f == nil {
		return 0, replay.SkipUnknownFD
	}
	switch e.Op {
	case trace.OpMPIFileClose:
		delete(x.files, e.FD)
		err := unix.Close(f.fd)
		if f.deleteOnClose {
			if dfd, base, release, derr := x.b.root.parent(f.rel); derr == nil {
				unix.Unlinkat(dfd, base, 0) // another rank may have been first
				release()
			}
		}
		return result(err)
	case trace.OpMPIFileSetView:
		f.disp, f.blocklen, f.stride = e.Offset, e.Size, e.Stride
		return 0, replay.NotSkipped
	case trace.OpMPIFileSync:
		return result(unix.Fsync(f.fd))
	case trace.OpMPIFileSetSize:
		return result(unix.Ftruncate(f.fd, max(e.Size, 0)))
	case trace.OpMPIFilePreallocate:
		if err := unix.Fallocate(f.fd, 0, 0, max(e.Size, 0)); err != nil && err != unix.EOPNOTSUPP {
			return errno(err), replay.NotSkipped
		}
		return 0, replay.NotSkipped
	case trace.OpMPIFileSeek, trace.OpMPIFileSeekShared:
		// Positions are recorded with each data call.
		return 0, replay.NotSkipped
	}
	if e.Op.Dir() == trace.DirNone {
		return 0, replay.SkipUnsupported
	}
	return x.viewRW(f, e.Op.Dir() == trace.DirWrite, max(e.Offset, 0), max(e.Size, 0)), replay.NotSkipped
}

// viewRW reads or writes size bytes at offset off of f's view: with a
// block length and a larger stride, the view's bytes are blocks of
// blocklen bytes every stride bytes from the displacement.
func (x *rankExec) viewRW(f *mpiFile, write bool, off, size int64) int64 {
	if f.blocklen <= 0 || f.stride <= f.blocklen {
		return x.rw(f.fd, write, true, f.disp+off, size)
	}
	var done int64
	for done < size || size == 0 {
		v := off + done
		within := v % f.blocklen
		n := min(f.blocklen-within, size-done)
		r := x.rw(f.fd, write, true, f.disp+v/f.blocklen*f.stride+within, n)
		if r < 0 {
			if done > 0 {
				return done
			}
			return r
		}
		done += r
		if r < n || size == 0 {
			break
		}
	}
	return done
}
