package recorder

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/state"
)

// Trace is a Recorder trace directory read as an iotrace trace.
type Trace struct {
	dir   string
	h     *header
	ranks []*rankFiles
	paths *trace.Paths
	comms map[string]*comm
	mu    sync.Mutex
	marks map[string]int64 // calls kept as marks, by function
	odd   map[string]int64 // notes: what could not be read exactly, counted
}

// comm is a communicator Recorder named.
type comm struct {
	id      uint32
	members []int // world ranks, in order (nil: every rank)
	world   bool  // a communicator of every rank, replayed as MPI_COMM_WORLD
}

// Open reads the trace directory dir.
func Open(dir string) (*Trace, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s: not a directory (a Recorder trace is a directory: VERSION, recorder.mt, RANK.cst, RANK.cfg, RANK.ts)", dir)
	}
	return Read(os.DirFS(dir), dir)
}

// Sniff reports whether dir looks like a Recorder trace directory: it
// holds VERSION and recorder.mt.
func Sniff(dir string) bool {
	for _, f := range []string{"VERSION", "recorder.mt"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || !st.Mode().IsRegular() {
			return false
		}
	}
	return true
}

// Read reads a trace directory from fsys; dir names it in errors.
func Read(fsys fs.FS, dir string) (*Trace, error) {
	h, err := readHeader(fsys, dir)
	if err != nil {
		return nil, err
	}
	t := &Trace{dir: dir, h: h, paths: trace.NewPaths(), comms: map[string]*comm{},
		marks: map[string]int64{}, odd: map[string]int64{}}
	for r := range h.ranks {
		rf, err := readRank(fsys, dir, h, r)
		if err != nil {
			return nil, err
		}
		t.ranks = append(t.ranks, rf)
	}
	t.findComms()
	return t, nil
}

// newCommArg is the argument that names the communicator a call makes.
var newCommArg = map[string]int{
	"MPI_Comm_split": 3, "MPI_Comm_split_type": 4, "MPI_Comm_create": 2, "MPI_Comm_dup": 1,
	"MPI_Cart_create": 5, "MPI_Cart_sub": 2,
}

// findComms learns the communicators the calls made, and their members:
// the ranks that made one of a name (Recorder names one alike on every
// member).
func (t *Trace) findComms() {
	members := map[string][]int{}
	for r, rf := range t.ranks {
		for i := range rf.sigs {
			s := &rf.sigs[i]
			if k, ok := newCommArg[t.h.name(s)]; ok && k < len(s.args) {
				name := s.args[k]
				if !slices.Contains(members[name], r) {
					members[name] = append(members[name], r)
				}
			}
		}
	}
	for name, m := range members {
		sort.Ints(m)
		if len(m) == len(t.ranks) {
			// every rank: MPI_COMM_WORLD for a replay (which meets at the
			// world's collective calls); the call that made it is a mark
			t.comms[name] = &comm{id: trace.CommWorld, world: true}
			continue
		}
		h := fnv.New32a()
		h.Write([]byte(name))
		t.comms[name] = &comm{id: script.CommID(trace.CommWorld, h.Sum32(), m), members: m}
	}
}

// commOf returns the id and members of a communicator argument.
func (t *Trace) commOf(name string, rank int) (uint32, []int) {
	switch name {
	case "MPI_COMM_WORLD":
		return trace.CommWorld, nil
	case "MPI_COMM_SELF":
		return trace.CommSelf, []int{rank}
	}
	if c := t.comms[name]; c != nil {
		return c.id, c.members
	}
	t.note("communicators Recorder names but no recorded call made (taken as MPI_COMM_WORLD)")
	return trace.CommWorld, nil
}

func (t *Trace) note(what string) {
	t.mu.Lock()
	t.odd[what]++
	t.mu.Unlock()
}

// Meta describes the trace.
func (t *Trace) Meta() trace.Meta {
	return trace.Meta{Creator: "iotrace convert --from recorder", Clock: "Recorder", Ranks: t.h.ranks,
		Epoch: int64(t.h.startTS * 1e9)}
}

// Ranks lists the ranks.
func (t *Trace) Ranks() []uint32 {
	out := make([]uint32, len(t.ranks))
	for i := range out {
		out[i] = uint32(i)
	}
	return out
}

// Path resolves a path id.
func (t *Trace) Path(id trace.PathID) string { return t.paths.Lookup(id) }

// Close does nothing: the files were read whole.
func (t *Trace) Close() error { return nil }

