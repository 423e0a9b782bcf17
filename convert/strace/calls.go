package strace

import (
	"fmt"
	"strings"

	"github.com/iotrace/iotrace/trace"
)

// ofd is an open file description: what an open creates and dup and fork
// share, with its position.
type ofd struct {
	name  string       // absolute path (or relative, when the directory is unknown)
	id    trace.PathID // interned on first use
	rec   bool         // calls on it become events
	flags uint32       // open flags, x86-64 numbering
	pos   int64
}

type fdEnt struct {
	f       *ofd
	cloexec bool
}

// fdTable is a descriptor table: shared by threads (CLONE_FILES), copied
// by fork.
type fdTable struct{ m map[int32]fdEnt }

func (t *fdTable) get(fd int32) *fdEnt {
	if e, ok := t.m[fd]; ok {
		return &e
	}
	return nil
}

func (t *fdTable) set(fd int32, f *ofd, cloexec bool) {
	if t.m == nil {
		t.m = map[int32]fdEnt{}
	}
	t.m[fd] = fdEnt{f: f, cloexec: cloexec}
}

func (t *fdTable) del(fd int32) { delete(t.m, fd) }

func (t *fdTable) clone() *fdTable {
	c := &fdTable{m: make(map[int32]fdEnt, len(t.m))}
	for k, v := range t.m {
		c.m[k] = v
	}
	return c
}

// ctx is one call being turned into an event.
type ctx struct {
	r        *Reader
	p        *proc
	c        *call
	rec      *record
	ev       trace.Event
	emit     bool // the call becomes an event
	unchosen bool // the call is of the model, on a path the rules leave out
}

type handler struct {
	op trace.Op // 0: bookkeeping only, never an event
	fn func(x *ctx) error
}

// Flag tables: names strace prints, values as the trace stores them
// (Linux x86-64 numbering).
var (
	openFlagNames = map[string]uint64{
		"O_RDONLY": 0, "O_WRONLY": 1, "O_RDWR": 2, "O_CREAT": 0x40, "O_EXCL": 0x80, "O_NOCTTY": 0x100,
		"O_TRUNC": 0x200, "O_APPEND": 0x400, "O_NONBLOCK": 0x800, "O_NDELAY": 0x800, "O_DSYNC": 0x1000,
		"O_ASYNC": 0x2000, "FASYNC": 0x2000, "O_DIRECT": 0x4000, "O_LARGEFILE": 0x8000,
		"O_DIRECTORY": 0x10000, "O_NOFOLLOW": 0x20000, "O_NOATIME": 0x40000, "O_CLOEXEC": 0x80000,
		"O_SYNC": 0x101000, "O_RSYNC": 0x101000, "O_PATH": 0x200000, "O_TMPFILE": 0x410000, "__O_TMPFILE": 0x400000,
	}
	atFlagNames = map[string]uint64{
		"AT_SYMLINK_NOFOLLOW": 0x100, "AT_REMOVEDIR": 0x200, "AT_EACCESS": 0x200, "AT_SYMLINK_FOLLOW": 0x400,
		"AT_NO_AUTOMOUNT": 0x800, "AT_EMPTY_PATH": 0x1000, "AT_STATX_SYNC_AS_STAT": 0,
		"AT_STATX_FORCE_SYNC": 0x2000, "AT_STATX_DONT_SYNC": 0x4000, "AT_RECURSIVE": 0x8000,
	}
	accessNames   = map[string]uint64{"F_OK": 0, "X_OK": 1, "W_OK": 2, "R_OK": 4}
	rwfNames      = map[string]uint64{"RWF_HIPRI": 1, "RWF_DSYNC": 2, "RWF_SYNC": 4, "RWF_NOWAIT": 8, "RWF_APPEND": 0x10}
	renameNames   = map[string]uint64{"RENAME_NOREPLACE": 1, "RENAME_EXCHANGE": 2, "RENAME_WHITEOUT": 4}
	closeRangeSet = map[string]uint64{"CLOSE_RANGE_UNSHARE": 2, "CLOSE_RANGE_CLOEXEC": 4}
	cloneNames    = map[string]uint64{"CLONE_VM": 0x100, "CLONE_FS": 0x200, "CLONE_FILES": 0x400, "CLONE_SIGHAND": 0x800,
		"CLONE_VFORK": 0x4000, "CLONE_THREAD": 0x10000}
	fdFlagNames = map[string]uint64{"FD_CLOEXEC": 1}
	noNames     = map[string]uint64{}
)

