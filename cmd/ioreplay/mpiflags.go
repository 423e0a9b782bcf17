package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/iotrace/iotrace/launcher"
	"github.com/spf13/pflag"
)

const (
	backendPOSIX = "posix"
	backendMPIIO = "mpiio"
)

func addMPIFlags(fs *pflag.FlagSet, f *flags) {
	fs.BoolVar(&f.mpi, "mpi", false, "run under mpirun/srun: spread the trace ranks block-wise over the MPI processes (ioreplay built with -tags mpi)")
	fs.StringVar(&f.backend, "backend", backendPOSIX, "how files are accessed: posix, or mpiio (MPI_File_*; ioreplay built with -tags mpi)")
	fs.StringArrayVar(&f.hints, "hint", nil, "MPI-IO hint KEY=VALUE for every file the mpiio backend opens, e.g. romio_cb_write=enable (repeatable)")
}

// checkMPIFlags checks the MPI flags, and that a replay started by an
// MPI launcher was asked to spread its ranks: otherwise every process
// would replay the whole trace into the same target.
func checkMPIFlags(f *flags) error {
	if f.backend != backendPOSIX && f.backend != backendMPIIO {
		return fmt.Errorf("--backend %q: want posix or mpiio", f.backend)
	}
	for _, h := range f.hints {
		if k, _, ok := strings.Cut(h, "="); !ok || k == "" {
			return fmt.Errorf("--hint %q: want KEY=VALUE", h)
		}
	}
	if len(f.hints) > 0 && f.backend != backendMPIIO {
		return errors.New("--hint is for --backend mpiio")
	}
	if f.direct && f.backend == backendMPIIO {
		return errors.New("--direct is for --backend posix (give the MPI library's hint for direct I/O instead, e.g. --hint direct_write=true)")
	}
	if !f.mpi {
		if rk, err := launcher.Detect(os.Getenv); err == nil && rk.Size > 1 {
			return fmt.Errorf("running as one of %d processes of an MPI job (%s): add --mpi to spread the trace ranks over them, or every process would replay the whole trace", rk.Size, rk.Source)
		}
	}
	return nil
}
