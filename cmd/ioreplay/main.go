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
	"strings"
	"time"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/convert"
	"github.com/iotrace/iotrace/internal/memlimit"
	"github.com/iotrace/iotrace/replay/session"
	"github.com/iotrace/iotrace/report"
	"github.com/spf13/cobra"
)

func main() {
	memlimit.Set() // a bounded machine: the GC works harder rather than the process dying
	os.Exit(cli.Run(newRoot(), os.Args[1:]))
}

// options holds the command line: the input's, the replay's, the
// report's, and the team's.
type options struct {
	in         convert.Opener
	live       *report.Live // the replay's statistics while it runs (session.Options.Observe)
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
	files      outputs // --summary, --output and --html, opened before the replay

	mpi     bool     // spread the ranks over the processes of an MPI job
	backend string   // posix or mpiio
	hints   []string // MPI_Info hints of the MPI-IO backend
	// peerTimeout: how long an MPI process may not answer before the
	// replay stops
	peerTimeout time.Duration
}

func newRoot() *cobra.Command {
	o := &options{}
	c := &cobra.Command{
		Use:           "ioreplay [flags] INPUT…",
		Short:         "Replay an I/O trace or a pattern script on a file system",
		Args:          cli.Args(1, -1, cli.NoInput),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runProfiled(o, args, cli.StreamsOf(cmd))
		},
	}
	cli.Help(c, "ioreplay")
	fs := c.Flags()
	cli.AddInputFlags(fs, &o.in)
	cli.AddGoFlags(fs, o.replay.AddFlags)
	fs.MarkHidden("no-openat2")
	cli.HideAliases(fs)
	fs.StringVar(&o.format, "format", "text", "report format: text, csv, json, markdown or html (one page: every table, charts)")
	fs.StringVar(&o.by, "by", "op", "report table: "+strings.Join(report.Views, ", "))
	fs.BoolVar(&o.detail, "detail", false, "split operation families into their calls in the report")
	fs.StringVarP(&o.output, "output", "o", "", "write the report to this file instead of standard output")
	fs.BoolVar(&o.compare, "compare", false, "put the original beside the replay: counts, time ratios per op, run time ratio")
	fs.StringVar(&o.html, "html", "", "also write the HTML report to this file (as --format html -o FILE does, besides the text report)")
	fs.MarkHidden("html")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress or summary on standard error")
	fs.StringVar(&o.summary, "summary", "", "write the replay's summary (issue lag, failures, skips) as JSON to this file")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of ioreplay itself to this file (go tool pprof; with --mpi one per process, FILE.PID)")
	fs.BoolVar(&o.mpi, "mpi", false, "run under mpirun/srun: spread the trace ranks block-wise over the MPI processes (ioreplay built with -tags mpi)")
	fs.StringVar(&o.backend, "backend", backendPOSIX, "how files are accessed: posix, or mpiio (MPI_File_*; ioreplay built with -tags mpi)")
	fs.DurationVar(&o.peerTimeout, "peer-timeout", time.Minute, "with --mpi: stop the replay when a process has not answered for this long (a node lost; docs/MPI.md)")
	fs.StringArrayVar(&o.hints, "hint", nil, "MPI-IO hint KEY=VALUE for every file the mpiio backend opens, e.g. romio_cb_write=enable (repeatable)")
	return c
}
