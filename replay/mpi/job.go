//go:build mpi

package mpi

/*
#include "cmpi.h"
*/
import "C"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/bits"
	"os"
	"runtime"
	"slices"

	gompi "github.com/sbromberger/gompi"

	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/trace"
)

// Job is this process's part of a replay spread over the processes of an
// MPI job. The trace ranks are spread block-wise: with n ranks and P
// processes, process p runs ranks[p·n/P : (p+1)·n/P] (P may be above n:
// the processes past the ranks run none but take part in the setup).
type Job struct {
	*Proc
	Ranks []uint32 // every trace rank of the replay, sorted
	lo    []int    // process p runs Ranks[lo[p]:lo[p+1]]

	comms map[uint32]*commInfo
	ctl   C.MPI_Comm // the engine's rounds (a duplicate of MPI_COMM_WORLD)

	// Messages between processes carry the sender's and the receiver's
	// index in their process's block, and the tag, in the MPI tag.
	idxBits, tagBits uint
	selfComms        map[uint32]C.MPI_Comm // per own trace rank: a duplicate of MPI_COMM_SELF (MPI-IO)
}

// commInfo is a communicator of the trace as this process sees it.
type commInfo struct {
	id      uint32
	members []uint32 // trace ranks, sorted
	local   []uint32 // members this process runs, sorted: the index is the rank's slot
	procs   []int    // world ranks of the processes that run members, sorted
	counts  []int    // members per process of procs
	me      int      // this process's index in procs (its rank in comm), -1 if none
	kmax    int      // most members of one process
	// MPI communicators of procs, when there are several: comm carries
	// messages and the communication collectives, file the collective
	// MPI-IO calls' synchronisation, slots[i] the MPI files of the ranks
	// in slot i (the i-th member of each process).
	comm, file C.MPI_Comm
	slots      []C.MPI_Comm
	broken     bool // a deadlock left an MPI collective of comm unmatched
	// exact says every member records the same byte count in every
	// collective (CheckCounts): each process then computes every
	// process's count alone, and a collective is one MPI call.
	exact bool
}

// spansProcesses reports whether the communicator needs MPI.
func (c *commInfo) spansProcesses() bool { return len(c.procs) > 1 }

// JobOptions configure a Job.
type JobOptions struct {
	// FileSlots makes, for every communicator files are opened on, one
	// communicator per slot, on which the MPI-IO backend opens the files
	// of the ranks of that slot.
	FileSlots bool
}

// Proc is this process in the MPI job, and the blocking calls of the
// whole job (on MPI_COMM_WORLD, through gompi): setup, agreement on
// errors, results.
type Proc struct {
	Rank, Size int // this process in MPI_COMM_WORLD, and the number of processes
	// Node is the number of processes of the job on this process's node
	// (MPI_COMM_TYPE_SHARED), this one included; NodeFirst the rank of
	// the first of them.
	Node, NodeFirst int
	// Host is the name of this process's host.
	Host  string
	world *gompi.Communicator
}

// Connect initialises MPI (Init) and returns this process. It is
// collective: every process of the job calls it.
func Connect() (*Proc, error) {
	if err := Init(); err != nil {
		return nil, err
	}
	var node, first C.int
	C.node_info(&node, &first)
	host, _ := os.Hostname()
	return &Proc{Rank: WorldRank(), Size: WorldSize(), Node: max(int(node), 1), NodeFirst: int(first), Host: host,
		world: gompi.NewCommunicator(nil)}, nil
}

// Processors returns how many processors this process should use: the
// ones it may run on (its affinity: mpirun --bind-to core leaves one)
// divided among the job's processes on the node that share them, at
// least one. A process of an MPI job that uses more competes with its
// neighbours for their cores: its runtime's helpers (the collector, the
// recorder's encoder) then delay the others' MPI progress, which every
// collective waits for.
func (p *Proc) Processors() int {
	return max(1, runtime.NumCPU()/max(p.Node, 1))
}

// block returns the first index of process p's block of n ranks.
func (p *Proc) block(q, n int) int { return q * n / p.Size }

// Share returns the ranks of all that this process runs (for
// replay.Options.Share): its block.
func (p *Proc) Share(all []uint32) []uint32 {
	n := len(all)
	return all[p.block(p.Rank, n):p.block(p.Rank+1, n)]
}

