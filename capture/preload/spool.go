package preload

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// The spool layout (shim/shim.h; docs/FORMAT.md "Preload spool"): a
// header of headerSize bytes, then records of recSize bytes. A record's
// first word is its commit: 0 while unwritten, recCommit | n once its n
// slots (the record and the path bytes after it) are complete.
const (
	spoolMagic   = "IOTSPOOL"
	spoolVersion = 1
	headerSize   = 4096
	recSize      = 96
	recCommit    = 0x52000000
	maxPath      = 4095
	ringMagic    = "IOTRING1"
)

// Record flags (shim.h RF_*).
const (
	rfInMPIIO    = 1
	rfAnySource  = 2
	rfAnyTag     = 4
	rfPathAt     = 8
	rfRecvHalf   = 16 // MPI_Sendrecv: Off and Size hold its receive half's source and tag
	rfPath2At    = 32 // the second path is relative to the directory descriptor in Peer
	knownRFFlags = rfInMPIIO | rfAnySource | rfAnyTag | rfPathAt | rfRecvHalf | rfPath2At
)

// Header describes the process that wrote a spool.
type Header struct {
	PID, PPID  uint32
	Rank, Size int32  // MPI rank and size, -1 when the process made no MPI_Init
	Dropped    uint32 // records the shim could not write (its spool could not grow)
	MonoStart  int64  // CLOCK_MONOTONIC ns when the shim started
	RealStart  int64  // CLOCK_REALTIME ns at the same moment
	Cmdline    []string
	Cwd        string
	// ProcStart is the process's start time (clock ticks since boot):
	// the same in every image of a process (exec), different in another
	// process that got the same pid. 0 in spools of shims that did not
	// record it.
	ProcStart uint64
	// Exe is the program (/proc/self/exe), "" when the shim did not
	// record it (a path longer than the header holds, an older shim).
	Exe string
}

// Header offsets of the process's start time and program.
const (
	offProcStart = 3136
	offExe       = 3328
	maxExe       = 760
)

// Record is one call as the shim recorded it (shim.h struct rec).
type Record struct {
	Call   uint16
	Flags  uint16
	Tid    uint32
	FD     int32
	Start  int64 // CLOCK_MONOTONIC ns
	Dur    int64
	Off    int64
	Size   int64
	Ret    int64
	Bytes  int64
	OFlags uint32
	Mode   uint32
	Peer   int32
	Tag    int32
	Comm   uint32
	Count  int32
	Seq    uint32 // the slot number the shim gave the record (low 32 bits)
	Path   string
	Path2  string
}

// Spool is one process's spool file.
type Spool struct {
	Name   string
	Header Header
	r      io.ReaderAt
	size   int64
	closer io.Closer
}

// SpoolError is a damaged spool: the file and the byte offset.
type SpoolError struct {
	Name   string
	Offset int64
	Msg    string
}

func (e *SpoolError) Error() string {
	return fmt.Sprintf("%s: offset %d: %s", e.Name, e.Offset, e.Msg)
}

