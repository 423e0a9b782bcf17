package strace

import (
	"fmt"
	"strings"
	"sync"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
)

// ctx is one call being turned into an event.
type ctx struct {
	r        *Reader
	p        *proc
	c        *call
	rec      *record
	ev       trace.Event
	emit     bool // the call becomes an event
	unchosen bool // the call is of the model, on a path the rules leave out
	skipped  bool // the call is outside the model (an fcntl command, a mapping without a file)
	// after, if set, runs once the event is followed, with what the
	// follower says of it.
	after func(st step) error
}

type handler struct {
	op trace.Op // 0: bookkeeping only, never an event of its own
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
	fdFlagNames   = map[string]uint64{"FD_CLOEXEC": 1}
	fallocNames   = map[string]uint64{"FALLOC_FL_KEEP_SIZE": 1, "FALLOC_FL_PUNCH_HOLE": 2, "FALLOC_FL_NO_HIDE_STALE": 4, "FALLOC_FL_COLLAPSE_RANGE": 8, "FALLOC_FL_ZERO_RANGE": 0x10, "FALLOC_FL_INSERT_RANGE": 0x20, "FALLOC_FL_UNSHARE_RANGE": 0x40}
	adviceNames   = map[string]uint64{"POSIX_FADV_NORMAL": 0, "POSIX_FADV_RANDOM": 1, "POSIX_FADV_SEQUENTIAL": 2, "POSIX_FADV_WILLNEED": 3, "POSIX_FADV_DONTNEED": 4, "POSIX_FADV_NOREUSE": 5}
	protNames     = map[string]uint64{"PROT_NONE": 0, "PROT_READ": 1, "PROT_WRITE": 2, "PROT_EXEC": 4, "PROT_SEM": 8, "PROT_GROWSDOWN": 0x01000000, "PROT_GROWSUP": 0x02000000}
	msyncNames    = map[string]uint64{"MS_ASYNC": 1, "MS_INVALIDATE": 2, "MS_SYNC": 4}
	mapNames      = map[string]uint64{"MAP_SHARED": 1, "MAP_PRIVATE": 2, "MAP_SHARED_VALIDATE": 3, "MAP_FIXED": 0x10, "MAP_ANONYMOUS": 0x20, "MAP_ANON": 0x20, "MAP_32BIT": 0x40, "MAP_GROWSDOWN": 0x100, "MAP_DENYWRITE": 0x800, "MAP_EXECUTABLE": 0x1000, "MAP_LOCKED": 0x2000, "MAP_NORESERVE": 0x4000, "MAP_POPULATE": 0x8000, "MAP_NONBLOCK": 0x10000, "MAP_STACK": 0x20000, "MAP_HUGETLB": 0x40000, "MAP_SYNC": 0x80000, "MAP_FIXED_NOREPLACE": 0x100000, "MAP_UNINITIALIZED": 0x4000000}
	fcntlCommands = map[string]uint32{"F_DUPFD": trace.FDupfd, "F_DUPFD_CLOEXEC": trace.FDupfdCloexec, "F_SETFD": trace.FSetfd, "F_SETFL": trace.FSetfl}
	noNames       = map[string]uint64{}
)

const (
	oCreat      = 0x40
	oExcl       = 0x80
	oTrunc      = 0x200
	oAccmode    = 3
	oCloexec    = 0x80000
	oTmpfile    = 0x400000
	atEmpty     = 0x1000
	atSymFollow = 0x400
	cloneVM     = 0x100
	cloneFS     = 0x200
	cloneFiles  = 0x400
	cloneVfork  = 0x4000
	cloneThrd   = 0x10000
	crUnshare   = 2
	mapAnon     = 0x20
	// cloneKept are the clone flags a fork or clone event carries.
	cloneKept = cloneFiles | cloneVfork | cloneVM | cloneThrd
)

// handlers returns the calls the reader turns into events, by name,
// made at the first call read rather than at every command's start (most
// commands read no strace).
func handlers() map[string]handler {
	handlersOnce.Do(makeHandlers)
	return handlerMap
}

var (
	handlersOnce sync.Once
	handlerMap   map[string]handler
)

