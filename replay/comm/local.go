package comm

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// Local is the communication layer of ranks that are goroutines of one
// process. Collectives complete when every member has entered them;
// sends are eager (buffered without limit), receives wait for a matching
// send.
//
// Local detects deadlock: when every rank that has not finished waits in
// a call that no running rank can complete, it fails those calls with
// ErrUnmatched (naming what each waited for), and the ranks go on.
type Local struct {
	mu      sync.Mutex
	index   map[uint32]int // trace rank → index
	ranks   []uint32
	groups  map[uint32][]int // communicator → member indexes (sorted)
	colls   map[collKey]*coll
	posted  map[mailKey][]*pending // receives posted and not yet matched, in posting order
	mail    map[mailKey][]message  // messages sent and not yet received, in sending order
	running int                    // ranks neither blocked nor done
	blocked map[int]*blocker       // index → what it waits in
	done    []bool
	// stopping: a rank's wait ended with its context (the replay is
	// stopping): the ranks still waiting will see the context too, so a
	// wait no running rank completes is no deadlock.
	stopping bool
}

type collKey struct {
	d    Domain
	comm uint32
}

type mailKey struct {
	comm uint32
	dst  int
}

// coll is the state of one communicator's collectives: the instance being
// filled.
type coll struct {
	members []int
	cur     *instance
}

// instance is one collective call of a communicator, matched across its
// members.
type instance struct {
	kind    Kind
	arrived int
	in      []bool // by position in members
	ch      chan struct{}
	err     error
	value   int64
	waiters []int
}

type message struct {
	src   int
	tag   int32
	bytes int64
}

type pending struct {
	rank    int // receiver index
	src     int // -1 any
	tag     int32
	matched bool
	err     error
	ch      chan struct{} // made when the receiver blocks on it
}

// blocker describes a blocked rank and how to release it.
type blocker struct {
	what    string
	release func(err error)
}

// NewLocal returns the layer of ranks (trace rank numbers). groups gives
// the members of communicators other than CommWorld (0) and CommSelf (1);
// a communicator it does not name has every rank as a member.
func NewLocal(ranks []uint32, groups map[uint32][]uint32) *Local {
	l := &Local{
		index:   make(map[uint32]int, len(ranks)),
		ranks:   slices.Clone(ranks),
		groups:  map[uint32][]int{},
		colls:   map[collKey]*coll{},
		posted:  map[mailKey][]*pending{},
		mail:    map[mailKey][]message{},
		running: len(ranks),
		blocked: map[int]*blocker{},
		done:    make([]bool, len(ranks)),
	}
	for i, r := range ranks {
		l.index[r] = i
	}
	for c, rs := range groups {
		var idx []int
		for _, r := range rs {
			if i, ok := l.index[r]; ok {
				idx = append(idx, i)
			}
		}
		slices.Sort(idx)
		l.groups[c] = slices.Compact(idx)
	}
	return l
}

// Endpoint returns rank's Comm. It panics if rank was not given to
// NewLocal (a programming error).
func (l *Local) Endpoint(rank uint32) Comm {
	i, ok := l.index[rank]
	if !ok {
		panic(fmt.Sprintf("comm: rank %d is not part of the replay", rank))
	}
	return &localEP{l: l, me: i}
}

// Has reports whether rank takes part.
func (l *Local) Has(rank uint32) bool { _, ok := l.index[rank]; return ok }

func (l *Local) members(comm uint32) []int {
	if m, ok := l.groups[comm]; ok {
		return m
	}
	all := make([]int, len(l.ranks))
	for i := range all {
		all[i] = i
	}
	l.groups[comm] = all
	return all
}

// block records that rank i waits and resolves a deadlock if no rank can
// run any more. Called with l.mu held.
func (l *Local) block(i int, b *blocker) {
	l.blocked[i] = b
	l.running--
	l.checkDeadlock()
}