// OpenSpool opens a spool file and reads its header.
func OpenSpool(name string) (*Spool, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	s, err := NewSpool(name, f, st.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	s.closer = f
	return s, nil
}

// NewSpool reads a spool of size bytes from r; name names it in errors.
func NewSpool(name string, r io.ReaderAt, size int64) (*Spool, error) {
	s := &Spool{Name: name, r: r, size: size}
	if size < headerSize {
		return nil, &SpoolError{name, size, fmt.Sprintf("shorter than its header (%d bytes)", headerSize)}
	}
	h := make([]byte, headerSize)
	if _, err := r.ReadAt(h, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if string(h[:8]) != spoolMagic {
		if bytes.Equal(h[:8], make([]byte, 8)) {
			return nil, &SpoolError{name, 0, "no header: the process ended while the shim started"}
		}
		return nil, &SpoolError{name, 0, "not an iotrace spool (bad magic)"}
	}
	le := binary.LittleEndian
	if v := le.Uint32(h[8:]); v != spoolVersion {
		return nil, &SpoolError{name, 8, fmt.Sprintf("spool version %d, this iotrace reads version %d", v, spoolVersion)}
	}
	if rs, hs := le.Uint32(h[12:]), le.Uint32(h[16:]); rs != recSize || hs != headerSize {
		return nil, &SpoolError{name, 12, fmt.Sprintf("record size %d and header size %d, want %d and %d", rs, hs, recSize, headerSize)}
	}
	hd := &s.Header
	hd.PID, hd.PPID = le.Uint32(h[20:]), le.Uint32(h[24:])
	hd.Rank, hd.Size = int32(le.Uint32(h[28:])), int32(le.Uint32(h[32:]))
	hd.Dropped = le.Uint32(h[36:])
	hd.MonoStart, hd.RealStart = int64(le.Uint64(h[40:])), int64(le.Uint64(h[48:]))
	if n := le.Uint32(h[56:]); n > 1024 {
		return nil, &SpoolError{name, 56, fmt.Sprintf("command line of %d bytes (at most 1024)", n)}
	} else if n > 0 {
		hd.Cmdline = strings.Split(strings.TrimRight(string(h[60:60+n]), "\x00"), "\x00")
	}
	if n := le.Uint32(h[1084:]); n > 2048 {
		return nil, &SpoolError{name, 1084, fmt.Sprintf("working directory of %d bytes (at most 2048)", n)}
	} else {
		hd.Cwd = string(h[1088 : 1088+n])
	}
	hd.ProcStart = le.Uint64(h[offProcStart:])
	if n := le.Uint32(h[offExe:]); n > maxExe {
		return nil, &SpoolError{name, offExe, fmt.Sprintf("program name of %d bytes (at most %d)", n, maxExe)}
	} else {
		hd.Exe = string(h[offExe+4 : offExe+4+n])
	}
	if hd.Rank < -1 || hd.Size < -1 || (hd.Size > 0 && hd.Rank >= hd.Size) {
		return nil, &SpoolError{name, 28, fmt.Sprintf("MPI rank %d of %d", hd.Rank, hd.Size)}
	}
	return s, nil
}

// Close closes the spool file.
func (s *Spool) Close() error {
	if s.closer != nil {
		return s.closer.Close()
	}
	return nil
}

// ReadStats says what a Scanner found.
type ReadStats struct {
	Records int64
	// Incomplete counts slots that were taken but not written before
	// the last complete record: calls in progress when the process died.
	Incomplete int64
}

// Records calls fn for every complete record, in the order the shim
// wrote them (the order calls ended). A damaged record ends the reading
// with a *SpoolError; fn has seen every record before it.
func (s *Spool) Records(fn func(*Record) error) (ReadStats, error) {
	sc := s.Scan()
	var rec Record
	for {
		ok, err := sc.Next(&rec)
		if err != nil || !ok {
			return sc.Stats, err
		}
		if err := fn(&rec); err != nil {
			return sc.Stats, err
		}
	}
}

// Scanner reads the records of a spool one at a time.
type Scanner struct {
	s      *Spool
	off    int64
	buf    []byte
	bufOff int64
	holes  int64
	Stats  ReadStats
}

// Scan returns a Scanner of s's records.
func (s *Spool) Scan() *Scanner {
	return &Scanner{s: s, off: headerSize, bufOff: headerSize}
}

const scanWindow = 1 << 20 / recSize * recSize

// fill returns the n bytes at off.
func (sc *Scanner) fill(off int64, n int) ([]byte, error) {
	if off >= sc.bufOff && off+int64(n) <= sc.bufOff+int64(len(sc.buf)) {
		return sc.buf[off-sc.bufOff : off-sc.bufOff+int64(n)], nil
	}
	want := int64(max(n, scanWindow))
	if rest := sc.s.size - off; want > rest {
		want = rest
	}
	if want < int64(n) {
		return nil, &SpoolError{sc.s.Name, off, "record runs past the end of the file"}
	}
	if int64(cap(sc.buf)) < want {
		sc.buf = make([]byte, want, max(want, min(scanWindow, sc.s.size)))
	}
	sc.buf = sc.buf[:want]
	if _, err := sc.s.r.ReadAt(sc.buf, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", sc.s.Name, err)
	}
	sc.bufOff = off
	return sc.buf[:n], nil
}

// Next reads the next complete record into rec; false at the end. A
// damaged record is a *SpoolError.
func (sc *Scanner) Next(rec *Record) (bool, error) {
	s := sc.s
	le := binary.LittleEndian
	for sc.off+recSize <= s.size {
		off := sc.off
		b, err := sc.fill(off, recSize)
		if err != nil {
			return false, err
		}
		commit := le.Uint32(b)
		if commit == 0 {
			sc.holes++
			sc.off += recSize
			continue
		}
		if commit&0xff000000 != recCommit {
			return false, &SpoolError{s.Name, off, fmt.Sprintf("bad record commit word %#x", commit)}
		}
		slots := int64(commit & 0xffffff)
		l1, l2 := uint32(le.Uint16(b[88:])), uint32(le.Uint16(b[90:]))
		if l1 > maxPath || l2 > maxPath {
			return false, &SpoolError{s.Name, off, fmt.Sprintf("path of %d bytes (at most %d)", max(l1, l2), maxPath)}
		}
		if want := 1 + (int64(l1)+int64(l2)+recSize-1)/recSize; slots != want {
			return false, &SpoolError{s.Name, off, fmt.Sprintf("record spans %d slots, its paths need %d", slots, want)}
		}
		*rec = Record{
			Call: le.Uint16(b[4:]), Flags: le.Uint16(b[6:]), Tid: le.Uint32(b[8:]), FD: int32(le.Uint32(b[12:])),
			Start: int64(le.Uint64(b[16:])), Dur: int64(le.Uint64(b[24:])), Off: int64(le.Uint64(b[32:])),
			Size: int64(le.Uint64(b[40:])), Ret: int64(le.Uint64(b[48:])), Bytes: int64(le.Uint64(b[56:])),
			OFlags: le.Uint32(b[64:]), Mode: le.Uint32(b[68:]), Peer: int32(le.Uint32(b[72:])), Tag: int32(le.Uint32(b[76:])),
			Comm: le.Uint32(b[80:]), Count: int32(le.Uint32(b[84:])), Seq: le.Uint32(b[92:]),
		}
		if rec.Flags&^knownRFFlags != 0 {
			return false, &SpoolError{s.Name, off, fmt.Sprintf("unknown record flags %#x", rec.Flags)}
		}
		if rec.Dur < 0 {
			return false, &SpoolError{s.Name, off, fmt.Sprintf("negative duration %d", rec.Dur)}
		}
		if l1+l2 > 0 {
			p, err := sc.fill(off+recSize, int(l1+l2))
			if err != nil {
				return false, err
			}
			rec.Path, rec.Path2 = string(p[:l1]), string(p[l1:l1+l2])
		}
		sc.Stats.Incomplete += sc.holes
		sc.holes = 0
		sc.Stats.Records++
		sc.off += slots * recSize
		return true, nil
	}
	return false, nil
}
