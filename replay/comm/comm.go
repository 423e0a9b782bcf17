// Package comm is the communication layer of a replay: it makes the ranks
// of a replay wait for each other where the traced run's ranks did — at
// barriers and other collectives, and at receives, which wait for their
// sends.
//
// Comm is one rank's endpoint. Local, in this package, runs every rank as
// a goroutine of one process; an implementation over MPI (build tag mpi)
// spreads them over processes and moves the recorded byte counts for
// real. Every call takes the byte count the trace recorded, so an
// implementation that moves data can regenerate the traffic.
package comm

import (
	"context"
	"errors"
)

// AnySource and AnyTag are the wildcards of a receive (MPI_ANY_SOURCE,
// MPI_ANY_TAG), as the trace stores them.
const (
	AnySource int32 = -1
	AnyTag    int32 = -1
)

// Domain separates matching spaces of one communicator: collective calls
// on a file handle (MPI-IO) match among themselves, not with the
// communication collectives on the same communicator, as MPI libraries
// give a file its own duplicate of the communicator.
type Domain uint8

const (
	DomainComm Domain = iota // MPI communication collectives
	DomainFile               // collective MPI-IO calls
)

// Kind names a collective, so that an implementation can call the right
// primitive and a deadlock report can say what a rank waits in.
type Kind uint8

const (
	KindBarrier Kind = iota
	KindBcast
	KindReduce
	KindAllreduce
	KindGather
	KindScatter
	KindAllgather
	KindAlltoall
	KindCommCreate // MPI_Comm_split, MPI_Comm_dup
	KindFile       // a collective MPI-IO call
	KindDecide     // a decision of the root that every rank receives (DecideBcast)
)

var kindNames = [...]string{"barrier", "bcast", "reduce", "allreduce", "gather", "scatter", "allgather", "alltoall", "comm-create", "file collective", "decision"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "collective"
}

// Request is an outstanding non-blocking call (Isend, Irecv).
type Request interface {
	// Wait blocks until the call completes.
	Wait(ctx context.Context) error
}

// Comm is one rank's view of the communication layer. One goroutine uses
// it at a time.
type Comm interface {
	// Collective returns once every member of comm has entered its
	// matching call (the calls of a communicator and domain match in
	// call order). root is the root of a rooted collective, or -1;
	// bytes what this rank contributes.
	Collective(ctx context.Context, kind Kind, d Domain, comm uint32, root int32, bytes int64) error
	// DecideBcast is a collective that returns root's v on every member:
	// how all ranks agree on a decision one of them takes, such as the
	// iteration at which a time-driven loop ends.
	DecideBcast(ctx context.Context, comm uint32, root int32, v int64) (int64, error)
	// Send posts a message to peer and returns without waiting for its
	// receive (eager).
	Send(ctx context.Context, comm uint32, peer, tag int32, bytes int64) error
	// Recv waits for a message from peer (or AnySource) with tag (or
	// AnyTag), matched in the order messages were sent.
	Recv(ctx context.Context, comm uint32, peer, tag int32, bytes int64) error
	// Isend is Send that returns a request.
	Isend(ctx context.Context, comm uint32, peer, tag int32, bytes int64) (Request, error)
	// Irecv posts a receive now (it matches in posting order) and returns
	// the request that waits for it.
	Irecv(ctx context.Context, comm uint32, peer, tag int32, bytes int64) (Request, error)
	// Done says the rank has no more calls; it leaves every communicator.
	Done()
}

// ErrUnmatched is returned to the ranks a deadlock left waiting: every
// rank still running waits for a call no rank will make (a trace cut
// short, or a subset of ranks). Ranks may go on after it; the replay
// counts it.
var ErrUnmatched = errors.New("unmatched communication")
