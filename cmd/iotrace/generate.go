package main

import (
	"fmt"

	"github.com/iotrace/iotrace/convert"
	"github.com/iotrace/iotrace/trace/tracegen"
	"github.com/spf13/cobra"
)

func newGenerateCmd() *cobra.Command {
	var out string
	var ranks, calls int
	var seed uint64
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
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("-o OUT.iot is required")
			}
			if ranks < 1 || calls < 1 {
				return fmt.Errorf("--ranks and --calls must be at least 1")
			}
			var g *tracegen.Trace
			switch args[0] {
			case "ior":
				g = tracegen.IOR(ranks, calls, seed)
			case "twophase":
				g = tracegen.TwoPhase(ranks, calls, 6, 64, 512<<10, seed)
			case "random":
				g = tracegen.Random(ranks, calls, seed)
			default:
				return fmt.Errorf("unknown workload %q (want ior, twophase or random)", args[0])
			}
			n, err := convert.WriteTrace(out, g)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %d events of %d ranks to %s\n", n, ranks, out)
			return nil
		},
	}
	c.Flags().StringVarP(&out, "output", "o", "", "trace file to write")
	c.Flags().IntVar(&ranks, "ranks", 4, "number of ranks")
	c.Flags().IntVar(&calls, "calls", 2048, "calls per rank (ior, random) or dumps (twophase)")
	c.Flags().Uint64Var(&seed, "seed", 1, "random seed")
	return c
}
