package format

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"

	"github.com/iotrace/iotrace/trace"
	"github.com/klauspost/compress/zstd"
)

// Options tune a Writer.
type Options struct {
	// BlockEvents is the most events a block holds (default 16384). A crash
	// loses at most the events of the blocks being filled.
	BlockEvents int
	// BlockBytes bounds the raw (pre-compression) column bytes of a block
	// (default 512 KiB); with many ranks it bounds the writer's memory.
	BlockBytes int
}

func (o *Options) defaults() {
	if o.BlockEvents <= 0 {
		o.BlockEvents = 16384
	}
	o.BlockEvents = min(o.BlockEvents, MaxBlockEvents)
	if o.BlockBytes <= 0 {
		o.BlockBytes = 512 << 10
	}
}

// Writer writes a trace file. Each rank's events go through its own
// RankWriter; different ranks may be written from different goroutines.
type Writer struct {
	opts   Options
	mu     sync.Mutex // guards the output, off, blocks, err
	bw     *bufio.Writer
	closer io.Closer
	off    int64
	blocks []BlockInfo
	err    error
	closed bool

	paths *trace.Paths
	enc   *zstd.Encoder

	rmu   sync.Mutex
	ranks map[uint32]*RankWriter
	// The ranks with a block open (an encoder), oldest first, and how
	// many: beyond maxOpenBlocks the oldest is written out early, so that
	// a trace of many ranks costs the writer the encoders of at most that
	// many, not one per rank (guarded by rmu).
	open  openList
	nopen int
}

// maxOpenBlocks bounds the ranks whose blocks are open at once: an open
// block holds an encoder of a few KiB to BlockBytes.
const maxOpenBlocks = 1024

// openList is a list of RankWriters linked through their prev and next.
type openList struct{ head, tail *RankWriter }

func (l *openList) push(rw *RankWriter) {
	rw.prev, rw.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = rw
	} else {
		l.head = rw
	}
	l.tail = rw
}

func (l *openList) remove(rw *RankWriter) {
	if rw.prev != nil {
		rw.prev.next = rw.next
	} else {
		l.head = rw.next
	}
	if rw.next != nil {
		rw.next.prev = rw.prev
	} else {
		l.tail = rw.prev
	}
	rw.prev, rw.next = nil, nil
}

// Create creates (or truncates) the file path and returns a Writer on it.
func Create(path string, m trace.Meta) (*Writer, error) {
	return CreateOptions(path, m, Options{})
}

// CreateOptions is Create with options.
func CreateOptions(path string, m trace.Meta, o Options) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w, err := NewWriterOptions(f, m, o)
	if err != nil {
		f.Close()
		return nil, err
	}
	w.closer = f
	return w, nil
}

// NewWriter writes the header of a trace to w and returns a Writer for its
// blocks. Close does not close w.
func NewWriter(w io.Writer, m trace.Meta) (*Writer, error) {
	return NewWriterOptions(w, m, Options{})
}

// NewWriterOptions is NewWriter with options.
func NewWriterOptions(w io.Writer, m trace.Meta, o Options) (*Writer, error) {
	o.defaults()
	// What the reader refuses is not written.
	if m.Ranks < 0 || m.Ranks > trace.MaxRanks {
		return nil, fmt.Errorf("rank count %d out of range: a trace holds at most %d ranks", m.Ranks, trace.MaxRanks)
	}
	body := encodeMeta(m)
	if len(body) > maxHeaderLen {
		return nil, fmt.Errorf("header of %d bytes: the format holds at most %d", len(body), maxHeaderLen)
	}
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)),
		zstd.WithZeroFrames(true),
		zstd.WithEncoderCRC(false),
		zstd.WithLowerEncoderMem(true),
		zstd.WithWindowSize(1<<20))
	if err != nil {
		return nil, err
	}
	wr := &Writer{
		opts:  o,
		bw:    bufio.NewWriterSize(w, 256<<10),
		paths: trace.NewPaths(),
		enc:   enc,
		ranks: map[uint32]*RankWriter{},
	}
	hdr := make([]byte, 0, fileHeaderLen+len(body)+4)
	hdr = append(hdr, Magic...)
	hdr = binary.LittleEndian.AppendUint16(hdr, Version)
	hdr = binary.LittleEndian.AppendUint16(hdr, 0)
	hdr = binary.LittleEndian.AppendUint32(hdr, uint32(len(body)))
	hdr = append(hdr, body...)
	hdr = binary.LittleEndian.AppendUint32(hdr, crc(body))
	if _, err := wr.bw.Write(hdr); err != nil {
		return nil, err
	}
	wr.off = int64(len(hdr))
	return wr, nil
}

// Intern returns the id events written to this Writer use for path.
func (w *Writer) Intern(path string) trace.PathID { return w.paths.Intern(path) }

// Path returns the path of id, an id Intern returned ("" for another).
// It is safe to call while other goroutines write.
func (w *Writer) Path(id trace.PathID) string { return w.paths.Lookup(id) }

