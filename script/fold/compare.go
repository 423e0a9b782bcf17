package fold

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"

	"github.com/iotrace/iotrace/trace"
)

// Compare checks that got makes, rank by rank, the calls of want, as the
// conversion contract says (docs/SCRIPT.md, "Converting traces to
// scripts"): the same number of calls, and for each the same op, paths,
// offset, size, result, flags, mode, whence, peer, tag, communicator,
// bytes, count and stride, on the same handle. Descriptors and MPI file
// handles may be numbered differently, as long as one handle of want is
// always one handle of got; a call that names a path is on no handle (the
// directory descriptor a capture may give it is not compared); times and
// threads are not compared. It returns the first difference.
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
	fds := map[int32]int32{}    // descriptor in want → in got
	mpis := map[int32]int32{}   // MPI file handle in want → in got
	files := map[int32]string{} // descriptor in want → the path it was opened with
	for call := int64(1); ; call++ {
		x, err := a.next()
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
		if err := compareEvent(x, y, want.Path, got.Path, fds, mpis, files); err != nil {
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

func compareEvent(x, y *trace.Event, wp, gp func(trace.PathID) string, fds, mpis map[int32]int32, files map[int32]string) error {
	if x.Op != y.Op {
		return &diff{"the call", x.Op, y.Op}
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
	a := wp(x.Path)
	if x.Path == 0 && x.Op.Class() == trace.ClassPOSIX {
		// Some sources name the file only where it is opened: a call on
		// a descriptor is on the file it was opened with.
		if p, ok := files[x.FD]; ok {
			a = p
		}
	}
	if b := gp(y.Path); a != b {
		return &diff{"the path", fmt.Sprintf("%q", a), fmt.Sprintf("%q", b)}
	}
	if a, b := wp(x.Path2), gp(y.Path2); a != b {
		return &diff{"the second path", fmt.Sprintf("%q", a), fmt.Sprintf("%q", b)}
	}
	ints := []struct {
		name string
		a, b int64
	}{
		{"the offset", x.Offset, y.Offset}, {"the size", x.Size, y.Size},
		{"flags", int64(x.Flags), int64(y.Flags)}, {"mode", int64(x.Mode), int64(y.Mode)},
		{"whence", int64(x.Whence), int64(y.Whence)}, {"the peer", int64(x.Peer), int64(y.Peer)},
		{"the tag", int64(x.Tag), int64(y.Tag)}, {"the communicator", int64(x.Comm), int64(y.Comm)},
		{"bytes", x.Bytes, y.Bytes}, {"the count", int64(x.Count), int64(y.Count)},
		{"the stride", x.Stride, y.Stride},
	}
	for _, f := range ints {
		if f.a != f.b {
			return &diff{f.name, f.a, f.b}
		}
	}
	info := x.Op.Info()
	switch {
	case info.Family == "open" && info.Class == trace.ClassPOSIX:
		// The result is the new descriptor; the FD field repeats it in
		// some captures and is zero in others.
		if (x.Ret < 0) != (y.Ret < 0) || x.Ret < 0 && x.Ret != y.Ret {
			return &diff{"the result", x.Ret, y.Ret}
		}
		if x.Ret >= 0 {
			fds[int32(x.Ret)] = int32(y.Ret)
			files[int32(x.Ret)] = wp(x.Path)
		}
		return nil
	case x.Op == trace.OpMPIFileOpen:
		if x.Ret != y.Ret {
			return &diff{"the result", x.Ret, y.Ret}
		}
		if x.Ret >= 0 {
			mpis[x.FD] = y.FD
		} else if x.FD != y.FD {
			return &diff{"the handle", x.FD, y.FD}
		}
		return nil
	}
	if x.Ret != y.Ret {
		return &diff{"the result", x.Ret, y.Ret}
	}
	if namesPath(x) {
		return nil
	}
	m := fds
	if info.Class == trace.ClassMPIIO {
		m = mpis
	}
	want := x.FD
	if v, ok := m[x.FD]; ok && x.FD != 0 {
		want = v
	}
	if y.FD != want {
		return &diff{"the handle", fmt.Sprintf("%d (%d in the script's numbering)", x.FD, want), y.FD}
	}
	if x.Op == trace.OpClose || x.Op == trace.OpFclose {
		delete(fds, x.FD)
		delete(files, x.FD)
	}
	if x.Op == trace.OpMPIFileClose {
		delete(mpis, x.FD)
	}
	return nil
}

// namesPath reports whether e is a metadata call on a path (stat, unlink,
// mkdir, rename …) rather than on a descriptor. Its FD, where a capture
// sets it, is the directory the path was resolved against (AT_FDCWD,
// −100, or the descriptor of an *at call): the path in the trace is
// already resolved, a replay uses the path alone, and a script names only
// the path.
func namesPath(e *trace.Event) bool {
	if e.Path == 0 {
		return false
	}
	switch e.Op {
	case trace.OpStat, trace.OpLstat, trace.OpFstatat, trace.OpStatx, trace.OpAccess, trace.OpUnlink, trace.OpUnlinkat,
		trace.OpMPIFileDelete, trace.OpRmdir, trace.OpMkdir, trace.OpMkdirat, trace.OpTruncate, trace.OpRename,
		trace.OpRenameat, trace.OpRenameat2:
		return true
	}
	return false
}
