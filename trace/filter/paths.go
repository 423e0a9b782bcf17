package filter

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// DefaultExcludes are the prefixes a recorder leaves out unless an
// include names them: kernel interfaces and devices, not files.
var DefaultExcludes = []string{"/proc", "/sys", "/dev"}

// SystemExcludes are the system's directories, which iotrace record (and
// the strace importer, as record) leaves out by default as Darshan does
// (its DARSHAN_EXCLUDE_DIRS): the dynamic loader's libraries and cache,
// locales, the probes of PATH, configuration. A program's own I/O is
// seldom there, and without them a small script's trace is not dominated
// by a thousand failed probes. An include prefix inside one of them
// records it again (the longest prefix decides), and --all keeps
// everything.
var SystemExcludes = []string{"/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/opt", "/run", "/var/lib", "/var/cache", "/var/run"}

// RecordExcludes are the prefixes a record leaves out by default:
// DefaultExcludes and SystemExcludes.
func RecordExcludes() []string {
	return append(append([]string(nil), DefaultExcludes...), SystemExcludes...)
}

// Paths choose paths by prefix. The longest prefix (whole path
// components) among the include and exclude prefixes that matches a path
// decides; an exclude wins a tie. A path no prefix matches is chosen
// unless there are include prefixes. Names that are not absolute paths
// (pipes, sockets, anonymous inodes) are never chosen.
type Paths struct {
	rules    []rule
	includes bool
}

type rule struct {
	prefix  string
	include bool
}

// NewPaths returns the rules for the given prefixes. With defaults, the
// DefaultExcludes are added to exclude. Prefixes must be absolute.
func NewPaths(include, exclude []string, defaults bool) (*Paths, error) {
	r := &Paths{}
	add := func(p string, inc bool) error {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("path prefix %q is not absolute", p)
		}
		r.rules = append(r.rules, rule{prefix: filepath.Clean(p), include: inc})
		return nil
	}
	for _, p := range include {
		if err := add(p, true); err != nil {
			return nil, err
		}
		r.includes = true
	}
	if defaults {
		exclude = append(append([]string(nil), DefaultExcludes...), exclude...)
	}
	for _, p := range exclude {
		if err := add(p, false); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// RecordPaths are the path rules of a recording or an import (iotrace
// record, convert --from strace): the --include and --exclude prefixes,
// relative ones taken from the current directory; the DefaultExcludes
// and SystemExcludes (RecordExcludes), unless all (--all: no exclusion
// at all); and the outputs, so that a
// recorder does not record the trace it writes (an output directory
// leaves out every rank's file in it).
func RecordPaths(include, exclude []string, all bool, outputs ...string) (*Paths, error) {
	if all {
		return NewPaths(nil, nil, false)
	}
	abs := func(list []string) ([]string, error) {
		out := make([]string, 0, len(list))
		for _, p := range list {
			if p == "" {
				return nil, errors.New("--include/--exclude: empty path prefix")
			}
			a, err := filepath.Abs(p)
			if err != nil {
				return nil, fmt.Errorf("--include/--exclude %s: %w", p, err)
			}
			out = append(out, a)
		}
		return out, nil
	}
	inc, err := abs(include)
	if err != nil {
		return nil, err
	}
	exc, err := abs(exclude)
	if err != nil {
		return nil, err
	}
	exc = append(exc, SystemExcludes...)
	for _, o := range outputs {
		if o == "" {
			continue
		}
		if a, err := filepath.Abs(o); err == nil {
			exc = append(exc, a)
		}
	}
	return NewPaths(inc, exc, true)
}

// Match reports whether path is chosen.
func (r *Paths) Match(path string) bool {
	if !strings.HasPrefix(path, "/") {
		return false
	}
	best, inc := -1, !r.includes
	for _, ru := range r.rules {
		if !under(path, ru.prefix) {
			continue
		}
		l := len(ru.prefix)
		if l > best || (l == best && !ru.include) {
			best, inc = l, ru.include
		}
	}
	return inc
}

// under reports whether path is prefix or inside it.
func under(path, prefix string) bool {
	if prefix == "/" {
		return true
	}
	return path == prefix || (strings.HasPrefix(path, prefix) && path[len(prefix)] == '/')
}

// SystemFile reports whether name is a file of the system, under one of
// the SystemExcludes (a library the dynamic loader maps, its cache,
// locale data): recorders do not count mappings of those as I/O the
// trace misses.
func SystemFile(name string) bool {
	for _, d := range SystemExcludes {
		if len(name) > len(d) && under(name, d) {
			return true
		}
	}
	return false
}

// DescriptorPath reports whether name, a resolved path, names the file
// open on a descriptor of the process that names it rather than a file
// of its own: /proc/self/fd/N, /proc/thread-self/fd/N, /dev/fd/N, or
// /proc/PID/fd/N with PID the process's (pid; 0: any). It returns N.
// linkat(AT_FDCWD, "/proc/self/fd/N", …, AT_SYMLINK_FOLLOW) is how a file
// made with O_TMPFILE gets its name: recorders write it as the link of
// descriptor N.
func DescriptorPath(name string, pid int) (int32, bool) {
	var rest string
	switch {
	case strings.HasPrefix(name, "/proc/self/fd/"):
		rest = name[len("/proc/self/fd/"):]
	case strings.HasPrefix(name, "/proc/thread-self/fd/"):
		rest = name[len("/proc/thread-self/fd/"):]
	case strings.HasPrefix(name, "/dev/fd/"):
		rest = name[len("/dev/fd/"):]
	case strings.HasPrefix(name, "/proc/"):
		p, r, ok := strings.Cut(name[len("/proc/"):], "/fd/")
		n, err := strconv.Atoi(p)
		if !ok || err != nil || n <= 0 || pid != 0 && n != pid || p != strconv.Itoa(n) {
			return 0, false
		}
		rest = r
	default:
		return 0, false
	}
	n, err := strconv.ParseInt(rest, 10, 32)
	if err != nil || n < 0 || rest != strconv.FormatInt(n, 10) {
		return 0, false
	}
	return int32(n), true
}
