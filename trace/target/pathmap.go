package target

import (
	"fmt"
	"slices"
	"strings"
)

// MapRule rewrites a path prefix: a trace path equal to Old or below it
// (at a component boundary) is placed at New, inside the target.
type MapRule struct {
	Old, New string
}

// ParseMapRule reads OLD=NEW.
func ParseMapRule(s string) (MapRule, error) {
	old, nw, ok := strings.Cut(s, "=")
	if !ok || old == "" {
		return MapRule{}, fmt.Errorf("--map %q: want OLD=NEW", s)
	}
	return MapRule{Old: old, New: nw}, nil
}

// PathNote says what the mapping did with a path beyond placing it.
type PathNote uint8

const (
	NoteNone    PathNote = iota
	NoteClamped          // ".." climbed above the root; the path was kept inside
	NoteSpecial          // under /dev, /proc or /sys: never touched
	NoteKernel           // a pipe, socket or other kernel object (pipe:[N]): never touched
)

// Skipped reports whether the path maps to nothing: the replay skips
// every call on it.
func (n PathNote) Skipped() bool { return n == NoteSpecial || n == NoteKernel }

// Mapper places trace paths inside the target directory:
//
//   - a path under a rule's Old goes to the rule's New (longest Old wins);
//   - other absolute paths lose their common directory prefix: the longest
//     run of leading components shared by the directories of every such
//     path;
//   - relative paths stay relative;
//   - ".." is resolved lexically, and never climbs above the target (as in
//     a chroot); "." components go;
//   - /dev, /proc and /sys and everything below them (but /dev/shm, which
//     holds ordinary files) are special: they map to nothing;
//   - so are the names the kernel gives descriptors that are no file in a
//     directory (what readlink of /proc/PID/fd/N says, and what tracers
//     record): "pipe:[N]", "socket:[N]", "anon_inode:…", "/memfd:…".
//
// The result is always clean and relative: "." is the target itself.
type Mapper struct {
	rules  []MapRule // cleaned, longest Old first
	prefix []string  // components of the common prefix
}

// NewMapper builds the mapping of paths (every path the replay will see,
// absolute or relative) under rules.
func NewMapper(paths []string, rules []MapRule) *Mapper {
	m := &Mapper{}
	for _, r := range rules {
		old, _ := resolve(r.Old)
		m.rules = append(m.rules, MapRule{Old: old, New: r.New})
	}
	slices.SortStableFunc(m.rules, func(a, b MapRule) int { return len(b.Old) - len(a.Old) })
	first := true
	for _, p := range paths {
		if !strings.HasPrefix(p, "/") {
			continue
		}
		cp, _ := resolve(p)
		if special(cp) || kernelObject(p) || m.rule(cp) >= 0 {
			continue
		}
		dir := components(cp)
		if len(dir) > 0 {
			dir = dir[:len(dir)-1]
		}
		if first {
			m.prefix = slices.Clone(dir)
			first = false
			continue
		}
		n := 0
		for n < len(m.prefix) && n < len(dir) && m.prefix[n] == dir[n] {
			n++
		}
		m.prefix = m.prefix[:n]
	}
	return m
}

// Prefix is the common prefix stripped from absolute paths ("/" when
// none is shared).
func (m *Mapper) Prefix() string { return "/" + strings.Join(m.prefix, "/") }

// Map returns where p goes inside the target. special reports a path that
// must not be touched; rel is then "".
func (m *Mapper) Map(p string) (rel string, note PathNote) {
	if kernelObject(p) {
		return "", NoteKernel
	}
	cp, clamped := resolve(p)
	if strings.HasPrefix(p, "/") {
		if special(cp) {
			return "", NoteSpecial
		}
	}
	var out string
	if i := m.rule(cp); i >= 0 {
		r := m.rules[i]
		rest := strings.TrimPrefix(cp, r.Old)
		var c2 bool
		out, c2 = resolve(r.New + "/" + rest)
		clamped = clamped || c2
	} else if strings.HasPrefix(cp, "/") {
		comps := components(cp)
		if len(comps) >= len(m.prefix) && slices.Equal(comps[:len(m.prefix)], m.prefix) {
			comps = comps[len(m.prefix):]
		}
		out = strings.Join(comps, "/")
	} else {
		out = cp
	}
	out = strings.TrimPrefix(out, "/")
	if out == "" {
		out = "."
	}
	if clamped {
		note = NoteClamped
	}
	return out, note
}

// rule returns the index of the rule whose Old holds cp, or -1.
func (m *Mapper) rule(cp string) int {
	for i, r := range m.rules {
		if cp == r.Old || r.Old == "/" || strings.HasPrefix(cp, r.Old+"/") {
			return i
		}
	}
	return -1
}

// resolve cleans p lexically: "." and empty components go, ".." removes
// the component before it, and a ".." with nothing before it is dropped
// (clamped reports that). An absolute p stays absolute.
func resolve(p string) (out string, clamped bool) {
	abs := strings.HasPrefix(p, "/")
	var stack []string
	for _, c := range strings.Split(p, "/") {
		switch c {
		case "", ".":
		case "..":
			if len(stack) == 0 {
				clamped = true
				continue
			}
			stack = stack[:len(stack)-1]
		default:
			stack = append(stack, c)
		}
	}
	out = strings.Join(stack, "/")
	if abs {
		out = "/" + out
	}
	return out, clamped
}

func components(cp string) []string {
	cp = strings.Trim(cp, "/")
	if cp == "" {
		return nil
	}
	return strings.Split(cp, "/")
}

// kernelObject reports whether p is the kernel's name of a descriptor
// that is no file in a directory: "pipe:[N]", "socket:[N]", any other
// "type:[N]" (namespaces, "net:[N]"), "anon_inode:…" (eventfd, epoll,
// inotify, timerfd, …) and memfd_create's "/memfd:NAME (deleted)".
func kernelObject(p string) bool {
	if strings.HasPrefix(p, "anon_inode:") || strings.HasPrefix(p, "/memfd:") {
		return true
	}
	kind, rest, ok := strings.Cut(p, ":[")
	if !ok || kind == "" || !strings.HasSuffix(rest, "]") || strings.ContainsAny(kind, "/") {
		return false
	}
	for _, c := range kind {
		if !(c >= 'a' && c <= 'z' || c == '_') {
			return false
		}
	}
	return true
}

// special reports whether the clean absolute path cp is under /dev, /proc
// or /sys, other than /dev/shm.
func special(cp string) bool {
	under := func(dir string) bool { return cp == dir || strings.HasPrefix(cp, dir+"/") }
	if under("/dev/shm") {
		return false
	}
	return under("/dev") || under("/proc") || under("/sys")
}

// Above reports whether the absolute path p is the common prefix the
// mapper strips, or a directory above it: the target itself stands for
// it.
func (m *Mapper) Above(p string) bool {
	if !strings.HasPrefix(p, "/") || m.rule(p) >= 0 {
		return false
	}
	cp, _ := resolve(p)
	comps := components(cp)
	return len(comps) <= len(m.prefix) && slices.Equal(comps, m.prefix[:len(comps)])
}
