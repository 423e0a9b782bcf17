package fold

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// gen makes random traces that a script can express: regular phases
// (loops with offsets in progressions, nested, rank-dependent), irregular
// ones (random offsets and sizes, short reads), metadata calls that fail,
// collective calls every rank makes alike, regions, and think time.
type gen struct {
	ranks  int
	seed   uint64
	phases int
	irreg  float64 // share of irregular phases
}

type rankGen struct {
	r     int
	rng   *rand.Rand // this rank's randomness
	paths *trace.Paths
	evs   []trace.Event
	now   int64
	think int64
	nfd   int32
	known map[string]int64
	mpi   int32
}

func (g *rankGen) call(e trace.Event, dur int64) {
	e.Rank = uint32(g.r)
	g.now += g.think
	if g.think > 0 && g.rng.IntN(4) == 0 {
		g.now += g.rng.Int64N(g.think)
	}
	e.Start, e.Dur = g.now, dur
	g.now += dur
	g.evs = append(g.evs, e)
}

func (g *rankGen) open(path string, op trace.Op, flags uint32) int32 {
	g.nfd++
	// The lowest free descriptor, as a kernel gives it (every phase
	// closes what it opens): a script's descriptors are the trace's.
	fd := int32(3)
	var mode uint32
	if flags&trace.OCreat != 0 {
		mode = 0o644
		if g.rng.IntN(5) == 0 {
			mode = 0o600
		}
	}
	id := g.paths.Intern(path)
	g.call(trace.Event{Op: op, Path: id, Flags: flags, Mode: mode, Ret: int64(fd), FD: fd}, 2000)
	if flags&trace.OTrunc != 0 {
		g.known[path] = 0
	}
	return fd
}

func (g *rankGen) grow(path string, end int64) {
	if end > g.known[path] {
		g.known[path] = end
	}
}

