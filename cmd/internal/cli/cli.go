// Package cli holds what the iotrace and ioreplay commands share: running a
// cobra command with one-line errors and the exit codes users see.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// ExitError carries an exit code out of a command without printing
// anything more (the command has printed what it needed).
type ExitError struct{ Code int }

func (e ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// Run executes root with args and returns the process exit code. Errors are
// printed as one line, "NAME: message", on stderr.
func Run(root *cobra.Command, args []string) int {
	return RunIO(root, args, os.Stdout, os.Stderr)
}

// RunIO is Run with explicit output streams, for tests.
func RunIO(root *cobra.Command, args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		// A bug must still end in one line, not a stack trace.
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "%s: internal error: %v (please report it with the command line)\n", root.Name(), r)
			code = 2
		}
	}()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SilenceErrors = true
	root.SilenceUsage = true
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		// Printed after the program's name: a subcommand names itself
		// ("iotrace: stats: unknown flag…"), the program does not twice.
		if c.HasParent() {
			return fmt.Errorf("%s: %w (see '%s --help')", strings.TrimPrefix(c.CommandPath(), root.Name()+" "), err, c.CommandPath())
		}
		return fmt.Errorf("%w (see '%s --help')", err, c.CommandPath())
	})
	err := root.Execute()
	if err == nil {
		return 0
	}
	var ee ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	// An error that points at its spot (a script's file:line:col) is
	// printed as compilers print theirs; others say which program failed.
	var located interface{ Location() string }
	if errors.As(err, &located) && located.Location() != "" && strings.HasPrefix(err.Error(), located.Location()) {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintf(stderr, "%s: %v\n", root.Name(), err)
	return 1
}
