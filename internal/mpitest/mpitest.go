// Package mpitest runs the tests that need MPI from the default build:
// it finds mpirun, mpicc and mpi.h, builds binaries with the build tag
// mpi, and runs them under mpirun. Without MPI a test is skipped with the
// reason, except under CI (CI=true), where it fails: CI installs Open MPI
// (.ci/run).
package mpitest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Need skips t (fails it under CI) unless mpirun, mpicc and mpi.h are
// there.
func Need(t testing.TB) {
	t.Helper()
	if err := check(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("MPI is required under CI: %v (install openmpi-bin libopenmpi-dev)", err)
		}
		t.Skipf("MPI not available: %v (install openmpi-bin libopenmpi-dev)", err)
	}
}

var checked struct {
	sync.Once
	err error
}

func check() error {
	checked.Do(func() {
		for _, tool := range []string{"mpirun", "mpicc"} {
			if _, err := exec.LookPath(tool); err != nil {
				checked.err = fmt.Errorf("%s not found", tool)
				return
			}
		}
		out, err := exec.Command("mpicc", "--showme:incdirs").Output()
		if err != nil {
			// Not Open MPI's wrapper: compile a test instead.
			dir, derr := os.MkdirTemp("", "mpitest-")
			if derr != nil {
				checked.err = derr
				return
			}
			defer os.RemoveAll(dir)
			src := filepath.Join(dir, "t.c")
			os.WriteFile(src, []byte("#include <mpi.h>\nint main(void){return 0;}\n"), 0o644)
			if out, err := exec.Command("mpicc", "-o", filepath.Join(dir, "t"), src).CombinedOutput(); err != nil {
				checked.err = fmt.Errorf("mpicc cannot build a program with mpi.h: %v: %s", err, out)
			}
			return
		}
		for _, d := range strings.Fields(string(out)) {
			if _, err := os.Stat(filepath.Join(d, "mpi.h")); err == nil {
				return
			}
		}
		checked.err = fmt.Errorf("mpi.h not found in %s", strings.TrimSpace(string(out)))
	})
	return checked.err
}

// Env is the environment for mpirun: Open MPI refuses to run as root
// without these, and a test may run as root in a container.
func Env(extra ...string) []string {
	env := os.Environ()
	env = append(env, "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
		"OMPI_MCA_rmaps_base_oversubscribe=1")
	return append(env, extra...)
}

var built sync.Map // key → *buildResult

type buildResult struct {
	once sync.Once
	path string
	err  error
}

// BuildGo builds the Go package pkg (an import path or ./dir relative to
// the module root) with the build tag mpi, once per test binary, and
// returns the binary. test builds the package's test binary instead.
func BuildGo(t testing.TB, pkg string, test bool) string {
	t.Helper()
	Need(t)
	key := fmt.Sprint(pkg, test)
	v, _ := built.LoadOrStore(key, &buildResult{})
	b := v.(*buildResult)
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "mpitest-bin-")
		if err != nil {
			b.err = err
			return
		}
		name := filepath.Base(pkg)
		if test {
			name += ".test"
		}
		b.path = filepath.Join(dir, name)
		args := []string{"build", "-tags", "mpi", "-o", b.path, pkg}
		if test {
			args = []string{"test", "-c", "-tags", "mpi", "-o", b.path, pkg}
		}
		cmd := exec.Command("go", args...)
		cmd.Dir = ModuleRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// Main runs the tests of a package that uses BuildGo, and then removes
// the binaries BuildGo made (they serve every test of the package, so no
// one test's cleanup may remove them): call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// Cleanup removes the binaries BuildGo made; a TestMain that does more
// than Main calls it after m.Run.
func Cleanup() {
	built.Range(func(_, v any) bool {
		if b := v.(*buildResult); b.path != "" {
			os.RemoveAll(filepath.Dir(b.path))
		}
		return true
	})
}

// ModuleRoot is the directory of go.mod.
func ModuleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Result is what a run under mpirun printed and how it ended.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// Run runs mpirun -np np --oversubscribe argv… in dir with a deadline
// of timeout and extra environment variables.
func Run(t testing.TB, dir string, timeout time.Duration, np int, env []string, argv ...string) Result {
	t.Helper()
	args := append([]string{"-np", fmt.Sprint(np), "--oversubscribe", "--bind-to", "none"}, argv...)
	return RunArgs(t, dir, timeout, env, args...)
}

// RunArgs runs mpirun args… (its options, then the program and its
// arguments) in dir with a deadline of timeout and extra environment
// variables.
func RunArgs(t testing.TB, dir string, timeout time.Duration, env []string, args ...string) Result {
	t.Helper()
	Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "mpirun", args...)
	cmd.Dir = dir
	cmd.Env = Env(env...)
	return Collect(t, ctx, cmd, nil)
}

// Collect runs cmd, made with ctx (whose deadline fails t), and returns
// what it printed and its exit code; more, if set, tells what to add to
// the message of a run that did not end.
func Collect(t testing.TB, ctx context.Context, cmd *exec.Cmd, more func() string) Result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	res := Result{Stdout: stdout.String(), Stderr: stderr.String()}
	if ctx.Err() != nil {
		extra := ""
		if more != nil {
			extra = more()
		}
		t.Fatalf("%v: no end in time\nstdout:\n%s\nstderr:\n%s\n%s", cmd.Args, res.Stdout, res.Stderr, extra)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		res.Code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	return res
}

// MustRun is Run that fails t unless the run succeeds.
func MustRun(t testing.TB, dir string, timeout time.Duration, np int, env []string, argv ...string) Result {
	t.Helper()
	r := Run(t, dir, timeout, np, env, argv...)
	if r.Code != 0 {
		t.Fatalf("mpirun -np %d %v: exit %d\nstdout:\n%s\nstderr:\n%s", np, argv, r.Code, r.Stdout, r.Stderr)
	}
	return r
}

// CC compiles C sources with mpicc into dir and returns the program.
func CC(t testing.TB, dir, name string, srcs ...string) string {
	t.Helper()
	Need(t)
	out := filepath.Join(dir, name)
	args := append([]string{"-O2", "-o", out}, srcs...)
	if b, err := exec.Command("mpicc", args...).CombinedOutput(); err != nil {
		t.Fatalf("mpicc %v: %v\n%s", args, err, b)
	}
	return out
}
