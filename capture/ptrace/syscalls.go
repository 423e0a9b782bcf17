//go:build linux && (amd64 || arm64)

package ptrace

import (
	"encoding/binary"
	"path/filepath"
	"unsafe"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
	"golang.org/x/sys/unix"
)

const (
	atFDCWD     = int32(unix.AT_FDCWD)
	atEmptyPath = unix.AT_EMPTY_PATH
)

func fdArg(v uint64) int32 { return int32(uint32(v)) }

// entry decodes a traced call at its seccomp stop, does the descriptor
// bookkeeping that needs no result, and reports whether the tracer must
// see the call's exit (to record it, or to learn a new descriptor).
func (tr *tracer) entry(t *task, k kind, a *[6]uint64, start int64) bool {
	ev := &t.ev
	*ev = trace.Event{Op: kindOps[k], Rank: tr.rank, Thread: t.idx, Start: start}
	t.k, t.a, t.f, t.f2, t.pe, t.rec, t.applied, t.moved = k, *a, nil, nil, nil, false, false, ""
	switch k {
	case kOpen:
		return tr.openEntry(t, atFDCWD, a[0], a[1], a[2])
	case kOpenat:
		return tr.openEntry(t, fdArg(a[0]), a[1], a[2], a[3])
	case kCreat:
		return tr.openEntry(t, atFDCWD, a[0], unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, a[1])
	case kOpenat2:
		// struct open_how { u64 flags; u64 mode; u64 resolve; }
		var flags, mode uint64
		if a[3] >= 16 && tr.mem.read(t.tid, a[2], tr.how[:16]) == nil {
			flags = binary.LittleEndian.Uint64(tr.how[0:])
			mode = binary.LittleEndian.Uint64(tr.how[8:])
		}
		return tr.openEntry(t, fdArg(a[0]), a[1], flags, mode)

	case kClose:
		fd := fdArg(a[0])
		f := tr.fdFile(t, fd)
		ev.FD = fd
		rec := tr.fdCall(t, f)
		// close releases the descriptor even when it fails with EINTR:
		// the table changes now, whatever the exit says.
		tr.applyNow(t)
		return rec
	case kCloseRange:
		first, last, flags := uint32(a[0]), uint32(a[1]), uint32(a[2])
		ev.FD, ev.Size, ev.Flags = int32(first), int64(last), flags
		t.rec = tr.all
		if flags&unix.CLOSE_RANGE_CLOEXEC == 0 && !t.rec {
			t.rec = tr.anyRecorded(t, first, last)
		}
		tr.applyNow(t)
		return t.rec

	case kRead, kWrite, kFsync, kFdatasync, kFstat, kDup, kSyncfs, kGetdents, kGetdents64:
		ev.FD = fdArg(a[0])
		if k == kRead || k == kWrite || k == kGetdents || k == kGetdents64 {
			ev.Size = int64(a[2])
		}
		return tr.fdCall(t, tr.fdFile(t, ev.FD))
	case kPread, kPwrite:
		ev.FD, ev.Size, ev.Offset = fdArg(a[0]), int64(a[2]), int64(a[3])
		return tr.fdCall(t, tr.fdFile(t, ev.FD))
	case kReadv, kWritev, kPreadv, kPwritev, kPreadv2, kPwritev2:
		ev.FD, ev.Count = fdArg(a[0]), int32(a[2])
		switch k {
		case kPreadv, kPwritev:
			ev.Offset = int64(a[3])
		case kPreadv2, kPwritev2:
			ev.Offset, ev.Flags = int64(a[3]), uint32(a[5])
		}
		if !tr.fdCall(t, tr.fdFile(t, ev.FD)) {
			return false
		}
		ev.Size = tr.iovSize(t.tid, a[1], a[2])
		return true
	case kLseek:
		ev.FD, ev.Offset, ev.Whence = fdArg(a[0]), int64(a[1]), int32(a[2])
		return tr.fdCall(t, tr.fdFile(t, ev.FD))
	case kFtruncate:
		ev.FD, ev.Size = fdArg(a[0]), int64(a[1])
		return tr.fdCall(t, tr.fdFile(t, ev.FD))
	case kFallocate:
		// fallocate(fd, mode, offset, len)
		ev.FD, ev.Flags, ev.Offset, ev.Size = fdArg(a[0]), uint32(a[1]), int64(a[2]), int64(a[3])
		return tr.fdCall(t, tr.fdFile(t, ev.FD))
	case kFadvise:
		// fadvise64(fd, offset, len, advice)
		ev.FD, ev.Offset, ev.Size, ev.Flags = fdArg(a[0]), int64(a[1]), int64(a[2]), uint32(a[3])
		return tr.fdCall(t, tr.fdFile(t, ev.FD))
	case kReadahead:
		// readahead(fd, offset, count)
		ev.FD, ev.Offset, ev.Size = fdArg(a[0]), int64(a[1]), int64(a[2])
		return tr.fdCall(t, tr.fdFile(t, ev.FD))
	case kMunmap, kMsync:
		// munmap(addr, len), msync(addr, len, flags): recorded when the
		// range holds a recorded mapping, as a call on the file range it
		// maps (the first, if it holds several).
		pieces := tr.st.Proc(t.idx).Maps.Pieces(a[0], a[1])
		if len(pieces) == 0 {
			return false
		}
		m := pieces[0]
		ev.FD, ev.Path, ev.Offset, ev.Size = -1, m.Path, m.Off, int64(m.Len)
		if k == kMsync {
			ev.Flags = uint32(a[2])
		}
		t.rec = true
		return true
	case kSync:
		// sync(2) writes back every file, recorded ones too: always
		// recorded, whatever the paths.
		t.rec = true
		return true
	case kMmap:
		// mmap(addr, len, prot, flags, fd, off); the filter stops only
		// mappings of a descriptor.
		fd := fdArg(a[4])
		if fd < 0 || a[3]&unix.MAP_ANONYMOUS != 0 {
			return false
		}
		ev.FD, ev.Size, ev.Mode, ev.Flags, ev.Offset = fd, int64(a[1]), uint32(a[2]), uint32(a[3]), int64(a[5])
		return tr.fdCall(t, tr.fdFile(t, fd))
	case kCopyFileRange, kSplice:
		// (fd_in, off_in*, fd_out, off_out*, len, flags)
		return tr.copyEntry(t, fdArg(a[0]), a[1], fdArg(a[2]), a[3], int64(a[4]))
	case kSendfile:
		// sendfile(out_fd, in_fd, offset*, count)
		return tr.copyEntry(t, fdArg(a[1]), a[2], fdArg(a[0]), 0, int64(a[3]))

	case kTruncate:
		ev.Size = int64(a[1])
		return tr.pathCall(t, atFDCWD, a[0], 0)
	case kStat, kLstat, kUnlink, kRmdir:
		return tr.pathCall(t, atFDCWD, a[0], 0)
	case kNewfstatat:
		ev.Flags = uint32(a[3])
		return tr.pathCall(t, fdArg(a[0]), a[1], a[3])
	case kStatx:
		ev.Flags = uint32(a[2])
		return tr.pathCall(t, fdArg(a[0]), a[1], a[2])
	case kAccess:
		ev.Mode = uint32(a[1])
		return tr.pathCall(t, atFDCWD, a[0], 0)
	case kFaccessat, kFaccessat2:
		ev.Mode = uint32(a[2])
		var flags uint64
		if k == kFaccessat2 {
			flags = a[3]
			ev.Flags = uint32(flags)
		}
		return tr.pathCall(t, fdArg(a[0]), a[1], flags)
	case kUnlinkat:
		ev.Flags = uint32(a[2])
		return tr.pathCall(t, fdArg(a[0]), a[1], 0)
	case kMkdir:
		ev.Mode = uint32(a[1])
		return tr.pathCall(t, atFDCWD, a[0], 0)
	case kMkdirat:
		ev.Mode = uint32(a[2])
		return tr.pathCall(t, fdArg(a[0]), a[1], 0)
	case kRename:
		return tr.renameCall(t, atFDCWD, a[0], atFDCWD, a[1])
	case kRenameat:
		return tr.renameCall(t, fdArg(a[0]), a[1], fdArg(a[2]), a[3])
	case kRenameat2:
		ev.Flags = uint32(a[4])
		return tr.renameCall(t, fdArg(a[0]), a[1], fdArg(a[2]), a[3])
	case kLink:
		return tr.renameCall(t, atFDCWD, a[0], atFDCWD, a[1])
	case kLinkat:
		// linkat(olddirfd, old, newdirfd, new, flags)
		ev.Flags = uint32(a[4])
		return tr.linkatCall(t, fdArg(a[0]), a[1], fdArg(a[2]), a[3], a[4])
	case kSymlink:
		return tr.symlinkCall(t, a[0], atFDCWD, a[1])
	case kSymlinkat:
		return tr.symlinkCall(t, a[0], fdArg(a[1]), a[2])
	case kReadlink:
		ev.Size = int64(a[2])
		return tr.pathCall(t, atFDCWD, a[0], 0)
	case kReadlinkat:
		// An empty path reads the link open on dirfd (O_PATH).
		ev.Size = int64(a[3])
		return tr.pathCall(t, fdArg(a[0]), a[1], atEmptyPath)

	case kDup2, kDup3:
		ev.FD = fdArg(a[0])
		if k == kDup3 {
			ev.Flags = uint32(a[2])
		}
		f := tr.fdFile(t, ev.FD)
		if tr.fdCall(t, f) {
			return true
		}
		nfd := fdArg(a[1])
		if nfd == ev.FD {
			return false
		}
		if old := tr.fdFile(t, nfd); old != nil && old.Aux.rec {
			// The call closes a recorded file: recorded too, on the
			// source's descriptor (a pipe, say: no path).
			t.rec = true
			return true
		}
		// The new descriptor is learnt from /proc when it is used.
		tr.closeFD(t, nfd)
		return false
	case kFcntl:
		fd, cmd := fdArg(a[0]), uint32(a[1]) // the kernel reads cmd as an unsigned int
		ev.FD, ev.Flags = fd, cmd
		switch cmd {
		case fDupfd, fDupfdCloexec:
			ev.Size = int64(int32(a[2])) // the lowest new descriptor, an int
		case fSetfd:
			ev.Size = int64(a[2] & unix.FD_CLOEXEC)
		case fSetfl:
			ev.Size = int64(openFlags(a[2]))
		default:
			return false
		}
		// (Learnt from /proc first, if need be: with the flags before
		// the call, which its inherit event shows. The table takes the new
		// flags at the exit.)
		f := tr.fdFile(t, fd)
		if !tr.fdCall(t, f) {
			return f != nil && (cmd == fSetfl || cmd == fSetfd) // the table follows them all the same
		}
		return true

	case kClone:
		t.cloneFlags = a[cloneFlagsArg]
		return false
	case kClone3:
		// struct clone_args starts with u64 flags.
		t.cloneFlags = 0
		if tr.mem.read(t.tid, a[0], tr.how[:8]) == nil {
			t.cloneFlags = binary.LittleEndian.Uint64(tr.how[:8])
		}
		return false
	case kFork:
		t.cloneFlags = 0
		return false
	case kUnshare:
		if a[0]&unix.CLONE_FILES != 0 {
			tr.st.Unshare(t.idx)
		}
		return false
	case kIoUringSetup, kIoSetup:
		return true // counted at the exit if it worked
	case kPtrace:
		return true // counted at the exit if refused
	}
	return false
}