const (
	oCreat     = 0x40
	oExcl      = 0x80
	oTrunc     = 0x200
	oAppend    = 0x400
	oAccmode   = 3
	oCloexec   = 0x80000
	oTmpfile   = 0x400000
	atEmpty    = 0x1000
	cloneFS    = 0x200
	cloneFiles = 0x400
	fDupfd     = 0
	fDupfdCx   = 1030
	crUnshare  = 2
	crCloexec  = 4
	// setflMask are the status flags F_SETFL changes.
	setflMask = oAppend | 0x2000 | 0x4000 | 0x40000 | 0x800
)

var handlers map[string]handler

func init() {
	open := func(dir, pth, flags, mode int, fixed uint64, how bool) func(*ctx) error {
		return func(x *ctx) error {
			dirArg := ""
			if dir >= 0 {
				dirArg = x.c.arg(dir)
			}
			fl, m := fixed, uint64(0)
			var ok bool
			switch {
			case how: // openat2: struct open_how {flags, mode, resolve}
				v, _ := field(x.c.arg(flags), "flags")
				if fl, ok = flagsArg(v, openFlagNames); !ok {
					return fmt.Errorf("open_how %q", clip(x.c.arg(flags)))
				}
				if v, has := field(x.c.arg(flags), "mode"); has {
					m, _ = flagsArg(v, noNames)
				}
			case flags >= 0:
				if fl, ok = flagsArg(x.c.arg(flags), openFlagNames); !ok {
					return fmt.Errorf("flags %q", clip(x.c.arg(flags)))
				}
			}
			if mode >= 0 && mode < len(x.c.args) {
				m, _ = flagsArg(x.c.arg(mode), noNames)
			}
			return x.open(dirArg, x.c.arg(pth), uint32(fl), uint32(m))
		}
	}
	fdOnly := func(x *ctx) error { _, err := x.fdCall(0); return err }
	handlers = map[string]handler{
		"open":    {trace.OpOpen, open(-1, 0, 1, 2, 0, false)},
		"openat":  {trace.OpOpenat, open(0, 1, 2, 3, 0, false)},
		"creat":   {trace.OpCreat, open(-1, 0, -1, 1, oCreat|1|oTrunc, false)},
		"openat2": {trace.OpOpenat2, open(0, 1, 2, -1, 0, true)},
		"close": {trace.OpClose, func(x *ctx) error {
			_, err := x.fdCall(0)
			x.p.fds.del(x.ev.FD) // released even when close fails
			return err
		}},
		"close_range": {trace.OpCloseRange, (*ctx).closeRange},
		"read":        {trace.OpRead, rw(false, false, false)},
		"write":       {trace.OpWrite, rw(true, false, false)},
		"pread64":     {trace.OpPread, rw(false, true, false)},
		"pwrite64":    {trace.OpPwrite, rw(true, true, false)},
		"readv":       {trace.OpReadv, rw(false, false, true)},
		"writev":      {trace.OpWritev, rw(true, false, true)},
		"preadv":      {trace.OpPreadv, rw(false, true, true)},
		"pwritev":     {trace.OpPwritev, rw(true, true, true)},
		"preadv2":     {trace.OpPreadv2, rw(false, true, true)},
		"pwritev2":    {trace.OpPwritev2, rw(true, true, true)},
		"lseek":       {trace.OpLseek, (*ctx).lseek},
		"fsync":       {trace.OpFsync, fdOnly},
		"fdatasync":   {trace.OpFdatasync, fdOnly},
		"fstat":       {trace.OpFstat, func(x *ctx) error { f, err := x.fdCall(0); x.statSize(f, 1); return err }},
		"ftruncate": {trace.OpFtruncate, func(x *ctx) error {
			f, err := x.fdCall(0)
			if err != nil {
				return err
			}
			x.ev.Size = x.intArg(1)
			if f != nil && x.c.ret == 0 {
				x.r.setSize(f.name, x.ev.Size)
			}
			return nil
		}},
		"truncate": {trace.OpTruncate, func(x *ctx) error {
			x.ev.Size = x.intArg(1)
			name, err := x.pathCall("", x.c.arg(0), 0)
			if err == nil && x.c.ret == 0 {
				x.r.setSize(name, x.ev.Size)
			}
			return err
		}},
		"stat":       {trace.OpStat, statCall(-1, 0, -1, 1)},
		"stat64":     {trace.OpStat, statCall(-1, 0, -1, 1)},
		"lstat":      {trace.OpLstat, statCall(-1, 0, -1, 1)},
		"lstat64":    {trace.OpLstat, statCall(-1, 0, -1, 1)},
		"newfstatat": {trace.OpFstatat, statCall(0, 1, 3, 2)},
		"fstatat64":  {trace.OpFstatat, statCall(0, 1, 3, 2)},
		"statx":      {trace.OpStatx, statCall(0, 1, 2, 4)},
		"access": {trace.OpAccess, func(x *ctx) error {
			x.ev.Mode = uint32(x.flags(1, accessNames))
			_, err := x.pathCall("", x.c.arg(0), 0)
			return err
		}},
		"faccessat": {trace.OpAccess, func(x *ctx) error {
			x.ev.Mode = uint32(x.flags(2, accessNames))
			_, err := x.pathCall(x.c.arg(0), x.c.arg(1), 0)
			return err
		}},
		"faccessat2": {trace.OpAccess, func(x *ctx) error {
			x.ev.Mode = uint32(x.flags(2, accessNames))
			fl := x.flags(3, atFlagNames)
			x.ev.Flags = uint32(fl)
			_, err := x.pathCall(x.c.arg(0), x.c.arg(1), fl)
			return err
		}},
		"unlink": {trace.OpUnlink, func(x *ctx) error {
			name, err := x.pathCall("", x.c.arg(0), 0)
			if x.c.ret == 0 {
				x.r.forget(name)
			}
			return err
		}},
		"unlinkat": {trace.OpUnlinkat, func(x *ctx) error {
			x.ev.Flags = uint32(x.flags(2, atFlagNames))
			name, err := x.pathCall(x.c.arg(0), x.c.arg(1), 0)
			if x.c.ret == 0 {
				x.r.forget(name)
			}
			return err
		}},
		"rename":   {trace.OpRename, func(x *ctx) error { return x.rename("", x.c.arg(0), "", x.c.arg(1)) }},
		"renameat": {trace.OpRenameat, func(x *ctx) error { return x.rename(x.c.arg(0), x.c.arg(1), x.c.arg(2), x.c.arg(3)) }},
		"renameat2": {trace.OpRenameat2, func(x *ctx) error {
			x.ev.Flags = uint32(x.flags(4, renameNames))
			return x.rename(x.c.arg(0), x.c.arg(1), x.c.arg(2), x.c.arg(3))
		}},
		"mkdir": {trace.OpMkdir, func(x *ctx) error {
			x.ev.Mode = uint32(x.flags(1, noNames))
			_, err := x.pathCall("", x.c.arg(0), 0)
			return err
		}},
		"mkdirat": {trace.OpMkdirat, func(x *ctx) error {
			x.ev.Mode = uint32(x.flags(2, noNames))
			_, err := x.pathCall(x.c.arg(0), x.c.arg(1), 0)
			return err
		}},
		"rmdir": {trace.OpRmdir, func(x *ctx) error { _, err := x.pathCall("", x.c.arg(0), 0); return err }},
		"dup":   {trace.OpDup, func(x *ctx) error { return x.dup(false) }},
		"dup2":  {trace.OpDup2, func(x *ctx) error { return x.dup(false) }},
		"dup3": {trace.OpDup3, func(x *ctx) error {
			x.ev.Flags = uint32(x.flags(2, openFlagNames))
			return x.dup(x.ev.Flags&oCloexec != 0)
		}},
		"fcntl":   {trace.OpFcntl, (*ctx).fcntl},
		"fcntl64": {trace.OpFcntl, (*ctx).fcntl},

		// Bookkeeping: no events.
		"clone":           {0, (*ctx).clone},
		"clone3":          {0, (*ctx).clone},
		"fork":            {0, (*ctx).clone},
		"vfork":           {0, (*ctx).clone},
		"execve":          {0, func(x *ctx) error { return x.exec(1) }},
		"execveat":        {0, func(x *ctx) error { return x.exec(2) }},
		"chdir":           {0, (*ctx).chdir},
		"fchdir":          {0, (*ctx).fchdir},
		"sendfile":        {0, func(x *ctx) error { return x.moved(1, 2, 0, -1) }},
		"sendfile64":      {0, func(x *ctx) error { return x.moved(1, 2, 0, -1) }},
		"splice":          {0, func(x *ctx) error { return x.moved(0, 1, 2, 3) }},
		"copy_file_range": {0, func(x *ctx) error { return x.moved(0, 1, 2, 3) }},
	}
}

