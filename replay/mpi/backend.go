//go:build mpi

package mpi

/*
#include "cmpi.h"
*/
import "C"

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/replay/posix"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/state"
	"github.com/iotrace/iotrace/trace/target"
	"golang.org/x/sys/unix"
)

// Backend is the MPI-IO backend (ioreplay --backend mpiio): every file
// access goes through MPI_File_* calls of the MPI library.
//
//   - MPI_File_open of the trace opens on the communicator of the ranks
//     that opened together. A rank is one of several of its process, so
//     each process opens the file once per slot — the i-th of its ranks
//     in that communicator — on the slot's own communicator (made by the
//     Job); a process with fewer ranks there than another makes the
//     collective calls of its missing slots with zero bytes (a ghost), so
//     every slot is an MPI job of one rank per process. Opens on
//     MPI_COMM_SELF, and communicators whose ranks all run in one process,
//     open on a duplicate of MPI_COMM_SELF per rank.
//   - Reads and writes are the recorded calls — explicit offset,
//     individual or shared file pointer, independent or collective —
//     through the recorded view (MPI_File_set_view with blocks of the
//     recorded length every stride bytes, etype MPI_BYTE, "native").
//     Non-blocking MPI-IO calls are replayed as their blocking forms.
//   - POSIX opens of regular files become MPI_File_open on MPI_COMM_SELF,
//     and their reads and writes MPI_File_read_at/MPI_File_write_at at the
//     recorded offsets (the trace follows the file position); lseek,
//     fsync, ftruncate and close their MPI counterparts. Metadata calls,
//     directories and everything else go to the POSIX backend.
//
// Every path is checked as the POSIX backend checks it (posix.Backend.Name)
// before the MPI library opens or deletes it by name.
type Backend struct {
	j    *Job
	px   *posix.Backend
	info C.MPI_Info
	pat  *replay.Pattern

	mu     sync.Mutex
	ghosts map[ghostKey]*ghostWorker
	// ghosted: some communicator has ghost workers (sharedIO; read
	// without mu, which Close holds while the ghosts finish).
	ghosted atomic.Bool
}

type ghostKey struct {
	comm uint32
	slot int
}

// NewBackend returns the MPI-IO backend of job, with hints (key, value)
// for every file it opens; px does the metadata calls and prepares the
// files.
func NewBackend(j *Job, px *posix.Backend, hints [][2]string) (*Backend, error) {
	b := &Backend{j: j, px: px, info: C.info_null(), pat: replay.NewPattern(), ghosts: map[ghostKey]*ghostWorker{}}
	for _, h := range hints {
		k, v := C.CString(h[0]), C.CString(h[1])
		rc := C.info_set(&b.info, k, v)
		C.free(unsafe.Pointer(k))
		C.free(unsafe.Pointer(v))
		if rc != C.MPI_SUCCESS {
			return nil, fmt.Errorf("--hint %s=%s: %s", h[0], h[1], errorString(rc))
		}
	}
	return b, nil
}

// NativeMPIIO implements replay.NativeMPIIO: the MPI library carries out
// the MPI-IO calls, its cost is in them.
func (b *Backend) NativeMPIIO() bool { return true }

var _ replay.NativeMPIIO = (*Backend)(nil)

// Prepare implements replay.Backend.
func (b *Backend) Prepare(ctx context.Context, l *target.Layout) error { return b.px.Prepare(ctx, l) }

// Close implements replay.Backend.
func (b *Backend) Close() error {
	b.mu.Lock()
	for _, g := range b.ghosts {
		close(g.ch)
		<-g.done
	}
	b.ghosts = map[ghostKey]*ghostWorker{}
	b.mu.Unlock()
	if b.info != C.info_null() {
		C.MPI_Info_free(&b.info)
	}
	return b.px.Close()
}

