package preload

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/iotrace/iotrace/capture"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
	"github.com/iotrace/iotrace/trace/state"
)

// Call ids of the shim (shim.h).
const (
	cNone = iota
	cOpen
	cOpenat
	cCreat
	cClose
	cRead
	cPread
	cReadv
	cPreadv
	cPreadv2
	cWrite
	cPwrite
	cWritev
	cPwritev
	cPwritev2
	cLseek
	cFsync
	cFdatasync
	cFtruncate
	cTruncate
	cDup
	cDup2
	cDup3
	cStat
	cLstat
	cFstat
	cFstatat
	cStatx
	cAccess
	cUnlink
	cUnlinkat
	cRename
	cRenameat
	cRenameat2
	cMkdir
	cMkdirat
	cRmdir
	cFopen
	cFclose
	cFread
	cFwrite
	cFseek
	cFflush
	cCopyFileRange
	cSendfile
	cSplice
	cFallocate
	cFadvise
	cSyncfs
	cSync
	cMmap
	cLink
	cLinkat
	cSymlink
	cSymlinkat
	cReadlink
	cReadlinkat
	cFcntl
	cCloseRange
	cExit
	cGetdents
	cUnseen
	cMunmap
	cMsync
	cReadahead
	cPagein // no call: a wait for mapped pages (shim.h C_PAGEIN)
)

const (
	cMPIRank = 100 + iota
	cMPIFinalize
	cMPISend
	cMPIRecv
	cMPIIsend
	cMPIIrecv
	cMPIWait
	cMPIWaitall
	cMPISendrecv
	cMPIBarrier
	cMPIBcast
	cMPIReduce
	cMPIAllreduce
	cMPIGather
	cMPIGatherv
	cMPIScatter
	cMPIScatterv
	cMPIAllgather
	cMPIAllgatherv
	cMPIAlltoall
	cMPIAlltoallv
	cMPICommSplit
	cMPICommDup
	cMPIClock = 190 // a reading of the clock exchange (shim.h C_MPI_CLOCK)
)

const (
	cMPIFileOpen = 200 + iota
	cMPIFileClose
	cMPIFileReadAt
	cMPIFileReadAtAll
	cMPIFileWriteAt
	cMPIFileWriteAtAll
	cMPIFileRead
	cMPIFileReadAll
	cMPIFileWrite
	cMPIFileWriteAll
	cMPIFileReadShared
	cMPIFileWriteShared
	cMPIFileReadOrdered
	cMPIFileWriteOrdered
	cMPIFileSetView
	cMPIFileSync
	cMPIFileSeek
	cMPIFileSeekShared
	cMPIFileSetSize
	cMPIFilePreallocate
	cMPIFileDelete
	cMPIFileIreadAt
	cMPIFileIwriteAt
	cMPIFileIread
	cMPIFileIwrite
)

// ops maps the shim's call ids to trace ops.
var ops = map[uint16]trace.Op{
	cOpen: trace.OpOpen, cOpenat: trace.OpOpenat, cCreat: trace.OpCreat, cClose: trace.OpClose,
	cRead: trace.OpRead, cPread: trace.OpPread, cReadv: trace.OpReadv, cPreadv: trace.OpPreadv, cPreadv2: trace.OpPreadv2,
	cWrite: trace.OpWrite, cPwrite: trace.OpPwrite, cWritev: trace.OpWritev, cPwritev: trace.OpPwritev, cPwritev2: trace.OpPwritev2,
	cLseek: trace.OpLseek, cFsync: trace.OpFsync, cFdatasync: trace.OpFdatasync, cFtruncate: trace.OpFtruncate,
	cTruncate: trace.OpTruncate, cDup: trace.OpDup, cDup2: trace.OpDup2, cDup3: trace.OpDup3,
	cStat: trace.OpStat, cLstat: trace.OpLstat, cFstat: trace.OpFstat, cFstatat: trace.OpFstatat, cStatx: trace.OpStatx,
	cAccess: trace.OpAccess, cUnlink: trace.OpUnlink, cUnlinkat: trace.OpUnlinkat, cRename: trace.OpRename,
	cRenameat: trace.OpRenameat, cRenameat2: trace.OpRenameat2, cMkdir: trace.OpMkdir, cMkdirat: trace.OpMkdirat,
	cRmdir: trace.OpRmdir, cFopen: trace.OpFopen, cFclose: trace.OpFclose, cFread: trace.OpFread,
	cFwrite: trace.OpFwrite, cFseek: trace.OpFseek, cFflush: trace.OpFflush,
	cCopyFileRange: trace.OpCopyFileRange, cSendfile: trace.OpSendfile, cSplice: trace.OpSplice,
	cFallocate: trace.OpFallocate, cFadvise: trace.OpFadvise, cSyncfs: trace.OpSyncfs, cSync: trace.OpSync,
	cMmap: trace.OpMmap, cLink: trace.OpLink, cLinkat: trace.OpLinkat, cSymlink: trace.OpSymlink,
	cSymlinkat: trace.OpSymlinkat, cReadlink: trace.OpReadlink, cReadlinkat: trace.OpReadlinkat,
	cFcntl: trace.OpFcntl, cCloseRange: trace.OpCloseRange, cGetdents: trace.OpGetdents,
	cMunmap: trace.OpMunmap, cMsync: trace.OpMsync, cReadahead: trace.OpReadahead, cPagein: trace.OpPagein,

	cMPISend: trace.OpMPISend, cMPIRecv: trace.OpMPIRecv, cMPIIsend: trace.OpMPIIsend, cMPIIrecv: trace.OpMPIIrecv,
	cMPIWait: trace.OpMPIWait, cMPIWaitall: trace.OpMPIWaitall, cMPISendrecv: trace.OpMPISendrecv,
	cMPIBarrier: trace.OpMPIBarrier, cMPIBcast: trace.OpMPIBcast, cMPIReduce: trace.OpMPIReduce,
	cMPIAllreduce: trace.OpMPIAllreduce, cMPIGather: trace.OpMPIGather, cMPIGatherv: trace.OpMPIGatherv,
	cMPIScatter: trace.OpMPIScatter, cMPIScatterv: trace.OpMPIScatterv, cMPIAllgather: trace.OpMPIAllgather,
	cMPIAllgatherv: trace.OpMPIAllgatherv, cMPIAlltoall: trace.OpMPIAlltoall, cMPIAlltoallv: trace.OpMPIAlltoallv,
	cMPICommSplit: trace.OpMPICommSplit, cMPICommDup: trace.OpMPICommDup,

	cMPIFileOpen: trace.OpMPIFileOpen, cMPIFileClose: trace.OpMPIFileClose,
	cMPIFileReadAt: trace.OpMPIFileReadAt, cMPIFileReadAtAll: trace.OpMPIFileReadAtAll,
	cMPIFileWriteAt: trace.OpMPIFileWriteAt, cMPIFileWriteAtAll: trace.OpMPIFileWriteAtAll,
	cMPIFileRead: trace.OpMPIFileRead, cMPIFileReadAll: trace.OpMPIFileReadAll,
	cMPIFileWrite: trace.OpMPIFileWrite, cMPIFileWriteAll: trace.OpMPIFileWriteAll,
	cMPIFileReadShared: trace.OpMPIFileReadShared, cMPIFileWriteShared: trace.OpMPIFileWriteShared,
	cMPIFileReadOrdered: trace.OpMPIFileReadOrdered, cMPIFileWriteOrdered: trace.OpMPIFileWriteOrdered,
	cMPIFileSetView: trace.OpMPIFileSetView, cMPIFileSync: trace.OpMPIFileSync, cMPIFileSeek: trace.OpMPIFileSeek,
	cMPIFileSeekShared: trace.OpMPIFileSeekShared, cMPIFileSetSize: trace.OpMPIFileSetSize,
	cMPIFilePreallocate: trace.OpMPIFilePreallocate, cMPIFileDelete: trace.OpMPIFileDelete,
	cMPIFileIreadAt: trace.OpMPIFileIreadAt, cMPIFileIwriteAt: trace.OpMPIFileIwriteAt,
	cMPIFileIread: trace.OpMPIFileIread, cMPIFileIwrite: trace.OpMPIFileIwrite,
}

