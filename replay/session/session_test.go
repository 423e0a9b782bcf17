package session

import (
	"context"
	"errors"
	"io"
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
