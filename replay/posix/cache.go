package posix

import (
	"context"
	"fmt"

	"github.com/iotrace/iotrace/trace/target"
	"golang.org/x/sys/unix"
)

// Cache is the state of the page cache a replay starts its timed phase
// in (ioreplay --cache; docs/REPLAY.md).
type Cache uint8

const (
	// CacheCold: the pages of every file of the trace in the target are
	// written back and dropped (sync_file_range, then posix_fadvise
	// POSIX_FADV_DONTNEED), so that the replay reads its inputs from the
	// device, as a program does whose inputs were written long before or
	// on another node. No root needed; directory entries and inodes stay
	// cached (dropping them takes /proc/sys/vm/drop_caches, the whole
	// machine's).
	CacheCold Cache = iota
	// CacheWarm: every file of the trace in the target is read whole, so
	// that the replay finds its inputs in memory, as a program run again
	// at once does.
	CacheWarm
	// CacheAsCaptured: the cache is left as it is: the files the prepare
	// phase has just written are cached (and dirty), as a program finds
	// the output of the step that ran just before it.
	CacheAsCaptured
)

var cacheNames = []string{"cold", "warm", "as-captured"}

func (c Cache) String() string {
	if int(c) < len(cacheNames) {
		return cacheNames[c]
	}
	return fmt.Sprintf("cache#%d", c)
}

// ParseCache returns the cache state called s.
func ParseCache(s string) (Cache, error) {
	for i, n := range cacheNames {
		if s == n {
			return Cache(i), nil
		}
	}
	return 0, fmt.Errorf("--cache %q: want one of cold, warm, as-captured", s)
}

// SetCache puts the pages of the files of the layout that exist in the
// target (those prepared, and those it held already) in the state c, and
// returns how many files it went through. It reads and advises; it
// writes nothing, and resolves paths as every call of the replay does
// (never out of the target).
func (b *Backend) SetCache(ctx context.Context, c Cache, lay *target.Layout) (int, error) {
	if c == CacheAsCaptured {
		return 0, nil
	}
	n := 0
	var buf []byte
	if c == CacheWarm {
		buf = make([]byte, 1<<20)
	}
	seen := map[string]bool{}
	for _, p := range lay.Paths {
		if p.Target == "" || p.Target == "." || seen[p.Target] {
			continue
		}
		seen[p.Target] = true
		if err := ctx.Err(); err != nil {
			return n, err
		}
		fd, err := b.root.open(p.Target, unix.O_RDONLY|unix.O_NONBLOCK, 0)
		if err != nil {
			continue // not there (yet), or not the replay's to read: left as it is
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
			n++
			err = setCache(fd, c, buf)
		}
		unix.Close(fd)
		if err != nil {
			return n, fmt.Errorf("%s: %w", p.Target, err)
		}
	}
	if c == CacheCold && n > 0 {
		// One journal commit for the metadata of what prepare made, now
		// rather than in the timed phase.
		unix.Syncfs(b.root.fd)
	}
	return n, nil
}

// setCache puts the pages of the file open on fd in the state c.
func setCache(fd int, c Cache, buf []byte) error {
	if c == CacheCold {
		// Dirty pages cannot be dropped: write them back first, with
		// sync_file_range rather than fdatasync, which would also commit
		// the journal and flush the device's cache for every file, clean
		// ones too (a hundred flush requests for a git tree); SetCache
		// commits once at the end.
		const wait = unix.SYNC_FILE_RANGE_WAIT_BEFORE | unix.SYNC_FILE_RANGE_WRITE | unix.SYNC_FILE_RANGE_WAIT_AFTER
		if err := unix.SyncFileRange(fd, 0, 0, wait); err != nil {
			unix.Fdatasync(fd) // a file system without it
		}
		return unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED)
	}
	unix.Fadvise(fd, 0, 0, unix.FADV_WILLNEED)
	for {
		k, err := unix.Read(fd, buf)
		if k <= 0 || err != nil {
			return err
		}
	}
}
