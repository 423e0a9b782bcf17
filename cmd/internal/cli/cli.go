// Package cli holds what the iotrace and ioreplay commands share: running a
// cobra command with one-line errors and the exit codes users see.
package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/iotrace/iotrace/internal/helptext"
	"github.com/iotrace/iotrace/internal/sigquit"
	"github.com/iotrace/iotrace/internal/suggest"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// ExitError carries an exit code out of a command without printing
// anything more (the command has printed what it needed).
type ExitError struct{ Code int }

func (e ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// Run executes root with args and returns the process exit code. Errors are
// printed as one line, "NAME: message", on stderr.
func Run(root *cobra.Command, args []string) int {
	// Not in RunIO: a test binary keeps the runtime's SIGQUIT dump, which
	// go test's timeout asks for.
	sigquit.Quietly(root.Name(), os.Stderr)
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
	if root.Version == "" {
		root.Version = Version()
		root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SilenceErrors = true
	root.SilenceUsage = true
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		err = flagSuggestion(c, err)
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
	var ue usageError
	if errors.As(err, &ue) {
		// Missing arguments: the line, then how the command is used.
		fmt.Fprintf(stderr, "%s: %v\nUsage: %s\n", root.Name(), err, ue.c.UseLine())
		if ue.c.Example != "" {
			fmt.Fprintf(stderr, "Examples:\n%s\n", ue.c.Example)
		}
		fmt.Fprintf(stderr, "See '%s --help'.\n", ue.c.CommandPath())
		return 1
	}
	if m := unknownCommand().FindStringSubmatch(err.Error()); m != nil {
		// cobra's own words span lines: one line, with its suggestion.
		msg := fmt.Sprintf("%s: unknown command %q", root.Name(), m[1])
		if sg := suggest.Closest(m[1], commandNames(root)); sg != "" {
			msg += fmt.Sprintf(": did you mean %s?", sg)
		}
		fmt.Fprintf(stderr, "%s (see '%s --help')\n", msg, root.Name())
		return 1
	}
	// An error that points at its spot (a script's file:line:col) is
	// printed as compilers print theirs; others say which program failed.
	var located interface{ Location() string }
	if errors.As(err, &located) && located.Location() != "" && strings.HasPrefix(err.Error(), located.Location()) {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintf(stderr, "%s: %v%s\n", root.Name(), err, spoolHint(err))
	return 1
}

// spoolHint names, for a trace file that does not exist, the spools a
// killed iotrace record --preload left for it (the link OUT.spool, or
// OUT.rank-NNNNN.spool, beside it) and the command that encodes them.
func spoolHint(err error) string {
	var pe *fs.PathError
	if !errors.As(err, &pe) || !errors.Is(err, fs.ErrNotExist) || pe.Path == "" {
		return ""
	}
	links, _ := filepath.Glob(globEscape(pe.Path) + ".rank-*.spool")
	if _, err := os.Lstat(pe.Path + ".spool"); err == nil {
		links = append([]string{pe.Path + ".spool"}, links...)
	}
	switch len(links) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf(": %s links to the spools of a record --preload that did not write it (killed, or still running): once it is gone, 'iotrace record --from-spool %s' encodes them", links[0], links[0])
	}
	return fmt.Sprintf(": %s link to the spools of records --preload that did not write it (killed, or still running): once they are gone, 'iotrace record --from-spool LINK' encodes each", strings.Join(links, " "))
}

// globEscape escapes the characters filepath.Match treats as patterns.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// NoInput is what a command that reads a trace says without one.
const NoInput = "no input: give trace files or a directory of them, a pattern script or a sample's name ('iotrace samples'), or a file 'iotrace convert' reads (strace, Darshan, Recorder, fio, JSON lines, CSV)"

// usageError is a command line without the arguments a command needs:
// Run prints it with the command's usage and examples.
type usageError struct {
	c   *cobra.Command
	msg string
}

func (e usageError) Error() string { return e.msg }

// Args returns the validator of a command that takes from min to max
// arguments (max < 0: no limit); what says what they are, for the error
// of too few ("no input: give a trace file, …").
func Args(min, max int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		name := strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ")
		if c == c.Root() {
			name = ""
		} else {
			name += ": "
		}
		switch {
		case len(args) < min:
			return usageError{c, name + what}
		case max >= 0 && len(args) > max:
			return usageError{c, fmt.Sprintf("%stoo many arguments (%d; it takes %d): %s", name, len(args), max, strings.Join(args[max:], " "))}
		}
		return nil
	}
}

// Help sets the long help and the examples of c from its help file
// (internal/helptext), and returns c.
func Help(c *cobra.Command, name string) *cobra.Command {
	c.Long, c.Example = helptext.Of(name)
	return c
}

// Version is what --version prints: the module's version (from the
// build information: "(devel)" for a build from a checkout), the VCS
// revision and its time, "+modified" for uncommitted changes, and the Go
// version.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown build)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, at, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+modified"
			}
		}
	}
	if rev == "" {
		// go build -buildvcs=false, or no checkout.
		return fmt.Sprintf("%s (no VCS revision recorded; %s)", v, bi.GoVersion)
	}
	return fmt.Sprintf("%s (revision %s%s, %s; %s)", v, rev[:min(len(rev), 12)], modified, at, bi.GoVersion)
}

// unknownCommand matches cobra's error for a subcommand it does not know.
var unknownCommand = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^unknown command "([^"]*)"`) })

// commandNames lists the subcommands of c.
func commandNames(c *cobra.Command) []string {
	var names []string
	for _, sub := range c.Commands() {
		names = append(names, sub.Name())
	}
	return names
}

// flagSuggestion adds to the error of an unknown flag the flag of c it
// may have meant.
func flagSuggestion(c *cobra.Command, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	var names []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if sg := suggest.Closest(name, names); sg != "" {
		return fmt.Errorf("%w: did you mean --%s?", err, sg)
	}
	return err
}
