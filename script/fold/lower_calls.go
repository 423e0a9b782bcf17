package fold

import (
	"strings"

	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/state"
)

// The commands of each kind of call. Which command makes a call follows
// from what the call does (its trace.OpInfo: descriptors, namespace,
// processes), so that the few switches over ops left pick spellings.

// posix lowers a POSIX or metadata call.
func (lw *lowerer) posix(e *trace.Event, b *lb, st step, exp int32) error {
	info := e.Op.Info()
	switch info.FD {
	case trace.FDOpen:
		return lw.openCmd(e, b, st, exp)
	case trace.FDDup:
		return lw.dupCmd(e, b, st, exp)
	case trace.FDClose:
		h, err := lw.handleOf(e, st.Desc, e.FD)
		if err != nil {
			return err
		}
		b.l.cmd, b.l.operand, b.l.handle = "close", oHandle, h
		b.opt("flags", int64(e.Flags), kHex, 0)
		return lw.finish(e, b, trace.OpClose, 0)
	case trace.FDCloseRange:
		b.l.cmd, b.l.operand, b.l.intHole = "closerange", oInt, b.hole(int64(e.FD), kInt)
		b.arg("to", e.Size, kInt)
		b.opt("flags", int64(e.Flags), kHex, 0)
		return lw.finish(e, b, trace.OpCloseRange, 0)
	case trace.FDOn:
		return lw.fdCall(e, b, st)
	case trace.FDAt:
		d := st.Desc
		if !onDesc(e) && e.Flags&atEmptyPath != 0 && e.FD >= 0 {
			// AT_EMPTY_PATH with the path of the descriptor filled in
			// (as the ptrace capture does): on the descriptor too.
			if d = lw.f.Lookup(e.Thread, e.FD); d == nil || d.Path != e.Path {
				d = nil
			}
		}
		if d != nil {
			// An *at call on its descriptor: glibc's fstat is
			// fstatat(fd, "", AT_EMPTY_PATH); readlinkat(fd, "") reads
			// a symbolic link opened with O_PATH.
			if info.Family != "stat" && info.NS != trace.NSLink {
				return lw.fail(e, "%s on descriptor %d with no path: the language has it for stat, lookup, readlink and link only", e.Op, e.FD)
			}
			h, err := lw.handleOf(e, d, e.FD)
			if err != nil {
				return err
			}
			b.l.operand, b.l.handle = oHandle, h
			switch e.Op {
			case trace.OpLink, trace.OpLinkat:
				// linkat(fd, "", …, AT_EMPTY_PATH), or of /proc/self/fd/N:
				// the file open on the handle gets a name.
				b.l.cmd = "link"
				b.l.path2 = b.str(lw.path(e.Path2))
				b.opt("flags", int64(e.Flags), kAtFlags, 0)
				return lw.finish(e, b, trace.OpLinkat, 0)
			case trace.OpReadlinkat:
				b.l.cmd = "readlink"
				b.opt("size", e.Size, kInt, 0)
				return lw.finish(e, b, trace.OpReadlinkat, 0)
			case trace.OpAccess:
				b.l.cmd = "lookup"
				b.opt("mode", int64(e.Mode), kHex, 0)
				b.opt("flags", int64(e.Flags), kAtFlags, 0)
				return lw.finish(e, b, trace.OpAccess, 0)
			}
			b.l.cmd = "stat"
			b.opt("mode", int64(e.Mode), kHex, 0) // statx's mask
			b.opt("flags", int64(e.Flags), kAtFlags, 0)
			return lw.finish(e, b, trace.OpFstat, 0)
		}
	}
	if e.Op == trace.OpSync {
		b.l.cmd = "sync"
		b.opt("flags", int64(e.Flags), kHex, 0)
		return lw.finish(e, b, trace.OpSync, 0)
	}
	return lw.pathCmd(e, b)
}

// atEmptyPath is AT_EMPTY_PATH in the flags of an *at call.
const atEmptyPath = 0x1000

