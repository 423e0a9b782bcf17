package posix

import (
	"errors"
	"path"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/replay"
)

// root is the target directory and the means of resolving paths below it
// without leaving it.
//
// With openat2(2) (Linux 5.6+), every path is resolved with
// RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS: the kernel refuses any
// resolution that would leave the directory — through "..", an absolute
// symlink, or a relative one that climbs out — with EXDEV. Elsewhere,
// paths are walked one component at a time with O_NOFOLLOW, so no
// symlink is followed at all.
type root struct {
	fd      int
	beneath bool

	// For the ranks' caches of directories (dircache.go).
	gen     atomic.Uint64 // bumped by every rename and directory removal
	held    atomic.Int64  // descriptors the caches hold
	maxHeld int64         // at most: an eighth of the descriptor limit
}

func openRoot(dir string, forceWalk bool) (*root, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	r := &root{fd: fd, maxHeld: 128}
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil {
		r.maxHeld = int64(min(lim.Cur/8, 4096))
	}
	if !forceWalk {
		// Probe openat2.
		pfd, err := unix.Openat2(fd, ".", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: resolveFlags})
		if err == nil {
			unix.Close(pfd)
			r.beneath = true
		}
	}
	return r, nil
}

const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS

func (r *root) close() error { return unix.Close(r.fd) }

// errEscape marks a path the kernel would not resolve inside the target.
var errEscape = errors.New("path leads out of the target directory")

// open opens rel (clean, relative) below the root.
func (r *root) open(rel string, flags int, mode uint32) (int, error) {
	flags |= unix.O_CLOEXEC
	if flags&unix.O_CREAT == 0 && flags&unix.O_TMPFILE != unix.O_TMPFILE {
		// openat2 rejects a mode without O_CREAT or O_TMPFILE; O_TMPFILE's
		// bits include O_DIRECTORY's, so a directory's open is no create.
		mode = 0
	}
	if r.beneath {
		how := unix.OpenHow{Flags: uint64(flags), Mode: uint64(mode), Resolve: resolveFlags}
		for try := 0; ; try++ {
			fd, err := unix.Openat2(r.fd, rel, &how)
			if err == unix.EAGAIN && try < 8 {
				continue // a rename raced with the resolution
			}
			if err == unix.EXDEV {
				return -1, errEscape
			}
			return fd, err
		}
	}
	dfd, base, release, err := r.walk(rel)
	if err != nil {
		return -1, err
	}
	defer release()
	fd, err := unix.Openat(dfd, base, flags|unix.O_NOFOLLOW, mode)
	if err == unix.ELOOP || (err == unix.ENOTDIR && flags&unix.O_DIRECTORY != 0) {
		if isSymlink(dfd, base) {
			return -1, errEscape
		}
	}
	return fd, err
}

// errSpecial marks a device, FIFO or socket found in the target where a
// call would open it: never opened, as opening one acts (a FIFO's waiting
// writer is released and its data lost; a tape rewinds).
var errSpecial = errors.New("a device, FIFO or socket; not opening it")

// looked, when a test sets it, is called each time an open looks at
// what a path names (openFile's O_PATH probe, checkFile's fstat). It is
// nil in a replay.
var looked func(what string)

