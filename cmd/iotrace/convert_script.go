package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/script/fold"
	"github.com/iotrace/iotrace/trace"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The pattern-script form: a trace folded into a script.
func init() {
	registerFormat(&convertFormat{
		name: "script",
		to:   "a pattern script that makes the same calls, rank by rank, folded into loops (docs/SCRIPT.md, \"Converting traces to scripts\"); without -o, to standard output",
		exts: []string{".iop"},
		bind: func(fs *pflag.FlagSet) convertIO {
			o := &scriptOptions{}
			o.addFlags(fs)
			return convertIO{
				write: func(c *convertRun, t trace.Trace) error {
					return convertToScript(c.cmd, t, c.args, c.out, o)
				},
				stdout: true,
			}
		},
	})
}

// scriptOptions are the flags of convert --to script.
type scriptOptions struct {
	explain   bool
	noVerify  bool
	window    int
	keepSleep time.Duration
	minSleep  time.Duration
}

func (o *scriptOptions) addFlags(f *pflag.FlagSet) {
	f.BoolVar(&o.explain, "explain", false, "--to script: print what was folded: per rank, and the calls each line of the script makes")
	f.BoolVar(&o.noVerify, "no-verify", false, "--to script: do not run the script to check it makes the trace's calls")
	f.IntVar(&o.window, "window", 0, "--to script: longest loop body (in commands or loops) to look for (default 256)")
	f.DurationVar(&o.keepSleep, "keep-sleep", 0, "--to script: think time at least this long stays before its call (default 100µs); shorter gaps are pooled per loop body")
	f.DurationVar(&o.minSleep, "min-sleep", 0, "--to script: pooled think time shorter than this is dropped (default 1µs)")
}

// convertToScript folds trace t into a pattern script, checks that the
// script makes the trace's calls, and writes it to out (standard output
// when out is "" or "-").
func convertToScript(cmd *cobra.Command, t trace.Trace, args []string, out string, o *scriptOptions) error {
	if s, ok := t.(interface{ PatternScript() []byte }); ok {
		// An importer that makes a script (convert/darshan) writes its own.
		if out == "" || out == "-" {
			_, err := cmd.OutOrStdout().Write(s.PatternScript())
			return err
		}
		return writeFileAtomic(out, s.PatternScript())
	}
	name := strings.Join(args, " ")
	res, err := fold.Convert(t, fold.Options{Window: o.window, KeepSleep: o.keepSleep, MinSleep: o.minSleep,
		Source: filepath.Base(name)})
	if err != nil {
		return fmt.Errorf("%s: cannot write it as a script: %w", name, err)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
	}
	src := script.Format(res.File)
	scriptName := out
	if out == "" || out == "-" {
		scriptName = "converted.iop"
	}
	if !o.noVerify {
		if err := fold.Verify(t, scriptName, src, res.Ranks); err != nil {
			// What the converter let through but the language cannot
			// make: one line naming the rank, the call and the field.
			return fmt.Errorf("%s: cannot write it as a script exactly: %w", name, err)
		}
	}
	var report io.Writer = cmd.OutOrStdout()
	if out == "" || out == "-" {
		if _, err := cmd.OutOrStdout().Write(src); err != nil {
			return err
		}
		report = cmd.ErrOrStderr()
	} else if err := writeFileAtomic(out, src); err != nil {
		return err
	}
	if o.explain {
		return fold.Explain(report, res, scriptName, src)
	}
	return nil
}

// writeFileAtomic writes data to name through cli.Output, so that a
// failure leaves nothing half written.
func writeFileAtomic(name string, data []byte) error {
	o, err := cli.CreateOutput(name)
	if err != nil {
		return err
	}
	defer o.Abort()
	if _, err := o.Write(data); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return o.Commit()
}