// finish adds the call's spelling and its result (left out when it is
// def), or refuses a spelling the command does not have.
func (lw *lowerer) finish(e *trace.Event, b *lb, op trace.Op, def int64) error {
	if !b.call(e.Op, op) {
		return lw.fail(e, "the script's %s makes %s, and has no %s spelling", b.l.cmd, op, e.Op)
	}
	b.ret(e.Ret, def)
	return nil
}

// pathCmd lowers a call that names a path: the directory descriptor a
// capture may give it (AT_FDCWD, or an *at call's) is not kept.
func (lw *lowerer) pathCmd(e *trace.Event, b *lb) error {
	info := e.Op.Info()
	p := lw.path(e.Path)
	b.l.operand, b.l.path = oPath, b.str(p)
	ok := e.Ret >= 0
	var def trace.Op
	switch {
	case e.Op == trace.OpAccess:
		b.l.cmd, def = "lookup", trace.OpAccess
		b.opt("mode", int64(e.Mode), kInt, 0)
	case e.Op == trace.OpReadlink || e.Op == trace.OpReadlinkat:
		b.l.cmd, def = "readlink", trace.OpReadlink
		b.opt("size", e.Size, kSize, 0)
	case info.Resize == trace.ResizeSet:
		b.l.cmd, def = "truncate", trace.OpTruncate
		b.arg("to", e.Size, kSize)
		if ok {
			lw.known[p] = e.Size
		}
	case info.NS == trace.NSLook:
		b.l.cmd, def = "stat", trace.OpStat
		b.opt("mode", int64(e.Mode), kHex, 0) // statx's mask
	case info.NS == trace.NSRemove:
		b.l.cmd, def = "delete", trace.OpUnlink
		if ok {
			delete(lw.known, p)
		}
	case info.NS == trace.NSRmdir:
		b.l.cmd, def = "rmdir", trace.OpRmdir
	case info.NS == trace.NSMkdir:
		b.l.cmd, def = "mkdir", trace.OpMkdir
		b.opt("mode", int64(e.Mode), kPerm, 0o755)
	case info.NS == trace.NSRename:
		b.l.cmd, def = "rename", trace.OpRename
		p2 := lw.path(e.Path2)
		b.l.path2 = b.str(p2)
		if sz, had := lw.known[p]; had && ok {
			delete(lw.known, p)
			lw.known[p2] = sz
		}
	case info.NS == trace.NSLink:
		b.l.cmd, def = "link", trace.OpLink
		b.l.path2 = b.str(lw.path(e.Path2))
	case info.NS == trace.NSSymlink:
		b.l.cmd, def = "symlink", trace.OpSymlink
		b.l.path2, b.l.text2 = b.str(lw.path(e.Path2)), true
	case e.Op == trace.OpMunmap || e.Op == trace.OpMsync:
		b.l.cmd, def = "unmap", trace.OpMunmap
		if e.Op == trace.OpMsync {
			b.l.cmd, def = "msync", trace.OpMsync
		}
		b.opt("at", e.Offset, kSize, 0)
		b.arg("size", e.Size, kSize)
	default:
		return lw.fail(e, "the script language has no such call")
	}
	switch b.l.cmd {
	case "symlink", "readlink":
	case "stat", "lookup", "delete", "link":
		b.opt("flags", int64(e.Flags), kAtFlags, 0)
	default:
		b.opt("flags", int64(e.Flags), kHex, 0)
	}
	return lw.finish(e, b, def, 0)
}

// openCmd lowers an open: open PATH as NAME [flags F] [mode M] [fd N].
func (lw *lowerer) openCmd(e *trace.Event, b *lb, st step, exp int32) error {
	p := lw.path(e.Path)
	b.l.cmd, b.l.operand, b.l.path = "open", oPath, b.str(p)
	if e.Op == trace.OpFopen && e.FD > 0 && e.Ret >= 0 && int64(e.FD) != e.Ret {
		return lw.fail(e, "fopen's stream is descriptor %d, but its result is %d", e.FD, e.Ret)
	}
	if e.Ret < 0 || st.New == nil {
		b.l.handle = lw.handleName(p, false)
		delete(lw.open, b.l.handle)
	} else {
		name, fresh := lw.nameOf(st.New, int32(e.Ret), p, false)
		b.l.handle = name
		if fresh {
			b.l.opens = name
		}
		if e.Flags&trace.OTrunc != 0 {
			lw.known[p] = 0
		}
	}
	b.arg("flags", int64(e.Flags), kOFlags)
	b.l.args = append(b.l.args, argT{key: "mode", hole: b.hole(int64(e.Mode), kPerm), defHole: -1, defMode: true})
	if !b.call(e.Op, trace.OpOpen) {
		return lw.fail(e, "the script language has no such open")
	}
	return lw.newFD(e, b, exp)
}

