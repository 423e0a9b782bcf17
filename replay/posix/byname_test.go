package posix

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/replay"
)

// TestName checks the names handed to a library that opens by name
// (MPI-IO): every trap of setup is refused, and what is allowed lies in
// the target's real directory.
func TestName(t *testing.T) {
	for _, walk := range []bool{false, true} {
		target, _ := setup(t)
		if err := os.WriteFile(filepath.Join(target, "plain"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		b, _ := newExec(t, Options{Target: target, Walk: walk})
		real, _ := filepath.EvalSymlinks(target)
		for _, c := range []struct {
			rel   string
			write bool
			ok    bool
		}{
			{"plain", true, true},
			{"new", true, true},
			{"sub/new", true, true},
			{"hard", false, true},
			{"hard", true, false},
			{"fifo", false, false},
			{"sub", false, false},
			{".", true, false},
			{"abs/secret", false, false},
			{"abs/new", true, false},
			{"rel/secret", false, false},
			{"file", false, false},
			{"dangling", true, false},
			{"twist", false, false},
			{"missing/new", true, false},
		} {
			name, ret, skip := b.Name(c.rel, c.write)
			ok := ret == 0 && skip == replay.NotSkipped
			if ok != c.ok {
				t.Errorf("walk %v: Name(%q, write %v) = %q, %d, %v; want ok %v", walk, c.rel, c.write, name, ret, skip, c.ok)
				continue
			}
			if ok && (name != filepath.Join(real, c.rel) || !strings.HasPrefix(name, real+"/")) {
				t.Errorf("walk %v: Name(%q) = %q, want it in %s", walk, c.rel, name, real)
			}
		}
	}
}