// intArg reads argument i as a number (0 if it is not one).
func (x *ctx) intArg(i int) int64 {
	v, _ := intArg(x.c.arg(i))
	return v
}

// flags reads argument i as flags named in table (0 if absent).
func (x *ctx) flags(i int, table map[string]uint64) uint64 {
	v, _ := flagsArg(x.c.arg(i), table)
	return v
}

// want marks the call an event if the rules choose f's file.
func (x *ctx) want(f *ofd) {
	if x.r.opts.All || (f != nil && f.rec) {
		x.emit = true
		if f != nil {
			if f.id == 0 {
				f.id = x.r.intern(f.name)
			}
			x.ev.Path = f.id
		}
		return
	}
	x.unchosen = true
}

// fdFile returns the open file description of fd, learning it from a -y
// decoration when the log did not show it opened (inherited descriptors,
// pipes, sockets).
func (x *ctx) fdFile(fd int32, decor string, decorated bool) *ofd {
	if e := x.p.fds.get(fd); e != nil {
		return e.f
	}
	if !decorated || fd < 0 {
		return nil
	}
	name := strings.TrimSuffix(decor, " (deleted)")
	f := &ofd{name: name, rec: x.r.choose(name, strings.HasPrefix(name, "/"))}
	if !strings.HasPrefix(name, "/") && !x.r.opts.All {
		f.rec = false // pipe:[…], socket:[…], anon_inode:[…]
	}
	x.p.fds.set(fd, f, false)
	if f.rec {
		x.r.st.Learnt++
	}
	return f
}