// newFD gives the command making a descriptor its result: ret for a
// failure, fd where the descriptor is not the one the interpreter would
// pick (exp).
func (lw *lowerer) newFD(e *trace.Event, b *lb, exp int32) error {
	switch {
	case e.Ret < 0:
		b.arg("ret", e.Ret, kRet)
	case e.Ret > 1<<31-1:
		return lw.fail(e, "descriptor %d out of range", e.Ret)
	case int32(e.Ret) != exp:
		b.arg("fd", e.Ret, kInt)
	}
	return nil
}

// dupCmd lowers dup, dup2, dup3 and fcntl.
func (lw *lowerer) dupCmd(e *trace.Event, b *lb, st step, exp int32) error {
	h, err := lw.handleOf(e, st.Desc, e.FD)
	if err != nil {
		return err
	}
	b.l.operand, b.l.handle = oHandle, h
	if e.Op == trace.OpFcntl && e.Flags != trace.FDupfd && e.Flags != trace.FDupfdCloexec {
		// fcntl HANDLE cmd C [arg A]
		b.l.cmd = "fcntl"
		b.arg("cmd", int64(e.Flags), kFcntl)
		k := kInt
		if e.Flags == trace.FSetfl {
			k = kStatusFlags
		}
		b.opt("arg", e.Size, k, 0)
		b.ret(e.Ret, 0)
		return nil
	}
	b.l.cmd = "dup"
	p := lw.path(st.Desc.Path)
	if e.Ret < 0 {
		b.l.handle2 = lw.handleName(p, false)
		delete(lw.open, b.l.handle2)
	} else {
		name, fresh := lw.nameOf(st.New, int32(e.Ret), p, false)
		b.l.handle2 = name
		if fresh {
			b.l.opens = name
		}
	}
	if e.Op == trace.OpFcntl {
		b.opt("flags", int64(e.Flags), kFcntl, 0)
		b.opt("arg", e.Size, kInt, 0)
	} else {
		b.opt("flags", int64(e.Flags), kOFlags, 0)
	}
	if !b.call(e.Op, trace.OpDup) {
		return lw.fail(e, "the script language has no such dup")
	}
	return lw.newFD(e, b, exp)
}

