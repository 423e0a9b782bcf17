// Package tracegen generates synthetic traces with realistic timing for
// tests and benchmarks: an IOR-like run, a two-phase strided dump like the
// astro3d code, and uniformly random accesses. Traces are streamed: a
// generator of 50 million events holds a few of them at a time.
//
// Timing comes from measured distributions (jitter.txt, made by
// bench/format/jitter.c): the gap between one 4 KiB call's end and the
// next one's start, and the call's duration, as CLOCK_MONOTONIC reported
// them on a 2-vCPU Linux VM. Samples are drawn with a seeded PCG, so a
// generator with the same arguments gives the same trace.
package tracegen

import (
	"bufio"
	"bytes"
	_ "embed"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/iotrace/iotrace/trace"
)

//go:embed jitter.txt
var jitterData []byte

// dist is an empirical distribution sampled by inverse CDF.
type dist struct {
	vals []int64
	cum  []uint64 // cumulative counts
}

func (d *dist) sample(r *rand.Rand) int64 {
	x := r.Uint64N(d.cum[len(d.cum)-1])
	i, _ := slices.BinarySearch(d.cum, x+1)
	return d.vals[i]
}

// dists are the series of jitter.txt, read at the first use: every
// command of the iotrace binary would pay for them at its start
// otherwise (3,904 allocations, 0.3 ms, in record --preload's helper too).
var dists = sync.OnceValue(func() map[string]*dist {
	m := map[string]*dist{}
	sc := bufio.NewScanner(bytes.NewReader(jitterData))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || strings.HasPrefix(f[0], "#") {
			continue
		}
		v, err1 := strconv.ParseInt(f[1], 10, 64)
		c, err2 := strconv.ParseUint(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			panic(fmt.Sprintf("tracegen: bad jitter line %q", sc.Text()))
		}
		d := m[f[0]]
		if d == nil {
			d = &dist{}
			m[f[0]] = d
		}
		var prev uint64
		if n := len(d.cum); n > 0 {
			prev = d.cum[n-1]
		}
		d.vals = append(d.vals, v)
		d.cum = append(d.cum, prev+c)
	}
	for _, k := range []string{"wgap", "wdur", "rgap", "rdur"} {
		if m[k] == nil {
			panic("tracegen: jitter.txt lacks series " + k)
		}
	}
	return m
})

// clock advances a rank's time by measured gaps and durations.
type clock struct {
	r *rand.Rand
	t int64
}

// call sets e's Start and Dur for a call of direction dir; scale
// multiplies the duration (metadata calls are slower than 4 KiB I/O).
func (c *clock) call(e *trace.Event, write bool, scale int64) {
	ds := dists()
	g, d := ds["rgap"], ds["rdur"]
	if write {
		g, d = ds["wgap"], ds["wdur"]
	}
	c.t += g.sample(c.r)
	e.Start = c.t
	e.Dur = d.sample(c.r) * scale
	c.t += e.Dur
}

// stepper yields the events of one rank; it returns false at the end.
type stepper interface {
	next(e *trace.Event) bool
}

// Trace is a generated trace.
type Trace struct {
	name  string
	ranks int
	paths *trace.Paths
	mk    func(rank uint32, paths *trace.Paths) stepper
}

// Meta implements trace.Trace.
func (t *Trace) Meta() trace.Meta {
	return trace.Meta{Command: []string{"tracegen", t.name}, Clock: "CLOCK_MONOTONIC (generated)", Ranks: t.ranks, Creator: "iotrace tracegen"}
}

// Ranks implements trace.Trace.
func (t *Trace) Ranks() []uint32 {
	rs := make([]uint32, t.ranks)
	for i := range rs {
		rs[i] = uint32(i)
	}
	return rs
}

// Rank implements trace.Trace.
func (t *Trace) Rank(r uint32) (trace.Source, error) {
	if int(r) >= t.ranks {
		return nil, fmt.Errorf("no rank %d", r)
	}
	return &source{st: t.mk(r, t.paths), paths: t.paths, rank: r}, nil
}

// Paths returns the trace's path table.
func (t *Trace) Paths() *trace.Paths { return t.paths }

// Path implements trace.Trace.
func (t *Trace) Path(id trace.PathID) string { return t.paths.Lookup(id) }

// Close implements trace.Trace.
func (t *Trace) Close() error { return nil }

type source struct {
	st    stepper
	paths *trace.Paths
	rank  uint32
	done  bool
}

func (s *source) ReadEvents(evs []trace.Event) (int, error) {
	n := 0
	for n < len(evs) && !s.done {
		evs[n] = trace.Event{Rank: s.rank}
		if !s.st.next(&evs[n]) {
			s.done = true
			break
		}
		n++
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (s *source) Path(id trace.PathID) string { return s.paths.Lookup(id) }

func rng(seed uint64, rank uint32) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(rank)+0x9e3779b97f4a7c15))
}

// IOR is an IOR-like run: every rank opens its own file, writes calls
// sequential 4 KiB blocks with write(2), closes it, opens it again and
// reads the blocks back with read(2), then closes it.
func IOR(ranks, calls int, seed uint64) *Trace {
	return &Trace{name: "ior", ranks: ranks, paths: trace.NewPaths(), mk: func(r uint32, p *trace.Paths) stepper {
		return &iorStep{c: clock{r: rng(seed, r)}, calls: calls, path: p.Intern(fmt.Sprintf("/scratch/ior/testFile.%08d", r))}
	}}
}

type iorStep struct {
	c     clock
	calls int
	path  trace.PathID
	phase int
	i     int
}

