package preload

import (
	"errors"
	"os"
	"testing"
	"time"
)

// TestImageCost runs the measurement whole: iotrace-spawn untraced and
// under the shim, the spools encoded, every process's call found in the
// trace. The cost is not negative (a faster traced round counts 0) and
// below what a process start costs at all, or, on a loaded machine, the
// measurement says it was too busy; it leaves nothing in its directory. (Its size is the benchmark's:
// bench/record, part 5.)
func TestImageCost(t *testing.T) {
	libs := buildShim(t)
	dir := t.TempDir()
	for _, pre := range []bool{false, true} {
		t0 := time.Now()
		c, err := ImageCost(libs, dir, pre)
		took := time.Since(t0)
		if errors.Is(err, ErrBusy) {
			// A loaded machine (the suite's other packages): the
			// measurement says so rather than give a number.
			t.Logf("pre %v: %v", pre, err)
		} else if err != nil {
			t.Fatal(err)
		}
		if c < 0 || c > int64(20*time.Millisecond) {
			t.Errorf("ImageCost(pre %v) = %d ns, want 0 to 20 ms", pre, c)
		}
		t.Logf("the shim's cost per process start (streams set up before the exec: %v): %d ns, measured in %v", pre, c, took)
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("left in %s: %v", dir, ents)
		}
	}
	// Without the program to start, one clear error.
	libs.Spawn = ""
	if _, err := ImageCost(libs, dir, false); err == nil {
		t.Error("ImageCost without iotrace-spawn: no error")
	}
}