// callOf is what the encoder's loop needs to know of each call id: its
// op (OpUnknown: none), and the op's class, direction and addressing
// (trace.Op.Info copies names and all).
var callOf = func() (a [256]struct {
	op    trace.Op
	class trace.Class
	dir   trace.Dir
	addr  trace.Addressing
}) {
	for c, op := range ops {
		in := op.Info()
		a[c].op, a[c].class, a[c].dir, a[c].addr = op, in.Class, in.Dir, in.Addr
	}
	return a
}()

// Event flags of communication calls: a receive posted with a wildcard
// (its Peer and Tag are those of the message it matched).
const (
	FlagAnySource = trace.PostedAnySource
	FlagAnyTag    = trace.PostedAnyTag
)

const (
	oAppend           = 0x400
	atFDCWD           = -100
	seekSet           = 0
	seekCurr          = 1
	closeRangeCloexec = 4
	atEmptyPath       = 0x1000
	atSymlinkFollow   = 0x400
)

// Run is the spools of one recorded run, each process given a rank.
type Run struct {
	Spools []*Spool // by start time
	rank   map[*Spool]uint32
	ranks  []uint32
	size   int
	// Warnings name the spools that could not be read.
	Warnings []string
	// RawTimes keeps the shim's cost in the times Encode writes.
	RawTimes bool
	// ImageCost and ReplaceCost are the shim's costs per process image
	// that no record carries (ImageCost, measured by the caller), which
	// Encode takes out at each image a forked child of the rank exec'd
	// and at each that replaced an image with records: Cost.Image and
	// Cost.Replace. 0: none.
	ImageCost, ReplaceCost int64
}

// Cost is what the shim measured of its cost per call in rank's first
// process that measured it, which Encode takes out of the rank's times
// (Samples 0: nothing to take out).
func (r *Run) Cost(rank uint32) capture.Cost {
	if r.RawTimes {
		return capture.Cost{}
	}
	for _, s := range r.Spools {
		if r.rank[s] == rank && s.Header.Cost.Samples > 0 {
			c := s.Header.Cost
			c.Image, c.Replace = r.ImageCost, r.ReplaceCost
			return c
		}
	}
	return capture.Cost{}
}

// Execs counts the process images of the run that exec started in a
// process of the run: in a forked child without records before its exec
// (started, for Cost.Image), and in place of an image with records
// (replacing, for Cost.Replace); where there are some, ImageCost is
// worth measuring.
func (r *Run) Execs() (started, replacing int) {
	seen := map[uint32]bool{} // by pid, as Encode links images (numberThreads)
	for _, s := range r.Spools {
		h := s.Header
		switch {
		case seen[h.PID]:
			if h.Exec {
				replacing++
			}
		case h.Exec && seen[h.PPID]:
			started++
		}
		seen[h.PID] = true
	}
	return started, replacing
}

// ReadDir opens the spools in dir. A process takes the MPI rank it
// recorded (MPI_Init), or that of its nearest ancestor that has one, or
// def. A spool without a header (a process that died as it started) is
// skipped with a warning.
func ReadDir(dir string, def uint32) (*Run, error) {
	names, err := filepath.Glob(filepath.Join(dir, "spool-*.sp"))
	if err != nil {
		return nil, err
	}
	r := &Run{rank: map[*Spool]uint32{}}
	for _, n := range names {
		s, err := OpenSpool(n)
		if err != nil {
			var se *SpoolError
			if errors.As(err, &se) {
				r.Warnings = append(r.Warnings, err.Error())
				continue
			}
			r.Close()
			return nil, err
		}
		r.Spools = append(r.Spools, s)
	}
	slices.SortFunc(r.Spools, func(a, b *Spool) int {
		return cmp.Or(cmp.Compare(a.Header.MonoStart, b.Header.MonoStart), cmp.Compare(a.Name, b.Name))
	})
	// A process's rank: its own, or an ancestor's.
	byPID := map[uint32]int32{}
	parent := map[uint32]uint32{}
	for _, s := range r.Spools {
		if _, ok := parent[s.Header.PID]; !ok {
			parent[s.Header.PID] = s.Header.PPID
		}
		if s.Header.Rank >= 0 {
			byPID[s.Header.PID] = s.Header.Rank
			r.size = max(r.size, int(s.Header.Size))
		}
	}
	seen := map[uint32]bool{}
	for _, s := range r.Spools {
		rk := int64(-1)
		for pid, hops := s.Header.PID, 0; hops < 64; hops++ {
			if v, ok := byPID[pid]; ok {
				rk = int64(v)
				break
			}
			p, ok := parent[pid]
			if !ok || p == pid {
				break
			}
			pid = p
		}
		if rk < 0 {
			rk = int64(def)
		}
		r.rank[s] = uint32(rk)
		if !seen[uint32(rk)] {
			seen[uint32(rk)] = true
			r.ranks = append(r.ranks, uint32(rk))
		}
	}
	slices.Sort(r.ranks)
	return r, nil
}