func makeHandlers() {
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
	handlerMap = map[string]handler{
		"open":        {trace.OpOpen, open(-1, 0, 1, 2, 0, false)},
		"openat":      {trace.OpOpenat, open(0, 1, 2, 3, 0, false)},
		"creat":       {trace.OpCreat, open(-1, 0, -1, 1, oCreat|1|oTrunc, false)},
		"openat2":     {trace.OpOpenat2, open(0, 1, 2, -1, 0, true)},
		"close":       {trace.OpClose, fdOnly}, // the follower releases the descriptor even when close fails
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
		"syncfs":      {trace.OpSyncfs, fdOnly},
		"sync": {trace.OpSync, func(x *ctx) error {
			x.emit = true // every file is written back, chosen ones too
			return nil
		}},
		"fstat": {trace.OpFstat, func(x *ctx) error {
			d, err := x.fdCall(0)
			if d != nil && x.c.ret == 0 {
				if n, ok := x.r.sizeFrom(x.r.nameOf(d), x.c.arg(1)); ok {
					x.ev.Size, x.ev.Flags = n, x.ev.Flags|trace.SizeSeen
				}
			}
			return err
		}},
		"ftruncate": {trace.OpFtruncate, func(x *ctx) error {
			d, err := x.fdCall(0)
			x.ev.Size = x.intArg(1)
			if d != nil && x.c.ret == 0 {
				delete(x.r.statSize, x.r.nameOf(d))
			}
			return err
		}},
		"truncate": {trace.OpTruncate, func(x *ctx) error {
			x.ev.Size = x.intArg(1)
			name, err := x.pathCall("", x.c.arg(0), 0)
			if err == nil && x.c.ret == 0 {
				delete(x.r.statSize, name)
			}
			return err
		}},
		"fallocate": {trace.OpFallocate, func(x *ctx) error {
			_, err := x.fdCall(0)
			x.ev.Flags = uint32(x.flags(1, fallocNames))
			x.ev.Offset, x.ev.Size = x.intArg(2), x.intArg(3)
			return err
		}},
		"fadvise64":    {trace.OpFadvise, (*ctx).fadvise},
		"fadvise64_64": {trace.OpFadvise, (*ctx).fadvise},
		"mmap":         {trace.OpMmap, func(x *ctx) error { return x.mmap(1) }},
		"mmap2":        {trace.OpMmap, func(x *ctx) error { return x.mmap(4096) }},
		"munmap":       {trace.OpMunmap, func(x *ctx) error { return x.unmapped(false) }},
		"msync":        {trace.OpMsync, func(x *ctx) error { return x.unmapped(true) }},
		"readahead": {trace.OpReadahead, func(x *ctx) error {
			_, err := x.fdCall(0)
			x.ev.Offset, x.ev.Size = x.intArg(1), x.intArg(2)
			return err
		}},
		"getdents":   {trace.OpGetdents, getdents},
		"getdents64": {trace.OpGetdents, getdents},
		// Copies: (fd_in, off_in, fd_out, off_out, len, flags), and
		// sendfile(out_fd, in_fd, offset, count).
		"copy_file_range": {trace.OpCopyFileRange, func(x *ctx) error { return x.copy(0, 1, 2, 3, 4) }},
		"splice":          {trace.OpSplice, func(x *ctx) error { return x.copy(0, 1, 2, 3, 4) }},
		"sendfile":        {trace.OpSendfile, func(x *ctx) error { return x.copy(1, 2, 0, -1, 3) }},
		"sendfile64":      {trace.OpSendfile, func(x *ctx) error { return x.copy(1, 2, 0, -1, 3) }},

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
		"readlink": {trace.OpReadlink, func(x *ctx) error {
			x.ev.Size = x.intArg(2)
			_, err := x.pathCall("", x.c.arg(0), 0)
			return err
		}},
		"readlinkat": {trace.OpReadlinkat, func(x *ctx) error {
			// An empty path reads the link open on dirfd (O_PATH).
			x.ev.Size = x.intArg(3)
			_, err := x.pathCall(x.c.arg(0), x.c.arg(1), atEmpty)
			return err
		}},
		"unlink": {trace.OpUnlink, func(x *ctx) error {
			name, err := x.pathCall("", x.c.arg(0), 0)
			if x.c.ret == 0 {
				delete(x.r.statSize, name)
			}
			return err
		}},
		"unlinkat": {trace.OpUnlinkat, func(x *ctx) error {
			x.ev.Flags = uint32(x.flags(2, atFlagNames))
			name, err := x.pathCall(x.c.arg(0), x.c.arg(1), 0)
			if x.c.ret == 0 {
				delete(x.r.statSize, name)
			}
			return err
		}},
		"rename":   {trace.OpRename, func(x *ctx) error { return x.rename("", x.c.arg(0), "", x.c.arg(1)) }},
		"renameat": {trace.OpRenameat, func(x *ctx) error { return x.rename(x.c.arg(0), x.c.arg(1), x.c.arg(2), x.c.arg(3)) }},
		"renameat2": {trace.OpRenameat2, func(x *ctx) error {
			x.ev.Flags = uint32(x.flags(4, renameNames))
			return x.rename(x.c.arg(0), x.c.arg(1), x.c.arg(2), x.c.arg(3))
		}},
		"link": {trace.OpLink, func(x *ctx) error { return x.link("", x.c.arg(0), "", x.c.arg(1), 0) }},
		"linkat": {trace.OpLinkat, func(x *ctx) error {
			fl := x.flags(4, atFlagNames)
			x.ev.Flags = uint32(fl)
			return x.link(x.c.arg(0), x.c.arg(1), x.c.arg(2), x.c.arg(3), fl)
		}},
		"symlink":   {trace.OpSymlink, func(x *ctx) error { return x.symlink(x.c.arg(0), "", x.c.arg(1)) }},
		"symlinkat": {trace.OpSymlinkat, func(x *ctx) error { return x.symlink(x.c.arg(0), x.c.arg(1), x.c.arg(2)) }},
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
		"dup":   {trace.OpDup, (*ctx).dup},
		"dup2":  {trace.OpDup2, (*ctx).dup},
		"dup3": {trace.OpDup3, func(x *ctx) error {
			x.ev.Flags = uint32(x.flags(2, openFlagNames))
			return x.dup()
		}},
		"fcntl":   {trace.OpFcntl, (*ctx).fcntl},
		"fcntl64": {trace.OpFcntl, (*ctx).fcntl},

		// Processes (process.go).
		"clone":    {trace.OpFork, (*ctx).clone},
		"clone3":   {trace.OpFork, (*ctx).clone},
		"fork":     {trace.OpFork, (*ctx).clone},
		"vfork":    {trace.OpFork, (*ctx).clone},
		"execve":   {trace.OpExec, func(x *ctx) error { return x.exec(-1, 0, 1) }},
		"execveat": {trace.OpExec, func(x *ctx) error { return x.exec(0, 1, 2) }},

		// Bookkeeping: no events.
		"chdir":  {0, (*ctx).chdir},
		"fchdir": {0, (*ctx).fchdir},
		"getcwd": {0, (*ctx).getcwd},
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

// failed reports whether the call returned an error (or nothing: "= ?").
func (x *ctx) failed() bool { return x.c.ret < 0 || !x.c.known }

// want makes the call an event if calls on d are chosen, with d's path.
func (x *ctx) want(d *desc) {
	if x.r.chosen(d) || x.r.opts.All {
		x.emit = true
		if d != nil {
			x.ev.Path = d.Path
		}
		return
	}
	x.unchosen = true
}

// fdDesc returns the description descriptor fd of the call's process
// holds, as the follower has it, with strace's decoration, when there is
// one, taken as the truth: a descriptor the follower does not know, or
// knows as another file (and no rename since could explain it), that the
// decoration names as a file the rules choose (anything, with All) is
// announced with an inherit event first: the log never showed how it was
// opened. It returns nil for descriptors that hold nothing the trace
// follows.
func (x *ctx) fdDesc(fd int32, decor string, decorated bool) *desc {
	r := x.r
	d := r.fl.Lookup(x.p.thread, fd)
	if !decorated || fd < 0 {
		return d
	}
	name := strings.TrimSuffix(decor, " (deleted)")
	if d != nil && d.Path != 0 && (d.Aux.kname == "" || r.sameFile(d, name)) {
		d.Aux.kname, d.Aux.gen = name, r.renames()
		return d
	}
	if !r.opts.All && !(strings.HasPrefix(name, "/") && r.rules.Match(name)) {
		// A pipe, a socket, a file the rules leave out: no event. (A
		// description the follower still holds there stays until a call
		// that becomes an event says otherwise; one it learnt without a
		// path, the other side of a copy, is that pipe.)
		if d != nil && d.Path == 0 {
			return d
		}
		return nil
	}
	if d != nil {
		r.st.Resynced++
	} else {
		r.st.Learnt++
	}
	r.emit(&trace.Event{Op: trace.OpInherit, Rank: r.opts.Rank, Thread: x.p.thread, Start: x.ev.Start,
		FD: fd, Ret: int64(fd), Path: r.intern(name), Offset: -1}) // flags and position unknown
	d = r.fl.Lookup(x.p.thread, fd)
	if d != nil {
		d.Aux.kname, d.Aux.gen = name, r.renames()
	}
	return d
}

// sameFile reports whether name, a -y decoration of a descriptor that
// holds d, names d's file: its name as last shown, moved by the renames
// the log showed since (and which the namespace followed).
func (r *Reader) sameFile(d *desc, name string) bool {
	if d.Aux.kname == name {
		return true
	}
	if d.Aux.gen == r.renames() {
		return false
	}
	if name == r.nameOf(d) {
		return true
	}
	k := d.Aux.kname
	first := d.Aux.gen - r.renamed0
	if first < 0 {
		return true // renames older than the reader keeps: believe the decoration
	}
	for _, mv := range r.renamed[first:] {
		switch {
		case k == mv.from:
			k = mv.to
		case strings.HasPrefix(k, mv.from+"/"):
			k = mv.to + k[len(mv.from):]
		}
	}
	return k == name
}

// fdCall decodes the descriptor argument i and chooses the call by its
// file.
func (x *ctx) fdCall(i int) (*desc, error) {
	fd, decor, decorated, ok := fdArg(x.c.arg(i))
	if !ok {
		return nil, fmt.Errorf("descriptor %q", clip(x.c.arg(i)))
	}
	x.ev.FD = fd
	d := x.fdDesc(fd, decor, decorated)
	x.want(d)
	return d, nil
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
		d := x.fdDesc(fd, decor, decorated)
		x.want(d)
		x.ev.Path = 0 // FD names the file (trace.FDAt), as a capture writes it
		if d == nil {
			return "", nil
		}
		return x.r.nameOf(d), nil
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
	if !x.r.choose(name, known) {
		x.unchosen = true
		return nil
	}
	x.emit = true
	x.ev.Path = x.r.intern(name)
	if x.failed() {
		return nil
	}
	x.ev.FD = int32(x.c.ret)
	if (flags&oTrunc != 0 && flags&oAccmode != 0) || x.c.name == "creat" {
		delete(x.r.statSize, name)
	}
	if x.c.decorated {
		kname := strings.TrimSuffix(x.c.retPath, " (deleted)")
		x.after = func(st step) error {
			if st.New != nil {
				st.New.Aux.kname, st.New.Aux.gen = kname, x.r.renames()
			}
			return nil
		}
	}
	return nil
}

// rw decodes the read and write families.
func rw(write, positioned, vector bool) func(*ctx) error {
	return func(x *ctx) error {
		d, err := x.fdCall(0)
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
			x.ev.Offset = x.position(d, write)
			return nil
		}
		x.ev.Offset = x.intArg(3)
		if x.c.name == "preadv2" || x.c.name == "pwritev2" {
			x.ev.Flags = uint32(x.flags(4, rwfNames))
			if x.ev.Offset == -1 {
				// At the position, which it moves: the event holds the
				// offset used and says so (trace.AtPosition), as iotrace
				// record's does.
				x.ev.Offset = x.position(d, write)
				x.ev.Flags |= trace.AtPosition
				return nil
			}
		}
		if write && d != nil && d.Append() && !x.failed() {
			x.ev.Offset = x.r.appendOffset(d) // Linux appends anyway
		}
		return nil
	}
}

// position returns the offset a call at d's file position uses: the
// position the follower has (the file's end for a write with O_APPEND).
func (x *ctx) position(d *desc, write bool) int64 {
	if d == nil {
		return 0
	}
	if write && d.Append() && !x.failed() {
		return x.r.appendOffset(d)
	}
	if d.Pos < 0 {
		x.r.st.Positions++
		return 0
	}
	return d.Pos
}

// appendOffset returns where a write with O_APPEND on d lands: at the
// file's size, as the namespace has it from the trace's writes and
// truncations, or a stat result showed.
func (r *Reader) appendOffset(d *desc) int64 {
	var size int64
	exact := false
	if n := d.Node; n != nil && n.File != nil {
		size, exact = n.File.Size, n.File.Exact
	}
	if s, ok := r.statSize[r.nameOf(d)]; ok {
		size, exact = max(size, s), true
	}
	if !exact {
		r.st.Appends++
	}
	return size
}

func (x *ctx) lseek() error {
	if _, err := x.fdCall(0); err != nil {
		return err
	}
	x.ev.Offset = x.intArg(1)
	w, err := trace.ParseWhence(x.c.arg(2))
	if err != nil {
		return fmt.Errorf("whence %q", clip(x.c.arg(2)))
	}
	x.ev.Whence = w
	return nil
}

func (x *ctx) fadvise() error {
	_, err := x.fdCall(0)
	x.ev.Offset, x.ev.Size = x.intArg(1), x.intArg(2)
	x.ev.Flags = uint32(x.flags(3, adviceNames))
	return err
}

// mmap follows a mapping of a descriptor (scale: the unit of the offset
// argument). Its result is an address: the event holds 0, or -errno.
func (x *ctx) mmap(scale int64) error {
	fl := x.flags(3, mapNames)
	fd, _, _, ok := fdArg(x.c.arg(4))
	if !ok || fd < 0 || fl&mapAnon != 0 {
		x.skipped = true // anonymous memory
		return nil
	}
	if _, err := x.fdCall(4); err != nil {
		return err
	}
	x.ev.Size, x.ev.Offset = x.intArg(1), x.intArg(5)*scale
	x.ev.Mode, x.ev.Flags = uint32(x.flags(2, protNames)), uint32(fl)
	if x.c.ret < -4095 || x.c.ret >= 0 {
		x.ev.Ret = 0
		if x.emit && x.ev.Path != 0 && x.ev.Size > 0 && x.c.ret > 0 {
			// Its address, for the munmap and msync that name it.
			x.r.fl.Proc(x.p.thread).Maps.Map(uint64(x.c.ret), uint64(x.ev.Size), x.ev.Path, x.ev.Offset)
		}
	}
	return nil
}

// unmapped follows a munmap, or an msync (flush): an event on the file
// range of the recorded mapping its address range meets (the first, if
// it meets several), as the captures record them; a range of anonymous
// memory is outside the model.
func (x *ctx) unmapped(flush bool) error {
	addr, ok := intArg(x.c.arg(0))
	n, ok2 := intArg(x.c.arg(1))
	if !ok || !ok2 {
		return fmt.Errorf("address range %q, %q", clip(x.c.arg(0)), clip(x.c.arg(1)))
	}
	maps := &x.r.fl.Proc(x.p.thread).Maps
	pieces := maps.Pieces(uint64(addr), uint64(n))
	if len(pieces) == 0 {
		x.skipped = true
		return nil
	}
	m := pieces[0]
	x.emit = true
	x.ev.FD, x.ev.Path, x.ev.Offset, x.ev.Size = -1, m.Path, m.Off, int64(m.Len)
	if flush {
		x.ev.Flags = uint32(x.flags(2, msyncNames))
	} else if x.c.ret == 0 {
		maps.Unmap(uint64(addr), uint64(n))
	}
	return nil
}

func getdents(x *ctx) error {
	_, err := x.fdCall(0)
	x.ev.Size = x.intArg(2)
	return err
}

// copy decodes a copy from descriptor argument in (at the offset argument
// inOff, or its position if it is NULL or absent: -1) to descriptor
// argument out (at outOff), of size argument n. It is an event when
// either side is a file the rules choose; Path and Path2 are the chosen
// sides' files.
func (x *ctx) copy(in, inOff, out, outOff, n int) error {
	fdIn, decIn, okIn, good := fdArg(x.c.arg(in))
	if !good {
		return fmt.Errorf("descriptor %q", clip(x.c.arg(in)))
	}
	fdOut, decOut, okOut, good := fdArg(x.c.arg(out))
	if !good {
		return fmt.Errorf("descriptor %q", clip(x.c.arg(out)))
	}
	x.ev.FD, x.ev.FD2, x.ev.Size = fdIn, fdOut, x.intArg(n)
	din, dout := x.fdDesc(fdIn, decIn, okIn), x.fdDesc(fdOut, decOut, okOut)
	if !x.r.opts.All && !x.r.chosen(din) && !x.r.chosen(dout) {
		x.unchosen = true
		return nil
	}
	x.emit = true
	if x.r.chosen(din) {
		x.ev.Path = din.Path
	}
	if x.r.chosen(dout) {
		x.ev.Path2 = dout.Path
	}
	// A side that is not a followed file (a pipe) has no position: 0.
	if off, ok := offsetArg(x.c, inOff); ok {
		x.ev.Flags |= trace.CopyInAt
		x.ev.Offset = off
	} else if x.r.chosen(din) {
		x.ev.Offset = x.position(din, false)
	}
	if off, ok := offsetArg(x.c, outOff); ok {
		x.ev.Flags |= trace.CopyOutAt
		x.ev.Offset2 = off
	} else if x.r.chosen(dout) {
		x.ev.Offset2 = x.position(dout, true)
	}
	return nil
}

// offsetArg reads a loff_t * argument: "[4096]", or with the value after
// the call "[2] => [6]" (sendfile); the value before the call is the
// offset. NULL (or no such argument) is not an offset.
func offsetArg(c *call, i int) (int64, bool) {
	if i < 0 {
		return 0, false
	}
	a, ok := strings.CutPrefix(strings.TrimSpace(c.arg(i)), "[")
	if !ok {
		return 0, false
	}
	v, _, ok := strings.Cut(a, "]")
	if !ok {
		return 0, false
	}
	return intArg(v)
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
			if n, ok := x.r.sizeFrom(name, x.c.arg(buf)); ok {
				// The size the stat found, as the captures record it.
				x.ev.Size, x.ev.Flags = n, x.ev.Flags|trace.SizeSeen
			}
		}
		return err
	}
}

