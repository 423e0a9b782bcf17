package main

import (
	"fmt"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/convert/parquet"
	"github.com/iotrace/iotrace/trace"
	"github.com/spf13/pflag"
)

// parquet: Apache Parquet, one row per event.
func init() {
	registerFormat(&convertFormat{
		name: "parquet",
		to:   "Apache Parquet: one row per event, typed columns (the JSON-lines fields), paths and ops as dictionary columns, zstd; for pandas, polars, DuckDB",
		exts: []string{".parquet"},
		bind: func(fs *pflag.FlagSet) convertIO {
			var perRank bool
			fs.BoolVar(&perRank, "per-rank", false, "--to parquet: OUT is a directory of one file per rank (rank-NNNNN.parquet)")
			return convertIO{write: func(c *convertRun, t trace.Trace) error {
				if perRank {
					_, err := parquet.WriteRanks(c.out, t)
					return err
				}
				o, err := cli.CreateOutput(c.out)
				if err != nil {
					return err
				}
				defer o.Abort()
				if _, err := parquet.WriteTrace(o, t); err != nil {
					return fmt.Errorf("%s: %w", c.out, err)
				}
				return o.Commit()
			}}
		},
	})
}