// copyEntry decodes a copy from descriptor in to descriptor out, at the
// offsets inOff and outOff point to (0: at the descriptors' positions).
// It is recorded when either side is a recorded file; Path and Path2 are
// those of the sides that are (all sides, with Config.All).
func (tr *tracer) copyEntry(t *task, in int32, inOff uint64, out int32, outOff uint64, size int64) bool {
	ev := &t.ev
	ev.FD, ev.FD2, ev.Size = in, out, size
	fi, fo := tr.fdFile(t, in), tr.fdFile(t, out)
	t.f, t.f2 = fi, fo
	// The positions of files that are not recorded matter to no event:
	// an unrecorded copy does not need its exit.
	t.rec = tr.all || (fi != nil && fi.Aux.rec) || (fo != nil && fo.Aux.rec)
	if !t.rec {
		return false
	}
	if inOff != 0 {
		ev.Flags |= trace.CopyInAt
		ev.Offset = tr.readOff(t, inOff)
	}
	if outOff != 0 {
		ev.Flags |= trace.CopyOutAt
		ev.Offset2 = tr.readOff(t, outOff)
	}
	ev.Path, ev.Path2 = tr.fileID(fi), tr.fileID(fo)
	return true
}

// readOff reads the loff_t at addr (0 if it cannot be read: the call
// fails with EFAULT then).
func (tr *tracer) readOff(t *task, addr uint64) int64 {
	if tr.mem.read(t.tid, addr, tr.how[:8]) != nil {
		return 0
	}
	return int64(binary.LittleEndian.Uint64(tr.how[:8]))
}

