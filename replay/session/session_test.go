package session

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// TestRunInputError: an input that fails to open is the session's error,
// not a nil dereference in its clean-up (a failed session returns a nil
// Outcome, and the deferred clean-up must still close what it made).
func TestRunInputError(t *testing.T) {
	bad := errors.New("open in.iot: no such file or directory")
	out, err := Run(context.Background(), func(io.Writer) (trace.Trace, error) { return nil, bad }, Options{}, Alone{})
	if !errors.Is(err, bad) || out != nil {
		t.Fatalf("Run = %v, %v; want nil and %v", out, err, bad)
	}
}

// TestRunSetupErrors: a session whose setup fails returns the error, and
// removes what it made (a temporary target); it does not panic.
func TestRunSetupErrors(t *testing.T) {
	m := trace.NewMemTrace()
	m.Add(trace.Event{Op: trace.OpOpen, Path: m.Paths.Intern("/data/f"), Flags: trace.OCreat | trace.OWronly, Ret: 3})
	input := func(io.Writer) (trace.Trace, error) { return m, nil }
	bad := errors.New("no such input")
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", t.TempDir())
	for _, c := range []struct {
		what string
		in   Input
		o    Options
		want string
	}{
		{"unreadable input", func(io.Writer) (trace.Trace, error) { return nil, bad }, Options{}, bad.Error()},
		{"the root as target", input, Options{Target: "/"}, "--target /"},
		{"a target that cannot be made", input, Options{Target: file + "/dir"}, "--target " + file + "/dir"},
	} {
		out, err := Run(context.Background(), c.in, c.o, Alone{})
		if err == nil || !strings.Contains(err.Error(), c.want) || out != nil {
			t.Errorf("%s: outcome %v, error %v; want an error saying %q", c.what, out, err, c.want)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(os.Getenv("TMPDIR"), "*")); len(left) > 0 {
		t.Errorf("failed sessions left %v", left)
	}
}
