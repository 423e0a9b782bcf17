package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/internal/outfile"
	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/trace/format"
	"github.com/spf13/cobra"
)

// fmtOptions are the options of iotrace fmt.
type fmtOptions struct{ write, list, check bool }

func newFmtCmd() *cobra.Command {
	o := &fmtOptions{}
	c := &cobra.Command{
		Use:   "fmt [-w] [-l] [--check] [FILE.iop|DIR…]",
		Short: "Format pattern scripts canonically",
		RunE:  func(cmd *cobra.Command, args []string) error { return runFmt(o, args, cli.StreamsOf(cmd)) },
	}
	cli.Help(c, "iotrace-fmt")
	c.Flags().BoolVarP(&o.write, "write", "w", false, "write the result to the file instead of standard output")
	c.Flags().BoolVarP(&o.list, "list", "l", false, "list the files whose formatting differs")
	c.Flags().BoolVar(&o.check, "check", false, "also check names, types, groups and handles")
	return c
}

// runFmt formats the scripts args name, or standard input.
func runFmt(o *fmtOptions, args []string, s cli.IO) error {
	if len(args) == 0 {
		if o.write {
			return fmt.Errorf("-w needs files to write")
		}
		src, err := io.ReadAll(s.In)
		if err != nil {
			return err
		}
		return o.one("<stdin>", src, s)
	}
	names, err := script.Files(args)
	if err != nil {
		return err
	}
	bad := 0
	for _, name := range names {
		src, err := os.ReadFile(name)
		if err == nil {
			err = o.one(name, src, s)
		}
		if err == nil {
			continue
		}
		bad++
		if !errors.As(err, new(cli.ExitError)) {
			fmt.Fprintln(s.Err, err)
		}
	}
	if bad > 0 {
		return cli.ExitError{Code: 1}
	}
	return nil
}

// one formats one script. Problems in it are printed here, one line each,
// and reported as an ExitError.
func (o *fmtOptions) one(name string, src []byte, s cli.IO) error {
	if bytes.HasPrefix(src, []byte(format.Magic)) {
		return fmt.Errorf("%s: a binary trace, not a pattern script ('iotrace dump' prints it; 'iotrace convert --to script' makes a script of it)", name)
	}
	out, err := script.Reformat(name, src, o.check)
	var el script.ErrorList
	if errors.As(err, &el) {
		fmt.Fprint(s.Err, el.Lines())
		return cli.ExitError{Code: 1}
	} else if err != nil {
		return err
	}
	changed := !bytes.Equal(out, src)
	if o.list && changed {
		fmt.Fprintln(s.Out, name)
	}
	switch {
	case o.write && changed:
		return outfile.Replace(name, out)
	case !o.write && !o.list:
		_, err = s.Out.Write(out)
	}
	return err
}