// Rank returns the writer of rank r's stream, creating it on first use.
func (w *Writer) Rank(r uint32) *RankWriter {
	w.rmu.Lock()
	defer w.rmu.Unlock()
	rw := w.ranks[r]
	if rw == nil {
		rw = &RankWriter{w: w, rank: r}
		w.ranks[r] = rw
	}
	return rw
}

// WriteEvents writes events to the streams of their ranks. It is meant for
// a single goroutine that produces events of all ranks (a converter); with
// one goroutine per rank, use Rank.
func (w *Writer) WriteEvents(evs []trace.Event) error {
	for len(evs) > 0 {
		r := evs[0].Rank
		n := 1
		for n < len(evs) && evs[n].Rank == r {
			n++
		}
		if err := w.Rank(r).WriteEvents(evs[:n]); err != nil {
			return err
		}
		evs = evs[n:]
	}
	return nil
}

// SetRankInfo records the wall-clock epoch of rank r's times (if it differs
// from the header's), its host and process id. Call it before writing the
// rank's events.
func (w *Writer) SetRankInfo(r uint32, epoch int64, host string, pid int) error {
	var f fields
	f.varint(fieldEpoch, epoch)
	if host != "" {
		f.str(fieldHost, host)
	}
	if pid > 0 {
		f.uvarint(fieldPID, uint64(pid))
	}
	p := binary.AppendUvarint(nil, uint64(r))
	p = append(p, f...)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writeBlockLocked(kindRankInfo, p, BlockInfo{Rank: r})
}

