package fio

import (
	"bufio"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/iotrace/iotrace/convert/internal/textutil"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/state"
	"github.com/iotrace/iotrace/trace/target"
)

// ExportOptions configure Export.
type ExportOptions struct {
	// Target is the directory the replayed files go to, as fio sees it:
	// "" puts them relative to the directory fio runs in (the job file's
	// directory); a relative Target is also relative to it.
	Target string
	// Map rewrites path prefixes before they are placed (see
	// target.Mapper): the same rules as ioreplay --map.
	Map []target.MapRule
	// NoStall writes replay_no_stall=1: fio issues the calls as fast as
	// it can, in order, ignoring the timestamps.
	NoStall bool
	// Speed scales the recorded rate (replay_time_scale = 100 × Speed);
	// 0 means 1.
	Speed float64
	// Source names the trace in the job file's header.
	Source string
}

// Summary says what an export wrote and what it left out.
type Summary struct {
	Job        string   // the job file
	Iologs     []string // the iologs, the prepare log first if there is one
	Ranks      int      // ranks of the trace
	Jobs       int      // rank jobs written
	Events     int64    // events read
	Reads      int64    // read entries of the rank jobs
	Writes     int64    // write entries of the rank jobs
	ReadBytes  int64
	WriteBytes int64
	Syncs      int64
	// Split counts calls that became several entries: MPI-IO calls
	// through a strided file view, and calls longer than 4 GiB − 1.
	Split int64
	// Left counts events with no iolog form, by call name or reason.
	Left map[string]int64
	// Folded counts calls whose effect is in the entries' offsets
	// (seeks, file views) or in the entries themselves (opens, closes).
	Folded   map[string]int64
	Renamed  int                // file names changed to suit fio's reader
	Prepared []target.PrepFile  // files the prepare job writes (fio names)
	NoJob    []uint32           // ranks with no read or write fio can replay
	Dirs     []string           // directories created for the files
	Paths    []target.PathEntry // where each trace path went
}

// LeftOut is the number of events with no iolog form.
func (s *Summary) LeftOut() int64 {
	var n int64
	for _, c := range s.Left {
		n += c
	}
	return n
}

// Note is a one-line account of what the export left out, or "" if
// nothing was.
func (s *Summary) Note() string {
	n := s.LeftOut()
	if n == 0 && len(s.NoJob) == 0 && s.Renamed == 0 {
		return ""
	}
	var parts []string
	if n > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d events have no fio iolog form and were left out (%s)", n, s.Events, textutil.CountList(s.Left, 8)))
	}
	if len(s.NoJob) > 0 {
		parts = append(parts, fmt.Sprintf("%d ranks have no read or write fio can replay and got no job", len(s.NoJob)))
	}
	if s.Renamed > 0 {
		parts = append(parts, fmt.Sprintf("%d file names were changed to suit fio's iolog reader (white space, length)", s.Renamed))
	}
	return strings.Join(parts, "; ")
}

// Reasons an event is left out, as Summary.Left names them.
const (
	leftFailed  = "failed calls"
	leftEmpty   = "calls that moved no data"
	leftUnknown = "calls on descriptors of unknown files"
	leftSpecial = "calls on /dev, /proc, /sys"
	leftSync    = "syncs of files fio does not open"
	leftInMPIIO = "POSIX calls made inside MPI-IO calls (the MPI-IO calls are exported)"
)