// openFile opens rel as open does, never opening a device, FIFO or
// socket that the target holds: such a file is errSpecial, and nothing
// is opened.
//
// An open that may create (O_CREAT) first tries to create the file
// exclusively (O_EXCL added): that never opens what is already there,
// and when it succeeds the file is new (created true) — regular, empty,
// with one link — so neither a look first nor checkFile after is needed:
// one system call, as the program's create was. Where the name exists
// (EEXIST), the open is what it would have been without the try, with
// the caller's flags, unless they hold O_EXCL themselves: then EEXIST is
// the answer.
//
// Any other open first looks at what is there without opening it
// (O_PATH).
//
// sw times the open that answers (the exclusive create that made the
// file, or the open after the look) and, as looks, the exclusive create
// that found the name and the look (SysTime).
func (r *root) openFile(rel string, flags int, mode uint32, sw *replay.SysTime) (fd int, created bool, err error) {
	if fd, created, done, err := createNew(flags, sw, func(f int) (int, error) { return r.open(rel, f, mode) }); done {
		return fd, created, err
	}
	if flags&unix.O_PATH == 0 {
		if looked != nil {
			looked("probe " + rel)
		}
		probe := unix.O_PATH | flags&(unix.O_NOFOLLOW|unix.O_DIRECTORY)
		t := sw.Start()
		pfd, err := r.open(rel, probe, 0)
		sw.StopLook(t)
		if err == nil {
			var st unix.Stat_t
			err = unix.Fstat(pfd, &st)
			unix.Close(pfd)
			if err == nil {
				switch st.Mode & unix.S_IFMT {
				case unix.S_IFREG, unix.S_IFDIR, unix.S_IFLNK:
				default:
					return -1, false, errSpecial
				}
			}
		}
	}
	t := sw.Start()
	fd, err = r.open(rel, flags, mode)
	sw.Stop(t)
	return fd, false, err
}

// createNew is the first step of an open that may create (O_CREAT,
// neither O_PATH nor O_DIRECTORY; O_TMPFILE holds O_DIRECTORY's bit and
// creates no name): the exclusive create, through open with the flags
// it is given. done reports whether that answered the open: created (a
// new, empty regular file of one link), or failed other than with
// EEXIST, or EEXIST where the caller's own flags hold O_EXCL. Not done,
// the name exists, and the open goes on with the caller's flags.
func createNew(flags int, sw *replay.SysTime, open func(flags int) (int, error)) (fd int, created, done bool, err error) {
	if flags&(unix.O_CREAT|unix.O_PATH|unix.O_DIRECTORY) != unix.O_CREAT {
		return -1, false, false, nil
	}
	t := sw.Start()
	fd, err = open(flags | unix.O_EXCL)
	if err == nil {
		sw.Stop(t)
		return fd, true, true, nil
	}
	if err != unix.EEXIST || flags&unix.O_EXCL != 0 {
		sw.Stop(t)
		return -1, false, true, err
	}
	sw.StopLook(t) // it found the name: a look, the open follows
	return -1, false, false, nil
}

// parent returns a descriptor of the directory holding rel and rel's last
// component, for the *at calls. release closes the descriptor.
func (r *root) parent(rel string) (dfd int, base string, release func(), err error) {
	dir, base := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		return r.fd, base, func() {}, nil
	}
	if r.beneath {
		fd, err := r.open(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			return -1, "", nil, err
		}
		return fd, base, func() { unix.Close(fd) }, nil
	}
	dfd, last, release, err := r.walk(dir)
	if err != nil {
		return -1, "", nil, err
	}
	fd, err := unix.Openat(dfd, last, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		sym := isSymlink(dfd, last) // before dfd is closed
		release()
		if sym {
			return -1, "", nil, errEscape
		}
		return -1, "", nil, err
	}
	release()
	return fd, base, func() { unix.Close(fd) }, nil
}

// walk opens the directories of rel one by one without following
// symlinks and returns the last one and rel's last component.
func (r *root) walk(rel string) (dfd int, base string, release func(), err error) {
	comps := strings.Split(rel, "/")
	dfd = r.fd
	closeCur := func() {
		if dfd != r.fd {
			unix.Close(dfd)
		}
	}
	for _, c := range comps[:len(comps)-1] {
		fd, err := unix.Openat(dfd, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			sym := isSymlink(dfd, c)
			closeCur()
			if sym {
				return -1, "", nil, errEscape
			}
			return -1, "", nil, err
		}
		closeCur()
		dfd = fd
	}
	cur := dfd
	return dfd, comps[len(comps)-1], func() {
		if cur != r.fd {
			unix.Close(cur)
		}
	}, nil
}

func isSymlink(dfd int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}
