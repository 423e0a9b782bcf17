package replay

import (
	"errors"
	"io"
	"regexp"
	"slices"
	"strconv"
	"sync"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/state"
)

// fileUse is what the layout transforms learn about one path.
type fileUse struct {
	ranks  []uint32 // sorted
	extent int64    // largest end of an access
}

// scanUse reads every rank of x (through the stages so far) and returns,
// per path id, the ranks that use it and the end of its furthest access.
func scanUse(x *transformed) (map[trace.PathID]*fileUse, error) {
	use := map[trace.PathID]*fileUse{}
	touch := func(id trace.PathID, r uint32, end int64) {
		if id == 0 {
			return
		}
		u := use[id]
		if u == nil {
			u = &fileUse{}
			use[id] = u
		}
		if n := len(u.ranks); n == 0 || u.ranks[n-1] != r {
			if i, found := slices.BinarySearch(u.ranks, r); !found {
				u.ranks = slices.Insert(u.ranks, i, r)
			}
		}
		u.extent = max(u.extent, end)
	}
	buf := make([]trace.Event, trace.BatchSize)
	for _, r := range x.ranks {
		src, err := x.Rank(r)
		if err != nil {
			return nil, err
		}
		f := state.New[struct{}, struct{}](nil)
		for {
			n, err := src.ReadEvents(buf)
			for i := range buf[:n] {
				e := &buf[i]
				switch e.Op.Class() {
				case trace.ClassMarker, trace.ClassComm, trace.ClassProcess:
					f.Apply(e)
					continue
				}
				id := f.Apply(e).Path // the file the call reaches, as the replay's descriptor does
				var end int64
				if isData(e.Op) && e.Offset >= 0 {
					end = e.Offset + max(e.Size, 0)
				}
				touch(id, r, end)
				touch(e.Path2, r, 0)
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				closeSource(src)
				return nil, rankErr(r, err)
			}
		}
		closeSource(src)
	}
	return use, nil
}

func closeSource(src trace.Source) {
	if c, ok := src.(io.Closer); ok {
		c.Close()
	}
}

