// Package launcher reads what an MPI launcher (mpirun, srun, PMI and PMIx
// based ones) tells the processes it starts in their environment: which
// rank a process is and how many there are. Recorders name their trace
// files by it; a replay checks that it was told to spread its ranks over
// the processes of a job.
package launcher

import (
	"fmt"
	"strconv"
	"strings"
)

// launchers pairs each rank variable with the size variable the same
// launcher sets, in the order they are consulted: Open MPI, MPICH/Intel
// MPI (PMI), PMIx, MVAPICH2, Slurm. Slurm comes last: a batch script's
// environment holds SLURM_PROCID=0 for every process an mpirun inside it
// starts, while the MPI launcher's own variables are right.
var launchers = []struct{ rank, size string }{
	{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
	{"PMI_RANK", "PMI_SIZE"},
	{"PMIX_RANK", ""},
	{"MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"},
	{"SLURM_PROCID", "SLURM_NTASKS"},
}

// RankVars are the environment variables that give a process its MPI
// rank, in the order they are consulted.
var RankVars = []string{"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK", "SLURM_PROCID"}

// SizeVars are the environment variables that give the number of ranks.
// The size comes from the variable of the launcher that gave the rank;
// without one (PMIx, --rank), from the first of these that is set.
var SizeVars = []string{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE", "SLURM_NTASKS"}

// Rank says which rank a recording process is.
type Rank struct {
	Rank uint32
	// Known is true when the rank came from the environment or was given
	// (--rank); false means a lone process, recorded as rank 0.
	Known bool
	// Size is the number of ranks of the run, 0 when unknown.
	Size int
	// Source names where the rank came from: a variable, "--rank", or "".
	Source string
}

// Parallel reports whether the run may have other ranks, so that each
// rank needs its own file: the size is above one, or the rank is known
// but the size is not.
func (r Rank) Parallel() bool {
	return r.Size > 1 || (r.Known && r.Size == 0) || r.Rank > 0
}

// Detect reads the rank and the run size from the environment
// (getenv is os.Getenv, or a stand-in for tests). A variable that is set
// but not a number is an error naming it.
func Detect(getenv func(string) string) (Rank, error) {
	var r Rank
	sizeVars := SizeVars
	for _, l := range launchers {
		v := strings.TrimSpace(getenv(l.rank))
		if v == "" {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return Rank{}, fmt.Errorf("environment variable %s=%q is not a rank", l.rank, v)
		}
		r = Rank{Rank: uint32(n), Known: true, Source: l.rank}
		if l.size != "" && strings.TrimSpace(getenv(l.size)) != "" {
			sizeVars = []string{l.size}
		}
		break
	}
	for _, name := range sizeVars {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 31)
		if err != nil || n == 0 {
			return Rank{}, fmt.Errorf("environment variable %s=%q is not a number of ranks", name, v)
		}
		r.Size = int(n)
		break
	}
	if r.Size > 0 && int64(r.Rank) >= int64(r.Size) {
		return Rank{}, fmt.Errorf("rank %d (from %s) is not below the number of ranks %d", r.Rank, r.Source, r.Size)
	}
	return r, nil
}