// fdCall lowers a call on a descriptor.
func (lw *lowerer) fdCall(e *trace.Event, b *lb, st step) error {
	info := e.Op.Info()
	d := st.Desc
	h, err := lw.handleOf(e, d, e.FD)
	if err != nil {
		return err
	}
	b.l.operand, b.l.handle = oHandle, h
	p := lw.path(d.Path)
	ok := e.Ret >= 0
	switch {
	case info.Dir == trace.DirRead || info.Dir == trace.DirWrite:
		return lw.dataCall(e, b, d, st.pos, p)
	case info.Dir == trace.DirCopy:
		return lw.copyCall(e, b, st)
	case info.Family == "seek":
		if e.Whence < 0 || e.Whence > 4 {
			return lw.fail(e, "whence %d", e.Whence)
		}
		b.l.cmd = "seek"
		b.arg("to", e.Offset, kSize)
		if e.Whence != 0 {
			b.word("from", whenceWords[e.Whence])
		}
		b.opt("flags", int64(e.Flags), kHex, 0)
		if !b.call(e.Op, trace.OpLseek) {
			return lw.fail(e, "the script language has no such seek")
		}
		pos, good := script.SeekPos(st.pos, lw.known[p], e.Offset, e.Whence)
		if e.Op == trace.OpFseek {
			// fseek returns 0; the position is where it asked, which the
			// interpreter knows from the size it knows where the
			// follower does not (SEEK_END): so must the lowerer.
			b.ret(e.Ret, 0)
			if good && ok {
				d.Pos = pos
			}
			return nil
		}
		if !good || pos != e.Ret {
			b.arg("ret", e.Ret, kRet)
		}
		return nil
	case info.Family == "sync":
		b.l.cmd = "sync"
		if e.Op == trace.OpFdatasync {
			b.l.cmd = "datasync"
		}
		b.opt("flags", int64(e.Flags), kHex, 0)
		return lw.finish(e, b, map[bool]trace.Op{true: trace.OpFdatasync, false: trace.OpFsync}[e.Op == trace.OpFdatasync], 0)
	case info.Family == "stat":
		b.l.cmd = "stat"
		b.opt("mode", int64(e.Mode), kHex, 0)
		b.opt("flags", int64(e.Flags), kHex, 0)
		return lw.finish(e, b, trace.OpFstat, 0)
	case info.Resize == trace.ResizeSet:
		b.l.cmd = "truncate"
		b.arg("to", e.Size, kSize)
		b.opt("flags", int64(e.Flags), kHex, 0)
		if ok {
			lw.known[p] = e.Size
		}
		return lw.finish(e, b, trace.OpFtruncate, 0)
	case info.Resize == trace.ResizeExtend:
		b.l.cmd = "allocate"
		b.opt("at", e.Offset, kSize, 0)
		b.arg("size", e.Size, kSize)
		b.opt("flags", int64(e.Flags), kHex, 0)
		const keepSize = 1 // FALLOC_FL_KEEP_SIZE
		if ok && e.Flags&keepSize == 0 {
			lw.grow(p, e.Offset+e.Size)
		}
		return lw.finish(e, b, trace.OpFallocate, 0)
	case info.NS == trace.NSReaddir:
		b.l.cmd = "readdir"
		b.arg("size", e.Size, kSize)
		return lw.finish(e, b, trace.OpGetdents, 0)
	case e.Op == trace.OpFadvise || e.Op == trace.OpReadahead:
		b.l.cmd = "advise"
		b.opt("at", e.Offset, kSize, 0)
		b.opt("size", e.Size, kSize, 0)
		b.opt("advice", int64(e.Flags), kInt, 0)
		return lw.finish(e, b, trace.OpFadvise, 0)
	case e.Op == trace.OpMmap:
		b.l.cmd = "map"
		b.opt("at", e.Offset, kSize, 0)
		b.arg("size", e.Size, kSize)
		b.opt("prot", int64(e.Mode), kHex, 0)
		b.opt("flags", int64(e.Flags), kHex, 0)
		return lw.finish(e, b, trace.OpMmap, 0)
	}
	return lw.fail(e, "the script language has no such call")
}

// dataCall lowers a read or write on a descriptor.
func (lw *lowerer) dataCall(e *trace.Event, b *lb, d *state.Desc[ldesc], pos int64, p string) error {
	info := e.Op.Info()
	write := info.Dir == trace.DirWrite
	b.l.cmd = map[bool]string{true: "write", false: "read"}[write]
	moved := max(e.Ret, 0)
	if info.Addr == trace.AddrExplicit {
		b.arg("at", e.Offset, kSize)
	} else {
		// At the handle's position (pos, before the call): where the
		// script has it, unless the trace's differs (pos).
		if write && d.Append() {
			pos = lw.known[p]
		}
		if e.Offset != pos {
			if e.Offset < 0 {
				return lw.fail(e, "the call is at offset %d", e.Offset)
			}
			b.arg("pos", e.Offset, kSize)
		}
	}
	if write {
		lw.grow(p, e.Offset+moved)
	}
	b.arg("size", e.Size, kSize)
	sizeHole := len(b.h) - 1
	def := trace.OpRead
	switch {
	case info.Vector && info.Addr == trace.AddrExplicit:
		def = trace.OpPreadv
	case info.Vector:
		def = trace.OpReadv
	case info.Addr == trace.AddrExplicit:
		def = trace.OpPread
	}
	if write {
		def += trace.OpWrite - trace.OpRead
	}
	switch {
	case info.Vector:
		b.arg("iov", int64(e.Count), kInt)
	case e.Op == trace.OpFread || e.Op == trace.OpFwrite:
		b.opt("elements", int64(e.Count), kInt, 0) // the item count (nmemb)
	case e.Count != 0:
		return lw.fail(e, "count %d on a call that is not a vector call", e.Count)
	}
	b.opt("flags", int64(e.Flags), kHex, 0)
	if !b.call(e.Op, def) {
		return lw.fail(e, "the script language has no such call")
	}
	b.retSize(e.Ret, sizeHole)
	return nil
}

