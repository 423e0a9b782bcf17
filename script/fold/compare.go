package fold

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/state"
)

// Compare checks that got makes, rank by rank, the calls of want, as the
// conversion contract says (docs/SCRIPT.md, "Converting traces to
// scripts"): the same number of calls (a pagein in want is none: the
// wait for mapped pages that the script's map makes), and for each the
// same op, thread,
// paths, offsets, size, result, flags, mode, whence, peer, tag,
// communicator, bytes, count and stride, on the same descriptors. A
// descriptor a call does not use is not compared: the directory of a
// call that names a path (AT_FDCWD, or an *at call's descriptor; it
// matters only for a call with no path, which is on it), the FD an open
// repeats its result in. MPI file handles may be numbered differently, as
// long as one handle of want is always one handle of got. A call on a
// descriptor that names no file in want is on the file its descriptor
// was opened on (trace/state follows want's descriptors). Times are not
// compared. It returns the first difference.
func Compare(want, got trace.Trace) error {
	wr, gr := want.Ranks(), got.Ranks()
	// A rank without events is the same as a rank that is not there.
	if err := sameRankSets(want, got, wr, gr); err != nil {
		return err
	}
	// Ranks are compared in parallel; the error of the lowest rank wins.
	errs := make([]error, len(wr))
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = compareRank(want, got, wr[i])
			}
		}()
	}
	for i := range wr {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func sameRankSets(want, got trace.Trace, wr, gr []uint32) error {
	for _, r := range gr {
		if !slices.Contains(wr, r) {
			s, err := got.Rank(r)
			if err != nil {
				return err
			}
			buf := make([]trace.Event, 1)
			if n, _ := s.ReadEvents(buf); n > 0 {
				return fmt.Errorf("rank %d: the trace has no calls, the script makes %s", r, describe(&buf[0], got.Path))
			}
		}
	}
	return nil
}

func describe(e *trace.Event, path func(trace.PathID) string) string {
	s := e.Op.String()
	if e.Path != 0 {
		s += " " + path(e.Path)
	}
	return s
}

type stream struct {
	src trace.Source
	buf []trace.Event
	i   int
	eof bool
}

func (s *stream) next() (*trace.Event, error) {
	for s.i >= len(s.buf) {
		if s.eof {
			return nil, nil
		}
		n, err := s.src.ReadEvents(s.buf[:cap(s.buf)])
		s.buf, s.i = s.buf[:n], 0
		if errors.Is(err, io.EOF) {
			s.eof = true
		} else if err != nil {
			return nil, err
		}
	}
	s.i++
	return &s.buf[s.i-1], nil
}

func compareRank(want, got trace.Trace, r uint32) error {
	ws, err := want.Rank(r)
	if err != nil {
		return err
	}
	gs, err := got.Rank(r)
	if err != nil {
		return err
	}
	a := &stream{src: ws, buf: make([]trace.Event, 0, trace.BatchSize)}
	b := &stream{src: gs, buf: make([]trace.Event, 0, trace.BatchSize)}
	// want's descriptors and MPI file handles; a handle's Aux is its id
	// in got.
	f := state.New[struct{}, int32](nil)
	for call := int64(1); ; call++ {
		x, err := a.next()
		for err == nil && x != nil && x.Op.Info().Wait {
			x, err = a.next() // no call: a wait a script's map makes
		}
		if err != nil {
			return fmt.Errorf("rank %d: reading the trace: %w", r, err)
		}
		y, err := b.next()
		if err != nil {
			return fmt.Errorf("rank %d: running the script: %w", r, err)
		}
		switch {
		case x == nil && y == nil:
			return nil
		case x == nil:
			return fmt.Errorf("rank %d: the trace ends after %d calls, the script goes on with %s", r, call-1, describe(y, got.Path))
		case y == nil:
			return fmt.Errorf("rank %d: the script ends after %d calls, the trace goes on with %s", r, call-1, describe(x, want.Path))
		}
		st := f.Apply(x)
		if err := compareEvent(x, y, want.Path, got.Path, st); err != nil {
			return fmt.Errorf("rank %d, call %d (%s): %w", r, call, x.Op, err)
		}
	}
}

type diff struct {
	field     string
	want, got any
}

func (d *diff) Error() string {
	return fmt.Sprintf("%s is %v in the trace, %v in the script", d.field, d.want, d.got)
}

func compareEvent(x, y *trace.Event, wp, gp func(trace.PathID) string, st state.Step[struct{}, int32]) error {
	x = withoutSeenSize(x)
	if x.Op != y.Op {
		return &diff{"the call", x.Op, y.Op}
	}
	if x.Thread != y.Thread {
		return &diff{"the thread", x.Thread, y.Thread}
	}
	xs, xt, xok := x.RecvFrom()
	ys, yt, yok := y.RecvFrom()
	if xok {
		if !yok || xs != ys {
			return &diff{"the source", xs, ys}
		}
		if xt != yt {
			return &diff{"the receive tag", xt, yt}
		}
	} else if yok {
		// A trace without the receive half: the script had to name a
		// source (Convert warns).
		yc := *y
		yc.Flags &^= trace.RecvHalf
		y = &yc
	}
	info := x.Op.Info()
	onDesc := info.Class == trace.ClassPOSIX || info.Class == trace.ClassMeta
	a, a2 := wp(x.Path), wp(x.Path2)
	if onDesc {
		// Some sources name the file only where it is opened: a call on
		// a descriptor is on the file it was opened with.
		if x.Path == 0 && st.Desc != nil && (info.FD != trace.FDAt || x.FD >= 0) {
			a = wp(st.Desc.Path)
		}
		if x.Path2 == 0 && st.Desc2 != nil {
			a2 = wp(st.Desc2.Path)
		}
	}
	b := gp(y.Path)
	if onDesc && y.Path == 0 && info.FD == trace.FDAt && y.FD >= 0 {
		// The script's *at call on its descriptor (the descriptors are
		// the trace's numbers), as the trace's; a trace written before
		// the captures left the Path out of such a call names the
		// descriptor's file there.
		switch {
		case st.Desc != nil:
			b = wp(st.Desc.Path)
		case x.Path != 0 && x.FD == y.FD && x.Flags&atEmptyPath != 0:
			b = a
		}
	}
	if a != b {
		return &diff{"the path", fmt.Sprintf("%q", a), fmt.Sprintf("%q", b)}
	}
	if b := gp(y.Path2); a2 != b {
		return &diff{"the second path", fmt.Sprintf("%q", a2), fmt.Sprintf("%q", b)}
	}
	ints := []struct {
		name string
		a, b int64
	}{
		{"the offset", x.Offset, y.Offset}, {"the size", x.Size, y.Size}, {"the result", x.Ret, y.Ret},
		{"flags", int64(x.Flags), int64(y.Flags)}, {"mode", int64(x.Mode), int64(y.Mode)},
		{"whence", int64(x.Whence), int64(y.Whence)}, {"the peer", int64(x.Peer), int64(y.Peer)},
		{"the tag", int64(x.Tag), int64(y.Tag)}, {"the communicator", int64(x.Comm), int64(y.Comm)},
		{"bytes", x.Bytes, y.Bytes}, {"the count", int64(x.Count), int64(y.Count)},
		{"the stride", x.Stride, y.Stride}, {"the second offset", x.Offset2, y.Offset2},
		{"the second descriptor", int64(x.FD2), int64(y.FD2)},
	}
	for _, f := range ints {
		if f.a != f.b {
			return &diff{f.name, f.a, f.b}
		}
	}
	if info.Class == trace.ClassMPIIO {
		switch {
		case x.Op == trace.OpMPIFileOpen:
			if x.Ret >= 0 && st.Handle != nil {
				st.Handle.Aux = y.FD
				return nil
			}
		case st.Handle != nil && !st.Learnt:
			if y.FD != st.Handle.Aux {
				return &diff{"the MPI file handle", fmt.Sprintf("%d (%d in the script's numbering)", x.FD, st.Handle.Aux), y.FD}
			}
			return nil
		}
	}
	if usesFD(x) && x.FD != y.FD {
		return &diff{"the descriptor", x.FD, y.FD}
	}
	return nil
}

// usesFD reports whether e's FD is a descriptor its call uses: not the
// directory of a call that names a path, nor what an open repeats of its
// result (see Compare).
func usesFD(e *trace.Event) bool {
	switch e.Op.Info().FD {
	case trace.FDOn, trace.FDDup, trace.FDClose, trace.FDCloseRange:
		return true
	case trace.FDAt:
		return e.Path == 0
	case trace.FDOpen:
		return e.Op == trace.OpInherit || e.Op == trace.OpMPIFileOpen
	}
	return false
}
