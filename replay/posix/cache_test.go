package posix

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/iotrace/iotrace/trace/target"
)

// TestCacheStates: after the prepare phase its files are cached; --cache
// cold drops the pages of every file of the trace in the target
// (prepared, or there before), warm reads them all in, as-captured
// leaves them; a symbolic link out of the target is not followed, a
// directory or a file not there yet is passed over.
func TestCacheStates(t *testing.T) {
	dir := cachedDir(t)
	outside := cachedDir(t)
	os.Mkdir(filepath.Join(dir, "old"), 0o755)
	old := filepath.Join(dir, "old", "there-before")
	os.WriteFile(old, make([]byte, 256<<10), 0o644)
	secret := filepath.Join(outside, "secret")
	os.WriteFile(secret, make([]byte, 256<<10), 0o644)
	evict(t, secret)
	os.Symlink(secret, filepath.Join(dir, "link"))
	b, err := New(Options{Target: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	lay := target.Layout{Dirs: []string{"in"}, Files: []target.PrepFile{{Path: "in/a", Size: 1 << 20}, {Path: "b", Size: 300 << 10}},
		Paths: []target.PathEntry{{Target: "in/a"}, {Target: "b"}, {Target: "old/there-before"}, {Target: "link"},
			{Target: "in"}, {Target: "not-yet"}, {Target: ""}}}
	if err := b.Prepare(context.Background(), &lay); err != nil {
		t.Fatal(err)
	}
	files := []string{filepath.Join(dir, "in/a"), filepath.Join(dir, "b"), old}
	pages := func(p string) int {
		fi, _ := os.Stat(p)
		return int((fi.Size() + pageSize - 1) / pageSize)
	}
	if n := resident(t, files[0]); n != pages(files[0]) {
		t.Fatalf("%d of %d pages of a prepared file cached after prepare (the state --cache cold must change)", n, pages(files[0]))
	}
	if n, err := b.SetCache(context.Background(), CacheAsCaptured, &lay); n != 0 || err != nil || resident(t, files[0]) == 0 {
		t.Errorf("as-captured: %d files, %v; the cache changed", n, err)
	}
	n, err := b.SetCache(context.Background(), CacheCold, &lay)
	if err != nil || n != 3 {
		t.Fatalf("cold: %d files, %v; want the 3 regular files of the trace", n, err)
	}
	for _, f := range files {
		if k := resident(t, f); k != 0 {
			t.Errorf("cold: %d pages of %s still cached", k, f)
		}
	}
	if _, err := b.SetCache(context.Background(), CacheWarm, &lay); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if k := resident(t, f); k != pages(f) {
			t.Errorf("warm: %d of %d pages of %s cached", k, pages(f), f)
		}
	}
	if k := resident(t, secret); k != 0 {
		t.Errorf("warm read %d pages of a file outside through a symbolic link", k)
	}
	for _, s := range []string{"cold", "warm", "as-captured"} {
		if c, err := ParseCache(s); err != nil || c.String() != s {
			t.Errorf("ParseCache(%q) = %v, %v", s, c, err)
		}
	}
	if _, err := ParseCache("hot"); err == nil {
		t.Error("ParseCache accepts hot")
	}
}
