package cli

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/iotrace/iotrace/convert"
	"github.com/iotrace/iotrace/report"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// IO is where a command reads and writes: a command's run function takes
// it, so that it runs without cobra (tests give buffers).
type IO struct {
	In       io.Reader
	Out, Err io.Writer
}

// StreamsOf returns the streams of a cobra command.
func StreamsOf(c *cobra.Command) IO {
	return IO{In: c.InOrStdin(), Out: c.OutOrStdout(), Err: c.ErrOrStderr()}
}

// AddGoFlags registers on fs the options that add defines on a flag set
// of the standard library: the library's packages describe their options
// so (convert.Opener, the forms of convert).
func AddGoFlags(fs *pflag.FlagSet, add func(*flag.FlagSet)) {
	g := flag.NewFlagSet("", flag.ContinueOnError)
	add(g)
	fs.AddGoFlagSet(g)
}

// AddInputFlags registers the options of every command that reads a
// trace on fs: --salvage, --ranks, --param and --group for scripts, and
// --from for the forms convert imports.
func AddInputFlags(fs *pflag.FlagSet, o *convert.Opener) {
	AddGoFlags(fs, func(g *flag.FlagSet) {
		o.AddFlags(g)
		o.AddFromFlag(g)
	})
}

// AddSelectFlags registers the selectors of every command that reads a
// trace on fs, in one vocabulary (filter.Flags: --rank, --op, --skip-op,
// --path, --exclude, --time), their older spellings hidden.
func AddSelectFlags(fs *pflag.FlagSet, f *filter.Flags) {
	AddGoFlags(fs, f.AddFlags)
	HideAliases(fs)
}

// HideAliases hides the older spellings of the selectors (filter.Aliases)
// from the help of fs's command.
func HideAliases(fs *pflag.FlagSet) {
	for a := range filter.Aliases {
		fs.MarkHidden(a)
	}
}

// Open opens the inputs of a command with o, warnings and notes going to
// s.Err.
func Open(o *convert.Opener, args []string, s IO) (trace.Trace, error) {
	o.Warn, o.Stdin = s.Err, s.In
	return o.Open(args)
}

// Stats opens args with o, as Open does, and computes their statistics.
func Stats(o *convert.Opener, args []string, s IO, ro report.Options) (*report.Stats, error) {
	t, err := Open(o, args, s)
	if err != nil {
		return nil, err
	}
	st, err := report.Compute(t, ro)
	if cerr := t.Close(); err == nil {
		err = cerr
	}
	return st, err
}

// Named prefixes err with the input name unless it names it already.
func Named(name string, err error) error {
	if strings.Contains(err.Error(), name) {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}

// Formats are the report formats of stats, compare and ioreplay: those of
// the tables, and html, the report of every table with charts.
var Formats = append(slices.Clone(report.Formats), "html")

// CheckChoice fails unless v is one of choices, naming the flag.
func CheckChoice(flag, v string, choices []string) error {
	if slices.Contains(choices, v) {
		return nil
	}
	return fmt.Errorf("%s %q: want one of %s", flag, v, strings.Join(choices, ", "))
}
