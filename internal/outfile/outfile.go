// Package outfile writes output files whole or not at all: under a
// temporary name next to the final one, renamed into place when complete.
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
	"syscall"
)

// File is a file written under a temporary name next to its final one
// and renamed into place by Commit, so that it appears whole or not at
// all, and an input it replaces (merge -o IN … IN) stays readable until
// then. It gets the permissions of a new file: 0666 less the umask.
//
// A name that is not a regular file — a device such as /dev/null or
// /dev/stdout, a FIFO — is written in place: there is nothing to
// replace, and replacing it would put a file where the device was. A
// symbolic link is followed: the file it leads to is replaced.
type File struct {
	*os.File
	final  string
	done   bool
	direct bool // written in place
}

// Create starts writing the file name.
func Create(name string) (*File, error) {
	if fi, err := os.Stat(name); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
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
	for tries := 0; ; tries++ {
		tmp := filepath.Join(dir, fmt.Sprintf(".%s.%d%06d.tmp", base, os.Getpid(), rand.IntN(1e6)))
		f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
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

// Commit closes the file and gives it its final name.
func (o *File) Commit() error {
	if o.done {
		return errors.New("output committed twice")
	}
	err := o.File.Close()
	if err == nil && !o.direct {
		err = os.Rename(o.Name(), o.final)
	}
	if err != nil {
		if !o.direct {
			os.Remove(o.Name())
		}
		o.done = true
		return fmt.Errorf("%s: %w", o.final, err)
	}
	o.done = true
	return nil
}

// Abort removes the file, unless Commit has run.
func (o *File) Abort() {
	if !o.done {
		o.File.Close()
		if !o.direct {
			os.Remove(o.Name())
		}
		o.done = true
	}
}

// Write runs write on a buffered writer to the file name through a
// File, or to stdout when name is "" or "-": the file appears whole when
// write succeeds, and not at all when it fails.
func Write(name string, stdout io.Writer, write func(io.Writer) error) error {
	if name == "" || name == "-" {
		bw := bufio.NewWriter(stdout)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	o, err := Create(name)
	if err != nil {
		return err
	}
	defer o.Abort()
	bw := bufio.NewWriter(o)
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return o.Commit()
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