// fileID returns the path id of f for an event, or 0 if f is not open
// or not recorded (a pipe on the other side of a copy).
func (tr *tracer) fileID(f *desc) trace.PathID {
	if f == nil || !(f.Aux.rec || tr.all) {
		return 0
	}
	if f.Aux.id == 0 {
		f.Aux.id = tr.sink.Intern(f.Aux.name)
	}
	return f.Aux.id
}

// applyNow makes the descriptor table follow the call in flight at its
// entry (a close releases its descriptor whatever its result), so that
// the exit does not again.
func (tr *tracer) applyNow(t *task) {
	tr.st.Apply(&t.ev)
	t.applied = true
}

// apply makes the table follow the call at its exit. A call on a
// descriptor that is not open changes nothing (and would teach the table
// a descriptor that is not there).
func (tr *tracer) apply(t *task) {
	if t.applied {
		return
	}
	info := t.ev.Op.Info()
	switch info.FD {
	case trace.FDOn, trace.FDDup:
		if t.f == nil {
			return
		}
	}
	st := tr.st.Apply(&t.ev)
	if d := st.New; d != nil && info.FD == trace.FDOpen {
		d.Aux = file{}
		if pe := t.pe; pe != nil {
			d.Aux = file{name: pe.name, id: pe.id, rec: pe.rec}
		}
	}
}

