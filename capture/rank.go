// Package capture records I/O into iotrace traces: the rank rules every
// recorder shares (which MPI rank a process is, and where its trace goes),
// and a small instrumentation API for Go programs in the spirit of the
// Pablo I/O library (wrap files, mark regions). The ptrace tracer that
// records any program lives in capture/ptrace.
package capture

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
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

// DetectRank reads the rank and the run size from the environment
// (getenv is os.Getenv, or a stand-in for tests). A variable that is set
// but not a number is an error naming it.
func DetectRank(getenv func(string) string) (Rank, error) {
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

// RankFile is the name of rank r's file in a trace directory.
func RankFile(r uint32) string { return fmt.Sprintf("rank-%05d.iot", r) }

// OutputPath decides where rank r's trace goes, given the output name
// out:
//
//   - out is an existing directory: out/rank-NNNNN.iot;
//   - the run is parallel (Rank.Parallel): out becomes a directory (made
//     if needed; ranks make it at the same time without harm) holding
//     out/rank-NNNNN.iot;
//   - otherwise: out itself.
//
// It returns the file and, for the directory layouts, the directory.
// format.Open(out) reads every layout back as one trace.
func OutputPath(out string, r Rank) (file, dir string, err error) {
	if out == "" {
		return "", "", errors.New("no output name")
	}
	st, err := os.Stat(out)
	switch {
	case err == nil && st.IsDir():
		return filepath.Join(out, RankFile(r.Rank)), out, nil
	case r.Parallel():
		if err == nil {
			return "", "", fmt.Errorf("%s: exists and is not a directory; a parallel run writes one file per rank into a directory of that name", out)
		}
		if err := os.MkdirAll(out, 0o777); err != nil {
			return "", "", err
		}
		return filepath.Join(out, RankFile(r.Rank)), out, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return "", "", err
	}
	return out, "", nil
}

// Create creates the trace file of rank r under out (see OutputPath) and
// returns its writer and the file's name. host and pid describe the
// recorded process in the rank's information block; with pid 0 the caller
// writes that block itself (Writer.SetRankInfo) once it knows the process,
// before the rank's first event. m.Ranks is set from r.Size when it is 0.
func Create(out string, r Rank, m trace.Meta, host string, pid int) (*format.Writer, string, error) {
	file, _, err := OutputPath(out, r)
	if err != nil {
		return nil, "", err
	}
	if m.Ranks == 0 {
		m.Ranks = r.Size
	}
	if host != "" && len(m.Hosts) == 0 {
		m.Hosts = []string{host}
	}
	w, err := format.Create(file, m)
	if err != nil {
		return nil, "", err
	}
	if pid == 0 {
		return w, file, nil
	}
	if err := w.SetRankInfo(r.Rank, m.Epoch, host, pid); err != nil {
		w.Close()
		return nil, "", fmt.Errorf("%s: %w", file, err)
	}
	return w, file, nil
}