// Flush writes every partial block and flushes the output, so that what
// was written so far survives a crash of the writing process.
func (w *Writer) Flush() error {
	w.rmu.Lock()
	rws := make([]*RankWriter, 0, len(w.ranks))
	for _, rw := range w.ranks {
		rws = append(rws, rw)
	}
	w.rmu.Unlock()
	// In rank order, so that the same events always make the same file.
	slices.SortFunc(rws, func(a, b *RankWriter) int { return cmp.Compare(a.rank, b.rank) })
	for _, rw := range rws {
		if err := rw.Flush(); err != nil {
			return err
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = w.bw.Flush()
	}
	return w.err
}

// Close flushes every rank, writes the index and the trailer, and closes
// the file if the Writer created it.
func (w *Writer) Close() error {
	err := w.Flush()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return err
	}
	if err == nil {
		err = w.writeIndexLocked()
	}
	w.closed = true
	if err == nil {
		err = w.bw.Flush()
	}
	w.enc.Close()
	if w.closer != nil {
		if cerr := w.closer.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// writeBlockLocked frames payload as a block of kind and writes it.
func (w *Writer) writeBlockLocked(kind uint8, payload []byte, info BlockInfo) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("write to a closed trace writer")
	}
	if len(payload) > maxBlockLen {
		return fmt.Errorf("block of %d bytes exceeds the format's limit", len(payload))
	}
	var h [blockHeaderLen]byte
	copy(h[:], blockMagic)
	h[4] = kind
	binary.LittleEndian.PutUint32(h[8:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(h[12:], crc(h[4:12], payload))
	if _, err := w.bw.Write(h[:]); err != nil {
		w.err = err
		return err
	}
	if _, err := w.bw.Write(payload); err != nil {
		w.err = err
		return err
	}
	info.Offset, info.Length, info.Kind = w.off, int64(len(payload)), kind
	w.blocks = append(w.blocks, info)
	w.off += blockHeaderLen + int64(len(payload))
	return nil
}

func (w *Writer) writeIndexLocked() error {
	p := appendIndex(nil, w.blocks)
	off := w.off
	if err := w.writeBlockLocked(kindIndex, p, BlockInfo{}); err != nil {
		return err
	}
	var t [trailerLen]byte
	copy(t[:], trailerMagic)
	binary.LittleEndian.PutUint64(t[8:], uint64(off))
	if _, err := w.bw.Write(t[:]); err != nil {
		w.err = err
		return err
	}
	w.off += trailerLen
	return nil
}

// appendIndex encodes the block list of an index block.
func appendIndex(b []byte, blocks []BlockInfo) []byte {
	b = binary.AppendUvarint(b, uint64(len(blocks)))
	var prev int64
	for _, bi := range blocks {
		b = binary.AppendUvarint(b, uint64(bi.Offset-prev))
		prev = bi.Offset
		b = append(b, bi.Kind)
		b = binary.AppendUvarint(b, uint64(bi.Length))
		b = binary.AppendUvarint(b, uint64(bi.Rank))
		if bi.Kind == kindEvents {
			b = appendSummary(b, bi.Rank, bi.Events, bi.MinT, bi.MaxT, bi.Ops)
		}
	}
	return b
}

// RankWriter writes the event stream of one rank. It implements
// trace.Sink. Its methods may be called from one goroutine at a time,
// concurrently with other ranks' writers and with Writer.Flush.
type RankWriter struct {
	w    *Writer
	rank uint32

	mu         sync.Mutex
	enc        *colEncoder               // the open block's, nil when none is open
	emitted    map[trace.PathID]struct{} // file path ids already defined in this rank's stream
	pending    []trace.PathID
	prev, next *RankWriter // in Writer.open, while enc is set
}

var (
	encoders = newFreeList[colEncoder]()
	payloads = newFreeList[[]byte]() // a block's bytes, until they are written
)

// openBlock gives the rank an encoder, and writes out the block of the
// rank that opened one longest ago if too many are open. rw.mu is held.
func (rw *RankWriter) openBlock() {
	rw.enc = encoders.get()
	w := rw.w
	w.rmu.Lock()
	w.open.push(rw)
	w.nopen++
	// A few tries, each at the oldest block: a rank being written is busy,
	// not old, and goes to the back. Walking the list past busy ranks
	// instead made 100,000 ranks writing at once quadratic (80 s of
	// TryLock); when every try meets a busy rank, more blocks stay open
	// for a while, at most one per rank being written.
	for tries := 0; w.nopen > maxOpenBlocks && tries < 8; tries++ {
		v := w.open.head
		if v == nil {
			break
		}
		if v == rw || !v.mu.TryLock() {
			w.open.remove(v)
			w.open.push(v)
			continue
		}
		w.rmu.Unlock()
		err := v.flushLocked()
		v.mu.Unlock()
		w.rmu.Lock()
		if err != nil {
			break // the output's error, which every later write returns
		}
	}
	w.rmu.Unlock()
}

// closeBlock returns the rank's encoder after its block is written.
// rw.mu is held.
func (rw *RankWriter) closeBlock() {
	w := rw.w
	w.rmu.Lock()
	w.open.remove(rw)
	w.nopen--
	w.rmu.Unlock()
	rw.enc.reset()
	encoders.put(rw.enc)
	rw.enc = nil
}

// Intern implements trace.Sink.
func (rw *RankWriter) Intern(path string) trace.PathID { return rw.w.Intern(path) }

// WriteEvents implements trace.Sink. The events' Rank fields are ignored:
// they belong to this writer's rank.
func (rw *RankWriter) WriteEvents(evs []trace.Event) error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	for len(evs) > 0 {
		if rw.enc == nil {
			rw.openBlock()
		}
		// Fill the block, but not past its limits.
		k := min(len(evs), rw.w.opts.BlockEvents-rw.enc.n, 256)
		rw.enc.addEvents(evs[:k])
		for _, id := range rw.enc.newPaths {
			rw.define(id)
		}
		evs = evs[k:]
		if rw.enc.n >= rw.w.opts.BlockEvents || rw.enc.rawSize() >= rw.w.opts.BlockBytes {
			if err := rw.flushLocked(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (rw *RankWriter) define(id trace.PathID) {
	if id == 0 {
		return
	}
	// A set of the ids, not a slice as long as the largest: ids are the
	// file's, and with a path per rank rank r's would be r long.
	if _, ok := rw.emitted[id]; !ok {
		if rw.emitted == nil {
			rw.emitted = map[trace.PathID]struct{}{}
		}
		rw.emitted[id] = struct{}{}
		rw.pending = append(rw.pending, id)
	}
}

// Flush writes the partial block of this rank, if any.
func (rw *RankWriter) Flush() error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.flushLocked()
}

func (rw *RankWriter) flushLocked() error {
	if rw.enc == nil {
		return nil
	}
	if rw.enc.n == 0 {
		rw.closeBlock()
		return nil
	}
	// Paths first: a block never refers to a path defined after it.
	var strs []byte
	if len(rw.pending) > 0 {
		strs = binary.AppendUvarint(strs, uint64(rw.rank))
		strs = binary.AppendUvarint(strs, uint64(len(rw.pending)))
		for _, id := range rw.pending {
			s := rw.w.paths.Lookup(id)
			strs = binary.AppendUvarint(strs, uint64(id))
			strs = binary.AppendUvarint(strs, uint64(len(s)))
			strs = append(strs, s...)
		}
		rw.pending = rw.pending[:0]
	}

	ops := rw.enc.opTotals()
	info := BlockInfo{Rank: rw.rank, Events: int64(rw.enc.n), MinT: rw.enc.minT, MaxT: rw.enc.maxT, Ops: ops}

	buf := payloads.get()
	defer payloads.put(buf)
	p := appendSummary((*buf)[:0], rw.rank, info.Events, info.MinT, info.MaxT, ops)
	p = rw.enc.appendColumns(p, rw.w.enc)
	*buf = p
	rw.closeBlock()

	rw.w.mu.Lock()
	defer rw.w.mu.Unlock()
	if strs != nil {
		if err := rw.w.writeBlockLocked(kindStrings, strs, BlockInfo{Rank: rw.rank}); err != nil {
			return err
		}
	}
	return rw.w.writeBlockLocked(kindEvents, p, info)
}
