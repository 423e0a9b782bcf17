// Package outfile writes output files whole or not at all: as a file
// with no name yet in the final one's directory (or under a temporary
// name next to it), given the final name when complete.
package outfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// File is a file written apart from its final name and given that name
// by Commit, so that it appears whole or not at all, and an input it
// replaces (merge -o IN … IN) stays readable until then. It gets the
// permissions of a new file: 0666 less the umask.
//
// Where the file system makes files without a name (O_TMPFILE: ext4,
// XFS, Btrfs, tmpfs) the file has none until Commit links it in: a
// command killed before then leaves nothing behind, however long it
// held the file open (ioreplay opens its outputs before it replays, to
// fail before the replay rather than after it). Elsewhere it is written
// under a temporary name next to the final one, and renamed.
//
// A name that is not a regular file — a device such as /dev/null or
// /dev/stdout, a FIFO — is written in place: there is nothing to
// replace, and replacing it would put a file where the device was. A
// symbolic link is followed: the file it leads to is replaced.
type File struct {
	*os.File
	final   string
	done    bool
	direct  bool // written in place
	unnamed bool // made with O_TMPFILE: linked in by Commit
}

// Create starts writing the file name.
func Create(name string) (*File, error) {
	if fi, err := os.Stat(name); err == nil && fi.IsDir() {
		return nil, &fs.PathError{Op: "create", Path: name, Err: syscall.EISDIR}
	} else if err == nil && !fi.Mode().IsRegular() {
		f, err := os.OpenFile(name, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		return &File{File: f, final: name, direct: true}, nil
	}
	if real, err := filepath.EvalSymlinks(name); err == nil {
		name = real
	}
	dir, base := filepath.Split(name)
	if procFD() {
		d := dir
		if d == "" {
			d = "."
		}
		fd, err := unix.Open(d, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o666)
		if err == nil {
			return &File{File: os.NewFile(uintptr(fd), name), final: name, unnamed: true}, nil
		}
		// Not supported here (EOPNOTSUPP, or EISDIR from kernels that
		// predate it), or an error the named file will tell as well.
	}
	for tries := 0; ; tries++ {
		f, err := os.OpenFile(tempName(dir, base), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) && tries < 100 {
			continue
		}
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, &fs.PathError{Op: "create", Path: name, Err: err}
		}
		return &File{File: f, final: name}, nil
	}
}

// tempName is a name for a file on its way to dir/base.
func tempName(dir, base string) string {
	return filepath.Join(dir, fmt.Sprintf(".%s.%d%06d.tmp", base, os.Getpid(), rand.IntN(1e6)))
}

// procFD says whether /proc/self/fd is there: linkat gives an unnamed
// file a name through it (AT_EMPTY_PATH would need CAP_DAC_READ_SEARCH).
var procFD = sync.OnceValue(func() bool {
	_, err := os.Stat("/proc/self/fd")
	return err == nil
})

// Commit closes the file and gives it its final name.
func (o *File) Commit() error {
	if o.done {
		return errors.New("output committed twice")
	}
	o.done = true
	var err error
	switch {
	case o.direct:
		err = o.File.Close()
	case o.unnamed:
		err = o.link()
	default:
		if err = o.File.Close(); err == nil {
			err = os.Rename(o.Name(), o.final)
		}
		if err != nil {
			os.Remove(o.Name())
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", o.final, err)
	}
	return nil
}

// link gives an unnamed file its final name, and closes it: linked
// there at once where no file has that name, else linked under a
// temporary name and renamed over the old file (which linkat cannot
// replace), as a named file is.
func (o *File) link() error {
	src := "/proc/self/fd/" + strconv.Itoa(int(o.Fd()))
	err := unix.Linkat(unix.AT_FDCWD, src, unix.AT_FDCWD, o.final, unix.AT_SYMLINK_FOLLOW)
	if err == nil {
		if err = o.File.Close(); err != nil {
			os.Remove(o.final) // ours, linked a moment ago
		}
		return err
	}
	if !errors.Is(err, unix.EEXIST) {
		o.File.Close()
		return err
	}
	dir, base := filepath.Split(o.final)
	for tries := 0; ; tries++ {
		tmp := tempName(dir, base)
		err = unix.Linkat(unix.AT_FDCWD, src, unix.AT_FDCWD, tmp, unix.AT_SYMLINK_FOLLOW)
		if errors.Is(err, unix.EEXIST) && tries < 100 {
			continue
		}
		if err != nil {
			o.File.Close()
			return err
		}
		if err = o.File.Close(); err == nil {
			err = os.Rename(tmp, o.final)
		}
		if err != nil {
			os.Remove(tmp)
		}
		return err
	}
}

// Abort removes the file, unless Commit has run. A nil File (Open of
// standard output) has nothing to remove.
func (o *File) Abort() {
	if o != nil && !o.done {
		o.File.Close()
		if !o.direct && !o.unnamed {
			os.Remove(o.Name())
		}
		o.done = true
	}
}

// WriteAll runs write on a buffered writer to the file and commits it,
// or aborts it if write fails.
func (o *File) WriteAll(write func(io.Writer) error) error {
	defer o.Abort()
	bw := bufio.NewWriter(o)
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("%s: %w", o.final, err)
	}
	return o.Commit()
}

