package format

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/iotrace/iotrace/trace"
	"github.com/klauspost/compress/huff0"
	"github.com/klauspost/compress/zstd"
)

// ReadOptions tune a Reader.
type ReadOptions struct {
	// Salvage reads past damaged blocks (bad CRC, bad framing) instead of
	// failing; each one skipped is reported in Warnings.
	Salvage bool
	// RawClocks gives each rank's times as its own clock read them,
	// without the offsets to the reference clock its capture measured
	// (Clock).
	RawClocks bool
}

// Damage is a damaged region of a file.
type Damage struct {
	File   string
	Offset int64
	Reason string
}

func (d Damage) String() string { return fmt.Sprintf("%s: offset %d: %s", d.File, d.Offset, d.Reason) }

// file is one trace file of a Reader.
type file struct {
	name      string
	ra        io.ReaderAt
	closer    io.Closer
	size      int64
	meta      trace.Meta
	dataStart int64       // offset of the first block
	blocks    []BlockInfo // every complete, intact block, in file order
	indexed   bool        // the blocks came from the file's index
	truncated string      // why the scan stopped early, if it did
	damage    []Damage
}

// readHeader reads and checks the file header.
func readHeader(name string, ra io.ReaderAt, size int64) (trace.Meta, int64, error) {
	var h [fileHeaderLen]byte
	if size == 0 {
		return trace.Meta{}, 0, formatError(name, -1, "%s", emptyFile)
	}
	if size < fileHeaderLen {
		if n, _ := ra.ReadAt(h[:size], 0); n >= 4 && !bytes.HasPrefix([]byte(Magic), h[:min(n, len(Magic))]) {
			return trace.Meta{}, 0, formatError(name, -1, "not an iotrace trace file (bad magic)")
		}
		return trace.Meta{}, 0, formatError(name, -1, "file of %d bytes is shorter than a trace header", size)
	}
	if _, err := ra.ReadAt(h[:], 0); err != nil {
		return trace.Meta{}, 0, fmt.Errorf("%s: %w", name, err)
	}
	if string(h[:8]) != Magic {
		return trace.Meta{}, 0, formatError(name, -1, "not an iotrace trace file (bad magic)")
	}
	if v := binary.LittleEndian.Uint16(h[8:]); v != Version {
		return trace.Meta{}, 0, formatError(name, -1, "trace format version %d; this iotrace reads version %d", v, Version)
	}
	bl := int64(binary.LittleEndian.Uint32(h[12:]))
	if bl > maxHeaderLen || fileHeaderLen+bl+4 > size {
		return trace.Meta{}, 0, formatError(name, 12, "header length %d runs past the end of the file", bl)
	}
	body := make([]byte, bl+4)
	if _, err := ra.ReadAt(body, fileHeaderLen); err != nil {
		return trace.Meta{}, 0, fmt.Errorf("%s: %w", name, err)
	}
	if crc(body[:bl]) != binary.LittleEndian.Uint32(body[bl:]) {
		return trace.Meta{}, 0, formatError(name, fileHeaderLen, "header CRC mismatch")
	}
	m, err := decodeMeta(body[:bl])
	if err != nil {
		return trace.Meta{}, 0, formatError(name, fileHeaderLen, "header: %v", err)
	}
	return m, fileHeaderLen + bl + 4, nil
}

func openFile(name string, opts ReadOptions) (*file, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%s: is a directory", name)
	}
	tf, err := newFile(name, f, st.Size(), opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	tf.closer = f
	return tf, nil
}

// newFile reads the header and the block list of a file: from its index
// when it has a sound one, else by scanning every block.
func newFile(name string, ra io.ReaderAt, size int64, opts ReadOptions) (*file, error) {
	m, start, err := readHeader(name, ra, size)
	if err != nil {
		return nil, err
	}
	tf := &file{name: name, ra: ra, size: size, meta: m, dataStart: start}
	if blocks, ok := tf.readIndex(); ok {
		tf.blocks, tf.indexed = blocks, true
		return tf, nil
	}
	tf.scan(true)
	if len(tf.damage) > 0 && !opts.Salvage {
		d := tf.damage[0]
		return nil, formatError(name, d.Offset, "%s (iotrace check tells more; --salvage reads past it)", d.Reason)
	}
	return tf, nil
}

// readIndex reads the trailer and index. It returns false if either is
// missing or unsound, in which case the caller scans.
func (tf *file) readIndex() ([]BlockInfo, bool) {
	if tf.size < tf.dataStart+blockHeaderLen+trailerLen {
		return nil, false
	}
	var t [trailerLen]byte
	if _, err := tf.ra.ReadAt(t[:], tf.size-trailerLen); err != nil || string(t[:8]) != trailerMagic {
		return nil, false
	}
	off := int64(binary.LittleEndian.Uint64(t[8:]))
	if off < tf.dataStart || off > tf.size-trailerLen-blockHeaderLen {
		return nil, false
	}
	kind, payload, err := tf.readBlock(off, nil)
	if err != nil || kind != kindIndex || off+blockHeaderLen+int64(len(payload)) != tf.size-trailerLen {
		return nil, false
	}
	blocks, err := parseIndex(payload, tf.dataStart, off)
	if err != nil {
		return nil, false
	}
	return blocks, true
}

