package trace

import (
	"errors"
	"fmt"
	"io"
	"sync"
)

// PathID refers to a string in a path table. 0 means "no path". Markers use
// the same table for their labels.
type PathID uint32

// Event is one call by one rank. Fields that do not apply to an op are zero.
// All times are nanoseconds; Start counts from the trace's epoch.
type Event struct {
	Op     Op
	Rank   uint32 // MPI rank (or process index) that made the call
	Thread uint32 // thread within the rank: the capture's thread index, 0 for the main thread
	Comm   uint32 // communicator id; 0 is MPI_COMM_WORLD, 1 MPI_COMM_SELF
	Start  int64  // ns since the trace epoch
	Dur    int64  // ns
	Path   PathID // file the call names or works on; a marker's label
	Path2  PathID // second path: rename's target
	FD     int32  // file descriptor, or MPI file handle id
	// FD2 and Offset2 are the second descriptor of a copy
	// (OpCopyFileRange, OpSendfile, OpSplice): the one it writes to, and
	// where it wrote.
	FD2     int32
	Offset  int64 // file offset the data op used; requested offset of a seek
	Offset2 int64
	Size    int64  // requested bytes
	Ret     int64  // result: bytes moved, new offset, new fd, 0, or -errno
	Flags   uint32 // open flags (Linux numbering) or MPI amode; dirfd-style flags of *at calls
	Mode    uint32 // permission bits of a create
	Whence  int32  // lseek/fseek/MPI_File_seek whence (0 SET, 1 CUR, 2 END)
	Count   int32  // iovec count of vector calls; element count of MPI calls
	Bytes   int64  // communication bytes this rank sends (or receives, for a receive)
	Peer    int32  // communication peer, or root of a rooted collective; -1 MPI_ANY_SOURCE
	Tag     int32  // message tag; -1 MPI_ANY_TAG
	// The receive half of an MPI_Sendrecv: the rank it receives from
	// (ProcNull: none) and the tag it receives with. They hold only when
	// Flags has RecvHalf (see RecvFrom): traces written before they were
	// recorded do not have them.
	Source  int32
	RecvTag int32
	Stride  int64 // MPI file view: stride in bytes between blocks (blocklen is Size)
}

// Flags of communication calls.
const (
	// PostedAnySource and PostedAnyTag: a receive (or the receive half
	// of an MPI_Sendrecv) was posted with MPI_ANY_SOURCE or MPI_ANY_TAG;
	// its Peer and Tag (Source and RecvTag) are those of the message it
	// matched.
	PostedAnySource uint32 = 1
	PostedAnyTag    uint32 = 2
	// RecvHalf says an MPI_Sendrecv's Source and RecvTag are recorded.
	RecvHalf uint32 = 4
)

// ProcNull is the Peer (or Source) of an MPI_Sendrecv half that moves
// nothing: MPI_PROC_NULL, as at the edge of a non-periodic shift.
const ProcNull int32 = -2

// RecvFrom returns where an MPI_Sendrecv receives from: the source rank
// and tag, and whether the trace recorded them (ok false: unknown, as in
// traces written before iotrace recorded them; a replay then receives
// from any source with the send's tag).
func (e *Event) RecvFrom() (source, tag int32, ok bool) {
	if e.Op != OpMPISendrecv || e.Flags&RecvHalf == 0 {
		return 0, 0, false
	}
	return e.Source, e.RecvTag, true
}

// SetRecvFrom records the receive half of an MPI_Sendrecv.
func (e *Event) SetRecvFrom(source, tag int32) {
	e.Source, e.RecvTag = source, tag
	e.Flags |= RecvHalf
}

// End returns the time the call returned.
func (e *Event) End() int64 { return e.Start + e.Dur }

// Well-known communicator ids.
const (
	CommWorld uint32 = 0
	CommSelf  uint32 = 1
)

// MaxPath is the longest path a trace holds from any source, in bytes:
// Linux's PATH_MAX (4096 with its terminating NUL) bounds what a call
// accepts, both captures read no more, and the importers and scripts
// refuse longer ones.
const MaxPath = 4095

// MaxRanks bounds the number of ranks a trace says it has (Meta.Ranks):
// what the binary format holds, far more than any machine runs. Ranks are
// numbered below it.
const MaxRanks = 1 << 31

