package comm

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func ranks(n int) []uint32 {
	rs := make([]uint32, n)
	for i := range rs {
		rs[i] = uint32(i)
	}
	return rs
}

// TestBarrierNobodyLeavesEarly checks that no rank leaves a barrier before
// the last one has entered it, over many rounds.
func TestBarrierNobodyLeavesEarly(t *testing.T) {
	const n, rounds = 16, 50
	l := NewLocal(ranks(n), nil)
	var entered [rounds]atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func(ep Comm) {
			defer wg.Done()
			defer ep.Done()
			for k := 0; k < rounds; k++ {
				if r%3 == 0 {
					time.Sleep(time.Duration(r%5) * 50 * time.Microsecond)
				}
				entered[k].Add(1)
				if err := ep.Collective(context.Background(), KindBarrier, DomainComm, 0, -1, 0); err != nil {
					errs <- err
					return
				}
				if got := entered[k].Load(); got != n {
					errs <- errors.New("left a barrier before every rank entered it")
					return
				}
			}
		}(l.Endpoint(uint32(r)))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestRecvWaitsForSend checks that a receive returns only after the
// matching send was posted.
func TestRecvWaitsForSend(t *testing.T) {
	l := NewLocal(ranks(2), nil)
	var sent atomic.Bool
	done := make(chan error)
	go func() {
		ep := l.Endpoint(1)
		defer ep.Done()
		err := ep.Recv(context.Background(), 0, 0, 7, 100)
		if err == nil && !sent.Load() {
			err = errors.New("receive returned before the send")
		}
		done <- err
	}()
	ep := l.Endpoint(0)
	time.Sleep(20 * time.Millisecond)
	sent.Store(true)
	if err := ep.Send(context.Background(), 0, 1, 7, 100); err != nil {
		t.Fatal(err)
	}
	ep.Done()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestMatchingOrderAndWildcards checks tag matching, ANY_SOURCE and that
// messages of one sender match in sending order.
func TestMatchingOrderAndWildcards(t *testing.T) {
	l := NewLocal(ranks(3), nil)
	ctx := context.Background()
	a, b, c := l.Endpoint(0), l.Endpoint(1), l.Endpoint(2)
	// Receives posted before the sends match in posting order.
	r1, _ := c.Irecv(ctx, 0, AnySource, 5, 0)
	r2, _ := c.Irecv(ctx, 0, 1, AnyTag, 0)
	if err := a.Send(ctx, 0, 2, 9, 0); err != nil { // matches neither
		t.Fatal(err)
	}
	if err := b.Send(ctx, 0, 2, 5, 0); err != nil { // matches r1 (posted first)
		t.Fatal(err)
	}
	if err := b.Send(ctx, 0, 2, 6, 0); err != nil { // matches r2
		t.Fatal(err)
	}
	for _, r := range []Request{r1, r2} {
		if err := r.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The tag-9 message waits in the mailbox for a receive that wants it.
	if err := c.Recv(ctx, 0, 0, 9, 0); err != nil {
		t.Fatal(err)
	}
	// Another communicator does not see messages of communicator 0.
	if err := a.Send(ctx, 0, 2, 1, 0); err != nil {
		t.Fatal(err)
	}
	a.Done()
	b.Done()
	err := c.Recv(ctx, 4, 0, 1, 0)
	if !errors.Is(err, ErrUnmatched) {
		t.Fatalf("receive on another communicator: got %v, want ErrUnmatched", err)
	}
}

// TestDeadlockIsResolved checks that a barrier a finished rank never
// enters fails with ErrUnmatched instead of hanging, and that the ranks
// go on.
func TestDeadlockIsResolved(t *testing.T) {
	l := NewLocal(ranks(3), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l.Endpoint(2).Done()
	errs := make(chan error, 2)
	for r := 0; r < 2; r++ {
		go func(ep Comm) {
			errs <- ep.Collective(ctx, KindBarrier, DomainComm, 0, -1, 0)
			// After the deadlock, a barrier of the two running ranks on
			// their own communicator still works.
			errs <- ep.Collective(ctx, KindBarrier, DomainComm, 9, -1, 0)
			ep.Done()
		}(l.Endpoint(uint32(r)))
	}
	var unmatched, ok int
	for i := 0; i < 4; i++ {
		err := <-errs
		switch {
		case errors.Is(err, ErrUnmatched):
			unmatched++
		case err == nil:
			ok++
		default:
			t.Fatal(err)
		}
	}
	// Communicator 9 is unknown, so every rank is a member: rank 2 is done,
	// so it deadlocks too.
	if unmatched != 4 {
		t.Fatalf("unmatched %d ok %d, want 4 unmatched", unmatched, ok)
	}
}

// TestGroupsAndSelf checks that a communicator's members are the ranks
// given for it, and that CommSelf never waits.
func TestGroupsAndSelf(t *testing.T) {
	l := NewLocal(ranks(4), map[uint32][]uint32{5: {1, 3}})
	ctx := context.Background()
	if err := l.Endpoint(0).Collective(ctx, KindBarrier, DomainComm, 1, -1, 0); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	for _, r := range []uint32{1, 3} {
		go func(ep Comm) { errs <- ep.Collective(ctx, KindBcast, DomainComm, 5, 1, 8) }(l.Endpoint(r))
	}
	for i := 0; i < 2; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestDecideBcast checks that every member gets the root's value.
func TestDecideBcast(t *testing.T) {
	const n = 8
	l := NewLocal(ranks(n), nil)
	got := make(chan int64, n)
	for r := 0; r < n; r++ {
		go func(ep Comm, r int) {
			v, err := ep.DecideBcast(context.Background(), 0, 3, int64(100+r))
			if err != nil {
				t.Error(err)
			}
			got <- v
		}(l.Endpoint(uint32(r)), r)
	}
	for i := 0; i < n; i++ {
		if v := <-got; v != 103 {
			t.Fatalf("got %d, want the root's 103", v)
		}
	}
}

// TestCancelWakesWaiters checks that a cancelled context ends a wait.
func TestCancelWakesWaiters(t *testing.T) {
	l := NewLocal(ranks(2), nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() { errc <- l.Endpoint(0).Recv(ctx, 0, 1, 0, 0) }()
	time.Sleep(10 * time.Millisecond)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func BenchmarkBarrier1024(b *testing.B) {
	const n = 1024
	for b.Loop() {
		l := NewLocal(ranks(n), nil)
		var wg sync.WaitGroup
		for r := 0; r < n; r++ {
			wg.Add(1)
			go func(ep Comm) {
				defer wg.Done()
				for k := 0; k < 10; k++ {
					ep.Collective(context.Background(), KindBarrier, DomainComm, 0, -1, 0)
				}
				ep.Done()
			}(l.Endpoint(uint32(r)))
		}
		wg.Wait()
	}
}