func parseIndex(p []byte, start, end int64) ([]BlockInfo, error) {
	d := &decoder{b: p}
	n := d.count(4)
	blocks := make([]BlockInfo, 0, n)
	var prev int64
	next := start
	for i := 0; i < n && d.err == nil; i++ {
		bi := BlockInfo{}
		bi.Offset = prev + int64(d.uvarint())
		prev = bi.Offset
		k := d.bytes(1)
		if d.err != nil {
			break
		}
		bi.Kind = k[0]
		bi.Length = int64(d.uvarint())
		rank := d.uvarint()
		bi.Rank = uint32(rank)
		if bi.Kind == kindEvents {
			readSummary(d, &bi)
		}
		if d.err == nil && (bi.Offset != next || bi.Length < 0 || bi.Length > maxBlockLen || rank > 1<<32-1 || bi.Offset+blockHeaderLen+bi.Length > end) {
			return nil, errors.New("index does not match the blocks")
		}
		next = bi.Offset + blockHeaderLen + bi.Length
		blocks = append(blocks, bi)
	}
	if d.err != nil {
		return nil, d.err
	}
	if next != end {
		return nil, errors.New("index does not cover the file")
	}
	return blocks, nil
}

// readBlock reads the block at off into buf and checks its framing and CRC.
func (tf *file) readBlock(off int64, buf []byte) (kind uint8, payload []byte, err error) {
	var h [blockHeaderLen]byte
	if tf.size-off < blockHeaderLen {
		return 0, nil, errTruncated
	}
	if _, err := tf.ra.ReadAt(h[:], off); err != nil {
		return 0, nil, err
	}
	if string(h[:4]) != blockMagic {
		return 0, nil, errNoMagic
	}
	l := int64(binary.LittleEndian.Uint32(h[8:]))
	if l > maxBlockLen {
		return 0, nil, errLength
	}
	if off+blockHeaderLen+l > tf.size {
		return 0, nil, errTruncated
	}
	if int64(cap(buf)) < l {
		buf = make([]byte, l)
	}
	buf = buf[:l]
	if _, err := tf.ra.ReadAt(buf, off+blockHeaderLen); err != nil {
		return 0, nil, err
	}
	if crc(h[4:12], buf) != binary.LittleEndian.Uint32(h[12:]) {
		return 0, nil, errCRC
	}
	return h[4], buf, nil
}

var (
	errTruncated = errors.New("the file ends inside this block")
	errNoMagic   = errors.New("no block starts here")
	errLength    = errors.New("block length out of range")
	errCRC       = errors.New("block CRC mismatch")
)

// scan walks every block from the start. Damaged blocks are recorded; with
// resync, the walk goes on at the next offset where an intact block
// starts.
func (tf *file) scan(resync bool) {
	off := tf.dataStart
	var buf []byte
	for off < tf.size {
		if tf.size-off == trailerLen {
			var t [trailerLen]byte
			if _, err := tf.ra.ReadAt(t[:], off); err == nil && string(t[:8]) == trailerMagic {
				return
			}
		}
		kind, payload, err := tf.readBlock(off, buf)
		if err == nil {
			buf = payload
			bi, perr := blockInfo(kind, payload)
			if perr == nil {
				bi.Offset, bi.Length, bi.Kind = off, int64(len(payload)), kind
				if kind != kindIndex {
					tf.blocks = append(tf.blocks, bi)
				}
				off += blockHeaderLen + int64(len(payload))
				continue
			}
			err = perr
		}
		if errors.Is(err, errTruncated) {
			tf.truncated = fmt.Sprintf("the file ends inside the block at offset %d (%d bytes of it present)", off, tf.size-off)
			return
		}
		tf.damage = append(tf.damage, Damage{File: tf.name, Offset: off, Reason: err.Error()})
		if !resync {
			return
		}
		next, ok := tf.findBlock(off + 1)
		if !ok {
			return
		}
		off = next
	}
}