// Export writes t as the fio job file job, with one iolog per rank next to
// it (JOBBASE-rankN.iolog) and, if the trace reads files it does not
// write, a prepare iolog that writes them first. The files the replay
// touches are placed by the replay's rules (target.Mapper): never at the
// trace's own absolute paths, never under /dev, /proc or /sys, never
// above the target. Export creates the directories they need.
//
// Calls fio's iologs cannot express (metadata, truncation, communication,
// markers, failed calls) are left out and counted in the Summary. fio
// keeps no order between its jobs, so files a rank reads are prepared to
// the extent it reads unless the rank wrote them itself first.
func Export(t trace.Trace, job string, opts ExportOptions) (s *Summary, err error) {
	if opts.Speed == 0 {
		opts.Speed = 1
	}
	scale := int(math.Round(opts.Speed * 100))
	if opts.Speed < 0 || scale < 1 || math.IsInf(opts.Speed, 0) || math.IsNaN(opts.Speed) {
		return nil, fmt.Errorf("speed %v: want a factor of at least 0.01 (fio's replay_time_scale is a whole percentage)", opts.Speed)
	}
	plan, err := target.Analyze(t, opts.Map)
	if err != nil {
		return nil, err
	}
	ex := &exporter{
		t: t, opts: opts, job: job,
		s:      &Summary{Job: job, Ranks: len(t.Ranks()), Left: map[string]int64{}, Folded: map[string]int64{}, Paths: plan.Paths},
		byPath: map[string]target.PathEntry{},
		names:  map[string]string{},
		need:   map[string]int64{},
		dirs:   map[string]bool{},
	}
	for _, p := range plan.Paths {
		ex.byPath[p.Trace] = p
	}
	var created []string
	defer func() {
		if err != nil {
			for _, f := range created {
				os.Remove(f)
			}
			s = nil
		}
	}()
	if ex.t0, err = firstStart(t); err != nil {
		return nil, err
	}
	base := jobBase(job)
	dir := filepath.Dir(job)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for _, r := range t.Ranks() {
		name := fmt.Sprintf("%s-rank%d.iolog", base, r)
		file := filepath.Join(dir, name)
		created = append(created, file)
		n, err := ex.rank(r, file)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			os.Remove(file)
			created = created[:len(created)-1]
			ex.s.NoJob = append(ex.s.NoJob, r)
			continue
		}
		ex.jobs = append(ex.jobs, jobEntry{rank: r, iolog: name})
		ex.s.Iologs = append(ex.s.Iologs, file)
		ex.s.Jobs++
	}
	if ex.s.Jobs == 0 {
		return nil, errors.New("no rank has a read or write fio can replay: nothing to export")
	}
	// Prepare what the trace reads but does not write first.
	for _, f := range plan.Files {
		if f.Size <= 0 {
			continue // fio opens only files it reads or writes
		}
		n := ex.fioName(f.Path)
		ex.need[n] = max(ex.need[n], f.Size)
	}
	for n, size := range ex.need {
		ex.s.Prepared = append(ex.s.Prepared, target.PrepFile{Path: n, Size: size})
	}
	slices.SortFunc(ex.s.Prepared, func(a, b target.PrepFile) int { return strings.Compare(a.Path, b.Path) })
	prep := ""
	if len(ex.s.Prepared) > 0 {
		prep = base + "-prepare.iolog"
		file := filepath.Join(dir, prep)
		created = append(created, file)
		if err := writePrepare(file, ex.s.Prepared); err != nil {
			return nil, err
		}
		ex.s.Iologs = append([]string{file}, ex.s.Iologs...)
		for _, f := range ex.s.Prepared {
			ex.dir(f.Path)
		}
	}
	for d := range ex.dirs {
		ex.s.Dirs = append(ex.s.Dirs, d)
	}
	slices.Sort(ex.s.Dirs)
	// The directories are made now and again by the job itself (fio
	// does not make them), so that the export runs where it is copied.
	for _, d := range ex.s.Dirs {
		full := d
		if !filepath.IsAbs(d) {
			full = filepath.Join(dir, d)
		}
		if err := os.MkdirAll(full, 0o755); err != nil {
			return nil, err
		}
	}
	script := ""
	if leaves := leafDirs(ex.s.Dirs); len(leaves) > 0 {
		script = base + "-dirs.sh"
		file := filepath.Join(dir, script)
		created = append(created, file)
		if err := writeDirScript(file, leaves); err != nil {
			return nil, err
		}
	}
	created = append(created, job)
	if err := ex.writeJob(job, script, prep, scale); err != nil {
		return nil, err
	}
	return ex.s, nil
}

// jobBase is the job file's name without its extension, made safe for a
// fio option value (no ':' or white space).
func jobBase(job string) string {
	b := strings.TrimSuffix(filepath.Base(job), filepath.Ext(job))
	b = strings.Map(func(r rune) rune {
		if r == ':' || r <= ' ' || r == 0x7f {
			return '_'
		}
		return r
	}, b)
	if b == "" {
		b = "job"
	}
	return b
}

