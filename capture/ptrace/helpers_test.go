//go:build linux && (amd64 || arm64)

package ptrace

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// The test binary is the tracer's helper too.
func init() { HelperMain() }

// needTool returns the path of an external tool. Without it the test is
// skipped, except under CI, where it fails.
func needTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required under CI: %v", name, err)
		}
		t.Skipf("%s not installed", name)
	}
	return p
}

// buildC compiles a C program into dir and returns its path.
func buildC(t testing.TB, dir, name, src string, flags ...string) string {
	t.Helper()
	cc := needTool(t, "cc")
	c := filepath.Join(dir, name+".c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	args := append([]string{"-O1", "-o", bin, c}, flags...)
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("cc %s: %v\n%s", name, err, out)
	}
	return bin
}

// record runs argv under the tracer and returns the result and events.
func record(t testing.TB, cfg Config) (Result, []trace.Event, *trace.SliceSink) {
	t.Helper()
	sink := trace.NewSliceSink()
	cfg.Sink = sink
	if cfg.Stdout == nil {
		cfg.Stdout = os.Stderr
	}
	res, err := Run(cfg)
	if err != nil {
		t.Fatalf("Run %v: %v", cfg.Argv, err)
	}
	return res, sink.Events, sink
}

// dumpEvents renders events for failure messages.
func dumpEvents(evs []trace.Event, s *trace.SliceSink) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString(formatEvent(e, s))
		b.WriteByte('\n')
	}
	return b.String()
}

func formatEvent(e trace.Event, s *trace.SliceSink) string {
	out := fmt.Sprintf("%s thr=%d fd=%d off=%d size=%d ret=%d", e.Op, e.Thread, e.FD, e.Offset, e.Size, e.Ret)
	if e.Op.Info().Dir == trace.DirCopy {
		out += fmt.Sprintf(" fd2=%d off2=%d", e.FD2, e.Offset2)
	}
	if e.Flags != 0 || e.Mode != 0 {
		out += fmt.Sprintf(" flags=%#x mode=%#o", e.Flags, e.Mode)
	}
	if e.Path != 0 {
		out += " path=" + s.Paths.Lookup(e.Path)
	}
	if e.Path2 != 0 {
		out += " path2=" + s.Paths.Lookup(e.Path2)
	}
	return out
}
