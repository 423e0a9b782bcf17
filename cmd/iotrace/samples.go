package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/samples"
	"github.com/spf13/cobra"
)

func newSamplesCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "samples [show NAME]",
		Short: "List the built-in sample workloads, or print one",
		Args:  cli.Args(0, 0, ""),
		RunE:  func(cmd *cobra.Command, args []string) error { return runSamples(cli.StreamsOf(cmd)) },
	}
	cli.Help(c, "iotrace-samples")
	c.AddCommand(&cobra.Command{
		Use:   "show NAME",
		Short: "Print a built-in sample's script",
		Args:  cli.Args(1, 1, "which sample: show NAME ('iotrace samples' lists them)"),
		RunE:  func(cmd *cobra.Command, args []string) error { return runSampleShow(args[0], cli.StreamsOf(cmd)) },
	})
	return c
}

// runSamples lists the samples.
func runSamples(s cli.IO) error {
	w := tabwriter.NewWriter(s.Out, 0, 8, 2, ' ', 0)
	for _, sm := range samples.List() {
		fmt.Fprintf(w, "%s\t%d %s\t%s\n", sm.Name, sm.Ranks, plural(sm.Ranks, "rank"), sm.Summary)
	}
	return w.Flush()
}

// runSampleShow prints the script of the sample name.
func runSampleShow(name string, s cli.IO) error {
	sm, ok := samples.Get(name)
	if !ok {
		return fmt.Errorf("no sample %q (iotrace samples lists them: %s)", name, strings.Join(samples.Names(), ", "))
	}
	_, err := s.Out.Write(sm.Source)
	return err
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