// findBlock returns the offset of the next intact block at or after off.
func (tf *file) findBlock(off int64) (int64, bool) {
	buf := make([]byte, min(64<<10, max(tf.size-off, int64(len(blockMagic)))))
	for off < tf.size {
		n, err := tf.ra.ReadAt(buf, off)
		if n == 0 && err != nil {
			return 0, false
		}
		chunk := buf[:n]
		for i := 0; i < len(chunk); {
			j := bytes.Index(chunk[i:], []byte(blockMagic))
			if j < 0 {
				break
			}
			at := off + int64(i+j)
			if _, _, err := tf.readBlock(at, nil); err == nil {
				return at, true
			}
			i += j + 1
		}
		if n < len(buf) {
			return 0, false
		}
		off += int64(n - len(blockMagic) + 1)
	}
	return 0, false
}

// blockInfo decodes what the index would say of a block.
func blockInfo(kind uint8, p []byte) (BlockInfo, error) {
	var bi BlockInfo
	d := &decoder{b: p}
	switch kind {
	case kindEvents:
		readSummary(d, &bi)
	case kindStrings, kindRankInfo, kindReplay:
		r := d.uvarint()
		if r > 1<<32-1 {
			return bi, errors.New("rank out of range")
		}
		bi.Rank = uint32(r)
	}
	if d.err != nil {
		return bi, fmt.Errorf("block contents: %v", d.err)
	}
	return bi, nil
}

// Reader reads one trace made of one or more files. It implements
// trace.Trace; streams of different ranks may be read concurrently.
type Reader struct {
	files   []*file
	meta    trace.Meta
	opts    ReadOptions
	paths   *trace.Paths
	streams map[uint32]*rankStream
	ranks   []uint32
	dec     *zstd.Decoder

	mu       sync.Mutex
	warnings []string
}

// rankStream is where one rank's events live.
type rankStream struct {
	file   *file
	blocks []BlockInfo // events blocks, in order
	shift  int64       // add to file times to get trace times
	clock  *Clock      // what the capture measured of the rank's clock
	cost   *Cost       // what the recorder measured of its own cost
	fix    *clockFix   // subtract its offset from file times to align them
	// remap turns the file's path ids into the trace's: dense ids in
	// remap, the others in remapM. A writer's ids are shared by all its
	// ranks, so a rank of a file with a path per rank has ids as large as
	// the file's ranks: dense, a rank's slice would grow with the file's
	// paths, and all ranks' with its ranks squared.
	remap  []trace.PathID
	remapM map[uint64]trace.PathID
	nremap int // ids defined
	host   string
	pid    int
	replay *trace.ReplayRank // how the rank was replayed, if it says
}

// traceTime turns a time of the rank's file (ns from its epoch) into one
// of the trace (ns from the trace's epoch, on the reference clock).
func (s *rankStream) traceTime(t int64) int64 {
	if s.fix != nil {
		return t + s.shift - s.fix.offsetAt(t)
	}
	return t + s.shift
}

func (s *rankStream) path(id uint64) (trace.PathID, bool) {
	if id == 0 {
		return 0, true
	}
	if id < uint64(len(s.remap)) && s.remap[id] != 0 {
		return s.remap[id], true
	}
	p, ok := s.remapM[id]
	return p, ok
}

// Open opens the trace held by the named files, and by the trace files
// (*.iot) of the named directories, as one trace.
func Open(names ...string) (*Reader, error) { return OpenOptions(ReadOptions{}, names...) }

// ExpandNames replaces each directory among names by the trace files in it
// (*.iot, sorted; a directory without any is an error).
func ExpandNames(names []string) ([]string, error) {
	var out []string
	for _, n := range names {
		st, err := os.Stat(n)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, n)
			continue
		}
		ents, err := os.ReadDir(n)
		if err != nil {
			return nil, err
		}
		found := false
		for _, e := range ents {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".iot") {
				out = append(out, filepath.Join(n, e.Name()))
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("%s: directory holds no trace files (*.iot)", n)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no trace files given")
	}
	return out, nil
}

// OpenOptions is Open with options.
func OpenOptions(opts ReadOptions, names ...string) (*Reader, error) {
	names, err := ExpandNames(names)
	if err != nil {
		return nil, err
	}
	var files []*file
	for _, n := range names {
		f, err := openFile(n, opts)
		if err != nil {
			for _, f := range files {
				f.closer.Close()
			}
			return nil, err
		}
		files = append(files, f)
	}
	r, err := newReader(files, opts)
	if err != nil {
		for _, f := range files {
			if f.closer != nil {
				f.closer.Close()
			}
		}
		return nil, err
	}
	return r, nil
}

// NewReader reads the trace in ra (of size bytes) named name.
func NewReader(ra io.ReaderAt, size int64, name string, opts ReadOptions) (*Reader, error) {
	f, err := newFile(name, ra, size, opts)
	if err != nil {
		return nil, err
	}
	return newReader([]*file{f}, opts)
}

// zstdDecoder is the zstd decoder of every Reader: DecodeAll is safe for
// concurrent use (as many at once as there are processors), so one serves
// all, and opening a trace costs no decoder of its own (making one per
// Reader made each open cost half a millisecond under the fuzzer, and a
// trace file read by merge or check open several).
var zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxMemory(64<<20))
})