// Write runs write on a buffered writer to the file name through a
// File, or to stdout when name is "" or "-": the file appears whole when
// write succeeds, and not at all when it fails.
func Write(name string, stdout io.Writer, write func(io.Writer) error) error {
	o, err := Open(name)
	if err != nil {
		return err
	}
	return o.Put(stdout, write)
}

// Open starts the output name before the work that fills it, so that a
// name that cannot be written fails the command before that work, not
// after it: a File, or nil for standard output ("" or "-"). Put writes
// it at the end; Abort drops it.
func Open(name string) (*File, error) {
	if name == "" || name == "-" {
		return nil, nil
	}
	return Create(name)
}

// Put runs write on a buffered writer to the file, which it commits, or
// to stdout for a nil File (Open of standard output).
func (o *File) Put(stdout io.Writer, write func(io.Writer) error) error {
	if o == nil {
		bw := bufio.NewWriter(stdout)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	return o.WriteAll(write)
}

// Replace writes data over the existing file name, whole or not at all,
// and keeps its permissions.
func Replace(name string, data []byte) error {
	fi, err := os.Stat(name)
	if err != nil {
		return err
	}
	out, err := Create(name)
	if err != nil {
		return err
	}
	defer out.Abort()
	if _, err := out.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if !out.direct {
		if err := out.Chmod(fi.Mode().Perm()); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return out.Commit()
}

// Output is an output file and the flag that names it, for NotInput.
type Output struct{ Flag, Name string }

// NotInput refuses an output that is one of the inputs: the same file
// (device and inode, whatever names and links lead to it). Writing it
// would destroy the input the command is reading (ioreplay --record t.iot t.iot made a 2,468-byte trace 163
// bytes). Names that do not exist yet, and inputs that are not files (a
// built-in sample, "-"), cannot be the same.
func NotInput(outs []Output, inputs []string) error {
	type id struct{ dev, ino uint64 }
	in := map[id]string{}
	for _, p := range inputs {
		if fi, err := os.Stat(p); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				in[id{uint64(st.Dev), st.Ino}] = p
			}
		}
	}
	for _, o := range outs {
		if o.Name == "" || o.Name == "-" {
			continue
		}
		fi, err := os.Stat(o.Name)
		if err != nil {
			continue
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || !fi.Mode().IsRegular() && !fi.IsDir() {
			continue // /dev/null, /dev/stdout, a FIFO: written in place, nothing replaced
		}
		if p, same := in[id{uint64(st.Dev), st.Ino}]; same {
			if p == o.Name {
				return fmt.Errorf("%s %s: is an input; writing it would destroy it", o.Flag, o.Name)
			}
			return fmt.Errorf("%s %s: is the input %s; writing it would destroy it", o.Flag, o.Name, p)
		}
	}
	return nil
}

// FileOnly refuses "-" (standard output) for an output that can only be
// a file, such as a binary trace, which its readers read by offset: one
// line naming the flag. A file named "-" is written as "./-".
func FileOnly(flag, name, what string) error {
	if name == "-" {
		return fmt.Errorf("%s -: %s is not written to standard output; give %s FILE (./- for a file of that name)", flag, what, flag)
	}
	return nil
}
