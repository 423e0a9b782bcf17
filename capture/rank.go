// Package capture records I/O into iotrace traces: the rank rules every
// recorder shares (where a rank's trace goes; which rank a process is
// comes from package launcher),
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

	"github.com/iotrace/iotrace/launcher"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
)

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
func OutputPath(out string, r launcher.Rank) (file, dir string, err error) {
	if out == "" {
		return "", "", errors.New("no output name")
	}
	st, err := os.Stat(out)
	switch {
	case err == nil && st.IsDir():
		file := filepath.Join(out, RankFile(r.Rank))
		if _, err := os.Lstat(file); err == nil {
			// Written again, it would make one trace of two runs (4 ranks
			// then 2: ranks 0 and 1 of the second beside 2 and 3 of the
			// first).
			return "", "", fmt.Errorf("%s: already holds %s, another run's: record into a new directory, or remove the old one first", out, RankFile(r.Rank))
		}
		return file, out, nil
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
func Create(out string, r launcher.Rank, m trace.Meta, host string, pid int) (*format.Writer, string, error) {
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
