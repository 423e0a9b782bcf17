//go:build linux && (amd64 || arm64)

package ptrace

import "github.com/iotrace/iotrace/trace"

// file is an open file description: what open(2) creates and dup(2) and
// fork(2) share. Its position is tracked here, so that a read or write
// without an explicit offset is recorded at the offset it used.
type file struct {
	name  string       // absolute path, or the kernel's name ("pipe:[12]")
	id    trace.PathID // id in the sink, 0 until the file is first recorded
	rec   bool         // calls on it are recorded
	flags uint32       // open flags, x86-64 numbering
	pos   int64        // file position
	// posOK is false when pos may be stale: the file was learnt from
	// /proc (another process may share it unseen). The position is then
	// read from /proc/TID/fdinfo after the next call.
	posOK bool
	lazy  bool // learnt from /proc rather than seen opened
}

// lowFDs descriptors live in a slice; higher ones in a map.
const lowFDs = 1 << 16

// fdTable is a descriptor table: shared by the threads of a process and
// by processes created with CLONE_FILES, copied by fork.
type fdTable struct {
	low  []*file
	high map[int32]*file
}

func (t *fdTable) get(fd int32) *file {
	switch {
	case fd < 0:
		return nil
	case int(fd) < len(t.low):
		return t.low[fd]
	case fd >= lowFDs:
		return t.high[fd]
	}
	return nil
}

func (t *fdTable) set(fd int32, f *file) {
	switch {
	case fd < 0:
		return
	case fd < lowFDs:
		if int(fd) >= len(t.low) {
			n := max(64, 2*len(t.low), int(fd)+1)
			low := make([]*file, min(n, lowFDs))
			copy(low, t.low)
			t.low = low
		}
		t.low[fd] = f
	default:
		if t.high == nil {
			t.high = map[int32]*file{}
		}
		t.high[fd] = f
	}
}

func (t *fdTable) del(fd int32) {
	switch {
	case fd < 0:
	case int(fd) < len(t.low):
		t.low[fd] = nil
	case fd >= lowFDs:
		delete(t.high, fd)
	}
}

// clone returns a copy that shares the open file descriptions, as fork
// makes.
func (t *fdTable) clone() *fdTable {
	c := &fdTable{low: append([]*file(nil), t.low...)}
	if len(t.high) > 0 {
		c.high = make(map[int32]*file, len(t.high))
		for fd, f := range t.high {
			c.high[fd] = f
		}
	}
	return c
}

// closeRange forgets the descriptors first…last.
func (t *fdTable) closeRange(first, last uint32) {
	for fd := int(first); fd < len(t.low) && uint32(fd) <= last; fd++ {
		t.low[fd] = nil
	}
	for fd := range t.high {
		if uint32(fd) >= first && uint32(fd) <= last {
			delete(t.high, fd)
		}
	}
}

// keep forgets every descriptor not in open.
func (t *fdTable) keep(open map[int32]bool) {
	for fd := range t.low {
		if t.low[fd] != nil && !open[int32(fd)] {
			t.low[fd] = nil
		}
	}
	for fd := range t.high {
		if !open[fd] {
			delete(t.high, fd)
		}
	}
}
