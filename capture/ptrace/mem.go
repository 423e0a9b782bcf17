//go:build linux && (amd64 || arm64)

package ptrace

import (
	"bytes"
	"errors"

	"golang.org/x/sys/unix"
)

// pathMax bounds the strings read from a tracee, like the kernel does.
const pathMax = 4096

// memReader reads tracee memory with process_vm_readv, falling back to
// PTRACE_PEEKDATA where that fails (a read that crosses into an unmapped
// page fails whole, so strings are read page by page). Its buffers are
// reused: nothing is allocated per read.
type memReader struct {
	page int
	liov [1]unix.Iovec
	riov [1]unix.RemoteIovec
	str  []byte // the last string read
	word [8]byte
}

func newMemReader() *memReader {
	return &memReader{page: unix.Getpagesize(), str: make([]byte, pathMax+8)}
}

// readv reads len(dst) bytes at addr in one process_vm_readv call, and
// returns how many it read.
func (m *memReader) readv(tid int, addr uint64, dst []byte) (int, error) {
	m.liov[0].Base = &dst[0]
	m.liov[0].SetLen(len(dst))
	m.riov[0] = unix.RemoteIovec{Base: uintptr(addr), Len: len(dst)}
	return unix.ProcessVMReadv(tid, m.liov[:], m.riov[:], 0)
}

// peek reads dst at addr word by word with PTRACE_PEEKDATA.
func (m *memReader) peek(tid int, addr uint64, dst []byte) error {
	for len(dst) > 0 {
		// Aligned word reads never cross into a page the string does not
		// touch.
		base := addr &^ 7
		if _, err := unix.PtracePeekData(tid, uintptr(base), m.word[:]); err != nil {
			return err
		}
		n := copy(dst, m.word[addr-base:])
		dst = dst[n:]
		addr += uint64(n)
	}
	return nil
}

// read fills dst from tracee memory at addr.
func (m *memReader) read(tid int, addr uint64, dst []byte) error {
	if len(dst) == 0 {
		return nil
	}
	if addr == 0 {
		return unix.EFAULT
	}
	if n, err := m.readv(tid, addr, dst); err == nil && n == len(dst) {
		return nil
	}
	// Page by page, then word by word for the pages that still fail.
	for len(dst) > 0 {
		chunk := min(len(dst), m.page-int(addr%uint64(m.page)))
		n, err := m.readv(tid, addr, dst[:chunk])
		if err != nil || n < chunk {
			if n < 0 {
				n = 0
			}
			if perr := m.peek(tid, addr+uint64(n), dst[n:chunk]); perr != nil {
				return perr
			}
		}
		dst = dst[chunk:]
		addr += uint64(chunk)
	}
	return nil
}

// errNoNUL is returned for a string longer than pathMax.
var errNoNUL = errors.New("string too long")

// readString reads the NUL-terminated string at addr. The result stays
// valid until the next readString.
func (m *memReader) readString(tid int, addr uint64) ([]byte, error) {
	if addr == 0 {
		return nil, unix.EFAULT
	}
	buf := m.str[:0]
	for len(buf) < pathMax {
		chunk := min(pathMax-len(buf), m.page-int(addr%uint64(m.page)))
		dst := m.str[len(buf) : len(buf)+chunk]
		n, err := m.readv(tid, addr, dst)
		if err != nil || n <= 0 {
			// The page may still be readable through ptrace (memory the
			// tracee cannot read either gives EFAULT there too).
			if perr := m.peek(tid, addr, dst); perr != nil {
				return nil, perr
			}
			n = chunk
		}
		if i := bytes.IndexByte(dst[:n], 0); i >= 0 {
			return m.str[:len(buf)+i], nil
		}
		buf = m.str[:len(buf)+n]
		addr += uint64(n)
	}
	return nil, errNoNUL
}