// closeFD forgets descriptor fd of t's process, as a call the tracer does
// not record closed it.
func (tr *tracer) closeFD(t *task, fd int32) {
	if tr.st.Lookup(t.idx, fd) != nil {
		tr.st.Apply(&trace.Event{Op: trace.OpClose, Thread: t.idx, FD: fd})
	}
}

// anyRecorded reports whether a descriptor in first…last of t's process
// names a recorded file.
func (tr *tracer) anyRecorded(t *task, first, last uint32) bool {
	any := false
	tr.st.Each(t.idx, func(fd int32, d *desc) {
		if uint32(fd) >= first && uint32(fd) <= last && d.Aux.rec {
			any = true
		}
	})
	return any
}

// exit completes the event of a call at its exit stop and updates the
// descriptor table with its result.
func (tr *tracer) exit(t *task, ret int64) {
	ev := &t.ev
	defer tr.apply(t)
	switch t.k {
	case kStat, kLstat, kFstat, kNewfstatat, kStatx:
		if ret == 0 && t.rec {
			tr.statSize(t)
		}
	case kOpen, kOpenat, kCreat, kOpenat2:
		if ret >= 0 {
			ev.FD = int32(ret)
		}
	case kCopyFileRange, kSendfile, kSplice:
		// The sides without an offset moved their positions.
		if ev.Flags&trace.CopyInAt == 0 && t.f != nil {
			ev.Offset = tr.advance(t, t.f, ev.FD, ret, false)
		}
		if ev.Flags&trace.CopyOutAt == 0 && t.f2 != nil {
			ev.Offset2 = tr.advance(t, t.f2, ev.FD2, ret, true)
		}
	case kMmap:
		// The result is an address: recorded as 0 (or -errno).
		if ret < 0 && ret >= -4095 {
			return
		}
		ev.Ret = 0
		if t.rec && ev.Path != 0 && ev.Size > 0 {
			tr.st.Proc(t.idx).Maps.Map(uint64(ret), uint64(ev.Size), ev.Path, ev.Offset)
		}
		if f := t.f; f != nil && f.Aux.rec && t.rec && !filter.SystemFile(f.Aux.name) {
			tr.mmaps++
			if tr.mmapFiles == nil {
				tr.mmapFiles = map[string]bool{}
			}
			tr.mmapFiles[f.Aux.name] = true
		}
	case kMunmap:
		if ret == 0 {
			tr.st.Proc(t.idx).Maps.Unmap(t.a[0], t.a[1])
		}
	case kIoUringSetup:
		if ret >= 0 {
			tr.ioUring++
		}
	case kIoSetup:
		if ret >= 0 {
			tr.aio++
		}
	case kPtrace:
		// PTRACE_TRACEME, or a process of the program attaching another
		// (its child, traced already): the kernel refuses a second tracer.
		if ret == -int64(unix.EPERM) && (t.a[0] == unix.PTRACE_TRACEME || t.a[0] == unix.PTRACE_ATTACH || t.a[0] == unix.PTRACE_SEIZE) {
			if tr.ptraceDenied == 0 {
				tr.ptraceBy = procComm(t.tid)
			}
			tr.ptraceDenied++
		}
	case kRead, kReadv:
		tr.individual(t, ret, false)
	case kWrite, kWritev:
		tr.individual(t, ret, true)
	case kPreadv2, kPwritev2:
		if ev.Offset == -1 {
			ev.Flags |= trace.AtPosition
			tr.individual(t, ret, t.k == kPwritev2)
		} else if t.k == kPwritev2 {
			tr.appended(t, ret)
		}
	case kPwrite, kPwritev:
		tr.appended(t, ret)
	}
}