// sizeFrom learns a file's size from a stat struct (st_size=, stx_size=)
// of a regular file.
func (r *Reader) sizeFrom(name, st string) (int64, bool) {
	for _, k := range []string{"st_size", "stx_size"} {
		if v, ok := field(st, k); ok {
			if n, ok := intArg(v); ok && n >= 0 && strings.Contains(st, "S_IFREG") {
				r.statSize[name] = n
				return n, true
			}
		}
	}
	return 0, false
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
		x.r.moved(o, n)
		if size, ok := x.r.statSize[o]; ok {
			x.r.statSize[n] = size
		}
		delete(x.r.statSize, o)
	}
	return nil
}

// link decodes link and linkat: Path the existing name, Path2 the new
// one. With AT_EMPTY_PATH and an empty old path, the file open on
// olddirfd gets the new name.
func (x *ctx) link(od, op, nd, np string, flags uint64) error {
	n, nknown, err := x.resolve(nd, np)
	if err != nil {
		return err
	}
	o, oknown, err := x.resolve(od, op)
	if err != nil && !(flags&atEmpty != 0 && (op == `""` || op == "")) {
		return err
	}
	// linkat of /proc/self/fd/N with AT_SYMLINK_FOLLOW (a file made with
	// O_TMPFILE given its name): the link of descriptor N.
	procFD, onProcFD := filter.DescriptorPath(o, x.p.pid)
	if flags&atEmpty != 0 && (op == `""` || op == "") || flags&atSymFollow != 0 && onProcFD {
		var d *desc
		if onProcFD {
			x.ev.FD = procFD
			d = x.fdDesc(procFD, "", false)
		} else {
			fd, decor, decorated, ok := fdArg(od)
			if !ok {
				return fmt.Errorf("descriptor %q", clip(od))
			}
			x.ev.FD = fd
			d = x.fdDesc(fd, decor, decorated)
		}
		if x.r.chosen(d) || x.r.choose(n, nknown) {
			x.emit = true
			x.ev.Path2 = x.r.intern(n)
		} else {
			x.unchosen = true
		}
		return nil
	}
	if x.r.choose(o, oknown) || x.r.choose(n, nknown) {
		x.emit = true
		x.ev.Path, x.ev.Path2 = x.r.intern(o), x.r.intern(n)
	} else {
		x.unchosen = true
	}
	return nil
}

