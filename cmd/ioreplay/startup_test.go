package main

import (
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// TestInitsAllocateLittle: the initialisation of iotrace's own packages,
// which every ioreplay pays before it reads its command line, makes only
// what a replay needs at once (the op table); the importers', scripts'
// and reports' regular expressions and tables are made when first used.
// Before they were, it allocated 179 KiB in 906 allocations (each new
// page a fault at start-up); 38 KiB in 215 after.
func TestInitsAllocateLittle(t *testing.T) {
	cmd := exec.Command(bin, "--version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ioreplay --version: %v\n%s", err, out)
	}
	type pkg struct {
		name          string
		bytes, allocs int64
	}
	var ours []pkg
	var total int64
	for _, line := range strings.Split(string(out), "\n") {
		// init PKG @T ms, C ms clock, B bytes, A allocs
		f := strings.Fields(line)
		if len(f) != 11 || f[0] != "init" || !strings.HasPrefix(f[1], "github.com/iotrace/iotrace/") {
			continue
		}
		var p pkg
		p.name = strings.TrimPrefix(f[1], "github.com/iotrace/iotrace/")
		if _, err := fmt.Sscan(f[7]+" "+f[9], &p.bytes, &p.allocs); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		ours = append(ours, p)
		total += p.bytes
	}
	if len(ours) == 0 {
		t.Fatalf("no init lines of iotrace's packages in GODEBUG=inittrace=1 output:\n%s", out)
	}
	if total > 64<<10 {
		sort.Slice(ours, func(i, j int) bool { return ours[i].bytes > ours[j].bytes })
		var top []string
		for _, p := range ours[:min(len(ours), 5)] {
			top = append(top, fmt.Sprintf("%s %d bytes in %d allocations", p.name, p.bytes, p.allocs))
		}
		t.Errorf("the inits of iotrace's packages allocate %d bytes, more than 64 KiB: make what a replay does not need at once when first used (sync.OnceValue); the most: %s", total, strings.Join(top, "; "))
	}
}