// fdCall decodes the descriptor argument i and chooses the call by its
// file.
func (x *ctx) fdCall(i int) (*ofd, error) {
	fd, decor, decorated, ok := fdArg(x.c.arg(i))
	if !ok {
		return nil, fmt.Errorf("descriptor %q", clip(x.c.arg(i)))
	}
	x.ev.FD = fd
	f := x.fdFile(fd, decor, decorated)
	x.want(f)
	return f, nil
}

// pathCall resolves a path argument and chooses the call by it. With
// AT_EMPTY_PATH and an empty path, the call is on dirfd itself.
func (x *ctx) pathCall(dirArg, pathArg string, flags uint64) (string, error) {
	if flags&atEmpty != 0 && (pathArg == `""` || pathArg == "") {
		fd, decor, decorated, ok := fdArg(dirArg)
		if !ok {
			return "", fmt.Errorf("descriptor %q", clip(dirArg))
		}
		x.ev.FD = fd
		f := x.fdFile(fd, decor, decorated)
		x.want(f)
		if f == nil {
			return "", nil
		}
		return f.name, nil
	}
	name, known, err := x.resolve(dirArg, pathArg)
	if err != nil {
		return "", err
	}
	if x.r.choose(name, known) {
		x.emit = true
		if name != "" {
			x.ev.Path = x.r.intern(name)
		}
	} else {
		x.unchosen = true
	}
	return name, nil
}