func (gn gen) trace() *trace.MemTrace {
	mt := trace.NewMemTrace()
	mt.M.Ranks = gn.ranks
	rgs := make([]*rankGen, gn.ranks)
	for r := range rgs {
		rgs[r] = &rankGen{r: r, rng: rand.New(rand.NewPCG(gn.seed, uint64(r)+1)), paths: mt.Paths,
			known: map[string]int64{}}
	}
	shared := rand.New(rand.NewPCG(gn.seed, 0))
	depth := 0
	for ph := 0; ph < gn.phases; ph++ {
		kind := shared.IntN(14)
		irregular := shared.Float64() < gn.irreg
		n := 1 + shared.IntN(30)
		bs := int64(1+shared.IntN(8)) * 1024
		think := int64(shared.IntN(3)) * 50_000
		rankDep := shared.IntN(2) == 0
		opOpen := []trace.Op{trace.OpOpen, trace.OpOpenat}[shared.IntN(2)]
		root := int32(shared.IntN(gn.ranks))
		begin := kind == 4 && depth < 2 && (depth == 0 || shared.IntN(2) == 0)
		if begin {
			depth++
		}
		for _, g := range rgs {
			g.think = think
			rn := n
			if rankDep {
				rn = n + g.r
			}
			switch kind {
			case 0: // sequential writes then reads on one's own file
				p := fmt.Sprintf("/scratch/run/out.%04d", g.r)
				fd := g.open(p, opOpen, trace.ORdwr|trace.OCreat|trace.OTrunc)
				var pos int64
				for i := 0; i < rn; i++ {
					size := bs
					if irregular {
						size = 1 + g.rng.Int64N(bs)
					}
					g.call(trace.Event{Op: trace.OpWrite, FD: fd, Path: g.paths.Intern(p), Offset: pos, Size: size, Ret: size}, 3000)
					pos += size
					g.grow(p, pos)
				}
				g.call(trace.Event{Op: trace.OpLseek, FD: fd, Path: g.paths.Intern(p), Ret: 0}, 500)
				pos = 0
				for i := 0; i < rn; i++ {
					ret := bs
					if irregular && g.rng.IntN(3) == 0 {
						ret = g.rng.Int64N(bs)
					}
					g.call(trace.Event{Op: trace.OpRead, FD: fd, Path: g.paths.Intern(p), Offset: pos, Size: bs, Ret: ret}, 3000)
					pos += ret
				}
				g.call(trace.Event{Op: trace.OpClose, FD: fd, Path: g.paths.Intern(p)}, 1000)
			case 1: // nested strided pwrite into a shared file
				p := "/scratch/run/shared.dat"
				fd := g.open(p, opOpen, trace.OWronly|trace.OCreat)
				for a := 0; a < 3; a++ {
					for b := 0; b < rn; b++ {
						off := int64(a)*1<<20 + int64(b)*int64(gn.ranks)*bs + int64(g.r)*bs
						if irregular {
							off = g.rng.Int64N(1 << 30)
						}
						g.call(trace.Event{Op: trace.OpPwrite, FD: fd, Path: g.paths.Intern(p), Offset: off, Size: bs, Ret: bs}, 3000)
						g.grow(p, off+bs)
					}
				}
				g.call(trace.Event{Op: trace.OpClose, FD: fd, Path: g.paths.Intern(p)}, 1000)
			case 2: // metadata, some failing
				p := fmt.Sprintf("/scratch/run/meta.%d", g.rng.IntN(3))
				id := g.paths.Intern(p)
				g.call(trace.Event{Op: trace.OpStat, Path: id, Ret: -2}, 1000)
				g.call(trace.Event{Op: trace.OpAccess, Path: id, Mode: 4, Ret: -2}, 1000)
				g.call(trace.Event{Op: trace.OpMkdir, Path: g.paths.Intern(p + ".d"), Mode: 0o755}, 1000)
				g.call(trace.Event{Op: trace.OpRmdir, Path: g.paths.Intern(p + ".d")}, 1000)
				g.call(trace.Event{Op: trace.OpOpenat, Path: id, Flags: trace.ORdonly, Ret: -2}, 1000)
			case 3: // collective calls
				for i := 0; i < n; i++ {
					g.call(trace.Event{Op: trace.OpMPIBarrier}, 1000)
					g.call(trace.Event{Op: trace.OpMPIBcast, Peer: root, Bytes: 8}, 1000)
					g.call(trace.Event{Op: trace.OpMPIAllreduce, Bytes: int64(8 * (i + 1))}, 1000)
				}
			case 4: // a region begins or ends
				if begin {
					g.call(trace.Event{Op: trace.OpRegionBegin, Path: g.paths.Intern(fmt.Sprintf("region %d", depth))}, 0)
				} else if depth > 0 {
					g.call(trace.Event{Op: trace.OpRegionEnd, Path: g.paths.Intern(fmt.Sprintf("region %d", depth))}, 0)
				}
			case 5: // rank 0 alone writes a log line
				if g.r == 0 {
					p := "/scratch/run/log"
					fd := g.open(p, trace.OpOpen, trace.OWronly|trace.OCreat|trace.OAppend)
					for i := 0; i < rn; i++ {
						off := g.known[p]
						g.call(trace.Event{Op: trace.OpWrite, FD: fd, Path: g.paths.Intern(p), Offset: off, Size: 80, Ret: 80}, 2000)
						g.grow(p, off+80)
					}
					g.call(trace.Event{Op: trace.OpClose, FD: fd, Path: g.paths.Intern(p)}, 1000)
				}
			case 6: // implicit reads: open, pread, close
				p := fmt.Sprintf("/scratch/run/in.%d", g.r%2)
				for i := 0; i < rn; i++ {
					fd := g.open(p, trace.OpOpen, trace.ORdonly)
					off := int64(i) * bs
					if irregular {
						off = g.rng.Int64N(1 << 20)
					}
					g.call(trace.Event{Op: trace.OpPread, FD: fd, Path: g.paths.Intern(p), Offset: off, Size: bs, Ret: bs}, 2000)
					g.call(trace.Event{Op: trace.OpClose, FD: fd, Path: g.paths.Intern(p)}, 1000)
				}
			case 7: // seeks from the end of a file of unknown size, vector calls
				p := fmt.Sprintf("/scratch/run/vec.%d", g.r)
				fd := g.open(p, opOpen, trace.ORdwr|trace.OCreat)
				end := 1000 + g.rng.Int64N(1000)
				g.call(trace.Event{Op: trace.OpLseek, FD: fd, Path: g.paths.Intern(p), Offset: 0, Whence: 2, Ret: end}, 500)
				pos := end
				for i := 0; i < rn; i++ {
					g.call(trace.Event{Op: trace.OpWritev, FD: fd, Path: g.paths.Intern(p), Offset: pos, Size: 300, Count: 2, Ret: 300}, 2000)
					pos += 300
					g.grow(p, pos)
				}
				g.call(trace.Event{Op: trace.OpFsync, FD: fd, Path: g.paths.Intern(p)}, 5000)
				g.call(trace.Event{Op: trace.OpClose, FD: fd, Path: g.paths.Intern(p)}, 1000)
			case 8: // MPI-IO: strided collective writes through a view
				p := "/scratch/run/mpi.dat"
				id := g.paths.Intern(p)
				g.mpi++
				h := 1 + g.mpi%3
				g.call(trace.Event{Op: trace.OpMPIFileOpen, Path: id, FD: h, Flags: trace.MPIModeCreate | trace.MPIModeWronly}, 1000)
				g.call(trace.Event{Op: trace.OpMPIFileSetView, Path: id, FD: h, Offset: int64(g.r) * bs, Size: bs, Stride: int64(gn.ranks) * bs}, 1000)
				var pos int64
				for i := 0; i < n; i++ {
					g.call(trace.Event{Op: trace.OpMPIFileWriteAll, Path: id, FD: h, Offset: pos, Size: bs, Count: int32(bs), Ret: bs}, 3000)
					pos += bs
				}
				g.call(trace.Event{Op: trace.OpMPIFileClose, Path: id, FD: h}, 1000)
			case 9: // send to the next rank, receive from the previous
				for i := 0; i < n; i++ {
					g.call(trace.Event{Op: trace.OpMPISend, Peer: int32((g.r + 1) % gn.ranks), Tag: int32(i), Bytes: 64}, 1000)
					g.call(trace.Event{Op: trace.OpMPIRecv, Peer: int32((g.r + gn.ranks - 1) % gn.ranks), Tag: int32(i), Bytes: 64}, 1000)
				}
			case 10: // create, rename, delete files named by number
				for i := 0; i < rn; i++ {
					a := fmt.Sprintf("/scratch/run/t%d.%03d", g.r, i)
					b := fmt.Sprintf("/scratch/run/u%d.%03d", g.r, i)
					fd := g.open(a, trace.OpCreat, trace.OWronly|trace.OCreat|trace.OTrunc)
					g.call(trace.Event{Op: trace.OpClose, FD: fd, Path: g.paths.Intern(a)}, 1000)
					g.call(trace.Event{Op: trace.OpRename, Path: g.paths.Intern(a), Path2: g.paths.Intern(b)}, 1000)
					g.call(trace.Event{Op: trace.OpUnlinkat, Path: g.paths.Intern(b)}, 1000)
				}
			case 11: // think time alone
				g.now += 1_000_000
			case 13: // POSIX calls an MPI library made inside MPI-IO calls
				p := fmt.Sprintf("/scratch/run/mpiio.%d", g.r)
				id := g.paths.Intern(p)
				in := trace.InMPIIO
				fd := g.open(p, trace.OpOpenat, trace.ORdwr|trace.OCreat|in)
				for i := 0; i < rn; i++ {
					g.call(trace.Event{Op: trace.OpPwrite, FD: fd, Path: id, Offset: int64(i) * bs, Size: bs, Ret: bs, Flags: in}, 2000)
				}
				g.call(trace.Event{Op: trace.OpLseek, FD: fd, Path: id, Whence: 2, Ret: int64(rn) * bs, Flags: in}, 500)
				g.call(trace.Event{Op: trace.OpFsync, FD: fd, Path: id, Flags: in}, 2000)
				g.call(trace.Event{Op: trace.OpClose, FD: fd, Path: id, Flags: in}, 1000)
				g.call(trace.Event{Op: trace.OpStat, Path: id, Flags: in}, 1000)
				g.call(trace.Event{Op: trace.OpUnlink, Path: id, Flags: in}, 1000)
			case 12: // the same block on files of other names, sizes and counts
				for f, name := range []string{"alpha", "beta", "gamma", "delta"}[:1+n%4] {
					p := fmt.Sprintf("/scratch/run/%s.%d", name, g.r)
					fd := g.open(p, opOpen, trace.OWronly|trace.OCreat|trace.OTrunc)
					size := bs * int64(1+f%2)
					for i := 0; i < 1+(f*3)%4; i++ {
						g.call(trace.Event{Op: trace.OpPwrite, FD: fd, Path: g.paths.Intern(p), Offset: int64(i) * size, Size: size, Ret: size}, 2000)
					}
					g.call(trace.Event{Op: trace.OpClose, FD: fd, Path: g.paths.Intern(p)}, 1000)
				}
			}
		}
		if kind == 4 && !begin && depth > 0 {
			depth--
		}
	}
	for ; depth > 0; depth-- {
		for _, g := range rgs {
			g.call(trace.Event{Op: trace.OpRegionEnd, Path: g.paths.Intern(fmt.Sprintf("region %d", depth))}, 0)
		}
	}
	for _, g := range rgs {
		mt.Add(g.evs...)
	}
	return mt
}

// TestPropertyRandomTraces converts random regular and irregular traces
// and checks that the scripts make exactly their calls.
func TestPropertyRandomTraces(t *testing.T) {
	n := 60
	if testing.Short() {
		n = 15
	}
	if s := os.Getenv("FOLD_SEEDS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	if false {
		n = 15
	}
	for i := 0; i < n; i++ {
		gn := gen{ranks: 1 + i%7, seed: uint64(i), phases: 5 + i%40, irreg: float64(i%3) / 2}
		tr := gn.trace()
		out, res := convertTrace(t, tr, Options{Window: 8 + i%64})
		var events int64
		for _, evs := range tr.Events {
			events += int64(len(evs))
		}
		if res.Events != events {
			t.Errorf("seed %d: %d events converted, the trace has %d", i, res.Events, events)
		}
		if i < 3 {
			t.Logf("seed %d: %d events → %d lines\n%s", i, events, lines(out), out)
		}
	}
}
