package ptrace

import (
	"fmt"
	"path/filepath"
	"strings"
)

// DefaultExcludes are the prefixes not recorded unless an --include
// names them: kernel interfaces and devices, not files.
var DefaultExcludes = []string{"/proc", "/sys", "/dev"}

// Rules decide which paths are recorded. The longest prefix (whole path
// components) among the include and exclude prefixes that matches a path
// decides; an exclude wins a tie. A path no prefix matches is recorded
// unless there are include prefixes. Names that are not absolute paths
// (pipes, sockets, anonymous inodes) are never recorded.
type Rules struct {
	rules    []rule
	includes bool
}

type rule struct {
	prefix  string
	include bool
}

// NewRules returns the rules for the given prefixes. With defaults, the
// DefaultExcludes are added to exclude. Prefixes must be absolute.
func NewRules(include, exclude []string, defaults bool) (*Rules, error) {
	r := &Rules{}
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

// Match reports whether calls on path are recorded.
func (r *Rules) Match(path string) bool {
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