// individual sets the offset of a read or write at the file position and
// moves the position.
func (tr *tracer) individual(t *task, ret int64, write bool) {
	if t.f != nil {
		t.ev.Offset = tr.advance(t, t.f, t.ev.FD, ret, write)
	}
}

// advance returns the offset at which a call that moved ret bytes (or
// failed) through descriptor fd of file f read or wrote without an
// explicit offset; the table then moves f's position past them. Pipes,
// sockets and anonymous inodes (learnt from /proc under a name that is
// not a path) have no position: 0.
func (tr *tracer) advance(t *task, f *desc, fd int32, ret int64, write bool) int64 {
	if f.Aux.lazy && (len(f.Aux.name) == 0 || f.Aux.name[0] != '/') {
		return 0
	}
	moved := max(ret, 0)
	switch {
	case write && f.Append():
		// Appends land at the end of the file, wherever the position was.
		if size, err := tr.proc.size(t.tid, fd); err == nil {
			return size - moved
		}
	case f.Aux.lazy || f.Pos < 0:
		if pos, _, err := tr.proc.fdinfo(t.tid, fd); err == nil {
			return pos - moved
		}
	}
	return max(f.Pos, 0)
}

// appended corrects the offset of a positioned write to a file opened
// with O_APPEND: Linux appends it anyway.
func (tr *tracer) appended(t *task, ret int64) {
	if f := t.f; f != nil && f.Append() && ret >= 0 {
		if size, err := tr.proc.size(t.tid, t.ev.FD); err == nil {
			t.ev.Offset = size - ret
		}
	}
}