// symlink decodes symlink and symlinkat: Path is the link made (made
// absolute), Path2 its target exactly as the program wrote it.
func (x *ctx) symlink(targetArg, dirArg, linkArg string) error {
	target, _, ok := unquote(targetArg)
	if !ok {
		return fmt.Errorf("path argument %q is not a string", clip(targetArg))
	}
	if _, err := x.pathCall(dirArg, linkArg, 0); err != nil {
		return err
	}
	if x.emit && target != "" {
		x.ev.Path2 = x.r.intern(target)
	}
	return nil
}

// dup decodes dup, dup2 and dup3: an event when the source is chosen, or
// when the new descriptor held a chosen description that the call
// replaces (then on the source's descriptor, without a path, if that is
// not chosen: the follower knows the new descriptor names something
// else).
func (x *ctx) dup() error {
	_, err := x.fdCall(0)
	if err != nil || x.emit || x.c.name == "dup" {
		return err
	}
	nfd, _, _, ok := fdArg(x.c.arg(1))
	if !ok || nfd == x.ev.FD || x.failed() {
		return nil
	}
	if old := x.r.fl.Lookup(x.p.thread, nfd); x.r.chosen(old) {
		x.unchosen = false
		x.emit = true
	}
	return nil
}

func (x *ctx) fcntl() error {
	cmd, ok := fcntlCommands[x.c.arg(1)]
	if !ok {
		if _, _, _, ok := fdArg(x.c.arg(0)); !ok {
			return fmt.Errorf("descriptor %q", clip(x.c.arg(0)))
		}
		x.skipped = true // other commands are not events
		return nil
	}
	if _, err := x.fdCall(0); err != nil {
		return err
	}
	x.ev.Flags = cmd
	switch cmd {
	case trace.FSetfd:
		x.ev.Size = int64(x.flags(2, fdFlagNames) & 1)
	case trace.FSetfl:
		x.ev.Size = int64(x.flags(2, openFlagNames))
	default:
		x.ev.Size = x.intArg(2)
	}
	return nil
}

