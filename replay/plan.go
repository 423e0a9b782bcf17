package replay

import (
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/state"
)

// Plan is what a replay found in its (transformed) trace before running
// it: where each path goes, what to prepare, which ranks communicate, and
// how many calls each rank makes.
type Plan struct {
	Ranks   []uint32
	Events  int64
	PerRank []RankCount
	// Start is the earliest start of the trace's events (ns from its
	// epoch, every rank on one clock): time 0 of original timing, so
	// that a rank that made its first call later than another starts
	// that much later.
	Start  int64
	Prefix string      // common prefix stripped from absolute paths
	Paths  []PathEntry // every distinct trace path, sorted
	Dirs   []string    // directories to create, parents first
	Files  []PrepFile  // files to create, sorted
	// Groups holds the members of each communicator other than
	// CommWorld and CommSelf: the ranks that used it.
	Groups map[uint32][]uint32
	// FileComms lists the communicators the trace opens MPI files on,
	// sorted.
	FileComms []uint32

	// Anomalies counts names the trace found though it never made them
	// where it could have known (an untraced call, another program made
	// them while it ran): the prepare phase cannot make them.
	Anomalies int

	// deps holds, per rank (by its index in Ranks), the calls that must
	// wait for another rank's call (see fileDeps), by event number.
	deps [][]Dep

	// shared holds, per rank (by its index in Ranks), the offset of each
	// of its shared file pointer calls (MPI_File_*_shared and _ordered),
	// in order: the trace records 0 for them (where such a call lands
	// depends on the other ranks), the plan works it out over all ranks.
	shared [][]int64

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

// makePlan reads every rank of t once. groups names the members of
// communicators the events may not show (a script's groups).
//
// What the replay must find before it starts comes from one namespace
// (trace/state) that every rank's calls act on: the ranks are read
// together, in the order of their collective calls on MPI_COMM_WORLD
// (every rank makes them in the same order, so a call after the k-th
// comes after every call before it on any rank, even where the ranks'
// clocks do not agree), then by start time.
func makePlan(t trace.Trace, rules []MapRule, groups map[uint32][]uint32) (*Plan, error) {
	p := &Plan{Ranks: t.Ranks(), Groups: map[uint32][]uint32{}, mapped: map[trace.PathID]mapping{}, names: map[string]trace.PathID{}}
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
	ns := state.NewNamespace(t.Path)
	m, err := newMerger(t, p.Ranks)
	if err != nil {
		return nil, err
	}
	defer m.close()
	sp := state.NewSharedPointers()
	deps := newFileDeps(len(p.Ranks))
	per := make([]rankPlan, len(p.Ranks))
	for i, r := range p.Ranks {
		per[i] = rankPlan{rc: RankCount{Rank: r, Ops: map[trace.Op]int64{}}, f: state.New[struct{}, struct{}](ns)}
	}
	started := false
	for {
		i, e, err := m.next()
		if err != nil {
			return nil, fmt.Errorf("rank %d: %w", p.Ranks[i], err)
		}
		if e == nil {
			break
		}
		rp := &per[i]
		r := p.Ranks[i]
		if !started || e.Start < p.Start {
			p.Start, started = e.Start, true
		}
		rp.n++
		if e.Op < 1024 {
			rp.counts[e.Op]++
		} else {
			rp.rc.Ops[e.Op]++
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
				continue
			}
		}
		if cls != trace.ClassProcess && (e.Path != 0 || e.Path2 != 0) {
			for _, id := range [2]trace.PathID{e.Path, e.Path2} {
				if id == e.Path2 && e.Op.Info().NS == trace.NSSymlink {
					continue // a link's target is text, not a file of the trace
				}
				if _, ok := p.mapped[id]; !ok && id != 0 {
					p.mapped[id] = mapping{}
				}
			}
		}
		if rp.f.Data(e) != nil {
			continue // a read or write on a descriptor: followed, nothing more to plan
		}
		st := rp.f.Apply(e)
		if st.Handle != nil && cls == trace.ClassMPIIO {
			sp.Event(i, e, st.Handle.Path, st.Handle.Comm)
		}
		deps.event(i, rp.n-1, m.epoch(i), e)
	}
	p.deps = deps.byRank
	p.shared = sp.Offsets(len(p.Ranks))
	for i := range per {
		rc := &per[i].rc
		for op, c := range per[i].counts {
			if c > 0 {
				rc.Ops[trace.Op(op)] = c
			}
		}
		for _, c := range rc.Ops {
			rc.Events += c
		}
		p.Events += rc.Events
		p.PerRank = append(p.PerRank, *rc)
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
	for id := range p.mapped {
		rel, note := mp.Map(t.Path(id))
		p.mapped[id] = mapping{rel: rel, note: note}
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

	// What the trace found that it did not make, where it was before the
	// trace, mapped into the target: directories (parents first) and
	// files with the size their reads needed. A name several trace
	// paths map to is prepared once, as a directory if any is one, with
	// the largest size.
	dirs := map[string]bool{}
	files := map[string]int64{}
	for _, e := range ns.Before() {
		rel, note := mp.Map(e.Path)
		if note.Skipped() || rel == "." || mp.above(e.Path) {
			continue
		}
		if e.Kind == state.KindDir {
			dirs[rel] = true
			continue
		}
		files[rel] = max(files[rel], e.Need)
	}
	// What lies below a prepared name makes that one a directory, and the
	// directories above every prepared name are made too (/dev/shm/x:
	// dev is never a trace path of its own, as /dev is special).
	for _, m := range []map[string]bool{dirs, keys(files)} {
		for rel := range m {
			for d := path.Dir(rel); d != "." && d != "/"; d = path.Dir(d) {
				dirs[d] = true
			}
		}
	}
	for d := range dirs {
		delete(files, d)
		p.Dirs = append(p.Dirs, d)
	}
	slices.SortFunc(p.Dirs, func(a, b string) int {
		if c := strings.Count(a, "/") - strings.Count(b, "/"); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	for rel, size := range files {
		p.Files = append(p.Files, PrepFile{Path: rel, Size: size})
	}
	slices.SortFunc(p.Files, func(a, b PrepFile) int { return strings.Compare(a.Path, b.Path) })
	p.Anomalies = ns.Anomalies
	return p, nil
}

// rankPlan is what the plan keeps per rank while it reads.
type rankPlan struct {
	n      int64 // events read
	rc     RankCount
	counts [1024]int64 // by op, below 1024; the rest in rc.Ops
	f      *state.Follower[struct{}, struct{}]
}

// merger reads the ranks of a trace together, in the order of their
// collective calls on MPI_COMM_WORLD, then of their start times.
type merger struct {
	cur     []*cursor
	h       []int // heap of indexes into cur
	pending int   // the cursor whose event next returned last, -1: none
}

// cursor is one rank's stream as the merger reads it.
type cursor struct {
	src   trace.Source
	buf   []trace.Event
	i, n  int
	epoch int64 // collective calls on MPI_COMM_WORLD before buf[i]
	done  bool
	err   error
}

// mergeEvents bounds the events the cursors of all ranks hold at once.
const mergeEvents = 1 << 16

func newMerger(t trace.Trace, ranks []uint32) (*merger, error) {
	m := &merger{pending: -1}
	batch := min(max(mergeEvents/max(len(ranks), 1), 64), trace.BatchSize)
	for _, r := range ranks {
		src, err := t.Rank(r)
		if err != nil {
			m.close()
			return nil, fmt.Errorf("rank %d: %w", r, err)
		}
		c := &cursor{src: src, buf: make([]trace.Event, batch)}
		m.cur = append(m.cur, c)
		if c.fill(); c.err != nil {
			m.close()
			return nil, fmt.Errorf("rank %d: %w", r, c.err)
		}
		if c.i < c.n {
			m.push(len(m.cur) - 1)
		}
	}
	return m, nil
}

// fill reads the next batch when the cursor has used its events.
func (c *cursor) fill() {
	for c.i >= c.n && !c.done {
		n, err := c.src.ReadEvents(c.buf)
		c.i, c.n = 0, n
		switch {
		case errors.Is(err, io.EOF):
			c.done = true
		case err != nil:
			c.err, c.done = err, true
		}
	}
}

func (m *merger) less(a, b int) bool {
	x, y := m.cur[m.h[a]], m.cur[m.h[b]]
	if x.epoch != y.epoch {
		return x.epoch < y.epoch
	}
	if sx, sy := x.buf[x.i].Start, y.buf[y.i].Start; sx != sy {
		return sx < sy
	}
	return m.h[a] < m.h[b]
}

func (m *merger) push(i int) {
	m.h = append(m.h, i)
	for j := len(m.h) - 1; j > 0; {
		p := (j - 1) / 2
		if !m.less(j, p) {
			break
		}
		m.h[j], m.h[p] = m.h[p], m.h[j]
		j = p
	}
}

func (m *merger) down(j int) {
	for {
		l := 2*j + 1
		if l >= len(m.h) {
			return
		}
		k := l
		if r := l + 1; r < len(m.h) && m.less(r, l) {
			k = r
		}
		if !m.less(k, j) {
			return
		}
		m.h[j], m.h[k] = m.h[k], m.h[j]
		j = k
	}
}

// next returns the index (in the ranks given to newMerger) and the event
// that come next, or a nil event at the end. The event stays valid until
// the next call.
func (m *merger) next() (int, *trace.Event, error) {
	if len(m.cur) == 1 {
		// One rank: its events in order, no heap.
		c := m.cur[0]
		if m.pending >= 0 {
			e := &c.buf[c.i]
			if e.Comm == trace.CommWorld && e.Op.Class() == trace.ClassComm && e.Op.Collective() {
				c.epoch++
			}
			c.i++
		}
		m.pending = 0
		if c.i >= c.n {
			if c.fill(); c.err != nil {
				return 0, nil, c.err
			}
			if c.i >= c.n {
				m.pending = -1
				return 0, nil, nil
			}
		}
		return 0, &c.buf[c.i], nil
	}
	if i := m.pending; i >= 0 {
		// Move past the event returned last.
		m.pending = -1
		c := m.cur[i]
		e := &c.buf[c.i]
		if e.Comm == trace.CommWorld && e.Op.Class() == trace.ClassComm && e.Op.Collective() {
			c.epoch++
		}
		c.i++
		c.fill()
		if c.err != nil {
			return i, nil, c.err
		}
		if c.i >= c.n {
			last := len(m.h) - 1
			m.h[0] = m.h[last]
			m.h = m.h[:last]
		}
		if len(m.h) > 1 {
			m.down(0)
		}
	}
	if len(m.h) == 0 {
		return 0, nil, nil
	}
	i := m.h[0]
	c := m.cur[i]
	m.pending = i
	return i, &c.buf[c.i], nil
}

// epoch returns the collective calls on MPI_COMM_WORLD rank index i made
// before its current event.
func (m *merger) epoch(i int) int64 { return m.cur[i].epoch }

func (m *merger) close() {
	for _, c := range m.cur {
		closeSource(c.src)
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

// sharedOffset returns where the next shared file pointer call of rank
// lands, and whether the plan knows (a script's time-driven loop can make
// more calls than the plan's nominal run).
func (p *Plan) sharedOffset(rank uint32, next *int) (int64, bool) {
	i, ok := slices.BinarySearch(p.Ranks, rank)
	if !ok || i >= len(p.shared) || *next >= len(p.shared[i]) {
		return 0, false
	}
	off := p.shared[i][*next]
	*next++
	return off, true
}

func keys[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// Dep says that a call (the Event-th of its rank, from 0) must wait until
// the rank at index Rank (in Plan.Ranks) has made its After-th call.
type Dep struct {
	Event int64
	Rank  int
	After int64
}

// fileDeps finds the calls of a rank that use a file another rank made
// with nothing between them that orders the ranks (no collective call on
// MPI_COMM_WORLD, as in a trace captured without MPI's calls: ptrace sees
// no MPI). Run as fast as possible, such a rank would open the file
// before its maker creates it: it waits for the create, as it did in the
// traced run (where the trace's clocks say the create came first).
type fileDeps struct {
	makers map[trace.PathID]maker
	used   []map[trace.PathID]bool // per rank: files whose dependency is settled
	byRank [][]Dep
}

type maker struct {
	rank  int
	event int64
	epoch int64
}

func newFileDeps(ranks int) *fileDeps {
	return &fileDeps{makers: map[trace.PathID]maker{}, used: make([]map[trace.PathID]bool, ranks), byRank: make([][]Dep, ranks)}
}

// event follows the n-th event (from 0) of the rank at index rank, made
// after epoch collective calls on MPI_COMM_WORLD.
func (d *fileDeps) event(rank int, n, epoch int64, e *trace.Event) {
	if e.Path == 0 || e.Ret < 0 {
		return
	}
	info := e.Op.Info()
	switch info.NS {
	case trace.NSOpen, trace.NSLook, trace.NSRemove, trace.NSRename, trace.NSLink:
	default:
		return
	}
	if info.Collective {
		return // MPI_File_open: the ranks meet there anyway
	}
	if d.used[rank] == nil {
		d.used[rank] = map[trace.PathID]bool{}
	}
	if mk, ok := d.makers[e.Path]; ok && mk.rank != rank && mk.epoch == epoch && !d.used[rank][e.Path] {
		d.byRank[rank] = append(d.byRank[rank], Dep{Event: n, Rank: mk.rank, After: mk.event + 1})
	}
	d.used[rank][e.Path] = true
	creates := info.NS == trace.NSOpen && (e.Op == trace.OpCreat || e.Flags&trace.OCreat != 0 ||
		info.Class == trace.ClassMPIIO && e.Flags&trace.MPIModeCreate != 0)
	if _, ok := d.makers[e.Path]; creates && !ok {
		d.makers[e.Path] = maker{rank: rank, event: n, epoch: epoch}
	}
}
