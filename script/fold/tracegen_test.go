package fold

import (
	"testing"

	"github.com/iotrace/iotrace/trace/tracegen"
)

// TestTracegen converts the generated traces, with their measured timing
// jitter: regular ones fold to a few lines, random ones stay exact.
func TestTracegen(t *testing.T) {
	for _, c := range []struct {
		name     string
		tr       *tracegen.Trace
		maxLines int
	}{
		{"ior", tracegen.IOR(4, 2048, 1), 16},
		{"twophase", tracegen.TwoPhase(8, 4, 6, 64, 512<<10, 1), 30},
		{"random", tracegen.Random(4, 500, 1), 2100},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, res := convertTrace(t, c.tr, Options{})
			if n := lines(out); n > c.maxLines {
				t.Errorf("%d lines, want at most %d:\n%s", n, c.maxLines, numbered([]byte(out)))
			}
			t.Logf("%d events → %d lines\n%s", res.Events, lines(out), firstLines(out, 40))
		})
	}
}

func firstLines(s string, n int) string {
	l := 0
	for i := range s {
		if s[i] == '\n' {
			l++
			if l == n {
				return s[:i+1] + "…\n"
			}
		}
	}
	return s
}
