package record

import (
	"bytes"
	"errors"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/capture/ptrace"
	"github.com/iotrace/iotrace/trace/format"
)

// The ptrace recorder runs this test binary as its helper.
func init() { ptrace.HelperMain() }

func TestPtrace(t *testing.T) {
	if !ptrace.Supported {
		t.Skip("no ptrace recorder on this platform")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "sh.iot")
	var log bytes.Buffer
	o := Options{Out: out, Include: []string{dir}, Log: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	res, err := Ptrace(o, []string{sh, "-c", "echo x > " + filepath.Join(dir, "f") + "; exit 3"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != 3 || len(res.Files) != 1 || res.Files[0] != out {
		t.Fatalf("result %+v", res)
	}
	r, err := format.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Meta().Creator != "iotrace record" || len(r.Ranks()) != 1 {
		t.Errorf("meta %+v, ranks %v", r.Meta(), r.Ranks())
	}
	if !strings.Contains(log.String(), "exit status 3") {
		t.Errorf("no summary at the debug level: %s", log.String())
	}
	if _, err := Ptrace(Options{Out: filepath.Join(dir, "x.iot")}, []string{"no-such-program-xyz"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("a missing program: %v, want ErrNotFound", err)
	}
	bad := uint32(5)
	t.Setenv("OMPI_COMM_WORLD_SIZE", "2")
	t.Setenv("OMPI_COMM_WORLD_RANK", "0")
	if _, err := Ptrace(Options{Out: filepath.Join(dir, "y.iot"), Rank: &bad}, []string{sh}); err == nil || !strings.Contains(err.Error(), "not below the number of ranks 2") {
		t.Errorf("--rank 5 of 2: %v", err)
	}
}

func TestFromSpoolEmpty(t *testing.T) {
	dir := t.TempDir()
	if _, err := FromSpool(Options{Out: filepath.Join(dir, "x.iot")}, dir); err == nil || !strings.Contains(err.Error(), "no process wrote a spool") {
		t.Errorf("an empty spool directory: %v", err)
	}
}
