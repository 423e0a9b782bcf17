package main

import (
	"fmt"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/trace/format"
	"github.com/spf13/cobra"
)

func newCheckCmd() *cobra.Command {
	var salvage bool
	c := &cobra.Command{
		Use:   "check [--salvage] FILE|DIR…",
		Short: "Verify trace files block by block and say what is recoverable",
		Args:  cli.Args(1, -1, "no trace file or directory to check"),
		RunE:  func(cmd *cobra.Command, args []string) error { return runCheck(args, salvage, cli.StreamsOf(cmd)) },
	}
	cli.Help(c, "iotrace-check")
	c.Flags().BoolVar(&salvage, "salvage", false, "go on past damaged blocks to find every intact block")
	return c
}

// runCheck checks every trace file args name, and fails if any is
// damaged or truncated.
func runCheck(args []string, salvage bool, s cli.IO) error {
	names, err := format.ExpandNames(args)
	if err != nil {
		return err
	}
	bad, empty := 0, 0
	for _, n := range names {
		rep, err := format.Check(n, salvage)
		if err != nil {
			return err
		}
		rep.WriteText(s.Out)
		switch {
		case rep.Empty:
			empty++
		case rep.Damaged() || rep.Unreadable != "":
			bad++
		}
	}
	switch {
	case bad > 0 && empty > 0:
		fmt.Fprintf(s.Err, "iotrace check: %d of %d files damaged, %d empty\n", bad, len(names), empty)
	case bad > 0:
		fmt.Fprintf(s.Err, "iotrace check: %d of %d files damaged\n", bad, len(names))
	case empty > 0:
		fmt.Fprintf(s.Err, "iotrace check: %d of %d files empty\n", empty, len(names))
	}
	if bad+empty > 0 {
		return cli.ExitError{Code: 1}
	}
	return nil
}
