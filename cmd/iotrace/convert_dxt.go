package main

import (
	"strings"

	"github.com/iotrace/iotrace/convert/darshan"
	"github.com/iotrace/iotrace/convert/dxt"
	"github.com/iotrace/iotrace/trace"
	"github.com/spf13/pflag"
)

// dxt: the text darshan-dxt-parser prints.
func init() {
	registerFormat(&convertFormat{
		name: "dxt",
		from: "the text of darshan-dxt-parser (X_POSIX and X_MPIIO records); DXT has no opens: POSIX descriptors are inherit events, MPI_File_open is made in a region saying so",
		sniff: func(head []byte) bool {
			return (hasPrefixLine(head, "# darshan log version") && !darshan.Sniff(head)) || strings.Contains(string(head), "\n# DXT, file_id: ") ||
				hasPrefixLine(head, "# DXT, file_id: ") || strings.Contains(string(head), "# DXT_POSIX module data") ||
				strings.Contains(string(head), "# DXT_MPIIO module data")
		},
		bind: func(fs *pflag.FlagSet) convertIO {
			var layer string
			fs.StringVar(&layer, "layer", "auto", "dxt: calls to keep: auto (MPI-IO where a rank used a file through MPI-IO, POSIX elsewhere), mpiio, posix or all")
			return convertIO{open: func(c *convertRun) (trace.Trace, error) {
				if err := c.oneInput(); err != nil {
					return nil, err
				}
				in, closeIn, err := c.openInput(c.args[0])
				if err != nil {
					return nil, err
				}
				defer closeIn()
				name := c.args[0]
				if name == "-" {
					name = "stdin"
				}
				t, err := dxt.Read(in, name, dxt.Options{Layer: layer})
				if err != nil {
					return nil, err
				}
				for _, n := range t.Notes() {
					c.note(n)
				}
				return t, nil
			}}
		},
	})
}