// Close closes the spools.
func (r *Run) Close() {
	for _, s := range r.Spools {
		s.Close()
	}
}

// Ranks lists the ranks of the run's processes.
func (r *Run) Ranks() []uint32 { return r.ranks }

// Size is the number of ranks MPI reported (0 without MPI).
func (r *Run) Size() int { return r.size }

// Epoch is the wall-clock time (ns since the Unix epoch) of the earliest
// spool: time 0 of the encoded events.
func (r *Run) Epoch() int64 {
	var e int64
	for i, s := range r.Spools {
		if i == 0 || s.Header.RealStart < e {
			e = s.Header.RealStart
		}
	}
	return e
}

// MainPID returns the pid of rank's first process.
func (r *Run) MainPID(rank uint32) int {
	for _, s := range r.Spools {
		if r.rank[s] == rank {
			return int(s.Header.PID)
		}
	}
	return 0
}

// Stats says what Encode did for one rank.
type Stats struct {
	Processes  int
	Threads    int
	Records    int64
	Events     int64
	Incomplete int64 // calls in progress when a process died
	Dropped    int64 // records the shim could not write
	// What the trace cannot show that the program did: the recorded files
	// it mapped into memory (reads and writes through a mapping are
	// memory accesses), and the kinds of asynchronous I/O it set up
	// (Unseen* bits).
	MmapFiles int
	Unseen    uint32
	// Clock holds the readings of the clock exchange with rank 0 the
	// shim made in MPI_Init and MPI_Finalize (capture.Clock makes the
	// rank's clock samples of them).
	Clock []capture.ClockReading
	// Cost is what the shim measured of its cost per call and took out
	// of the times (Samples 0: nothing); Corrections, how much.
	Cost        capture.Cost
	Corrections capture.Corrections
}

// The kinds of I/O the shim sees set up but cannot record (Stats.Unseen).
const (
	UnseenIOUring  = 1 // io_uring
	UnseenAIO      = 2 // Linux AIO (io_setup)
	UnseenPOSIXAIO = 4 // POSIX AIO's lio_listio (glibc's threads; aio_read and aio_write are recorded)
)