func newReader(files []*file, opts ReadOptions) (*Reader, error) {
	dec, err := zstdDecoder()
	if err != nil {
		return nil, err
	}
	r := &Reader{files: files, opts: opts, paths: trace.NewPaths(), streams: map[uint32]*rankStream{}, dec: dec}
	owner := map[uint32]*file{}
	epochs := map[uint32]int64{}
	var buf []byte
	for _, f := range files {
		if f.truncated != "" {
			r.warn(fmt.Sprintf("%s: %s; read the %d complete %s before it", f.name, f.truncated, len(f.blocks), plural(len(f.blocks), "block", "blocks")))
		} else if !f.indexed {
			r.warn(fmt.Sprintf("%s: no index (the writer did not finish); read all %d blocks by scanning", f.name, len(f.blocks)))
		}
		for _, d := range f.damage {
			r.warn(fmt.Sprintf("%s: skipped damaged block", d))
		}
		for _, bi := range f.blocks {
			if o, ok := owner[bi.Rank]; ok && o != f {
				return nil, fmt.Errorf("rank %d is in both %s and %s", bi.Rank, o.name, f.name)
			}
			owner[bi.Rank] = f
			s := r.streams[bi.Rank]
			if s == nil {
				s = &rankStream{file: f}
				r.streams[bi.Rank] = s
				epochs[bi.Rank] = f.meta.Epoch
			}
			switch bi.Kind {
			case kindEvents:
				s.blocks = append(s.blocks, bi)
			case kindStrings, kindRankInfo, kindReplay:
				kind, p, err := f.readBlock(bi.Offset, buf)
				if err == nil && kind != bi.Kind {
					err = errors.New("block kind differs from the index")
				}
				if err == nil {
					buf = p
					switch bi.Kind {
					case kindStrings:
						err = r.readStrings(s, p)
					case kindRankInfo:
						err = readRankInfo(s, p, epochs, bi.Rank)
					case kindReplay:
						s.replay, err = readReplay(p)
					}
				}
				if err != nil {
					if !opts.Salvage {
						return nil, formatError(f.name, bi.Offset, "%v", err)
					}
					r.warn(fmt.Sprintf("%s: offset %d: skipped damaged block: %v", f.name, bi.Offset, err))
				}
			}
		}
	}
	// Times: each rank's on the reference clock (its epoch less its
	// offset at its start); the trace's epoch is the earliest of its
	// files' and ranks'.
	r.meta = mergeMeta(files)
	for rk, s := range r.streams {
		if s.clock != nil && !opts.RawClocks {
			s.fix = newClockFix(s.clock)
		}
		if s.fix != nil {
			epochs[rk] -= s.fix.offsetAt(0)
		}
	}
	first := true
	for _, e := range epochs {
		if first || e < r.meta.Epoch {
			r.meta.Epoch, first = e, false
		}
	}
	for rk, s := range r.streams {
		s.shift = epochs[rk] - r.meta.Epoch
		if s.fix != nil {
			// Events count from the rank's epoch; the shift holds the
			// offset at time 0, the fix adds how it changes after.
			s.shift += s.fix.offsetAt(0)
		}
		if len(s.blocks) > 0 || s.replay != nil {
			// A rank with events, or a replay's rank all of whose calls
			// were skipped: how its replay went (its skips) is part of
			// the trace.
			r.ranks = append(r.ranks, rk)
		}
	}
	slices.Sort(r.ranks)
	if n := len(r.ranks); n > 0 && int(r.ranks[n-1])+1 > r.meta.Ranks {
		r.meta.Ranks = int(r.ranks[n-1]) + 1
	}
	return r, nil
}

func (r *Reader) readStrings(s *rankStream, p []byte) error {
	d := &decoder{b: p}
	d.uvarint() // rank
	n := d.count(2)
	for i := 0; i < n && d.err == nil; i++ {
		id := d.uvarint()
		str := d.bytes(d.uvarint())
		if d.err != nil {
			break
		}
		if id == 0 {
			return errors.New("path id 0 defined")
		}
		g := r.paths.Intern(string(str))
		s.nremap++
		if id < uint64(len(s.remap)) || id < uint64(min(4*s.nremap+64, 1<<20)) {
			if id >= uint64(len(s.remap)) {
				s.remap = slices.Grow(s.remap, int(id)+1-len(s.remap))[:max(int(id)+1, len(s.remap))]
			}
			s.remap[id] = g
		} else {
			if s.remapM == nil {
				s.remapM = map[uint64]trace.PathID{}
			}
			s.remapM[id] = g
		}
	}
	if d.err != nil {
		return fmt.Errorf("path table: %v", d.err)
	}
	return nil
}