var digitRun = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[0-9]+`) })

// sharedName returns path with the last run of digits whose value is rank
// replaced by "shared", or false if no run of digits is rank.
func sharedName(path string, rank uint32) (string, bool) {
	runs := digitRun().FindAllStringIndex(path, -1)
	for i := len(runs) - 1; i >= 0; i-- {
		a, b := runs[i][0], runs[i][1]
		v, err := strconv.ParseUint(path[a:b], 10, 32)
		if err == nil && uint32(v) == rank {
			return path[:a] + "shared" + path[b:], true
		}
	}
	return "", false
}

// regionAlign is the alignment of each rank's region in a shared file.
const regionAlign = 1 << 20

// sharedMap is where one rank's file goes in a shared file.
type sharedMap struct {
	id    trace.PathID
	shift int64
}

// toShared builds the stage that turns files of one rank each into one
// shared file per name (see Transforms.Layout).
func toShared(x *transformed) (func(uint32, trace.Source) trace.Source, error) {
	use, err := scanUse(x)
	if err != nil {
		return nil, err
	}
	type group struct {
		members []uint32 // ranks, sorted
		stride  int64
		id      trace.PathID
	}
	groups := map[string]*group{}
	owner := map[trace.PathID]string{}
	for id, u := range use {
		if len(u.ranks) != 1 {
			continue
		}
		name, ok := sharedName(x.Path(id), u.ranks[0])
		if !ok {
			continue
		}
		g := groups[name]
		if g == nil {
			g = &group{id: x.intern(name)}
			groups[name] = g
		}
		if i, found := slices.BinarySearch(g.members, u.ranks[0]); !found {
			g.members = slices.Insert(g.members, i, u.ranks[0])
		}
		g.stride = max(g.stride, u.extent)
		owner[id] = name
	}
	perRank := map[uint32]map[trace.PathID]sharedMap{}
	for id, name := range owner {
		g := groups[name]
		r := use[id].ranks[0]
		stride := (max(g.stride, 1) + regionAlign - 1) / regionAlign * regionAlign
		pos, _ := slices.BinarySearch(g.members, r)
		if perRank[r] == nil {
			perRank[r] = map[trace.PathID]sharedMap{}
		}
		perRank[r][id] = sharedMap{id: g.id, shift: int64(pos) * stride}
	}
	return func(rank uint32, in trace.Source) trace.Source {
		m := perRank[rank]
		if len(m) == 0 {
			return in
		}
		f := state.New[shift, shift](nil)
		return newStage(in, x, func(e *trace.Event, out []trace.Event) []trace.Event {
			shareEvent(e, m, f)
			return append(out, *e)
		})
	}, nil
}

// shift is where a rank's part of a shared file starts, for an open file
// description or MPI file handle on it.
type shift struct {
	by     int64
	mapped bool // the file is one of the shared ones
	viewed bool // MPI: a view sets the displacement, which took the shift
}

func shareEvent(e *trace.Event, m map[trace.PathID]sharedMap, f *state.Follower[shift, shift]) {
	sm, mapped := m[e.Path]
	if mapped {
		e.Path = sm.id
	}
	if s2, ok := m[e.Path2]; ok {
		e.Path2 = s2.id
	}
	info := e.Op.Info()
	if info.FD == trace.FDOpen && mapped {
		// Every rank opens the shared file: none may truncate it or
		// insist on creating it.
		if info.Class == trace.ClassMPIIO {
			e.Flags &^= trace.MPIModeExcl
		} else {
			e.Flags &^= trace.OTrunc | trace.OExcl
			if e.Op == trace.OpCreat {
				e.Op, e.Flags = trace.OpOpen, trace.OWronly|trace.OCreat
			}
		}
	}
	st := f.Apply(e)
	switch {
	case st.New != nil && st.New != st.Desc:
		st.New.Aux = shift{by: sm.shift, mapped: mapped}
		return
	case e.Op == trace.OpMPIFileOpen:
		if st.Handle != nil {
			st.Handle.Aux = shift{by: sm.shift, mapped: mapped}
		}
		return
	case st.Learnt && st.Desc != nil && mapped:
		st.Desc.Aux = shift{by: sm.shift, mapped: true}
	}
	if h := st.Handle; h != nil && info.FD == trace.FDOn {
		if !h.Aux.mapped {
			return
		}
		switch {
		case e.Op == trace.OpMPIFileSetView:
			e.Offset += h.Aux.by
			h.Aux.viewed = true
		case isData(e.Op) && !h.Aux.viewed:
			e.Offset += h.Aux.by
		case info.Resize != trace.ResizeNone:
			e.Size += h.Aux.by
		}
		return
	}
	d := st.Desc
	if d == nil || !d.Aux.mapped || info.Class != trace.ClassPOSIX || info.FD != trace.FDOn {
		return
	}
	switch {
	case isData(e.Op):
		if e.Offset < 0 {
			return
		}
		e.Op = positionedOp(e.Op)
		e.Offset += d.Aux.by
	case info.Family == "seek":
		if e.Whence == 0 {
			e.Offset += d.Aux.by
		}
		if e.Ret >= 0 {
			e.Ret += d.Aux.by
		}
	case e.Op == trace.OpFtruncate:
		e.Size += d.Aux.by
	}
}

// positionedOp returns the explicit-offset form of a POSIX data op,
// keeping vector calls vector calls.
func positionedOp(op trace.Op) trace.Op {
	switch op {
	case trace.OpRead, trace.OpFread:
		return trace.OpPread
	case trace.OpWrite, trace.OpFwrite:
		return trace.OpPwrite
	case trace.OpReadv:
		return trace.OpPreadv
	case trace.OpWritev:
		return trace.OpPwritev
	}
	return op
}

// toFPP builds the stage that gives each rank its own copy of the files
// several ranks use (see Transforms.Layout).
func toFPP(x *transformed) (func(uint32, trace.Source) trace.Source, error) {
	use, err := scanUse(x)
	if err != nil {
		return nil, err
	}
	shared := map[trace.PathID]bool{}
	for id, u := range use {
		if len(u.ranks) > 1 {
			shared[id] = true
		}
	}
	return func(rank uint32, in trace.Source) trace.Source {
		if len(shared) == 0 {
			return in
		}
		own := map[trace.PathID]trace.PathID{}
		rename := func(id trace.PathID) trace.PathID {
			if !shared[id] {
				return id
			}
			n, ok := own[id]
			if !ok {
				n = x.intern(x.Path(id) + "." + strconv.FormatUint(uint64(rank), 10))
				own[id] = n
			}
			return n
		}
		return newStage(in, x, func(e *trace.Event, out []trace.Event) []trace.Event {
			if e.Op.Class() != trace.ClassMarker {
				e.Path, e.Path2 = rename(e.Path), rename(e.Path2)
			}
			return append(out, *e)
		})
	}, nil
}
