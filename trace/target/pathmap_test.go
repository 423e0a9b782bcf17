package target

import (
	"strings"
	"testing"
)

func TestMapperPrefixAndRules(t *testing.T) {
	paths := []string{
		"/scratch/run/out/dump.000", "/scratch/run/out/dump.001", "/scratch/run/input.dat",
		"/scratch/run", "/home/u/data/x", "rel/file", "/dev/null", "/proc/self/status", "/dev/shm/buf",
	}
	m := NewMapper(paths, []MapRule{{Old: "/home/u", New: "home"}, {Old: "/dev/shm", New: "shm"}})
	if got := m.Prefix(); got != "/scratch" {
		t.Fatalf("prefix %q, want /scratch (directories of the unmatched absolute paths)", got)
	}
	for _, c := range []struct {
		in, want string
		note     PathNote
	}{
		{"/scratch/run/out/dump.000", "run/out/dump.000", NoteNone},
		{"/scratch/run", "run", NoteNone},
		{"/scratch", ".", NoteNone},
		{"/home/u/data/x", "home/data/x", NoteNone},
		{"/home/u", "home", NoteNone},
		{"/home/user2/x", "home/user2/x", NoteNone}, // no rule, and not below the prefix: kept whole
		{"rel/file", "rel/file", NoteNone},
		{"rel/../../up", "up", NoteClamped},
		{"/scratch/../../etc/passwd", "etc/passwd", NoteClamped},
		{"/scratch/run/./out//dump.000", "run/out/dump.000", NoteNone},
		{"/dev/null", "", NoteSpecial},
		{"/dev", "", NoteSpecial},
		{"/proc/self/status", "", NoteSpecial},
		{"/sys/kernel", "", NoteSpecial},
		{"/scratch/../dev/zero", "", NoteSpecial},
		{"/dev/shm/buf", "shm/buf", NoteNone},
		{"/devices/x", "devices/x", NoteNone},
		{"..", ".", NoteClamped},
		{"", ".", NoteNone},
	} {
		got, note := m.Map(c.in)
		if got != c.want || note != c.note {
			t.Errorf("Map(%q) = %q, %v; want %q, %v", c.in, got, note, c.want, c.note)
		}
	}
}

func TestMapperNeverLeavesTarget(t *testing.T) {
	m := NewMapper([]string{"/a/b/c"}, []MapRule{{Old: "/a/x", New: "../../.."}, {Old: "/r", New: "/abs/../../y"}})
	for _, p := range []string{"/a/x/f", "/r/g", "../../../../etc", "/../../..", "a/../../../b", "/a/b/../../../../c", "./.././x"} {
		got, note := m.Map(p)
		if note == NoteSpecial {
			continue
		}
		if strings.HasPrefix(got, "/") || got == ".." || strings.HasPrefix(got, "../") || strings.Contains(got, "/../") || strings.HasSuffix(got, "/..") {
			t.Errorf("Map(%q) = %q leaves the target", p, got)
		}
	}
}

func FuzzMapper(f *testing.F) {
	for _, s := range []string{"/a/b", "../x", "/dev/../x/..", "a//b/./c", "/", "..//..", "/dev/shm/../../etc"} {
		f.Add(s, "/a", "b/..")
	}
	f.Fuzz(func(t *testing.T, p, old, nw string) {
		m := NewMapper([]string{p, "/q/r/s"}, []MapRule{{Old: old, New: nw}})
		got, note := m.Map(p)
		if note.Skipped() { // a device, /proc, /sys; a pipe's or socket's name
			if got != "" {
				t.Fatalf("Map(%q) = %q, %v: a skipped path mapped to a name", p, got, note)
			}
			return
		}
		if got == "" || strings.HasPrefix(got, "/") {
			t.Fatalf("Map(%q) = %q: not a relative path", p, got)
		}
		for _, c := range strings.Split(got, "/") {
			if c == ".." || c == "" || (c == "." && got != ".") {
				t.Fatalf("Map(%q) = %q: component %q", p, got, c)
			}
		}
	})
}

// TestMapperKernelObjects: the names the kernel gives descriptors that are
// no file (readlink of /proc/PID/fd/N) map to nothing, and do not take
// part in the common prefix.
func TestMapperKernelObjects(t *testing.T) {
	kernel := []string{"pipe:[4026532]", "socket:[12345]", "anon_inode:[eventfd]", "anon_inode:inotify",
		"/memfd:buf (deleted)", "/memfd:x", "net:[4026531840]"}
	m := NewMapper(append([]string{"/scratch/run/a", "/scratch/run/b"}, kernel...), nil)
	if got := m.Prefix(); got != "/scratch/run" {
		t.Errorf("prefix %q, want /scratch/run", got)
	}
	for _, p := range kernel {
		if got, note := m.Map(p); got != "" || note != NoteKernel || !note.Skipped() {
			t.Errorf("Map(%q) = %q, %v; want nothing, NoteKernel", p, got, note)
		}
	}
	for _, p := range []string{"pipe:[1]/x", "dir/pipe:[1]", "Pipe:[1]", ":[1]", "pipe:[1", "memfd:x", "/scratch/run/anon_inode:x"} {
		if got, note := m.Map(p); got == "" || note != NoteNone {
			t.Errorf("Map(%q) = %q, %v: an ordinary file name", p, got, note)
		}
	}
}