// Encode writes the events of rank's processes to sink, in call order,
// with times from the run's epoch. rules picks the recorded paths (nil:
// every path). Thread indexes: the first process's threads from 0, then
// each further process's after them, in the order the processes started;
// a process image an exec started keeps its main thread's index. Besides
// the calls, Encode writes the process events every consumer needs to
// keep one descriptor table per process: a fork where a process whose
// parent is in the rank starts, an exec where a process starts a new
// image, a clone where a thread first appears, an exit where each thread
// and process ends, an inherit for each descriptor a process used but was
// not seen opening. A damaged spool ends its process's events with an
// error naming file and offset, after the events before it were written.
func (r *Run) Encode(rank uint32, sink trace.Sink, rules *filter.Paths) (Stats, error) {
	var st Stats
	epoch := r.Epoch()
	var procs []*proc
	for _, s := range r.Spools {
		if r.rank[s] != rank {
			continue
		}
		pr, err := scanProc(s)
		if err != nil {
			return st, err
		}
		pr.shift = s.Header.RealStart - s.Header.MonoStart - epoch
		procs = append(procs, pr)
		st.Processes++
		st.Dropped += int64(s.Header.Dropped)
	}
	st.Threads = int(numberThreads(procs))
	// The shim's cost comes out of the times as the rank's events leave
	// in call order.
	st.Cost = r.Cost(rank)
	var its []stream
	var piters []*procIter
	for _, pr := range procs {
		s := pr.s
		p := &procIter{pr: pr, src: s.merged(), s: s, sink: sink, rules: rules, main: pr.main, base: pr.base,
			shift: pr.shift, st: state.New[ofile, handle](nil), cwd: s.Header.Cwd}
		its = append(its, p)
		piters = append(piters, p)
	}
	synth, images, replaced := processEvents(procs, sink, st.Cost)
	its = append(its, &synthIter{evs: synth})
	acct := capture.Account{C: st.Cost}
	out := make([]trace.Event, 0, trace.BatchSize)
	flush := func() error {
		if len(out) == 0 {
			return nil
		}
		err := sink.WriteEvents(out)
		st.Events += int64(len(out))
		out = out[:0]
		return err
	}
	firstErr, err := merge(its, func(evs []trace.Event, overs []int64) error {
		for len(evs) > 0 {
			k := min(len(evs), cap(out)-len(out))
			n := len(out)
			out = append(out, evs[:k]...)
			for i := range k {
				acct.Over(overs[i])
				if e := &out[n+i]; overs[i] > 0 && e.Op.Class() == trace.ClassProcess {
					acct.Settle(e.Start) // an image's left (synthIter): before the event
				}
				acct.Event(&out[n+i])
			}
			evs, overs = evs[k:], overs[k:]
			if len(out) == cap(out) {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return st, err
	}
	mapped := map[trace.PathID]bool{}
	for _, p := range piters {
		st.Records += p.src.Stats.Records
		st.Incomplete += p.src.Stats.Incomplete
		st.Unseen |= p.unseen
		st.Clock = append(st.Clock, p.pr.clock...)
		for id := range p.mapped {
			mapped[id] = true
		}
	}
	st.MmapFiles = len(mapped)
	st.Corrections = acct.N
	st.Corrections.Images, st.Corrections.Replaced = images, replaced
	return st, firstErr
}

// proc is one process image (one spool) of a rank.
type proc struct {
	s           *Spool
	shift       int64
	main, base  uint32 // thread index of the main thread; of thread 1 (thread k: base+k-1)
	maxTid      uint32
	first, last map[uint32]int64 // each thread's first start and last end (the shim's clock)
	end         int64            // the image's last end
	exited      bool             // the shim recorded exit's status
	status      int64
	prev, next  *proc // the image exec replaced, the one that replaced it
	parent      *proc // the process it was forked from, when in the rank
	// left is the shim's time (Record.Over) that the image's last
	// records carried but made no event of (a call on a file the rules
	// leave out), known once its records are read: it lies in the gap
	// after the image's last event, which its exit event (or the exec
	// of the image that replaced it) passes on (synthIter).
	left  int64
	clock []capture.ClockReading
}

func (p *proc) index(tid uint32) uint32 {
	if tid == 0 {
		return p.main
	}
	return p.base + tid - 1
}

// scanProc reads a spool for what the process events need: its threads'
// first and last calls. The blocks say most of it without a record
// decoded: a thread's first call is the time base of its first block; its
// last is in its last block (a thread's calls do not overlap), or in its
// side blocks, which are read whole. (The exit status is learnt while the
// records are encoded: the process's exit event comes after its calls.)
func scanProc(s *Spool) (*proc, error) {
	p := &proc{s: s, first: map[uint32]int64{}, last: map[uint32]int64{}, end: s.Header.MonoStart}
	var st ReadStats
	curs, err := s.streams(&st)
	for _, c := range curs {
		tid := c.blocks[0].tid
		p.maxTid = max(p.maxTid, tid)
		if !c.blocks[0].side {
			if f, ok := p.first[tid]; !ok || c.blocks[0].base < f {
				p.first[tid] = c.blocks[0].base
			}
			c.blocks = c.blocks[len(c.blocks)-1:]
		}
		var r Record
		for {
			ok, err := c.next(&r)
			if err != nil || !ok {
				break // a damaged spool: Encode says where
			}
			if f, ok := p.first[tid]; !ok || r.Start < f {
				p.first[tid] = r.Start
			}
			p.last[tid] = max(p.last[tid], r.Start+r.Dur)
			p.end = max(p.end, r.Start+r.Dur)
		}
	}
	if err != nil {
		var se *SpoolError
		if !errors.As(err, &se) {
			return nil, err
		}
		// Encode reports a damaged spool; what came before counts.
	}
	return p, nil
}

// numberThreads links the images of a process (a spool whose pid is an
// earlier spool's, of the same process start time, was started by exec)
// and each process to its parent, and numbers the threads: a process's
// main thread and others from the next free index, an exec's image
// keeping its process's main thread. It returns the indexes used.
func numberThreads(procs []*proc) uint32 {
	var n uint32
	latest := map[uint32]*proc{} // by pid: the latest image
	for _, p := range procs {
		h := p.s.Header
		if q := latest[h.PID]; q != nil && q.next == nil && (h.ProcStart == 0 || q.s.Header.ProcStart == 0 || h.ProcStart == q.s.Header.ProcStart) {
			p.prev, q.next = q, p
			p.main, p.base = q.main, n
			n += p.maxTid
		} else {
			p.parent = latest[h.PPID]
			p.main, p.base = n, n+1
			n += p.maxTid + 1
		}
		latest[h.PID] = p
	}
	return n
}

// Order of events of the same time: those that make a process or thread
// before its calls, exits after them.
const (
	prioStart = 0
	prioCall  = 1
	prioEnd   = 2
)

// processEvents returns the fork, exec, clone and exit events of procs,
// in time order, and how many images the shim's costs at their start
// (cost.Image, cost.Replace) were given to.
//
// An image's start (its exec or fork event) is its constructor's: what
// the shim cost before that, loading the library after the exec (and the
// exec unmapping the spool of the image it replaced), lies in the gap
// before the event, which the event carries out of it.
func processEvents(procs []*proc, sink trace.Sink, cost capture.Cost) (evs []synthEvent, images, replaced int64) {
	add := func(prio int8, e trace.Event) { evs = append(evs, synthEvent{e: e, prio: prio}) }
	for _, p := range procs {
		start := p.s.Header.MonoStart + p.shift
		switch {
		case p.prev != nil:
			ev := synthEvent{e: trace.Event{Op: trace.OpExec, Thread: p.main, Start: start, Path: sink.Intern(program(p.s.Header))}, prio: prioStart, after: p.prev}
			if p.s.Header.Exec && cost.Replace > 0 {
				ev.cost = cost.Replace
				replaced++
			}
			evs = append(evs, ev)
		case p.parent != nil:
			ev := synthEvent{e: trace.Event{Op: trace.OpFork, Thread: p.parent.main, Start: start, Ret: int64(p.main)}, prio: prioStart}
			if p.s.Header.Exec && cost.Image > 0 {
				ev.cost = cost.Image
				images++
			}
			evs = append(evs, ev)
			if p.s.Header.Exec {
				// A child that exec'd before it recorded anything has
				// no image of its own before the exec (its shim makes
				// its spool at its first record): the fork and the
				// exec, both at the image's start.
				add(prioStart, trace.Event{Op: trace.OpExec, Thread: p.main, Start: start, Path: sink.Intern(program(p.s.Header))})
			}
		}
		var tids []uint32
		for tid := range p.first {
			if tid != 0 {
				tids = append(tids, tid)
			}
		}
		slices.Sort(tids)
		for _, tid := range tids {
			add(prioStart, trace.Event{Op: trace.OpClone, Thread: p.main, Start: p.first[tid] + p.shift, Ret: int64(p.index(tid))})
			add(prioEnd, trace.Event{Op: trace.OpExit, Thread: p.index(tid), Start: p.last[tid] + p.shift})
		}
		if p.next == nil {
			// After its threads' exits; its status is the one the
			// shim recorded, which the encoder has read by then.
			evs = append(evs, synthEvent{e: trace.Event{Op: trace.OpExit, Thread: p.main, Start: p.end + p.shift}, prio: prioEnd + 1, exit: p, after: p})
		}
	}
	slices.SortStableFunc(evs, func(a, b synthEvent) int {
		return cmp.Or(cmp.Compare(a.e.Start, b.e.Start), cmp.Compare(a.prio, b.prio))
	})
	return evs, images, replaced
}

// program is the program a process image runs: the shim's record of
// /proc/self/exe, else its first argument (made absolute when it names a
// path).
func program(h Header) string {
	if h.Exe != "" {
		return h.Exe
	}
	if len(h.Cmdline) == 0 {
		return ""
	}
	a := h.Cmdline[0]
	if strings.Contains(a, "/") && !strings.HasPrefix(a, "/") && h.Cwd != "" {
		return path.Join(h.Cwd, a)
	}
	return a
}

// merge passes the events of its to fn in order of start, then priority:
// runs of one stream's events, as many as come before every other
// stream's current event (their overs beside them). It returns the
// streams' first error, and fn's, which ends it.
func merge(its []stream, fn func(evs []trace.Event, overs []int64) error) (streamErr, err error) {
	h := iterHeap{}
	for _, p := range its {
		if p.next() {
			h.push(p)
		} else if err := p.error(); err != nil && streamErr == nil {
			streamErr = err
		}
	}
	for len(h) > 0 {
		p := h[0].s
		evs, overs := p.ahead()
		evs = evs[:h.first(evs)]
		p.skip(len(evs) - 1)
		if err := fn(evs, overs[:len(evs)]); err != nil {
			return streamErr, err
		}
		if p.next() {
			h.fix()
		} else {
			h.pop()
			if err := p.error(); err != nil && streamErr == nil {
				streamErr = err
			}
		}
	}
	return streamErr, nil
}

// stream is a source of events in time order that Encode merges.
type stream interface {
	next() bool
	current() *trace.Event
	// ahead returns the current event and those after it that the stream
	// has made, all of the current one's priority, and the shim's own
	// time measured in the gap before each (Record.Over; 0: none
	// measured). They stay valid until next.
	ahead() ([]trace.Event, []int64)
	// skip moves on by n events, n less than those ahead returned: the
	// next current is then the last of them.
	skip(n int)
	prio() int8
	error() error
}

type synthEvent struct {
	e    trace.Event
	prio int8
	exit *proc // a process's exit: its status is the one its records hold
	// after is the image whose left (proc.left) the event passes on: the
	// image an exec replaced, the one an exit ends.
	after *proc
	// cost is the shim's cost at the image's start that no record
	// measured (Cost.Image, Cost.Replace), in the gap before the event.
	cost int64
}

// synthIter streams events made by the encoder.
type synthIter struct {
	evs  []synthEvent
	i    int
	one  [1]trace.Event // the current event, for ahead
	over [1]int64       // its Over (synthEvent.after)
}

func (s *synthIter) next() bool {
	if s.i >= len(s.evs) {
		return false
	}
	s.i++
	return true
}
func (s *synthIter) current() *trace.Event {
	ev := &s.evs[s.i-1]
	if p := ev.exit; p != nil && p.exited {
		ev.e.Ret = p.status
	}
	return &ev.e
}
func (s *synthIter) ahead() ([]trace.Event, []int64) {
	s.one[0] = *s.current()
	s.over[0] = s.evs[s.i-1].cost
	if p := s.evs[s.i-1].after; p != nil {
		// The image's records are read by now: its events all start
		// before this one, and the merge takes them first.
		s.over[0], p.left = s.over[0]+p.left, 0
	}
	return s.one[:], s.over[:]
}
func (s *synthIter) skip(n int)   {} // ahead returns one event
func (s *synthIter) prio() int8   { return s.evs[s.i-1].prio }
func (s *synthIter) error() error { return nil }

// iterHeap is a min-heap of streams by their current events' start and
// priority, which it keeps beside each stream so that comparing costs no
// call.
type iterHeap []heapItem

type heapItem struct {
	start int64
	prio  int8
	s     stream
}

func item(s stream) heapItem { return heapItem{s.current().Start, s.prio(), s} }

func (h iterHeap) less(i, j int) bool {
	return h[i].start < h[j].start || h[i].start == h[j].start && h[i].prio < h[j].prio
}

// first returns how many of evs, the first stream's events ahead, come
// before the other streams' current events: the events it gives in a row,
// as fix after each would leave it first.
func (h iterHeap) first(evs []trace.Event) int {
	if len(h) == 1 {
		return len(evs)
	}
	o := h[1] // the least of the others: a child of the first
	if len(h) > 2 && h.less(2, 1) {
		o = h[2]
	}
	prio, n := h[0].prio, 1
	for n < len(evs) && !(o.start < evs[n].Start || o.start == evs[n].Start && o.prio < prio) {
		n++
	}
	return n
}

func (h *iterHeap) push(s stream) {
	*h = append(*h, item(s))
	for i := len(*h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		(*h)[i], (*h)[p] = (*h)[p], (*h)[i]
		i = p
	}
}

// fix restores the order after the first stream moved on.
func (h iterHeap) fix() {
	h[0] = item(h[0].s)
	for i := 0; ; {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		if r := l + 1; r < len(h) && h.less(r, l) {
			l = r
		}
		if !h.less(l, i) {
			return
		}
		h[i], h[l] = h[l], h[i]
		i = l
	}
}

// pop removes the first stream.
func (h *iterHeap) pop() {
	n := len(*h) - 1
	(*h)[0] = (*h)[n]
	*h = (*h)[:n]
	if n > 0 {
		(*h)[0] = item((*h)[0].s)
		h.fix()
	}
}

// ofile is what the encoder keeps on an open file description of the
// process (trace/state follows the descriptors, their positions and
// flags: fed every call of the spool, recorded or not).
type ofile struct {
	name string
	id   trace.PathID
	keep bool
}

// handle is what the encoder keeps on an MPI file handle.
type handle struct {
	id   trace.PathID
	keep bool
}

type desc = state.Desc[ofile]

// procIter turns one spool's records into events in start order: the
// spool's streams merged (a thread's calls, its signal handlers'), and
// each chunk sorted if a handler's call came out of order.
type procIter struct {
	pr    *proc
	src   *merged
	s     *Spool
	sink  trace.Sink
	rules *filter.Paths
	main  uint32 // thread index of the main thread
	base  uint32 // of thread 1
	shift int64
	st    *state.Follower[ofile, handle] // the process's descriptors and MPI file handles
	aux   *ofile                         // what the event being made opens (or inherits)
	haux  *handle                        // what the MPI_File_open being made opens
	cwd   string

	unseen uint32                // C_UNSEEN's kinds
	mapped map[trace.PathID]bool // recorded files mmap mapped (not the system's)

	chunk []trace.Event
	overs []int64 // Record.Over of each event of chunk, with that of the records before it that made none
	carry int64   // Record.Over of the records since the last event
	pos   int     // the current event is chunk[pos-1]
	done  bool
	err   error
}

const chunkEvents = 4096

func (p *procIter) index(tid uint32) uint32 {
	if tid == 0 {
		return p.main
	}
	return p.base + tid - 1
}

func (p *procIter) current() *trace.Event { return &p.chunk[p.pos-1] }
func (p *procIter) ahead() ([]trace.Event, []int64) {
	return p.chunk[p.pos-1:], p.overs[p.pos-1:]
}
func (p *procIter) skip(n int)   { p.pos += n }
func (p *procIter) prio() int8   { return prioCall }
func (p *procIter) error() error { return p.err }

func (p *procIter) next() bool {
	for p.pos >= len(p.chunk) {
		if p.done {
			return false
		}
		if p.chunk == nil {
			p.chunk, p.overs = make([]trace.Event, 0, chunkEvents), make([]int64, 0, chunkEvents)
		}
		p.chunk, p.overs, p.pos = p.chunk[:0], p.overs[:0], 0
		sorted := true
		for len(p.chunk) < chunkEvents {
			rec := p.src.next()
			if rec == nil {
				p.err, p.done = p.src.err, true
				p.pr.left, p.carry = p.carry, 0
				break
			}
			p.aux, p.haux = nil, nil
			n := len(p.chunk)
			p.chunk = p.chunk[:n+1] // the event is made in place
			e := &p.chunk[n]
			ok := p.event(rec, e)
			p.follow(e)
			p.carry += rec.Over
			if !ok {
				p.chunk = p.chunk[:n]
				continue
			}
			p.overs = append(p.overs, p.carry)
			p.carry = 0
			if n > 0 && e.Start < p.chunk[n-1].Start {
				sorted = false
			}
		}
		if !sorted {
			p.sortChunk()
		}
	}
	p.pos++
	return true
}

// sortChunk orders the chunk's events by start (stable), their overs
// with them: a signal handler's call recorded after the call it
// interrupted.
func (p *procIter) sortChunk() {
	idx := make([]int, len(p.chunk))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(p.chunk[a].Start, p.chunk[b].Start) })
	evs, overs := slices.Clone(p.chunk), slices.Clone(p.overs)
	for i, j := range idx {
		p.chunk[i], p.overs[i] = evs[j], overs[j]
	}
}

// resolve makes a recorded path absolute: one relative to a directory
// descriptor (RF_PATH_AT) joins that directory's name.
func (p *procIter) resolve(r *Record, name string) string {
	if name == "" || strings.HasPrefix(name, "/") {
		return path.Clean(name)
	}
	dir := p.cwd
	if r.Flags&rfPathAt != 0 {
		if f := p.fd(r.Tid, r.FD); f != nil {
			dir = f.Aux.name
		}
	}
	return path.Join(dir, name)
}

// fd returns the description of descriptor fd of thread tid's process,
// or nil.
func (p *procIter) fd(tid uint32, fd int32) *desc { return p.st.Lookup(p.index(tid), fd) }

// follow makes the descriptor table follow e (made from a record, kept or
// not): the descriptions an open or inherit makes get what the encoder
// knows of their file.
func (p *procIter) follow(e *trace.Event) {
	if e.Op == trace.OpUnknown || e.Op == trace.OpMPIFileOpen && e.FD <= 0 {
		return // bookkeeping; an MPI_File_open that made no handle
	}
	if p.aux == nil && p.haux == nil {
		p.st.Follow(e) // most records: nothing of the encoder's to attach
		return
	}
	st := p.st.Apply(e)
	if st.New != nil && st.New != st.Desc && p.aux != nil {
		st.New.Aux = *p.aux
	}
	if st.Handle != nil && e.Op == trace.OpMPIFileOpen && p.haux != nil {
		st.Handle.Aux = *p.haux
	}
}

// resolve2 makes a call's second path absolute: one relative to a
// directory descriptor (RF_PATH2_AT) joins the name of the descriptor
// in Peer.
func (p *procIter) resolve2(r *Record, name string) string {
	if name == "" || strings.HasPrefix(name, "/") {
		return path.Clean(name)
	}
	dir := p.cwd
	if r.Flags&rfPath2At != 0 {
		if f := p.fd(r.Tid, r.Peer); f != nil {
			dir = f.Aux.name
		}
	}
	return path.Join(dir, name)
}

// atFD is the directory descriptor of a path call: the one its path is
// relative to, or AT_FDCWD.
func atFD(r *Record) int32 {
	if r.Flags&rfPathAt != 0 {
		return r.FD
	}
	return atFDCWD
}

func (p *procIter) match(name string) bool {
	return p.rules == nil || p.rules.Match(name)
}

func (p *procIter) intern(name string) trace.PathID {
	if name == "" {
		return 0
	}
	return p.sink.Intern(name)
}

// event converts a record into e; false when it gives no event (not
// recorded path, bookkeeping record).
func (p *procIter) event(r *Record, e *trace.Event) bool {
	ok := p.event1(r, e)
	switch r.Call {
	case cStat, cLstat, cFstat, cFstatat, cStatx, cRename, cRenameat, cRenameat2, cLink, cLinkat:
		// The shim's size of a stat, or of the file a rename or link
		// moves: one more than the regular file's size, 0 for none
		// (shim.c, st_size, moved_size).
		e.Size = 0
		if r.Size > 0 && r.Ret == 0 {
			e.Size, e.Flags = r.Size-1, e.Flags|trace.SizeSeen
		}
	}
	return ok
}

func (p *procIter) event1(r *Record, e *trace.Event) bool {
	*e = trace.Event{Thread: p.index(r.Tid), Start: r.Start + p.shift, Dur: r.Dur, Ret: r.Ret}
	if r.Flags&rfInMPIIO != 0 {
		e.Flags = trace.InMPIIO
	}
	switch r.Call {
	case cNone:
		// A descriptor the shim did not see opened (inherited, or opened
		// by a call it does not wrap): its name, flags and position, as
		// an inherit event.
		if r.FD < 0 {
			return false
		}
		name := p.resolve(r, r.Path)
		pos := r.Off
		if pos < 0 {
			pos = -1
		}
		f := &ofile{name: name, keep: p.match(name)}
		if f.keep {
			f.id = p.intern(name)
		}
		p.aux = f
		e.Op, e.FD, e.Ret, e.Path, e.Flags, e.Offset, e.Dur = trace.OpInherit, r.FD, int64(r.FD), f.id, e.Flags|r.OFlags, pos, 0
		return f.keep
	case cExit:
		p.pr.exited, p.pr.status = true, r.Ret
		return false
	case cMPIClock:
		// The reference's reading is in Bytes (shim.h C_MPI_CLOCK).
		if (r.Size == 0 || r.Size == 1) && r.Peer >= 0 {
			h := p.s.Header
			p.pr.clock = append(p.pr.clock, capture.ClockReading{Phase: int(r.Size), T1: r.Start, T3: r.Start + r.Dur,
				Ref: r.Bytes, Base: h.RealStart - h.MonoStart, Reference: uint32(r.Peer)})
		}
		return false
	case cMPIRank, cMPIFinalize:
		return false
	case cUnseen:
		p.unseen |= r.OFlags
		return false
	}
	if int(r.Call) >= len(callOf) || callOf[r.Call].op == trace.OpUnknown {
		return false // a call of a newer shim
	}
	call := &callOf[r.Call]
	op := call.op
	e.Op = op
	switch r.Call {
	case cOpen, cOpenat, cCreat, cFopen:
		name := p.resolve(r, r.Path)
		keep := p.match(name)
		f := &ofile{name: name, keep: keep}
		if keep {
			f.id = p.intern(name)
		}
		p.aux = f
		if r.Ret >= 0 {
			e.FD = int32(r.Ret)
		} else {
			e.FD = atFDCWD
		}
		e.Path, e.Flags, e.Mode = f.id, e.Flags|r.OFlags, r.Mode
		return keep
	case cClose, cFclose:
		f := p.fd(r.Tid, r.FD)
		e.FD = r.FD
		return f != nil && f.Aux.keep
	case cDup, cDup2, cDup3:
		// dup2 and dup3 are recorded when the target was a file, whatever
		// the source: the target then no longer names that file.
		f := p.fd(r.Tid, r.FD)
		var old *desc
		if r.Ret >= 0 && int32(r.Ret) != r.FD {
			old = p.fd(r.Tid, int32(r.Ret))
		}
		e.FD = r.FD
		if r.Call == cDup3 {
			e.Flags |= r.OFlags
		}
		return (f != nil && f.Aux.keep) || (old != nil && old.Aux.keep)
	case cCloseRange:
		keep := false
		p.st.Each(p.index(r.Tid), func(fd int32, f *desc) {
			if fd >= r.FD && (r.Size < 0 || int64(fd) <= r.Size) && f.Aux.keep {
				keep = true
			}
		})
		e.FD, e.Size, e.Flags = r.FD, r.Size, e.Flags|r.OFlags
		if r.Size < 0 {
			e.Size = 1<<32 - 1 // ~0U, as the ptrace capture records it
		}
		return keep
	case cSync:
		return true
	case cPagein:
		// A wait for mapped pages between two calls: the trace's while
		// the process has a recorded mapping (the shim reads it whenever
		// it has one of any file), of that file where it is the only one.
		maps := &p.st.Proc(e.Thread).Maps
		if maps.Len() == 0 {
			return false
		}
		e.FD, e.Count, e.Size = -1, r.Count, r.Size
		if id, ok := maps.OneFile(); ok {
			e.Path = id
		}
		return true
	case cMunmap, cMsync:
		// The address range becomes the file range of the recorded
		// mapping it meets (the first, if it meets several): kept only
		// then.
		maps := &p.st.Proc(e.Thread).Maps
		pieces := maps.Pieces(uint64(r.Off), uint64(r.Size))
		if len(pieces) == 0 {
			return false
		}
		m := pieces[0]
		e.FD, e.Path, e.Offset, e.Size = -1, m.Path, m.Off, int64(m.Len)
		if r.Call == cMsync {
			e.Flags |= r.OFlags
		} else if r.Ret == 0 {
			maps.Unmap(uint64(r.Off), uint64(r.Size))
		}
		return true
	case cSymlink, cSymlinkat:
		// Path2 is the link's target exactly as written: not resolved.
		name := p.resolve(r, r.Path)
		e.Path, e.Path2, e.FD = p.intern(name), p.intern(r.Path2), atFD(r)
		return p.match(name)
	case cLink, cLinkat:
		// linkat(fd, "", …, AT_EMPTY_PATH) links the file open on fd: no
		// first path; so does linkat of /proc/self/fd/N with
		// AT_SYMLINK_FOLLOW (a file made with O_TMPFILE given its name),
		// of descriptor N.
		keep := false
		fd := atFD(r)
		name := ""
		if r.Path != "" {
			name = p.resolve(r, r.Path)
			if n, ok := filter.DescriptorPath(name, 0); ok && r.Call == cLinkat && r.OFlags&atSymlinkFollow != 0 {
				name, fd = "", n
			}
		}
		if name != "" {
			e.Path, keep = p.intern(name), p.match(name)
		} else if f := p.fd(r.Tid, fd); f != nil {
			keep = f.Aux.keep
		}
		name2 := p.resolve2(r, r.Path2)
		e.Path2, e.FD, e.Flags = p.intern(name2), fd, e.Flags|r.OFlags
		return keep || p.match(name2)
	case cCopyFileRange, cSendfile, cSplice:
		return p.copyEvent(r, e)
	case cStat, cLstat, cFstatat, cStatx, cAccess, cUnlink, cUnlinkat, cMkdir, cMkdirat, cRmdir, cTruncate,
		cRename, cRenameat, cRenameat2, cReadlink, cReadlinkat:
		name := p.resolve(r, r.Path)
		keep := p.match(name)
		if r.Path == "" && r.Flags&rfPathAt != 0 && r.OFlags&atEmptyPath != 0 {
			// fstatat(fd, "", AT_EMPTY_PATH), statx too: the file open on
			// fd, which FD names, with no Path (trace.FDAt): the name may
			// be gone, or be a symbolic link opened with O_PATH.
			name, keep = "", false
			if f := p.fd(r.Tid, r.FD); f != nil {
				keep = f.Aux.keep
			}
		}
		if r.Path2 != "" {
			name2 := p.resolve2(r, r.Path2)
			if p.match(name2) {
				keep = true
			}
			e.Path2 = p.intern(name2)
		}
		e.Path, e.Flags, e.Mode, e.Size = p.intern(name), e.Flags|r.OFlags, r.Mode, r.Size
		if r.Flags&rfPathAt != 0 {
			e.FD = r.FD
		} else {
			e.FD = atFDCWD
		}
		return keep
	}
	if call.class == trace.ClassComm {
		e.Peer, e.Tag, e.Comm, e.Bytes, e.Count = r.Peer, r.Tag, r.Comm, r.Bytes, r.Count
		e.Flags = 0
		if r.Flags&rfAnySource != 0 {
			e.Flags |= FlagAnySource
		}
		if r.Flags&rfAnyTag != 0 {
			e.Flags |= FlagAnyTag
		}
		if r.Call == cMPISendrecv && r.Flags&rfRecvHalf != 0 {
			e.SetRecvFrom(int32(r.Off), int32(r.Size))
		}
		switch r.Call {
		case cMPIBarrier, cMPIAllreduce, cMPIAllgather, cMPIAllgatherv, cMPIAlltoall, cMPIAlltoallv,
			cMPICommSplit, cMPICommDup, cMPIWait, cMPIWaitall:
			e.Peer = 0
		}
		return true
	}
	if call.class == trace.ClassMPIIO {
		e.FD, e.Comm, e.Offset, e.Size, e.Count = r.FD, r.Comm, r.Off, r.Size, r.Count
		switch r.Call {
		case cMPIFileOpen:
			name := p.resolve(r, r.Path)
			h := &handle{keep: p.match(name)}
			if h.keep {
				h.id = p.intern(name)
			}
			p.haux = h
			e.Path, e.Flags, e.Offset = h.id, r.OFlags, 0
			return h.keep
		case cMPIFileDelete:
			name := p.resolve(r, r.Path)
			e.Path, e.FD = p.intern(name), 0
			return p.match(name)
		case cMPIFileSetView:
			e.Stride = r.Bytes
		case cMPIFileSeek, cMPIFileSeekShared:
			e.Whence = int32(r.OFlags)
		}
		h := p.st.Handle(r.FD)
		if h == nil {
			return true // a handle opened before the shim: kept, without a path
		}
		e.Path = h.Aux.id
		return h.Aux.keep
	}
	// Descriptor calls: every field is set, kept or not, for the table
	// follows them all.
	f := p.fd(r.Tid, r.FD)
	e.FD = r.FD
	keep := f != nil && f.Aux.keep
	switch {
	case call.dir != trace.DirNone:
		e.Size, e.Count = r.Size, r.Count
		if call.addr == trace.AddrExplicit {
			e.Offset = r.Off
			if op == trace.OpPreadv2 || op == trace.OpPwritev2 {
				e.Flags |= r.OFlags
			}
		} else {
			off := r.Off // the shim knows it for appends and stdio streams
			if off < 0 && f != nil {
				off = f.Pos // where this process's calls left it (the table moves it)
			}
			e.Offset = off
		}
	case op == trace.OpLseek, op == trace.OpFseek:
		e.Offset, e.Whence = r.Off, int32(r.OFlags)
	case op == trace.OpFtruncate, op == trace.OpGetdents:
		e.Size = r.Size
	case op == trace.OpFallocate, op == trace.OpFadvise, op == trace.OpFcntl, op == trace.OpReadahead:
		e.Offset, e.Size, e.Flags = r.Off, r.Size, e.Flags|r.OFlags
	case op == trace.OpMmap:
		e.Offset, e.Size, e.Flags, e.Mode = r.Off, r.Size, e.Flags|r.OFlags, r.Mode
		if keep && r.Ret >= 0 && !filter.SystemFile(f.Aux.name) {
			if p.mapped == nil {
				p.mapped = map[trace.PathID]bool{}
			}
			p.mapped[f.Aux.id] = true
		}
		if keep && r.Ret >= 0 && r.Bytes != 0 && r.Size > 0 {
			p.st.Proc(e.Thread).Maps.Map(uint64(r.Bytes), uint64(r.Size), f.Aux.id, r.Off)
		}
	}
	return keep
}

// copyEvent converts a copy between two descriptors (copy_file_range,
// sendfile, splice): FD reads at Offset, FD2 writes at Offset2. It is
// kept when either side is a recorded file. An offset the call did not
// give is the side's position (the shim reads it; where it could not,
// the position this process's events put it at), which moves by what
// was copied.
func (p *procIter) copyEvent(r *Record, e *trace.Event) bool {
	in, out := p.fd(r.Tid, r.FD), p.fd(r.Tid, r.Peer)
	e.FD, e.FD2, e.Size = r.FD, r.Peer, r.Size
	e.Flags |= r.OFlags & (trace.CopyInAt | trace.CopyOutAt)
	side := func(f *desc, off int64, given bool) (trace.PathID, int64) {
		if f == nil {
			return 0, 0 // a pipe or socket: no offset
		}
		if !given && off < 0 {
			off = f.Pos // where this process's calls left it (the table moves it)
		}
		if !f.Aux.keep {
			return 0, off
		}
		return f.Aux.id, off
	}
	e.Path, e.Offset = side(in, r.Off, r.OFlags&trace.CopyInAt != 0)
	e.Path2, e.Offset2 = side(out, r.Bytes, r.OFlags&trace.CopyOutAt != 0)
	return (in != nil && in.Aux.keep) || (out != nil && out.Aux.keep)
}

// FindSpools counts the spools in dir.
func FindSpools(dir string) (int, error) {
	names, err := filepath.Glob(filepath.Join(dir, "spool-*.sp"))
	return len(names), err
}

// RemoveDir removes a spool directory after its spools were encoded.
func RemoveDir(dir string) error {
	names, err := filepath.Glob(filepath.Join(dir, "spool-*.sp"))
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := os.Remove(n); err != nil {
			return err
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the spool directory: %w", err)
	}
	return nil
}