// Paths is a table of strings referred to by PathID. It is safe for
// concurrent use.
type Paths struct {
	mu   sync.RWMutex
	strs []string // strs[0] is "" (PathID 0)
	ids  map[string]PathID
}

// NewPaths returns an empty table.
func NewPaths() *Paths {
	return &Paths{strs: []string{""}, ids: map[string]PathID{"": 0}}
}

// Intern returns the id of s, adding it if it is new. The empty string is 0.
func (p *Paths) Intern(s string) PathID {
	p.mu.RLock()
	id, ok := p.ids[s]
	p.mu.RUnlock()
	if ok {
		return id
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if id, ok := p.ids[s]; ok {
		return id
	}
	id = PathID(len(p.strs))
	p.strs = append(p.strs, s)
	p.ids[s] = id
	return id
}

// Lookup returns the string of id, or "" for an id the table does not hold.
func (p *Paths) Lookup(id PathID) string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if int(id) < len(p.strs) {
		return p.strs[id]
	}
	return ""
}

// Len returns the number of ids in use, counting 0.
func (p *Paths) Len() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.strs)
}

// Source is a stream of events, read in batches like io.Reader.
//
// ReadEvents fills evs with up to len(evs) events and returns how many it
// filled. At the end of the stream it returns 0, io.EOF. Paths of the
// returned events are resolved by Path, which stays valid for every id the
// source has returned.
type Source interface {
	ReadEvents(evs []Event) (int, error)
	Path(id PathID) string
}

// Sink takes events. Intern gives the id that events written to this sink
// use for a path.
type Sink interface {
	WriteEvents(evs []Event) error
	Intern(path string) PathID
}

// BatchSize is a good batch length for ReadEvents.
const BatchSize = 1024

// Copy moves every event of src to dst, translating path ids, and returns
// the number of events copied.
func Copy(dst Sink, src Source) (int64, error) {
	buf := make([]Event, BatchSize)
	var remap []PathID // src id -> dst id + 1 (0 = not yet known)
	tr := func(id PathID) PathID {
		if id == 0 {
			return 0
		}
		if int(id) >= len(remap) {
			n := make([]PathID, int(id)*2+16)
			copy(n, remap)
			remap = n
		}
		if remap[id] == 0 {
			remap[id] = dst.Intern(src.Path(id)) + 1
		}
		return remap[id] - 1
	}
	var total int64
	for {
		n, err := src.ReadEvents(buf)
		for i := range buf[:n] {
			buf[i].Path = tr(buf[i].Path)
			buf[i].Path2 = tr(buf[i].Path2)
		}
		if n > 0 {
			if werr := dst.WriteEvents(buf[:n]); werr != nil {
				return total, werr
			}
			total += int64(n)
		}
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// SliceSource is a Source over events held in memory, with their own
// path table. It is meant for tests and small generated traces.
type SliceSource struct {
	Events []Event
	Paths  *Paths
	pos    int
}

// ReadEvents implements Source.
func (s *SliceSource) ReadEvents(evs []Event) (int, error) {
	if s.pos >= len(s.Events) {
		return 0, io.EOF
	}
	n := copy(evs, s.Events[s.pos:])
	s.pos += n
	return n, nil
}

// Path implements Source.
func (s *SliceSource) Path(id PathID) string { return s.Paths.Lookup(id) }

// SliceSink collects events in memory.
type SliceSink struct {
	Events []Event
	Paths  *Paths
}

// NewSliceSink returns an empty sink with its own path table.
func NewSliceSink() *SliceSink { return &SliceSink{Paths: NewPaths()} }

// WriteEvents implements Sink.
func (s *SliceSink) WriteEvents(evs []Event) error {
	s.Events = append(s.Events, evs...)
	return nil
}

// Intern implements Sink.
func (s *SliceSink) Intern(path string) PathID { return s.Paths.Intern(path) }

// ReadAll reads src to its end. For tests and small traces only.
func ReadAll(src Source) ([]Event, error) {
	var out []Event
	buf := make([]Event, BatchSize)
	for {
		n, err := src.ReadEvents(buf)
		out = append(out, buf[:n]...)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// Errno formats a negative result as an errno name ("ENOENT"), or "" for a
// non-negative one.
func Errno(ret int64) string {
	if ret >= 0 {
		return ""
	}
	if name, ok := errnoNames[-ret]; ok {
		return name
	}
	return fmt.Sprintf("E%d", -ret)
}
