package access

import (
	"errors"
	"io"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/state"
)

// Follow counts the events of one rank's stream with a Tracker, resolving
// the file of every call with a trace/state follower. nprocs is the size
// of MPI_COMM_WORLD (for telling collective opens from independent ones).
func Follow(t *Tracker, src trace.Source, nprocs int) error {
	f := state.New[struct{}, struct{}](nil)
	buf := make([]trace.Event, trace.BatchSize)
	for {
		n, err := src.ReadEvents(buf)
		for i := range buf[:n] {
			e := &buf[i]
			st := f.Apply(e)
			t.Add(src.Path(st.Path), e, FileOffset(e, st.Handle), CommSize(e.Comm, nprocs))
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// FileOffset is the file offset of data call e: its Offset, mapped
// through the view of its MPI file handle h (nil for POSIX calls).
func FileOffset[H any](e *trace.Event, h *state.Handle[H]) int64 {
	if h != nil && e.Op.Class() == trace.ClassMPIIO {
		return h.View.FileOffset(e.Offset)
	}
	return e.Offset
}

// CommSize is the number of ranks of communicator comm as far as an
// access pattern needs it: MPI_COMM_WORLD has nprocs, MPI_COMM_SELF one,
// any other more than one.
func CommSize(comm uint32, nprocs int) int {
	switch comm {
	case trace.CommWorld:
		return nprocs
	case trace.CommSelf:
		return 1
	}
	return 2
}

// FromTrace counts every rank of t and returns the per-rank records,
// unreduced (see Reduce).
func FromTrace(t trace.Trace, opts Options) ([]*Posix, []*MPIIO, error) {
	p, m, _, err := FromTraceAll(t, opts)
	return p, m, err
}

// FromTraceAll is FromTrace with the STDIO records too.
func FromTraceAll(t trace.Trace, opts Options) ([]*Posix, []*MPIIO, []*Stdio, error) {
	ranks := t.Ranks()
	nprocs := len(ranks)
	if len(ranks) > 0 {
		nprocs = int(ranks[len(ranks)-1]) + 1
	}
	var ps []*Posix
	var ms []*MPIIO
	var ss []*Stdio
	for _, r := range ranks {
		src, err := t.Rank(r)
		if err != nil {
			return nil, nil, nil, err
		}
		tr := NewTracker(int(r), opts)
		err = Follow(tr, src, nprocs)
		if c, ok := src.(io.Closer); ok {
			c.Close()
		}
		if err != nil {
			return nil, nil, nil, err
		}
		p, m := tr.Records()
		ps = append(ps, p...)
		ms = append(ms, m...)
		ss = append(ss, tr.StdioRecords()...)
	}
	return ps, ms, ss, nil
}
