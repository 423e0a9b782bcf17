package capture

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/iotrace/iotrace/launcher"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
	"github.com/iotrace/iotrace/trace/state"
)

// Recorder records the calls a Go program makes through it: file opens,
// reads, writes, seeks, syncs and closes (through File), a few metadata
// calls, and labelled regions. It is safe for concurrent use; every
// goroutine's events go to thread 0 of the recorder's rank.
//
//	rec, err := capture.Start("out.iot")
//	…
//	defer rec.Close()
//	f, err := rec.Create("dump.dat")
//	end := rec.Region("dump")
//	f.Write(buf)
//	end()
//	f.Close()
type Recorder struct {
	sink trace.Sink
	w    *format.Writer // nil when recording into a plain sink
	rank uint32
	base time.Time

	mu     sync.Mutex
	buf    []trace.Event
	err    error
	closed bool
	st     *state.Follower[struct{}, struct{}] // the descriptors, as the events say: positions

	stop chan struct{}
	done chan struct{}
}

// Start records into the trace out with the rank rules of iotrace record:
// the rank comes from the MPI launcher's environment (launcher.RankVars), and a
// parallel run writes one file per rank into the directory out (see
// OutputPath). Events are flushed to the file every second and at Close.
func Start(out string) (*Recorder, error) {
	r, err := launcher.Detect(os.Getenv)
	if err != nil {
		return nil, err
	}
	return StartRank(out, r)
}

// StartRank is Start with the rank given.
func StartRank(out string, r launcher.Rank) (*Recorder, error) {
	base := time.Now()
	host, _ := os.Hostname()
	m := trace.Meta{
		Command: os.Args,
		Clock:   "CLOCK_MONOTONIC",
		Epoch:   base.UnixNano(),
		Creator: "iotrace capture (Go API)",
	}
	w, _, err := Create(out, r, m, host, os.Getpid())
	if err != nil {
		return nil, err
	}
	rec := newRecorder(w.Rank(r.Rank), r.Rank, base)
	rec.w = w
	go rec.flusher(time.Second)
	return rec, nil
}

// NewRecorder records into sink as rank; times count from now. Close
// writes the last events; it does not close the sink.
func NewRecorder(sink trace.Sink, rank uint32) *Recorder {
	rec := newRecorder(sink, rank, time.Now())
	close(rec.done)
	return rec
}

func newRecorder(sink trace.Sink, rank uint32, base time.Time) *Recorder {
	return &Recorder{
		sink: sink, rank: rank, base: base, st: state.New[struct{}, struct{}](nil),
		buf:  make([]trace.Event, 0, trace.BatchSize),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
}

func (r *Recorder) flusher(every time.Duration) {
	defer close(r.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			r.Flush()
		}
	}
}

func (r *Recorder) now() int64 { return int64(time.Since(r.base)) }

// add records ev, which started at start (ns) and ends now.
func (r *Recorder) add(ev trace.Event, start int64) { r.record(ev, start, r.now()) }

// record records ev, which ran from start to end (ns).
func (r *Recorder) record(ev trace.Event, start, end int64) {
	ev.Rank, ev.Start, ev.Dur = r.rank, start, end-start
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.st.Apply(&ev)
	r.buf = append(r.buf, ev)
	if len(r.buf) >= trace.BatchSize {
		r.writeLocked()
	}
}

func (r *Recorder) writeLocked() {
	if len(r.buf) == 0 || r.err != nil {
		r.buf = r.buf[:0]
		return
	}
	// Goroutines finish calls out of order; a rank's stream is in call
	// (start) order.
	slices.SortStableFunc(r.buf, func(a, b trace.Event) int { return cmp.Compare(a.Start, b.Start) })
	r.err = r.sink.WriteEvents(r.buf)
	r.buf = r.buf[:0]
}

func (r *Recorder) intern(name string) trace.PathID {
	if abs, err := filepath.Abs(name); err == nil {
		name = abs
	}
	return r.sink.Intern(name)
}

// position returns the file position of descriptor fd as the recorded
// events leave it.
func (r *Recorder) position(fd int32) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d := r.st.Lookup(0, fd); d != nil && d.Pos >= 0 {
		return d.Pos
	}
	return 0
}

// Flush writes the events recorded so far (and, for a trace file, makes
// them survive a crash of the program).
func (r *Recorder) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writeLocked()
	if r.w != nil && r.err == nil && !r.closed {
		r.err = r.w.Flush()
	}
	return r.err
}

// Close writes the last events and closes the trace file. Calls made
// after Close are not recorded.
func (r *Recorder) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return r.err
	}
	r.writeLocked()
	r.closed = true
	r.mu.Unlock()
	select {
	case <-r.done:
	default:
		close(r.stop)
		<-r.done
	}
	if r.w != nil {
		if err := r.w.Close(); r.err == nil {
			r.err = err
		}
	}
	return r.err
}