// Rank implements replay.Backend.
func (b *Backend) Rank(rank uint32, ranks int) (replay.Executor, error) {
	px, err := b.px.Rank(rank, ranks)
	if err != nil {
		return nil, err
	}
	self, ok := b.j.selfComms[rank]
	if !ok {
		return nil, fmt.Errorf("rank %d does not run in process %d", rank, b.j.Rank)
	}
	x := &exec{b: b, rank: rank, px: px, self: self, st: state.New[*file, *file](nil), cur: b.pat.Cursor(uint64(rank))}
	if b.px.Options().FixedData {
		// --data fixed: every write the same bytes, as the POSIX backend
		// writes them.
		x.cur = b.pat.FixedCursor()
	}
	x.st.OnRelease = func(d *state.Desc[*file]) {
		if f := d.Aux; f != nil && !f.closed {
			x.closeRC = C.MPI_File_close(&f.fh)
			f.closed = true
		}
	}
	x.st.OnHandleClose = func(h *state.Handle[*file]) {
		if f := h.Aux; f != nil && !(x.ending && f.shared) {
			x.closeRC = x.closeFile(f)
		}
	}
	return x, nil
}

// file is an MPI file of a rank: a handle of the trace, or a POSIX
// descriptor's open file description replayed through MPI-IO.
type file struct {
	fh     C.MPI_File
	ghosts *ghostWorker // slots of this file's communicator without a rank here, driven by slot 0
	gfile  int          // this file's number in the ghosts' table
	name   string
	shared bool // opened on a communicator of several processes
	closed bool // a POSIX description's last descriptor closed
}

// exec replays a rank. Its descriptors and MPI file handles are the
// trace's, as trace/state follows them (one table per traced process,
// descriptions shared by dup and fork): a description of a regular file
// opened by the trace holds the MPI file that replays it; the others
// belong to the POSIX executor px, which is given their calls.
type exec struct {
	b       *Backend
	rank    uint32
	px      replay.Executor
	self    C.MPI_Comm
	st      *state.Follower[*file, *file]
	closeRC C.int // of the close a release made in the last Apply
	ending  bool  // Close runs: files opened with other processes stay open
	cur     replay.Cursor
	wbuf    []byte
	rbuf    []byte
	seq     int
	// detail: the MPI library's error string of the last call, if it
	// failed in MPI.
	detail string
}

// Close implements replay.Executor: it closes what the rank left open —
// but the files opened together with other processes, whose close is
// collective: their ranks may have ended without closing them (a trace
// cut short), and waiting for them would never end.
func (x *exec) Close() error {
	x.ending = true
	x.st.CloseAll()
	return x.px.Close()
}

// ErrorDetail implements replay.ErrorDetailer: what the MPI library said
// of the rank's last call, if it failed in MPI.
func (x *exec) ErrorDetail() string { return x.detail }

// ret turns an MPI error into a negative errno, and keeps the library's
// error string for ErrorDetail (an errno cannot tell all of MPI's error
// classes apart: many become EIO).
func (x *exec) ret(rc C.int) int64 {
	x.detail = errorString(rc)
	return errnoOf(rc)
}

// errnoOf turns an MPI error into a negative errno.
func errnoOf(rc C.int) int64 {
	switch C.error_class(rc) {
	case C.MPI_ERR_NO_SUCH_FILE:
		return -int64(unix.ENOENT)
	case C.MPI_ERR_FILE_EXISTS:
		return -int64(unix.EEXIST)
	case C.MPI_ERR_ACCESS, C.MPI_ERR_READ_ONLY:
		return -int64(unix.EACCES)
	case C.MPI_ERR_NO_SPACE:
		return -int64(unix.ENOSPC)
	case C.MPI_ERR_QUOTA:
		return -int64(unix.EDQUOT)
	case C.MPI_ERR_BAD_FILE:
		return -int64(unix.EINVAL)
	case C.MPI_ERR_AMODE:
		return -int64(unix.EINVAL)
	case C.MPI_ERR_FILE_IN_USE:
		return -int64(unix.EBUSY)
	}
	return -int64(unix.EIO)
}