// wake records that a blocked rank may run again. Called with l.mu held.
func (l *Local) wake(i int) {
	if _, ok := l.blocked[i]; ok {
		delete(l.blocked, i)
		l.running++
	}
}

func (l *Local) checkDeadlock() {
	if l.stopping || l.running > 0 || len(l.blocked) == 0 {
		return
	}
	idx := make([]int, 0, len(l.blocked))
	for i := range l.blocked {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	for _, i := range idx {
		b, ok := l.blocked[i]
		if !ok { // released together with an earlier one
			continue
		}
		err := fmt.Errorf("%w: rank %d waits in %s, which no running rank will complete", ErrUnmatched, l.ranks[i], b.what)
		b.release(err)
	}
}

func (l *Local) rankName(i int) string {
	if i < 0 {
		return "any rank"
	}
	return fmt.Sprintf("rank %d", l.ranks[i])
}

// wait blocks rank i on ch until it is closed or ctx ends. A rank whose
// context ends runs again: it is no longer blocked, and the layer stops
// looking for deadlocks (every rank of a stopping replay leaves its wait
// so, and each would otherwise find the others blocked: with 100,000
// ranks in a barrier, a Ctrl-C took tens of seconds under the layer's
// lock).
func (l *Local) wait(ctx context.Context, i int, ch chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	l.stopping = true
	l.wake(i)
	l.mu.Unlock()
	return ctx.Err()
}

type localEP struct {
	l  *Local
	me int
}

func (e *localEP) Collective(ctx context.Context, kind Kind, d Domain, comm uint32, root int32, bytes int64) error {
	_, err := e.collective(ctx, kind, d, comm, root, 0)
	return err
}

func (e *localEP) DecideBcast(ctx context.Context, comm uint32, root int32, v int64) (int64, error) {
	return e.collective(ctx, KindDecide, DomainComm, comm, root, v)
}

func (e *localEP) collective(ctx context.Context, kind Kind, d Domain, comm uint32, root int32, v int64) (int64, error) {
	if comm == 1 { // CommSelf
		return v, nil
	}
	if err := ctx.Err(); err != nil {
		// The replay stops: no rank waits for this one.
		return v, err
	}
	l := e.l
	l.mu.Lock()
	key := collKey{d, comm}
	c := l.colls[key]
	if c == nil {
		c = &coll{members: l.members(comm)}
		l.colls[key] = c
	}
	pos, member := slices.BinarySearch(c.members, e.me)
	if !member || len(c.members) <= 1 {
		l.mu.Unlock()
		return v, nil
	}
	if c.cur == nil {
		c.cur = &instance{kind: kind, ch: make(chan struct{}), in: make([]bool, len(c.members))}
	}
	inst := c.cur
	if inst.in[pos] {
		// This rank already waits in this instance: cannot happen with one
		// goroutine per rank.
		l.mu.Unlock()
		return v, fmt.Errorf("comm: rank %d entered a collective twice", l.ranks[e.me])
	}
	inst.in[pos] = true
	inst.arrived++
	rootIdx, ok := l.index[uint32(root)]
	if root < 0 || !ok {
		rootIdx = c.members[0]
	}
	if rootIdx == e.me {
		inst.value = v
	}
	if inst.arrived == len(c.members) {
		c.cur = nil
		for _, w := range inst.waiters {
			l.wake(w)
		}
		close(inst.ch)
		val := inst.value
		l.mu.Unlock()
		return val, nil
	}
	inst.waiters = append(inst.waiters, e.me)
	l.block(e.me, &blocker{
		what: fmt.Sprintf("%s on communicator %d (%d of %d members arrived)", kind, comm, inst.arrived, len(c.members)),
		release: func(err error) {
			// Deadlock: fail every waiter of this instance and start a new one.
			if c.cur == inst {
				c.cur = nil
			}
			if inst.err == nil {
				inst.err = err
				for _, w := range inst.waiters {
					l.wake(w)
				}
				close(inst.ch)
			}
		},
	})
	l.mu.Unlock()
	if err := l.wait(ctx, e.me, inst.ch); err != nil {
		return v, err
	}
	if inst.err != nil {
		return v, inst.err
	}
	return inst.value, nil
}

func (e *localEP) peer(peer int32) (int, bool) {
	if peer < 0 {
		return -1, true
	}
	i, ok := e.l.index[uint32(peer)]
	return i, ok
}

func (e *localEP) Send(ctx context.Context, comm uint32, peer, tag int32, bytes int64) error {
	_, err := e.Isend(ctx, comm, peer, tag, bytes)
	return err
}

func (e *localEP) Isend(ctx context.Context, comm uint32, peer, tag int32, bytes int64) (Request, error) {
	dst, ok := e.peer(peer)
	if !ok || dst < 0 {
		return nil, fmt.Errorf("comm: send to rank %d, which is not part of the replay", peer)
	}
	l := e.l
	l.mu.Lock()
	defer l.mu.Unlock()
	key := mailKey{comm, dst}
	for i, p := range l.posted[key] {
		if (p.src < 0 || p.src == e.me) && (p.tag == AnyTag || p.tag == tag) {
			l.posted[key] = slices.Delete(l.posted[key], i, i+1)
			p.matched = true
			if p.ch != nil {
				l.wake(p.rank)
				close(p.ch)
			}
			return done{}, nil
		}
	}
	l.mail[key] = append(l.mail[key], message{src: e.me, tag: tag, bytes: bytes})
	return done{}, nil
}

func (e *localEP) Recv(ctx context.Context, comm uint32, peer, tag int32, bytes int64) error {
	r, err := e.Irecv(ctx, comm, peer, tag, bytes)
	if err != nil {
		return err
	}
	return r.Wait(ctx)
}

func (e *localEP) Irecv(ctx context.Context, comm uint32, peer, tag int32, bytes int64) (Request, error) {
	src, ok := e.peer(peer)
	if !ok {
		return nil, fmt.Errorf("comm: receive from rank %d, which is not part of the replay", peer)
	}
	l := e.l
	l.mu.Lock()
	defer l.mu.Unlock()
	key := mailKey{comm, e.me}
	p := &pending{rank: e.me, src: src, tag: tag}
	for i, m := range l.mail[key] {
		if (src < 0 || m.src == src) && (tag == AnyTag || m.tag == tag) {
			l.mail[key] = slices.Delete(l.mail[key], i, i+1)
			p.matched = true
			return &recvReq{ep: e, p: p, comm: comm}, nil
		}
	}
	l.posted[key] = append(l.posted[key], p)
	return &recvReq{ep: e, p: p, comm: comm}, nil
}

func (e *localEP) Done() {
	l := e.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done[e.me] {
		l.done[e.me] = true
		l.running--
		l.checkDeadlock()
	}
}

// done is a request that has completed.
type done struct{}

func (done) Wait(context.Context) error { return nil }

type recvReq struct {
	ep   *localEP
	p    *pending
	comm uint32
}

func (r *recvReq) Wait(ctx context.Context) error {
	l := r.ep.l
	p := r.p
	l.mu.Lock()
	if p.matched || p.err != nil {
		l.mu.Unlock()
		return p.err
	}
	p.ch = make(chan struct{})
	key := mailKey{r.comm, p.rank}
	l.block(p.rank, &blocker{
		what: fmt.Sprintf("a receive from %s (tag %d) on communicator %d", l.rankName(p.src), p.tag, r.comm),
		release: func(err error) {
			if p.matched || p.err != nil {
				return
			}
			p.err = err
			if i := slices.Index(l.posted[key], p); i >= 0 {
				l.posted[key] = slices.Delete(l.posted[key], i, i+1)
			}
			l.wake(p.rank)
			close(p.ch)
		},
	})
	ch := p.ch
	l.mu.Unlock()
	if err := l.wait(ctx, p.rank, ch); err != nil {
		return err
	}
	return p.err
}
