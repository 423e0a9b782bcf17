package main

import (
	"github.com/iotrace/iotrace/convert/recorder"
	"github.com/iotrace/iotrace/trace"
	"github.com/spf13/pflag"
)

// recorder: a Recorder 2.x trace directory.
func init() {
	registerFormat(&convertFormat{
		name: "recorder",
		from: "a Recorder 2.4/2.5 trace directory (VERSION, recorder.mt, RANK.cst/.cfg/.ts): its POSIX, MPI-IO and MPI calls; calls iotrace has no op for are marks",
		bind: func(fs *pflag.FlagSet) convertIO {
			return convertIO{open: func(c *convertRun) (trace.Trace, error) {
				if err := c.oneInput(); err != nil {
					return nil, err
				}
				t, err := recorder.Open(c.args[0])
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