func (x *ctx) open(dirArg, pathArg string, flags, mode uint32) error {
	x.ev.Flags = flags
	if flags&(oCreat|oTmpfile) != 0 {
		x.ev.Mode = mode & 0o7777
	}
	name, known, err := x.resolve(dirArg, pathArg)
	if err != nil {
		return err
	}
	if !known && x.c.decorated {
		name, known = x.c.retPath, true // the kernel's name of the new descriptor
	}
	rec := x.r.choose(name, known)
	if rec {
		x.emit = true
		x.ev.Path = x.r.intern(name)
	} else {
		x.unchosen = true
	}
	if x.c.ret < 0 || !x.c.known {
		return nil
	}
	x.ev.FD = int32(x.c.ret)
	f := &ofd{name: name, rec: rec, flags: flags}
	if rec {
		f.id = x.ev.Path
	}
	x.p.fds.set(int32(x.c.ret), f, flags&oCloexec != 0)
	if (flags&oTrunc != 0 && flags&oAccmode != 0) || flags&(oCreat|oExcl) == oCreat|oExcl || x.c.name == "creat" {
		x.r.setSize(name, 0)
	}
	return nil
}

// rw decodes the read and write families.
func rw(write, positioned, vector bool) func(*ctx) error {
	return func(x *ctx) error {
		f, err := x.fdCall(0)
		if err != nil {
			return err
		}
		if vector {
			x.ev.Count = int32(x.intArg(2))
			sum, truncated, ok := iovSum(x.c.arg(1))
			if truncated {
				x.r.st.Truncated++
				sum = max(sum, x.c.ret)
			}
			if ok {
				x.ev.Size = sum
			}
		} else {
			x.ev.Size = x.intArg(2)
		}
		if !positioned {
			x.individual(f, write)
			return nil
		}
		off := 3
		x.ev.Offset = x.intArg(off)
		if x.c.name == "preadv2" || x.c.name == "pwritev2" {
			x.ev.Flags = uint32(x.flags(4, rwfNames))
			if x.ev.Offset == -1 {
				x.individual(f, write)
				return nil
			}
		}
		if write {
			x.appended(f)
		}
		return nil
	}
}

// individual sets the offset of a read or write at the file position and
// moves the position.
func (x *ctx) individual(f *ofd, write bool) {
	if f == nil {
		return
	}
	moved := max(x.c.ret, 0)
	off := f.pos
	if write && f.flags&oAppend != 0 {
		if size, ok := x.r.sizes[f.name]; ok {
			off = size // appends land at the end, wherever the position was
		}
	}
	if write && f.flags&oAppend != 0 && !x.r.exact[f.name] {
		x.r.st.Appends++
	}
	x.ev.Offset = off
	f.pos = off + moved
	if write {
		x.grow(f, off+moved)
	}
}

// appended corrects the offset of a positioned write to a file opened
// with O_APPEND (Linux appends it anyway) and follows the file's size.
func (x *ctx) appended(f *ofd) {
	if f == nil || x.c.ret < 0 {
		return
	}
	if f.flags&oAppend != 0 {
		if size, ok := x.r.sizes[f.name]; ok {
			x.ev.Offset = size
		}
	}
	x.grow(f, x.ev.Offset+x.c.ret)
}

// grow follows a write's end: a file is at least that long (a file
// whose size the log never showed is taken to be as long as what was
// written to it).
func (x *ctx) grow(f *ofd, end int64) {
	if size, ok := x.r.sizes[f.name]; !ok || end > size {
		x.r.sizes[f.name] = end
	}
}

func (x *ctx) lseek() error {
	f, err := x.fdCall(0)
	if err != nil {
		return err
	}
	x.ev.Offset = x.intArg(1)
	w, err := trace.ParseWhence(x.c.arg(2))
	if err != nil {
		return fmt.Errorf("whence %q", clip(x.c.arg(2)))
	}
	x.ev.Whence = w
	if f != nil && x.c.ret >= 0 && x.c.known {
		f.pos = x.c.ret
	}
	return nil
}