// copyCall lowers copy_file_range, sendfile and splice: copy IN to OUT.
func (lw *lowerer) copyCall(e *trace.Event, b *lb, st step) error {
	out, err := lw.handleOf(e, st.Desc2, e.FD2)
	if err != nil {
		return err
	}
	b.l.cmd, b.l.handle2 = "copy", out
	d2 := st.Desc2
	moved := max(e.Ret, 0)
	// Each side at its position before the call (st.pos, st.pos2), as the
	// interpreter has them.
	if e.Flags&trace.CopyInAt != 0 {
		b.arg("at", e.Offset, kSize)
	} else if e.Offset != st.pos {
		b.arg("pos", e.Offset, kSize)
	}
	p2 := lw.path(d2.Path)
	if e.Flags&trace.CopyOutAt != 0 {
		b.arg("outat", e.Offset2, kSize)
	} else {
		pos := st.pos2
		if d2.Append() {
			pos = lw.known[p2]
		}
		if e.Offset2 != pos {
			b.arg("outpos", e.Offset2, kSize)
		}
	}
	if e.Offset < 0 || e.Offset2 < 0 {
		return lw.fail(e, "a copy at offsets %d and %d", e.Offset, e.Offset2)
	}
	lw.grow(p2, e.Offset2+moved)
	b.arg("size", e.Size, kSize)
	sizeHole := len(b.h) - 1
	b.opt("flags", int64(e.Flags&^(trace.CopyInAt|trace.CopyOutAt)), kHex, 0)
	if !b.call(e.Op, trace.OpCopyFileRange) {
		return lw.fail(e, "the script language has no such copy")
	}
	b.retSize(e.Ret, sizeHole)
	return nil
}

// inherit lowers an inherited descriptor: inherit PATH as NAME fd N
// [flags F] [at POS] [quiet].
func (lw *lowerer) inherit(b *lb, e *trace.Event, st step, quiet bool) error {
	if e.FD < 0 || st.New == nil {
		return lw.fail(e, "an inherited descriptor %d", e.FD)
	}
	if e.Ret != int64(e.FD) {
		return lw.fail(e, "the result %d of an inherit is not its descriptor %d", e.Ret, e.FD)
	}
	if e.Offset < 0 {
		return lw.fail(e, "an inherited descriptor at position %d", e.Offset)
	}
	p := lw.path(e.Path)
	d := st.New
	name, fresh := lw.nameOf(d, e.FD, p, true)
	b.l.cmd, b.l.operand, b.l.path, b.l.handle = "inherit", oPath, b.str(p), name
	if fresh {
		b.l.opens = name
	}
	b.arg("fd", int64(e.FD), kInt)
	b.opt("flags", int64(e.Flags), kOFlags, 0)
	b.opt("at", e.Offset, kSize, 0)
	if quiet {
		b.word("quiet", "")
	}
	return nil
}