// NewJob spreads the ranks of plan over the processes and makes the
// communicators. Every process calls it with the same plan (it checks
// that they did).
func NewJob(p *Proc, plan *replay.Plan, opts JobOptions) (*Job, error) {
	j := &Job{Proc: p, Ranks: slices.Clone(plan.Ranks), comms: map[uint32]*commInfo{}, selfComms: map[uint32]C.MPI_Comm{}}
	if err := j.agreeOn(fingerprint(plan)); err != nil {
		return nil, err
	}
	n := len(j.Ranks)
	j.lo = make([]int, j.Size+1)
	for q := 0; q <= j.Size; q++ {
		j.lo[q] = j.block(q, n)
	}
	k := 0
	for p := 0; p < j.Size; p++ {
		k = max(k, j.lo[p+1]-j.lo[p])
	}
	j.idxBits = uint(bits.Len(uint(max(k, 1) - 1)))
	ub := int64(C.tag_ub_value())
	total := uint(bits.Len64(uint64(ub)))
	if 2*j.idxBits+8 > total {
		return nil, fmt.Errorf("%d trace ranks per process are too many for the MPI library's tags (MPI_TAG_UB %d): use more processes", k, ub)
	}
	j.tagBits = total - 2*j.idxBits

	var ctl C.MPI_Comm
	if rc := C.MPI_Comm_dup(C.comm_world(), &ctl); rc != C.MPI_SUCCESS {
		return nil, mpiErr("MPI_Comm_dup", rc)
	}
	C.errors_return(ctl)
	j.ctl = ctl

	// Communicators: the world of the trace, then the others by id.
	ids := []uint32{trace.CommWorld}
	for id := range plan.Groups {
		if id != trace.CommWorld && id != trace.CommSelf {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids[1:])
	fileComms := map[uint32]bool{}
	for _, c := range plan.FileComms {
		fileComms[c] = true
	}
	for _, id := range ids {
		members := j.Ranks
		if id != trace.CommWorld {
			members = plan.Groups[id]
		}
		ci, err := j.makeComm(id, members, opts.FileSlots && fileComms[id])
		if err != nil {
			return nil, fmt.Errorf("communicator %d: %w", id, err)
		}
		j.comms[id] = ci
	}
	if opts.FileSlots {
		for _, r := range j.Own() {
			var c C.MPI_Comm
			if rc := C.MPI_Comm_dup(C.comm_self(), &c); rc != C.MPI_SUCCESS {
				return nil, mpiErr("MPI_Comm_dup", rc)
			}
			C.errors_return(c)
			j.selfComms[r] = c
		}
	}
	return j, nil
}

// makeComm makes the MPI communicators of trace communicator id.
// Collective over MPI_COMM_WORLD.
func (j *Job) makeComm(id uint32, members []uint32, slots bool) (*commInfo, error) {
	ci := &commInfo{id: id, members: members, me: -1, comm: C.comm_null(), file: C.comm_null()}
	for _, r := range members {
		p := j.owner(r)
		if p < 0 {
			continue
		}
		if p == j.Rank {
			ci.local = append(ci.local, r)
		}
		if k := len(ci.procs); k > 0 && ci.procs[k-1] == p {
			ci.counts[k-1]++
		} else {
			ci.procs = append(ci.procs, p)
			ci.counts = append(ci.counts, 1)
		}
	}
	for i, p := range ci.procs {
		ci.kmax = max(ci.kmax, ci.counts[i])
		if p == j.Rank {
			ci.me = i
		}
	}
	if !ci.spansProcesses() {
		// Every process knows it from the plan: no MPI call at all.
		return ci, nil
	}
	color := C.int(-1)
	if ci.me >= 0 {
		color = 0
	}
	var c C.MPI_Comm
	if rc := C.split(C.comm_world(), color, C.int(j.Rank), &c); rc != C.MPI_SUCCESS {
		return nil, mpiErr("MPI_Comm_split", rc)
	}
	if ci.me < 0 {
		return ci, nil
	}
	C.errors_return(c)
	ci.comm = c
	if rc := C.MPI_Comm_dup(c, &ci.file); rc != C.MPI_SUCCESS {
		return nil, mpiErr("MPI_Comm_dup", rc)
	}
	C.errors_return(ci.file)
	if slots {
		ci.slots = make([]C.MPI_Comm, ci.kmax)
		for i := range ci.slots {
			if rc := C.MPI_Comm_dup(c, &ci.slots[i]); rc != C.MPI_SUCCESS {
				return nil, mpiErr("MPI_Comm_dup", rc)
			}
			C.errors_return(ci.slots[i])
		}
	}
	return ci, nil
}

// CheckCounts reads this process's ranks of t and finds the
// communicators whose members record the same sequence of collectives
// with the same byte counts, as MPI requires of all but the v-variants
// (MPI_Gatherv, …). Their collectives then move counts that every process
// computes alone; on the others (v-variants with different counts, or a
// trace edited by hand) each collective that moves data first exchanges
// the counts with a small MPI collective. Collective over
// MPI_COMM_WORLD; call it before NewWorld.
func (j *Job) CheckCounts(t trace.Trace) error {
	type key struct {
		comm uint32
		rank uint32
	}
	sums := map[key]uint64{}
	buf := make([]trace.Event, trace.BatchSize)
	var rerr error
	for _, r := range j.Own() {
		src, err := t.Rank(r)
		if err != nil {
			rerr = fmt.Errorf("rank %d: %w", r, err)
			break
		}
		for {
			n, err := src.ReadEvents(buf)
			for i := range buf[:n] {
				e := &buf[i]
				if e.Op.Class() != trace.ClassComm || !e.Op.Collective() || e.Comm == trace.CommSelf {
					continue
				}
				k := key{e.Comm, r}
				h, ok := sums[k]
				if !ok {
					h = fnvOffset
				}
				sums[k] = fnvMix(fnvMix(h, uint64(e.Op)), uint64(e.Bytes))
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					rerr = fmt.Errorf("rank %d: %w", r, err)
				}
				break
			}
		}
		if c, ok := src.(io.Closer); ok {
			c.Close()
		}
		if rerr != nil {
			break
		}
	}
	if err := j.Agree(rerr); err != nil {
		return err
	}
	var ids []uint32
	for id, ci := range j.comms {
		if ci.spansProcesses() {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids)
	in := make([]int64, 2*len(ids))
	for i, id := range ids {
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		for _, r := range j.comms[id].local {
			h, ok := sums[key{id, r}]
			if !ok {
				h = fnvOffset
			}
			v := int64(h >> 1)
			lo, hi = min(lo, v), max(hi, v)
		}
		in[2*i], in[2*i+1] = hi, -lo
	}
	out := make([]int64, len(in))
	j.world.AllreduceInt64s(out, in, gompi.OpMax, 0)
	for i, id := range ids {
		j.comms[id].exact = out[2*i] == -out[2*i+1]
	}
	return nil
}

const fnvOffset = 14695981039346656037

func fnvMix(h, v uint64) uint64 {
	for k := 0; k < 8; k++ {
		h ^= v & 0xff
		h *= 1099511628211
		v >>= 8
	}
	return h
}

// Own returns the trace ranks this process runs.
func (j *Job) Own() []uint32 { return j.Ranks[j.lo[j.Rank]:j.lo[j.Rank+1]] }

// ProcessRanks returns the trace ranks process p runs.
func (j *Job) ProcessRanks(p int) []uint32 { return j.Ranks[j.lo[p]:j.lo[p+1]] }

// owner returns the process that runs trace rank r, or -1.
func (j *Job) owner(r uint32) int {
	i, ok := slices.BinarySearch(j.Ranks, r)
	if !ok {
		return -1
	}
	// The largest p with lo[p] <= i.
	p, _ := slices.BinarySearch(j.lo, i+1)
	return p - 1
}

// index returns r's index in its process's block.
func (j *Job) index(r uint32) int {
	i, _ := slices.BinarySearch(j.Ranks, r)
	return i - j.lo[j.owner(r)]
}

// comm returns the communicator id, or the world's for an id the plan did
// not see.
func (j *Job) comm(id uint32) *commInfo {
	if c := j.comms[id]; c != nil {
		return c
	}
	return j.comms[trace.CommWorld]
}

// fingerprint sums up what every process must agree on.
func fingerprint(p *replay.Plan) int64 {
	h := fnv.New64a()
	var b [8]byte
	put := func(v uint64) {
		binary.LittleEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	put(uint64(len(p.Ranks)))
	for _, r := range p.Ranks {
		put(uint64(r))
	}
	put(uint64(p.Events))
	ids := make([]uint32, 0, len(p.Groups))
	for id := range p.Groups {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		put(uint64(id))
		for _, r := range p.Groups[id] {
			put(uint64(r))
		}
	}
	return int64(h.Sum64() >> 1)
}

// agreeOn checks that every process has the same v.
func (j *Proc) agreeOn(v int64) error {
	in := []int64{v, -v}
	out := make([]int64, 2)
	j.world.AllreduceInt64s(out, in, gompi.OpMax, 0)
	if out[0] != v || out[1] != -v {
		return fmt.Errorf("the processes of the MPI job read different traces (or different options): every process must replay the same input")
	}
	return nil
}

// Agree returns nil if every process's err is nil, and otherwise, on
// every process, an error naming the first process that failed and its
// message. It is how a job stops together when one process cannot go on.
func (j *Proc) Agree(err error) error {
	failed := int64(-1)
	if err != nil {
		failed = int64(j.Rank)
	}
	// The lowest failing rank: max of −rank.
	in := []int64{-failed}
	if failed < 0 {
		in[0] = -int64(j.Size) - 1
	}
	out := make([]int64, 1)
	j.world.AllreduceInt64s(out, in, gompi.OpMax, 0)
	first := -out[0]
	if first > int64(j.Size) {
		return nil
	}
	msg := []byte{}
	if int64(j.Rank) == first {
		msg = []byte(err.Error())
	}
	msg = j.bcastBytes(msg, int(first))
	if int64(j.Rank) == first {
		return err
	}
	return fmt.Errorf("process %d: %s", first, msg)
}

// bcastBytes broadcasts b from root.
func (j *Proc) bcastBytes(b []byte, root int) []byte {
	n := []int64{int64(len(b))}
	j.world.BcastInt64s(n, root)
	if n[0] == 0 {
		return nil
	}
	words := make([]int64, (n[0]+7)/8)
	if j.Rank == root {
		for i := range words {
			var w [8]byte
			copy(w[:], b[i*8:])
			words[i] = int64(binary.LittleEndian.Uint64(w[:]))
		}
	}
	j.world.BcastInt64s(words, root)
	out := make([]byte, len(words)*8)
	for i, w := range words {
		binary.LittleEndian.PutUint64(out[i*8:], uint64(w))
	}
	return out[:n[0]]
}

// Barrier waits for every process.
func (j *Proc) Barrier() { j.world.Barrier() }

// Gather sends b to process 0 and returns, on process 0, the bytes of
// every process in process order (nil elsewhere). Large parts travel in
// pieces.
func (j *Proc) Gather(b []byte) [][]byte {
	const tag = 7
	const piece = 64 << 20
	if j.Rank != 0 {
		n := []int64{int64(len(b))}
		j.world.SendInt64s(n, 0, tag)
		for off := 0; off < len(b); off += piece {
			j.world.SendBytes(b[off:min(off+piece, len(b))], 0, tag)
		}
		return nil
	}
	out := make([][]byte, j.Size)
	out[0] = b
	for p := 1; p < j.Size; p++ {
		n := make([]int64, 1)
		j.world.RecvPreallocInt64s(n, p, tag)
		buf := make([]byte, n[0])
		for off := 0; off < len(buf); off += piece {
			j.world.RecvPreallocBytes(buf[off:min(off+piece, len(buf))], p, tag)
		}
		out[p] = buf
	}
	return out
}

// BcastString returns root's s on every process.
func (j *Proc) BcastString(s string, root int) string {
	return string(j.bcastBytes([]byte(s), root))
}

// GatherFile sends the file name of every process to process 0, which
// writes process q's bytes to create(q). Other processes get nil
// errors from create. The files travel in pieces; none is held whole in
// memory.
func (j *Proc) GatherFile(name string, create func(q int) (io.WriteCloser, error)) error {
	const tag = 8
	const piece = 16 << 20
	if j.Rank != 0 {
		f, err := os.Open(name)
		var size int64
		if err == nil {
			if st, serr := f.Stat(); serr == nil {
				size = st.Size()
			} else {
				err = serr
			}
		}
		if err != nil {
			size = -1
		}
		j.world.SendInt64s([]int64{size}, 0, tag)
		if err != nil {
			return err
		}
		defer f.Close()
		buf := make([]byte, piece)
		for off := int64(0); off < size; {
			n, rerr := io.ReadFull(f, buf[:min(int64(piece), size-off)])
			if rerr != nil {
				// The length is promised: send what is missing as zeros
				// so that process 0 does not wait forever.
				clear(buf[n:])
				n = int(min(int64(piece), size-off))
				err = rerr
			}
			j.world.SendBytes(buf[:n], 0, tag)
			off += int64(n)
		}
		return err
	}
	var first error
	buf := make([]byte, piece)
	for q := 0; q < j.Size; q++ {
		var w io.WriteCloser
		var err error
		if w, err = create(q); err != nil && first == nil {
			first = err
		}
		if q == 0 {
			if err == nil {
				err = copyFile(w, name)
			}
		} else {
			size := make([]int64, 1)
			j.world.RecvPreallocInt64s(size, q, tag)
			if size[0] < 0 && first == nil {
				first = fmt.Errorf("process %d could not read its part", q)
			}
			for off := int64(0); off < size[0]; {
				n := int(min(int64(piece), size[0]-off))
				j.world.RecvPreallocBytes(buf[:n], q, tag)
				if err == nil {
					_, err = w.Write(buf[:n])
				}
				off += int64(n)
			}
		}
		if w != nil {
			if cerr := w.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

func copyFile(w io.Writer, name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}