// openEntry decodes an open. Opens of files that are not recorded run
// without an exit stop: their descriptors are learnt from /proc when used.
func (tr *tracer) openEntry(t *task, dirfd int32, pathAddr, flags, mode uint64) bool {
	ev := &t.ev
	ev.Flags = openFlags(flags)
	if flags&(unix.O_CREAT|unix.O_TMPFILE) != 0 {
		ev.Mode = uint32(mode) & 0o7777
	}
	pe, _ := tr.pathAt(t, dirfd, pathAddr)
	t.pe = pe
	t.rec = tr.all || (pe != nil && pe.rec)
	if t.rec && pe != nil {
		ev.Path = tr.pathID(pe)
	}
	return t.rec
}

// fdCall decides whether a call on file f (nil: not open) is recorded.
func (tr *tracer) fdCall(t *task, f *desc) bool {
	t.f = f
	t.rec = tr.all || (f != nil && f.Aux.rec)
	if t.rec && f != nil {
		t.ev.Path = tr.fileID(f)
	}
	return t.rec
}

// pathCall decodes a call on the path at addr (relative to dirfd). With
// AT_EMPTY_PATH in flags and an empty path, the call is on dirfd itself:
// no Path then, FD names it (trace.FDAt), as for linkat. Its Path would
// be a stat of the name, which is not the file open on dirfd once the
// name is gone or is a symbolic link opened with O_PATH.
func (tr *tracer) pathCall(t *task, dirfd int32, addr uint64, flags uint64) bool {
	pe, empty := tr.pathAt(t, dirfd, addr)
	if empty && flags&atEmptyPath != 0 {
		t.ev.FD = dirfd
		f := tr.fdFile(t, dirfd)
		t.f = f
		t.rec = tr.all || (f != nil && f.Aux.rec)
		return t.rec
	}
	t.rec = tr.all || (pe != nil && pe.rec)
	if t.rec && pe != nil {
		t.ev.Path = tr.pathID(pe)
	}
	return t.rec
}

// renameCall decodes a call on two paths (rename, link): recorded when
// either is.
func (tr *tracer) renameCall(t *task, olddir int32, oldAddr uint64, newdir int32, newAddr uint64) bool {
	pe, _ := tr.pathAt(t, olddir, oldAddr)
	pe2, _ := tr.pathAt(t, newdir, newAddr)
	if pe != nil {
		t.moved = pe.name
	}
	return tr.twoPaths(t, pe, pe2)
}

// movedSize notes, before a recorded rename or link runs, the size of
// the regular file it moves or links (trace.SizeSeen): a file a program
// only renames or links is prepared with its size, though the trace
// never read it (find -exec mv). The tracer looks itself, by the name
// it resolved; a symbolic link is not followed (rename and link act on
// the link), but for linkat with AT_SYMLINK_FOLLOW.
func (tr *tracer) movedSize(t *task) {
	if t.moved == "" {
		return
	}
	var st unix.Stat_t
	var err error
	if t.k == kLinkat && t.a[4]&unix.AT_SYMLINK_FOLLOW != 0 {
		err = unix.Stat(t.moved, &st)
	} else {
		err = unix.Lstat(t.moved, &st)
	}
	if err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size >= 0 {
		t.ev.Size, t.ev.Flags = st.Size, t.ev.Flags|trace.SizeSeen
	}
}

func (tr *tracer) twoPaths(t *task, pe, pe2 *pathEnt) bool {
	t.rec = tr.all || (pe != nil && pe.rec) || (pe2 != nil && pe2.rec)
	if t.rec {
		if pe != nil {
			t.ev.Path = tr.pathID(pe)
		}
		if pe2 != nil {
			t.ev.Path2 = tr.pathID(pe2)
		}
	}
	return t.rec
}