// Notes are what the conversion could not express, counted over the
// calls (from the call signatures and their counts: no need to read the
// events first).
func (t *Trace) Notes() []string {
	scratch := &Trace{dir: t.dir, h: t.h, ranks: t.ranks, paths: trace.NewPaths(), comms: t.comms,
		marks: map[string]int64{}, odd: map[string]int64{}}
	for r, rf := range t.ranks {
		src, _ := scratch.Rank(uint32(r))
		s := src.(*source)
		for i := range rf.sigs {
			m, o := maps.Clone(scratch.marks), maps.Clone(scratch.odd)
			var e trace.Event
			s.call(&e, &rf.sigs[i])
			// the call counted once: count it as often as Recorder did
			for k, v := range scratch.marks {
				scratch.marks[k] = m[k] + (v-m[k])*rf.sigs[i].count
			}
			for k, v := range scratch.odd {
				scratch.odd[k] = o[k] + (v-o[k])*rf.sigs[i].count
			}
		}
	}
	var out []string
	var marks []string
	for fn, n := range scratch.marks {
		if n > 0 {
			marks = append(marks, fmt.Sprintf("%s %d", fn, n))
		}
	}
	slices.Sort(marks)
	if len(marks) > 0 {
		out = append(out, "calls iotrace has no op for, kept as marks labelled with their name: "+strings.Join(marks, ", "))
	}
	var odd []string
	for what, n := range scratch.odd {
		if n > 0 {
			odd = append(odd, fmt.Sprintf("%d %s", n, what))
		}
	}
	slices.Sort(odd)
	return append(out, odd...)
}

// Summary is Recorder's own count of the calls of a trace: per
// function, the calls (the count field of every call signature) and the
// bytes of the reads and writes (count × the size argument), computed
// from the call signature tables alone, without the grammar or the
// timestamps.
type Summary struct {
	Calls map[string]int64
	Bytes map[string]int64
}

// Summary returns Recorder's count of the calls.
func (t *Trace) Summary() Summary {
	s := Summary{Calls: map[string]int64{}, Bytes: map[string]int64{}}
	for r, rf := range t.ranks {
		for i := range rf.sigs {
			sg := &rf.sigs[i]
			fn := t.h.name(sg)
			s.Calls[fn] += sg.count
			if n := t.dataBytes(fn, sg.args, r); n > 0 {
				s.Bytes[fn] += sg.count * n
			}
		}
	}
	return s
}

// dataBytes is the bytes a read or write call asks for, from its
// arguments.
func (t *Trace) dataBytes(fn string, args []string, rank int) int64 {
	a := func(i int) int64 { return argInt(args, i) }
	switch fn {
	case "read", "write", "pread", "pread64", "pwrite", "pwrite64":
		return a(2)
	case "fread", "fwrite":
		return a(1) * a(2)
	}
	if strings.HasPrefix(fn, "MPI_File_") {
		if k, ok := mpiioData[fn]; ok {
			return a(k.count) * typeSize(arg(args, k.count+1))
		}
	}
	return 0
}

func arg(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}

func argInt(args []string, i int) int64 {
	v, err := strconv.ParseInt(arg(args, i), 0, 64)
	if err != nil {
		return 0
	}
	return v
}

// typeSize is the size of an MPI datatype Recorder names.
func typeSize(name string) int64 {
	switch name {
	case "MPI_BYTE", "MPI_CHAR", "MPI_SIGNED_CHAR", "MPI_UNSIGNED_CHAR", "MPI_PACKED", "MPI_CHARACTER", "MPI_INT8_T", "MPI_UINT8_T":
		return 1
	case "MPI_SHORT", "MPI_UNSIGNED_SHORT", "MPI_INT16_T", "MPI_UINT16_T":
		return 2
	case "MPI_INT", "MPI_UNSIGNED", "MPI_FLOAT", "MPI_INTEGER", "MPI_REAL", "MPI_INT32_T", "MPI_UINT32_T", "MPI_INTEGER4", "MPI_REAL4":
		return 4
	case "MPI_LONG", "MPI_UNSIGNED_LONG", "MPI_LONG_LONG_INT", "MPI_LONG_LONG", "MPI_UNSIGNED_LONG_LONG", "MPI_DOUBLE",
		"MPI_DOUBLE_PRECISION", "MPI_INT64_T", "MPI_UINT64_T", "MPI_INTEGER8", "MPI_REAL8", "MPI_OFFSET", "MPI_AINT", "MPI_COUNT":
		return 8
	case "MPI_LONG_DOUBLE", "MPI_DOUBLE_COMPLEX", "MPI_C_DOUBLE_COMPLEX":
		return 16
	}
	return 0
}

// mpiioData: the index of the count argument of MPI-IO data calls (the
// datatype follows it), whether they take an offset (at index 1), and
// their op.
type mpiioCall struct {
	count int
	op    trace.Op
}

