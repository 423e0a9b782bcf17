// Package chrome writes a trace as Chrome trace-event JSON (the "JSON
// Object Format" of the Trace Event Format), which Perfetto
// (ui.perfetto.dev) and chrome://tracing open as a timeline:
//
//   - one process per rank and one thread track per thread of it, named
//     by metadata events ("rank 3", "rank 3 thread 1"). Perfetto treats
//     pid 0 as the kernel's idle task, so pid is rank+1 and tid is
//     (rank+1)·1,000,000 + thread+1; the names carry the real numbers;
//   - every call a complete event ("ph":"X") named after the call, in the
//     category of its class (posix, meta, mpiio, comm), whose args are the
//     event's JSON-lines fields (docs/FORMAT.md), with the path of
//     descriptor-only calls filled in;
//   - labelled regions as "B"/"E" slices around the calls they hold, marks
//     as instant events;
//   - communication as flow arrows ("s" at the start of the sending
//     slice, "f" bound to the enclosing receiving slice): the n-th send
//     from rank a to rank b on a communicator with a tag goes to the n-th
//     matching receive of b (MPI's non-overtaking rule). Rooted
//     collectives draw one arrow from the root to every member (bcast,
//     scatter) or from every member to the root (reduce, gather); the
//     others (barrier, allreduce, allgather, alltoall, communicator
//     creation) draw one arrow from the member that entered last — the
//     one everybody waited for — to every other member.
//
// The writer streams: it reads every rank twice (once to count the
// messages of each channel and the members of each collective, once to
// write) and holds one entry per channel and per collective call, never
// the events.
package chrome

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/iotrace/iotrace/convert/schema"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/state"
)

// Summary counts what Write wrote.
type Summary struct {
	Slices     int64 // calls, as "X" events
	Regions    int64 // labelled regions, as "B"/"E" pairs
	Marks      int64 // instant events
	Flows      int64 // flow arrows (an "s" and an "f" each)
	Unmatched  int64 // sends and receives without a partner in the trace
	Wildcards  int64 // receives from MPI_ANY_SOURCE or with MPI_ANY_TAG: no arrow
	Incomplete int64 // collective calls not every member of the communicator made
}

// Note is a one-line account of the communication drawn without an
// arrow, or "".
func (s *Summary) Note() string {
	if s.Unmatched+s.Wildcards+s.Incomplete == 0 {
		return ""
	}
	return fmt.Sprintf("no arrow for %d sends and receives without a partner in the trace, %d receives with MPI_ANY_SOURCE or MPI_ANY_TAG, %d collective calls not every member made",
		s.Unmatched, s.Wildcards, s.Incomplete)
}

// PID and TID are the Chrome process and thread ids of a rank's thread.
func PID(rank uint32) int64 { return int64(rank) + 1 }

// TID is the Chrome thread id of thread th of rank.
func TID(rank, th uint32) int64 { return (int64(rank)+1)*1_000_000 + int64(th) + 1 }

// chanKey is a point-to-point channel: messages from src to dst with tag
// on comm.
type chanKey struct {
	comm     uint32
	src, dst uint32
	tag      int32
}

type chanInfo struct {
	sends, recvs int64
	base         int64 // flow id of the first message
}

// collCall is one collective call of a communicator, as the members made
// it.
type collCall struct {
	op       trace.Op
	root     int32
	n        uint32 // members that made it
	last     uint32 // the member that entered last
	lastT    int64
	mismatch bool // members disagree on the call or the root
}

type commInfo struct {
	members []uint32
	index   map[uint32]int
	calls   []collCall
	base    int64
}

type writer struct {
	t     trace.Trace
	w     *bufio.Writer
	s     Summary
	chans map[chanKey]*chanInfo
	comms map[uint32]*commInfo
	first bool
	buf   []byte
}

