package posix

import (
	"errors"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/replay"
)

// dirCache keeps open the directories of a rank's latest calls on paths
// (Options.KeepDirs), so that a call in a directory it has just used
// does not resolve the directory again: an unlink, mkdir, rename, stat or
// lstat one directory down is then one system call, as the program's
// was, instead of three (open the directory, the call, close it), and an
// open of an existing file three instead of five (openFile).
//
// A directory is kept only when it was resolved beneath the target
// through no symbolic link (RESOLVE_NO_SYMLINKS, or the O_NOFOLLOW walk):
// its name then leads to it for as long as no directory on its path is
// renamed or removed, which the replay's own renames and directory
// removals tell every rank by bumping root.gen; the ranks drop what they
// kept at their next look. Where a symbolic link is on the way (which an
// unlink could retarget), the cache keeps only that fact: such paths are
// resolved in full at every call, as every path is when the cache is off.
//
// A kept directory was inside the target when resolved, and the replay's
// renames keep it there (both names are resolved beneath the target);
// only another program that moves it out while the replay runs could
// move a later call out with it — as it could move out a file the replay
// holds open.
type dirCache struct {
	e   [4]dirEntry // most recent first
	n   int
	gen uint64 // root.gen when the entries were resolved
}

type dirEntry struct {
	dir string
	fd  int
}

// noRelease releases a descriptor that stays open.
var noRelease = func() {}

// parent is root.parent, through the rank's cache when the backend keeps
// directories.
func (x *rankExec) parent(rel string) (dfd int, base string, release func(), err error) {
	if x.b.opts.KeepDirs {
		x.dirs.sync(x.b.root)
	}
	return x.secondParent(rel)
}

// secondParent is parent for the second path of a call (a rename's or a
// link's new name): it closes nothing the cache holds (the first path's
// directory, which the call holds too), whatever another rank renamed
// meanwhile.
func (x *rankExec) secondParent(rel string) (dfd int, base string, release func(), err error) {
	r := x.b.root
	dir, base := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		return r.parent(rel)
	}
	if !x.b.opts.KeepDirs {
		t := x.sw.Start()
		defer x.sw.StopDir(t)
		return r.parent(rel)
	}
	fd, kept := x.dirs.get(r, dir, x.sw)
	switch {
	case fd < 0:
		t := x.sw.Start()
		defer x.sw.StopDir(t)
		return r.parent(rel) // through a symlink, or an error: the uncached resolution answers
	case !kept:
		return fd, base, func() { unix.Close(fd) }, nil
	}
	return fd, base, noRelease, nil
}

// sync drops what the cache holds if a rank renamed or removed a
// directory since it was resolved. A call syncs once, before its first
// get: a second get must not close what the first returned.
func (c *dirCache) sync(r *root) {
	if g := r.gen.Load(); g != c.gen {
		c.drop(r)
		c.gen = g
	}
}

// get returns a descriptor of dir, kept (kept true: the caller must not
// close it) or not, or −1 where dir cannot be resolved without a symbolic
// link (also kept, as such: the caller resolves in full, every time) or
// at all.
//
// sw times resolving dir (SysTime.StopDir) where the cache did not hold it.
func (c *dirCache) get(r *root, dir string, sw *replay.SysTime) (fd int, kept bool) {
	for i := 0; i < c.n; i++ {
		if c.e[i].dir == dir {
			e := c.e[i]
			copy(c.e[1:i+1], c.e[:i])
			c.e[0] = e
			return e.fd, true
		}
	}
	t := sw.Start()
	fd, err := r.openDirNoSymlinks(dir)
	sw.StopDir(t)
	if err != nil {
		if err != unix.ELOOP && !errors.Is(err, errEscape) {
			return -1, false // missing, say: not kept
		}
		fd = -1 // through a symbolic link
	}
	if c.n == len(c.e) {
		// The least recent goes (never one the current call holds: a call
		// uses at most two directories).
		c.n--
		c.close(r, c.e[c.n])
	}
	if fd >= 0 && r.held.Add(1) > r.maxHeld {
		r.held.Add(-1)
		return fd, false
	}
	copy(c.e[1:c.n+1], c.e[:c.n])
	c.e[0] = dirEntry{dir: dir, fd: fd}
	c.n++
	return fd, true
}

