package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/iotrace/iotrace/samples"
	"github.com/spf13/cobra"
)

func newSamplesCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "samples [show NAME]",
		Short: "List the built-in sample workloads, or print one",
		Long: `samples lists the workloads built into iotrace — pattern scripts of the
classic studies (docs/SCRIPT.md, "Samples") — one per line: name, the number
of ranks of its paper's run, and what it is. "samples show NAME" prints a
sample's script; redirect it to a file to change it.

Every command that reads a trace, and ioreplay, takes a sample by name where no
file of that name exists, with the ranks of its paper unless --ranks says
otherwise:

  iotrace stats astro3d-small
  iotrace stats --ranks 16 --by region parabench-listing2
  ioreplay --timing afap --param T=1m beffio
  iotrace samples show beffio > mybeff.iop`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 8, 2, ' ', 0)
			for _, s := range samples.List() {
				fmt.Fprintf(w, "%s\t%d %s\t%s\n", s.Name, s.Ranks, plural(s.Ranks, "rank"), s.Summary)
			}
			return w.Flush()
		},
	}
	c.AddCommand(&cobra.Command{
		Use:   "show NAME",
		Short: "Print a built-in sample's script",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, ok := samples.Get(args[0])
			if !ok {
				return fmt.Errorf("no sample %q (iotrace samples lists them: %s)", args[0], strings.Join(samples.Names(), ", "))
			}
			_, err := cmd.OutOrStdout().Write(s.Source)
			return err
		},
	})
	return c
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
