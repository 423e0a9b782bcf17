package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/iotrace/iotrace/capture/preload"
	"github.com/iotrace/iotrace/internal/mpitest"
)

// iotraceBin is the iotrace binary built for the end-to-end tests, which
// run it the way a user does.
var iotraceBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "iotrace-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	iotraceBin = filepath.Join(dir, "iotrace")
	out, err := exec.Command("go", "build", "-o", iotraceBin, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building iotrace: %v\n%s", err, out)
		os.Exit(1)
	}
	os.Setenv("IOTRACE_CACHE", filepath.Join(dir, "cache")) // shimCache
	code := m.Run()
	os.RemoveAll(dir)
	mpitest.Cleanup()
	os.Exit(code)
}

// shimCache returns the cache of the preload shim the tests share,
// built once: beside the built iotrace, removed with it, and the
// IOTRACE_CACHE of every iotrace the tests run. A build costs seconds of
// compiler (a minute on a loaded machine), and a record that builds says
// so (TestRecordPreload sees that with a slow compiler of its own).
func shimCache(t testing.TB) string {
	t.Helper()
	shimOnce.Do(func() { _, shimErr = preload.Build() })
	if shimErr != nil {
		t.Fatal(shimErr)
	}
	return os.Getenv("IOTRACE_CACHE")
}

var (
	shimOnce sync.Once
	shimErr  error
)

// run runs the built iotrace with args and returns its stdout, stderr and
// exit code.
func run(t testing.TB, args ...string) (string, string, int) {
	t.Helper()
	return runIn(t, "", args...)
}

// runIn is run with a working directory.
func runIn(t testing.TB, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(iotraceBin, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running iotrace %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}

// mustRun runs iotrace and fails the test unless it exits 0.
func mustRun(t testing.TB, args ...string) string {
	t.Helper()
	out, errOut, code := run(t, args...)
	if code != 0 {
		t.Fatalf("iotrace %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errOut)
	}
	return out
}
