// Package target places a trace in a directory: where each of its paths
// goes (Mapper: the common prefix stripped, --map rules, ".." clamped,
// /dev, /proc, /sys and kernel objects never touched), and what must be
// there before its calls run (Layout: directories, and files with the
// sizes its reads need, where they were before any rename). The replay
// prepares a Layout before it runs; exporters that write a job for
// another tool (convert/fio) place files by the same rules without a
// replay.
package target

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/state"
)

// Layout is what a trace needs of a target directory.
type Layout struct {
	Prefix string      // common prefix stripped from absolute paths
	Paths  []PathEntry // every distinct trace path, sorted
	Dirs   []string    // directories to create, parents first
	Files  []PrepFile  // files to create, sorted
	// Anomalies counts names the trace found though it never made them
	// where it could have known (an untraced call, another program made
	// them while it ran): preparing cannot make them.
	Anomalies int

	mapper *Mapper
}

// PathEntry is where one trace path goes.
type PathEntry struct {
	Trace  string
	Target string // relative to the target directory; "" when skipped
	Note   PathNote
}

// PrepFile is a file to create before the trace runs.
type PrepFile struct {
	Path string // relative to the target directory
	Size int64
}

// NewLayout places paths (every path of the trace, once each) under rules,
// and what ns, the namespace the trace's calls were followed in, found
// before the trace: directories (parents first) and files with the size
// their reads needed. A name several trace paths map to is prepared once,
// as a directory if any is one, with the largest size.
func NewLayout(paths []string, ns *state.Namespace, rules []MapRule) *Layout {
	mp := NewMapper(paths, rules)
	l := &Layout{mapper: mp, Prefix: mp.Prefix(), Anomalies: ns.Anomalies}
	for _, s := range paths {
		rel, note := mp.Map(s)
		l.Paths = append(l.Paths, PathEntry{Trace: s, Target: rel, Note: note})
	}
	slices.SortFunc(l.Paths, func(a, b PathEntry) int { return strings.Compare(a.Trace, b.Trace) })
	l.Paths = slices.CompactFunc(l.Paths, func(a, b PathEntry) bool { return a.Trace == b.Trace })
	dirs := map[string]bool{}
	files := map[string]int64{}
	for _, e := range ns.Before() {
		rel, note := mp.Map(e.Path)
		if note.Skipped() || rel == "." || mp.Above(e.Path) {
			continue
		}
		if e.Kind == state.KindDir {
			dirs[rel] = true
			continue
		}
		files[rel] = max(files[rel], e.Need)
	}
	// What lies below a prepared name makes that one a directory, and the
	// directories above every prepared name are made too (/dev/shm/x:
	// dev is never a trace path of its own, as /dev is special).
	for _, m := range []map[string]bool{dirs, keys(files)} {
		for rel := range m {
			for d := path.Dir(rel); d != "." && d != "/"; d = path.Dir(d) {
				dirs[d] = true
			}
		}
	}
	for d := range dirs {
		delete(files, d)
		l.Dirs = append(l.Dirs, d)
	}
	slices.SortFunc(l.Dirs, func(a, b string) int {
		if c := strings.Count(a, "/") - strings.Count(b, "/"); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	for rel, size := range files {
		l.Files = append(l.Files, PrepFile{Path: rel, Size: size})
	}
	slices.SortFunc(l.Files, func(a, b PrepFile) int { return strings.Compare(a.Path, b.Path) })
	return l
}

func keys[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// Map returns where the trace path p goes (see Mapper.Map).
func (l *Layout) Map(p string) (rel string, note PathNote) { return l.mapper.Map(p) }

// Bytes is the number of bytes the prepared files hold.
func (l *Layout) Bytes() int64 {
	var n int64
	for _, f := range l.Files {
		n += f.Size
	}
	return n
}

// Analyze reads every rank of t once, together in the order of their
// collective calls (Merger), follows their calls in one namespace, and
// places the trace under rules: the layout of t without a replay.
func Analyze(t trace.Trace, rules []MapRule) (*Layout, error) {
	ranks := t.Ranks()
	m, err := NewMerger(t, ranks)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	ns := state.NewNamespace(t.Path)
	fs := make([]*state.Follower[struct{}, struct{}], len(ranks))
	for i := range fs {
		fs[i] = state.New[struct{}, struct{}](ns)
	}
	seen := map[trace.PathID]bool{}
	var paths []string
	for {
		i, e, err := m.Next()
		if err != nil {
			return nil, fmt.Errorf("rank %d: %w", ranks[i], err)
		}
		if e == nil {
			break
		}
		switch e.Op.Class() {
		case trace.ClassMarker, trace.ClassComm:
			continue
		}
		for _, id := range Paths(e) {
			if id != 0 && !seen[id] {
				seen[id] = true
				paths = append(paths, t.Path(id))
			}
		}
		if fs[i].Data(e) == nil {
			fs[i].Apply(e)
		}
	}
	return NewLayout(paths, ns, rules), nil
}

// Paths returns the path ids of e that name files of the trace (0 for
// none): its path and second path, but not a symbolic link's target
// (text, not a file of the trace), and none of a marker (a label), a
// communication call or a process event.
func Paths(e *trace.Event) [2]trace.PathID {
	switch e.Op.Class() {
	case trace.ClassMarker, trace.ClassComm, trace.ClassProcess:
		return [2]trace.PathID{}
	}
	ids := [2]trace.PathID{e.Path, e.Path2}
	if e.Op.Info().NS == trace.NSSymlink {
		ids[1] = 0
	}
	return ids
}