// Region marks the start of a labelled region (an application phase,
// like a checkpoint dump) and returns the func that marks its end.
func (r *Recorder) Region(label string) (end func()) {
	id := r.sink.Intern(label)
	r.add(trace.Event{Op: trace.OpRegionBegin, Path: id}, r.now())
	var once sync.Once
	return func() {
		once.Do(func() { r.add(trace.Event{Op: trace.OpRegionEnd, Path: id}, r.now()) })
	}
}

// Mark records an instant with a label.
func (r *Recorder) Mark(label string) {
	r.add(trace.Event{Op: trace.OpMark, Path: r.sink.Intern(label)}, r.now())
}

// errnoRet is the Ret of a failed call: -errno, or -EIO for an error
// that carries none.
func errnoRet(err error) int64 {
	var e syscall.Errno
	if errors.As(err, &e) {
		return -int64(e)
	}
	return -int64(syscall.EIO)
}

// Create creates or truncates the named file, like os.Create.
func (r *Recorder) Create(name string) (*File, error) {
	return r.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

// Open opens the named file for reading, like os.Open.
func (r *Recorder) Open(name string) (*File, error) {
	return r.OpenFile(name, os.O_RDONLY, 0)
}

// OpenFile opens the named file like os.OpenFile and records the open.
func (r *Recorder) OpenFile(name string, flag int, perm os.FileMode) (*File, error) {
	ev := trace.Event{Op: trace.OpOpen, Path: r.intern(name), Flags: uint32(flag)}
	if flag&os.O_CREATE != 0 {
		ev.Mode = uint32(perm.Perm())
	}
	start := r.now()
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		ev.Ret = errnoRet(err)
		r.add(ev, start)
		return nil, err
	}
	fd := int32(f.Fd())
	ev.FD, ev.Ret = fd, int64(fd)
	r.add(ev, start)
	return &File{r: r, f: f, path: ev.Path, fd: fd, appending: flag&os.O_APPEND != 0}, nil
}

// Wrap records the calls made through the returned File on f, a file the
// program opened itself (its open is not recorded). Offsets start at f's
// current position; writes to a file opened with O_APPEND are recorded at
// the end of the file, where they land.
//
// The trace gets an inherit event for it: the descriptor, its file and
// position, as a capture records a descriptor a program had before it
// was seen.
func (r *Recorder) Wrap(f *os.File) *File {
	wf := &File{r: r, f: f, path: r.intern(f.Name()), fd: int32(f.Fd())}
	ev := trace.Event{Op: trace.OpInherit, FD: wf.fd, Ret: int64(wf.fd), Path: wf.path}
	if pos, err := f.Seek(0, io.SeekCurrent); err == nil {
		ev.Offset = pos
	}
	if wf.appending = appendMode(f); wf.appending {
		ev.Flags = trace.OAppend
	}
	r.add(ev, r.now())
	return wf
}

// Remove removes the named file or empty directory, like os.Remove, and
// records the unlink (or rmdir) that did it.
func (r *Recorder) Remove(name string) error {
	id := r.intern(name)
	start := r.now()
	err := syscall.Unlink(name)
	if err == nil {
		r.add(trace.Event{Op: trace.OpUnlink, Path: id}, start)
		return nil
	}
	start2 := r.now()
	err2 := syscall.Rmdir(name)
	if err2 == nil {
		r.add(trace.Event{Op: trace.OpRmdir, Path: id}, start2)
		return nil
	}
	r.add(trace.Event{Op: trace.OpUnlink, Path: id, Ret: errnoRet(err)}, start)
	if err2 != syscall.ENOTDIR {
		err = err2
	}
	return &fs.PathError{Op: "remove", Path: name, Err: err}
}

// Rename renames a file, like os.Rename.
func (r *Recorder) Rename(oldpath, newpath string) error {
	ev := trace.Event{Op: trace.OpRename, Path: r.intern(oldpath), Path2: r.intern(newpath)}
	start := r.now()
	err := os.Rename(oldpath, newpath)
	if err != nil {
		ev.Ret = errnoRet(err)
	}
	r.add(ev, start)
	return err
}

// Mkdir creates a directory, like os.Mkdir.
func (r *Recorder) Mkdir(name string, perm os.FileMode) error {
	ev := trace.Event{Op: trace.OpMkdir, Path: r.intern(name), Mode: uint32(perm.Perm())}
	start := r.now()
	err := os.Mkdir(name, perm)
	if err != nil {
		ev.Ret = errnoRet(err)
	}
	r.add(ev, start)
	return err
}

// Stat returns the named file's information, like os.Stat.
func (r *Recorder) Stat(name string) (os.FileInfo, error) {
	ev := trace.Event{Op: trace.OpStat, Path: r.intern(name)}
	start := r.now()
	fi, err := os.Stat(name)
	if err != nil {
		ev.Ret = errnoRet(err)
	}
	r.add(ev, start)
	return fi, err
}

