package target

import (
	"errors"
	"fmt"
	"io"

	"github.com/iotrace/iotrace/trace"
)

// Merger reads the ranks of a trace together, in the order of their
// collective calls on communicators of every rank (MPI_COMM_WORLD and its
// duplicates), then of their start times.
type Merger struct {
	cur     []*cursor
	h       []int // heap of indexes into cur
	pending int   // the cursor whose events Next or Run returned last, -1: none
	// end: with one rank, the events Next or Run returned last are those
	// of the cursor's batch from i to end.
	end int
}

// cursor is one rank's stream as the merger reads it.
type cursor struct {
	src   trace.Source
	buf   []trace.Event
	i, n  int
	epoch int64           // collective calls on every rank's communicators before buf[i] (see pass)
	world map[uint32]bool // communicators duplicated from MPI_COMM_WORLD (or from such)
	done  bool
	err   error
}

// mergeEvents bounds the events the cursors of all ranks hold at once.
const mergeEvents = 1 << 16

func NewMerger(t trace.Trace, ranks []uint32) (*Merger, error) {
	m := &Merger{pending: -1}
	// At least a few events a rank: 100,000 ranks hold 4 each, not 64
	// (770 MB).
	batch := min(max(mergeEvents/max(len(ranks), 1), 4), trace.BatchSize)
	for _, r := range ranks {
		src, err := t.Rank(r)
		if err != nil {
			m.Close()
			return nil, fmt.Errorf("rank %d: %w", r, err)
		}
		c := &cursor{src: src, buf: make([]trace.Event, batch)}
		m.cur = append(m.cur, c)
		if c.fill(); c.err != nil {
			m.Close()
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
	if c.done && c.i >= c.n && c.src != nil {
		// The rank is read to its end: its source and batch go.
		if cl, ok := c.src.(io.Closer); ok {
			cl.Close()
		}
		c.src, c.buf = nil, nil
	}
}

func (m *Merger) less(a, b int) bool {
	x, y := m.cur[m.h[a]], m.cur[m.h[b]]
	if x.epoch != y.epoch {
		return x.epoch < y.epoch
	}
	if sx, sy := x.buf[x.i].Start, y.buf[y.i].Start; sx != sy {
		return sx < sy
	}
	return m.h[a] < m.h[b]
}

func (m *Merger) push(i int) {
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

func (m *Merger) down(j int) {
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

// Next returns the index (in the ranks given to NewMerger) and the event
// that come next, or a nil event at the end. The event stays valid until
// the next call.
func (m *Merger) Next() (int, *trace.Event, error) {
	if len(m.cur) == 1 {
		// One rank: its events in order, no heap.
		evs, err := m.lone(false)
		if len(evs) == 0 {
			return 0, nil, err
		}
		return 0, &evs[0], nil
	}
	if i := m.pending; i >= 0 {
		// Move past the event returned last.
		m.pending = -1
		c := m.cur[i]
		c.pass(&c.buf[c.i])
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

// Run is Next for a reader that takes events a run at a time: it
// returns the index of a rank and its events that come next, in order,
// or none at the end. With one rank a run is the rest of the batch the
// rank's source gave (a loop over a slice, instead of a call per event);
// with several, one event, in the order of Next. The events stay valid
// until the next call of Run or Next. Epoch holds for the run's first
// event: one rank's is of no use (it orders ranks).
func (m *Merger) Run() (int, []trace.Event, error) {
	if len(m.cur) == 1 {
		evs, err := m.lone(true)
		return 0, evs, err
	}
	i, e, err := m.Next()
	if e == nil {
		return i, nil, err
	}
	c := m.cur[i]
	return i, c.buf[c.i : c.i+1], nil
}

// lone moves the one rank's cursor past the events returned last and
// returns the next, the rest of its batch if all, else one; none at the
// end.
func (m *Merger) lone(all bool) ([]trace.Event, error) {
	c := m.cur[0]
	if m.pending >= 0 {
		for ; c.i < m.end; c.i++ {
			if e := &c.buf[c.i]; e.Op.Class() == trace.ClassComm { // (pass's first test, without a call per event)
				c.pass(e)
			}
		}
	}
	m.pending = 0
	if c.i >= c.n {
		if c.fill(); c.err != nil {
			m.pending = -1
			return nil, c.err
		}
		if c.i >= c.n {
			m.pending = -1
			return nil, nil
		}
	}
	m.end = c.i + 1
	if all {
		m.end = c.n
	}
	return c.buf[c.i:m.end], nil
}

// pass counts e, the event the cursor moves past, in its epoch: a
// collective call on a communicator of every rank. Such a communicator is
// MPI_COMM_WORLD or one duplicated from such (MPI_Comm_dup, as HDF5 and
// most libraries make for themselves): its id is the same on every rank
// (the recorders compute it alike), so every rank counts the same calls.
// A communicator made by a split may hold every rank too, but nothing in
// one rank's stream says so: its calls do not count.
func (c *cursor) pass(e *trace.Event) {
	if e.Op.Class() != trace.ClassComm || !e.Op.Collective() || !c.everyRank(e.Comm) {
		return
	}
	c.epoch++
	if e.Op == trace.OpMPICommDup && e.Ret >= 0 && uint32(e.Ret) > trace.CommSelf {
		if c.world == nil {
			c.world = map[uint32]bool{}
		}
		c.world[uint32(e.Ret)] = true
	}
}

// everyRank says whether the communicator holds every rank: MPI_COMM_WORLD
// or a duplicate of it.
func (c *cursor) everyRank(comm uint32) bool {
	return comm == trace.CommWorld || c.world[comm]
}

// Epoch returns the collective calls on a communicator of every rank
// (MPI_COMM_WORLD or a duplicate of it) rank index i made before its
// current event.
func (m *Merger) Epoch(i int) int64 { return m.cur[i].epoch }

func (m *Merger) Close() {
	for _, c := range m.cur {
		if cl, ok := c.src.(io.Closer); ok {
			cl.Close()
		}
	}
}
