// Package dxt reads the text darshan-dxt-parser prints of a Darshan log
// with extended tracing (DXT): for every file and rank, the POSIX
// (X_POSIX) and MPI-IO (X_MPIIO) reads and writes with offset, length and
// start and end times.
//
// DXT holds only reads and writes, listed writes first then reads, per
// file and rank, and no more of each call: not which call it was (write
// or pwrite; MPI_File_write, _write_at, _write_all, _write_at_all,
// _shared, _ordered, the split and non-blocking forms alike: Darshan's
// DXT keeps offset, length and times of every one), nor opens, closes,
// seeks or metadata. Read makes per-rank event streams of what the log
// says, and marks what it has to add so that a replay can run them:
//
//   - every rank's calls are put in start-time order (ties: end time,
//     then the order of the listing);
//   - X_POSIX calls become pwrite and pread at the offsets the log gives;
//     X_MPIIO calls become MPI_File_write_at and MPI_File_read_at, at the
//     byte offset the log gives (Darshan asks MPI_File_get_byte_offset
//     for every call) or, where it gives -1 (Darshan built with Open MPI
//     records none), at the offset of the POSIX call the MPI-IO library
//     made for it (same rank, file, direction and length, starting within
//     the MPI-IO call). An X_MPIIO call with neither has no place: it is
//     left out, and with layer "auto" its rank replays its POSIX calls of
//     that file instead;
//   - no open is invented as if the log had it: the first POSIX call of a
//     rank on a file is preceded by an inherit event (a descriptor the
//     trace did not see opened, flags and position unknown); before the
//     first MPI-IO call of a rank on a file, an MPI_File_open on
//     MPI_COMM_SELF (DXT does not say which communicator opened it), with
//     MPI_MODE_CREATE|MPI_MODE_RDWR if the rank writes it, MPI_MODE_RDONLY
//     if it only reads it, is made — the event model has no other way to
//     give a replay an MPI file handle — inside a region labelled Made, so
//     that every reader sees it is not the log's;
//   - Pthread-IDs become thread indexes in order of appearance.
//
// Darshan traces the same I/O twice when a program uses MPI-IO: once as
// the MPI-IO call, once as the POSIX calls the MPI-IO library makes. The
// layer option chooses what the trace holds: "auto" (default) the MPI-IO
// calls of the files a rank used through MPI-IO (when all of them have an
// offset) and the POSIX calls of the others, so that a replay does each
// byte once; "mpiio", "posix", or "all" (both, as Darshan counted them).
//
// The text gives times to 0.1 ms: calls shorter than that show 0 ns, and
// calls less than 0.1 ms apart keep the order of the listing.
package dxt