// firstStart returns the earliest start of any rank's first event: time 0
// of the iologs.
func firstStart(t trace.Trace) (int64, error) {
	t0 := int64(math.MaxInt64)
	buf := make([]trace.Event, 16)
	for _, r := range t.Ranks() {
		src, err := t.Rank(r)
		if err != nil {
			return 0, err
		}
		n, err := src.ReadEvents(buf)
		if c, ok := src.(io.Closer); ok {
			c.Close()
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("rank %d: %w", r, err)
		}
		for _, e := range buf[:n] {
			t0 = min(t0, e.Start)
		}
	}
	if t0 == math.MaxInt64 {
		t0 = 0
	}
	return t0, nil
}

type jobEntry struct {
	rank  uint32
	iolog string
}

type exporter struct {
	t      trace.Trace
	opts   ExportOptions
	job    string
	s      *Summary
	t0     int64
	byPath map[string]target.PathEntry
	names  map[string]string // target-relative path → fio name
	need   map[string]int64  // fio name → extent to prepare
	dirs   map[string]bool   // directories the fio names need
	jobs   []jobEntry
}

// fioName is the name fio uses for the target-relative path rel: under
// Target, with white space replaced, at most maxName bytes.
func (ex *exporter) fioName(rel string) string {
	if n, ok := ex.names[rel]; ok {
		return n
	}
	n := rel
	if ex.opts.Target != "" {
		n = path.Join(filepath.ToSlash(ex.opts.Target), rel)
	}
	clean := strings.Map(func(r rune) rune {
		if r <= ' ' || r == 0x7f {
			return '_'
		}
		return r
	}, n)
	if len(clean) > maxName-1 {
		h := fnv.New64a()
		h.Write([]byte(rel))
		clean = fmt.Sprintf("iotrace-long-%016x", h.Sum64())
		if ex.opts.Target != "" {
			clean = path.Join(filepath.ToSlash(ex.opts.Target), clean)
		}
	}
	if clean != n {
		ex.s.Renamed++
	}
	ex.names[rel] = clean
	ex.dir(clean)
	return clean
}

func (ex *exporter) dir(name string) {
	if d := path.Dir(name); d != "." && d != "/" {
		ex.dirs[d] = true
	}
}

// fileState is what one rank's export knows of a file.
type fileState struct {
	name   string // fio name; "" when the file is not replayed
	reason string // why not, for Summary.Left
	added  bool   // "add" written
	open   bool   // open in fio
	held   bool   // opened while the trace had a descriptor on it: closed when the trace closes the last
	wrote  int64  // end of the furthest write by this rank
}

type rankExport struct {
	ex      *exporter
	iw      *iologWriter
	f       *state.Follower[struct{}, struct{}]
	refs    map[trace.PathID]int // open file descriptions and MPI handles on each path
	files   map[trace.PathID]*fileState
	entries int64 // read and write entries written
	first   bool  // the first line is written
	// The paths whose last description or handle closed since closed
	// last ran, in that order: the files it may close in fio.
	released []trace.PathID
}

func newRankExport(ex *exporter, iw *iologWriter) *rankExport {
	rx := &rankExport{ex: ex, iw: iw, f: state.New[struct{}, struct{}](nil),
		refs: map[trace.PathID]int{}, files: map[trace.PathID]*fileState{}}
	rx.f.OnRelease = func(d *state.Desc[struct{}]) { rx.unref(d.Path) }
	rx.f.OnHandleClose = func(h *state.Handle[struct{}]) { rx.unref(h.Path) }
	return rx
}

func (rx *rankExport) unref(p trace.PathID) {
	if rx.refs[p] <= 1 {
		delete(rx.refs, p)
		rx.released = append(rx.released, p)
		return
	}
	rx.refs[p]--
}