// process lowers fork, clone, exec, exit and inherit.
func (lw *lowerer) process(e *trace.Event, b *lb, st step) error {
	switch e.Op.Info().Proc {
	case trace.ProcFork, trace.ProcThread:
		b.l.cmd = map[bool]string{true: "fork", false: "clone"}[e.Op.Info().Proc == trace.ProcFork]
		th := e.Ret
		if e.Ret < 0 {
			th = 0
		}
		if th > 1<<32-1 {
			return lw.fail(e, "thread %d out of range", th)
		}
		b.l.operand, b.l.intHole = oInt, b.hole(th, kInt)
		b.opt("flags", int64(e.Flags), kHex, 0)
		if e.Ret < 0 {
			b.arg("ret", e.Ret, kRet)
		}
		if e.Op != trace.OpFork && e.Op != trace.OpClone {
			return lw.fail(e, "the script language has no such call")
		}
	case trace.ProcExec:
		b.l.cmd, b.l.operand, b.l.path = "exec", oPath, b.str(lw.path(e.Path))
		b.opt("flags", int64(e.Flags), kHex, 0)
		b.ret(e.Ret, 0)
	case trace.ProcExit:
		b.l.cmd = "exit"
		b.opt("ret", e.Ret, kInt, 0)
	case trace.ProcInherit:
		return lw.inherit(b, e, st, false)
	default:
		return lw.fail(e, "the script language has no such call")
	}
	return nil
}

// mpiio lowers an MPI-IO call.
func (lw *lowerer) mpiio(e *trace.Event, b *lb, st step) error {
	info := e.Op.Info()
	b.l.mpi = true
	if e.Op == trace.OpMPIFileOpen {
		p := lw.path(e.Path)
		b.l.cmd, b.l.operand, b.l.path = "mpiopen", oPath, b.str(p)
		name := lw.handleName(p, true)
		b.l.handle = name
		if e.Ret < 0 || st.Handle == nil {
			delete(lw.open, name)
		} else {
			b.l.opens = name
			st.Handle.Aux = lhandle{name: name}
		}
		b.arg("flags", int64(e.Flags), kAmode)
		if e.Comm == trace.CommSelf {
			b.word("self", "")
		} else {
			lw.onComm(e, b)
		}
		if e.Ret < 0 {
			b.arg("ret", e.Ret, kRet)
		} else if e.Ret != 0 {
			return lw.fail(e, "result %d of a successful MPI_File_open", e.Ret)
		}
		return nil
	}
	if info.FD == trace.FDNone {
		// MPI_File_delete: delete PATH call MPI_File_delete.
		b.l.mpi = false
		b.l.cmd, b.l.operand, b.l.path = "delete", oPath, b.str(lw.path(e.Path))
		if e.Ret >= 0 {
			delete(lw.known, lw.path(e.Path))
		}
		b.opt("flags", int64(e.Flags), kHex, 0)
		return lw.finish(e, b, trace.OpUnlink, 0)
	}
	h := st.Handle
	if h == nil {
		return lw.fail(e, "MPI file handle %d was not opened in the trace", e.FD)
	}
	if e.Comm != h.Comm {
		return lw.fail(e, "communicator %d differs from the one the file was opened on (%d)", e.Comm, h.Comm)
	}
	b.l.operand, b.l.handle = oHandle, h.Aux.name
	p := lw.path(h.Path)
	ok := e.Ret >= 0
	if info.Dir != trace.DirNone {
		return lw.mpiData(e, b, h, st.pos, p)
	}
	switch {
	case info.FD == trace.FDClose:
		b.l.cmd = "close"
	case e.Op == trace.OpMPIFileSync:
		b.l.cmd = "sync"
	case info.Resize != trace.ResizeNone:
		b.l.cmd = "truncate"
		b.arg("to", e.Size, kSize)
		if !b.call(e.Op, trace.OpMPIFileSetSize) {
			return lw.fail(e, "the script language has no such call")
		}
		if ok {
			lw.known[p] = e.Size
		}
	case e.Op == trace.OpMPIFileSetView:
		b.l.cmd = "view"
		b.opt("disp", e.Offset, kSize, 0)
		switch {
		case e.Size == 0 && e.Stride == 0:
		case e.Size > 0 && e.Stride >= e.Size:
			b.arg("block", e.Size, kSize)
			b.arg("stride", e.Stride, kSize)
		default:
			return lw.fail(e, "a view with block %d and stride %d: a script's views are vectors with 0 < block <= stride", e.Size, e.Stride)
		}
	case e.Op == trace.OpMPIFileSeek || e.Op == trace.OpMPIFileSeekShared:
		b.l.cmd = "seek"
		if e.Whence < 0 || e.Whence > 2 {
			return lw.fail(e, "whence %d", e.Whence)
		}
		b.arg("to", e.Offset, kSize)
		if e.Whence != 0 {
			b.word("from", whenceWords[e.Whence])
		}
		if e.Op == trace.OpMPIFileSeekShared {
			b.word("shared", "")
		} else if ok {
			pos, good := script.SeekPos(st.pos, lw.known[p], e.Offset, e.Whence)
			if !good {
				return lw.fail(e, "a seek to a negative offset that did not fail")
			}
			h.Pos = pos // as the interpreter, which knows the size MPI_SEEK_END counts from
		}
	default:
		return lw.fail(e, "the script language has no such call")
	}
	b.ret(e.Ret, 0)
	return nil
}

