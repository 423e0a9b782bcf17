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
	"github.com/spf13/cobra"
)

func newFmtCmd() *cobra.Command {
	var write, list, check bool
	c := &cobra.Command{
		Use:   "fmt [-w] [-l] [--check] [FILE.iop|DIR…]",
		Short: "Format pattern scripts canonically",
		Long: `fmt prints pattern scripts (.iop, docs/SCRIPT.md) in their canonical form:
one statement per line, blocks indented by four spaces, one space around
binary operators, command arguments in a fixed order, comments kept, runs of
empty lines shortened to one. Formatting is idempotent. A directory stands for
the .iop files under it; no argument reads standard input.

  -w  write the result back to each file that changes, instead of printing it
  -l  list the files whose formatting differs, instead of printing them

With --check fmt also runs the checks a script passes before it is expanded
(names, types, groups, handles, constant sizes) and reports every problem.
Problems print as "file:line:col: message"; fmt exits with status 1 if any
script has one.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				if write {
					return fmt.Errorf("-w needs files to write")
				}
				src, err := io.ReadAll(cmd.InOrStdin())
				if err != nil {
					return err
				}
				return fmtOne(cmd, "<stdin>", src, false, list, check)
			}
			names, err := script.Files(args)
			if err != nil {
				return err
			}
			bad := 0
			for _, name := range names {
				src, err := os.ReadFile(name)
				if err == nil {
					err = fmtOne(cmd, name, src, write, list, check)
				}
				if err != nil {
					var ee cli.ExitError
					if !errors.As(err, &ee) {
						fmt.Fprintln(cmd.ErrOrStderr(), err)
					}
					bad++
				}
			}
			if bad > 0 {
				return cli.ExitError{Code: 1}
			}
			return nil
		},
	}
	c.Flags().BoolVarP(&write, "write", "w", false, "write the result to the file instead of standard output")
	c.Flags().BoolVarP(&list, "list", "l", false, "list the files whose formatting differs")
	c.Flags().BoolVar(&check, "check", false, "also check names, types, groups and handles")
	return c
}

// fmtOne formats one script. Problems in it are printed here, one line
// each, and reported as an ExitError.
func fmtOne(cmd *cobra.Command, name string, src []byte, write, list, check bool) error {
	out, err := script.Reformat(name, src, check)
	var el script.ErrorList
	if errors.As(err, &el) {
		fmt.Fprint(cmd.ErrOrStderr(), el.Lines())
		return cli.ExitError{Code: 1}
	} else if err != nil {
		return err
	}
	changed := !bytes.Equal(out, src)
	if list && changed {
		fmt.Fprintln(cmd.OutOrStdout(), name)
	}
	switch {
	case write && changed:
		return outfile.Replace(name, out)
	case !write && !list:
		_, err = cmd.OutOrStdout().Write(out)
	}
	return err
}