func (s *iorStep) next(e *trace.Event) bool {
	const fd, bs = 3, 4096
	switch s.phase {
	case 0, 3:
		e.Op, e.Path, e.Ret, e.Mode = trace.OpOpen, s.path, fd, 0o644
		e.Flags = trace.OWronly | trace.OCreat | trace.OTrunc
		if s.phase == 3 {
			e.Flags, e.Mode = trace.ORdonly, 0
		}
		s.c.call(e, s.phase == 0, 8)
		s.phase++
		s.i = 0
	case 1, 4:
		e.Op, e.FD, e.Offset, e.Size, e.Ret = trace.OpWrite, fd, int64(s.i)*bs, bs, bs
		if s.phase == 4 {
			e.Op = trace.OpRead
		}
		s.c.call(e, s.phase == 1, 1)
		s.i++
		if s.i == s.calls {
			s.phase++
		}
	case 2, 5:
		e.Op, e.FD = trace.OpClose, fd
		s.c.call(e, s.phase == 2, 2)
		s.phase++
	default:
		return false
	}
	return true
}

// TwoPhase is a two-phase strided dump in the manner of the astro3d code:
// for each of dumps files, each of arrays arrays is redistributed with an
// MPI_Alltoall and then written by every rank as chunks chunk bytes long,
// strided over the ranks, each chunk with an lseek and a write. Rank 0
// first writes a 24-byte header.
func TwoPhase(ranks, dumps, arrays, chunksPerRank int, chunk int64, seed uint64) *Trace {
	return &Trace{name: "twophase", ranks: ranks, paths: trace.NewPaths(), mk: func(r uint32, p *trace.Paths) stepper {
		return &twoPhase{c: clock{r: rng(seed, r)}, ranks: ranks, rank: int64(r), dumps: dumps, arrays: arrays,
			chunks: chunksPerRank, chunk: chunk, paths: p}
	}}
}

type twoPhase struct {
	c                     clock
	ranks                 int
	rank                  int64
	dumps, arrays, chunks int
	chunk                 int64
	paths                 *trace.Paths
	d, a, j, step         int
	path                  trace.PathID
	pendingWrite          bool
	off                   int64
}

func (s *twoPhase) next(e *trace.Event) bool {
	const fd = 5
	const hdr = 24
	for {
		if s.d >= s.dumps {
			return false
		}
		switch s.step {
		case 0: // open
			s.path = s.paths.Intern(fmt.Sprintf("/scratch/astro3d/dump.%03d", s.d))
			e.Op, e.Path, e.Ret, e.Flags, e.Mode = trace.OpOpen, s.path, fd, trace.OWronly|trace.OCreat, 0o644
			s.c.call(e, true, 20)
			s.step = 1
			return true
		case 1: // header by rank 0
			s.step = 2
			if s.rank == 0 {
				e.Op, e.FD, e.Size, e.Ret = trace.OpWrite, fd, hdr, hdr
				s.c.call(e, true, 1)
				return true
			}
		case 2: // redistribution
			per := s.chunk * int64(s.chunks)
			e.Op, e.Bytes, e.Comm = trace.OpMPIAlltoall, per, trace.CommWorld
			s.c.call(e, false, 10)
			s.step, s.j = 3, 0
			return true
		case 3: // seek + write per chunk
			if s.j == s.chunks {
				s.a++
				s.step = 2
				if s.a == s.arrays {
					s.a, s.step = 0, 4
				}
				continue
			}
			if !s.pendingWrite {
				base := hdr + int64(s.a)*s.chunk*int64(s.chunks)*int64(s.ranks)
				s.off = base + (int64(s.j)*int64(s.ranks)+s.rank)*s.chunk
				e.Op, e.FD, e.Offset, e.Ret = trace.OpLseek, fd, s.off, s.off
				s.c.call(e, true, 1)
				s.pendingWrite = true
				return true
			}
			e.Op, e.FD, e.Offset, e.Size, e.Ret = trace.OpWrite, fd, s.off, s.chunk, s.chunk
			s.c.call(e, true, 1)
			s.pendingWrite = false
			s.j++
			return true
		case 4:
			e.Op, e.FD = trace.OpClose, fd
			s.c.call(e, true, 4)
			s.step = 0
			s.d++
			return true
		}
	}
}

// Random is uniformly random access: each rank opens one shared file and
// issues calls preads and pwrites (chosen at random) at 4 KiB-aligned
// offsets uniform over a 64 GiB file, of sizes uniform over 4 KiB–1 MiB in
// 4 KiB steps.
func Random(ranks, calls int, seed uint64) *Trace {
	return &Trace{name: "random", ranks: ranks, paths: trace.NewPaths(), mk: func(r uint32, p *trace.Paths) stepper {
		return &randStep{c: clock{r: rng(seed, r)}, calls: calls, path: p.Intern("/scratch/random/shared.dat")}
	}}
}

type randStep struct {
	c     clock
	calls int
	path  trace.PathID
	i     int
}

func (s *randStep) next(e *trace.Event) bool {
	const fd = 7
	switch {
	case s.i == 0:
		e.Op, e.Path, e.Ret, e.Flags = trace.OpOpen, s.path, fd, trace.ORdwr
		s.c.call(e, false, 8)
	case s.i <= s.calls:
		write := s.c.r.IntN(2) == 0
		e.Op, e.FD = trace.OpPread, fd
		if write {
			e.Op = trace.OpPwrite
		}
		e.Offset = int64(s.c.r.Uint64N(64<<30/4096)) * 4096
		e.Size = int64(1+s.c.r.IntN(256)) * 4096
		e.Ret = e.Size
		s.c.call(e, write, 1)
	case s.i == s.calls+1:
		e.Op, e.FD = trace.OpClose, fd
		s.c.call(e, false, 2)
	default:
		return false
	}
	s.i++
	return true
}
