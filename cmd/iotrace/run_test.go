package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/convert"
	"github.com/iotrace/iotrace/trace/filter"
)

// TestRunWithoutCobra: a command is its options and a run function; it
// runs without cobra, on buffers.
func TestRunWithoutCobra(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	s := cli.IO{Out: &out, Err: &errb}
	tr := filepath.Join(dir, "ior.iot")
	if err := runGenerate(&generateOptions{out: tr, ranks: 2, calls: 8, seed: 1}, "ior", s); err != nil {
		t.Fatal(err)
	}
	if err := runStats(&statsOptions{by: "op", format: "text"}, []string{tr}, s); err != nil || !strings.Contains(out.String(), "TOTAL") {
		t.Fatalf("stats: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := runDump(&dumpOptions{format: "jsonl", in: convert.Opener{Select: filter.Flags{Ranks: []string{"1"}, Ops: []string{"write"}}}}, []string{tr}, s); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\n"); n != 8 || strings.Contains(out.String(), `"rank":0`) {
		t.Errorf("dump --rank 1 --op write: %d lines:\n%s", n, out.String())
	}
	if err := runStats(&statsOptions{by: "nope", format: "text"}, []string{tr}, s); err == nil || !strings.Contains(err.Error(), `--by "nope"`) {
		t.Errorf("a bad --by: %v", err)
	}
}