func readRankInfo(s *rankStream, p []byte, epochs map[uint32]int64, rank uint32) error {
	d := &decoder{b: p}
	d.uvarint()
	if d.err != nil {
		return d.err
	}
	return eachField(d.b, func(id uint64, v []byte) error {
		switch id {
		case fieldClockSample, fieldClockRef, fieldClockMethod:
			if s.clock == nil {
				s.clock = &Clock{}
			}
			return readClockField(s.clock, id, v)
		case fieldCost:
			c, err := readCost(v)
			if err != nil {
				return err
			}
			s.cost = c
		case fieldEpoch:
			e, err := fieldVarint(v)
			if err != nil {
				return err
			}
			epochs[rank] = e
		case fieldHost:
			s.host = string(v)
		case fieldPID:
			x, err := fieldUvarint(v)
			if err != nil {
				return err
			}
			s.pid = int(x)
		}
		return nil
	})
}

func mergeMeta(files []*file) trace.Meta {
	m := files[0].meta
	m.Hosts = slices.Clone(m.Hosts)
	for _, f := range files[1:] {
		for _, h := range f.meta.Hosts {
			if !slices.Contains(m.Hosts, h) {
				m.Hosts = append(m.Hosts, h)
			}
		}
		if f.meta.Ranks > m.Ranks {
			m.Ranks = f.meta.Ranks
		}
		if f.meta.Clock != m.Clock {
			m.Clock = "mixed"
		}
	}
	return m
}

func (r *Reader) warn(s string) {
	r.mu.Lock()
	r.warnings = append(r.warnings, s)
	r.mu.Unlock()
}

// Warnings lists what the reader recovered from so far: truncated files,
// missing indexes, blocks skipped by Salvage.
func (r *Reader) Warnings() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.warnings)
}

// Meta implements trace.Trace.
func (r *Reader) Meta() trace.Meta { return r.meta }

// Ranks implements trace.Trace.
func (r *Reader) Ranks() []uint32 { return slices.Clone(r.ranks) }

// Path implements trace.Trace.
func (r *Reader) Path(id trace.PathID) string { return r.paths.Lookup(id) }

// Paths returns the trace's path table.
func (r *Reader) Paths() *trace.Paths { return r.paths }

// RankSummary is what the index says of one rank, without decoding events.
type RankSummary struct {
	Rank   uint32
	File   string
	Host   string
	PID    int
	Blocks int
	Events int64
	MinT   int64 // earliest start, ns from the trace epoch
	MaxT   int64 // latest end
	Ops    []OpTotal
	// Clock is what the capture measured of the rank's clock against the
	// reference rank's (nil: nothing; the rank's times are its own
	// clock's). Unless RawClocks, its times are given on the reference
	// clock.
	Clock *Clock
	// Cost is what the rank's recorder measured of its own cost per call
	// and took out of the rank's times (nil: nothing said).
	Cost *Cost
}

// Summary returns the index's view of every rank.
func (r *Reader) Summary() []RankSummary {
	var out []RankSummary
	for _, rk := range r.ranks {
		s := r.streams[rk]
		rs := RankSummary{Rank: rk, File: s.file.name, Host: s.host, PID: s.pid, Blocks: len(s.blocks), Clock: s.clock, Cost: s.cost}
		for i, b := range s.blocks {
			rs.Events += b.Events
			if t := s.traceTime(b.MinT); i == 0 || t < rs.MinT {
				rs.MinT = t
			}
			if t := s.traceTime(b.MaxT); i == 0 || t > rs.MaxT {
				rs.MaxT = t
			}
			rs.Ops = addOps(rs.Ops, b.Ops)
		}
		out = append(out, rs)
	}
	return out
}

// Files lists the files of the trace.
func (r *Reader) Files() []string {
	var out []string
	for _, f := range r.files {
		out = append(out, f.name)
	}
	return out
}

// Close implements trace.Trace.
func (r *Reader) Close() error {
	var err error
	for _, f := range r.files {
		if f.closer != nil {
			if e := f.closer.Close(); err == nil {
				err = e
			}
		}
	}
	return err
}

// Rank implements trace.Trace: a new stream over rank rk's events.
func (r *Reader) Rank(rk uint32) (trace.Source, error) {
	s, ok := r.streams[rk]
	if !ok || len(s.blocks) == 0 && s.replay == nil {
		return nil, fmt.Errorf("trace has no rank %d", rk)
	}
	return &rankSource{r: r, s: s, rank: rk}, nil
}

