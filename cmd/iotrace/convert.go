package main

import (
	"errors"
	"flag"
	"strings"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/convert"
	_ "github.com/iotrace/iotrace/convert/parquet" // --to parquet: its writer sets the form's codec
	"github.com/iotrace/iotrace/internal/helptext"
	"github.com/iotrace/iotrace/internal/outfile"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// convertOptions are the options of iotrace convert: the input's (an
// Opener, with every form's options bound to it), the output's.
type convertOptions struct {
	convert.Conversion
	in convert.Opener
}

func newConvertCmd() *cobra.Command {
	o := &convertOptions{}
	o.Opener = &o.in
	c := &cobra.Command{
		Use:     "convert [--from FORM] [--to FORM] -o OUT INPUT…",
		Short:   "Convert traces to and from other tools' forms: JSON lines, CSV, fio, Chrome/Perfetto, strace, Darshan, Recorder, Parquet",
		Long:    convertLong(),
		Example: func() string { _, ex := helptext.Of("iotrace-convert"); return ex }(),
		Args:    cli.Args(1, -1, cli.NoInput),
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.Flags().Visit(func(fl *pflag.Flag) { o.Set = append(o.Set, fl.Name) })
			return runConvert(o, args, cli.StreamsOf(cmd))
		},
	}
	cli.AddGoFlags(c.Flags(), func(fs *flag.FlagSet) {
		o.in.Forms = convert.Bind(fs, &o.in)
		o.in.AddFromFlag(fs)
	})
	cli.AddSelectFlags(c.Flags(), &o.in.Select)
	c.Flags().StringVar(&o.To, "to", "", "output form: "+convert.Names(false)+" (default: from OUT's name)")
	c.Flags().StringVarP(&o.Output, "output", "o", "", "file to write (- for standard output, text forms only)")
	return c
}

func runConvert(o *convertOptions, args []string, s cli.IO) error {
	if o.Output == "" {
		if o.To != "script" {
			return errors.New("-o OUT is required")
		}
		o.Output = "-" // a script goes to standard output by default
	}
	if err := outfile.NotInput([]outfile.Output{{Flag: "--output", Name: o.Output}}, args); err != nil {
		return err
	}
	o.Stdout, o.Stderr, o.in.Stdin = s.Out, s.Err, s.In
	return o.Run(args)
}

func convertLong() string {
	var b strings.Builder
	b.WriteString("convert reads a trace in one form and writes it in another. Forms read (--from):\n\n")
	convert.Describe(&b, true)
	b.WriteString("\nForms written (--to):\n\n")
	convert.Describe(&b, false)
	long, _ := helptext.Of("iotrace-convert")
	b.WriteString("\n" + long)
	return b.String()
}
