// Package dxt reads the text darshan-dxt-parser prints of a Darshan log
// with extended tracing (DXT): for every file and rank, the POSIX
// (X_POSIX) and MPI-IO (X_MPIIO) reads and writes with offset, length and
// start and end times.
//
// DXT holds only reads and writes, listed writes first then reads, per
// file and rank. Read turns them into per-rank event streams a replay can
// run:
//
//   - every rank's calls are put in start-time order (ties: end time,
//     then the order of the listing);
//   - each file a rank uses gets an open before its first call and a close
//     after its last: open(2) with O_RDWR|O_CREAT if the rank writes it
//     (O_RDONLY if it only reads), MPI_File_open on MPI_COMM_SELF (DXT does
//     not say which communicator opened it) with MPI_MODE_CREATE|RDWR or
//     RDONLY;
//   - X_POSIX calls become pwrite and pread at their offsets; X_MPIIO calls
//     with an offset become MPI_File_write_at/read_at, those without one
//     (offset -1: the individual file pointer) MPI_File_write/read, at the
//     offset of the POSIX call the MPI-IO library made for them (same rank,
//     file, direction and length, starting within the MPI-IO call), or, if
//     there is none, at the individual pointer (0, then advancing by each
//     call's length);
//   - Pthread-IDs become thread indexes in order of appearance.
//
// Darshan traces the same I/O twice when a program uses MPI-IO: once as
// the MPI-IO call, once as the POSIX calls the MPI-IO library makes. The
// layer option chooses what the trace holds: "auto" (default) the MPI-IO
// calls of the files a rank used through MPI-IO and the POSIX calls of
// the others, so that a replay does each byte once; "mpiio", "posix", or
// "all" (both, as Darshan counted them).
//
// The text gives times to 0.1 ms: calls shorter than that show 0 ns, and
// calls less than 0.1 ms apart keep the order of the listing.
package dxt

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/iotrace/iotrace/convert/internal/textutil"
	"github.com/iotrace/iotrace/trace"
)

// Layers are the values of Options.Layer.
var Layers = []string{"auto", "mpiio", "posix", "all"}

// Options configure Read.
type Options struct {
	Layer string       // auto (""), mpiio, posix or all
	Paths *trace.Paths // table to intern paths in; nil: a new one
}

// Module is a DXT module.
type Module uint8

const (
	POSIX Module = iota
	MPIIO
)

func (m Module) String() string {
	if m == MPIIO {
		return "X_MPIIO"
	}
	return "X_POSIX"
}

// Count is what DXT lists of one rank and module.
type Count struct {
	Reads, Writes         int64
	ReadBytes, WriteBytes int64
}

// Trace is a DXT text read into per-rank event streams.
type Trace struct {
	meta  trace.Meta
	paths *trace.Paths
	ranks []uint32
	evs   map[uint32][]trace.Event
	// Listed counts what the text lists, per rank and module.
	Listed map[uint32]*[2]Count
	// Dropped counts the calls the layer choice left out, per module.
	Dropped [2]int64
	// Matched and Assumed count X_MPIIO calls without an offset whose
	// offset came from their POSIX call, or from the individual pointer.
	Matched, Assumed int64
	// Mismatched lists records whose write_count/read_count headers
	// disagree with the lines listed under them.
	Mismatched []string
	layer      string
}

// segment is one listed call.
type segment struct {
	module  Module
	rank    uint32
	write   bool
	file    int // index in files
	seg     int // index in the listing
	order   int // position in the whole text
	offset  int64
	length  int64
	start   int64 // ns
	end     int64
	thread  uint64
	hasThr  bool
	matched bool  // a POSIX call an MPI-IO call took its offset from
	found   bool  // an MPI-IO call without an offset whose POSIX call was found
	posOff  int64 // that call's offset
}

type record struct {
	module        Module
	file          int
	rank          uint32
	writes, reads int64 // header counts
	seenW, seenR  int64
	line          int
}

