package posix

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/iotrace/iotrace/replay"
	"golang.org/x/sys/unix"
)

// byName is the target's real absolute name, found once.
type byName struct {
	once sync.Once
	dir  string
	err  error
}

// Name returns the absolute name of rel — a path the engine mapped into
// the target — for a library that opens files by name, such as MPI-IO,
// after checking what an open by this backend checks: rel resolves inside
// the target (no "..", no symlink leading out of it; with the O_NOFOLLOW
// walk, no symlink at all), and what it names, if it exists, is a regular
// file, with no other hard link when write is set. A missing file is fine
// when its directory resolves inside the target (the library creates
// it). The name starts with the target's real path, with no symlink in
// it.
//
// The check and the library's open are two steps: only a program that
// changes the target directory between them could redirect the open.
// Otherwise it returns a negative errno or the reason to skip the call.
func (b *Backend) Name(rel string, write bool) (string, int64, replay.Skip) {
	bn := &b.names
	bn.once.Do(func() { bn.dir, bn.err = b.realTarget() })
	if bn.err != nil {
		return "", -int64(unix.EIO), replay.NotSkipped
	}
	if rel == "." || rel == "" {
		return "", 0, replay.SkipNotRegular
	}
	fd, err := b.root.open(rel, unix.O_PATH, 0)
	if errors.Is(err, unix.ENOENT) {
		// The file may be created: its directory must resolve inside.
		dir := filepath.Dir(rel)
		if dir != "." {
			dfd, derr := b.root.open(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
			if derr != nil {
				ret, skip := result(derr)
				return "", ret, skip
			}
			unix.Close(dfd)
		}
		return filepath.Join(bn.dir, rel), 0, replay.NotSkipped
	}
	if err != nil {
		ret, skip := result(err)
		return "", ret, skip
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", errno(err), replay.NotSkipped
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if write && st.Nlink > 1 {
			return "", 0, replay.SkipHardLink
		}
	default:
		return "", 0, replay.SkipNotRegular
	}
	return filepath.Join(bn.dir, rel), 0, replay.NotSkipped
}

// realTarget returns the target's absolute name without symlinks, and
// checks that it names the directory the backend holds open.
func (b *Backend) realTarget() (string, error) {
	abs, err := filepath.Abs(b.opts.Target)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	var a, c unix.Stat_t
	if err := unix.Stat(real, &a); err != nil {
		return "", err
	}
	if err := unix.Fstat(b.root.fd, &c); err != nil {
		return "", err
	}
	if a.Dev != c.Dev || a.Ino != c.Ino {
		return "", fmt.Errorf("target %s changed while the replay ran", b.opts.Target)
	}
	return real, nil
}
