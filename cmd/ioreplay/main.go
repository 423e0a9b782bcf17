// Command ioreplay replays traces and pattern scripts on a file system:
// every rank of the trace becomes a goroutine that issues the rank's calls
// through POSIX in a target directory, with the original timing, the
// recorded think time, or as fast as possible, while barriers,
// collectives and messages keep the ranks in the order they had. It
// prints the statistics of what it did (iotrace stats over the replay's
// own trace). docs/REPLAY.md has the details.
package main

import (
	"os"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/convert"
	"github.com/iotrace/iotrace/replay/session"
	"github.com/spf13/cobra"
)

func main() {
	os.Exit(cli.Run(newRoot(), os.Args[1:]))
}

// options holds the command line: the input's, the replay's, the
// report's, and the team's.
type options struct {
	in         convert.Opener
	replay     session.Flags
	format     string
	by         string
	detail     bool
	output     string
	compare    bool
	html       string
	quiet      bool
	summary    string
	cpuprofile string

	mpi     bool     // spread the ranks over the processes of an MPI job
	backend string   // posix or mpiio
	hints   []string // MPI_Info hints of the MPI-IO backend
}

func newRoot() *cobra.Command {
	o := &options{}
	c := &cobra.Command{
		Use:   "ioreplay [flags] INPUT…",
		Short: "Replay an I/O trace or a pattern script on a file system",
		Long: `ioreplay replays a trace (files, a directory of them, or a file 'iotrace
convert' reads: strace output, DXT text, fio iologs, JSON lines, CSV) or a pattern script
(.iop, with --ranks N; or a built-in sample by name, "iotrace samples" lists
them, with its paper's ranks unless --ranks says otherwise). Every rank is a goroutine of this process; barriers,
collectives and messages make the ranks wait for each other as they did.

Timing (--timing): original issues each call at its recorded offset from the
rank's first call (open loop); think keeps the recorded gap between the end of
one call and the start of the next (closed loop); afap issues them back to back.
--speed X divides the gaps. The default is original for a trace and think for a
script: a script's times come from a nominal model, so its calls then run at
the file system's speed and only its sleeps leave gaps.

Everything happens inside --target DIR (default: a new temporary directory,
removed at the end unless --keep). Trace paths lose their common prefix (or
follow --map OLD=NEW); nothing outside DIR is created, written, truncated,
renamed or removed; /dev, /proc, /sys and the standard streams are skipped.
Files the trace finds rather than creates are created first with the size its
reads need of data it did not write itself (--prepare-only stops there;
--dry-run only prints the plan).

At the end ioreplay prints the statistics of its own trace (--record keeps it),
as 'iotrace stats' would, and with --compare the original beside it; --html FILE
also writes them as one HTML page with charts and per-rank timelines.
docs/REPLAY.md explains timing, dependencies, transforms and the safety rules.`,
		Args:          cobra.MinimumNArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runProfiled(o, args, cli.StreamsOf(cmd))
		},
	}
	fs := c.Flags()
	cli.AddInputFlags(fs, &o.in)
	cli.AddGoFlags(fs, o.replay.AddFlags)
	fs.MarkHidden("no-openat2")
	cli.HideAliases(fs)
	fs.StringVar(&o.format, "format", "text", "report format: text, csv, json or markdown")
	fs.StringVar(&o.by, "by", "op", "report table: op, size, rank, file, access or region")
	fs.BoolVar(&o.detail, "detail", false, "split operation families into their calls in the report")
	fs.StringVarP(&o.output, "output", "o", "", "write the report to this file instead of standard output")
	fs.BoolVar(&o.compare, "compare", false, "put the original beside the replay: counts, time ratios per op, run time ratio")
	fs.StringVar(&o.html, "html", "", "also write an HTML report with charts to this file (with --compare: the original beside the replay)")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress or summary on standard error")
	fs.StringVar(&o.summary, "summary", "", "write the replay's summary (issue lag, failures, skips) as JSON to this file")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of ioreplay itself to this file (go tool pprof; with --mpi one per process, FILE.PID)")
	fs.BoolVar(&o.mpi, "mpi", false, "run under mpirun/srun: spread the trace ranks block-wise over the MPI processes (ioreplay built with -tags mpi)")
	fs.StringVar(&o.backend, "backend", backendPOSIX, "how files are accessed: posix, or mpiio (MPI_File_*; ioreplay built with -tags mpi)")
	fs.StringArrayVar(&o.hints, "hint", nil, "MPI-IO hint KEY=VALUE for every file the mpiio backend opens, e.g. romio_cb_write=enable (repeatable)")
	return c
}