// Read reads the text of darshan-dxt-parser from r (called name in
// errors). A line it cannot read stops it with an error naming the line.
func Read(r io.Reader, name string, opts Options) (*Trace, error) {
	layer := opts.Layer
	if layer == "" {
		layer = "auto"
	}
	if !slices.Contains(Layers, layer) {
		return nil, fmt.Errorf("layer %q: want one of %s", layer, strings.Join(Layers, ", "))
	}
	t := &Trace{paths: opts.Paths, evs: map[uint32][]trace.Event{}, Listed: map[uint32]*[2]Count{}, layer: layer}
	if t.paths == nil {
		t.paths = trace.NewPaths()
	}
	p := &parser{name: name, files: map[string]int{}, hosts: map[string]bool{}}
	if err := p.parse(r); err != nil {
		return nil, err
	}
	if len(p.segs) == 0 {
		return nil, fmt.Errorf("%s: no DXT records (X_POSIX or X_MPIIO lines): is this the output of darshan-dxt-parser of a log with DXT enabled?", name)
	}
	for _, rec := range p.records {
		if rec.seenW != rec.writes || rec.seenR != rec.reads {
			t.Mismatched = append(t.Mismatched, fmt.Sprintf("%s:%d: %s of %s, rank %d: %d writes and %d reads listed, the header says %d and %d",
				name, rec.line, rec.module, p.names[rec.file], rec.rank, rec.seenW, rec.seenR, rec.writes, rec.reads))
		}
	}
	for _, s := range p.segs {
		c := t.Listed[s.rank]
		if c == nil {
			c = &[2]Count{}
			t.Listed[s.rank] = c
		}
		if s.write {
			c[s.module].Writes++
			c[s.module].WriteBytes += s.length
		} else {
			c[s.module].Reads++
			c[s.module].ReadBytes += s.length
		}
	}
	t.build(p)
	t.meta = p.meta(name)
	return t, nil
}

// Meta implements trace.Trace.
func (t *Trace) Meta() trace.Meta { return t.meta }

// Ranks implements trace.Trace.
func (t *Trace) Ranks() []uint32 { return t.ranks }

// Rank implements trace.Trace.
func (t *Trace) Rank(r uint32) (trace.Source, error) {
	return &trace.SliceSource{Events: t.evs[r], Paths: t.paths}, nil
}

// Path implements trace.Trace.
func (t *Trace) Path(id trace.PathID) string { return t.paths.Lookup(id) }

// Close implements trace.Trace.
func (t *Trace) Close() error { return nil }

// Notes are what a user should know of the import, one line each.
func (t *Trace) Notes() []string {
	n := []string{"DXT text gives times to 0.1 ms: shorter calls last 0 ns, and calls closer than that keep the order of the listing"}
	if t.Dropped[POSIX] > 0 {
		n = append(n, fmt.Sprintf("%d X_POSIX calls that the MPI-IO library made for X_MPIIO calls left out, so that a replay does them once (--layer all keeps both)", t.Dropped[POSIX]))
	}
	if t.Dropped[MPIIO] > 0 {
		n = append(n, fmt.Sprintf("%d X_MPIIO calls left out (--layer %s)", t.Dropped[MPIIO], t.layer))
	}
	if t.Assumed > 0 {
		n = append(n, fmt.Sprintf("%d X_MPIIO calls without an offset and no matching POSIX call were placed at the individual file pointer, from 0", t.Assumed))
	}
	n = append(n, t.Mismatched...)
	return n
}

type parser struct {
	name    string
	line    int
	files   map[string]int
	names   []string
	hosts   map[string]bool
	hostOf  map[uint32]string
	records []*record
	cur     *record
	module  Module
	thrCol  bool // the column header names Pthread-ID
	segs    []segment
	header  map[string]string
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", p.name, p.line, fmt.Sprintf(format, args...))
}

func (p *parser) parse(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	p.header = map[string]string{}
	p.hostOf = map[uint32]string{}
	for sc.Scan() {
		p.line++
		s := strings.TrimRight(sc.Text(), "\r")
		if err := p.parseLine(s); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		p.line++
		if errors.Is(err, bufio.ErrTooLong) {
			return p.errorf("line longer than 4 MiB")
		}
		return p.errorf("%v", err)
	}
	return nil
}

