package main

import (
	"fmt"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/internal/outfile"
	"github.com/iotrace/iotrace/trace/format"
	"github.com/spf13/cobra"
)

// mergeOptions are the options of iotrace merge.
type mergeOptions struct {
	out     string
	salvage bool
}

func newMergeCmd() *cobra.Command {
	o := &mergeOptions{}
	c := &cobra.Command{
		Use:   "merge -o OUT FILE|DIR…",
		Short: "Join trace files (one per rank, say) into one file without re-encoding",
		Args:  cli.Args(1, -1, "no trace files or directories to merge"),
		RunE:  func(cmd *cobra.Command, args []string) error { return runMerge(o, args, cli.StreamsOf(cmd)) },
	}
	cli.Help(c, "iotrace-merge")
	c.Flags().StringVarP(&o.out, "output", "o", "", "file to write")
	c.Flags().BoolVar(&o.salvage, "salvage", false, "leave out damaged blocks instead of failing")
	return c
}

// runMerge joins the trace files args into o.out.
func runMerge(o *mergeOptions, args []string, s cli.IO) error {
	if o.out == "" {
		return fmt.Errorf("-o OUT is required")
	}
	if err := outfile.FileOnly("-o", o.out, "a trace"); err != nil {
		return err
	}
	f, err := outfile.Create(o.out)
	if err != nil {
		return err
	}
	defer f.Abort()
	st, err := format.Merge(f, format.ReadOptions{Salvage: o.salvage}, args...)
	if err != nil {
		return err
	}
	if err := f.Commit(); err != nil {
		return err
	}
	for _, w := range st.Warnings {
		fmt.Fprintf(s.Err, "warning: %s\n", w)
	}
	fmt.Fprintf(s.Err, "merged %d files: %d ranks, %d blocks, %d events into %s\n", st.Files, st.Ranks, st.Blocks, st.Events, o.out)
	return nil
}
