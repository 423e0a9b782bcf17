package fio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/iotrace/iotrace/convert/internal/textutil"
	"github.com/iotrace/iotrace/trace"
)

// Reader reads one fio iolog (version 2 or 3) as the events of one rank:
// open and close of the files, pread and pwrite at the logged offsets,
// fsync and fdatasync. Every file gets its own descriptor (3, 4, … in
// the order the log adds them). Version 3 timestamps become start times;
// version 2 logs have none, and their wait lines (milliseconds since the
// job started, as fio sleeps them) set the clock. Iologs record no
// durations: every call lasts 0 ns.
//
// trim has no counterpart in the event model: trims are counted
// (Skipped) and left out. A line fio would not accept stops the reader
// with an error naming the file and line.
type Reader struct {
	lines   *textutil.Lines
	name    string
	rank    uint32
	paths   *trace.Paths
	line    int
	version int
	now     int64 // ns: the clock of a version 2 log
	files   map[string]*logFile
	nextFD  int32
	err     error
	skipped map[string]int64
}

type logFile struct {
	id   trace.PathID
	fd   int32
	open bool
}

// NewReader returns a Reader of the iolog r, called name in errors, whose
// events belong to rank. Paths are interned in paths (nil: a table of the
// reader's own), so that the readers of several logs can share one.
func NewReader(r io.Reader, name string, rank uint32, paths *trace.Paths) *Reader {
	if paths == nil {
		paths = trace.NewPaths()
	}
	return &Reader{lines: textutil.NewLines(r, name), name: name, rank: rank, paths: paths, files: map[string]*logFile{}, nextFD: 3, skipped: map[string]int64{}}
}

// Path implements trace.Source.
func (r *Reader) Path(id trace.PathID) string { return r.paths.Lookup(id) }

// Skipped counts the lines read but left out, by action (trim, and wait
// in a version 3 log, which fio ignores too).
func (r *Reader) Skipped() map[string]int64 { return r.skipped }

// Version is the iolog's version, once the header is read.
func (r *Reader) Version() int { return r.version }

func (r *Reader) errorf(format string, args ...any) error {
	r.err = fmt.Errorf("%s:%d: %s", r.name, r.line, fmt.Sprintf(format, args...))
	return r.err
}

// ReadEvents implements trace.Source.
func (r *Reader) ReadEvents(evs []trace.Event) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n := 0
	for n < len(evs) {
		text, err := r.lines.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				r.line = r.lines.Line()
				r.err = err
				return n, err
			}
			if r.version == 0 {
				r.line = max(r.line, 1)
				return n, r.errorf("empty file: not a fio iolog")
			}
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		}
		r.line = r.lines.Line()
		if r.version == 0 {
			if err := r.header(text); err != nil {
				return n, err
			}
			continue
		}
		ok, err := r.parse(text, &evs[n])
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

func (r *Reader) header(text []byte) error {
	h := string(bytes.TrimRight(text, "\r \t"))
	switch h {
	case headerV2:
		r.version = 2
	case headerV3:
		r.version = 3
	default:
		if !isText(text) {
			return r.errorf("not a text fio iolog (a blktrace file? only iolog versions 2 and 3 are read)")
		}
		if strings.HasPrefix(h, "fio version ") {
			return r.errorf("%q: only iolog versions 2 and 3 are read", h)
		}
		return r.errorf("not a fio iolog: the first line must be %q or %q", headerV2, headerV3)
	}
	return nil
}

func isText(b []byte) bool {
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// parse reads one line into e and reports whether it is an event.
func (r *Reader) parse(text []byte, e *trace.Event) (bool, error) {
	all := strings.Fields(string(text))
	f := all
	if len(f) == 0 {
		return false, nil // fio skips blank lines too (they do not match)
	}
	var ts uint64
	if r.version == 3 {
		var err error
		if ts, err = strconv.ParseUint(f[0], 10, 63); err != nil {
			return false, r.errorf("timestamp %q: want microseconds since the start", f[0])
		}
		f = f[1:]
		if ts > 1<<63/1000 {
			return false, r.errorf("timestamp %d µs is out of range", ts)
		}
	}
	if len(f) != 2 && len(f) != 4 {
		return false, r.errorf("want %sFILENAME ACTION or %sFILENAME ACTION OFFSET LENGTH, got %d fields", tsWord(r.version), tsWord(r.version), len(all))
	}
	name, action := f[0], f[1]
	if len(name) > maxName {
		return false, r.errorf("file name of %d bytes: fio reads at most %d", len(name), maxName)
	}
	if err := textutil.CheckPath(len(name)); err != nil {
		return false, r.errorf("file name: %v", err)
	}
	start := r.now
	if r.version == 3 {
		start = int64(ts) * 1000
	}
	*e = trace.Event{Rank: r.rank, Start: start}
	if len(f) == 2 {
		switch action {
		case "add":
			if _, ok := r.files[name]; !ok {
				r.files[name] = &logFile{id: r.paths.Intern(name), fd: r.nextFD}
				r.nextFD++
			}
			return false, nil
		case "open", "close":
			lf := r.files[name]
			if lf == nil {
				return false, r.errorf("%s of %s, which the log has not added", action, name)
			}
			e.Path, e.FD = lf.id, lf.fd
			if action == "open" {
				e.Op, e.Flags, e.Mode, e.Ret = trace.OpOpen, trace.ORdwr|trace.OCreat, 0o644, int64(lf.fd)
				lf.open = true
			} else {
				e.Op = trace.OpClose
				lf.open = false
			}
			return true, nil
		}
		return false, r.errorf("file action %q: want add, open or close", action)
	}
	off, err := strconv.ParseUint(f[2], 10, 63)
	if err != nil {
		return false, r.errorf("offset %q: want a byte offset", f[2])
	}
	n, err := strconv.ParseUint(f[3], 10, 32)
	if err != nil {
		return false, r.errorf("length %q: want bytes, at most %d", f[3], uint64(maxLen))
	}
	if off+n > 1<<63-1 && action != "wait" {
		return false, r.errorf("offset %d and length %d end past the largest file offset (2^63-1)", off, n)
	}
	if action == "wait" {
		if r.version == 3 {
			r.skipped["wait"]++ // fio ignores waits in version 3 logs
			return false, nil
		}
		if off > (1<<63-1)/1000000 {
			return false, r.errorf("wait %d ms is out of range", off)
		}
		r.now = max(r.now, int64(off)*1e6)
		return false, nil
	}
	lf := r.files[name]
	if lf == nil {
		return false, r.errorf("%s on %s, which the log has not added", action, name)
	}
	if !lf.open {
		return false, r.errorf("%s on %s, which is not open", action, name)
	}
	e.Path, e.FD = lf.id, lf.fd
	switch action {
	case "read", "write":
		e.Op, e.Offset, e.Size, e.Ret = trace.OpPread, int64(off), int64(n), int64(n)
		if action == "write" {
			e.Op = trace.OpPwrite
		}
	case "sync":
		e.Op = trace.OpFsync
	case "datasync":
		e.Op = trace.OpFdatasync
	case "trim":
		r.skipped["trim"]++
		return false, nil
	default:
		return false, r.errorf("I/O action %q: want read, write, sync, datasync, trim or wait", action)
	}
	return true, nil
}

func tsWord(v int) string {
	if v == 3 {
		return "TIMESTAMP "
	}
	return ""
}