// Write writes t to w as Chrome trace-event JSON.
func Write(w io.Writer, t trace.Trace) (*Summary, error) {
	cw := &writer{t: t, w: bufio.NewWriterSize(w, 256<<10), chans: map[chanKey]*chanInfo{}, comms: map[uint32]*commInfo{}, first: true}
	if err := cw.count(); err != nil {
		return nil, err
	}
	cw.w.WriteString(`{"displayTimeUnit":"ns","otherData":`)
	cw.w.Write(metaJSON(t.Meta()))
	cw.w.WriteString(",\n\"traceEvents\":[\n")
	for _, r := range t.Ranks() {
		if err := cw.rank(r); err != nil {
			return nil, err
		}
	}
	cw.w.WriteString("\n]}\n")
	if err := cw.w.Flush(); err != nil {
		return nil, err
	}
	return &cw.s, nil
}

func metaJSON(m trace.Meta) []byte {
	b := []byte(`{"creator":`)
	b = schema.AppendString(b, m.Creator)
	b = append(b, `,"clock":`...)
	b = schema.AppendString(b, m.Clock)
	b = append(b, `,"ranks":`...)
	b = strconv.AppendInt(b, int64(m.Ranks), 10)
	b = append(b, `,"epoch_ns":`...)
	b = strconv.AppendInt(b, m.Epoch, 10)
	b = append(b, `,"command":[`...)
	for i, a := range m.Command {
		if i > 0 {
			b = append(b, ',')
		}
		b = schema.AppendString(b, a)
	}
	b = append(b, `],"hosts":[`...)
	for i, h := range m.Hosts {
		if i > 0 {
			b = append(b, ',')
		}
		b = schema.AppendString(b, h)
	}
	return append(b, "]}"...)
}

// sendTo and recvFrom name the peer of point-to-point calls.
func p2p(e *trace.Event) (send, recv bool) {
	switch e.Op {
	case trace.OpMPISend, trace.OpMPIIsend:
		return true, false
	case trace.OpMPIRecv, trace.OpMPIIrecv:
		return false, true
	case trace.OpMPISendrecv:
		return true, true
	}
	return false, false
}

// source returns the rank and tag a receiving call receives from: a
// sendrecv's recorded receive half (where a trace lacks it, its
// destination: a pairwise exchange), or a receive's peer. ok is false for
// a half that receives nothing (MPI_PROC_NULL).
func source(e *trace.Event) (src, tag int32, ok bool) {
	if s, t, known := e.RecvFrom(); known {
		return s, t, s != trace.ProcNull
	}
	return e.Peer, e.Tag, e.Peer != trace.ProcNull
}

// eachEvent reads every event of rank r.
func (cw *writer) eachEvent(r uint32, fn func(e *trace.Event) error) error {
	src, err := cw.t.Rank(r)
	if err != nil {
		return fmt.Errorf("rank %d: %w", r, err)
	}
	defer func() {
		if c, ok := src.(io.Closer); ok {
			c.Close()
		}
	}()
	buf := make([]trace.Event, trace.BatchSize)
	for {
		n, err := src.ReadEvents(buf)
		for i := range buf[:n] {
			if err := fn(&buf[i]); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("rank %d: %w", r, err)
		}
	}
}

func isCollective(e *trace.Event) bool {
	return e.Op.Class() == trace.ClassComm && e.Op.Collective()
}

