// Command iotrace records, inspects, converts and merges I/O traces.
package main

import (
	"os"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/spf13/cobra"
)

// commands holds the constructors of the subcommands; each lives in its own
// file and appends itself here in an init function.
var commands []func() *cobra.Command

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
	for _, c := range commands {
		root.AddCommand(c())
	}
	return root
}

func main() {
	os.Exit(cli.Run(newRoot(), os.Args[1:]))
}
