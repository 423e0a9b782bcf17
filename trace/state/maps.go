package state

import (
	"os"
	"sort"

	"github.com/iotrace/iotrace/trace"
)

// Maps are the file mappings of a process as a recorder sees them: the
// address ranges its recorded mmap calls returned, and the file range
// each one maps. A trace holds no addresses: munmap and msync name a
// mapping by an address, and a recorder turns that into the file and
// range (trace.OpMunmap, trace.OpMsync) with Pieces. Fork copies a
// process's mappings, exec drops them.
type Maps struct {
	m []Mapping // sorted by Addr, not overlapping
}

// A Mapping maps Len bytes of the file Path from file offset Off at
// address Addr.
type Mapping struct {
	Addr, Len uint64
	Path      trace.PathID
	Off       int64
}

// mapsLimit bounds the mappings a process keeps: beyond it the oldest
// are forgotten (their munmap goes unrecorded), so that a trace of a
// program that never unmaps cannot grow a recorder's memory without end.
const mapsLimit = 1 << 16

// pageSize is the unit the kernel maps and unmaps in: a mapping of n
// bytes holds whole pages, and munmap(addr, n) removes every page the
// range touches.
var pageSize = uint64(os.Getpagesize())

// pages rounds n up to whole pages (0 when that overflows).
func pages(n uint64) uint64 { return (n + pageSize - 1) &^ (pageSize - 1) }

// Map records a mapping of n bytes made at addr: its whole pages, as the
// kernel maps them (it replaces whatever was mapped there, as MAP_FIXED
// does).
func (ms *Maps) Map(addr, n uint64, path trace.PathID, off int64) {
	n = pages(n)
	if n == 0 || addr+n < addr {
		return
	}
	ms.cut(addr, n, nil)
	if len(ms.m) >= mapsLimit {
		ms.m = ms.m[1:]
	}
	i := sort.Search(len(ms.m), func(i int) bool { return ms.m[i].Addr > addr })
	ms.m = append(ms.m, Mapping{})
	copy(ms.m[i+1:], ms.m[i:])
	ms.m[i] = Mapping{Addr: addr, Len: n, Path: path, Off: off}
}

// Pieces returns the parts of the recorded mappings that the address
// range [addr, addr+n) covers, in address order, as mappings of their
// own.
func (ms *Maps) Pieces(addr, n uint64) []Mapping {
	var out []Mapping
	ms.each(addr, n, func(p Mapping) { out = append(out, p) })
	return out
}

// Unmap forgets the pages of the range [addr, addr+n), as munmap does
// (a mapping's last page is gone with the mapping, though its file ends
// before it), and returns the pieces of recorded mappings they held.
func (ms *Maps) Unmap(addr, n uint64) []Mapping {
	var out []Mapping
	if r := pages(n); r >= n {
		n = r // else it overflowed: cut ends the range at the top
	}
	ms.cut(addr, n, func(p Mapping) { out = append(out, p) })
	return out
}

// Len returns how many mappings are recorded.
func (ms *Maps) Len() int { return len(ms.m) }

// OneFile returns the file of the recorded mappings when they are all of
// one file.
func (ms *Maps) OneFile() (trace.PathID, bool) {
	if len(ms.m) == 0 {
		return 0, false
	}
	for _, m := range ms.m[1:] {
		if m.Path != ms.m[0].Path {
			return 0, false
		}
	}
	return ms.m[0].Path, true
}

// clone returns a copy (for a forked process).
func (ms *Maps) clone() Maps { return Maps{m: append([]Mapping(nil), ms.m...)} }

// each calls fn with the pieces of mappings inside [addr, addr+n).
func (ms *Maps) each(addr, n uint64, fn func(Mapping)) {
	end := addr + n
	if end < addr {
		end = ^uint64(0)
	}
	i := sort.Search(len(ms.m), func(i int) bool { return ms.m[i].Addr+ms.m[i].Len > addr })
	for ; i < len(ms.m) && ms.m[i].Addr < end; i++ {
		fn(clip(ms.m[i], addr, end))
	}
}

// clip returns the part of m inside [lo, hi).
func clip(m Mapping, lo, hi uint64) Mapping {
	a, b := max(m.Addr, lo), min(m.Addr+m.Len, hi)
	return Mapping{Addr: a, Len: b - a, Path: m.Path, Off: m.Off + int64(a-m.Addr)}
}

// cut removes [addr, addr+n) from the mappings, calling fn (if not nil)
// with each piece removed; a mapping cut in its middle becomes two.
func (ms *Maps) cut(addr, n uint64, fn func(Mapping)) {
	end := addr + n
	if end < addr {
		end = ^uint64(0)
	}
	i0 := sort.Search(len(ms.m), func(i int) bool { return ms.m[i].Addr+ms.m[i].Len > addr })
	if i0 == len(ms.m) || ms.m[i0].Addr >= end {
		return
	}
	keep := append(make([]Mapping, 0, len(ms.m)+1), ms.m[:i0]...)
	for _, m := range ms.m[i0:] {
		if m.Addr >= end {
			keep = append(keep, m)
			continue
		}
		if fn != nil {
			fn(clip(m, addr, end))
		}
		if m.Addr < addr {
			keep = append(keep, clip(m, m.Addr, addr))
		}
		if m.Addr+m.Len > end {
			keep = append(keep, clip(m, end, m.Addr+m.Len))
		}
	}
	ms.m = keep
}
