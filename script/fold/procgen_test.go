package fold

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/trace"
)

// procGen makes the trace of a random program of one rank with a small
// model of a kernel: processes that fork, exec and exit, threads,
// descriptor tables with dup, dup2 onto open descriptors, fcntl,
// close_range, close-on-exec, the standard streams inherited, and data
// calls at the positions the kernel keeps. With events, the trace has the
// fork, clone, exec, exit and inherit events captures record now;
// without, the older captures' trace: the same calls, none of those.
type procGen struct {
	rng    *rand.Rand
	m      *trace.MemTrace
	events bool
	now    int64
	procs  []*kproc
	next   uint32 // the next thread index
	sizes  map[string]int64
}

type kdesc struct {
	path   string
	pos    int64
	append bool
}

type kslot struct {
	d       *kdesc
	cloexec bool
}

type kproc struct {
	threads []uint32
	fds     map[int32]kslot
}

func (g *procGen) add(e trace.Event) {
	e.Start, e.Dur = g.now, 500
	g.now += 1000
	g.m.Add(e)
}

func (g *procGen) lowest(p *kproc) int32 {
	for fd := int32(0); ; fd++ {
		if _, ok := p.fds[fd]; !ok {
			return fd
		}
	}
}

func (g *procGen) pick(p *kproc) (int32, bool) {
	if len(p.fds) == 0 {
		return 0, false
	}
	fds := make([]int32, 0, len(p.fds))
	for fd := range p.fds {
		fds = append(fds, fd)
	}
	// Deterministic order: the map's is not.
	for i := range fds {
		for j := i + 1; j < len(fds); j++ {
			if fds[j] < fds[i] {
				fds[i], fds[j] = fds[j], fds[i]
			}
		}
	}
	return fds[g.rng.IntN(len(fds))], true
}