import (
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
	// Matched counts the X_MPIIO calls the log gives no offset for (-1)
	// that took the offset of the POSIX call the MPI-IO library made for
	// them; Unplaced the calls kept by the layer but left out for want of
	// an offset.
	Matched, Unplaced int64
	// Fallback lists the files a rank used through MPI-IO whose X_MPIIO
	// calls (of that rank) do not all have an offset: with layer auto,
	// that rank's POSIX calls of the file are kept instead.
	Fallback []string
	// Inherited counts the inherit events the import made (the first
	// POSIX call of a rank on a file), Opens the MPI_File_open it made
	// (in regions labelled Made).
	Inherited, Opens int64
	// Incomplete lists what darshan-dxt-parser said holds incomplete data
	// (Darshan ran out of its DXT memory: calls are missing).
	Incomplete []string
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
	if err := p.nprocs(); err != nil {
		return nil, err
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
	t.Incomplete = p.incomplete
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
	var posix, mpiio bool
	for _, evs := range t.evs {
		for i := range evs {
			switch evs[i].Op {
			case trace.OpPwrite, trace.OpPread:
				posix = true
			case trace.OpMPIFileWriteAt, trace.OpMPIFileReadAt:
				mpiio = true
			}
		}
	}
	if posix {
		n = append(n, "DXT does not say which POSIX call made a line (read, pread, readv…): X_POSIX lines are pread/pwrite at their offsets")
	}
	if mpiio {
		n = append(n, "DXT does not say which MPI-IO call made a line (collective or not, at an offset, an individual or shared pointer, non-blocking): X_MPIIO lines are MPI_File_read_at/write_at at their byte offsets, independent calls (the synchronisation of collective calls is not in the log)")
	}
	if t.Inherited > 0 {
		n = append(n, fmt.Sprintf("DXT has no opens: the %d files ranks used through POSIX are descriptors the trace did not see opened (inherit events, flags unknown)", t.Inherited))
	}
	if t.Opens > 0 {
		n = append(n, fmt.Sprintf("DXT has no MPI_File_open: %d were made on MPI_COMM_SELF so that a replay can open the files, each in a region %q", t.Opens, Made))
	}
	if t.Matched > 0 {
		n = append(n, fmt.Sprintf("%d X_MPIIO calls have no offset in the log (Darshan built with Open MPI records none): each took the offset of the POSIX call the MPI-IO library made for it", t.Matched))
	}
	if len(t.Fallback) > 0 && t.layer == "auto" {
		n = append(n, fmt.Sprintf("X_MPIIO calls of %d files (%s) have no offset and no POSIX call to take it from (collective buffering moves the data to other ranks): the ranks' POSIX calls of those files are kept instead", len(t.Fallback), strings.Join(clipList(t.Fallback, 3), ", ")))
	}
	if t.Unplaced > 0 {
		n = append(n, fmt.Sprintf("%d calls without an offset in the log nor a POSIX call to take it from left out (--layer %s; --layer posix keeps the file system's calls)", t.Unplaced, t.layer))
	}
	switch {
	case t.Dropped[POSIX] > 0 && t.layer == "auto":
		n = append(n, fmt.Sprintf("%d X_POSIX calls that the MPI-IO library made for X_MPIIO calls left out, so that a replay does them once (--layer all keeps both)", t.Dropped[POSIX]))
	case t.Dropped[POSIX] > 0:
		n = append(n, fmt.Sprintf("%d X_POSIX calls left out (--layer %s)", t.Dropped[POSIX], t.layer))
	}
	if t.Dropped[MPIIO] > 0 {
		n = append(n, fmt.Sprintf("%d X_MPIIO calls left out (--layer %s)", t.Dropped[MPIIO], t.layer))
	}
	for _, m := range t.Incomplete {
		n = append(n, fmt.Sprintf("darshan-dxt-parser says the %s module holds incomplete data (Darshan ran out of DXT memory): calls are missing from the log", m))
	}
	n = append(n, t.Mismatched...)
	return n
}

func clipList(l []string, k int) []string {
	if len(l) <= k {
		return l
	}
	return append(l[:k:k], fmt.Sprintf("%d more", len(l)-k))
}

type parser struct {
	name       string
	line       int
	files      map[string]int
	names      []string
	hosts      map[string]bool
	hostOf     map[uint32]string
	records    []*record
	cur        *record
	module     Module
	thrCol     bool // the column header names Pthread-ID
	segs       []segment
	header     map[string]string
	nprocsLine int
	incomplete []string
}

// nprocs checks the job's number of processes the header gives against
// the ranks the log lists: at least one more than the highest, and no
// more than a trace holds.
func (p *parser) nprocs() error {
	v, ok := p.header["nprocs"]
	if !ok {
		return nil
	}
	var top uint32
	for _, s := range p.segs {
		top = max(top, s.rank)
	}
	n, err := strconv.ParseUint(v, 10, 64)
	switch {
	case err != nil || n == 0:
		return fmt.Errorf("%s:%d: nprocs %q: want the number of processes of the job", p.name, p.nprocsLine, v)
	case n > trace.MaxRanks:
		return fmt.Errorf("%s:%d: nprocs %d: more processes than a trace holds (%d); the log lists ranks up to %d", p.name, p.nprocsLine, n, uint64(trace.MaxRanks), top)
	case n <= uint64(top):
		return fmt.Errorf("%s:%d: nprocs %d, but the log lists rank %d", p.name, p.nprocsLine, n, top)
	}
	return nil
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", p.name, p.line, fmt.Sprintf(format, args...))
}

func (p *parser) parse(r io.Reader) error {
	lines := textutil.NewLines(r, p.name)
	p.header = map[string]string{}
	p.hostOf = map[uint32]string{}
	for {
		b, err := lines.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		p.line = lines.Line()
		if err := p.parseLine(string(b)); err != nil {
			return err
		}
	}
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
	case strings.HasPrefix(t, "#") && strings.Contains(t, "contains incomplete data"):
		// "# *WARNING*: The DXT_POSIX module contains incomplete data!"
		// (darshan-dxt-parser --show-incomplete).
		for _, m := range []string{"DXT_POSIX", "DXT_MPIIO"} {
			if strings.Contains(t, m) && !slices.Contains(p.incomplete, m) {
				p.incomplete = append(p.incomplete, m)
			}
		}
		return nil
	case strings.HasPrefix(t, "# Module"):
		p.thrCol = strings.Contains(t, "Pthread-ID")
		return nil
	case strings.HasPrefix(t, "#"):
		if k, v, ok := strings.Cut(strings.TrimSpace(t[1:]), ":"); ok && p.cur == nil {
			if _, seen := p.header[k]; !seen {
				p.header[k] = strings.TrimSpace(v)
				if k == "nprocs" {
					p.nprocsLine = p.line
				}
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
		if err := textutil.CheckPath(len(name)); err != nil {
			return p.errorf("file_name: %v", err)
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
		if err != nil || rk >= trace.MaxRanks {
			return p.errorf("rank %q: want 0 to %d", strings.TrimSpace(v), trace.MaxRanks-1)
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
	if n, err := strconv.Atoi(p.header["nprocs"]); err == nil && n > 0 { // checked by nprocs
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

// Made is the label of the region around every event Read makes that
// the log does not have (the MPI_File_open a replay needs).
const Made = "dxt: not in the log (made for the replay)"

// rf is a rank and a file.
type rf struct {
	rank uint32
	file int
}

// build turns the segments into per-rank event streams.
func (t *Trace) build(p *parser) {
	t.matchOffsets(p.segs)
	// Which (rank, file) pairs have MPI-IO calls, and whether all of them
	// have a place.
	mpiio := map[rf]bool{}
	placed := map[rf]bool{}
	for _, s := range p.segs {
		if s.module == MPIIO {
			k := rf{s.rank, s.file}
			if !mpiio[k] {
				mpiio[k], placed[k] = true, true
			}
			if s.offset < 0 && !s.found {
				placed[k] = false
			}
		}
	}
	for k, ok := range placed {
		if !ok {
			t.Fallback = append(t.Fallback, p.names[k.file])
		}
	}
	slices.Sort(t.Fallback)
	t.Fallback = slices.Compact(t.Fallback)
	keep := func(s *segment) bool {
		k := rf{s.rank, s.file}
		switch t.layer {
		case "posix":
			return s.module == POSIX
		case "mpiio":
			return s.module == MPIIO
		case "auto":
			if s.module == POSIX {
				return !mpiio[k] || !placed[k]
			}
			return placed[k]
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
		if s.module == MPIIO && s.offset < 0 && !s.found {
			t.Unplaced++
			continue
		}
		if s.module == POSIX && s.offset < 0 {
			t.Unplaced++
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
	file    int
	module  Module
	write   bool
	fd      int32
	started bool
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
	var fds, handles int32
	for _, s := range segs {
		k := ukey{s.file, s.module}
		u := uses[k]
		if u == nil {
			u = &fileUse{file: s.file, module: s.module}
			if s.module == MPIIO {
				handles++
				u.fd = handles // MPI file handle ids from 1
			} else {
				u.fd = 3 + fds // descriptors from 3
				fds++
			}
			uses[k] = u
		}
		u.write = u.write || s.write
	}
	made := t.paths.Intern(Made)
	evs := make([]trace.Event, 0, len(segs)+len(uses)*3)
	for _, s := range segs {
		u := uses[ukey{s.file, s.module}]
		th := thread(s)
		path := t.paths.Intern(p.names[s.file])
		if !u.started {
			u.started = true
			if u.module == POSIX {
				// The log does not show the open: a descriptor the trace
				// did not see opened, flags and position unknown.
				evs = append(evs, trace.Event{Op: trace.OpInherit, Rank: r, Thread: th, Start: s.start, Path: path, FD: u.fd, Ret: int64(u.fd), Offset: -1})
				t.Inherited++
			} else {
				open := trace.Event{Op: trace.OpMPIFileOpen, Rank: r, Thread: th, Start: s.start, Path: path, FD: u.fd,
					Comm: trace.CommSelf, Flags: trace.MPIModeRdonly}
				if u.write {
					open.Flags = trace.MPIModeCreate | trace.MPIModeRdwr
				}
				evs = append(evs,
					trace.Event{Op: trace.OpRegionBegin, Rank: r, Thread: th, Start: s.start, Path: made},
					open,
					trace.Event{Op: trace.OpRegionEnd, Rank: r, Thread: th, Start: s.start, Path: made})
				t.Opens++
			}
		}
		e := trace.Event{Rank: r, Thread: th, Start: s.start, Dur: s.end - s.start, Path: path, FD: u.fd, Size: s.length, Ret: s.length, Offset: s.offset}
		switch {
		case s.module == POSIX && s.write:
			e.Op = trace.OpPwrite
		case s.module == POSIX:
			e.Op = trace.OpPread
		case s.write:
			e.Op = trace.OpMPIFileWriteAt
		default:
			e.Op = trace.OpMPIFileReadAt
		}
		if s.module == MPIIO && s.offset < 0 {
			e.Offset = s.posOff
		}
		evs = append(evs, e)
	}
	return evs
}