// linkatCall decodes linkat. With AT_EMPTY_PATH and an empty old path it
// links the file open on olddir: no Path then, FD names it. So does a
// link of /proc/self/fd/N with AT_SYMLINK_FOLLOW (how a file made with
// O_TMPFILE gets its name), of descriptor N.
func (tr *tracer) linkatCall(t *task, olddir int32, oldAddr uint64, newdir int32, newAddr uint64, flags uint64) bool {
	pe, empty := tr.pathAt(t, olddir, oldAddr)
	pe2, _ := tr.pathAt(t, newdir, newAddr)
	if pe != nil {
		t.moved = pe.name
	}
	fd, onFD := olddir, empty && flags&atEmptyPath != 0
	if !onFD && flags&unix.AT_SYMLINK_FOLLOW != 0 && pe != nil {
		fd, onFD = filter.DescriptorPath(pe.name, t.tgid)
	}
	if !onFD {
		return tr.twoPaths(t, pe, pe2)
	}
	t.moved = ""
	t.ev.FD = fd
	f := tr.fdFile(t, fd)
	t.f = f
	t.rec = tr.all || (f != nil && f.Aux.rec) || (pe2 != nil && pe2.rec)
	if t.rec && pe2 != nil {
		t.ev.Path2 = tr.pathID(pe2)
	}
	return t.rec
}

// symlinkCall decodes symlink and symlinkat: recorded when the link made
// (Path) is; Path2 is the target exactly as the program wrote it.
func (tr *tracer) symlinkCall(t *task, targetAddr uint64, newdir int32, linkAddr uint64) bool {
	pe, _ := tr.pathAt(t, newdir, linkAddr)
	t.rec = tr.all || (pe != nil && pe.rec)
	if !t.rec {
		return false
	}
	if pe != nil {
		t.ev.Path = tr.pathID(pe)
	}
	if raw, err := tr.mem.readString(t.tid, targetAddr); err == nil && len(raw) > 0 {
		t.ev.Path2 = tr.sink.Intern(string(raw))
	}
	return true
}

func (tr *tracer) pathID(pe *pathEnt) trace.PathID {
	if pe.id == 0 {
		pe.id = tr.sink.Intern(pe.name)
	}
	return pe.id
}

// fdFile returns the file of descriptor fd of t, learning it from /proc
// if the tracer has not seen it opened (inherited descriptors, and those
// made by calls the tracer does not follow: pipe, socket, accept…). It
// returns nil if fd is not open. A recorded file learnt so gets an
// OpInherit event, before the event of the call in flight.
func (tr *tracer) fdFile(t *task, fd int32) *desc {
	if fd < 0 {
		return nil
	}
	if f := tr.st.Lookup(t.idx, fd); f != nil {
		return f
	}
	link, err := tr.proc.readlink(t.tid, "fd", fd)
	if err != nil {
		return nil
	}
	name := string(link)
	if len(name) > 10 && name[len(name)-10:] == " (deleted)" {
		name = name[:len(name)-10]
	}
	aux := file{name: name, rec: tr.rules.Match(name), lazy: true}
	ev := trace.Event{Op: trace.OpInherit, Rank: tr.rank, Thread: t.idx, Start: t.ev.Start, FD: fd, Ret: int64(fd)}
	if pos, flags, err := tr.proc.fdinfo(t.tid, fd); err == nil {
		ev.Offset, ev.Flags = pos, openFlags(flags)
	}
	if aux.rec || tr.all {
		aux.id = tr.sink.Intern(name)
		ev.Path = aux.id
	}
	f := tr.st.Apply(&ev).New
	if f == nil {
		return nil
	}
	f.Aux = aux
	if aux.rec || tr.all {
		tr.add(&ev)
	}
	return f
}

