package main

import (
	"fmt"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/convert"
	"github.com/iotrace/iotrace/trace/tracegen"
	"github.com/spf13/cobra"
)

// generateOptions are the options of iotrace generate.
type generateOptions struct {
	out          string
	ranks, calls int
	seed         uint64
}

func newGenerateCmd() *cobra.Command {
	o := &generateOptions{}
	c := &cobra.Command{
		Use:   "generate ior|twophase|random -o OUT.iot",
		Short: "Write a synthetic trace with the timing of 4 KiB calls (for tests and benchmarks)",
		Args:  cli.Args(1, 1, "which workload: ior, twophase or random"),
		RunE:  func(cmd *cobra.Command, args []string) error { return runGenerate(o, args[0], cli.StreamsOf(cmd)) },
	}
	cli.Help(c, "iotrace-generate")
	c.Flags().StringVarP(&o.out, "output", "o", "", "trace file to write")
	c.Flags().IntVar(&o.ranks, "ranks", 4, "number of ranks")
	c.Flags().IntVar(&o.calls, "calls", 2048, "calls per rank (ior, random) or dumps (twophase)")
	c.Flags().Uint64Var(&o.seed, "seed", 1, "random seed")
	return c
}

// runGenerate writes the synthetic trace of workload.
func runGenerate(o *generateOptions, workload string, s cli.IO) error {
	if o.out == "" {
		return fmt.Errorf("-o OUT.iot is required")
	}
	if o.ranks < 1 || o.calls < 1 {
		return fmt.Errorf("--ranks and --calls must be at least 1")
	}
	var g *tracegen.Trace
	switch workload {
	case "ior":
		g = tracegen.IOR(o.ranks, o.calls, o.seed)
	case "twophase":
		g = tracegen.TwoPhase(o.ranks, o.calls, 6, 64, 512<<10, o.seed)
	case "random":
		g = tracegen.Random(o.ranks, o.calls, o.seed)
	default:
		return fmt.Errorf("unknown workload %q (want ior, twophase or random)", workload)
	}
	n, err := convert.WriteTrace(o.out, g)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.Err, "wrote %d events of %d ranks to %s (synthetic times: every call lasts what a 4 KiB call did, so its bandwidths are not measured; ioreplay measures them)\n", n, o.ranks, o.out)
	return nil
}