// mpiData lowers an MPI-IO read or write.
func (lw *lowerer) mpiData(e *trace.Event, b *lb, h *state.Handle[lhandle], pos int64, p string) error {
	info := e.Op.Info()
	write := info.Dir == trace.DirWrite
	b.l.cmd = map[bool]string{true: "write", false: "read"}[write]
	moved := max(e.Ret, 0)
	def := script.DefaultCall(e.Op) // MPI_File_read_at for MPI_File_iread_at
	switch info.Addr {
	case trace.AddrExplicit:
		b.arg("at", e.Offset, kSize)
		if write {
			lw.grow(p, e.Offset+moved)
		}
	case trace.AddrIndividual:
		if e.Offset != pos {
			if e.Offset < 0 {
				return lw.fail(e, "the call is at offset %d of the view", e.Offset)
			}
			b.arg("pos", e.Offset, kSize)
		}
		if write {
			lw.grow(p, e.Offset+moved)
		}
	default:
		if e.Offset != 0 {
			return lw.fail(e, "offset %d on a shared-pointer call (a script records 0: the position depends on the other ranks)", e.Offset)
		}
	}
	b.arg("size", e.Size, kSize)
	sizeHole := len(b.h) - 1
	switch {
	case info.Collective && info.Addr != trace.AddrShared:
		b.word("all", "")
	case info.Addr == trace.AddrShared && info.Collective:
		b.word("ordered", "")
	case info.Addr == trace.AddrShared:
		b.word("shared", "")
	}
	if e.Size > 1<<31-1 {
		b.arg("elements", int64(e.Count), kInt)
	} else {
		b.optHole("elements", int64(e.Count), kInt, sizeHole)
	}
	if !b.call(e.Op, def) {
		return lw.fail(e, "the script language has no such call")
	}
	b.retSize(e.Ret, sizeHole)
	return nil
}

// onComm makes the command run on e's communicator: all ranks' (world),
// a group's (an on block), or one split made (comm NAME).
func (lw *lowerer) onComm(e *trace.Event, b *lb) {
	switch name := lw.splitNames[e.Comm]; {
	case name != "":
		b.word("comm", name)
		b.l.commName = name
	case e.Comm >= 2:
		b.l.comm = e.Comm
		lw.comms[e.Comm] = true
	default:
		b.l.world = true
	}
}