var mpiioData = map[string]mpiioCall{
	"MPI_File_read": {2, trace.OpMPIFileRead}, "MPI_File_write": {2, trace.OpMPIFileWrite},
	"MPI_File_read_all": {2, trace.OpMPIFileReadAll}, "MPI_File_write_all": {2, trace.OpMPIFileWriteAll},
	"MPI_File_read_all_begin": {2, trace.OpMPIFileReadAll}, "MPI_File_write_all_begin": {2, trace.OpMPIFileWriteAll},
	"MPI_File_read_shared": {2, trace.OpMPIFileReadShared}, "MPI_File_write_shared": {2, trace.OpMPIFileWriteShared},
	"MPI_File_read_ordered": {2, trace.OpMPIFileReadOrdered}, "MPI_File_write_ordered": {2, trace.OpMPIFileWriteOrdered},
	"MPI_File_read_ordered_begin": {2, trace.OpMPIFileReadOrdered}, "MPI_File_write_ordered_begin": {2, trace.OpMPIFileWriteOrdered},
	"MPI_File_iread": {2, trace.OpMPIFileIread}, "MPI_File_iwrite": {2, trace.OpMPIFileIwrite},
	"MPI_File_iread_shared": {2, trace.OpMPIFileReadShared}, "MPI_File_iwrite_shared": {2, trace.OpMPIFileWriteShared},
	"MPI_File_read_at": {3, trace.OpMPIFileReadAt}, "MPI_File_write_at": {3, trace.OpMPIFileWriteAt},
	"MPI_File_read_at_all": {3, trace.OpMPIFileReadAtAll}, "MPI_File_write_at_all": {3, trace.OpMPIFileWriteAtAll},
	"MPI_File_read_at_all_begin": {3, trace.OpMPIFileReadAtAll}, "MPI_File_write_at_all_begin": {3, trace.OpMPIFileWriteAtAll},
	"MPI_File_iread_at": {3, trace.OpMPIFileIreadAt}, "MPI_File_iwrite_at": {3, trace.OpMPIFileIwriteAt},
}

// Rank returns a stream of rank r's calls, the grammar expanded as it is
// read.
func (t *Trace) Rank(r uint32) (trace.Source, error) {
	if int(r) >= len(t.ranks) {
		return nil, fmt.Errorf("%s: no rank %d", t.dir, r)
	}
	rf := t.ranks[r]
	s := &source{t: t, rf: rf, rank: int(r), follow: state.New[struct{}, struct{}](nil),
		threads: map[uint64]uint32{}, fhs: map[string]int32{}}
	s.tick = t.h.resolution * 1e9
	s.stack = []frame{{body: rf.rules[-1]}}
	return s, nil
}

type frame struct {
	body []symbol
	i    int   // symbol
	rep  int32 // repetitions done of it
}

// source expands a rank's grammar into events.
type source struct {
	t       *Trace
	rf      *rankFiles
	rank    int
	stack   []frame
	ts      int    // next timestamp pair
	prev    uint64 // ticks of the start of the call before
	tick    float64
	follow  *state.Follower[struct{}, struct{}]
	threads map[uint64]uint32
	fhs     map[string]int32 // MPI file handles by Recorder's name
}

func (s *source) Path(id trace.PathID) string { return s.t.paths.Lookup(id) }

// next returns the next call signature, or nil at the end.
func (s *source) next() *sig {
	for len(s.stack) > 0 {
		f := &s.stack[len(s.stack)-1]
		if f.i >= len(f.body) {
			s.stack = s.stack[:len(s.stack)-1]
			continue
		}
		sym := f.body[f.i]
		if f.rep >= sym.rep || (sym.val < 0 && s.rf.made[sym.val] == 0) {
			// done, or a rule that makes no call (however often)
			f.i++
			f.rep = 0
			continue
		}
		f.rep++
		if sym.val >= 0 {
			return &s.rf.sigs[sym.val]
		}
		// a rule: its calls, then back here (checked acyclic and bounded)
		s.stack = append(s.stack, frame{body: s.rf.rules[sym.val]})
	}
	return nil
}

func (s *source) ReadEvents(evs []trace.Event) (int, error) {
	n := 0
	for n < len(evs) {
		sg := s.next()
		if sg == nil {
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		}
		// timestamps: checked to be there for every call
		t0 := binary.LittleEndian.Uint32(s.rf.ts[s.ts*8:])
		t1 := binary.LittleEndian.Uint32(s.rf.ts[s.ts*8+4:])
		s.ts++
		start := s.prev + uint64(t0)
		end := s.prev + uint64(t1)
		s.prev = start
		e := &evs[n]
		*e = trace.Event{Rank: uint32(s.rank), Start: int64(math.Round(float64(start) * s.tick))}
		if end > start {
			e.Dur = int64(math.Round(float64(end-start) * s.tick))
		}
		th, ok := s.threads[sg.thread]
		if !ok {
			th = uint32(len(s.threads))
			s.threads[sg.thread] = th
		}
		e.Thread = th
		s.call(e, sg)
		s.follow.Apply(e)
		n++
	}
	return n, nil
}
