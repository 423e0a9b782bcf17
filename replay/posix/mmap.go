package posix

import (
	"os"
	"runtime/debug"

	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/trace"
	"golang.org/x/sys/unix"
)

// File mappings. A trace holds the mmap, msync and munmap of a file, not
// the loads and stores the program made through the mapping: the replay
// maps the same range and touches, at the mmap, every page the program
// could have touched — each page of the mapping that lies in the file,
// read; written back unchanged where the mapping is shared and
// writable, so that an msync or the end of the mapping has dirty pages
// to write. It keeps the mapping until the trace's munmap of it (or the
// rank's end), and an msync flushes it. This is an approximation
// (docs/REPLAY.md): a program that reads a few pages of a large mapping
// costs the replay the whole range, and the loads happen at the mmap
// rather than spread over the mapping's life.

// liveMap is a mapping the replay made for a trace's mmap.
type liveMap struct {
	path trace.PathID
	off  int64 // file offset of mem[0]
	mem  []byte
}

// maxLiveMaps bounds the mappings a rank keeps: beyond it the oldest is
// released, as a program that never unmaps would otherwise hold its
// whole trace's worth of address space.
const maxLiveMaps = 4096

var pageSize = int64(os.Getpagesize())

// mmap replays an mmap of the file open on fd.
func (x *rankExec) mmap(fd int, path trace.PathID, e *trace.Event) (int64, replay.Skip) {
	if e.Size <= 0 || e.Size > 1<<40 || e.Offset < 0 || e.Offset%pageSize != 0 {
		return -int64(unix.EINVAL), replay.NotSkipped
	}
	prot := int(e.Mode) & (unix.PROT_READ | unix.PROT_WRITE)
	flags := int(e.Flags) & (unix.MAP_SHARED | unix.MAP_PRIVATE | unix.MAP_POPULATE)
	t := x.sw.Start()
	m, err := unix.Mmap(fd, e.Offset, int(e.Size), prot|unix.PROT_READ, flags)
	x.sw.Stop(t)
	if err != nil {
		return errno(err), replay.NotSkipped
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil {
		// Only the pages in the file: one beyond its end faults (SIGBUS).
		// The program's loads and stores of them are its mapping's I/O:
		// the touching is timed with the mapping.
		n := min(max(st.Size-e.Offset, 0), int64(len(m)))
		write := prot&unix.PROT_WRITE != 0 && flags&unix.MAP_SHARED != 0
		t := x.sw.Start()
		touch(m[:n], write)
		x.sw.Stop(t)
	}
	if len(x.maps) >= maxLiveMaps {
		unix.Munmap(x.maps[0].mem)
		x.maps = x.maps[1:]
	}
	x.maps = append(x.maps, liveMap{path: path, off: e.Offset, mem: m})
	return 0, replay.NotSkipped
}

// touchSink keeps the loads of touch from being optimized away.
var touchSink byte

// touch loads one byte of each page of m (and stores it back unchanged,
// with write). A page that faults all the same (another rank truncated
// the file meanwhile) ends the touching, not the replay.
func touch(m []byte, write bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() { recover() }()
	var sum byte
	for i := int64(0); i < int64(len(m)); i += pageSize {
		b := m[i]
		sum += b
		if write {
			m[i] = b
		}
	}
	touchSink += sum
}

// mapped calls fn with each live mapping of path that overlaps the file
// range [off, off+size), by index; fn returns whether to keep it.
func (x *rankExec) mapped(path trace.PathID, off, size int64, fn func(m *liveMap) bool) bool {
	found := false
	keep := x.maps[:0]
	for i := range x.maps {
		m := &x.maps[i]
		end := m.off + int64(len(m.mem))
		if m.path != path || m.off >= off+size || end <= off {
			keep = append(keep, *m)
			continue
		}
		found = true
		if fn(m) {
			keep = append(keep, *m)
		}
	}
	clear(x.maps[len(keep):])
	x.maps = keep
	return found
}

// munmap replays the end of a mapping: the replay's mappings of the file
// that the range covers whole are released (one the trace unmaps only in
// part stays until the rest goes, or the rank ends).
func (x *rankExec) munmap(e *trace.Event) (int64, replay.Skip) {
	if e.Size <= 0 {
		return -int64(unix.EINVAL), replay.NotSkipped
	}
	found := x.mapped(e.Path, e.Offset, e.Size, func(m *liveMap) bool {
		if m.off >= e.Offset && m.off+int64(len(m.mem)) <= e.Offset+e.Size {
			t := x.sw.Start()
			unix.Munmap(m.mem)
			x.sw.Stop(t)
			return false
		}
		return true
	})
	if !found {
		return 0, replay.SkipNoMapping
	}
	return 0, replay.NotSkipped
}

// msync replays a flush of (part of) a mapping on the replay's mapping
// of the same file range.
func (x *rankExec) msync(e *trace.Event) (int64, replay.Skip) {
	if e.Size <= 0 {
		return -int64(unix.EINVAL), replay.NotSkipped
	}
	flags := int(e.Flags) & (unix.MS_ASYNC | unix.MS_SYNC | unix.MS_INVALIDATE)
	var err error
	found := x.mapped(e.Path, e.Offset, e.Size, func(m *liveMap) bool {
		lo := max(e.Offset-m.off, 0) &^ (pageSize - 1)
		hi := min(e.Offset+e.Size-m.off, int64(len(m.mem)))
		if lo < hi {
			t := x.sw.Start()
			er := unix.Msync(m.mem[lo:hi], flags)
			x.sw.Stop(t)
			if er != nil && err == nil {
				err = er
			}
		}
		return true
	})
	if !found {
		return 0, replay.SkipNoMapping
	}
	if err != nil {
		return errno(err), replay.NotSkipped
	}
	return 0, replay.NotSkipped
}

// unmapAll releases the rank's mappings.
func (x *rankExec) unmapAll() {
	for _, m := range x.maps {
		unix.Munmap(m.mem)
	}
	x.maps = nil
}