// comm lowers a communication call.
func (lw *lowerer) comm(e *trace.Event, b *lb) error {
	info := e.Op.Info()
	if e.Comm == trace.CommSelf && info.Comm != trace.CommWait {
		return lw.fail(e, "a communication call on MPI_COMM_SELF")
	}
	switch info.Comm {
	case trace.CommCreate:
		return lw.split(e, b)
	case trace.CommWait:
		// wait N: the completion of N non-blocking calls.
		b.l.cmd, b.l.operand, b.l.intHole = "wait", oInt, b.hole(int64(e.Count), kInt)
		return lw.finish(e, b, trace.OpMPIWait, 0)
	}
	lw.onComm(e, b)
	def := script.DefaultCall(e.Op)
	b.l.cmd = strings.ToLower(strings.TrimPrefix(def.String(), "MPI_"))
	if e.Op != trace.OpMPIBarrier {
		b.l.operand, b.l.intHole = oInt, b.hole(e.Bytes, kSize)
	} else if e.Bytes != 0 {
		return lw.fail(e, "a barrier with %d bytes", e.Bytes)
	}
	flags := e.Flags
	switch {
	case info.Comm == trace.CommRooted:
		b.opt("root", int64(e.Peer), kInt, 0)
	case def == trace.OpMPISend:
		b.peer("to", int64(e.Peer), lw.rank)
		b.opt("tag", int64(e.Tag), kInt, 0)
	case def == trace.OpMPIRecv:
		b.peer("from", int64(e.Peer), lw.rank)
		b.opt("tag", int64(e.Tag), kAny, 0)
	case def == trace.OpMPISendrecv:
		src, rtag, known := e.RecvFrom()
		if !known {
			// A trace from before the receive half was recorded: the
			// script names the destination as the source too (the
			// comparison allows it; Convert says so).
			src, rtag = e.Peer, e.Tag
			lw.unknownHalves++
		}
		flags &^= trace.RecvHalf
		if src == e.Peer && e.Peer >= 0 {
			b.peer("with", int64(e.Peer), lw.rank)
		} else {
			b.peer("to", int64(e.Peer), lw.rank)
			b.peer("from", int64(src), lw.rank)
		}
		th := b.hole(int64(e.Tag), kInt)
		b.l.args = append(b.l.args, argT{key: "tag", hole: th, defHole: -1, hasDef: true, def: 0})
		b.optHole("recvtag", int64(rtag), kAny, th)
	default:
		if e.Peer != 0 {
			return lw.fail(e, "peer %d on a call without a root", e.Peer)
		}
	}
	if info.Comm != trace.CommP2P && e.Tag != 0 {
		return lw.fail(e, "tag %d on a collective call", e.Tag)
	}
	if info.Comm == trace.CommP2P && def != trace.OpMPISend {
		// A receive posted with MPI_ANY_SOURCE or MPI_ANY_TAG.
		if flags&trace.PostedAnySource != 0 {
			b.word("anysource", "")
		}
		if flags&trace.PostedAnyTag != 0 {
			b.word("anytag", "")
		}
		flags &^= trace.PostedAnySource | trace.PostedAnyTag
	}
	if flags != 0 {
		return lw.fail(e, "flags %#x, which the script's %s does not make", flags, b.l.cmd)
	}
	b.opt("elements", int64(e.Count), kInt, 0)
	return lw.finish(e, b, def, 0)
}

// split lowers MPI_Comm_split and MPI_Comm_dup (and what captures record
// as split: MPI_Cart_create, MPI_Comm_create): split as NAME [color C]
// [id N]. Its color and whether it needs an id depend on the members of
// the communicator it made, which only all ranks' traces tell:
// Convert sets them (splitColors) from what the lowerers of all ranks
// saw. Until then the color and id holes hold the new id, and two holes
// no argument shows hold the parent's id and how many communicators the
// rank made from it before.
func (lw *lowerer) split(e *trace.Event, b *lb) error {
	lw.onComm(e, b)
	b.l.cmd = "split"
	if e.Ret > 1<<32-1 || e.Ret < -1<<31 {
		return lw.fail(e, "communicator id %d out of range", e.Ret)
	}
	seq := lw.splitSeq[e.Comm]
	lw.splitSeq[e.Comm]++
	name := lw.handleName("sub", false)
	b.l.handle = name
	if e.Ret >= 0 {
		b.l.opens = name
		lw.splitNames[uint32(e.Ret)] = name
		lw.splitIDs[name] = uint32(e.Ret)
	} else {
		delete(lw.open, name)
	}
	if e.Op != trace.OpMPICommDup {
		b.opt("color", e.Ret, kInt, 0)
	}
	b.opt("id", e.Ret, kInt, -1)
	b.l.hidden = b.hole(int64(e.Comm), kInt)
	b.hole(int64(seq), kInt)
	if e.Ret < -1 {
		b.arg("ret", e.Ret, kRet)
	}
	if !b.call(e.Op, trace.OpMPICommSplit) {
		return lw.fail(e, "the script language has no such call")
	}
	return nil
}
