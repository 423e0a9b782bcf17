package main

import (
	"fmt"

	"github.com/iotrace/iotrace/convert/chrome"
	"github.com/iotrace/iotrace/trace"
	"github.com/spf13/pflag"
)

// chrome: a timeline for Perfetto and chrome://tracing.
func init() {
	registerFormat(&convertFormat{
		name: "chrome",
		to:   "Chrome trace-event JSON for Perfetto (ui.perfetto.dev) and chrome://tracing: a track per rank and thread, flow arrows for messages and collectives",
		exts: []string{".json"},
		bind: func(fs *pflag.FlagSet) convertIO {
			return convertIO{
				write: func(c *convertRun, t trace.Trace) error {
					w, closeOut, err := c.output()
					if err != nil {
						return err
					}
					s, err := chrome.Write(w, t)
					if cerr := closeOut(); err == nil {
						err = cerr
					}
					if err != nil {
						return err
					}
					if n := s.Note(); n != "" {
						fmt.Fprintf(c.stderr, "note: %s\n", n)
					}
					return nil
				},
				stdout: true,
			}
		},
	})
}
