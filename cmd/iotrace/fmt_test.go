package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestFmtCommand(t *testing.T) {
	dir := t.TempDir()
	messy := "param  n=2\nrepeat n as i{write \"f.$rank\" size 4KiB at i*4KiB}\n"
	clean := "param n = 2\nrepeat n as i {\n    write \"f.$rank\" at i * 4KiB size 4KiB\n}\n"
	a := filepath.Join(dir, "a.iop")
	b := filepath.Join(dir, "sub", "b.iop")
	os.MkdirAll(filepath.Dir(b), 0o755)
	os.WriteFile(a, []byte(messy), 0o640)
	os.WriteFile(b, []byte(clean), 0o644)

	if out := mustRun(t, "fmt", a); out != clean {
		t.Errorf("fmt a.iop:\n%s", out)
	}
	if out := mustRun(t, "fmt", "-l", dir); out != a+"\n" {
		t.Errorf("fmt -l: %q", out)
	}
	mustRun(t, "fmt", "-w", dir)
	got, _ := os.ReadFile(a)
	fi, _ := os.Stat(a)
	if string(got) != clean || fi.Mode().Perm() != 0o640 {
		t.Errorf("after -w (mode %v):\n%s", fi.Mode(), got)
	}
	if out := mustRun(t, "fmt", "-l", dir); out != "" {
		t.Errorf("fmt -l after -w: %q", out)
	}

	// Standard input.
	cmd := exec.Command(iotraceBin, "fmt")
	cmd.Stdin = strings.NewReader(messy)
	out, err := cmd.Output()
	if err != nil || string(out) != clean {
		t.Errorf("stdin: %v\n%s", err, out)
	}

	// A syntax error: one line, exit 1, the file left alone.
	bad := filepath.Join(dir, "bad.iop")
	os.WriteFile(bad, []byte("repeat 3 barrier\n"), 0o644)
	stdout, stderr, code := run(t, "fmt", "-w", bad, a)
	if code != 1 || stdout != "" || stderr != bad+":1:10: expected '{' after repeat count, found 'barrier'\n" {
		t.Errorf("syntax error: code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// --check reports every problem of the checks.
	os.WriteFile(bad, []byte("let a = x\nwrite \"f\" size 1s\n"), 0o644)
	_, stderr, code = run(t, "fmt", "--check", bad)
	want := bad + ":1:9: undefined: x\n" + bad + ":2:16: the size of write must be an int, got a duration (divide by a unit to count them: d / 1ms)\n"
	if code != 1 || stderr != want {
		t.Errorf("--check: code %d, stderr %q", code, stderr)
	}
}

// TestScriptAsInput reads a pattern script wherever a trace goes.
func TestScriptAsInput(t *testing.T) {
	dir := t.TempDir()
	s := filepath.Join(dir, "p.iop")
	os.WriteFile(s, []byte("param n = 2\nrepeat n as i {\n    write \"f.$rank\" at i * 4KiB size 4KiB\n}\nbarrier\n"), 0o644)
	out := mustRun(t, "stats", s, "--ranks", "3", "--param", "n=5", "--format", "csv")
	if !strings.Contains(out, "write,15,") || !strings.Contains(out, "MPI_Barrier,3,") {
		t.Errorf("stats of a script:\n%s", out)
	}
	_, stderr, code := run(t, "stats", s, "--ranks", "3", "--param", "n=5s")
	if code != 1 || stderr != "iotrace: --param n=5s: want an int, got a duration\n" {
		t.Errorf("bad param: %d %q", code, stderr)
	}
}
