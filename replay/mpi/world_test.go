//go:build mpi

package mpi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/replay/comm"
)

func TestMain(m *testing.M) {
	if err := Init(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	Finalize()
	os.Exit(code)
}

// runWorld runs fn for every trace rank 0…n−1 of a world spread over the
// processes of the job, and fails t on every process if fn failed on any.
func runWorld(t *testing.T, n int, groups map[uint32][]uint32, exact bool, fn func(ctx context.Context, ep comm.Comm, rank uint32, start time.Time) error) WorldStats {
	t.Helper()
	p := &replay.Plan{Groups: groups}
	for r := 0; r < n; r++ {
		p.Ranks = append(p.Ranks, uint32(r))
	}
	proc, err := Connect()
	if err != nil {
		t.Fatal(err)
	}
	j, err := NewJob(proc, p, JobOptions{})
	if err := proc.Agree(err); err != nil {
		t.Fatal(err)
	}
	for _, ci := range j.comms {
		ci.exact = exact
	}
	w := NewWorld(j, WorldOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	j.Barrier()
	start := time.Now()
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for _, r := range j.Own() {
		wg.Add(1)
		go func(r uint32) {
			defer wg.Done()
			ep := w.Endpoint(r)
			defer ep.Done()
			if err := fn(ctx, ep, r, start); err != nil {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("rank %d: %w", r, err)
				}
				mu.Unlock()
			}
		}(r)
	}
	wg.Wait()
	st, werr := w.Wait()
	if first == nil {
		first = werr
	}
	if err := j.Agree(first); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestWorldBarrier checks that no rank leaves a barrier before the last
// one, on any process, has entered it.
func TestWorldBarrier(t *testing.T) {
	const n = 10
	for round := 0; round < 3; round++ {
		runWorld(t, n, nil, false, func(ctx context.Context, ep comm.Comm, r uint32, start time.Time) error {
			time.Sleep(time.Duration((int(r)+round)%4) * 20 * time.Millisecond)
			if err := ep.Collective(ctx, comm.KindBarrier, comm.DomainComm, 0, -1, 0); err != nil {
				return err
			}
			if el := time.Since(start); el < 55*time.Millisecond {
				return fmt.Errorf("left the barrier after %v, before the last rank entered it (60 ms)", el)
			}
			return nil
		})
	}
}

// TestWorldMessages sends messages around a ring, with tags out of order,
// wildcards and non-blocking calls, and checks that receives wait for
// their sends.
func TestWorldMessages(t *testing.T) {
	const n = 10
	st := runWorld(t, n, nil, false, func(ctx context.Context, ep comm.Comm, r uint32, start time.Time) error {
		next, prev := int32((r+1)%n), int32((r+n-1)%n)
		if r == 0 {
			time.Sleep(50 * time.Millisecond)
		}
		// A receive posted before anything is sent.
		req, err := ep.Irecv(ctx, 0, prev, 5, 1000)
		if err != nil {
			return err
		}
		if r != 0 {
			if err := ep.Recv(ctx, 0, prev, 6, 2000); err != nil {
				return err
			}
			if el := time.Since(start); el < 45*time.Millisecond {
				return fmt.Errorf("received after %v, before rank 0 sent (50 ms)", el)
			}
		}
		if err := ep.Send(ctx, 0, next, 5, 1000); err != nil {
			return err
		}
		if err := ep.Send(ctx, 0, next, 6, 2000); err != nil {
			return err
		}
		if r == 0 {
			if err := ep.Recv(ctx, 0, prev, 6, 2000); err != nil {
				return err
			}
		}
		if err := req.Wait(ctx); err != nil {
			return err
		}
		// Everybody sends to rank 0, which takes them from any rank.
		if r != 0 {
			return ep.Send(ctx, 0, 0, 7, 1<<20)
		}
		for i := 1; i < n; i++ {
			if err := ep.Recv(ctx, 0, comm.AnySource, comm.AnyTag, 1<<20); err != nil {
				return err
			}
		}
		return nil
	})
	if st.Unreceived != 0 {
		t.Errorf("%d messages unreceived", st.Unreceived)
	}
}

// TestWorldCollectives runs every collective on the world and on a
// communicator of some ranks, and checks a decision reaches every member.
func TestWorldCollectives(t *testing.T) {
	const n = 10
	groups := map[uint32][]uint32{2: {1, 2, 3, 4, 5, 6}}
	kinds := []comm.Kind{comm.KindBarrier, comm.KindBcast, comm.KindReduce, comm.KindAllreduce, comm.KindGather,
		comm.KindScatter, comm.KindAllgather, comm.KindAlltoall, comm.KindCommCreate, comm.KindFile}
	for _, exact := range []bool{true, false} {
		collectives(t, n, groups, kinds, exact)
	}
}

// collectives runs every kind of collective; with exact, every rank
// records the same counts, otherwise they differ by rank.
func collectives(t *testing.T, n int, groups map[uint32][]uint32, kinds []comm.Kind, exact bool) {
	runWorld(t, n, groups, exact, func(ctx context.Context, ep comm.Comm, r uint32, start time.Time) error {
		for i, k := range kinds {
			d := comm.DomainComm
			if k == comm.KindFile {
				d = comm.DomainFile
			}
			bytes := int64(1000 * (i + 1))
			if !exact {
				bytes *= int64(r) + 1
			}
			if err := ep.Collective(ctx, k, d, 0, 3, bytes); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
			if r >= 1 && r <= 6 {
				if err := ep.Collective(ctx, k, d, 2, 4, bytes); err != nil {
					return fmt.Errorf("%s on communicator 2: %w", k, err)
				}
			}
		}
		v, err := ep.DecideBcast(ctx, 0, 7, int64(r)*100)
		if err != nil {
			return err
		}
		if v != 700 {
			return fmt.Errorf("decision %d, want 700 (rank 7's)", v)
		}
		if r >= 1 && r <= 6 {
			v, err := ep.DecideBcast(ctx, 2, 2, int64(r)*10)
			if err != nil {
				return err
			}
			if v != 20 {
				return fmt.Errorf("decision on communicator 2: %d, want 20", v)
			}
		}
		return nil
	})
}

// TestWorldDeadlock checks that calls no rank will complete fail with
// comm.ErrUnmatched on every process, and that the world still ends.
func TestWorldDeadlock(t *testing.T) {
	const n = 10
	groups := map[uint32][]uint32{3: {2, 8}}
	begin := time.Now()
	runWorld(t, n, groups, false, func(ctx context.Context, ep comm.Comm, r uint32, start time.Time) error {
		switch r {
		case 0:
			err := ep.Recv(ctx, 0, 9, 1, 10)
			if !errors.Is(err, comm.ErrUnmatched) {
				return fmt.Errorf("receive from a rank that never sends: %v, want ErrUnmatched", err)
			}
		case 2:
			err := ep.Collective(ctx, comm.KindBarrier, comm.DomainComm, 3, -1, 0)
			if !errors.Is(err, comm.ErrUnmatched) {
				return fmt.Errorf("barrier rank 8 never enters: %v, want ErrUnmatched", err)
			}
		}
		return nil
	})
	if el := time.Since(begin); el > 10*time.Second {
		t.Errorf("the deadlock took %v to resolve", el)
	}
}

// TestWorldNode checks that every process of the job, all on this
// machine, counts them all as its node's, and takes its share of the
// processors.
func TestWorldNode(t *testing.T) {
	proc, err := Connect()
	if err != nil {
		t.Fatal(err)
	}
	if proc.Node != proc.Size {
		t.Errorf("process %d: %d processes on its node, want all %d", proc.Rank, proc.Node, proc.Size)
	}
	if got, want := proc.Processors(), max(1, runtime.NumCPU()/proc.Size); got != want {
		t.Errorf("process %d of %d, %d processors: uses %d, want %d", proc.Rank, proc.Size, runtime.NumCPU(), got, want)
	}
}

// TestWorldWatch: the last process stops sending heartbeats (as one whose
// link is cut would). Process 0 says, after the timeout and not long
// after, that it has not answered, naming it; every other process hears
// it from process 0; the silent process, to which process 0 sends no more
// heartbeats, says in turn that process 0 has not answered. Then the
// watches close: none hangs.
func TestWorldWatch(t *testing.T) {
	proc, err := Connect()
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 2 * time.Second // a process starved that long on a loaded machine is rare
	type news struct {
		err  error
		told bool
		at   time.Time
	}
	got := make(chan news, 4)
	describe := func(procs []int) string { return fmt.Sprintf("processes %v", procs) }
	w, err := newWatch(proc, timeout, describe, func(err error, told bool) { got <- news{err, told, time.Now()} })
	if err != nil {
		t.Fatal(err)
	}
	proc.Barrier()
	last := proc.Size - 1
	start := time.Now()
	if proc.Rank == last {
		w.mute.Store(true)
	}
	want := fmt.Sprintf("processes [%d] has not answered for 2s (--peer-timeout)", last)
	select {
	case n := <-got:
		switch proc.Rank {
		case last:
			if n.told || n.err.Error() != "processes [0] has not answered for 2s (--peer-timeout)" {
				t.Errorf("the silent process: %v (told %v), want process 0 not answering", n.err, n.told)
			}
		case 0:
			if n.told || n.err.Error() != want {
				t.Errorf("process 0: %v (told %v), want %q", n.err, n.told, want)
			}
		default:
			if !n.told || n.err.Error() != "process 0: "+want {
				t.Errorf("process %d: %v (told %v), want process 0's %q", proc.Rank, n.err, n.told, want)
			}
		}
		// The last heartbeat may have left just before the barrier.
		limit := 4 * timeout
		if proc.Rank == last {
			limit = 8 * timeout
		}
		if d := n.at.Sub(start); d < timeout-2*heartbeat(timeout) || d > limit {
			t.Errorf("process %d heard after %v; the timeout is %v", proc.Rank, d, timeout)
		}
	case <-time.After(10 * timeout):
		t.Errorf("process %d: no news in %v", proc.Rank, 10*timeout)
	}
	w.close()
	proc.Barrier()
}
