package filter

import "testing"

func TestPathsMatch(t *testing.T) {
	r, err := NewPaths([]string{"/data", "/dev/shm"}, []string{"/data/tmp"}, true)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{
		"/data": true, "/data/x": true, "/database": false, "/data/tmp": false, "/data/tmp/y": false,
		"/data/tmpx": true, "/dev/shm/seg": true, "/dev/null": false, "/home/x": false, "pipe:[1]": false,
	} {
		if got := r.Match(p); got != want {
			t.Errorf("Match(%q) = %v, want %v", p, got, want)
		}
	}
	r, _ = NewPaths(nil, []string{"/scratch"}, true)
	for p, want := range map[string]bool{
		"/home/x": true, "/scratch/a": false, "/proc/1/fd": false, "/sys": false, "/devices": true, "socket:[3]": false,
	} {
		if got := r.Match(p); got != want {
			t.Errorf("Match(%q) = %v, want %v", p, got, want)
		}
	}
	if _, err := NewPaths([]string{"relative"}, nil, true); err == nil {
		t.Error("a relative prefix was accepted")
	}
}

func TestRecordPaths(t *testing.T) {
	r, err := RecordPaths([]string{"/data"}, nil, false, "/data/run.iot")
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{"/data/x": true, "/data/run.iot": false, "/data/run.iot/rank-00001.iot": false, "/dev/shm/x": false} {
		if got := r.Match(p); got != want {
			t.Errorf("Match(%q) = %v, want %v", p, got, want)
		}
	}
	all, err := RecordPaths([]string{"/data"}, []string{"/x"}, true, "/data/run.iot")
	if err != nil || !all.Match("/proc/1/fd") || !all.Match("/x/y") {
		t.Errorf("--all: %v; want every absolute path", err)
	}
	if _, err := RecordPaths([]string{""}, nil, false); err == nil {
		t.Error("an empty prefix was accepted")
	}
}

// TestRecordSystemExcludes checks that a record leaves the system's
// directories out by default, as Darshan does, that an include inside
// one records it again, and that --all keeps everything.
func TestRecordSystemExcludes(t *testing.T) {
	r, err := RecordPaths(nil, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{
		"/usr/lib/x86_64-linux-gnu/libc.so.6": false, "/etc/ld.so.cache": false, "/usr/share/locale/locale.alias": false,
		"/lib64/ld-linux-x86-64.so.2": false, "/opt/ompi/lib/libmpi.so": false, "/var/lib/x": false,
		"/var/tmp/data": true, "/home/me/data": true, "/tmp/x": true, "/scratch/run/out": true, "/usrdata/x": true,
	} {
		if got := r.Match(p); got != want {
			t.Errorf("Match(%q) = %v, want %v", p, got, want)
		}
	}
	r, _ = RecordPaths([]string{"/usr/local/data"}, nil, false)
	if !r.Match("/usr/local/data/in") || r.Match("/usr/lib/x") {
		t.Error("an include inside /usr should record it again, and only it")
	}
	if all, _ := RecordPaths(nil, nil, true); !all.Match("/usr/lib/x") {
		t.Error("--all leaves /usr out")
	}
	if !SystemFile("/usr/lib/locale/C.utf8/LC_CTYPE") || !SystemFile("/opt/x/lib.so") || SystemFile("/home/x") || SystemFile("/usr") {
		t.Error("SystemFile")
	}
}

func TestDescriptorPath(t *testing.T) {
	for _, c := range []struct {
		name string
		pid  int
		fd   int32
		ok   bool
	}{
		{"/proc/self/fd/3", 0, 3, true},
		{"/proc/thread-self/fd/12", 0, 12, true},
		{"/dev/fd/0", 0, 0, true},
		{"/proc/4242/fd/7", 4242, 7, true},
		{"/proc/4242/fd/7", 0, 7, true},
		{"/proc/4242/fd/7", 99, 0, false}, // another process's descriptor
		{"/proc/self/fd/", 0, 0, false},
		{"/proc/self/fd/3/x", 0, 0, false},
		{"/proc/self/fd/03", 0, 0, false},
		{"/proc/self/fd/-1", 0, 0, false},
		{"/proc/self/fdinfo/3", 0, 0, false},
		{"/proc/self/status", 0, 0, false},
		{"/proc/04242/fd/7", 0, 0, false},
		{"/tmp/proc/self/fd/3", 0, 0, false},
		{"/proc/self/fd/99999999999", 0, 0, false},
	} {
		fd, ok := DescriptorPath(c.name, c.pid)
		if fd != c.fd || ok != c.ok {
			t.Errorf("DescriptorPath(%q, %d) = %d, %v; want %d, %v", c.name, c.pid, fd, ok, c.fd, c.ok)
		}
	}
}