// drop closes what the cache holds.
func (c *dirCache) drop(r *root) {
	for i := 0; i < c.n; i++ {
		c.close(r, c.e[i])
		c.e[i] = dirEntry{}
	}
	c.n = 0
}

func (c *dirCache) close(r *root, e dirEntry) {
	if e.fd >= 0 {
		unix.Close(e.fd)
		r.held.Add(-1)
	}
}

// openDirNoSymlinks opens the directory rel (clean, relative, not ".")
// below the root, O_PATH, resolving no symbolic link on the way.
func (r *root) openDirNoSymlinks(rel string) (int, error) {
	const flags = unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC
	if r.beneath {
		how := unix.OpenHow{Flags: flags, Resolve: resolveFlags | unix.RESOLVE_NO_SYMLINKS}
		for try := 0; ; try++ {
			fd, err := unix.Openat2(r.fd, rel, &how)
			if err == unix.EAGAIN && try < 8 {
				continue
			}
			return fd, err
		}
	}
	// The walk follows no symlink at all.
	dfd, last, release, err := r.walk(rel)
	if err != nil {
		return -1, err
	}
	defer release()
	fd, err := unix.Openat(dfd, last, flags|unix.O_NOFOLLOW, 0)
	if err != nil && isSymlink(dfd, last) {
		return -1, errEscape
	}
	return fd, err
}

// moved tells every rank's cache that a directory may have been renamed
// or removed.
func (r *root) moved() { r.gen.Add(1) }

// openFile is root.openFile, in the directory the rank keeps where it
// can: the look before the open is then one fstatat instead of an O_PATH
// open, fstat and close, and the open resolves one name. It keeps every
// rule of root.openFile: a create tries an exclusive create first; no
// device, FIFO or socket is opened; a name that is a symbolic link (whose
// target the kernel must resolve beneath the target) or that cannot be
// looked at, every O_PATH or O_TMPFILE open and O_CREAT|O_DIRECTORY take
// root.openFile's way.
func (x *rankExec) openFile(rel string, flags int, mode uint32) (fd int, created bool, err error) {
	r := x.b.root
	dir, base := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" || !x.b.opts.KeepDirs || flags&unix.O_PATH != 0 || flags&unix.O_TMPFILE == unix.O_TMPFILE ||
		flags&(unix.O_CREAT|unix.O_DIRECTORY) == unix.O_CREAT|unix.O_DIRECTORY {
		return r.openFile(rel, flags, mode, x.sw)
	}
	x.dirs.sync(r)
	dfd, kept := x.dirs.get(r, dir, x.sw)
	if dfd < 0 {
		return r.openFile(rel, flags, mode, x.sw)
	}
	if !kept {
		defer unix.Close(dfd)
	}
	flags |= unix.O_CLOEXEC
	if flags&unix.O_CREAT == 0 {
		mode = 0
	}
	// O_CREAT|O_EXCL follows no symbolic link at the name.
	if fd, created, done, err := createNew(flags, x.sw, func(f int) (int, error) { return unix.Openat(dfd, base, f, mode) }); done {
		return fd, created, err
	}
	if looked != nil {
		looked("probe " + rel)
	}
	var st unix.Stat_t
	t := x.sw.Start()
	err = unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
	x.sw.StopLook(t)
	if err != nil {
		return r.openFile(rel, flags, mode, x.sw)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG, unix.S_IFDIR:
	case unix.S_IFLNK:
		return r.openFile(rel, flags, mode, x.sw)
	default:
		return -1, false, errSpecial
	}
	t = x.sw.Start()
	fd, err = unix.Openat(dfd, base, flags|unix.O_NOFOLLOW, mode)
	x.sw.Stop(t)
	if err == unix.ELOOP && flags&unix.O_NOFOLLOW == 0 {
		// A symbolic link took the name since the look.
		return r.openFile(rel, flags, mode, x.sw)
	}
	return fd, false, err
}
