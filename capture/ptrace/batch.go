//go:build linux && (amd64 || arm64)

package ptrace

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/iotrace/iotrace/trace"
)

// batchSize events make a batch the writer takes at once.
const batchSize = trace.BatchSize

// batcher moves events from the tracer to the sink on a goroutine of its
// own, so that encoding and compressing them does not hold up the tracee.
// It writes a batch when one is full and every flush interval, then calls
// flush, so that a trace survives the tracer being killed up to its last
// flush.
type batcher struct {
	mu    sync.Mutex
	cur   []trace.Event
	kick  chan struct{}
	stop  chan struct{}
	done  chan struct{}
	sink  trace.Sink
	flush func() error
	err   error // first error; read after done
}

func newBatcher(sink trace.Sink, flush func() error, every time.Duration) *batcher {
	b := &batcher{
		cur:   make([]trace.Event, 0, 2*batchSize),
		kick:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
		sink:  sink,
		flush: flush,
	}
	go b.run(every)
	return b
}

// add queues a copy of ev.
func (b *batcher) add(ev *trace.Event) {
	b.mu.Lock()
	b.cur = append(b.cur, *ev)
	n := len(b.cur)
	b.mu.Unlock()
	if n == batchSize {
		select {
		case b.kick <- struct{}{}:
		default:
		}
	}
}

func (b *batcher) run(every time.Duration) {
	defer close(b.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	spare := make([]trace.Event, 0, 2*batchSize)
	write := func(flush bool) {
		b.mu.Lock()
		spare, b.cur = b.cur, spare[:0]
		b.mu.Unlock()
		if len(spare) > 0 && b.err == nil {
			// Events arrive as calls end; a rank's stream is in call
			// (start) order.
			byStart := func(x, y trace.Event) int { return cmp.Compare(x.Start, y.Start) }
			if !slices.IsSortedFunc(spare, byStart) {
				slices.SortStableFunc(spare, byStart)
			}
			b.err = b.sink.WriteEvents(spare)
		}
		if flush && b.flush != nil && b.err == nil {
			b.err = b.flush()
		}
	}
	for {
		select {
		case <-b.kick:
			write(false)
		case <-tick.C:
			write(true)
		case <-b.stop:
			write(true)
			return
		}
	}
}

// close writes what is left, flushes, and returns the first error.
func (b *batcher) close() error {
	close(b.stop)
	<-b.done
	return b.err
}
