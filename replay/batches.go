package replay

import (
	"fmt"
	"unsafe"

	"github.com/iotrace/iotrace/internal/memlimit"
	"github.com/iotrace/iotrace/trace"
)

// A rank's events travel in batches that go round: the rank's source
// fills one (in a reader goroutine ahead of the runner, or in the runner
// itself), the runner replays it in place, turning it into the events of
// the replay's own trace, and the recorder's writer goroutine encodes it
// and gives it back. So a replay allocates a few batches per rank once,
// and neither decoding the input nor encoding the replay's trace happens
// between two calls of a rank when there are processors to spare.

// recordBudget bounds the bytes of event batches all ranks together hold:
// the batches waiting for a slow writer, or read ahead.
const recordBudget = 64 << 20

const eventBytes = int(unsafe.Sizeof(trace.Event{}))

// batchPool recycles one rank's batches. get is called from one
// goroutine (the reader, or the runner), put from any.
type batchPool struct {
	size int // events per batch
	max  int // batches at most
	made int
	free chan []trace.Event
}

func newBatchPool(size, ranks int) *batchPool {
	n := max(recordBudget/(eventBytes*size*max(ranks, 1)), 6)
	return &batchPool{size: size, max: n, free: make(chan []trace.Event, n)}
}

// get returns an empty batch of p.size events, waiting for one to come
// back once p.max are in use. It returns nil if quit closes first.
func (p *batchPool) get(quit <-chan struct{}) []trace.Event {
	select {
	case b := <-p.free:
		return b
	default:
	}
	if p.made < p.max {
		p.made++
		return make([]trace.Event, p.size)
	}
	select {
	case b := <-p.free:
		return b
	case <-quit:
		return nil
	}
}

// put gives back a batch; it never blocks.
func (p *batchPool) put(b []trace.Event) {
	select {
	case p.free <- b[:p.size]:
	default: // not one of ours
	}
}

// filled is a batch as the reader hands it to the runner.
type filled struct {
	evs []trace.Event
	err error
}

// reader reads a rank's source ahead of its runner, into batches of the
// pool, keeping at most two ready.
type reader struct {
	ready chan filled
	quit  chan struct{}
	done  chan struct{}
}

// firstFill is how many events the reader's first batch holds: the rank
// waits for it before its first call, so it is small, and the batches
// after it double up to the pool's size.
const firstFill = 256