// RankOps implements trace.OpIndexed: Rank, but the stream leaves out the
// blocks whose per-op totals (the block's summary, which the index
// repeats) hold none of the ops keep accepts, without reading them. A
// selection by op reads only the blocks that can hold its events; the
// events of the blocks read are all there, for the caller to select.
func (r *Reader) RankOps(rk uint32, keep func(trace.Op) bool) (trace.Source, error) {
	src, err := r.Rank(rk)
	if err != nil {
		return nil, err
	}
	src.(*rankSource).keep = keep
	return src, nil
}

var _ trace.OpIndexed = (*Reader)(nil)

// rankSource decodes one rank's blocks as they are read.
type rankSource struct {
	r    *Reader
	s    *rankStream
	rank uint32
	next int // next block to load
	bi   BlockInfo
	keep func(trace.Op) bool // blocks without any of these ops are left out (RankOps)

	n, pos  int        // events in the current block, and read so far
	b       *blockBufs // nil before the first block and after the last
	prevEnd int64
	predOff int64
	err     error
}

// blockBufs are a rank source's decoding state: a few KiB, held from
// its first block to the end of its last, so that the ranks a reader
// has read to their end (most of 100,000 ranks that meet at a barrier)
// keep none.
type blockBufs struct {
	cols    [numCols + 1]colStream
	bufs    [numCols + 1][]byte
	payload []byte
}

func (rs *rankSource) Path(id trace.PathID) string { return rs.r.paths.Lookup(id) }

// ReadEvents implements trace.Source.
func (rs *rankSource) ReadEvents(evs []trace.Event) (int, error) {
	if rs.err != nil {
		return 0, rs.err
	}
	for rs.pos >= rs.n {
		if rs.next >= len(rs.s.blocks) {
			return 0, io.EOF
		}
		bi := rs.s.blocks[rs.next]
		rs.next++
		if rs.keep != nil && !slices.ContainsFunc(bi.Ops, func(o OpTotal) bool { return rs.keep(o.Op) }) {
			continue
		}
		if err := rs.load(bi); err != nil {
			f := rs.s.file
			if !rs.r.opts.Salvage {
				rs.err = formatError(f.name, bi.Offset, "%v (a block of rank %d, %d events; iotrace check tells more, --salvage reads past it)", err, rs.rank, bi.Events)
				return 0, rs.err
			}
			rs.r.warn(fmt.Sprintf("%s: offset %d: skipped damaged block of rank %d (%d events): %v", f.name, bi.Offset, rs.rank, bi.Events, err))
			rs.n, rs.pos = 0, 0
		}
	}
	k := min(len(evs), rs.n-rs.pos)
	if err := rs.decode(evs[:k]); err != nil {
		rs.err = formatError(rs.s.file.name, rs.bi.Offset, "%v", err)
		return 0, rs.err
	}
	rs.pos += k
	if rs.pos == rs.n {
		for id := 1; id <= numCols; id++ {
			if c := &rs.b.cols[id]; c.b != nil && c.pos != len(c.b) || c.exc != nil && c.exc.pos != len(c.exc.b) || c.left != 0 {
				rs.err = formatError(rs.s.file.name, rs.bi.Offset, "column %d longer than its event count", id)
				return 0, rs.err
			}
		}
		if rs.next >= len(rs.s.blocks) {
			rs.b = nil // the rank's last block is read
		}
	}
	return k, nil
}

