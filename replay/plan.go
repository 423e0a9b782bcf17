package replay

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"slices"
	"strings"

	"github.com/iotrace/iotrace/trace"
)

// Plan is what a replay found in its (transformed) trace before running
// it: where each path goes, what to prepare, which ranks communicate, and
// how many calls each rank makes.
type Plan struct {
	Ranks   []uint32
	Events  int64
	PerRank []RankCount
	Prefix  string      // common prefix stripped from absolute paths
	Paths   []PathEntry // every distinct trace path, sorted
	Dirs    []string    // directories to create, parents first
	Files   []PrepFile  // files to create, sorted
	// Groups holds the members of each communicator other than
	// CommWorld and CommSelf: the ranks that used it.
	Groups map[uint32][]uint32
	// FileComms lists the communicators the trace opens MPI files on,
	// sorted.
	FileComms []uint32

	mapped map[trace.PathID]mapping
	names  map[string]trace.PathID // trace path → one of its ids
	mapper *Mapper
}

// RankCount is one rank's calls by op.
type RankCount struct {
	Rank   uint32
	Events int64
	Ops    map[trace.Op]int64
}

// PathEntry is where one trace path goes.
type PathEntry struct {
	Trace  string
	Target string // relative to the target directory; "" when skipped
	Note   PathNote
}

// PrepFile is a file the prepare phase creates.
type PrepFile struct {
	Path string // relative to the target directory
	Size int64
}

type mapping struct {
	rel  string
	note PathNote
}

// first-reference kinds of a path, in the order of preference.
type refKind uint8

const (
	refNone     refKind = iota
	refCreate           // created by the trace: O_CREAT with O_TRUNC or O_EXCL, creat, rename target
	refMaybe            // O_CREAT without O_TRUNC/O_EXCL, MPI_MODE_CREATE: may have existed
	refExisting         // used as an existing file
	refAbsent           // the first use failed with ENOENT
	refMkdir            // created by the trace with mkdir
	refDir              // used as an existing directory
)

// pathUse is what the plan learns about one trace path id.
type pathUse struct {
	first   refKind
	firstAt when
	dir     bool // used as a directory

	// What the file must hold before the replay. A read (or a SEEK_END
	// seek, which sees the size) needs data the trace did not write
	// itself when it comes before the trace's first write to the file,
	// or when it reaches past everything the trace writes there.
	early     marks // reads that came before the first write known so far
	readEnd   int64 // end of the furthest read
	written   int64 // end of the furthest write (or truncation)
	writeFrom when  // the first write, truncating open or truncation
}

// when orders events of different ranks: by the number of collective
// calls on MPI_COMM_WORLD the rank made before (every rank makes them in
// the same order, so a call after the k-th comes after every call before
// it on any rank, even where the ranks' clocks do not agree, as in the
// streams of a script's ranks read on their own), then by start time.
type when struct{ epoch, start int64 }

var never = when{math.MaxInt64, math.MaxInt64}

func (a when) before(b when) bool {
	return a.epoch < b.epoch || a.epoch == b.epoch && a.start < b.start
}

func newPathUse() *pathUse { return &pathUse{writeFrom: never} }

// read notes that the trace read (or saw the size) up to end at w.
func (u *pathUse) read(w when, end int64) {
	u.readEnd = max(u.readEnd, end)
	if w.before(u.writeFrom) {
		u.early.add(w, end)
	}
}

// write notes that the trace wrote (or truncated the file) up to end at
// w; end 0 for a truncating open.
func (u *pathUse) write(w when, end int64) {
	u.written = max(u.written, end)
	if w.before(u.writeFrom) {
		u.writeFrom = w
	}
}

// merge adds what o learned about the same file (another id of it).
func (u *pathUse) merge(o *pathUse) {
	if u.first == refNone || (o.first != refNone && o.firstAt.before(u.firstAt)) {
		u.first, u.firstAt = o.first, o.firstAt
	}
	u.dir = u.dir || o.dir
	u.early.m = append(u.early.m, o.early.m...)
	u.early.compact()
	u.readEnd = max(u.readEnd, o.readEnd)
	u.written = max(u.written, o.written)
	if o.writeFrom.before(u.writeFrom) {
		u.writeFrom = o.writeFrom
	}
}

// need is the size the file must have before the replay: the end of the
// furthest read that came before the trace's first write to it, or of
// the furthest read when that reaches past every write.
func (u *pathUse) need() int64 {
	n := u.early.before(u.writeFrom)
	if u.readEnd > u.written {
		n = max(n, u.readEnd)
	}
	return n
}

// marks holds the times and ends of reads, at most maxMarks of them:
// beyond that, neighbours in time merge into one at the earlier time that
// ends at the further end, so that before never answers less than the
// reads it stands for (a prepared file is never too short).
type marks struct{ m []mark }

