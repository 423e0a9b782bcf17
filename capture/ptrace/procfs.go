//go:build linux && (amd64 || arm64)

package ptrace

import (
	"bytes"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// procfs reads what the tracer needs from /proc without allocating:
// paths are built in a reused buffer and passed to raw system calls.
type procfs struct {
	path []byte
	link []byte
	info []byte
	st   unix.Stat_t
}

func newProcfs() *procfs {
	return &procfs{path: make([]byte, 0, 64), link: make([]byte, pathMax+64), info: make([]byte, 512)}
}

var atFdcwd = unix.AT_FDCWD

// build makes "/proc/TID/SUB[/FD]" NUL-terminated and returns a pointer
// to it for a system call.
func (p *procfs) build(tid int, sub string, fd int32) *byte {
	b := append(p.path[:0], "/proc/"...)
	b = strconv.AppendInt(b, int64(tid), 10)
	b = append(b, '/')
	b = append(b, sub...)
	if fd >= 0 {
		b = append(b, '/')
		b = strconv.AppendInt(b, int64(fd), 10)
	}
	b = append(b, 0)
	p.path = b
	return &b[0]
}

// readlink reads the link /proc/TID/SUB[/FD]. The result stays valid until
// the next readlink.
func (p *procfs) readlink(tid int, sub string, fd int32) ([]byte, error) {
	ptr := p.build(tid, sub, fd)
	n, _, e := unix.Syscall6(unix.SYS_READLINKAT, uintptr(atFdcwd), uintptr(unsafe.Pointer(ptr)),
		uintptr(unsafe.Pointer(&p.link[0])), uintptr(len(p.link)), 0, 0)
	if e != 0 {
		return nil, e
	}
	return p.link[:n], nil
}

// cwd returns the working directory of tid.
func (p *procfs) cwd(tid int) ([]byte, error) {
	b, err := p.readlink(tid, "cwd", -1)
	if err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b, []byte(" (deleted)")), nil
}

// fdinfo returns the file position and the open flags (in this
// architecture's numbering) of descriptor fd of tid.
func (p *procfs) fdinfo(tid int, fd int32) (pos int64, flags uint64, err error) {
	ptr := p.build(tid, "fdinfo", fd)
	r, _, e := unix.Syscall6(unix.SYS_OPENAT, uintptr(atFdcwd), uintptr(unsafe.Pointer(ptr)),
		unix.O_RDONLY|unix.O_CLOEXEC, 0, 0, 0)
	if e != 0 {
		return 0, 0, e
	}
	fdn := int(r)
	n, err := unix.Read(fdn, p.info)
	unix.Close(fdn)
	if err != nil {
		return 0, 0, err
	}
	pos, flags = parseFdinfo(p.info[:n])
	return pos, flags, nil
}

// parseFdinfo reads the "pos:" (decimal) and "flags:" (octal) lines of a
// /proc/PID/fdinfo/FD file; missing or malformed fields read as 0.
func parseFdinfo(b []byte) (pos int64, flags uint64) {
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if v, ok := field(line, "pos:"); ok {
			pos = parseInt(v, 10)
		} else if v, ok := field(line, "flags:"); ok {
			flags = uint64(parseInt(v, 8))
		}
	}
	return pos, flags
}

func field(line []byte, name string) ([]byte, bool) {
	if !bytes.HasPrefix(line, []byte(name)) {
		return nil, false
	}
	return bytes.TrimSpace(line[len(name):]), true
}

// parseInt reads the leading digits of b in base (8 or 10); it stops at
// the first other byte and saturates instead of overflowing.
func parseInt(b []byte, base int64) int64 {
	var v int64
	for _, c := range b {
		d := int64(c) - '0'
		if d < 0 || d >= base {
			break
		}
		if v > (1<<63-1-d)/base {
			return 1<<63 - 1
		}
		v = v*base + d
	}
	return v
}

// size returns the size of the file that descriptor fd of tid refers to.
func (p *procfs) size(tid int, fd int32) (int64, error) {
	ptr := p.build(tid, "fd", fd)
	_, _, e := unix.Syscall6(unix.SYS_NEWFSTATAT, uintptr(atFdcwd), uintptr(unsafe.Pointer(ptr)),
		uintptr(unsafe.Pointer(&p.st)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return p.st.Size, nil
}

// openFDs lists the open descriptors of process pid.
func openFDs(pid int) (map[int32]bool, error) {
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return nil, err
	}
	fds := make(map[int32]bool, len(ents))
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			fds[int32(n)] = true
		}
	}
	return fds, nil
}

// procComm is the command name of thread tid (/proc/TID/comm), "" when
// it cannot be read.
func procComm(tid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/comm")
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(b))
}