// Do implements replay.Executor.
func (x *exec) Do(c *replay.Call) (int64, replay.Skip) {
	e := c.Ev
	x.detail = ""
	x.closeRC = C.MPI_SUCCESS
	st := x.st.Apply(e)
	info := e.Op.Info()
	if info.Class == trace.ClassMPIIO {
		return x.mpiio(c, st.Handle)
	}
	if info.FD == trace.FDOpen && info.Class == trace.ClassPOSIX {
		return x.open(c, st.New)
	}
	d := st.Desc
	if d == nil || d.Aux == nil {
		return x.px.Do(c)
	}
	f := d.Aux
	switch info.FD {
	case trace.FDClose:
		return x.callResult(x.closeRC)
	case trace.FDDup:
		return max(e.Ret, 0), replay.NotSkipped // the follower shares the description
	}
	switch {
	case info.Dir == trace.DirRead || info.Dir == trace.DirWrite:
		write := info.Dir == trace.DirWrite
		off := e.Offset
		switch {
		case write && d.Append():
			var size C.longlong
			if rc := C.file_size(f.fh, &size); rc != C.MPI_SUCCESS {
				return x.ret(rc), replay.NotSkipped
			}
			off = int64(size)
		case info.Addr != trace.AddrExplicit && off < 0:
			off = max(d.Pos, 0)
		}
		op := C.int(C.RW_READ_AT)
		if write {
			op = C.RW_WRITE_AT
		}
		n, rc := x.rw(f.fh, op, off, max(e.Size, 0))
		if rc != C.MPI_SUCCESS {
			return x.ret(rc), replay.NotSkipped
		}
		return n, replay.NotSkipped
	case info.Family == "seek":
		// The follower keeps the position; a seek from the end asks MPI
		// for the size.
		if e.Whence == 2 {
			var size C.longlong
			if rc := C.file_size(f.fh, &size); rc != C.MPI_SUCCESS {
				return x.ret(rc), replay.NotSkipped
			}
		}
		if e.Op == trace.OpFseek || e.Ret < 0 {
			return min(e.Ret, 0), replay.NotSkipped
		}
		return e.Ret, replay.NotSkipped
	}
	switch e.Op {
	case trace.OpFsync, trace.OpFdatasync, trace.OpSyncfs:
		return x.callResult(x.b.fileSync(f.fh))
	case trace.OpFflush, trace.OpFstat, trace.OpFadvise, trace.OpReadahead, trace.OpMmap:
		return 0, replay.NotSkipped
	case trace.OpFtruncate:
		return x.callResult(C.file_set_size(f.fh, C.longlong(max(e.Size, 0))))
	case trace.OpFallocate:
		return x.callResult(C.file_preallocate(f.fh, C.longlong(max(e.Offset+e.Size, 0))))
	}
	return 0, replay.SkipUnsupported
}

func (x *exec) callResult(rc C.int) (int64, replay.Skip) {
	if rc != C.MPI_SUCCESS {
		return x.ret(rc), replay.NotSkipped
	}
	return 0, replay.NotSkipped
}

// syncRetry bounds how long fileSync tries a sync again.
const syncRetry = time.Second

// fileSync is MPI_File_sync(fh). Open MPI's ompio refuses a sync with
// MPI_ERR_OTHER, before it does anything, while any nonblocking request
// of the process is pending (mca_io_ompio_file_sync tests the process's
// one list of them): a request of another file, so of another trace rank
// of this process, or one ompio made itself inside that rank's collective
// write. The rank's sync failed so, now and then, where two ranks shared a
// process (TestMPIReplayScriptBothBackends: 6 ranks over 4 processes, 1
// run in 12 under load). Where another thread of the process makes MPI-IO
// calls (another trace rank, or a ghost of a missing slot), the sync is
// tried again while it fails so, for up to syncRetry; a sync that still
// fails then reports its error. (A process of one rank and no ghost
// never retries: its sync's MPI_ERR_OTHER is its own.)
func (b *Backend) fileSync(fh C.MPI_File) C.int {
	rc := C.MPI_File_sync(fh)
	if rc == C.MPI_SUCCESS || !b.sharedIO() {
		return rc
	}
	wait, waited := 20*time.Microsecond, time.Duration(0)
	for rc != C.MPI_SUCCESS && errorClass(rc) == C.MPI_ERR_OTHER && waited < syncRetry {
		time.Sleep(wait)
		waited += wait
		wait = min(2*wait, 10*time.Millisecond)
		rc = C.MPI_File_sync(fh)
	}
	return rc
}

// sharedIO says whether more than one thread of this process may make
// MPI-IO calls: several trace ranks here, or ghost workers.
func (b *Backend) sharedIO() bool {
	return len(b.j.selfComms) > 1 || b.ghosted.Load()
}

// errorClass is the class of MPI error code rc.
func errorClass(rc C.int) C.int {
	var class C.int
	if C.MPI_Error_class(rc, &class) != C.MPI_SUCCESS {
		return rc
	}
	return class
}

