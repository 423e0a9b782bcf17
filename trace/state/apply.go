package state

import "github.com/iotrace/iotrace/trace"

// Error numbers the namespace reads in results.
const (
	enoent = 2
	eexist = 17
)

// follows reports whether a lookup that succeeded followed a symbolic
// link at its last name: stat, access, and fstatat and statx without
// AT_SYMLINK_NOFOLLOW (lstat and readlink look at the link itself).
func follows(e *trace.Event) bool {
	const atSymlinkNofollow = 0x100
	switch e.Op {
	case trace.OpStat, trace.OpAccess:
		return true
	case trace.OpFstatat, trace.OpStatx:
		return e.Flags&atSymlinkNofollow == 0
	}
	return false
}

// applyNS follows the effects of a POSIX or metadata call on the
// namespace: the names it made, found, missed, moved or removed, and the
// sizes of the files it read, wrote or resized.
func applyNS[D, H any](ns *Namespace, e *trace.Event, info *trace.OpInfo, st *Step[D, H]) {
	ok := e.Ret >= 0
	if st.New != nil && info.FD == trace.FDOpen {
		st.New.Node = ns.open(ns.node(e.Path), e)
		return
	}
	if info.FD == trace.FDOpen {
		ns.open(ns.node(e.Path), e) // failed: what it says of the name
		return
	}
	if st.New != nil && st.New.Node == nil && st.Desc != nil {
		st.New.Node = st.Desc.Node
	}
	var n *Node
	if st.Desc != nil {
		n = st.Desc.Node
	}
	switch info.NS {
	case trace.NSLook:
		if e.Path == 0 {
			break
		}
		m := ns.node(e.Path)
		switch {
		case ok:
			kind := KindUnknown
			if e.Op == trace.OpReadlink || e.Op == trace.OpReadlinkat {
				kind = KindSymlink
			}
			ns.present(m, kind)
			n = m
			if follows(e) {
				ns.follow(m)
			}
		case e.Ret == -enoent:
			ns.absent(m)
		}
	case trace.NSMkdir:
		m := ns.node(e.Path)
		switch {
		case ok:
			ns.make(m, KindDir)
		case e.Ret == -eexist:
			ns.present(m, KindDir)
		}
	case trace.NSRemove, trace.NSRmdir:
		m := ns.node(e.Path)
		kind := KindFile
		if info.NS == trace.NSRmdir || e.Op == trace.OpUnlinkat && e.Flags&0x200 != 0 { // AT_REMOVEDIR
			kind = KindDir
		}
		switch {
		case ok:
			ns.remove(m, kind)
		case e.Ret == -enoent:
			ns.absent(m)
		}
	case trace.NSRename:
		a, b := ns.node(e.Path), ns.node(e.Path2)
		const renameExchange = 2
		switch {
		case ok:
			ns.sized(a, e)
			ns.rename(a, b, e.Op == trace.OpRenameat2 && e.Flags&renameExchange != 0)
		case e.Ret == -enoent:
			ns.absent(a)
		}
	case trace.NSLink:
		a := n
		if e.Path != 0 {
			a = ns.node(e.Path)
		}
		b := ns.node(e.Path2)
		switch {
		case ok:
			ns.sized(a, e)
			ns.link(a, b)
		case e.Ret == -eexist:
			ns.present(b, KindUnknown)
		}
	case trace.NSSymlink:
		m := ns.node(e.Path)
		switch {
		case ok:
			ns.make(m, KindSymlink)
			if m = ns.node0(m); m != nil {
				m.Target = ns.path(e.Path2)
			}
		case e.Ret == -eexist:
			ns.present(m, KindUnknown)
		}
	case trace.NSReaddir:
		if n != nil {
			ns.present(n, KindDir)
		}
	}
	if !ok || n == nil || n.File == nil {
		return
	}
	f := n.File
	initial := n.wasThere()
	if e.Flags&trace.SizeSeen != 0 && info.Family == "stat" {
		// A stat that found a regular file of e.Size bytes (a link the
		// trace made is not that file: the size is its target's).
		if n.Kind != KindSymlink {
			f.sawSize(e.Size, initial)
		}
		return
	}
	switch info.Resize {
	case trace.ResizeSet:
		f.truncate(max(e.Size, 0))
		return
	case trace.ResizeExtend:
		const keepSize = 1 // FALLOC_FL_KEEP_SIZE
		if e.Flags&keepSize == 0 {
			f.extend(endOf(e.Offset, e.Size))
		}
		return
	}
	switch info.Dir {
	case trace.DirRead, trace.DirWrite:
		dataNS(n, e, info, st.Desc != nil && st.Desc.Append())
	case trace.DirCopy:
		f.read(e.Offset, e.Ret, e.Size, initial)
		if d2 := st.Desc2; d2 != nil && d2.Node != nil && d2.Node.File != nil {
			d2.Node.File.write(e.Offset2, e.Ret)
		}
	case trace.DirNone:
		switch {
		case e.Op == trace.OpLseek && e.Whence == 2:
			f.sawSize(e.Ret-e.Offset, initial)
		case e.Op == trace.OpMmap && e.Mode&1 != 0: // PROT_READ
			f.read(e.Offset, e.Size, e.Size, initial)
		}
	}
}

// dataNS follows a read or write that succeeded on the file of n, made
// through a description opened with O_APPEND or not.
func dataNS(n *Node, e *trace.Event, info *trace.OpInfo, appending bool) {
	f := n.File
	initial := n.wasThere()
	if info.Dir == trace.DirRead {
		f.read(e.Offset, e.Ret, e.Size, initial)
		return
	}
	if appending && info.Addr == trace.AddrIndividual {
		// An append lands at the end of the file: it was that long.
		f.appended(e.Offset, e.Ret, initial)
	} else {
		f.otherWrites = true
	}
	f.write(e.Offset, e.Ret)
}

// openHandle follows an MPI_File_open that succeeded.
func (ns *Namespace) openHandle(e *trace.Event) *Node {
	n := ns.node(e.Path)
	if n == nil {
		return nil
	}
	switch {
	case e.Flags&trace.MPIModeCreate != 0 && e.Flags&trace.MPIModeExcl != 0:
		ns.make(n, KindFile)
		n = ns.node0(n)
	case e.Flags&trace.MPIModeCreate != 0 && n.State == Unseen && n.couldExist():
		ns.maybe(n, KindFile)
	case e.Flags&trace.MPIModeCreate != 0 && n.State != Present:
		ns.make(n, KindFile)
		n = ns.node0(n)
	default:
		ns.present(n, KindFile)
	}
	return n
}

// handleCall follows an MPI-IO call on a handle open on n.
func (ns *Namespace) handleCall(e *trace.Event, info *trace.OpInfo, n *Node, v View) {
	f := n.File
	if f == nil {
		return
	}
	switch info.Resize {
	case trace.ResizeSet:
		f.truncate(max(e.Size, 0))
		return
	case trace.ResizeExtend:
		f.extend(e.Size)
		return
	}
	if info.Dir == trace.DirNone || e.Ret <= 0 || e.Offset < 0 {
		return
	}
	first, end := v.Range(e.Offset, e.Ret)
	switch info.Dir {
	case trace.DirRead:
		f.read(first, end-first, end-first, n.wasThere())
	case trace.DirWrite:
		f.write(first, end-first)
	}
}