// pathAt reads the path at addr and makes it absolute against dirfd (or
// the working directory). It returns nil if the path cannot be read, and
// empty = true for an empty path. Resolved paths are cached by the bytes
// they resolve from, so that calls on known paths allocate nothing.
func (tr *tracer) pathAt(t *task, dirfd int32, addr uint64) (pe *pathEnt, empty bool) {
	raw, err := tr.mem.readString(t.tid, addr)
	if err != nil {
		return nil, false
	}
	if len(raw) == 0 {
		return nil, true
	}
	b := tr.abuf[:0]
	if raw[0] != '/' {
		if dirfd == atFDCWD {
			cwd, err := tr.proc.cwd(t.tid)
			if err != nil {
				return &pathEnt{name: string(raw)}, false
			}
			b = append(b, cwd...)
		} else {
			f := tr.fdFile(t, dirfd)
			if f == nil {
				return &pathEnt{name: string(raw)}, false
			}
			b = append(b, f.Aux.name...)
		}
		b = append(b, '/')
	}
	b = append(b, raw...)
	tr.abuf = b
	if pe := tr.paths[string(b)]; pe != nil {
		return pe, false
	}
	name := filepath.Clean(string(b))
	pe = &pathEnt{name: name, rec: tr.rules.Match(name)}
	if len(tr.paths) >= 1<<16 {
		clear(tr.paths)
	}
	tr.paths[string(b)] = pe
	return pe, false
}

// iovSize returns the bytes an iovec array of n entries at addr asks for.
func (tr *tracer) iovSize(tid int, addr, n uint64) int64 {
	const maxIov = 1024 // UIO_MAXIOV
	if n == 0 || n > maxIov {
		return 0
	}
	buf := tr.iovBuf(int(n) * 16)
	if tr.mem.read(tid, addr, buf) != nil {
		return 0
	}
	var sum int64
	for i := 0; i < int(n); i++ {
		sum += int64(binary.LittleEndian.Uint64(buf[16*i+8:]))
	}
	return sum
}

func (tr *tracer) iovBuf(n int) []byte {
	if cap(tr.iov) < n {
		tr.iov = make([]byte, n)
	}
	return tr.iov[:n]
}

// Where the kernel's stat and statx results hold a file's type and size
// (this architecture's layouts, the tracee's as the tracer's).
var (
	statModeOff  = unsafe.Offsetof(unix.Stat_t{}.Mode)
	statSizeOff  = unsafe.Offsetof(unix.Stat_t{}.Size)
	statxMaskOff = unsafe.Offsetof(unix.Statx_t{}.Mask)
	statxModeOff = unsafe.Offsetof(unix.Statx_t{}.Mode)
	statxSizeOff = unsafe.Offsetof(unix.Statx_t{}.Size)
)

// statSize reads, after a stat of the family that succeeded, the size of
// the regular file it found from the program's buffer, into the event's
// Size (trace.SizeSeen): a replay prepares a file the program only
// looked at with its size. A buffer it cannot read leaves the event as
// it was.
func (tr *tracer) statSize(t *task) {
	var addr uint64
	switch t.k {
	case kStat, kLstat, kFstat:
		addr = t.a[1]
	case kNewfstatat:
		addr = t.a[2]
	case kStatx:
		addr = t.a[4]
	}
	var b [8]byte
	if t.k == kStatx {
		var m [4]byte
		if tr.mem.read(t.tid, addr+uint64(statxMaskOff), m[:]) != nil || tr.mem.read(t.tid, addr+uint64(statxModeOff), b[:2]) != nil {
			return
		}
		mask := binary.NativeEndian.Uint32(m[:])
		if mask&(unix.STATX_TYPE|unix.STATX_SIZE) != unix.STATX_TYPE|unix.STATX_SIZE || uint32(binary.NativeEndian.Uint16(b[:2]))&unix.S_IFMT != unix.S_IFREG {
			return
		}
		if tr.mem.read(t.tid, addr+uint64(statxSizeOff), b[:]) != nil {
			return
		}
	} else {
		if tr.mem.read(t.tid, addr+uint64(statModeOff), b[:4]) != nil || binary.NativeEndian.Uint32(b[:4])&unix.S_IFMT != unix.S_IFREG {
			return
		}
		if tr.mem.read(t.tid, addr+uint64(statSizeOff), b[:]) != nil {
			return
		}
	}
	if size := int64(binary.NativeEndian.Uint64(b[:])); size >= 0 {
		t.ev.Size, t.ev.Flags = size, t.ev.Flags|trace.SizeSeen
	}
}
