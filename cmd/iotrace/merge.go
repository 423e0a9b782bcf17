package main

import (
	"fmt"

	"github.com/iotrace/iotrace/internal/outfile"
	"github.com/iotrace/iotrace/trace/format"
	"github.com/spf13/cobra"
)

func newMergeCmd() *cobra.Command {
	var out string
	var salvage bool
	c := &cobra.Command{
		Use:   "merge -o OUT FILE|DIR…",
		Short: "Join trace files (one per rank, say) into one file without re-encoding",
		Long: `merge writes one trace file holding every block of its inputs, copied byte for
byte. Inputs are trace files or directories of them; two inputs that hold the
same rank are an error. Times stay right when the inputs were captured with
different epochs (one file per MPI rank): the merged file records each rank's
epoch. With --salvage, damaged blocks of the inputs are left out (and named).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("-o OUT is required")
			}
			o, err := outfile.Create(out)
			if err != nil {
				return err
			}
			defer o.Abort()
			st, err := format.Merge(o, format.ReadOptions{Salvage: salvage}, args...)
			if err != nil {
				return err
			}
			if err := o.Commit(); err != nil {
				return err
			}
			for _, w := range st.Warnings {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "merged %d files: %d ranks, %d blocks, %d events into %s\n", st.Files, st.Ranks, st.Blocks, st.Events, out)
			return nil
		},
	}
	c.Flags().StringVarP(&out, "output", "o", "", "file to write")
	c.Flags().BoolVar(&salvage, "salvage", false, "leave out damaged blocks instead of failing")
	return c
}