// statCall decodes the stat family: a path (relative to dirfd), flags,
// and the struct whose size the log shows.
func statCall(dir, pth, flags, buf int) func(*ctx) error {
	return func(x *ctx) error {
		var fl uint64
		if flags >= 0 {
			fl = x.flags(flags, atFlagNames)
			x.ev.Flags = uint32(fl)
		}
		dirArg := ""
		if dir >= 0 {
			dirArg = x.c.arg(dir)
		}
		name, err := x.pathCall(dirArg, x.c.arg(pth), fl)
		if err == nil && x.c.ret == 0 && name != "" {
			x.sizeFrom(name, x.c.arg(buf))
		}
		return err
	}
}

func (x *ctx) statSize(f *ofd, buf int) {
	if f != nil && x.c.ret == 0 {
		x.sizeFrom(f.name, x.c.arg(buf))
	}
}

// sizeFrom learns a file's size from a stat struct (st_size=, stx_size=).
func (x *ctx) sizeFrom(name, st string) {
	for _, k := range []string{"st_size", "stx_size"} {
		if v, ok := field(st, k); ok {
			if n, ok := intArg(v); ok && strings.Contains(st, "S_IFREG") {
				x.r.setSize(name, n)
			}
		}
	}
}

func (x *ctx) rename(od, op, nd, np string) error {
	o, oknown, err := x.resolve(od, op)
	if err != nil {
		return err
	}
	n, nknown, err := x.resolve(nd, np)
	if err != nil {
		return err
	}
	if x.r.choose(o, oknown) || x.r.choose(n, nknown) {
		x.emit = true
		x.ev.Path, x.ev.Path2 = x.r.intern(o), x.r.intern(n)
	} else {
		x.unchosen = true
	}
	if x.c.ret == 0 {
		if size, ok := x.r.sizes[o]; ok {
			x.r.sizes[n], x.r.exact[n] = size, x.r.exact[o]
			x.r.forget(o)
		}
	}
	return nil
}

func (x *ctx) dup(cloexec bool) error {
	f, err := x.fdCall(0)
	if err != nil {
		return err
	}
	if x.c.name != "dup" {
		nfd, _, _, ok := fdArg(x.c.arg(1))
		if ok && nfd != x.ev.FD && (f == nil || x.c.ret >= 0) {
			x.p.fds.del(nfd)
		}
	}
	if x.c.ret >= 0 && x.c.known && f != nil {
		x.p.fds.set(int32(x.c.ret), f, cloexec)
	}
	return nil
}

func (x *ctx) fcntl() error {
	fd, decor, decorated, ok := fdArg(x.c.arg(0))
	if !ok {
		return fmt.Errorf("descriptor %q", clip(x.c.arg(0)))
	}
	switch cmd := x.c.arg(1); cmd {
	case "F_DUPFD", "F_DUPFD_CLOEXEC":
		x.ev.Flags = fDupfd
		if cmd == "F_DUPFD_CLOEXEC" {
			x.ev.Flags = fDupfdCx
		}
		f, _ := x.fdCall(0)
		if x.c.ret >= 0 && x.c.known && f != nil {
			x.p.fds.set(int32(x.c.ret), f, cmd == "F_DUPFD_CLOEXEC")
		}
		return nil
	case "F_SETFL":
		if f := x.fdFile(fd, decor, decorated); f != nil && x.c.ret == 0 {
			v, _ := flagsArg(x.c.arg(2), openFlagNames)
			f.flags = f.flags&^setflMask | uint32(v)&setflMask
		}
	case "F_SETFD":
		if e := x.p.fds.get(fd); e != nil && x.c.ret == 0 {
			v, _ := flagsArg(x.c.arg(2), fdFlagNames)
			x.p.fds.set(fd, e.f, v&1 != 0)
		}
	}
	x.r.st.Skipped[x.c.name]++ // other fcntl commands are not events
	return nil
}

func (x *ctx) closeRange() error {
	first, last := x.intArg(0), x.intArg(1)
	if a := x.c.arg(1); a == "~0" || a == "~0U" || a == "-1" {
		last = 1<<32 - 1
	}
	fl := x.flags(2, closeRangeSet)
	x.ev.FD, x.ev.Size, x.ev.Flags = int32(first), last, uint32(fl)
	if fl&crUnshare != 0 {
		x.p.fds = x.p.fds.clone()
	}
	x.emit = x.r.opts.All
	if fl&crCloexec == 0 {
		for fd, e := range x.p.fds.m {
			if int64(fd) >= first && int64(fd) <= last {
				if e.f.rec {
					x.emit = true
				}
				if x.c.ret == 0 {
					delete(x.p.fds.m, fd)
				}
			}
		}
	}
	if !x.emit {
		x.unchosen = true
	}
	return nil
}