// open replays a POSIX open of a regular file as MPI_File_open on
// MPI_COMM_SELF; directories, failed originals and skipped paths go to the
// POSIX backend. d is the description the trace's open made.
func (x *exec) open(c *replay.Call, d *state.Desc[*file]) (int64, replay.Skip) {
	e := c.Ev
	flags := e.Flags
	if e.Op == trace.OpCreat {
		flags = trace.OCreat | trace.OWronly | trace.OTrunc
	}
	const oDirectory, oPath = 0x10000, 0x200000
	if c.PathSkip != replay.NotSkipped || c.Path == "" || d == nil || flags&(oDirectory|oPath) != 0 {
		return x.px.Do(c)
	}
	write := flags&trace.OAccMode != trace.ORdonly || flags&trace.OTrunc != 0
	name, r, skip := x.b.px.Name(c.Path, write)
	if skip == replay.SkipNotRegular {
		return x.px.Do(c) // a directory, a device: the POSIX backend knows
	}
	if skip != replay.NotSkipped || r < 0 {
		return r, skip
	}
	amode := C.int(0)
	switch flags & trace.OAccMode {
	case trace.OWronly:
		amode = C.MPI_MODE_WRONLY
	case trace.ORdwr:
		amode = C.MPI_MODE_RDWR
	default:
		amode = C.MPI_MODE_RDONLY
	}
	if flags&trace.OCreat != 0 {
		amode |= C.MPI_MODE_CREATE
	}
	if flags&trace.OExcl != 0 {
		amode |= C.MPI_MODE_EXCL
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var fh C.MPI_File
	if rc := C.file_open(x.self, cname, amode, x.b.info, &fh); rc != C.MPI_SUCCESS {
		return x.ret(rc), replay.NotSkipped
	}
	if flags&trace.OTrunc != 0 && amode&C.MPI_MODE_RDONLY == 0 {
		if rc := C.file_set_size(fh, 0); rc != C.MPI_SUCCESS {
			C.MPI_File_close(&fh)
			return x.ret(rc), replay.NotSkipped
		}
	}
	d.Aux = &file{fh: fh, name: name}
	return e.Ret, replay.NotSkipped
}

// rw makes one data call of n bytes.
func (x *exec) rw(fh C.MPI_File, op C.int, off, n int64) (int64, C.int) {
	var buf []byte
	if writeOp(op) {
		buf = x.writeBuf(n)
	} else {
		buf = x.readBuf(n)
	}
	var p unsafe.Pointer
	if len(buf) > 0 {
		p = unsafe.Pointer(&buf[0])
	}
	var done C.longlong
	rc := C.file_rw(fh, op, C.longlong(off), p, C.longlong(n), &done)
	return int64(done), rc
}

func writeOp(op C.int) bool {
	switch op {
	case C.RW_WRITE_AT, C.RW_WRITE_AT_ALL, C.RW_WRITE, C.RW_WRITE_ALL, C.RW_WRITE_SHARED, C.RW_WRITE_ORDERED:
		return true
	}
	return false
}

// writeBuf returns n bytes of the rank's pattern stream.
func (x *exec) writeBuf(n int64) []byte {
	if n <= replay.PatternChunk {
		return x.cur.Next(int(n), 1)
	}
	if int64(cap(x.wbuf)) < n {
		x.wbuf = make([]byte, n)
	}
	b := x.wbuf[:n]
	for off := int64(0); off < n; {
		k := copy(b[off:], x.cur.Next(int(min(n-off, replay.PatternChunk)), 1))
		off += int64(k)
	}
	return b
}

func (x *exec) readBuf(n int64) []byte {
	if int64(cap(x.rbuf)) < n {
		x.rbuf = make([]byte, max(n, 64<<10))
	}
	return x.rbuf[:n]
}

var dataOps = map[trace.Op]C.int{
	trace.OpMPIFileReadAt: C.RW_READ_AT, trace.OpMPIFileReadAtAll: C.RW_READ_AT_ALL,
	trace.OpMPIFileWriteAt: C.RW_WRITE_AT, trace.OpMPIFileWriteAtAll: C.RW_WRITE_AT_ALL,
	trace.OpMPIFileRead: C.RW_READ, trace.OpMPIFileReadAll: C.RW_READ_ALL,
	trace.OpMPIFileWrite: C.RW_WRITE, trace.OpMPIFileWriteAll: C.RW_WRITE_ALL,
	trace.OpMPIFileReadShared: C.RW_READ_SHARED, trace.OpMPIFileWriteShared: C.RW_WRITE_SHARED,
	trace.OpMPIFileReadOrdered: C.RW_READ_ORDERED, trace.OpMPIFileWriteOrdered: C.RW_WRITE_ORDERED,
	// Non-blocking calls are replayed blocking.
	trace.OpMPIFileIreadAt: C.RW_READ_AT, trace.OpMPIFileIwriteAt: C.RW_WRITE_AT,
	trace.OpMPIFileIread: C.RW_READ, trace.OpMPIFileIwrite: C.RW_WRITE,
}

// mpiio replays an MPI-IO call; h is its handle as the follower keeps
// it.
func (x *exec) mpiio(c *replay.Call, h *state.Handle[*file]) (int64, replay.Skip) {
	e := c.Ev
	switch e.Op {
	case trace.OpMPIFileOpen:
		return x.openFile(c, h)
	case trace.OpMPIFileDelete:
		if c.PathSkip != replay.NotSkipped {
			return 0, c.PathSkip
		}
		name, r, skip := x.b.px.Name(c.Path, true)
		if skip != replay.NotSkipped || r < 0 {
			return r, skip
		}
		cname := C.CString(name)
		defer C.free(unsafe.Pointer(cname))
		return x.callResult(C.file_delete(cname, x.b.info))
	case trace.OpMPIFileClose:
		if h == nil || h.Aux == nil {
			return 0, replay.SkipUnknownFD
		}
		return x.callResult(x.closeRC) // closed as the follower released it
	}
	if h == nil || h.Aux == nil {
		return 0, replay.SkipUnknownFD
	}
	f := h.Aux
	if e.Op.Collective() && f.ghosts != nil {
		f.ghosts.send(ghostOp{file: f.gfile, op: e.Op, off: e.Offset, size: e.Size, stride: e.Stride, whence: e.Whence})
	}
	switch e.Op {
	case trace.OpMPIFileSetView:
		return x.callResult(C.file_set_view(f.fh, C.longlong(e.Offset), C.longlong(e.Size), C.longlong(e.Stride), x.b.info))
	case trace.OpMPIFileSync:
		return x.callResult(x.b.fileSync(f.fh))
	case trace.OpMPIFileSetSize:
		return x.callResult(C.file_set_size(f.fh, C.longlong(max(e.Size, 0))))
	case trace.OpMPIFilePreallocate:
		return x.callResult(C.file_preallocate(f.fh, C.longlong(max(e.Size, 0))))
	case trace.OpMPIFileSeek, trace.OpMPIFileSeekShared:
		shared := C.int(0)
		if e.Op == trace.OpMPIFileSeekShared {
			shared = 1
		}
		return x.callResult(C.file_seek(f.fh, C.longlong(e.Offset), C.int(e.Whence), shared))
	}
	op, ok := dataOps[e.Op]
	if !ok {
		return 0, replay.SkipUnsupported
	}
	n, rc := x.rw(f.fh, op, max(e.Offset, 0), max(e.Size, 0))
	if rc != C.MPI_SUCCESS {
		return x.ret(rc), replay.NotSkipped
	}
	return n, replay.NotSkipped
}

// openFile replays MPI_File_open: on the slot communicator of the ranks
// that opened together, or on the rank's own MPI_COMM_SELF. h is the
// handle the trace's open made (nil: it failed there).
func (x *exec) openFile(c *replay.Call, h *state.Handle[*file]) (int64, replay.Skip) {
	e := c.Ev
	if c.PathSkip != replay.NotSkipped {
		return 0, c.PathSkip
	}
	write := e.Flags&(trace.MPIModeWronly|trace.MPIModeRdwr|trace.MPIModeCreate) != 0
	name, r, skip := x.b.px.Name(c.Path, write)
	if skip != replay.NotSkipped || r < 0 {
		return r, skip
	}
	cm := x.self
	var g *ghostWorker
	shared := false
	slot := 0
	if ci := x.b.j.comm(e.Comm); e.Comm != trace.CommSelf && ci.slots != nil {
		slot = slices.Index(ci.local, x.rank)
		if slot < 0 {
			// Not a member as the plan saw it: open alone.
			slot = 0
		} else {
			cm = ci.slots[slot]
			shared = true
			if slot == 0 && len(ci.local) < ci.kmax {
				g = x.b.ghostsOf(ci)
			}
		}
	}
	amode := C.int(e.Flags)
	f := &file{name: name, ghosts: g, shared: shared}
	if g != nil {
		x.seq++
		f.gfile = int(x.rank)<<20 | x.seq
		g.send(ghostOp{file: f.gfile, op: trace.OpMPIFileOpen, name: name, amode: amode})
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	if rc := C.file_open(cm, cname, amode, x.b.info, &f.fh); rc != C.MPI_SUCCESS {
		if g != nil {
			g.send(ghostOp{file: f.gfile, op: trace.OpMPIFileClose})
		}
		return x.ret(rc), replay.NotSkipped
	}
	if h == nil {
		x.closeFile(f) // the trace's open failed: nothing will use it
		return 0, replay.NotSkipped
	}
	h.Aux = f
	return 0, replay.NotSkipped
}

func (x *exec) closeFile(f *file) C.int {
	if f.ghosts != nil {
		f.ghosts.send(ghostOp{file: f.gfile, op: trace.OpMPIFileClose})
	}
	return C.MPI_File_close(&f.fh)
}

// ---- ghosts ----

// ghostOp is a collective call a ghost slot makes with zero bytes.
type ghostOp struct {
	file              int
	op                trace.Op
	off, size, stride int64
	whence            int32
	name              string
	amode             C.int
}

// ghostWorker makes the collective MPI-IO calls of the slots of one
// communicator that have no rank in this process, in the order slot 0's
// rank makes them.
type ghostWorker struct {
	ch   chan ghostOp
	done chan struct{}
}

func (g *ghostWorker) send(o ghostOp) { g.ch <- o }

func (b *Backend) ghostsOf(ci *commInfo) *ghostWorker {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := ghostKey{ci.id, 0}
	if g := b.ghosts[k]; g != nil {
		return g
	}
	g := &ghostWorker{ch: make(chan ghostOp, 1024), done: make(chan struct{})}
	b.ghosts[k] = g
	b.ghosted.Store(true)
	var workers []chan ghostOp
	var wg sync.WaitGroup
	for s := len(ci.local); s < ci.kmax; s++ {
		ch := make(chan ghostOp, 1024)
		workers = append(workers, ch)
		wg.Add(1)
		go func(cm C.MPI_Comm) {
			defer wg.Done()
			b.ghost(cm, ch)
		}(ci.slots[s])
	}
	// One feeder hands every op to every ghost slot, in order.
	go func() {
		for o := range g.ch {
			for _, w := range workers {
				w <- o
			}
		}
		for _, w := range workers {
			close(w)
		}
		wg.Wait()
		close(g.done)
	}()
	return g
}

// ghost makes a ghost slot's calls on communicator cm.
func (b *Backend) ghost(cm C.MPI_Comm, ch chan ghostOp) {
	files := map[int]C.MPI_File{}
	for o := range ch {
		if o.op == trace.OpMPIFileOpen {
			cname := C.CString(o.name)
			var fh C.MPI_File
			if C.file_open(cm, cname, o.amode, b.info, &fh) == C.MPI_SUCCESS {
				files[o.file] = fh
			}
			C.free(unsafe.Pointer(cname))
			continue
		}
		fh, ok := files[o.file]
		if !ok {
			continue
		}
		var done C.longlong
		switch o.op {
		case trace.OpMPIFileClose:
			C.MPI_File_close(&fh)
			delete(files, o.file)
		case trace.OpMPIFileSetView:
			C.file_set_view(fh, 0, 0, 0, b.info)
		case trace.OpMPIFileSync:
			b.fileSync(fh)
		case trace.OpMPIFileSetSize:
			C.file_set_size(fh, C.longlong(max(o.size, 0)))
		case trace.OpMPIFilePreallocate:
			C.file_preallocate(fh, C.longlong(max(o.size, 0)))
		case trace.OpMPIFileSeekShared:
			C.file_seek(fh, C.longlong(o.off), C.int(o.whence), 1)
		default:
			if op, ok := dataOps[o.op]; ok {
				C.file_rw(fh, op, 0, nil, 0, &done)
			}
		}
	}
	for _, fh := range files {
		C.MPI_File_close(&fh)
	}
}
