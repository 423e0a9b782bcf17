package replay

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/internal/sat"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/state"
	"github.com/iotrace/iotrace/trace/target"
	"github.com/iotrace/iotrace/trace/units"
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
	Start int64
	// Layout is where the paths go and what to prepare.
	target.Layout
	// Space is what the trace's files take on a disk, prepared and
	// written, in blocks of SpaceBlock bytes: the disk check before a
	// replay (CheckSpace).
	Space state.Space
	// Groups holds the members of each communicator other than
	// CommWorld and CommSelf: the ranks that used it.
	Groups map[uint32][]uint32
	// FileComms lists the communicators the trace opens MPI files on,
	// sorted.
	FileComms []uint32

	// deps holds, per rank (by its index in Ranks), the calls that must
	// wait for another rank's call (see fileDeps), by event number.
	deps [][]Dep

	// shared holds, per rank (by its index in Ranks), the offset of each
	// of its shared file pointer calls (MPI_File_*_shared and _ordered),
	// in order: the trace records 0 for them (where such a call lands
	// depends on the other ranks), the plan works it out over all ranks.
	shared [][]int64

	// libCost holds, per rank (by its index in Ranks), the MPI-IO calls
	// whose library cost a replay keeps (see libCosts): only for ranks
	// whose trace has the POSIX calls their MPI library made inside them.
	libCost [][]LibCost
	// IO is, per rank (by its index in Ranks), the recorded time of its
	// I/O calls (POSIX, metadata and MPI-IO, not the POSIX calls inside
	// MPI-IO calls), ns: the captured side of --predict.
	IO []int64
	// IOSpan is the application's I/O time as the capture has it: from
	// the start of the first file call (POSIX, metadata, MPI-IO) of any
	// rank to the end of the last, ns; 0 without any.
	IOSpan int64

	mapped map[trace.PathID]mapping
}

// LibCosts returns how many MPI-IO calls have a library cost a replay
// without an MPI library keeps under think or original timing, and that
// cost, ns, over all ranks.
func (p *Plan) LibCosts() (calls, ns int64) {
	for _, l := range p.libCost {
		calls += int64(len(l))
		for _, c := range l {
			ns += c.Cost
		}
	}
	return calls, ns
}

// LibCost is what an MPI-IO call cost the MPI library beyond the POSIX
// calls it made inside the call, in the capture: the call's recorded
// duration less theirs, ns (never negative). Event numbers the call
// among its rank's events, from 0.
type LibCost struct {
	Event int64
	Cost  int64
}

// libCosts follows one rank's MPI-IO calls and the POSIX calls inside
// them (Flags InMPIIO) while the plan reads the rank: a POSIX call inside
// an MPI-IO call starts within it, after it in the rank's order (events
// are in start order).
type libCosts struct {
	list     []LibCost
	inner    bool  // the rank has POSIX calls marked InMPIIO
	open     int   // index in list of the MPI-IO call being followed, −1 none
	from, to int64 // its recorded start and end
	// The collective calls, to share out what is the library's and what
	// is waiting for the other ranks: coll holds, per entry of list, its
	// place among the collective calls (colls.key), or noColl.
	coll    []collKey
	handles map[int32]uint32 // MPI file handle → its communicator
	seq     map[uint32]int64 // collective MPI-IO calls so far, by communicator
}

// collKey names a collective MPI-IO call across the ranks: the n-th such
// call of a rank on a communicator is every member's n-th.
type collKey struct {
	comm uint32
	n    int64
}

var noColl = collKey{comm: ^uint32(0)}