// File is an open file whose calls are recorded. It has the methods of
// os.File that do I/O; File returns the os.File for anything else.
type File struct {
	r         *Recorder
	f         *os.File
	path      trace.PathID
	fd        int32
	appending bool

	mu sync.Mutex // orders the calls at the file position, whose offsets the recorder follows
}

// File returns the underlying os.File. Calls made on it directly are not
// recorded.
func (f *File) File() *os.File { return f.f }

// Name returns the name the file was opened with.
func (f *File) Name() string { return f.f.Name() }

// Fd returns the file descriptor.
func (f *File) Fd() uintptr { return uintptr(f.fd) }

func (f *File) event(op trace.Op) trace.Event {
	return trace.Event{Op: op, FD: f.fd, Path: f.path}
}

// result sets Ret from a byte count and an error (io.EOF is not a
// failure of the call).
func result(ev *trace.Event, n int, err error) {
	ev.Ret = int64(n)
	if err != nil && err != io.EOF && n == 0 {
		ev.Ret = errnoRet(err)
	}
}

// Read reads from the file position, like os.File.Read.
func (f *File) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ev := f.event(trace.OpRead)
	ev.Offset, ev.Size = f.r.position(f.fd), int64(len(p))
	start := f.r.now()
	n, err := f.f.Read(p)
	result(&ev, n, err)
	f.r.add(ev, start)
	return n, err
}

// Write writes at the file position (at the end for a file opened with
// O_APPEND), like os.File.Write.
func (f *File) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ev := f.event(trace.OpWrite)
	ev.Offset, ev.Size = f.r.position(f.fd), int64(len(p))
	start := f.r.now()
	n, err := f.f.Write(p)
	end := f.r.now()
	if f.appending {
		// The data went to the end of the file, wherever that was.
		if pos, serr := f.f.Seek(0, io.SeekCurrent); serr == nil {
			ev.Offset = pos - int64(n)
		}
	}
	result(&ev, n, err)
	f.r.record(ev, start, end)
	return n, err
}

// WriteString writes s, like os.File.WriteString.
func (f *File) WriteString(s string) (int, error) { return f.Write([]byte(s)) }

// ReadAt reads len(p) bytes at off, like os.File.ReadAt.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	ev := f.event(trace.OpPread)
	ev.Offset, ev.Size = off, int64(len(p))
	start := f.r.now()
	n, err := f.f.ReadAt(p, off)
	result(&ev, n, err)
	f.r.add(ev, start)
	return n, err
}

// WriteAt writes p at off, like os.File.WriteAt (which refuses a file
// opened with O_APPEND without a call, and so without an event).
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	if f.appending {
		return f.f.WriteAt(p, off)
	}
	ev := f.event(trace.OpPwrite)
	ev.Offset, ev.Size = off, int64(len(p))
	start := f.r.now()
	n, err := f.f.WriteAt(p, off)
	result(&ev, n, err)
	f.r.add(ev, start)
	return n, err
}

// Seek sets the file position, like os.File.Seek.
func (f *File) Seek(offset int64, whence int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ev := f.event(trace.OpLseek)
	ev.Offset, ev.Whence = offset, int32(whence)
	start := f.r.now()
	pos, err := f.f.Seek(offset, whence)
	if err != nil {
		ev.Ret = errnoRet(err)
	} else {
		ev.Ret = pos
	}
	f.r.add(ev, start)
	return pos, err
}

// Sync commits the file to stable storage, like os.File.Sync.
func (f *File) Sync() error {
	ev := f.event(trace.OpFsync)
	start := f.r.now()
	err := f.f.Sync()
	if err != nil {
		ev.Ret = errnoRet(err)
	}
	f.r.add(ev, start)
	return err
}

// Truncate changes the file's size, like os.File.Truncate.
func (f *File) Truncate(size int64) error {
	ev := f.event(trace.OpFtruncate)
	ev.Size = size
	start := f.r.now()
	err := f.f.Truncate(size)
	if err != nil {
		ev.Ret = errnoRet(err)
	}
	f.r.add(ev, start)
	return err
}

// Stat returns the file's information, like os.File.Stat.
func (f *File) Stat() (os.FileInfo, error) {
	ev := f.event(trace.OpFstat)
	start := f.r.now()
	fi, err := f.f.Stat()
	if err != nil {
		ev.Ret = errnoRet(err)
	}
	f.r.add(ev, start)
	return fi, err
}

// Close closes the file, like os.File.Close.
func (f *File) Close() error {
	ev := f.event(trace.OpClose)
	start := f.r.now()
	err := f.f.Close()
	if err != nil {
		ev.Ret = errnoRet(err)
	}
	f.r.add(ev, start)
	return err
}

// String describes the file for debugging.
func (f *File) String() string { return fmt.Sprintf("capture.File(%s, fd %d)", f.f.Name(), f.fd) }
