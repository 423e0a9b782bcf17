package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeFirstCommand runs the README's first command, the main job on
// a built-in sample, the way a user who just cloned the repository does
// (with the binary the tests built instead of go run), and checks that the
// second is the test command .ci/run calls.
func TestReadmeFirstCommand(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(b), "```sh\n")
	if !ok {
		t.Fatal("README.md has no sh block")
	}
	block, _, _ = strings.Cut(block, "```")
	lines := strings.Split(strings.TrimSpace(block), "\n")
	if len(lines) != 2 {
		t.Fatalf("README's first block has %d lines, want the two commands", len(lines))
	}
	cmd, _, _ := strings.Cut(lines[0], "#")
	args := strings.Fields(cmd)
	if len(args) < 3 || args[0] != "go" || args[1] != "run" || args[2] != "./cmd/ioreplay" {
		t.Fatalf("README's first command %q does not run ./cmd/ioreplay", cmd)
	}
	stdout, stderr, code := runBin(t, args[3:]...)
	if code != 0 {
		t.Fatalf("%s: exit %d\n%s", cmd, code, stderr)
	}
	for _, want := range []string{"operation", "write", "MPI_Sendrecv", "TOTAL"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("%s: the report lacks %q:\n%s", cmd, want, stdout)
		}
	}
	test, _, _ := strings.Cut(lines[1], "#")
	ci, err := os.ReadFile(filepath.Join("..", "..", ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	ciLines := strings.Split(strings.TrimSpace(string(ci)), "\n")
	if last := strings.TrimSpace(ciLines[len(ciLines)-1]); last != strings.TrimSpace(test) {
		t.Errorf(".ci/run ends with %q, the README's test command is %q", last, strings.TrimSpace(test))
	}
}
