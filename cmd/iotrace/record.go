package main

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/iotrace/iotrace/capture/record"
	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/internal/logline"
	"github.com/iotrace/iotrace/internal/outfile"
	"github.com/spf13/cobra"
)

// recordOptions are the options of iotrace record.
type recordOptions struct {
	record.Options
	rank      int
	rankGiven bool
	verbose   bool
	quiet     bool
	preload   bool
	fromSpool string
	outGiven  bool
	startCost string // --start-cost: auto or a duration
}

func newRecordCmd() *cobra.Command {
	o := &recordOptions{}
	c := &cobra.Command{
		Use:   "record [-o OUT] [--rank N] [--include PREFIX]… [--exclude PREFIX]… [--all] -- CMD [ARGS…]",
		Short: "Run a program and record its file I/O (any Linux binary; ptrace + seccomp)",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && o.fromSpool == "" {
				return errors.New("record: no program to run (iotrace record [flags] -- CMD [ARGS…])")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.rankGiven = cmd.Flags().Changed("rank")
			o.outGiven = cmd.Flags().Changed("output")
			return runRecord(o, args, cli.StreamsOf(cmd))
		},
	}
	cli.Help(c, "iotrace-record")
	fs := c.Flags()
	fs.SetInterspersed(false)
	fs.StringVarP(&o.Out, "output", "o", "trace.iot", "trace file (a directory of per-rank files for a parallel run)")
	fs.IntVar(&o.rank, "rank", 0, "rank of this process (default: from the MPI launcher's environment, else 0)")
	fs.StringArrayVar(&o.Include, "include", nil, "record only paths under this prefix (repeatable; relative to the current directory)")
	fs.StringArrayVar(&o.Exclude, "exclude", nil, "do not record paths under this prefix (repeatable; relative to the current directory)")
	fs.BoolVar(&o.All, "all", false, "record every traced call: no path exclusions, pipes and sockets too")
	fs.BoolVarP(&o.verbose, "verbose", "v", false, "print how the program ended and the thread table on stderr at the end")
	fs.BoolVar(&o.RawTimes, "raw-times", false, "keep the recorder's own cost in the times (by default it is measured at start-up and taken out: docs/FORMAT.md)")
	fs.StringVar(&o.startCost, "start-cost", "auto", "with --preload: the shim's cost per process start to take out: auto (measured after a program that started processes, 0.1-0.3 s), or a duration such as 150us (0: none)")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "no summary line or notes on stderr, only warnings and errors")
	fs.Var(&o.ClockSync, "clock-sync", "measure each rank's clock against rank 0's in MPI_Init and MPI_Finalize: auto (when every rank is surely recorded), on, off")
	fs.BoolVar(&o.preload, "preload", false, "record with the preload shim (LD_PRELOAD) instead of ptrace: POSIX, stdio, MPI-IO and MPI communication calls")
	fs.StringVar(&o.Spool, "spool", "", "with --preload: keep the raw per-process spool files in this directory (default: a temporary one, removed)")
	fs.StringVar(&o.fromSpool, "from-spool", "", "encode the spool files a killed record --preload left in this directory, or OUT.spool, its link beside -o (default -o: the killed record's)")

	return c
}

// runRecord records argv with the recorder the options choose, and exits
// with the program's status.
func runRecord(o *recordOptions, argv []string, s cli.IO) error {
	if o.rankGiven {
		if o.rank < 0 || o.rank > 1<<32-1 {
			return fmt.Errorf("--rank %d: want a rank from 0 to 4294967295", o.rank)
		}
		r := uint32(o.rank)
		o.Rank = &r
	}
	if err := outfile.FileOnly("-o", o.Out, "a trace"); err != nil {
		return err
	}
	if o.startCost != "auto" {
		d, err := time.ParseDuration(o.startCost)
		if err != nil || d < 0 || d > time.Second {
			return fmt.Errorf("--start-cost %q: want auto, or a duration from 0 to 1s such as 150us", o.startCost)
		}
		if !o.preload && o.fromSpool == "" {
			return errors.New("--start-cost is for --preload (and --from-spool)")
		}
		o.StartCost = &d
	}
	o.Log = logline.New(s.Err, "iotrace: record", o.verbose)
	if o.quiet {
		o.Log = logline.NewLevel(s.Err, "iotrace: record", slog.LevelWarn)
	}
	var res record.Result
	var err error
	switch {
	case o.fromSpool != "":
		if len(argv) > 0 || o.preload || o.Spool != "" {
			return errors.New("record: --from-spool encodes spools; it runs no program (no --preload, --spool or CMD)")
		}
		res, err = record.FromSpool(o.Options, o.fromSpool, o.outGiven)
	case o.preload:
		res, err = record.Preload(o.Options, argv)
	case o.Spool != "":
		return errors.New("record: --spool is for --preload")
	default:
		res, err = record.Ptrace(o.Options, argv)
	}
	return recordExit(res, err, s)
}

// recordExit says what went wrong, if anything, and returns the exit
// status of a record: the program's.
func recordExit(res record.Result, err error, s cli.IO) error {
	var te *record.TraceError
	var se *record.SpoolError
	switch {
	case err == nil:
	case errors.Is(err, record.ErrNotFound):
		fmt.Fprintf(s.Err, "iotrace: record: %v\n", err)
	case errors.As(err, &te):
		// The program ran (or not); the trace went wrong: keep its status
		// if it failed.
		fmt.Fprintf(s.Err, "iotrace: record: %v\n", err)
		res.Status = max(res.Status, 1)
	case errors.As(err, &se):
		fmt.Fprintf(s.Err, "iotrace: record: %v\n", err)
		from := se.Dir
		if se.Link != "" {
			from = se.Link
		}
		fmt.Fprintf(s.Err, "iotrace: record: the spools are kept in %s ('iotrace record --from-spool %s -o %s' encodes them)\n", se.Dir, from, se.Out)
		res.Status = max(res.Status, 1)
	default:
		return fmt.Errorf("record: %w", err)
	}
	if res.Status != 0 {
		return cli.ExitError{Code: res.Status}
	}
	return nil
}