// rank writes the iolog of rank r to file and returns its number of read
// and write entries.
func (ex *exporter) rank(r uint32, file string) (int64, error) {
	f, err := os.Create(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	iw, err := newIologWriter(f)
	if err != nil {
		return 0, err
	}
	src, err := ex.t.Rank(r)
	if err != nil {
		return 0, fmt.Errorf("rank %d: %w", r, err)
	}
	defer func() {
		if c, ok := src.(io.Closer); ok {
			c.Close()
		}
	}()
	rx := newRankExport(ex, iw)
	buf := make([]trace.Event, trace.BatchSize)
	var last int64
	for {
		n, rerr := src.ReadEvents(buf)
		for i := range buf[:n] {
			e := &buf[i]
			ex.s.Events++
			if err := rx.event(e); err != nil {
				return 0, err
			}
			last = max(last, e.End())
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return 0, fmt.Errorf("rank %d: %w", r, rerr)
		}
	}
	// Close what is still open at the end of the trace.
	for _, fs := range rx.sortedFiles() {
		if fs.open {
			if err := iw.file(rx.us(last), fs.name, "close"); err != nil {
				return 0, err
			}
		}
	}
	if err := iw.flush(); err != nil {
		return 0, err
	}
	return rx.entries, f.Close()
}

func (rx *rankExport) sortedFiles() []*fileState {
	var l []*fileState
	for _, fs := range rx.files {
		l = append(l, fs)
	}
	slices.SortFunc(l, func(a, b *fileState) int { return strings.Compare(a.name, b.name) })
	return l
}

// us is the iolog timestamp of a trace time.
func (rx *rankExport) us(ns int64) int64 {
	return max(ns-rx.ex.t0, 0)/1000 + 1
}

// file returns the state of the file id, placing it on first use.
func (rx *rankExport) file(id trace.PathID) *fileState {
	if fs := rx.files[id]; fs != nil {
		return fs
	}
	fs := &fileState{}
	p, ok := rx.ex.byPath[rx.ex.t.Path(id)]
	switch {
	case !ok:
		fs.reason = leftUnknown
	case p.Note.Skipped() || p.Target == "":
		fs.reason = leftSpecial
	default:
		fs.name = rx.ex.fioName(p.Target)
	}
	rx.files[id] = fs
	return fs
}

// ensureOpen writes the add and open of fs if fio does not have it open.
func (rx *rankExport) ensureOpen(fs *fileState, us int64, held bool) error {
	if fs.open {
		return nil
	}
	if !fs.added {
		// The first line of an iolog is issued at once whatever its
		// timestamp: an add at 1 µs keeps the gap to the first call.
		at := us
		if !rx.first {
			at = 1
			rx.first = true
		}
		if err := rx.iw.file(at, fs.name, "add"); err != nil {
			return err
		}
		fs.added = true
	}
	fs.open, fs.held = true, held
	return rx.iw.file(us, fs.name, "open")
}

func (rx *rankExport) left(reason string) { rx.ex.s.Left[reason]++ }

func (rx *rankExport) event(e *trace.Event) error {
	s := rx.ex.s
	info := e.Op.Info()
	st := rx.f.Apply(e)
	switch {
	case st.New != nil && st.New != st.Desc:
		rx.refs[st.New.Path]++
	case st.Learnt && st.Desc != nil:
		rx.refs[st.Desc.Path]++
	case e.Op == trace.OpMPIFileOpen && st.Handle != nil:
		rx.refs[st.Handle.Path]++
	}
	id := st.Path
	defer rx.closed(e)
	if e.Flags&trace.InMPIIO != 0 && (info.Class == trace.ClassPOSIX || info.Class == trace.ClassMeta) {
		rx.left(leftInMPIIO)
		return nil
	}
	switch {
	case info.Class == trace.ClassComm || info.Class == trace.ClassMarker || info.Class == trace.ClassUnknown ||
		info.Class == trace.ClassProcess:
		rx.left(info.Name)
		return nil
	case info.Dir == trace.DirCopy:
		rx.left(info.Name)
		return nil
	case info.Dir != trace.DirNone:
		var v state.View
		if st.Handle != nil {
			v = st.Handle.View
		}
		return rx.data(e, id, info, v)
	}
	switch e.Op {
	case trace.OpFsync, trace.OpFdatasync, trace.OpMPIFileSync:
		if e.Ret < 0 {
			rx.left(leftFailed)
			return nil
		}
		fs := rx.files[id]
		if id == 0 || fs == nil || !fs.open {
			rx.left(leftSync)
			return nil
		}
		action := "sync"
		if e.Op == trace.OpFdatasync {
			action = "datasync"
		}
		s.Syncs++
		return rx.iw.io(rx.us(e.Start), fs.name, action, 0, 0)
	case trace.OpMPIFileSetView, trace.OpLseek, trace.OpFseek, trace.OpMPIFileSeek, trace.OpMPIFileSeekShared, trace.OpFflush:
		s.Folded[info.Name]++
	default:
		switch info.Family {
		case "open", "close", "dup":
			if e.Ret < 0 {
				rx.left(leftFailed)
			} else {
				s.Folded[info.Name]++
			}
		default:
			if e.Op == trace.OpMPIFileOpen || e.Op == trace.OpMPIFileClose {
				s.Folded[info.Name]++
				return nil
			}
			rx.left(info.Name)
		}
	}
	return nil
}

// closed closes in fio the files the trace no longer has open after e.
func (rx *rankExport) closed(e *trace.Event) {
	switch e.Op.Info().FD {
	case trace.FDClose, trace.FDCloseRange, trace.FDDup:
	default:
		if e.Op.Info().Proc != trace.ProcExit && e.Op.Info().Proc != trace.ProcExec {
			return
		}
	}
	// Only the files released since the last time can have lost their
	// last reference: looking at every file made a trace of many files
	// quadratic.
	for _, id := range rx.released {
		if fs := rx.files[id]; fs != nil && fs.open && fs.held && rx.refs[id] == 0 {
			fs.open = false
			// An error here shows again at the flush.
			rx.iw.file(rx.us(e.Start), fs.name, "close")
		}
	}
	rx.released = rx.released[:0]
}

func (rx *rankExport) data(e *trace.Event, id trace.PathID, info trace.OpInfo, v state.View) error {
	s := rx.ex.s
	switch {
	case e.Ret < 0:
		rx.left(leftFailed)
		return nil
	case e.Ret == 0:
		rx.left(leftEmpty)
		return nil
	case id == 0:
		rx.left(leftUnknown)
		return nil
	}
	fs := rx.file(id)
	if fs.name == "" {
		rx.left(fs.reason)
		return nil
	}
	us := rx.us(e.Start)
	if err := rx.ensureOpen(fs, us, rx.refs[id] > 0); err != nil {
		return err
	}
	write := info.Dir == trace.DirWrite
	action := "read"
	if write {
		action = "write"
	}
	pieces := 0
	err := v.Pieces(max(e.Offset, 0), e.Ret, func(off, n int64) error {
		for n > 0 {
			k := min(n, maxLen)
			if err := rx.iw.io(us, fs.name, action, off, k); err != nil {
				return err
			}
			pieces++
			rx.entries++
			if write {
				s.Writes++
				s.WriteBytes += k
				fs.wrote = max(fs.wrote, off+k)
			} else {
				s.Reads++
				s.ReadBytes += k
				if end := off + k; end > fs.wrote {
					rx.ex.need[fs.name] = max(rx.ex.need[fs.name], end)
				}
			}
			off += k
			n -= k
		}
		return nil
	})
	if pieces > 1 {
		s.Split++
	}
	return err
}

// writePrepare writes the iolog of the prepare job: every file written
// whole, in 1 MiB pieces.
func writePrepare(file string, files []target.PrepFile) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	iw, err := newIologWriter(f)
	if err != nil {
		return err
	}
	const piece = 1 << 20
	for _, p := range files {
		if err := iw.file(1, p.Path, "add"); err != nil {
			return err
		}
		if err := iw.file(1, p.Path, "open"); err != nil {
			return err
		}
		for off := int64(0); off < p.Size; off += piece {
			if err := iw.io(1, p.Path, "write", off, min(piece, p.Size-off)); err != nil {
				return err
			}
		}
		if err := iw.file(1, p.Path, "close"); err != nil {
			return err
		}
	}
	if err := iw.flush(); err != nil {
		return err
	}
	return f.Close()
}

