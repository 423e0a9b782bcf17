package main

import (
	"github.com/iotrace/iotrace/convert/darshan"
	"github.com/iotrace/iotrace/trace"
	"github.com/spf13/pflag"
)

// darshan: the text darshan-parser prints of a log's counters, made into a
// pattern script and its expansion.
func init() {
	registerFormat(&convertFormat{
		name: "darshan",
		from: "the text of darshan-parser (a Darshan log's counters, DXT off; gzip too): a pattern script whose expansion has the log's counters (-o X.iop writes the script)",
		sniff: func(head []byte) bool {
			return darshan.Sniff(head) || (len(head) > 1 && head[0] == 0x1f && head[1] == 0x8b)
		},
		bind: func(fs *pflag.FlagSet) convertIO {
			return convertIO{open: func(c *convertRun) (trace.Trace, error) {
				if err := c.oneInput(); err != nil {
					return nil, err
				}
				in, closeIn, err := c.openInput(c.args[0])
				if err != nil {
					return nil, err
				}
				defer closeIn()
				t, err := darshan.Read(in, c.args[0])
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
