package logline

import (
	"bytes"
	"testing"
)

// TestLogger: diagnostics are one line each, warnings say so, debug
// lines only when verbose.
func TestNew(t *testing.T) {
	var b bytes.Buffer
	log := New(&b, "prog: sub", false)
	log.Info("a note")
	log.Warn("a warning", "file", "x.iot")
	log.Debug("hidden")
	New(&b, "prog", true).Debug("shown")
	want := "prog: sub: a note\nprog: sub: warning: a warning file=x.iot\nprog: shown\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
