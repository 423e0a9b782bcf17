package launcher

import (
	"strings"
	"testing"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestDetect(t *testing.T) {
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
		got, err := Detect(c.env)
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

func FuzzDetect(f *testing.F) {
	f.Add("3", "4")
	f.Add("", "")
	f.Add("x", "1")
	f.Add("4294967295", "2147483647")
	f.Add("99999999999999999999", "-3")
	f.Fuzz(func(t *testing.T, rank, size string) {
		r, err := Detect(env("PMI_RANK", rank, "PMI_SIZE", size))
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