func (l *libCosts) event(n int64, e *trace.Event) {
	switch c := e.Op.Class(); {
	case c == trace.ClassMPIIO:
		l.list = append(l.list, LibCost{Event: n, Cost: max(e.Dur, 0)})
		l.open, l.from, l.to = len(l.list)-1, e.Start, e.Start+e.Dur
		key := noColl
		if e.Op.Collective() {
			comm, ok := l.handles[e.FD]
			if !ok || e.Op == trace.OpMPIFileOpen {
				comm = e.Comm
			}
			if comm != trace.CommSelf {
				if l.seq == nil {
					l.seq = map[uint32]int64{}
				}
				key = collKey{comm, l.seq[comm]}
				l.seq[comm]++
			}
		}
		l.coll = append(l.coll, key)
		switch e.Op {
		case trace.OpMPIFileOpen:
			if l.handles == nil {
				l.handles = map[int32]uint32{}
			}
			l.handles[e.FD] = e.Comm
		case trace.OpMPIFileClose:
			delete(l.handles, e.FD)
		}
	case e.Flags&trace.InMPIIO != 0 && (c == trace.ClassPOSIX || c == trace.ClassMeta):
		l.inner = true
		if l.open >= 0 && e.Start >= l.from && e.Start <= l.to {
			lc := &l.list[l.open]
			lc.Cost = max(lc.Cost-max(min(e.Dur, l.to-e.Start), 0), 0)
		}
	}
}

// shareCollectives keeps, at each collective MPI-IO call, the least cost
// any rank of the call had: in the capture, a rank that came to the call
// before the others waited inside it for them, and that wait is not the
// library's: the replay's ranks wait for each other at the call
// themselves, as late as they come there. The rank that came last waited
// least: its cost is the library's own.
func shareCollectives(per []rankPlan) {
	least := map[collKey]int64{}
	for i := range per {
		l := &per[i].lib
		if !l.inner {
			continue
		}
		for j, k := range l.coll {
			if k == noColl {
				continue
			}
			if c, ok := least[k]; !ok || l.list[j].Cost < c {
				least[k] = l.list[j].Cost
			}
		}
	}
	for i := range per {
		l := &per[i].lib
		if !l.inner {
			continue
		}
		for j, k := range l.coll {
			if k != noColl {
				l.list[j].Cost = least[k]
			}
		}
		l.coll, l.handles, l.seq = nil, nil, nil
	}
}

// done returns the rank's MPI-IO calls with a cost to keep: none when
// the trace does not show what the library did inside them (a capture
// without its POSIX calls, a Darshan import), as the whole call would
// then count as the library's.
func (l *libCosts) done() []LibCost {
	if !l.inner {
		return nil
	}
	out := l.list[:0]
	for _, c := range l.list {
		if c.Cost > 0 {
			out = append(out, c)
		}
	}
	return slices.Clip(out)
}

// RankCount is one rank's calls by op.
type RankCount struct {
	Rank   uint32
	Events int64
	Ops    map[trace.Op]int64
}

type mapping struct {
	rel  string
	note target.PathNote
}

