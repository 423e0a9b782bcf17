package script

import (
	"errors"
	"math"
	"math/bits"
	"time"

	"github.com/iotrace/iotrace/trace"
)

// Model is the nominal duration model: how long each call takes when a
// script is expanded rather than run. It is deliberately simple, so that
// expanded timelines and tables can be reasoned about by hand:
//
//	read/write calls (POSIX and MPI-IO)   DataLatency + bytes ÷ DataBandwidth
//	lseek, MPI_File_seek(_shared)         SeekLatency
//	every other file or metadata call     MetaLatency
//	communication calls                   CommLatency + bytes ÷ CommBandwidth
//	markers (time blocks, mark)           0
//
// sleep adds its duration to the rank's clock. A collective call (barrier,
// bcast, …, the collective MPI-IO calls) starts when the rank calls it and
// ends, for every member of its communicator, at the latest arrival plus
// the longest member's nominal duration — so ranks line up at collectives
// in a timeline. Point-to-point send, recv and sendrecv do not wait for
// each other.
type Model struct {
	DataLatency   time.Duration
	DataBandwidth int64 // bytes per second
	MetaLatency   time.Duration
	SeekLatency   time.Duration
	CommLatency   time.Duration
	CommBandwidth int64 // bytes per second
}

// DefaultModel returns the model expansions use unless told otherwise:
// 10µs + 1 GB/s for data, 20µs for other file calls, 1µs for seeks, and
// 5µs + 10 GB/s for communication (GB = 10⁹ B, so a 4096-byte write takes
// 10µs + 4096ns).
func DefaultModel() Model {
	return Model{
		DataLatency:   10 * time.Microsecond,
		DataBandwidth: 1e9,
		MetaLatency:   20 * time.Microsecond,
		SeekLatency:   time.Microsecond,
		CommLatency:   5 * time.Microsecond,
		CommBandwidth: 1e10,
	}
}

// transfer returns the ns bytes take at bw bytes/s, rounded up.
func transfer(bytes, bw int64) int64 {
	if bytes <= 0 || bw <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(bytes), 1e9)
	if hi >= uint64(bw) {
		return math.MaxInt64 / 4
	}
	q, r := bits.Div64(hi, lo, uint64(bw))
	if r != 0 {
		q++
	}
	if q > math.MaxInt64/4 {
		return math.MaxInt64 / 4
	}
	return int64(q)
}

// Dur returns the nominal duration of ev (on the calling rank, before any
// waiting at a collective).
func (m *Model) Dur(ev *trace.Event) int64 { return m.dur(ev) }

func (m *Model) dur(ev *trace.Event) int64 {
	switch ev.Op.Class() {
	case trace.ClassPOSIX, trace.ClassMeta, trace.ClassMPIIO:
		if ev.Op.Dir() != trace.DirNone {
			// The bytes the call moved: a read at the end of a file, a
			// copy asked for 2^63-1 bytes (cp does), a failed call move
			// fewer than they ask for.
			n := ev.Size
			if ev.Ret < n {
				n = max(ev.Ret, 0)
			}
			return int64(m.DataLatency) + transfer(n, m.DataBandwidth)
		}
		switch ev.Op {
		case trace.OpLseek, trace.OpMPIFileSeek, trace.OpMPIFileSeekShared:
			return int64(m.SeekLatency)
		}
		return int64(m.MetaLatency)
	case trace.ClassComm:
		return int64(m.CommLatency) + transfer(ev.Bytes, m.CommBandwidth)
	}
	return 0
}

// Decider answers the question a time-driven loop ("repeat for T") asks
// before each iteration. A replay that runs a script gives every rank's
// interpreter a Decider that agrees with the other ranks of the loop's
// communicator — for instance, the group's first rank measures the time
// since its first check and broadcasts the answer, as b_eff_io does.
type Decider interface {
	// Continue reports whether to run iteration c.Iter. Every rank of
	// c.Comm must get the same answers, or the ranks' calls stop matching.
	Continue(c LoopCheck) (bool, error)
}

// DeciderFunc adapts a function to Decider.
type DeciderFunc func(c LoopCheck) (bool, error)

// Continue implements Decider.
func (f DeciderFunc) Continue(c LoopCheck) (bool, error) { return f(c) }

// NominalDecider decides on the rank's own nominal clock: run another
// iteration while less than the loop's duration has passed since the first
// check. An iteration that took no nominal time is an error: the loop
// would never end. Expand does not use it: it decides with the clocks of
// all the ranks of the loop (see Expand).
type NominalDecider struct{}

// Continue implements Decider.
func (NominalDecider) Continue(c LoopCheck) (bool, error) {
	if c.Iter > 0 && c.Now == c.Prev && c.Limit > 0 {
		return false, ErrTimeless
	}
	return c.Now-c.Start < c.Limit, nil
}

// ErrTimeless is the error of a time-driven loop whose iteration takes no
// nominal time, so that under the nominal model it would never end.
var ErrTimeless = errors.New("an iteration took no nominal time, so the loop would never end (give it an I/O call, a communication call or a sleep)")
