package capture

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/launcher"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestOutputPath(t *testing.T) {
	dir := t.TempDir()
	lone := filepath.Join(dir, "lone.iot")
	if f, d, err := OutputPath(lone, launcher.Rank{}); err != nil || f != lone || d != "" {
		t.Errorf("lone: %q %q %v", f, d, err)
	}
	par := filepath.Join(dir, "run.iot")
	f, d, err := OutputPath(par, launcher.Rank{Rank: 2, Known: true, Size: 4})
	if err != nil || f != filepath.Join(par, "rank-00002.iot") || d != par {
		t.Errorf("parallel: %q %q %v", f, d, err)
	}
	if st, err := os.Stat(par); err != nil || !st.IsDir() {
		t.Errorf("%s not made a directory: %v", par, err)
	}
	// An existing directory takes the lone process too.
	if f, _, err := OutputPath(par, launcher.Rank{}); err != nil || f != filepath.Join(par, "rank-00000.iot") {
		t.Errorf("existing directory: %q %v", f, err)
	}
	os.WriteFile(lone, nil, 0o644)
	if _, _, err := OutputPath(lone, launcher.Rank{Rank: 1, Known: true, Size: 2}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("parallel run onto a file: %v", err)
	}
	if _, _, err := OutputPath("", launcher.Rank{}); err == nil {
		t.Error("empty output name accepted")
	}
}

// TestCreateRanksReadAsOne: ranks written independently into one
// directory read back as one trace.
func TestCreateRanksReadAsOne(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run.iot")
	for r := uint32(0); r < 3; r++ {
		w, _, err := Create(out, launcher.Rank{Rank: r, Known: true, Size: 3}, trace.Meta{Creator: "test"}, "h", 100+int(r))
		if err != nil {
			t.Fatal(err)
		}
		rw := w.Rank(r)
		rw.WriteEvents([]trace.Event{{Op: trace.OpWrite, Rank: r, Path: rw.Intern("/f"), Size: int64(r)}})
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	rd, err := format.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if got := rd.Ranks(); len(got) != 3 || rd.Meta().Ranks != 3 {
		t.Fatalf("ranks %v, meta ranks %d", got, rd.Meta().Ranks)
	}
	for _, s := range rd.Summary() {
		if s.PID != 100+int(s.Rank) || s.Host != "h" {
			t.Errorf("rank %d: pid %d host %q", s.Rank, s.PID, s.Host)
		}
	}
}

// TestOutputPathOtherRun: a directory that already holds this rank's
// file holds another run: refused, rather than mixing two runs in one
// trace.
func TestOutputPathOtherRun(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, RankFile(1)), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := OutputPath(dir, launcher.Rank{Rank: 1, Known: true, Size: 2}); err == nil || !strings.Contains(err.Error(), "already holds rank-00001.iot, another run's") {
		t.Fatalf("OutputPath into another run's directory: %v", err)
	}
	if f, _, err := OutputPath(dir, launcher.Rank{Rank: 0, Known: true, Size: 2}); err != nil || f != filepath.Join(dir, RankFile(0)) {
		t.Fatalf("OutputPath of a rank not there: %q %v", f, err)
	}
}
