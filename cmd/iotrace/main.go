// Command iotrace records, inspects, converts and merges I/O traces.
package main

import (
	"os"

	"github.com/iotrace/iotrace/cmd/internal/cli"
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
	os.Exit(cli.Run(newRoot(), os.Args[1:]))
}