func (p *parser) parseLine(s string) error {
	t := strings.TrimSpace(s)
	switch {
	case t == "":
		return nil
	case strings.HasPrefix(t, "# DXT_POSIX module data"):
		p.module = POSIX
		return nil
	case strings.HasPrefix(t, "# DXT_MPIIO module data"):
		p.module = MPIIO
		return nil
	case strings.HasPrefix(t, "# DXT, "):
		return p.dxtHeader(strings.TrimPrefix(t, "# DXT, "))
	case strings.HasPrefix(t, "# Module"):
		p.thrCol = strings.Contains(t, "Pthread-ID")
		return nil
	case strings.HasPrefix(t, "#"):
		if k, v, ok := strings.Cut(strings.TrimSpace(t[1:]), ":"); ok && p.cur == nil {
			if _, seen := p.header[k]; !seen {
				p.header[k] = strings.TrimSpace(v)
			}
		}
		return nil
	}
	f := strings.Fields(t)
	if f[0] != "X_POSIX" && f[0] != "X_MPIIO" {
		return p.errorf("not a line of darshan-dxt-parser output: %q", clip(t))
	}
	return p.segment(f)
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

func (p *parser) dxtHeader(h string) error {
	switch {
	case strings.HasPrefix(h, "file_id:"):
		_, name, ok := strings.Cut(h, "file_name: ")
		if !ok || name == "" {
			return p.errorf("file record without a file_name")
		}
		i, seen := p.files[name]
		if !seen {
			i = len(p.names)
			p.files[name] = i
			p.names = append(p.names, name)
		}
		p.cur = &record{module: p.module, file: i, line: p.line, writes: -1, reads: -1}
		p.records = append(p.records, p.cur)
	case strings.HasPrefix(h, "rank:"):
		if p.cur == nil {
			return p.errorf("rank before file_id")
		}
		v, host, _ := strings.Cut(strings.TrimPrefix(h, "rank:"), ",")
		rk, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
		if err != nil {
			return p.errorf("rank %q", strings.TrimSpace(v))
		}
		p.cur.rank = uint32(rk)
		if hn, ok := strings.CutPrefix(strings.TrimSpace(host), "hostname:"); ok {
			hn = strings.TrimSpace(hn)
			p.hosts[hn] = true
			p.hostOf[uint32(rk)] = hn
		}
	case strings.HasPrefix(h, "write_count:"):
		if p.cur == nil {
			return p.errorf("write_count before file_id")
		}
		w, rd, ok := strings.Cut(h, ",")
		wc, err1 := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(w, "write_count:")), 10, 64)
		rc, err2 := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rd), "read_count:")), 10, 64)
		if !ok || err1 != nil || err2 != nil || wc < 0 || rc < 0 {
			return p.errorf("bad counts %q", h)
		}
		p.cur.writes, p.cur.reads = wc, rc
	}
	return nil
}

// segment reads " X_POSIX RANK write|read SEGMENT OFFSET LENGTH START END [PTHREAD] [OSTs]".
func (p *parser) segment(f []string) error {
	if p.cur == nil {
		return p.errorf("%s line before any file record (# DXT, file_id: …)", f[0])
	}
	if len(f) < 8 {
		return p.errorf("%d fields: want MODULE RANK WT/RD SEGMENT OFFSET LENGTH START END", len(f))
	}
	mod := POSIX
	if f[0] == "X_MPIIO" {
		mod = MPIIO
	}
	if mod != p.cur.module {
		return p.errorf("%s line in the %s section", f[0], p.cur.module)
	}
	rk, err := strconv.ParseUint(f[1], 10, 32)
	if err != nil || uint32(rk) != p.cur.rank {
		return p.errorf("rank %q: the record is of rank %d", f[1], p.cur.rank)
	}
	s := segment{module: mod, rank: uint32(rk), file: p.cur.file, order: len(p.segs)}
	switch f[2] {
	case "write":
		s.write = true
		p.cur.seenW++
	case "read":
		p.cur.seenR++
	default:
		return p.errorf("%q: want write or read", f[2])
	}
	if s.seg, err = strconv.Atoi(f[3]); err != nil || s.seg < 0 {
		return p.errorf("segment %q", f[3])
	}
	if s.offset, err = strconv.ParseInt(f[4], 10, 64); err != nil || s.offset < -1 {
		return p.errorf("offset %q", f[4])
	}
	if s.length, err = strconv.ParseInt(f[5], 10, 64); err != nil || s.length < 0 {
		return p.errorf("length %q", f[5])
	}
	var ok bool
	if s.start, ok = textutil.Seconds(f[6]); !ok {
		return p.errorf("start %q: want seconds", f[6])
	}
	if s.end, ok = textutil.Seconds(f[7]); !ok {
		return p.errorf("end %q: want seconds", f[7])
	}
	if s.end < s.start {
		return p.errorf("ends (%s s) before it starts (%s s)", f[7], f[6])
	}
	if p.thrCol && len(f) > 8 && !strings.HasPrefix(f[8], "[") {
		if s.thread, err = strconv.ParseUint(f[8], 10, 64); err != nil {
			return p.errorf("Pthread-ID %q", f[8])
		}
		s.hasThr = true
	}
	p.segs = append(p.segs, s)
	return nil
}

