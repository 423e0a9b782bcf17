// Command iotrace records, inspects, converts and merges I/O traces.
package main

import (
	"os"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/spf13/cobra"
)

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "iotrace",
		Short: "Capture, inspect, convert and merge I/O traces of parallel applications",
		Long: `iotrace works on I/O traces: per-rank streams of the POSIX, MPI-IO and MPI
communication calls of a parallel run, stored in a compact binary format
(docs/FORMAT.md). Wherever a command takes a trace it also takes several trace
files or a directory of them as one trace.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newRecordCmd(), newStatsCmd(), newDumpCmd(), newConvertCmd(), newCompareCmd(), newCheckCmd(),
		newMergeCmd(), newGenerateCmd(), newSamplesCmd(), newFmtCmd())
	return root
}

func main() {
	os.Exit(cli.Run(newRoot(), os.Args[1:]))
}