type mark struct {
	at  when
	end int64
}

const maxMarks = 64

func (ms *marks) add(w when, end int64) {
	if n := len(ms.m); n > 0 && !w.before(ms.m[n-1].at) && ms.m[n-1].end >= end {
		return // a rank's calls come in order: covered by the last
	}
	ms.m = append(ms.m, mark{w, end})
	ms.compact()
}

func (ms *marks) compact() {
	if len(ms.m) <= maxMarks {
		return
	}
	slices.SortFunc(ms.m, func(a, b mark) int {
		return cmp.Or(cmp.Compare(a.at.epoch, b.at.epoch), cmp.Compare(a.at.start, b.at.start))
	})
	k := 0
	for i := 0; i < len(ms.m); i += 2 {
		m := ms.m[i]
		if i+1 < len(ms.m) {
			m.end = max(m.end, ms.m[i+1].end)
		}
		ms.m[k] = m
		k++
	}
	ms.m = ms.m[:k]
}

// before returns the end of the furthest read that came before w.
func (ms *marks) before(w when) int64 {
	var n int64
	for _, m := range ms.m {
		if m.at.before(w) {
			n = max(n, m.end)
		}
	}
	return n
}

// makePlan reads every rank of t once. groups names the members of
// communicators the events may not show (a script's groups).
func makePlan(t trace.Trace, rules []MapRule, groups map[uint32][]uint32) (*Plan, error) {
	p := &Plan{Ranks: t.Ranks(), Groups: map[uint32][]uint32{}, mapped: map[trace.PathID]mapping{}, names: map[string]trace.PathID{}}
	uses := map[trace.PathID]*pathUse{}
	use := func(id trace.PathID) *pathUse {
		u := uses[id]
		if u == nil {
			u = newPathUse()
			uses[id] = u
		}
		return u
	}
	ref := func(id trace.PathID, kind refKind, w when) {
		if id == 0 || kind == refNone {
			return
		}
		u := use(id)
		if u.first == refNone || w.before(u.firstAt) {
			u.first, u.firstAt = kind, w
		}
		if kind == refMkdir || kind == refDir {
			u.dir = true
		}
	}
	members := map[uint32]map[uint32]bool{}
	fileComms := map[uint32]bool{}
	for c, rs := range groups {
		members[c] = map[uint32]bool{}
		for _, r := range rs {
			if _, ok := slices.BinarySearch(p.Ranks, r); ok {
				members[c][r] = true
			}
		}
	}
	buf := make([]trace.Event, trace.BatchSize)
	for _, r := range p.Ranks {
		src, err := t.Rank(r)
		if err != nil {
			return nil, fmt.Errorf("rank %d: %w", r, err)
		}
		rc := RankCount{Rank: r, Ops: map[trace.Op]int64{}}
		var counts [1024]int64 // by op, below 1024; the rest in rc.Ops
		var fds trace.Handles
		var epoch int64 // collective calls on MPI_COMM_WORLD so far
		handles := map[int32]*view{}
		for {
			n, err := src.ReadEvents(buf)
			for i := range buf[:n] {
				e := &buf[i]
				if e.Op < 1024 {
					counts[e.Op]++
				} else {
					rc.Ops[e.Op]++
				}
				if e.Op.Dir() != trace.DirNone && e.Op.Class() == trace.ClassPOSIX && e.Path == 0 && e.Ret <= 0 {
					continue // a call that moved nothing: nothing to plan
				}
				cls := e.Op.Class()
				if cls == trace.ClassMarker {
					continue
				}
				if e.Op == trace.OpMPIFileOpen {
					fileComms[e.Comm] = true
				}
				if cls == trace.ClassComm || e.Op == trace.OpMPIFileOpen {
					if e.Comm > trace.CommSelf {
						if members[e.Comm] == nil {
							members[e.Comm] = map[uint32]bool{}
						}
						members[e.Comm][r] = true
					}
					if cls == trace.ClassComm {
						if e.Comm == trace.CommWorld && e.Op.Info().Collective {
							epoch++
						}
						continue
					}
				}
				if e.Path != 0 || e.Path2 != 0 {
					for _, id := range [2]trace.PathID{e.Path, e.Path2} {
						if _, ok := p.mapped[id]; !ok && id != 0 {
							p.mapped[id] = mapping{}
						}
					}
				}
				planEvent(e, when{epoch, e.Start}, &fds, handles, ref, use)
				fds.Observe(e)
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				closeSource(src)
				return nil, fmt.Errorf("rank %d: %w", r, err)
			}
		}
		closeSource(src)
		for op, c := range counts {
			if c > 0 {
				rc.Ops[trace.Op(op)] = c
			}
		}
		for _, c := range rc.Ops {
			rc.Events += c
		}
		p.Events += rc.Events
		p.PerRank = append(p.PerRank, rc)
	}
	for c := range fileComms {
		p.FileComms = append(p.FileComms, c)
	}
	slices.Sort(p.FileComms)
	for c, set := range members {
		var rs []uint32
		for r := range set {
			rs = append(rs, r)
		}
		slices.Sort(rs)
		p.Groups[c] = rs
	}

	// Map the paths.
	var all []string
	for id := range p.mapped {
		s := t.Path(id)
		all = append(all, s)
		p.names[s] = id
	}
	mp := NewMapper(all, rules)
	p.mapper = mp
	p.Prefix = mp.Prefix()
	byRel := map[string]*pathUse{}
	for id := range p.mapped {
		s := t.Path(id)
		rel, note := mp.Map(s)
		p.mapped[id] = mapping{rel: rel, note: note}
		if note.Skipped() {
			continue
		}
		u := uses[id]
		if u == nil {
			u = newPathUse()
		}
		if g := byRel[rel]; g != nil {
			g.merge(u)
		} else {
			byRel[rel] = u
		}
	}
	seen := map[string]bool{}
	for s, id := range p.names {
		if seen[s] {
			continue
		}
		seen[s] = true
		m := p.mapped[id]
		p.Paths = append(p.Paths, PathEntry{Trace: s, Target: m.rel, Note: m.note})
	}
	slices.SortFunc(p.Paths, func(a, b PathEntry) int { return strings.Compare(a.Trace, b.Trace) })

	// A path below another makes the other a directory.
	for rel := range byRel {
		for d := path.Dir(rel); d != "." && d != "/"; d = path.Dir(d) {
			if g := byRel[d]; g != nil {
				g.dir = true
			}
		}
	}
	// Directories: the parents of every path, and the directories the
	// trace uses as existing, but not what the trace creates itself.
	dirs := map[string]bool{}
	for rel, g := range byRel {
		target := rel
		if !(g.dir && (g.first == refExisting || g.first == refDir || g.first == refMaybe)) {
			target = path.Dir(rel)
		}
		var chain []string
		for d := target; d != "." && d != "/" && d != ""; d = path.Dir(d) {
			chain = append(chain, d)
		}
		for i := len(chain) - 1; i >= 0; i-- {
			if g := byRel[chain[i]]; g != nil && (g.first == refMkdir || g.first == refCreate || g.first == refAbsent) {
				break
			}
			dirs[chain[i]] = true
		}
	}
	for d := range dirs {
		p.Dirs = append(p.Dirs, d)
	}
	slices.SortFunc(p.Dirs, func(a, b string) int {
		if c := strings.Count(a, "/") - strings.Count(b, "/"); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	for rel, g := range byRel {
		if g.dir || dirs[rel] || rel == "." {
			continue
		}
		// A file the trace may create (O_CREAT without O_TRUNC,
		// MPI_MODE_CREATE) is prepared only when the trace reads data
		// it did not write: then the file existed in the original.
		if need := g.need(); g.first == refExisting || (g.first == refMaybe && need > 0) {
			p.Files = append(p.Files, PrepFile{Path: rel, Size: need})
		}
	}
	slices.SortFunc(p.Files, func(a, b PrepFile) int { return strings.Compare(a.Path, b.Path) })
	return p, nil
}

// view is an MPI file handle's path and view, as the plan follows it.
type view struct {
	path                   trace.PathID
	disp, blocklen, stride int64
}

// fileOffset maps a byte offset within the view to the file.
func (v *view) fileOffset(off int64) int64 {
	if v.blocklen > 0 && v.stride > v.blocklen {
		return v.disp + off/v.blocklen*v.stride + off%v.blocklen
	}
	return v.disp + off
}

const (
	enoent = 2
	eexist = 17
)

// planEvent follows one event of a rank: first uses, read extents. Its
// descriptors are in fds, which the caller then tells of the event.
func planEvent(e *trace.Event, w when, fds *trace.Handles, handles map[int32]*view,
	ref func(trace.PathID, refKind, when), use func(trace.PathID) *pathUse) {
	failed := func(kind refKind) refKind {
		switch {
		case e.Ret >= 0:
			return kind
		case e.Ret == -enoent:
			return refAbsent
		case e.Ret == -eexist:
			return refExisting
		}
		return refNone
	}
	fdPath := func() trace.PathID {
		if id, ok := fds.Opened(e); ok {
			return id
		}
		return e.Path
	}
	switch e.Op {
	case trace.OpOpen, trace.OpOpenat, trace.OpOpenat2, trace.OpCreat, trace.OpFopen:
		kind := refExisting
		fl := e.Flags
		switch {
		case e.Op == trace.OpCreat:
			kind = refCreate
		case fl&trace.OCreat != 0 && fl&(trace.OTrunc|trace.OExcl) != 0:
			kind = refCreate
		case fl&trace.OCreat != 0:
			kind = refMaybe
		}
		if e.Ret == -eexist && fl&trace.OExcl != 0 {
			kind = refExisting
		} else {
			kind = failed(kind)
		}
		if fl&0x10000 != 0 && kind == refExisting { // O_DIRECTORY
			kind = refDir
		}
		ref(e.Path, kind, w)
		if e.Ret >= 0 && (e.Op == trace.OpCreat || fl&trace.OTrunc != 0 && fl&trace.OAccMode != trace.ORdonly) {
			use(e.Path).write(w, 0) // what it held is gone
		}
	case trace.OpLseek, trace.OpFseek:
		if e.Whence == 2 && e.Ret >= 0 {
			if id := fdPath(); id != 0 {
				use(id).read(w, e.Ret-e.Offset)
			}
		}
	case trace.OpFtruncate:
		if id := fdPath(); id != 0 && e.Ret >= 0 {
			use(id).write(w, e.Size)
		}
	case trace.OpStat, trace.OpLstat, trace.OpFstatat, trace.OpStatx, trace.OpAccess, trace.OpTruncate:
		ref(e.Path, failed(refExisting), w)
		if e.Op == trace.OpTruncate && e.Ret >= 0 {
			use(e.Path).write(w, e.Size)
		}
	case trace.OpUnlink, trace.OpUnlinkat:
		kind := refExisting
		if e.Op == trace.OpUnlinkat && e.Flags&0x200 != 0 { // AT_REMOVEDIR
			kind = refDir
		}
		ref(e.Path, failed(kind), w)
	case trace.OpRmdir:
		ref(e.Path, failed(refDir), w)
	case trace.OpMkdir, trace.OpMkdirat:
		kind := refMkdir
		if e.Ret == -eexist {
			kind = refDir
		} else {
			kind = failed(kind)
		}
		ref(e.Path, kind, w)
	case trace.OpRename, trace.OpRenameat, trace.OpRenameat2:
		ref(e.Path, failed(refExisting), w)
		if e.Ret >= 0 {
			ref(e.Path2, refCreate, w)
		}
	case trace.OpMPIFileOpen:
		kind := refExisting
		if e.Flags&trace.MPIModeCreate != 0 {
			kind = refMaybe
			if e.Flags&trace.MPIModeExcl != 0 {
				kind = refCreate
			}
		}
		ref(e.Path, failed(kind), w)
		if e.Ret >= 0 {
			handles[e.FD] = &view{path: e.Path}
		}
	case trace.OpMPIFileClose:
		delete(handles, e.FD)
	case trace.OpMPIFileSetView:
		if v := handles[e.FD]; v != nil {
			v.disp, v.blocklen, v.stride = e.Offset, e.Size, e.Stride
		}
	case trace.OpMPIFileSetSize:
		if v := handles[e.FD]; v != nil && e.Ret >= 0 {
			use(v.path).write(w, e.Size)
		}
	case trace.OpMPIFileDelete:
		ref(e.Path, failed(refExisting), w)
	default:
		dir := e.Op.Dir()
		if dir == trace.DirNone || e.Ret <= 0 || e.Offset < 0 {
			return
		}
		var u *pathUse
		end := e.Offset + e.Ret
		switch e.Op.Class() {
		case trace.ClassPOSIX:
			if id := fdPath(); id != 0 {
				u = use(id)
			}
		case trace.ClassMPIIO:
			if v := handles[e.FD]; v != nil {
				u = use(v.path)
				end = v.fileOffset(e.Offset+e.Ret-1) + 1
			}
		}
		switch {
		case u == nil:
		case dir == trace.DirRead:
			u.read(w, end)
		case dir == trace.DirWrite:
			u.write(w, end)
		}
	}
}

// mapPath returns where the trace path s goes: a path relative to the
// target, or a skip reason. It maps by name, so paths the plan did not
// see (a script's) follow the same rules.
func (p *Plan) mapPath(s string) (string, Skip) {
	rel, note := p.mapper.Map(s)
	switch note {
	case NoteSpecial:
		return "", SkipSpecialPath
	case NoteKernel:
		return "", SkipKernelObject
	}
	return rel, NotSkipped
}

// Bytes is the number of bytes the prepare phase writes.
func (p *Plan) Bytes() int64 {
	var n int64
	for _, f := range p.Files {
		n += f.Size
	}
	return n
}