func startReader(src trace.Source, pool *batchPool) *reader {
	rd := &reader{ready: make(chan filled, 2), quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(rd.done)
		want := firstFill
		for {
			b := pool.get(rd.quit)
			if b == nil {
				return
			}
			// Fill the batch across the source's blocks (ReadEvents stops
			// at the end of one).
			want = min(want, len(b))
			var n int
			var err error
			for n < want && err == nil {
				var k int
				k, err = readSafe(src, b[n:want])
				n += k
				if k == 0 {
					break // a source that has nothing now: hand over what is read
				}
			}
			want *= 2
			select {
			case rd.ready <- filled{b[:n], err}:
			case <-rd.quit:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return rd
}

// readSafe is src.ReadEvents with a panic of the source turned into an
// error.
func readSafe(src trace.Source, b []trace.Event) (n int, err error) {
	defer func() {
		if r := recover(); r != nil {
			n, err = 0, fmt.Errorf("internal error reading the trace: %v (please report it with the command line)", r)
		}
	}()
	return src.ReadEvents(b)
}

// stop ends the reader and waits for it: the source is then free to
// close.
func (rd *reader) stop() {
	close(rd.quit)
	<-rd.done
}

// recorder hands a rank's replayed batches to a goroutine that writes
// them to the rank's sink and gives them back to the pool, or passes them
// on to the replay's observer, which gives them back once it has seen
// them.
type recorder struct {
	sink  trace.Sink
	rank  uint32
	obs   *observer
	pool  *batchPool
	queue chan []trace.Event
	done  chan struct{}
	err   error
	// hold is how many events the recorder holds back until the ranks
	// end (Output.Hold), held them; 0: none (any more).
	hold int
	held []trace.Event
}

// HoldBytes bounds the replayed events a replay holds back from its
// sinks and its observer until its ranks end (Output.Hold), in all ranks
// together: 512 MiB, 8 M events; a replay with more writes the rest as it
// goes.
const HoldBytes = 512 << 20

// HoldEvents is HoldBytes in events.
const HoldEvents = HoldBytes / eventBytes

// HoldLimit is how many events a replay holds back in all: HoldEvents,
// or under a memory limit a quarter of it, whichever is less.
func HoldLimit() int {
	if b, _ := memlimit.Bound(); b > 0 {
		return int(min(int64(HoldEvents), b/4/int64(eventBytes)))
	}
	return HoldEvents
}

// inlineRecordRanks is the number of ranks from which each rank writes
// its batches itself, between its calls, instead of in a goroutine of
// its own: a goroutine's stack is 8 KiB at least (800 MB for 100,000
// ranks), and so many ranks share the processors anyway.
const inlineRecordRanks = 4096

// newRecorder starts the recorder of a rank; quit closes when the replay
// is stopped (what it holds is written then: a rank that never returns
// from a call does not keep it).
func newRecorder(sink trace.Sink, rank uint32, pool *batchPool, obs *observer, inline bool, hold int, quit <-chan struct{}) *recorder {
	rc := &recorder{sink: sink, rank: rank, obs: obs, pool: pool, hold: hold}
	if hold > 0 {
		rc.held = make([]trace.Event, 0, hold)
	}
	if inline {
		return rc
	}
	rc.queue, rc.done = make(chan []trace.Event, pool.max+1), make(chan struct{})
	go rc.write(quit)
	return rc
}

func (rc *recorder) write(quit <-chan struct{}) {
	defer close(rc.done)
	for {
		select {
		case b, ok := <-rc.queue:
			if !ok {
				return
			}
			rc.handle(b)
		case <-quit:
			rc.release()
			quit = nil
		}
	}
}

// handle writes b to the sink, and passes it on to the observer or gives
// it back to the pool.
func (rc *recorder) handle(b []trace.Event) {
	if rc.hold > 0 {
		if len(rc.held)+len(b) <= rc.hold {
			rc.held = append(rc.held, b...)
			rc.pool.put(b)
			return
		}
		rc.release() // over the budget: what is held goes now, the rest as it comes
	}
	if rc.err == nil && len(b) > 0 {
		rc.err = writeSafe(rc.sink, b)
		if rc.err == nil && rc.obs != nil {
			rc.obs.queue <- observed{rc.rank, b, rc.pool}
			return
		}
	}
	rc.pool.put(b)
}

// release writes what the recorder holds, in batches of the pool's size,
// and passes them on to the observer; it holds nothing after.
func (rc *recorder) release() {
	held := rc.held
	rc.hold, rc.held = 0, nil
	for len(held) > 0 && rc.err == nil {
		n := min(len(held), rc.pool.size)
		b := held[:n:n]
		held = held[n:]
		rc.err = writeSafe(rc.sink, b)
		if rc.err == nil && rc.obs != nil {
			rc.obs.queue <- observed{rc.rank, b, nil}
		}
	}
}

// observer shows the ranks' recorded batches to Output.Observe, from one
// goroutine (the ranks' recorders only queue them: a lock they shared
// would keep a thousand ranks waiting for each other), and gives them back
// to their pools.
type observer struct {
	observe func(rank uint32, evs []trace.Event)
	queue   chan observed
	done    chan struct{}
	err     error
}

type observed struct {
	rank uint32
	evs  []trace.Event
	pool *batchPool // nil: a batch of held events, not the pool's
}

// newObserver starts the observer of ranks whose pools hold batches
// batches in all: its queue holds them all, so that queueing never
// blocks.
func newObserver(observe func(rank uint32, evs []trace.Event), batches int) *observer {
	o := &observer{observe: observe, queue: make(chan observed, batches), done: make(chan struct{})}
	go func() {
		defer close(o.done)
		for b := range o.queue {
			if o.err == nil {
				o.err = observeSafe(o.observe, b.rank, b.evs)
			}
			if b.pool != nil {
				b.pool.put(b.evs)
			}
		}
	}()
	return o
}

// close waits for the observer to see what is queued (every recorder is
// closed) and returns the first panic of observe, as an error.
func (o *observer) close() error {
	close(o.queue)
	<-o.done
	return o.err
}

// observeSafe is observe(rank, b) with a panic turned into an error.
func observeSafe(observe func(uint32, []trace.Event), rank uint32, b []trace.Event) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error computing the report: %v (please report it with the command line)", r)
		}
	}()
	observe(rank, b)
	return nil
}

// put queues a replayed batch; it never blocks (the queue holds every
// batch of the pool).
func (rc *recorder) put(b []trace.Event) {
	if rc.queue == nil {
		rc.handle(b)
		return
	}
	rc.queue <- b
}

// close writes what is queued and what it holds, and returns the first
// error of the sink.
func (rc *recorder) close() error {
	if rc.queue != nil {
		close(rc.queue)
		<-rc.done
	}
	rc.release()
	return rc.err
}

// writeSafe is sink.WriteEvents with a panic of the sink turned into an
// error.
func writeSafe(sink trace.Sink, b []trace.Event) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %v (please report it with the command line)", r)
		}
	}()
	return sink.WriteEvents(b)
}