// makePlan reads every rank of t once. groups names the members of
// communicators the events may not show (a script's groups).
//
// What the replay must find before it starts comes from one namespace
// (trace/state) that every rank's calls act on: the ranks are read
// together, in the order of their collective calls on MPI_COMM_WORLD and
// its duplicates (target.Merger: every rank makes them in the same order,
// so a call after the k-th comes after every call before it on any rank,
// even where the ranks' clocks do not agree), then by start time.
//
// A script (script: its times are the nominal model's, not a run's) has
// no MPI-IO library cost to keep.
func makePlan(t trace.Trace, rules []target.MapRule, groups map[uint32][]uint32, script bool) (*Plan, error) {
	p := &Plan{Ranks: t.Ranks(), Groups: map[uint32][]uint32{}, mapped: map[trace.PathID]mapping{}}
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
	m, err := newPlanReader(t, p.Ranks)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	sp := state.NewSharedPointers()
	deps := newFileDeps(ns, len(p.Ranks))
	per := make([]rankPlan, len(p.Ranks))
	for i, r := range p.Ranks {
		per[i] = rankPlan{rc: RankCount{Rank: r, Ops: map[trace.Op]int64{}}, f: state.New[struct{}, struct{}](ns), lib: libCosts{open: -1}}
	}
	started := false
	var haveIO bool
	var ioFirst, ioLast int64
	// A run at a time (planReader.Run): a lone rank's batch in one loop.
	for {
		i, evs, err := m.Run()
		if err != nil {
			return nil, rankErr(p.Ranks[i], err)
		}
		if evs == nil {
			break
		}
		rp := &per[i]
		r := p.Ranks[i]
		for j := 0; j < len(evs); j++ {
			e := &evs[j]
			if planPlain && started && haveIO && e.Op < opLimit && directOps[e.Op] && e.Flags&trace.InMPIIO == 0 &&
				e.Path2 == 0 && (e.Path == 0 || e.Path == rp.lastPath) {
				// A POSIX call on a descriptor (most of a trace's), of a
				// path the plan has: the accounting below, without the
				// tests that cannot hold for it.
				p.Start = min(p.Start, e.Start)
				rp.n++
				rp.ops.add(e.Op, rp.rc.Ops)
				d := max(e.Dur, 0)
				rp.io = sat.Add(rp.io, d)
				ioFirst, ioLast = min(ioFirst, e.Start), max(ioLast, sat.Add(e.Start, d))
				if pd := rp.prevData; pd != nil && e.Op == rp.prevOp && e.FD == rp.prevFD && e.Thread == rp.prevThread && rp.f.Again(e, pd) {
					// Data would change nothing; nor for the next events
					// of the thread, descriptor and op, so long as Again
					// passes them (state.Repeat): the same accounting, in
					// a loop of their own.
					if j+1 < len(evs) && evs[j+1].Op == e.Op {
						rep := rp.f.RepeatOf(e.Op, pd)
						start, io := p.Start, rp.io
						k := j + 1
						for ; k < len(evs); k++ {
							x := &evs[k]
							if x.Op != e.Op || x.FD != e.FD || x.Thread != e.Thread || x.Flags&trace.InMPIIO != 0 || x.Path2 != 0 ||
								x.Path != 0 && x.Path != rp.lastPath || !rep.Passes(x) {
								break
							}
							start = min(start, x.Start)
							d := max(x.Dur, 0)
							io = sat.Add(io, d)
							ioFirst, ioLast = min(ioFirst, x.Start), max(ioLast, sat.Add(x.Start, d))
						}
						run := int64(k - j - 1)
						rp.n += run
						rp.ops.n += run // of e's op, counted last
						p.Start, rp.io = start, io
						j = k - 1
					}
					continue
				}
				if pd := rp.f.Data(e); pd != nil {
					rp.prevData, rp.prevOp, rp.prevFD, rp.prevThread = pd, e.Op, e.FD, e.Thread
					continue
				}
				rp.prevData = nil
				rp.f.Apply(e)
				if len(p.Ranks) > 1 {
					deps.event(i, rp.n-1, m.Epoch(i), e)
				}
				continue
			}
			if !started || e.Start < p.Start {
				p.Start, started = e.Start, true
			}
			rp.n++
			rp.ops.add(e.Op, rp.rc.Ops)
			cls := e.Op.Class()
			if cls == trace.ClassMarker {
				continue
			}
			if cls == trace.ClassPOSIX || cls == trace.ClassMeta || cls == trace.ClassMPIIO {
				if e.Flags&trace.InMPIIO == 0 || cls == trace.ClassMPIIO {
					rp.io = sat.Add(rp.io, max(e.Dur, 0))
				}
				if !haveIO || e.Start < ioFirst {
					ioFirst = e.Start
				}
				if end := sat.Add(e.Start, max(e.Dur, 0)); !haveIO || end > ioLast {
					ioLast = end
				}
				haveIO = true
				if !script && (cls == trace.ClassMPIIO || e.Flags&trace.InMPIIO != 0) {
					rp.lib.event(rp.n-1, e) // (which follows nothing else)
				}
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
			if e.Path != 0 || e.Path2 != 0 {
				for _, id := range target.Paths(e) {
					if id == 0 || id == rp.lastPath {
						continue
					}
					rp.lastPath = id // a rank's calls name the same file again and again
					if _, ok := p.mapped[id]; !ok {
						p.mapped[id] = mapping{}
					}
				}
			}
			rp.prevData = nil
			if rp.f.Data(e) != nil {
				continue // a read or write on a descriptor: followed, nothing more to plan
			}
			st := rp.f.Apply(e)
			if st.Handle != nil && cls == trace.ClassMPIIO {
				sp.Event(i, e, st.Handle.Path, st.Handle.Comm)
			}
			if len(p.Ranks) > 1 { // one rank depends on no other's files
				deps.event(i, rp.n-1, m.Epoch(i), e)
			}
		}
	}
	p.deps = deps.deps()
	p.shared = sp.Offsets(len(p.Ranks))
	shareCollectives(per)
	p.libCost = make([][]LibCost, len(per))
	p.IO = make([]int64, len(per))
	if haveIO {
		p.IOSpan = sat.Sub(ioLast, ioFirst)
	}
	for i := range per {
		p.libCost[i] = per[i].lib.done()
		p.IO[i] = per[i].io
		rc := &per[i].rc
		per[i].ops.flush(rc.Ops)
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
		all = append(all, t.Path(id))
	}
	p.Layout = *target.NewLayout(all, ns, rules)
	p.Space = ns.Space(SpaceBlock)
	for id := range p.mapped {
		path := t.Path(id)
		rel, note := p.Layout.Map(path)
		if strings.HasSuffix(path, rel) {
			// The usual case (the path less its leading /): share the
			// trace's string rather than keep a copy per path.
			rel = path[len(path)-len(rel):]
		}
		p.mapped[id] = mapping{rel: rel, note: note}
	}
	return p, nil
}

// rankPlan is what the plan keeps per rank while it reads.
type rankPlan struct {
	n   int64 // events read
	rc  RankCount
	ops opRun // rc.Ops as they are counted
	f   *state.Follower[struct{}, struct{}]
	lib libCosts
	io  int64 // recorded ns in I/O calls
	// lastPath is the latest path id the rank's calls named, known to
	// be in Plan.mapped.
	lastPath trace.PathID
	// prevData is what Data returned for the rank's event before (of
	// prevThread, prevFD and prevOp), if the short way followed it with
	// Data alone; nil otherwise (Follower.Again).
	prevData   *state.Desc[struct{}]
	prevOp     trace.Op
	prevFD     int32
	prevThread uint32
}

// planReader is how makePlan reads the ranks: together in the Merger's
// order, or one rank's source straight, a batch at a time. One rank
// needs no merge, nor the epochs that order ranks (Merger counts them at
// every event: 8 % of planning 200,000 pwrites from a file).
type planReader interface {
	Run() (int, []trace.Event, error)
	Epoch(i int) int64
	Close()
}

// planLone: makePlan reads a trace of one rank from its source, not
// through a Merger; false reads it through one, for the test that
// compares the two.
var planLone = true

func newPlanReader(t trace.Trace, ranks []uint32) (planReader, error) {
	if len(ranks) != 1 || !planLone {
		return target.NewMerger(t, ranks)
	}
	src, err := t.Rank(ranks[0])
	if err != nil {
		return nil, fmt.Errorf("rank %d: %w", ranks[0], err)
	}
	return &loneReader{src: src, buf: make([]trace.Event, trace.BatchSize)}, nil
}

// loneReader reads one rank's source a batch at a time, as Merger.Run
// gives a lone rank's events (and its errors).
type loneReader struct {
	src  trace.Source
	buf  []trace.Event
	done bool
}

func (l *loneReader) Run() (int, []trace.Event, error) {
	for !l.done {
		n, err := l.src.ReadEvents(l.buf)
		switch {
		case errors.Is(err, io.EOF):
			l.done = true
		case err != nil:
			l.done = true
			return 0, nil, err
		}
		if n > 0 {
			return 0, l.buf[:n], nil
		}
	}
	return 0, nil, nil
}

// Epoch is never asked of one rank (it orders ranks).
func (l *loneReader) Epoch(int) int64 { return 0 }

func (l *loneReader) Close() {
	if c, ok := l.src.(io.Closer); ok {
		c.Close()
	}
}

// planPlain: makePlan takes a short way with the POSIX calls that name
// no path to map (directOps: those on a descriptor) outside an MPI-IO
// call; false turns it off, for the test that compares the two.
var planPlain = true

// opRun counts a rank's run of events of one op, which goes to the map of
// counts when another op comes: most of a trace's events repeat the op
// of the one before, and a map increment per event was a sixth of the
// instructions of planning 200,000 pwrites.
type opRun struct {
	op trace.Op
	n  int64
}

func (r *opRun) add(op trace.Op, m map[trace.Op]int64) {
	if op != r.op || r.n == 0 {
		r.flush(m)
		r.op = op
	}
	r.n++
}

// flush adds the run to m.
func (r *opRun) flush(m map[trace.Op]int64) {
	if r.n > 0 {
		m[r.op] += r.n
		r.n = 0
	}
}

// mapPath returns where the trace path s goes: a path relative to the
// target, or a skip reason. It maps by name, so paths the plan did not
// see (a script's) follow the same rules.
func (p *Plan) mapPath(s string) (string, Skip) {
	rel, note := p.Layout.Map(s)
	switch note {
	case target.NoteSpecial:
		return "", SkipSpecialPath
	case target.NoteKernel:
		return "", SkipKernelObject
	}
	return rel, NotSkipped
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

// Dep says that a call (the Event-th of its rank, from 0) must wait until
// the rank at index Rank (in Plan.Ranks) has made its After-th call.
type Dep struct {
	Event int64
	Rank  int
	After int64
}

// fileDeps finds the calls of a rank that use a file another rank made
// with nothing between them that orders the ranks (no collective call on
// MPI_COMM_WORLD or a duplicate of it, as in a trace captured without MPI's calls: ptrace sees
// no MPI). Run as fast as possible, such a rank would open the file
// before its maker creates it: it waits for the create, as it did in the
// traced run.
//
// The trace's clocks order most such pairs: the create comes first. But
// each process's times are read by its own tracer, late by as long as
// the tracer waited for a processor: on a loaded machine a rank's open of
// a file can carry an earlier time than the create it needed. The
// namespace tells such a use: it found a name the trace showed absent (or
// whose directory the trace made), a name nothing made yet. It is kept
// pending, and the first create of that name by another rank in the same
// epoch becomes what it waits for.
//
// Removals are ordered the same way. A rank's removal of a name (unlink,
// rmdir, a rename away) waits for the uses other ranks made of it before,
// in the same epoch, as they succeeded: they came before the removal in
// the traced run (an MPI library's close of a file opened with
// MPI_MODE_DELETE_ON_CLOSE has every rank close it before rank 0 removes
// it, at a barrier a ptrace capture does not see). And a rank's use that
// failed with ENOENT on a name it had used itself since it was last
// removed came after another rank removed it, whatever the clocks say:
// it waits for the next removal of the name by another rank in the epoch.
type fileDeps struct {
	ns      *state.Namespace
	makers  map[trace.PathID]maker
	used    []map[trace.PathID]bool  // per rank: files whose dependency is settled
	pending map[trace.PathID][]maker // uses of names that appeared before any create
	// uses holds, per name, each rank's last successful use of it since it
	// was last removed; gone the failed uses waiting for a removal;
	// removed the last removal of each name, and the ranks that had used
	// it before.
	uses    map[trace.PathID]map[int]maker
	gone    map[trace.PathID][]maker
	removed map[trace.PathID]removal
	// last is the last removal of each name, kept across creates.
	last   map[trace.PathID]*removal
	byRank [][]Dep
	late   bool // a dependency was added behind a later one of its rank
}

type maker struct {
	rank  int
	event int64
	epoch int64
}

type removal struct {
	maker
	users map[int]bool
	// after: ranks with a call that waits for this removal (a failed
	// use): a later use of theirs cannot come before it.
	after map[int]bool
}

func newFileDeps(ns *state.Namespace, ranks int) *fileDeps {
	return &fileDeps{ns: ns, makers: map[trace.PathID]maker{}, used: make([]map[trace.PathID]bool, ranks),
		pending: map[trace.PathID][]maker{}, uses: map[trace.PathID]map[int]maker{}, gone: map[trace.PathID][]maker{},
		removed: map[trace.PathID]removal{}, last: map[trace.PathID]*removal{}, byRank: make([][]Dep, ranks)}
}

// removals follows the n-th event of the rank at index rank for the
// ordering of removals (see fileDeps).
func (d *fileDeps) removals(rank int, n, epoch int64, e *trace.Event, info *trace.OpInfo) {
	const enoent = 2
	name := e.Path
	switch {
	case e.Ret == -enoent:
		// It was there for this rank before: another rank removed it
		// since, before this call, whichever order the clocks give.
		if rm, ok := d.removed[name]; ok && rm.epoch == epoch && rm.rank != rank && rm.users[rank] {
			d.byRank[rank] = append(d.byRank[rank], Dep{Event: n, Rank: rm.rank, After: rm.event + 1})
			rm.after[rank] = true
		} else if u, ok := d.uses[name][rank]; ok && u.epoch == epoch {
			if rm := d.last[name]; rm != nil && rm.epoch == epoch && rm.rank != rank && !rm.after[rank] {
				// The only removal another rank made, which the clocks put
				// before this rank made and used the name, came after
				// those uses, and this call after it.
				d.byRank[rm.rank] = append(d.byRank[rm.rank], Dep{Event: rm.event, Rank: rank, After: u.event + 1})
				d.byRank[rank] = append(d.byRank[rank], Dep{Event: n, Rank: rm.rank, After: rm.event + 1})
				rm.after[rank] = true
				d.late = true
			} else {
				d.gone[name] = append(d.gone[name], maker{rank: rank, event: n, epoch: epoch})
			}
		}
	case e.Ret < 0:
	case info.NS == trace.NSRemove || info.NS == trace.NSRmdir || info.NS == trace.NSRename:
		for _, r := range slices.Sorted(maps.Keys(d.uses[name])) {
			if u := d.uses[name][r]; r != rank && u.epoch == epoch {
				d.byRank[rank] = append(d.byRank[rank], Dep{Event: n, Rank: r, After: u.event + 1})
			}
		}
		for _, u := range d.gone[name] {
			if u.rank != rank && u.epoch == epoch {
				d.byRank[u.rank] = append(d.byRank[u.rank], Dep{Event: u.event, Rank: rank, After: n + 1})
				d.late = true
			}
		}
		users := map[int]bool{}
		for r, u := range d.uses[name] {
			if u.epoch == epoch {
				users[r] = true
			}
		}
		rm := removal{maker{rank: rank, event: n, epoch: epoch}, users, map[int]bool{}}
		d.removed[name], d.last[name] = rm, &rm // one after: the guard of both rules
		delete(d.uses, name)
		delete(d.gone, name)
	case info.NS == trace.NSOpen || info.NS == trace.NSLook:
		if info.NS == trace.NSOpen && (e.Op == trace.OpCreat || e.Flags&trace.OCreat != 0) {
			delete(d.removed, name) // made again
		} else if rm, ok := d.removed[name]; ok && rm.epoch == epoch && rm.rank != rank && !rm.after[rank] {
			// Found after another rank removed it, and nothing made it
			// again: the clocks are wrong, it came before the removal.
			d.byRank[rm.rank] = append(d.byRank[rm.rank], Dep{Event: rm.event, Rank: rank, After: n + 1})
			d.late = true
			rm.users[rank] = true
		}
		if d.uses[name] == nil {
			d.uses[name] = map[int]maker{}
		}
		d.uses[name][rank] = maker{rank: rank, event: n, epoch: epoch}
	}
}

// event follows the n-th event (from 0) of the rank at index rank, made
// after epoch collective calls on MPI_COMM_WORLD and its duplicates. The
// namespace has followed e already.
func (d *fileDeps) event(rank int, n, epoch int64, e *trace.Event) {
	if e.Path == 0 {
		return
	}
	info := e.Op.Info()
	switch info.NS {
	case trace.NSOpen, trace.NSLook, trace.NSRemove, trace.NSRmdir, trace.NSRename, trace.NSLink:
	default:
		return
	}
	if info.Collective {
		return // MPI_File_open: the ranks meet there anyway
	}
	d.removals(rank, n, epoch, e, &info)
	if e.Ret < 0 || info.NS == trace.NSRmdir {
		return
	}
	if d.used[rank] == nil {
		d.used[rank] = map[trace.PathID]bool{}
	}
	creates := info.NS == trace.NSOpen && (e.Op == trace.OpCreat || e.Flags&trace.OCreat != 0 ||
		info.Class == trace.ClassMPIIO && e.Flags&trace.MPIModeCreate != 0)
	mk, made := d.makers[e.Path]
	switch {
	case made && mk.rank != rank && mk.epoch == epoch && !d.used[rank][e.Path]:
		d.byRank[rank] = append(d.byRank[rank], Dep{Event: n, Rank: mk.rank, After: mk.event + 1})
	case !made && !creates && !d.used[rank][e.Path]:
		if nd := d.ns.Node(e.Path); nd != nil && nd.Appeared {
			d.pending[e.Path] = append(d.pending[e.Path], maker{rank: rank, event: n, epoch: epoch})
		}
	}
	d.used[rank][e.Path] = true
	if creates && !made {
		d.makers[e.Path] = maker{rank: rank, event: n, epoch: epoch}
		for _, u := range d.pending[e.Path] {
			if u.rank != rank && u.epoch == epoch {
				d.byRank[u.rank] = append(d.byRank[u.rank], Dep{Event: u.event, Rank: rank, After: n + 1})
				d.late = true
			}
		}
		delete(d.pending, e.Path)
	}
}

// deps returns the waits by rank, each rank's in event order.
func (d *fileDeps) deps() [][]Dep {
	if d.late {
		for _, ds := range d.byRank {
			slices.SortStableFunc(ds, func(a, b Dep) int { return cmp.Compare(a.Event, b.Event) })
		}
	}
	return d.byRank
}

// SpaceBlock is the block size the disk check rounds each file up to.
const SpaceBlock = 4096

// SpaceError is a replay refused before it wrote anything: its files
// take more than the target's file system has free.
type SpaceError struct {
	Target     string
	Need, Free int64 // bytes
	Files      int64
	FreeFiles  int64 // free inodes (-1: not counted)
	Sparse     bool
}

func (e *SpaceError) Error() string {
	what := fmt.Sprintf("its files take up to %s (%s)", units.Bytes(e.Need), Files(e.Files))
	if e.Sparse {
		what = fmt.Sprintf("its files take up to %s written (%s, prepared sparse)", units.Bytes(e.Need), Files(e.Files))
	}
	if e.FreeFiles >= 0 && e.Files > e.FreeFiles && e.Need <= e.Free {
		return fmt.Sprintf("the replay needs %s in %s and its file system has %d free inodes: refused before writing anything (--target elsewhere, or --no-space-check to try anyway)", Files(e.Files), e.Target, e.FreeFiles)
	}
	return fmt.Sprintf("the replay does not fit in %s: %s, its file system has %s free: refused before writing anything (--target elsewhere, or --no-space-check to try anyway)", e.Target, what, units.Bytes(e.Free))
}

// SpaceNeed is what the replay's files take (Space), less what dir holds
// already (a replay run again in the same target reuses its files):
// bytes, and files.
func (p *Plan) SpaceNeed(dir string, sparse bool) (bytes, files int64) {
	bytes = p.Space.Bytes
	if sparse {
		bytes = p.Space.Written
	}
	held, n := usage(dir)
	return max(bytes-held, 0), max(p.Space.Files-n, 0)
}

// CheckSpace refuses, with a *SpaceError, a replay whose files take more
// than dir's file system has free (statfs: the blocks and inodes an
// unprivileged user may take). A script's loops that run for a time
// write what they have time for: the plan counts what the trace or the
// script's expansion shows.
func (p *Plan) CheckSpace(dir string, sparse bool) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return nil // nothing to check against; the calls' errors say the rest
	}
	need, files := p.SpaceNeed(dir, sparse)
	bsize := st.Frsize
	if bsize <= 0 {
		bsize = st.Bsize
	}
	free := sat.Mul(int64(st.Bavail), bsize)
	freeFiles := int64(-1)
	if st.Files > 0 { // file systems without an inode count say 0
		freeFiles = int64(st.Ffree)
	}
	if need > free || (freeFiles >= 0 && files > freeFiles) {
		return &SpaceError{Target: dir, Need: need, Free: free, Files: files, FreeFiles: freeFiles, Sparse: sparse}
	}
	return nil
}

// usage is the bytes (blocks) and regular files dir holds, without
// following symbolic links.
func usage(dir string) (bytes, files int64) {
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			bytes += st.Blocks * 512
			files++
		}
		return nil
	})
	return bytes, files
}

// Files is "1 file" or "n files".
func Files(n int64) string {
	if n == 1 {
		return "1 file"
	}
	return fmt.Sprintf("%d files", n)
}

// rankErr names rank r in err once: an error that already starts with
// the rank (a trace reader's, a backend's) is not named again ("rank 3:
// rank 3: …").
func rankErr(r uint32, err error) error {
	if strings.HasPrefix(err.Error(), fmt.Sprintf("rank %d: ", r)) {
		return err
	}
	return fmt.Errorf("rank %d: %w", r, err)
}
