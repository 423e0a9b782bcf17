package trace

// Handles follows the descriptors and MPI file handles of one rank's
// stream, so that a call that names only a descriptor can be given the
// path it was opened on. Feed it every event of the stream in order:
//
//	var h trace.Handles
//	for each event e {
//		path := h.Path(&e) // the file e works on, 0 if unknown
//		h.Observe(&e)      // learn what e did to the handles
//	}
//
// The zero value is ready to use.
type Handles struct {
	fds  map[int32]PathID
	mpi  map[int32]PathID
	refs map[PathID]int // descriptors and handles open on each path
}

// Refs returns how many descriptors and MPI file handles are open on p.
func (h *Handles) Refs(p PathID) int { return h.refs[p] }

// Path returns the path e works on: its own Path if it has one, else the
// path its descriptor or MPI file handle was opened on (0 when unknown).
// A marker's label is not a path: Path returns 0 for markers and for
// communication.
func (h *Handles) Path(e *Event) PathID {
	switch e.Op.Class() {
	case ClassMarker, ClassComm, ClassUnknown:
		return 0
	}
	if e.Path != 0 {
		return e.Path
	}
	if e.Op.Class() == ClassMPIIO {
		return h.mpi[e.FD]
	}
	return h.fds[e.FD]
}

// Opened returns the path the descriptor or MPI file handle of e was
// opened on, when the stream showed that open: for a POSIX call on a
// descriptor, or an MPI-IO call on a file handle. That path is the file
// the call reaches even where its own Path differs (a name given
// relative at the open and absolute later, a rename since). Opens name a
// path, not a descriptor (an openat's FD is its directory's), and other
// calls name a path or nothing: for them it returns false.
func (h *Handles) Opened(e *Event) (PathID, bool) {
	var p PathID
	var ok bool
	switch e.Op.Class() {
	case ClassPOSIX:
		switch e.Op {
		case OpOpen, OpOpenat, OpOpenat2, OpCreat, OpFopen:
			return 0, false
		}
		p, ok = h.fds[e.FD]
	case ClassMPIIO:
		if e.Op == OpMPIFileOpen || e.Op == OpMPIFileDelete {
			return 0, false
		}
		p, ok = h.mpi[e.FD]
	}
	return p, ok
}

// Observe updates the handles with what e did: opens and dups add a
// descriptor, closes remove it.
func (h *Handles) Observe(e *Event) {
	switch e.Op {
	case OpOpen, OpOpenat, OpOpenat2, OpCreat, OpFopen:
		if e.Ret < 0 || e.Path == 0 {
			return
		}
		fd := int32(e.Ret)
		if e.Op == OpFopen && e.FD != 0 {
			fd = e.FD // fopen's result is a stream; FD holds its descriptor
		}
		h.setFD(fd, e.Path)
	case OpClose, OpFclose:
		h.closeFD(e.FD)
	case OpCloseRange:
		if e.Flags&CloseRangeCloexec != 0 {
			return
		}
		for fd := range h.fds {
			if int64(fd) >= int64(e.FD) && int64(fd) <= e.Size {
				h.closeFD(fd)
			}
		}
	case OpDup, OpDup2, OpDup3, OpFcntl:
		if e.Ret < 0 {
			return
		}
		p := e.Path
		if p == 0 {
			p = h.fds[e.FD]
		}
		if p != 0 {
			h.setFD(int32(e.Ret), p)
		}
	case OpMPIFileOpen:
		if e.Ret >= 0 && e.Path != 0 {
			if h.mpi == nil {
				h.mpi = map[int32]PathID{}
			}
			if old, ok := h.mpi[e.FD]; ok {
				h.unref(old)
			}
			h.mpi[e.FD] = e.Path
			h.ref(e.Path)
		}
	case OpMPIFileClose:
		if old, ok := h.mpi[e.FD]; ok {
			delete(h.mpi, e.FD)
			h.unref(old)
		}
	}
}

// CloseRangeCloexec is CLOSE_RANGE_CLOEXEC in a close_range's Flags: it
// only marks the descriptors close-on-exec, it closes none.
const CloseRangeCloexec = 4

func (h *Handles) setFD(fd int32, p PathID) {
	if h.fds == nil {
		h.fds = map[int32]PathID{}
	}
	h.closeFD(fd) // dup2 onto an open descriptor closes it first
	h.fds[fd] = p
	h.ref(p)
}

func (h *Handles) closeFD(fd int32) {
	if old, ok := h.fds[fd]; ok {
		delete(h.fds, fd)
		h.unref(old)
	}
}

func (h *Handles) ref(p PathID) {
	if h.refs == nil {
		h.refs = map[PathID]int{}
	}
	h.refs[p]++
}

func (h *Handles) unref(p PathID) {
	if h.refs[p] <= 1 {
		delete(h.refs, p)
		return
	}
	h.refs[p]--
}
