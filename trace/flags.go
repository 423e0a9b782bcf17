package trace

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Open flags are stored with their Linux x86-64 values on every
// architecture; a capture on another architecture translates them.
var openFlagNames = []struct {
	name string
	bit  uint32
}{
	{"O_CREAT", 0x40}, {"O_EXCL", 0x80}, {"O_NOCTTY", 0x100}, {"O_TRUNC", 0x200},
	{"O_APPEND", 0x400}, {"O_NONBLOCK", 0x800}, {"O_DSYNC", 0x1000}, {"O_ASYNC", 0x2000},
	{"O_DIRECT", 0x4000}, {"O_LARGEFILE", 0x8000}, {"O_DIRECTORY", 0x10000},
	{"O_NOFOLLOW", 0x20000}, {"O_NOATIME", 0x40000}, {"O_CLOEXEC", 0x80000},
	{"O_SYNC", 0x101000}, {"O_PATH", 0x200000}, {"O_TMPFILE", 0x410000},
}

// Access modes of open flags.
const (
	ORdonly  = 0
	OWronly  = 1
	ORdwr    = 2
	OAccMode = 3
	OCreat   = 0x40
	OExcl    = 0x80
	OTrunc   = 0x200
	OAppend  = 0x400
	ODirect  = 0x4000
	OSync    = 0x101000
	ODsync   = 0x1000
)

// FormatOpenFlags renders open flags as "O_WRONLY|O_CREAT|O_TRUNC". Bits
// without a name are printed in hex.
func FormatOpenFlags(f uint32) string {
	var parts []string
	switch f & OAccMode {
	case ORdonly:
		parts = append(parts, "O_RDONLY")
	case OWronly:
		parts = append(parts, "O_WRONLY")
	case ORdwr:
		parts = append(parts, "O_RDWR")
	default:
		parts = append(parts, "0x3")
	}
	rest := f &^ OAccMode
	// Composite flags first so O_SYNC does not print as O_DSYNC|0x100000.
	for _, fl := range []struct {
		name string
		bit  uint32
	}{{"O_SYNC", 0x101000}, {"O_TMPFILE", 0x410000}} {
		if rest&fl.bit == fl.bit {
			parts = append(parts, fl.name)
			rest &^= fl.bit
		}
	}
	for _, fl := range openFlagNames {
		if rest&fl.bit == fl.bit && fl.bit&(fl.bit-1) == 0 {
			parts = append(parts, fl.name)
			rest &^= fl.bit
		}
	}
	if rest != 0 {
		parts = append(parts, fmt.Sprintf("0x%x", rest))
	}
	return strings.Join(parts, "|")
}

// MPI-IO access modes (MPI_MODE_*), stored with the values MPICH and
// Open MPI both use.
var mpiModeNames = []struct {
	name string
	bit  uint32
}{
	{"MPI_MODE_CREATE", 1}, {"MPI_MODE_RDONLY", 2}, {"MPI_MODE_WRONLY", 4},
	{"MPI_MODE_RDWR", 8}, {"MPI_MODE_DELETE_ON_CLOSE", 16}, {"MPI_MODE_UNIQUE_OPEN", 32},
	{"MPI_MODE_EXCL", 64}, {"MPI_MODE_APPEND", 128}, {"MPI_MODE_SEQUENTIAL", 256},
}

// MPI amode bits.
const (
	MPIModeCreate = 1
	MPIModeRdonly = 2
	MPIModeWronly = 4
	MPIModeRdwr   = 8
	MPIModeExcl   = 64
	MPIModeAppend = 128
)

// FormatMPIMode renders an MPI amode as "MPI_MODE_CREATE|MPI_MODE_WRONLY".
func FormatMPIMode(f uint32) string {
	var parts []string
	for _, m := range mpiModeNames {
		if f&m.bit != 0 {
			parts = append(parts, m.name)
			f &^= m.bit
		}
	}
	if f != 0 {
		parts = append(parts, fmt.Sprintf("0x%x", f))
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, "|")
}

// InMPIIO marks, in Flags, a POSIX call an MPI library made inside an
// MPI-IO call (the preload shim records both): reports show such calls
// in rows of their own and leave them out of totals, and a replay does
// not replay them, as its MPI-IO call makes its own.
const InMPIIO uint32 = 1 << 31

// inMPIIOName is InMPIIO's name in FormatFlags and ParseFlags.
const inMPIIOName = "IN_MPIIO"

// SizeSeen marks, in the Flags of a call of the stat family (stat,
// lstat, fstat, fstatat, statx) that succeeded, that Size is the size of
// the regular file it found (st_size), as the recorder read it from the
// call's result; in those of a rename or link, the size of the regular
// file it moved or linked, as the recorder looked just before it. A
// replay prepares a file the trace found and did not make with that
// size, though the trace never read it (rsync's quick check, make,
// ls -l, find -exec mv). Traces written before recorders read it hold
// none.
const SizeSeen uint32 = 1 << 29