func (p *parser) meta(name string) trace.Meta {
	m := trace.Meta{Clock: "Darshan DXT (seconds from the job's start, 0.1 ms in the text)", Creator: "iotrace convert --from dxt"}
	if exe := p.header["exe"]; exe != "" {
		m.Command = strings.Fields(exe)
	}
	if n, err := strconv.Atoi(p.header["nprocs"]); err == nil && n > 0 {
		m.Ranks = n
	}
	if st, err := strconv.ParseInt(p.header["start_time"], 10, 64); err == nil && st > 0 {
		m.Epoch = st * 1_000_000_000
	}
	for h := range p.hosts {
		m.Hosts = append(m.Hosts, h)
	}
	slices.Sort(m.Hosts)
	return m
}

// build turns the segments into per-rank event streams.
func (t *Trace) build(p *parser) {
	// Which (rank, file) pairs have MPI-IO calls.
	type rf struct {
		rank uint32
		file int
	}
	mpiio := map[rf]bool{}
	for _, s := range p.segs {
		if s.module == MPIIO {
			mpiio[rf{s.rank, s.file}] = true
		}
	}
	t.matchOffsets(p.segs)
	keep := func(s *segment) bool {
		switch t.layer {
		case "posix":
			return s.module == POSIX
		case "mpiio":
			return s.module == MPIIO
		case "auto":
			return s.module == MPIIO || !mpiio[rf{s.rank, s.file}]
		}
		return true
	}
	byRank := map[uint32][]*segment{}
	for i := range p.segs {
		s := &p.segs[i]
		if !keep(s) {
			t.Dropped[s.module]++
			continue
		}
		byRank[s.rank] = append(byRank[s.rank], s)
	}
	for r, segs := range byRank {
		t.ranks = append(t.ranks, r)
		t.evs[r] = t.rankEvents(r, segs, p)
	}
	slices.Sort(t.ranks)
}

// matchOffsets gives X_MPIIO calls without an offset the offset of the
// POSIX call the MPI-IO library made for them.
func (t *Trace) matchOffsets(segs []segment) {
	type key struct {
		rank  uint32
		file  int
		write bool
	}
	posix := map[key][]*segment{}
	var mpi []*segment
	for i := range segs {
		s := &segs[i]
		k := key{s.rank, s.file, s.write}
		if s.module == POSIX {
			posix[k] = append(posix[k], s)
		} else if s.offset < 0 {
			mpi = append(mpi, s)
		}
	}
	for _, l := range posix {
		slices.SortStableFunc(l, func(a, b *segment) int { return cmp64(a.start, b.start) })
	}
	slices.SortStableFunc(mpi, func(a, b *segment) int { return cmp64(a.start, b.start) })
	const slack = 100_000 // the text's resolution: 0.1 ms
	cursor := map[key]int{}
	for _, m := range mpi {
		k := key{m.rank, m.file, m.write}
		l := posix[k]
		i := cursor[k]
		for i < len(l) && l[i].start < m.start-slack {
			i++
		}
		cursor[k] = i
		for j := i; j < len(l) && l[j].start <= m.end+slack; j++ {
			if !l[j].matched && l[j].length == m.length && l[j].offset >= 0 {
				l[j].matched = true
				m.found, m.posOff = true, l[j].offset
				t.Matched++
				break
			}
		}
	}
}