// load reads, checks and decompresses the block bi.
func (rs *rankSource) load(bi BlockInfo) error {
	if rs.b == nil {
		rs.b = &blockBufs{}
	}
	kind, p, err := rs.s.file.readBlock(bi.Offset, rs.b.payload)
	if err != nil {
		return err
	}
	rs.b.payload = p
	if kind != kindEvents {
		return errors.New("block kind differs from the index")
	}
	d := &decoder{b: p}
	var got BlockInfo
	readSummary(d, &got)
	if d.err == nil && (got.Rank != bi.Rank || got.Events != bi.Events || got.MinT != bi.MinT) {
		return errors.New("block differs from the index")
	}
	ncols := d.count(4)
	type colHdr struct {
		id             uint64
		enc            byte
		base           int64
		mult, raw, len uint64
	}
	hdrs := make([]colHdr, 0, ncols)
	for i := 0; i < ncols && d.err == nil; i++ {
		var h colHdr
		h.id = d.uvarint()
		e := d.bytes(1)
		h.base = d.varint()
		h.mult = d.uvarint()
		h.raw = d.uvarint()
		h.len = d.uvarint()
		if d.err == nil {
			h.enc = e[0]
			hdrs = append(hdrs, h)
		}
	}
	if d.err != nil {
		return fmt.Errorf("block contents: %v", d.err)
	}
	for i := range rs.b.cols {
		rs.b.cols[i] = colStream{}
	}
	data := d.b
	for _, h := range hdrs {
		if h.len > uint64(len(data)) {
			return fmt.Errorf("column %d runs past the block", h.id)
		}
		stored := data[:h.len]
		data = data[h.len:]
		if h.id == 0 || h.id > numCols {
			continue // a column this version does not know
		}
		if h.raw > uint64(bi.Events)*2*binaryMaxVarint+4096 {
			return fmt.Errorf("column %d: length %d too large for %d events", h.id, h.raw, bi.Events)
		}
		if h.mult == 0 || h.mult > 1<<63-1 {
			return fmt.Errorf("column %d: multiplier %d out of range", h.id, h.mult)
		}
		layout, stage := h.enc>>4, h.enc&15
		switch layout {
		case layoutConst:
			rs.b.cols[h.id] = colStream{base: h.base, mult: int64(h.mult)}
			continue
		case layoutDict:
			cs, err := rs.loadDict(h.id, stored, bi.Events)
			if err != nil {
				return fmt.Errorf("column %d: %v", h.id, err)
			}
			cs.base, cs.mult = h.base, int64(h.mult)
			rs.b.cols[h.id] = cs
			continue
		case layoutValues, layoutRuns:
		default:
			return fmt.Errorf("column %d: unknown layout %d", h.id, layout)
		}
		col, err := rs.unpack(h.id, stage, stored, h.raw)
		if err != nil {
			return fmt.Errorf("column %d: %v", h.id, err)
		}
		if uint64(len(col)) != h.raw {
			return fmt.Errorf("column %d: %d bytes, header says %d", h.id, len(col), h.raw)
		}
		if col == nil {
			col = []byte{}
		}
		rs.b.cols[h.id] = colStream{b: col, base: h.base, mult: int64(h.mult), runs: layout == layoutRuns}
	}
	if len(data) != 0 {
		return errors.New("bytes after the last column")
	}
	rs.bi, rs.n, rs.pos = bi, int(bi.Events), 0
	rs.prevEnd, rs.predOff = 0, 0
	return nil
}

const binaryMaxVarint = binary.MaxVarintLen64

// unpack undoes the stage of stored, which holds raw bytes, into the
// column buffer of id.
func (rs *rankSource) unpack(id uint64, stage byte, stored []byte, raw uint64) ([]byte, error) {
	if raw > maxBlockLen {
		return nil, errors.New("column too large")
	}
	switch stage {
	case stageRaw:
		return stored, nil
	case stageZstd:
		out, err := rs.r.dec.DecodeAll(stored, rs.b.bufs[id][:0])
		if err != nil {
			return nil, err
		}
		rs.b.bufs[id] = out
		return out, nil
	case stageHuff:
		if len(stored) < 1 || (stored[0] != 1 && stored[0] != 4) {
			return nil, errors.New("bad Huffman stream kind")
		}
		s, rem, err := huff0.ReadTable(stored[1:], huffTables.get())
		if s != nil {
			defer huffTables.put(s)
		}
		if err != nil {
			return nil, err
		}
		dst := rs.b.bufs[id]
		if uint64(cap(dst)) < raw {
			dst = make([]byte, raw)
		}
		dst = dst[:0:raw] // huff0 decodes up to cap(dst), exactly for 4X
		var out []byte
		if stored[0] == 1 {
			out, err = s.Decoder().Decompress1X(dst, rem)
		} else {
			out, err = s.Decoder().Decompress4X(dst, rem)
		}
		if err != nil {
			return nil, err
		}
		rs.b.bufs[id] = out
		return out, nil
	}
	return nil, fmt.Errorf("unknown stage %d", stage)
}

// loadDict reads an encDict column of n events.
func (rs *rankSource) loadDict(id uint64, stored []byte, n int64) (colStream, error) {
	d := &decoder{b: stored}
	nd := d.count(1)
	if nd > 255 {
		return colStream{}, errors.New("dictionary larger than 255 values")
	}
	dict := make([]uint64, nd)
	var prev uint64
	for i := range dict {
		prev += d.uvarint()
		dict[i] = prev
	}
	e := d.bytes(1)
	l := d.uvarint()
	data := d.bytes(l)
	if d.err != nil {
		return colStream{}, d.err
	}
	index, err := rs.unpack(id, e[0], data, uint64(n))
	if err != nil {
		return colStream{}, err
	}
	if int64(len(index)) != n {
		return colStream{}, errors.New("dictionary index length differs from the event count")
	}
	if len(dict) == 0 {
		dict = []uint64{} // non-nil marks the dictionary mode
	}
	if index == nil {
		index = []byte{}
	}
	return colStream{b: index, dict: dict, exc: &colStream{b: d.b}}, nil
}

// scratch holds the column values of one decode call. Only a call in
// progress needs them, so the sources share them (see freeList) instead of
// each keeping its own: a replay of thousands of ranks holds thousands of
// sources open (about 80 KiB each otherwise: 80 MiB at 1,024 ranks).
type scratch struct {
	vals  [numCols + 1][]int64
	zeros []int64 // never written: the values of absent columns
}