// sizeSeenName is SizeSeen's name in FormatFlags and ParseFlags.
const sizeSeenName = "SIZE_SEEN"

// SeesSize reports whether op's events may carry SizeSeen: the stat
// family (the size it found), rename and link (the size of the file
// moved or linked).
func SeesSize(op Op) bool {
	switch op.Info().Family {
	case "stat", "rename", "link":
		return true
	}
	return false
}

// FormatFlags renders the flags of an event the way its op reads them.
func FormatFlags(op Op, f uint32) string {
	if f&SizeSeen != 0 && SeesSize(op) {
		if rest := f &^ SizeSeen; rest != 0 {
			return FormatFlags(op, rest) + "|" + sizeSeenName
		}
		return sizeSeenName
	}
	if c := op.Class(); f&InMPIIO != 0 && (c == ClassPOSIX || c == ClassMeta) {
		if rest := f &^ InMPIIO; rest != 0 || op.Info().Family == "open" {
			return FormatFlags(op, rest) + "|" + inMPIIOName
		}
		return inMPIIOName
	}
	if op.Info().Class == ClassMPIIO {
		return FormatMPIMode(f)
	}
	switch op.Info().Family {
	case "open":
		return FormatOpenFlags(f)
	}
	if f == 0 {
		return "0"
	}
	return fmt.Sprintf("0x%x", f)
}

// ParseFlags reads flags written by FormatFlags or FormatOpenFlags or
// FormatMPIMode, or a plain number (decimal, 0x hex, 0 octal).
func ParseFlags(s string) (uint32, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	var f uint32
	for _, part := range strings.Split(s, "|") {
		part = strings.TrimSpace(part)
		if v, err := strconv.ParseUint(part, 0, 32); err == nil {
			f |= uint32(v)
			continue
		}
		switch part {
		case inMPIIOName:
			f |= InMPIIO
			continue
		case sizeSeenName:
			f |= SizeSeen
			continue
		case "O_RDONLY":
			continue
		case "O_WRONLY":
			f |= OWronly
			continue
		case "O_RDWR":
			f |= ORdwr
			continue
		}
		found := false
		for _, fl := range openFlagNames {
			if fl.name == part {
				f |= fl.bit
				found = true
				break
			}
		}
		for _, m := range mpiModeNames {
			if !found && m.name == part {
				f |= m.bit
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("unknown flag %q", part)
		}
	}
	return f, nil
}

// WhenceName names a seek whence.
func WhenceName(w int32) string {
	switch w {
	case 0:
		return "SEEK_SET"
	case 1:
		return "SEEK_CUR"
	case 2:
		return "SEEK_END"
	case 3:
		return "SEEK_DATA"
	case 4:
		return "SEEK_HOLE"
	}
	return strconv.Itoa(int(w))
}

// ParseWhence reads a whence name or number.
func ParseWhence(s string) (int32, error) {
	for w := int32(0); w <= 4; w++ {
		if s == WhenceName(w) {
			return w, nil
		}
	}
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("unknown whence %q", s)
	}
	return int32(v), nil
}

// Linux errno names (x86-64 and arm64 share these values).
var errnoNames = map[int64]string{
	1: "EPERM", 2: "ENOENT", 3: "ESRCH", 4: "EINTR", 5: "EIO", 6: "ENXIO", 7: "E2BIG",
	8: "ENOEXEC", 9: "EBADF", 10: "ECHILD", 11: "EAGAIN", 12: "ENOMEM", 13: "EACCES",
	14: "EFAULT", 15: "ENOTBLK", 16: "EBUSY", 17: "EEXIST", 18: "EXDEV", 19: "ENODEV",
	20: "ENOTDIR", 21: "EISDIR", 22: "EINVAL", 23: "ENFILE", 24: "EMFILE", 25: "ENOTTY",
	26: "ETXTBSY", 27: "EFBIG", 28: "ENOSPC", 29: "ESPIPE", 30: "EROFS", 31: "EMLINK",
	32: "EPIPE", 33: "EDOM", 34: "ERANGE", 35: "EDEADLK", 36: "ENAMETOOLONG", 37: "ENOLCK",
	38: "ENOSYS", 39: "ENOTEMPTY", 40: "ELOOP", 61: "ENODATA", 75: "EOVERFLOW",
	95: "EOPNOTSUPP", 110: "ETIMEDOUT", 122: "EDQUOT", 116: "ESTALE",
}

// errnoByName finds errno values by name; made when a name is first
// parsed, not at every command's start.
var errnoByName = sync.OnceValue(func() map[string]int64 {
	m := map[string]int64{}
	for v, n := range errnoNames {
		m[n] = v
	}
	return m
})

// ParseErrno reads an errno name ("ENOENT") and returns its positive value.
func ParseErrno(name string) (int64, bool) {
	v, ok := errnoByName()[name]
	return v, ok
}

// ErrnoNames lists the errno names this package knows, sorted.
func ErrnoNames() []string {
	var out []string
	for n := range errnoByName() {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