func cmp64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// fileUse is what a rank does with one file in one module.
type fileUse struct {
	file   int
	module Module
	write  bool
	first  int64
	last   int64
	fd     int32
}

func (t *Trace) rankEvents(r uint32, segs []*segment, p *parser) []trace.Event {
	slices.SortStableFunc(segs, func(a, b *segment) int {
		if c := cmp64(a.start, b.start); c != 0 {
			return c
		}
		if c := cmp64(a.end, b.end); c != 0 {
			return c
		}
		return a.order - b.order
	})
	threads := map[uint64]uint32{}
	thread := func(s *segment) uint32 {
		if !s.hasThr {
			return 0
		}
		th, ok := threads[s.thread]
		if !ok {
			th = uint32(len(threads))
			threads[s.thread] = th
		}
		return th
	}
	type ukey struct {
		file   int
		module Module
	}
	uses := map[ukey]*fileUse{}
	var order []*fileUse
	for _, s := range segs {
		k := ukey{s.file, s.module}
		u := uses[k]
		if u == nil {
			u = &fileUse{file: s.file, module: s.module, first: s.start, last: s.end}
			uses[k] = u
			order = append(order, u)
			if s.module == MPIIO {
				u.fd = int32(len(order)) // MPI file handle ids from 1
			} else {
				u.fd = int32(len(order)) + 2 // descriptors from 3
			}
		}
		u.write = u.write || s.write
		u.last = max(u.last, s.end)
	}
	// Events with a sort key: time, then opens before calls before closes.
	type keyed struct {
		t    int64
		kind int
		seq  int
		ev   trace.Event
	}
	var ks []keyed
	pointer := map[ukey]int64{}
	for i, s := range segs {
		u := uses[ukey{s.file, s.module}]
		e := trace.Event{Rank: r, Thread: thread(s), Start: s.start, Dur: s.end - s.start, FD: u.fd, Size: s.length, Ret: s.length}
		switch {
		case s.module == POSIX:
			e.Op, e.Offset = trace.OpPread, s.offset
			if s.write {
				e.Op = trace.OpPwrite
			}
		case s.offset >= 0:
			e.Op, e.Offset = trace.OpMPIFileReadAt, s.offset
			if s.write {
				e.Op = trace.OpMPIFileWriteAt
			}
		default:
			e.Op = trace.OpMPIFileRead
			if s.write {
				e.Op = trace.OpMPIFileWrite
			}
			k := ukey{s.file, s.module}
			if s.found {
				e.Offset = s.posOff
			} else {
				e.Offset = pointer[k]
				t.Assumed++
			}
			pointer[k] = e.Offset + s.length
		}
		ks = append(ks, keyed{t: s.start, kind: 1, seq: i, ev: e})
	}
	for i, u := range order {
		path := t.paths.Intern(p.names[u.file])
		open := trace.Event{Rank: r, Start: u.first, Path: path, FD: u.fd}
		cl := trace.Event{Rank: r, Start: u.last, Path: path, FD: u.fd}
		if u.module == POSIX {
			open.Op, open.Ret, open.Mode = trace.OpOpen, int64(u.fd), 0o644
			open.Flags = trace.ORdonly
			if u.write {
				open.Flags = trace.ORdwr | trace.OCreat
			}
			cl.Op = trace.OpClose
		} else {
			open.Op, open.Comm = trace.OpMPIFileOpen, trace.CommSelf
			open.Flags = trace.MPIModeRdonly
			if u.write {
				open.Flags = trace.MPIModeCreate | trace.MPIModeRdwr
			}
			cl.Op, cl.Comm = trace.OpMPIFileClose, trace.CommSelf
		}
		ks = append(ks, keyed{t: u.first, kind: 0, seq: i, ev: open}, keyed{t: u.last, kind: 2, seq: i, ev: cl})
	}
	slices.SortStableFunc(ks, func(a, b keyed) int {
		if c := cmp64(a.t, b.t); c != 0 {
			return c
		}
		if a.kind != b.kind {
			return a.kind - b.kind
		}
		return a.seq - b.seq
	})
	evs := make([]trace.Event, len(ks))
	for i, k := range ks {
		evs[i] = k.ev
	}
	return evs
}
