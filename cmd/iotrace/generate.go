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
		Short: "Write a synthetic trace with measured timing (for tests and benchmarks)",
		Long: `generate writes a synthetic trace whose call gaps and durations are sampled
from durations measured on a Linux VM (see trace/tracegen):

  ior       every rank writes --calls sequential 4 KiB blocks to its own file,
            then reads them back (IOR-like, file per process)
  twophase  --calls dumps of 6 arrays, each redistributed with MPI_Alltoall and
            written as 64 strided 512 KiB chunks per rank (like astro3d)
  random    --calls preads and pwrites per rank at random 4 KiB-aligned offsets
            of a shared 64 GiB file, sizes 4 KiB–1 MiB

The same arguments and --seed give the same trace.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runGenerate(o, args[0], cli.StreamsOf(cmd)) },
	}
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
	fmt.Fprintf(s.Err, "wrote %d events of %d ranks to %s\n", n, o.ranks, o.out)
	return nil
}
