package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompareE2E compares a trace with itself and with another one.
func TestCompareE2E(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.iot"), filepath.Join(dir, "b.iot")
	mustRun(t, "generate", "ior", "--ranks", "2", "--calls", "16", "-o", a)
	mustRun(t, "generate", "ior", "--ranks", "2", "--calls", "20", "--seed", "2", "-o", b)

	out := mustRun(t, "compare", "--check", a, a)
	for _, want := range []string{"a: 2 ranks, 72 events", "b: 2 ranks, 72 events", "run time b/a: 1.00", "All counts match.", "time b/a"} {
		if !strings.Contains(out, want) {
			t.Fatalf("compare lacks %q:\n%s", want, out)
		}
	}

	out, errOut, code := run(t, "compare", "--check", a, b)
	if code != 1 || !strings.Contains(out, "count mismatch") || !strings.Contains(errOut, "counts differ in read, write") {
		t.Fatalf("mismatch: exit %d\n%s\n%s", code, out, errOut)
	}
	out, _, code = run(t, "compare", a, b)
	if code != 0 || !strings.Contains(out, "Counts differ in 2 rows: read write") {
		t.Fatalf("without --check: exit %d\n%s", code, out)
	}

	js := mustRun(t, "compare", "--format", "json", a, b)
	var v struct {
		CountsMatch bool     `json:"counts_match"`
		Mismatches  []string `json:"mismatches"`
		Ops         []struct {
			Op     string `json:"op"`
			CountA int64  `json:"count_a"`
			CountB int64  `json:"count_b"`
		} `json:"ops"`
	}
	if err := json.Unmarshal([]byte(js), &v); err != nil || v.CountsMatch || len(v.Ops) == 0 {
		t.Fatalf("json: %v %+v", err, v)
	}
	for _, o := range v.Ops {
		if o.Op == "write" && (o.CountA != 32 || o.CountB != 40) {
			t.Fatalf("write counts %d, %d; want 32, 40", o.CountA, o.CountB)
		}
	}

	for _, args := range [][]string{{"compare", a}, {"compare", a, filepath.Join(dir, "none.iot")}, {"compare", "--format", "xml", a, b}} {
		_, errOut, code := run(t, args...)
		// One line; a missing input is followed by the usage.
		first, usage, _ := strings.Cut(errOut, "\n")
		if code == 0 || first == "" || usage != "" && !strings.HasPrefix(usage, "Usage: iotrace compare") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
}