var scratches = newFreeList[scratch]()

// huffTables holds the Huffman tables of column decoding; a table lives
// only while one column of a block is unpacked.
var huffTables = newFreeList[huff0.Scratch]()

// decode fills evs with the next len(evs) events of the current block,
// column by column.
func (rs *rankSource) decode(evs []trace.Event) error {
	n := len(evs)
	var v [numCols + 1][]int64
	sc := scratches.get()
	defer func() {
		if cap(sc.zeros) <= 4*trace.BatchSize { // not one a huge read grew
			scratches.put(sc)
		}
	}()
	if len(sc.zeros) < n {
		sc.zeros = make([]int64, max(n, trace.BatchSize))
	}
	for id := 1; id <= numCols; id++ {
		if c := &rs.b.cols[id]; c.b == nil && c.base == 0 {
			v[id] = sc.zeros[:n] // absent columns share one array of zeros, kept in cache
			continue
		}
		if cap(sc.vals[id]) < n {
			sc.vals[id] = make([]int64, n, max(n, trace.BatchSize))
		}
		v[id] = sc.vals[id][:n]
		if err := rs.b.cols[id].fill(v[id]); err != nil {
			return fmt.Errorf("column %d: %v", id, err)
		}
	}
	rare := false // any of the columns from colFlags on in this block
	for id := colFlags; id <= numCols; id++ {
		if c := &rs.b.cols[id]; c.b != nil || c.base != 0 {
			rare = true
		}
	}
	prevEnd, predOff, shift, fix := rs.prevEnd, rs.predOff, rs.s.shift, rs.s.fix
	// The common columns as slices of n, so that the loop checks no
	// bounds on them.
	cOp, cTh, cDur, cStart := v[colOp][:n], v[colThread][:n], v[colDur][:n], v[colStart][:n]
	cSize, cOff, cRet, cPath, cPath2, cFD := v[colSize][:n], v[colOffset][:n], v[colRet][:n], v[colPath][:n], v[colPath2][:n], v[colFD][:n]
	for i := range evs {
		op, th := cOp[i], cTh[i]
		if uint64(op) > 0xffff || uint64(th) > 1<<32-1 {
			return fmt.Errorf("event %d: op %d or thread %d out of range", rs.pos+i, op, th)
		}
		e := &evs[i]
		e.Op, e.Rank, e.Thread = trace.Op(op), rs.rank, uint32(th)
		e.Dur = cDur[i]
		e.Start = prevEnd + cStart[i]
		prevEnd = e.Start + e.Dur
		if fix != nil {
			e.Start -= fix.offsetAt(e.Start)
		}
		e.Start += shift
		e.Size = cSize[i]
		e.Offset = predOff + cOff[i]
		if e.Offset != 0 || e.Size != 0 {
			predOff = e.Offset + e.Size
		}
		e.Ret = retBase(e) + cRet[i]
		var p, p2 trace.PathID
		ok1, ok2 := true, true
		if id := cPath[i]; id != 0 {
			p, ok1 = rs.s.path(uint64(id))
		}
		if id := cPath2[i]; id != 0 {
			p2, ok2 = rs.s.path(uint64(id))
		}
		if !ok1 || !ok2 {
			return fmt.Errorf("event %d: path id %d or %d is not defined", rs.pos+i, cPath[i], cPath2[i])
		}
		e.Path, e.Path2 = p, p2
		e.FD = int32(cFD[i])
		if !rare {
			// Flags, modes, communication and copies: none in this block.
			e.Flags, e.Mode, e.Whence, e.Peer, e.Tag, e.Comm = 0, 0, 0, 0, 0, 0
			e.Bytes, e.Count, e.Stride, e.Source, e.RecvTag, e.FD2, e.Offset2 = 0, 0, 0, 0, 0, 0, 0
			continue
		}
		e.Flags = uint32(v[colFlags][i])
		e.Mode = uint32(v[colMode][i])
		e.Whence = int32(v[colWhence][i])
		e.Peer = int32(v[colPeer][i])
		e.Tag = int32(v[colTag][i])
		e.Comm = uint32(v[colComm][i])
		e.Bytes = v[colBytes][i]
		e.Count = int32(v[colCount][i])
		e.Stride = v[colStride][i]
		e.Source = int32(v[colSource][i])
		e.RecvTag = int32(v[colRTag][i])
		e.FD2 = int32(v[colFD2][i])
		e.Offset2 = v[colOff2][i]
	}
	rs.prevEnd, rs.predOff = prevEnd, predOff
	return nil
}

// sortBlocks orders block infos by offset.
func sortBlocks(b []BlockInfo) {
	sort.Slice(b, func(i, j int) bool { return b[i].Offset < b[j].Offset })
}
