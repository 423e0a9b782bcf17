package fio

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/trace"
)

// leafDirsPairs is the definition: a directory is a leaf when no other
// one starts with it and a slash.
func leafDirsPairs(dirs []string) []string {
	var out []string
	for i, d := range dirs {
		leaf := true
		for j, e := range dirs {
			if i != j && strings.HasPrefix(e, d+"/") {
				leaf = false
			}
		}
		if leaf {
			out = append(out, d)
		}
	}
	return out
}

func TestLeafDirs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	parts := []string{"a", "b", "a-b", "a.b", "c"}
	for range 500 {
		set := map[string]bool{}
		for range rng.IntN(12) {
			var b strings.Builder
			if rng.IntN(3) == 0 {
				b.WriteByte('/')
			}
			for k := range 1 + rng.IntN(4) {
				if k > 0 {
					b.WriteByte('/')
				}
				b.WriteString(parts[rng.IntN(len(parts))])
			}
			set[b.String()] = true
		}
		var dirs []string
		for d := range set {
			dirs = append(dirs, d)
		}
		slices.Sort(dirs)
		if got, want := leafDirs(dirs), leafDirsPairs(dirs); !slices.Equal(got, want) {
			t.Fatalf("%q: got %q, want %q", dirs, got, want)
		}
	}
}

// TestLeafDirsMany: 100,000 directories (comparing every pair took 377 s)
// in a time linear in their length.
func TestLeafDirsMany(t *testing.T) {
	var dirs []string
	for i := range 100_000 {
		dirs = append(dirs, fmt.Sprintf("/scratch/run/d%03d/e%d", i%1000, i))
	}
	for i := range 1000 {
		dirs = append(dirs, fmt.Sprintf("/scratch/run/d%03d", i))
	}
	slices.Sort(dirs)
	start := time.Now()
	leaves := leafDirs(dirs)
	if len(leaves) != 100_000 || leaves[0] != "/scratch/run/d000/e0" {
		t.Fatalf("%d leaves, first %q", len(leaves), leaves[0])
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %v", d)
	}
}

// TestExportManyFiles: a rank that opens, writes and closes 100,000 files
// exports in time linear in them (each close looked at every file the
// rank had used: minutes), and every file is closed in fio once.
func TestExportManyFiles(t *testing.T) {
	const n = 100_000
	m := trace.NewMemTrace()
	for i := range int64(n) {
		p := m.Paths.Intern(fmt.Sprintf("/out/f%d", i))
		m.Add(
			trace.Event{Op: trace.OpOpen, Path: p, Flags: trace.OWronly | trace.OCreat, Ret: 3, Start: i * 100},
			trace.Event{Op: trace.OpWrite, FD: 3, Size: 8, Ret: 8, Start: i*100 + 10},
			trace.Event{Op: trace.OpClose, FD: 3, Start: i*100 + 20},
		)
	}
	dir := t.TempDir()
	start := time.Now()
	s, err := Export(m, filepath.Join(dir, "many.fio"), ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 60*time.Second {
		t.Errorf("took %v", d)
	}
	b, err := os.ReadFile(s.Iologs[len(s.Iologs)-1])
	if err != nil {
		t.Fatal(err)
	}
	if c := strings.Count(string(b), " close\n"); c != n {
		t.Errorf("%d closes in the iolog, want %d", c, n)
	}
}
