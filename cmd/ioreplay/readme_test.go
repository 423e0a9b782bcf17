package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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

// TestDocsHoldInAClone checks what a reader of a clone meets in README.md
// and docs/*.md: every relative link and every `docs/…`, `bench/…`,
// `samples/…`, `corpus/…` or `cmd/…` path they name exists in the
// repository (the README once linked ../shared/DESIGN.md, outside it); no
// path of the machine they were written on; and every code block with an
// `mpirun -np N` for more than 2 processes says --oversubscribe, which
// Open MPI needs on a 2-core machine.
func TestDocsHoldInAClone(t *testing.T) {
	root := filepath.Join("..", "..")
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	docs = append(docs, filepath.Join(root, "README.md"))
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	named := regexp.MustCompile("`((?:docs|bench|samples|corpus|cmd)/[^`\\s]*)`")
	np := regexp.MustCompile(`mpirun\b[^\n]*?-np (\d+)`)
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		s, name := string(b), filepath.Base(doc)
		for _, m := range link.FindAllStringSubmatch(s, -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(doc), target)); err != nil {
				t.Errorf("%s links to %s, which a clone lacks", name, m[1])
			}
		}
		for _, m := range named.FindAllStringSubmatch(s, -1) {
			if strings.ContainsAny(m[1], "*…<>$") {
				continue
			}
			if _, err := os.Stat(filepath.Join(root, strings.TrimSuffix(m[1], "/"))); err != nil {
				t.Errorf("%s names %s, which a clone lacks", name, m[1])
			}
		}
		for _, bad := range []string{"../shared/", "/work/", "/root/"} {
			if strings.Contains(s, bad) {
				t.Errorf("%s names %s, a path of the machine it was written on", name, bad)
			}
		}
		blocks := strings.Split(s, "```")
		for i := 1; i < len(blocks); i += 2 {
			for _, m := range np.FindAllStringSubmatch(blocks[i], -1) {
				if n, _ := strconv.Atoi(m[1]); n > 2 && !strings.Contains(blocks[i], "--oversubscribe") {
					t.Errorf("%s: %q in a block that does not say --oversubscribe (needed for more processes than cores)", name, m[0])
				}
			}
		}
	}
}