// count is the first pass: messages per channel, members and calls per
// communicator; then every flow gets its id.
func (cw *writer) count() error {
	for _, r := range cw.t.Ranks() {
		seq := map[uint32]int{}
		err := cw.eachEvent(r, func(e *trace.Event) error {
			if send, recv := p2p(e); send || recv {
				if send && e.Peer >= 0 {
					cw.channel(chanKey{e.Comm, r, uint32(e.Peer), e.Tag}).sends++
				}
				if src, tag, ok := source(e); recv && ok && src >= 0 && tag >= 0 {
					cw.channel(chanKey{e.Comm, uint32(src), r, tag}).recvs++
				}
				return nil
			}
			if !isCollective(e) {
				return nil
			}
			ci := cw.comm(e.Comm)
			k := seq[e.Comm]
			seq[e.Comm]++
			if k == len(ci.calls) {
				ci.calls = append(ci.calls, collCall{op: e.Op, root: e.Peer, lastT: e.Start, last: r})
			}
			c := &ci.calls[k]
			if c.op != e.Op || (rooted(e.Op) != 0 && c.root != e.Peer) {
				c.mismatch = true
			}
			c.n++
			if e.Start > c.lastT || (e.Start == c.lastT && r > c.last) {
				c.lastT, c.last = e.Start, r
			}
			if _, ok := ci.index[r]; !ok {
				ci.index[r] = len(ci.members)
				ci.members = append(ci.members, r)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	// Flow ids: channels in a fixed order, then communicators.
	keys := make([]chanKey, 0, len(cw.chans))
	for k := range cw.chans {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b chanKey) int {
		switch {
		case a.comm != b.comm:
			return cmpU(a.comm, b.comm)
		case a.src != b.src:
			return cmpU(a.src, b.src)
		case a.dst != b.dst:
			return cmpU(a.dst, b.dst)
		}
		return int(a.tag) - int(b.tag)
	})
	id := int64(1)
	for _, k := range keys {
		c := cw.chans[k]
		c.base = id
		id += min(c.sends, c.recvs)
	}
	comms := make([]uint32, 0, len(cw.comms))
	for c := range cw.comms {
		comms = append(comms, c)
	}
	slices.Sort(comms)
	for _, c := range comms {
		ci := cw.comms[c]
		// Members in rank order, so ids do not depend on reading order.
		slices.Sort(ci.members)
		for i, m := range ci.members {
			ci.index[m] = i
		}
		ci.base = id
		id += int64(len(ci.calls)) * int64(len(ci.members))
		for _, call := range ci.calls {
			if !ci.drawn(call) && len(ci.members) > 1 {
				cw.s.Incomplete++
			}
		}
	}
	return nil
}

// drawn reports whether the arrows of call are drawn: every member made
// it, the same call with the same root, and a rooted call's root is a
// member.
func (ci *commInfo) drawn(c collCall) bool {
	if c.mismatch || int(c.n) != len(ci.members) || len(ci.members) < 2 {
		return false
	}
	if rooted(c.op) != 0 {
		if c.root < 0 {
			return false
		}
		if _, ok := ci.index[uint32(c.root)]; !ok {
			return false
		}
	}
	return true
}

func cmpU(a, b uint32) int {
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	return 0
}

func (cw *writer) channel(k chanKey) *chanInfo {
	c := cw.chans[k]
	if c == nil {
		c = &chanInfo{}
		cw.chans[k] = c
	}
	return c
}

func (cw *writer) comm(c uint32) *commInfo {
	ci := cw.comms[c]
	if ci == nil {
		ci = &commInfo{index: map[uint32]int{}}
		cw.comms[c] = ci
	}
	return ci
}

// rooted says how a collective's data moves: +1 from the root to every
// member, -1 from every member to the root, 0 among all.
func rooted(op trace.Op) int {
	switch op {
	case trace.OpMPIBcast, trace.OpMPIScatter, trace.OpMPIScatterv:
		return 1
	case trace.OpMPIReduce, trace.OpMPIGather, trace.OpMPIGatherv:
		return -1
	}
	return 0
}

// rankState is what the second pass follows in one rank.
type rankState struct {
	r       uint32
	f       *state.Follower[struct{}, struct{}]
	threads map[uint32]bool
	open    map[uint32][]int64 // per thread: starts of the open regions
	sent    map[chanKey]int64
	recvd   map[chanKey]int64
	seq     map[uint32]int
	last    int64
}

func (cw *writer) rank(r uint32) error {
	st := &rankState{r: r, f: state.New[struct{}, struct{}](nil), threads: map[uint32]bool{}, open: map[uint32][]int64{}, sent: map[chanKey]int64{}, recvd: map[chanKey]int64{}, seq: map[uint32]int{}}
	cw.meta(PID(r), 0, "process_name", fmt.Sprintf("rank %d", r))
	cw.metaSort(PID(r), 0, "process_sort_index", int64(r))
	err := cw.eachEvent(r, func(e *trace.Event) error {
		cw.event(st, e)
		return nil
	})
	if err != nil {
		return err
	}
	// Close the regions left open, at the rank's last time.
	ths := make([]uint32, 0, len(st.open))
	for th := range st.open {
		ths = append(ths, th)
	}
	slices.Sort(ths)
	for _, th := range ths {
		for range st.open[th] {
			cw.begin('E', PID(r), TID(r, th), st.last)
			cw.w.WriteString("}")
		}
	}
	return nil
}

func (cw *writer) thread(st *rankState, th uint32) {
	if st.threads[th] {
		return
	}
	st.threads[th] = true
	name := fmt.Sprintf("rank %d", st.r)
	if th != 0 {
		name = fmt.Sprintf("rank %d thread %d", st.r, th)
	}
	cw.meta(PID(st.r), TID(st.r, th), "thread_name", name)
	cw.metaSort(PID(st.r), TID(st.r, th), "thread_sort_index", int64(th))
}

func (cw *writer) event(st *rankState, e *trace.Event) {
	r := st.r
	cw.thread(st, e.Thread)
	pid, tid := PID(r), TID(r, e.Thread)
	st.last = max(st.last, e.End())
	switch e.Op {
	case trace.OpRegionBegin:
		cw.s.Regions++
		st.open[e.Thread] = append(st.open[e.Thread], e.Start)
		cw.begin('B', pid, tid, e.Start)
		cw.name(cw.t.Path(e.Path), "region")
		cw.args(e, 0)
		cw.w.WriteString("}")
		return
	case trace.OpRegionEnd:
		stack := st.open[e.Thread]
		if len(stack) == 0 {
			// An end without a begin: an instant, so nothing is unbalanced.
			cw.s.Marks++
			cw.begin('i', pid, tid, e.Start)
			cw.name("end of "+cw.t.Path(e.Path), "region")
			cw.w.WriteString(`,"s":"t"`)
			cw.args(e, 0)
			cw.w.WriteString("}")
			return
		}
		st.open[e.Thread] = stack[:len(stack)-1]
		cw.begin('E', pid, tid, max(e.Start, stack[len(stack)-1]))
		cw.w.WriteString("}")
		return
	case trace.OpMark:
		cw.s.Marks++
		cw.begin('i', pid, tid, e.Start)
		cw.name(cw.t.Path(e.Path), "mark")
		cw.w.WriteString(`,"s":"t"`)
		cw.args(e, 0)
		cw.w.WriteString("}")
		return
	}
	path := st.f.Apply(e).Path
	cw.s.Slices++
	cw.begin('X', pid, tid, e.Start)
	cw.w.WriteString(`,"dur":`)
	cw.w.Write(appendMicros(cw.buf[:0], max(e.Dur, 0)))
	cw.name(e.Op.Info().Name, e.Op.Class().String())
	cw.args(e, path)
	cw.w.WriteString("}")

	if send, recv := p2p(e); send || recv {
		cw.p2p(st, e, send, recv)
	} else if isCollective(e) {
		cw.collective(st, e)
	}
}

// p2p draws the arrows of a point-to-point call.
func (cw *writer) p2p(st *rankState, e *trace.Event, send, recv bool) {
	r := st.r
	pid, tid := PID(r), TID(r, e.Thread)
	if send && e.Peer >= 0 {
		k := chanKey{e.Comm, r, uint32(e.Peer), e.Tag}
		c := cw.chans[k]
		n := st.sent[k]
		st.sent[k]++
		if n < min(c.sends, c.recvs) {
			cw.flow('s', pid, tid, e.Start, c.base+n, e.Op.Info().Name)
			cw.s.Flows++
		} else {
			cw.s.Unmatched++
		}
	}
	src, tag, ok := source(e)
	if recv && ok {
		if src < 0 || tag < 0 {
			cw.s.Wildcards++
			return
		}
		k := chanKey{e.Comm, uint32(src), r, tag}
		c := cw.chans[k]
		n := st.recvd[k]
		st.recvd[k]++
		if n < min(c.sends, c.recvs) {
			cw.flow('f', pid, tid, flowEnd(e), c.base+n, e.Op.Info().Name)
		} else {
			cw.s.Unmatched++
		}
	}
}

// flowEnd is where a flow ends on the receiving slice: just before its
// end, so that the arrow shows when the data arrived and the point lies
// inside the slice.
func flowEnd(e *trace.Event) int64 {
	if e.Dur >= 2 {
		return e.End() - 1
	}
	return e.Start
}

// collective draws the arrows of this rank's part of a collective call.
func (cw *writer) collective(st *rankState, e *trace.Event) {
	r := st.r
	ci := cw.comms[e.Comm]
	k := st.seq[e.Comm]
	st.seq[e.Comm]++
	c := ci.calls[k]
	if !ci.drawn(c) {
		return
	}
	pid, tid := PID(r), TID(r, e.Thread)
	name := e.Op.Info().Name
	id := func(m uint32) int64 { return ci.base + int64(k)*int64(len(ci.members)) + int64(ci.index[m]) }
	var from uint32
	switch rooted(e.Op) {
	case 1, -1:
		from = uint32(c.root)
	default:
		from = c.last
	}
	fanIn := rooted(e.Op) == -1
	if r == from {
		for _, m := range ci.members {
			if m == r {
				continue
			}
			if fanIn {
				cw.flow('f', pid, tid, flowEnd(e), id(m), name)
			} else {
				cw.flow('s', pid, tid, e.Start, id(m), name)
				cw.s.Flows++
			}
		}
		return
	}
	if fanIn {
		cw.flow('s', pid, tid, e.Start, id(r), name)
		cw.s.Flows++
	} else {
		cw.flow('f', pid, tid, flowEnd(e), id(r), name)
	}
}

// begin starts an event object: {"ph":"X","pid":…,"tid":…,"ts":….
func (cw *writer) begin(ph byte, pid, tid int64, ts int64) {
	b := cw.buf[:0]
	if !cw.first {
		b = append(b, ",\n"...)
	}
	cw.first = false
	b = append(b, `{"ph":"`...)
	b = append(b, ph)
	b = append(b, `","pid":`...)
	b = strconv.AppendInt(b, pid, 10)
	b = append(b, `,"tid":`...)
	b = strconv.AppendInt(b, tid, 10)
	b = append(b, `,"ts":`...)
	b = appendMicros(b, ts)
	cw.buf = b
	cw.w.Write(b)
}

func (cw *writer) name(name, cat string) {
	b := append(cw.buf[:0], `,"name":`...)
	b = schema.AppendString(b, name)
	b = append(b, `,"cat":`...)
	b = schema.AppendString(b, cat)
	cw.buf = b
	cw.w.Write(b)
}

// args writes the event's JSON-lines fields, with path (if not 0) as its
// path.
func (cw *writer) args(e *trace.Event, path trace.PathID) {
	ev := *e
	if ev.Path == 0 {
		ev.Path = path
	}
	b := append(cw.buf[:0], `,"args":`...)
	b = schema.AppendEvent(b, &ev, cw.t.Path)
	cw.buf = b
	cw.w.Write(b)
}

func (cw *writer) flow(ph byte, pid, tid, ts, id int64, name string) {
	cw.begin(ph, pid, tid, ts)
	b := append(cw.buf[:0], `,"id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"cat":"comm","name":`...)
	b = schema.AppendString(b, name)
	if ph == 'f' {
		b = append(b, `,"bp":"e"`...)
	}
	b = append(b, '}')
	cw.buf = b
	cw.w.Write(b)
}

func (cw *writer) meta(pid, tid int64, kind, name string) {
	cw.begin('M', pid, tid, 0)
	b := append(cw.buf[:0], `,"name":"`...)
	b = append(b, kind...)
	b = append(b, `","args":{"name":`...)
	b = schema.AppendString(b, name)
	b = append(b, "}}"...)
	cw.buf = b
	cw.w.Write(b)
}

func (cw *writer) metaSort(pid, tid int64, kind string, v int64) {
	cw.begin('M', pid, tid, 0)
	b := append(cw.buf[:0], `,"name":"`...)
	b = append(b, kind...)
	b = append(b, `","args":{"sort_index":`...)
	b = strconv.AppendInt(b, v, 10)
	b = append(b, "}}"...)
	cw.buf = b
	cw.w.Write(b)
}

// appendMicros appends ns as microseconds with three decimals.
func appendMicros(b []byte, ns int64) []byte {
	if ns < 0 {
		b = append(b, '-')
		ns = -ns
	}
	b = strconv.AppendInt(b, ns/1000, 10)
	frac := ns % 1000
	if frac == 0 {
		return b
	}
	b = append(b, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
	return b
}
