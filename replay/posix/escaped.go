package posix

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/trace"
)

// escaped are the symbolic links of the trace that the replay did not
// make because their targets lead out of the target directory (a
// virtual environment's bin/python → /usr/bin/python3): their names,
// relative to the target. A later call through one of them would have
// reached a file outside; in the replay the name is missing, and the
// call would fail where the program's did not. It is skipped instead,
// for the reason the link was ("path leads out of the target"), as the
// kernel's refusal to resolve a link out skips a call on a link the
// target held before. Shared by the ranks.
type escaped struct {
	n  atomic.Int32
	mu sync.Mutex
	m  map[string]bool
}

func (s *escaped) add(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]bool{}
	}
	if !s.m[name] {
		s.m[name] = true
		s.n.Add(1)
	}
}

func (s *escaped) remove(name string) {
	if s.m[name] {
		delete(s.m, name)
		s.n.Add(-1)
	}
}

// under returns the link that name is, or is below, if any.
func (s *escaped) under(name string) (string, bool) {
	for p := name; p != "" && p != "." && p != "/"; {
		if s.m[p] {
			return p, true
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return "", false
}

// check decides a path call of the trace (its mapped paths, path and
// path2) against the links not made: SkipEscape when it goes through
// one. Removing or renaming such a link removes or moves it in the set
// (skipped all the same: the replay has no link to remove); a rename or
// link onto one replaces it, and the call is made.
func (s *escaped) check(op trace.Op, info *trace.OpInfo, path, path2 string) replay.Skip {
	if s.n.Load() == 0 {
		return replay.NotSkipped
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if link, ok := s.under(path); ok {
		if link == path {
			switch info.NS {
			case trace.NSRemove:
				s.remove(path)
			case trace.NSRename:
				s.remove(path)
				if path2 != "" {
					s.m[path2] = true
					s.n.Add(1)
				}
			}
		}
		return replay.SkipEscape
	}
	if path2 == "" || info.NS == trace.NSSymlink {
		return replay.NotSkipped // a symlink's Path2 is its target's text
	}
	if link, ok := s.under(path2); ok {
		if link != path2 {
			return replay.SkipEscape
		}
		s.remove(path2) // replaced by the call's file
	}
	return replay.NotSkipped
}