func (ex *exporter) writeJob(job, script, prep string, scale int) error {
	f, err := os.Create(job)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	s := ex.s
	src := ex.opts.Source
	if src == "" {
		src = "a trace"
	}
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	p("; fio job written by iotrace convert --to fio from %s", src)
	p("; %d ranks, %d events: %d reads (%d bytes), %d writes (%d bytes), %d syncs.", s.Ranks, s.Events, s.Reads, s.ReadBytes, s.Writes, s.WriteBytes, s.Syncs)
	p(";")
	p("; Run it from this directory:  fio %s", filepath.Base(job))
	where := "relative to the directory fio runs in"
	if ex.opts.Target != "" {
		where = "under " + ex.opts.Target
	}
	p("; The files it reads and writes are %s, placed by the replay's", where)
	p("; rules (docs/CONVERT.md, fio): never the trace's own absolute paths.")
	p(";")
	p("; Each [rankN] job replays one rank's reads, writes and syncs from its iolog")
	p("; (fio iolog version 3: microseconds from the start of the trace), with")
	p("; psync (pread/pwrite), one call at a time, as the rank issued them.")
	p("; Timing: fio sleeps the recorded gap between consecutive calls, measured")
	p("; from the issue of the previous call (a call that runs long delays the")
	p("; rest; nothing catches up). replay_time_scale=200 replays at twice the")
	p("; recorded rate (ioreplay --timing original --speed 2); replay_no_stall=1")
	p("; issues the calls as fast as possible (ioreplay --timing afap).")
	p("; fio keeps no order between jobs: barriers and messages are not replayed.")
	if len(s.Prepared) > 0 {
		p("; [prepare] first writes the %d files the ranks read but do not write", len(s.Prepared))
		p("; themselves, at the size they read; the rank jobs start when it is done.")
	}
	if n := s.LeftOut(); n > 0 {
		p(";")
		p("; Left out, no iolog form (%d events): %s.", n, textutil.CountList(s.Left, 20))
	}
	if len(s.Folded) > 0 {
		p("; In the entries' offsets and opens: %s.", textutil.CountList(s.Folded, 20))
	}
	if s.Split > 0 {
		p("; %d calls became several entries (strided MPI-IO file views, calls over 4 GiB).", s.Split)
	}
	if len(s.NoJob) > 0 {
		p("; No job for ranks without a read or write fio can replay: %s.", rankList(s.NoJob))
	}
	p("")
	p("[global]")
	p("ioengine=psync")
	p("replay_time_scale=%d", scale)
	if ex.opts.NoStall {
		p("replay_no_stall=1")
	} else {
		p(";replay_no_stall=1")
	}
	wall := false // the next job waits for those before it
	if script != "" {
		p("")
		p("; Makes the directories of the files (fio does not): sh %s.", script)
		p("[directories]")
		p("ioengine=null")
		p("size=4k")
		p("exec_prerun=sh %s", script)
		wall = true
	}
	if prep != "" {
		p("")
		p("[prepare]")
		if wall {
			p("stonewall")
		}
		p("read_iolog=%s", prep)
		p("replay_no_stall=1")
		wall = true
	}
	for i, j := range ex.jobs {
		p("")
		p("[rank%d]", j.rank)
		if i == 0 && wall {
			p("stonewall")
		}
		p("read_iolog=%s", j.iolog)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

func rankList(rs []uint32) string {
	var b []string
	for i, r := range rs {
		if i == 20 {
			b = append(b, fmt.Sprintf("… (%d more)", len(rs)-20))
			break
		}
		b = append(b, strconv.FormatUint(uint64(r), 10))
	}
	return strings.Join(b, " ")
}

// leafDirs are the directories no other one is below: mkdir -p makes
// the rest. Each directory marks its ancestors, so that it costs the
// length of the paths, not a comparison of every pair (100,000
// directories took minutes).
func leafDirs(dirs []string) []string {
	inner := make(map[string]bool, len(dirs))
	for _, d := range dirs {
		for p := path.Dir(d); p != "." && p != "/" && !inner[p]; p = path.Dir(p) {
			inner[p] = true
		}
	}
	var out []string
	for _, d := range dirs {
		if !inner[d] {
			out = append(out, d)
		}
	}
	return out
}

// writeDirScript writes the shell script that makes the directories.
func writeDirScript(file string, dirs []string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	w.WriteString("#!/bin/sh\n# The directories of the files of a fio job written by iotrace convert --to fio.\nset -e\n")
	for i := 0; i < len(dirs); i += 32 {
		w.WriteString("mkdir -p --")
		for _, d := range dirs[i:min(i+32, len(dirs))] {
			w.WriteString(" '" + strings.ReplaceAll(d, "'", `'\''`) + "'")
		}
		w.WriteString("\n")
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}
