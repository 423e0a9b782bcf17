package capture

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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

func TestDetectRank(t *testing.T) {
	for _, c := range []struct {
		env      func(string) string
		want     Rank
		parallel bool
		err      string
	}{
		{env(), Rank{}, false, ""},
		{env("OMPI_COMM_WORLD_RANK", "3", "OMPI_COMM_WORLD_SIZE", "4"), Rank{3, true, 4, "OMPI_COMM_WORLD_RANK"}, true, ""},
		{env("PMI_RANK", "0", "PMI_SIZE", "1"), Rank{0, true, 1, "PMI_RANK"}, false, ""},
		{env("PMIX_RANK", "2"), Rank{2, true, 0, "PMIX_RANK"}, true, ""},
		{env("PMIX_RANK", "0"), Rank{0, true, 0, "PMIX_RANK"}, true, ""},
		{env("SLURM_PROCID", "5", "SLURM_NTASKS", "8"), Rank{5, true, 8, "SLURM_PROCID"}, true, ""},
		{env("SLURM_PROCID", "0", "SLURM_NTASKS", "1"), Rank{0, true, 1, "SLURM_PROCID"}, false, ""},
		{env("MV2_COMM_WORLD_RANK", "1", "MV2_COMM_WORLD_SIZE", "2"), Rank{1, true, 2, "MV2_COMM_WORLD_RANK"}, true, ""},
		// Open MPI's variables win over Slurm's under srun --mpi=pmix + Open MPI.
		{env("SLURM_PROCID", "9", "OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "2", "SLURM_NTASKS", "16"), Rank{1, true, 2, "OMPI_COMM_WORLD_RANK"}, true, ""},
		// An MPI launcher started inside a Slurm batch script: every rank
		// inherits the script's SLURM_PROCID=0 and SLURM_NTASKS.
		{env("SLURM_PROCID", "0", "SLURM_NTASKS", "2", "MV2_COMM_WORLD_RANK", "3", "MV2_COMM_WORLD_SIZE", "4"), Rank{3, true, 4, "MV2_COMM_WORLD_RANK"}, true, ""},
		{env("SLURM_PROCID", "0", "SLURM_NTASKS", "1", "PMI_RANK", "2", "PMI_SIZE", "3"), Rank{2, true, 3, "PMI_RANK"}, true, ""},
		// The size is the rank's launcher's, whatever else is set.
		{env("PMI_RANK", "5", "PMI_SIZE", "6", "OMPI_COMM_WORLD_SIZE", "2"), Rank{5, true, 6, "PMI_RANK"}, true, ""},
		// PMIx sets no size of its own.
		{env("PMIX_RANK", "1", "SLURM_NTASKS", "2"), Rank{1, true, 2, "PMIX_RANK"}, true, ""},
		{env("OMPI_COMM_WORLD_RANK", " 7 "), Rank{7, true, 0, "OMPI_COMM_WORLD_RANK"}, true, ""},
		{env("OMPI_COMM_WORLD_RANK", "x"), Rank{}, false, `OMPI_COMM_WORLD_RANK="x" is not a rank`},
		{env("PMI_RANK", "-1"), Rank{}, false, "is not a rank"},
		{env("PMI_SIZE", "0"), Rank{}, false, `PMI_SIZE="0" is not a number of ranks`},
		{env("PMI_RANK", "4", "PMI_SIZE", "4"), Rank{}, false, "not below the number of ranks 4"},
	} {
		got, err := DetectRank(c.env)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%+v: error %v, want %q", c.want, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("got %+v, %v; want %+v", got, err, c.want)
		}
		if got.Parallel() != c.parallel {
			t.Errorf("%+v: Parallel %v", got, got.Parallel())
		}
	}
}

func FuzzDetectRank(f *testing.F) {
	f.Add("3", "4")
	f.Add("", "")
	f.Add("x", "1")
	f.Add("4294967295", "2147483647")
	f.Add("99999999999999999999", "-3")
	f.Fuzz(func(t *testing.T, rank, size string) {
		r, err := DetectRank(env("PMI_RANK", rank, "PMI_SIZE", size))
		if err != nil {
			if !strings.Contains(err.Error(), "PMI_") && !strings.Contains(err.Error(), "rank") {
				t.Fatalf("error %q names no variable", err)
			}
			return
		}
		if r.Size > 0 && int(r.Rank) >= r.Size {
			t.Fatalf("rank %d of %d accepted", r.Rank, r.Size)
		}
	})
}

func TestOutputPath(t *testing.T) {
	dir := t.TempDir()
	lone := filepath.Join(dir, "lone.iot")
	if f, d, err := OutputPath(lone, Rank{}); err != nil || f != lone || d != "" {
		t.Errorf("lone: %q %q %v", f, d, err)
	}
	par := filepath.Join(dir, "run.iot")
	f, d, err := OutputPath(par, Rank{Rank: 2, Known: true, Size: 4})
	if err != nil || f != filepath.Join(par, "rank-00002.iot") || d != par {
		t.Errorf("parallel: %q %q %v", f, d, err)
	}
	if st, err := os.Stat(par); err != nil || !st.IsDir() {
		t.Errorf("%s not made a directory: %v", par, err)
	}
	// An existing directory takes the lone process too.
	if f, _, err := OutputPath(par, Rank{}); err != nil || f != filepath.Join(par, "rank-00000.iot") {
		t.Errorf("existing directory: %q %v", f, err)
	}
	os.WriteFile(lone, nil, 0o644)
	if _, _, err := OutputPath(lone, Rank{Rank: 1, Known: true, Size: 2}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("parallel run onto a file: %v", err)
	}
	if _, _, err := OutputPath("", Rank{}); err == nil {
		t.Error("empty output name accepted")
	}
}

// TestCreateRanksReadAsOne: ranks written independently into one
// directory read back as one trace.
func TestCreateRanksReadAsOne(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run.iot")
	for r := uint32(0); r < 3; r++ {
		w, _, err := Create(out, Rank{Rank: r, Known: true, Size: 3}, trace.Meta{Creator: "test"}, "h", 100+int(r))
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