func (g *procGen) step(p *kproc) {
	th := p.threads[g.rng.IntN(len(p.threads))]
	id := func(s string) trace.PathID { return g.m.Paths.Intern(s) }
	switch k := g.rng.IntN(20); {
	case k < 4: // open
		path := fmt.Sprintf("/w/f%d", g.rng.IntN(4))
		flags := []uint32{trace.OWronly | trace.OCreat | trace.OTrunc, trace.ORdwr, trace.OWronly | trace.OCreat | trace.OAppend,
			trace.ORdonly | 0x80000}[g.rng.IntN(4)]
		if _, ok := g.sizes[path]; !ok {
			flags |= trace.OCreat | trace.OTrunc
		}
		fd := g.lowest(p)
		if g.rng.IntN(5) == 0 {
			fd += int32(g.rng.IntN(3)) // a descriptor the trace does not show is open below
			for {
				if _, ok := p.fds[fd]; !ok {
					break
				}
				fd++
			}
		}
		var mode uint32
		if flags&trace.OCreat != 0 {
			mode = 0o644
		}
		d := &kdesc{path: path, append: flags&trace.OAppend != 0}
		if flags&trace.OTrunc != 0 {
			g.sizes[path] = 0
		}
		p.fds[fd] = kslot{d: d, cloexec: flags&0x80000 != 0}
		g.add(trace.Event{Op: trace.OpOpenat, Thread: th, Path: id(path), Flags: flags, Mode: mode, Ret: int64(fd), FD: fd})
	case k < 9: // a data call
		fd, ok := g.pick(p)
		if !ok {
			return
		}
		d := p.fds[fd].d
		size := int64(1 + g.rng.IntN(100))
		switch g.rng.IntN(3) {
		case 0:
			off := d.pos
			if d.append {
				off = g.sizes[d.path]
			}
			g.add(trace.Event{Op: trace.OpWrite, Thread: th, FD: fd, Path: id(d.path), Offset: off, Size: size, Ret: size})
			d.pos = off + size
			g.sizes[d.path] = max(g.sizes[d.path], d.pos)
		case 1:
			ret := max(min(size, g.sizes[d.path]-d.pos), 0)
			g.add(trace.Event{Op: trace.OpRead, Thread: th, FD: fd, Path: id(d.path), Offset: d.pos, Size: size, Ret: ret})
			d.pos += ret
		default:
			off := int64(g.rng.IntN(200))
			g.add(trace.Event{Op: trace.OpPwrite, Thread: th, FD: fd, Path: id(d.path), Offset: off, Size: size, Ret: size})
			g.sizes[d.path] = max(g.sizes[d.path], off+size)
		}
	case k < 11: // dup, dup2 (onto an open descriptor or not), fcntl F_DUPFD
		fd, ok := g.pick(p)
		if !ok {
			return
		}
		s := p.fds[fd]
		var nfd int32
		op := []trace.Op{trace.OpDup, trace.OpDup2, trace.OpFcntl}[g.rng.IntN(3)]
		e := trace.Event{Op: op, Thread: th, FD: fd, Path: id(s.d.path)}
		switch op {
		case trace.OpDup:
			nfd = g.lowest(p)
		case trace.OpDup2:
			nfd = int32(g.rng.IntN(8))
		default:
			e.Size = 10
			for nfd = 10; ; nfd++ {
				if _, ok := p.fds[nfd]; !ok {
					break
				}
			}
		}
		e.Ret = int64(nfd)
		p.fds[nfd] = kslot{d: s.d}
		g.add(e)
	case k < 13: // close (sometimes of a descriptor that is not open)
		fd, ok := g.pick(p)
		if !ok || g.rng.IntN(6) == 0 {
			g.add(trace.Event{Op: trace.OpClose, Thread: th, FD: 20 + int32(g.rng.IntN(3)), Ret: -9})
			return
		}
		g.add(trace.Event{Op: trace.OpClose, Thread: th, FD: fd, Path: id(p.fds[fd].d.path)})
		delete(p.fds, fd)
	case k == 13: // fcntl F_SETFD, F_SETFL
		fd, ok := g.pick(p)
		if !ok {
			return
		}
		s := p.fds[fd]
		if g.rng.IntN(2) == 0 {
			s.cloexec = true
			p.fds[fd] = s
			g.add(trace.Event{Op: trace.OpFcntl, Thread: th, FD: fd, Path: id(s.d.path), Flags: trace.FSetfd, Size: 1})
		} else {
			s.d.append = !s.d.append
			arg := int64(0)
			if s.d.append {
				arg = trace.OAppend
			}
			g.add(trace.Event{Op: trace.OpFcntl, Thread: th, FD: fd, Path: id(s.d.path), Flags: trace.FSetfl, Size: arg})
		}
	case k == 14: // close_range
		first := int32(3 + g.rng.IntN(5))
		last := int64(first) + int64(g.rng.IntN(4))
		g.add(trace.Event{Op: trace.OpCloseRange, Thread: th, FD: first, Size: last})
		for fd := range p.fds {
			if fd >= first && int64(fd) <= last {
				delete(p.fds, fd)
			}
		}
	case k < 17 && len(g.procs) < 4: // fork: the child runs a few calls and exits (or execs first)
		child := g.next
		g.next++
		c := &kproc{threads: []uint32{child}, fds: map[int32]kslot{}}
		for fd, s := range p.fds {
			c.fds[fd] = s
		}
		if g.events {
			g.add(trace.Event{Op: trace.OpFork, Thread: th, Ret: int64(child)})
		}
		g.procs = append(g.procs, c)
		for range 1 + g.rng.IntN(6) {
			g.step(c)
		}
		if g.rng.IntN(2) == 0 {
			if g.events {
				g.add(trace.Event{Op: trace.OpExec, Thread: child, Path: id("/bin/x")})
			}
			for fd, s := range c.fds {
				if s.cloexec {
					delete(c.fds, fd)
				}
			}
			for range g.rng.IntN(3) {
				g.step(c)
			}
		}
		if g.events {
			g.add(trace.Event{Op: trace.OpExit, Thread: child})
		}
		g.procs = g.procs[:len(g.procs)-1]
	case k == 17 && g.events: // a thread
		t := g.next
		g.next++
		g.add(trace.Event{Op: trace.OpClone, Thread: th, Ret: int64(t)})
		p.threads = append(p.threads, t)
	}
}

func (g *procGen) trace() *trace.MemTrace {
	p := &kproc{threads: []uint32{0}, fds: map[int32]kslot{}}
	g.procs = []*kproc{p}
	g.next = 1
	for fd, path := range []string{"/dev/null", "/dev/pts/0", "/dev/pts/0"} {
		d := &kdesc{path: path}
		p.fds[int32(fd)] = kslot{d: d}
		if g.events {
			g.add(trace.Event{Op: trace.OpInherit, FD: int32(fd), Ret: int64(fd), Path: g.m.Paths.Intern(path), Flags: uint32(min(fd, 1))})
		}
	}
	for range 60 {
		g.step(p)
	}
	return g.m
}

// TestPropertyProcesses converts random programs of processes and
// descriptors, with and without the process events, and checks that the
// scripts make exactly their calls.
func TestPropertyProcesses(t *testing.T) {
	n := 150
	if testing.Short() {
		n = 30
	}
	if s := os.Getenv("PROC_SEEDS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	for i := range n {
		g := &procGen{rng: rand.New(rand.NewPCG(uint64(i), 7)), m: trace.NewMemTrace(), events: i%2 == 0, sizes: map[string]int64{}}
		tr := g.trace()
		res, err := Convert(tr, Options{})
		if err != nil {
			t.Errorf("seed %d: %v", i, err)
			continue
		}
		out := formatScript(res)
		if err := Verify(tr, "out.iop", out, res.Ranks); err != nil {
			t.Errorf("seed %d: %v\n%s", i, err, numbered(out))
		}
	}
}

func formatScript(res *Result) []byte { return script.Format(res.File) }