// clone follows clone, clone3, fork and vfork: the child gets a copy of
// the descriptor table, or shares it with CLONE_FILES.
func (x *ctx) clone() error {
	var flags uint64
	switch x.c.name {
	case "clone":
		for _, a := range x.c.args {
			if v, ok := strings.CutPrefix(a, "flags="); ok {
				flags, _ = flagsArg(v, cloneNames)
			}
		}
	case "clone3":
		if v, ok := field(x.c.arg(0), "flags"); ok {
			flags, _ = flagsArg(v, cloneNames)
		}
	}
	x.r.st.Skipped[x.c.name]++
	if x.c.ret <= 0 || !x.c.known {
		return nil
	}
	pid := int(x.c.ret)
	if recs, ok := x.r.waiting[pid]; ok {
		delete(x.r.waiting, pid)
		x.r.newProc(pid, x.p, flags)
		for _, rec := range recs {
			if err := x.r.handle(rec); err != nil {
				return err
			}
		}
		return nil
	}
	if x.r.procs[pid] == nil {
		x.r.children[pid] = child{parent: x.p, flags: flags}
	}
	return nil
}

// exec drops the close-on-exec descriptors; the first execve names the
// command of the trace.
func (x *ctx) exec(argv int) error {
	x.r.st.Skipped[x.c.name]++
	if x.c.ret != 0 || !x.c.known {
		return nil
	}
	t := x.p.fds.clone()
	for fd, e := range t.m {
		if e.cloexec {
			delete(t.m, fd)
		}
	}
	x.p.fds = t
	if len(x.r.meta.Command) == 0 {
		cmd := arrayStrings(x.c.arg(argv))
		// strace cuts strings at -s bytes; the file name is whole.
		if file, _, ok := unquote(x.c.arg(argv - 1)); ok && len(cmd) > 0 && strings.HasSuffix(cmd[0], "...") &&
			strings.HasPrefix(file, strings.TrimSuffix(cmd[0], "...")) {
			cmd[0] = file
		}
		x.r.meta.Command = cmd
	}
	return nil
}

func (x *ctx) chdir() error {
	x.r.st.Skipped[x.c.name]++
	if x.c.ret != 0 {
		return nil
	}
	if name, known, err := x.resolve("", x.c.arg(0)); err == nil && known {
		x.p.cwd.dir = name
	}
	return nil
}

func (x *ctx) fchdir() error {
	x.r.st.Skipped[x.c.name]++
	fd, decor, decorated, ok := fdArg(x.c.arg(0))
	if !ok || x.c.ret != 0 {
		return nil
	}
	if f := x.fdFile(fd, decor, decorated); f != nil && strings.HasPrefix(f.name, "/") {
		x.p.cwd.dir = f.name
	}
	return nil
}

// moved follows sendfile, splice and copy_file_range, which move the
// positions of the descriptors whose offset argument is NULL.
func (x *ctx) moved(in, inOff, out, outOff int) error {
	x.r.st.Skipped[x.c.name]++
	if x.c.ret <= 0 {
		return nil
	}
	move := func(fdIdx, offIdx int) {
		fd, decor, decorated, ok := fdArg(x.c.arg(fdIdx))
		if !ok {
			return
		}
		if offIdx >= 0 && x.c.arg(offIdx) != "NULL" {
			return
		}
		if f := x.fdFile(fd, decor, decorated); f != nil {
			f.pos += x.c.ret
		}
	}
	move(in, inOff)
	move(out, outOff)
	return nil
}

// getcwd tells the working directory.
func (x *ctx) getcwd() error {
	x.r.st.Skipped[x.c.name]++
	if d, _, ok := unquote(x.c.arg(0)); ok && x.c.ret > 0 && strings.HasPrefix(d, "/") {
		x.p.cwd.dir = d
	}
	return nil
}
