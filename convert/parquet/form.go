package parquet

import (
	"flag"
	"fmt"
	"io"

	"github.com/iotrace/iotrace/convert"
	"github.com/iotrace/iotrace/trace"
)

// The registry's Parquet form (convert "parquet", --to parquet) takes its
// codec from here: a program that writes Parquet imports this package
// (cmd/iotrace does), one that does not is spared its writer.
func init() { convert.SetCodec("parquet", bind) }

func bind(fs *flag.FlagSet) convert.Codec {
	perRank := fs.Bool("per-rank", false, "--to parquet: OUT is a directory of one file per rank (rank-NNNNN.parquet)")
	return convert.Codec{Export: func(out *convert.Output, t trace.Trace) error {
		if *perRank {
			_, err := WriteRanks(out.Name, t)
			return err
		}
		return out.Write(func(w io.Writer) error {
			if _, err := WriteTrace(w, t); err != nil {
				return fmt.Errorf("%s: %w", out.Name, err)
			}
			return nil
		})
	}}
}