func (x *ctx) closeRange() error {
	first, last := x.intArg(0), x.intArg(1)
	if a := x.c.arg(1); a == "~0" || a == "~0U" || a == "-1" || a == "4294967295" {
		last = 1<<32 - 1
	}
	fl := x.flags(2, closeRangeSet)
	x.ev.FD, x.ev.Size, x.ev.Flags = int32(first), last, uint32(fl)
	// An event when it closes (or marks) a chosen descriptor, or unshares
	// the table.
	x.emit = x.r.opts.All || fl&crUnshare != 0
	x.r.fl.Each(x.p.thread, func(fd int32, d *desc) {
		if int64(fd) >= first && int64(fd) <= last && x.r.chosen(d) {
			x.emit = true
		}
	})
	if !x.emit {
		x.unchosen = true
	}
	return nil
}

func (x *ctx) chdir() error {
	if x.c.ret != 0 {
		return nil
	}
	if name, known, err := x.resolve("", x.c.arg(0)); err == nil && known {
		x.p.cwd.dir = name
	}
	return nil
}

func (x *ctx) fchdir() error {
	fd, decor, decorated, ok := fdArg(x.c.arg(0))
	if !ok || x.c.ret != 0 {
		return nil
	}
	if decorated {
		x.p.cwd.dir = decor
	} else if d := x.r.fl.Lookup(x.p.thread, fd); d != nil {
		if name := x.r.nameOf(d); strings.HasPrefix(name, "/") {
			x.p.cwd.dir = name
		}
	}
	return nil
}

// getcwd tells the working directory.
func (x *ctx) getcwd() error {
	if d, _, ok := unquote(x.c.arg(0)); ok && x.c.ret > 0 && strings.HasPrefix(d, "/") {
		x.p.cwd.dir = d
	}
	return nil
}
