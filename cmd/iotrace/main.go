// Command iotrace records, inspects, converts and merges I/O traces.
package main

import (
	"os"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/internal/memlimit"
	"github.com/spf13/cobra"
)

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "iotrace",
		Short:         "Capture, inspect, convert and merge I/O traces of parallel applications",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cli.Help(root, "iotrace")
	root.AddCommand(newRecordCmd(), newStatsCmd(), newDumpCmd(), newConvertCmd(), newCompareCmd(), newCheckCmd(),
		newMergeCmd(), newGenerateCmd(), newSamplesCmd(), newFmtCmd())
	return root
}

func main() {
	memlimit.Set() // a bounded machine: the GC works harder rather than the process dying
	os.Exit(cli.Run(newRoot(), os.Args[1:]))
}
