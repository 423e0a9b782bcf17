package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func init() { commands = append(commands, newConvertCmd) }

// A convertFormat is one form of trace that 'iotrace convert' reads
// (--from NAME) or writes (--to NAME). Each format registers itself with
// registerFormat from an init function in its own file (convert_*.go).
type convertFormat struct {
	name string
	from string   // what --from NAME reads, for the help; "" if it is not read
	to   string   // what --to NAME writes, for the help; "" if it is not written
	exts []string // file name endings that choose the format by default
	// sniff reports whether the start of an input file is in this form,
	// so that --from can be left out.
	sniff func(head []byte) bool
	// bind registers the format's own flags on fs and returns its
	// handlers, bound to the flags' values.
	bind func(fs *pflag.FlagSet) convertIO
}

// convertIO are the handlers of one format. A format that is read sets
// open (a trace of several ranks, such as trace files) or read (a stream
// of events that carry their ranks); a format that is written sets write.
type convertIO struct {
	open  func(c *convertRun) (trace.Trace, error)
	read  func(c *convertRun) (*imported, error)
	write func(c *convertRun, t trace.Trace) error
	// stdout says that write can write to standard output (-o -).
	stdout bool
}

// imported is the result of an importer: events to be written as a trace.
type imported struct {
	src  trace.Source
	meta trace.Meta
	// notes, if set, returns lines for standard error once every event is
	// read (what the input held that the trace cannot).
	notes func() []string
	close func() error
}

// convertRun is one run of the command.
type convertRun struct {
	cmd    *cobra.Command
	in     cli.Input
	args   []string // the inputs
	out    string   // -o
	from   string
	stderr io.Writer
}

var convertFormats []*convertFormat

func registerFormat(f *convertFormat) { convertFormats = append(convertFormats, f) }

func formatNamed(name string) *convertFormat {
	for _, f := range convertFormats {
		if f.name == name {
			return f
		}
	}
	return nil
}

func formatNames(reads bool) string {
	var n []string
	for _, f := range convertFormats {
		if (reads && f.from != "") || (!reads && f.to != "") {
			n = append(n, f.name)
		}
	}
	slices.Sort(n)
	return strings.Join(n, ", ")
}

func newConvertCmd() *cobra.Command {
	r := &convertRun{}
	var from, to string
	c := &cobra.Command{
		Use:   "convert [--from FORM] [--to FORM] -o OUT INPUT…",
		Short: "Convert traces to and from other tools' forms: JSON lines, CSV, fio, Chrome/Perfetto, strace, Darshan DXT",
		Args:  cobra.MinimumNArgs(1),
	}
	ios := map[string]convertIO{}
	owner := map[string]string{} // flag name → format that registered it
	for _, f := range convertFormats {
		before := map[string]bool{}
		c.Flags().VisitAll(func(fl *pflag.Flag) { before[fl.Name] = true })
		ios[f.name] = f.bind(c.Flags())
		c.Flags().VisitAll(func(fl *pflag.Flag) {
			if !before[fl.Name] {
				owner[fl.Name] = f.name
			}
		})
	}
	c.Long = convertLong()
	c.Flags().StringVar(&from, "from", "", "input form: "+formatNames(true)+" (default: from the input's content or name)")
	c.Flags().StringVar(&to, "to", "", "output form: "+formatNames(false)+" (default: from OUT's name)")
	c.Flags().StringVarP(&r.out, "output", "o", "", "file to write (- for standard output, text forms only)")
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if r.out == "" {
			if to != "script" {
				return errors.New("-o OUT is required")
			}
			r.out = "-" // a script goes to standard output by default
		}
		r.cmd, r.args, r.stderr = cmd, args, cmd.ErrOrStderr()
		if from == "" {
			from = guessFrom(args[0])
		}
		if to == "" {
			to = guessTo(r.out)
		}
		r.from = from
		src, dst := formatNamed(from), formatNamed(to)
		if src == nil || src.from == "" {
			return fmt.Errorf("--from %q: want one of %s", from, formatNames(true))
		}
		if dst == nil || dst.to == "" {
			return fmt.Errorf("--to %q: want one of %s", to, formatNames(false))
		}
		// A flag of a format that takes no part is a mistake.
		var bad error
		cmd.Flags().Visit(func(fl *pflag.Flag) {
			if o, ok := owner[fl.Name]; ok && o != from && o != to && bad == nil {
				bad = fmt.Errorf("--%s is an option of --from/--to %s, not of this conversion (%s to %s)", fl.Name, o, from, to)
			}
		})
		if bad != nil {
			return bad
		}
		sio, dio := ios[from], ios[to]
		if r.out == "-" && !dio.stdout {
			return fmt.Errorf("--to %s is not written to standard output; give -o FILE", to)
		}
		if sio.open != nil {
			t, err := sio.open(r)
			if err != nil {
				return err
			}
			defer t.Close()
			return dio.write(r, t)
		}
		imp, err := sio.read(r)
		if err != nil {
			return err
		}
		if imp.close != nil {
			defer imp.close()
		}
		if to == "iot" {
			return r.importTo(imp, r.out)
		}
		// Through a temporary trace file: exporters read a trace rank by
		// rank, an importer gives its events in input order.
		tmp, err := os.MkdirTemp("", "iotrace-convert-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		name := filepath.Join(tmp, "imported.iot")
		if err := r.importTo(imp, name); err != nil {
			return err
		}
		t, err := format.Open(name)
		if err != nil {
			return err
		}
		defer t.Close()
		return dio.write(r, t)
	}
	return c
}

func convertLong() string {
	var b strings.Builder
	b.WriteString(`convert reads a trace in one form and writes it in another. Forms read (--from):

`)
	for _, f := range convertFormats {
		if f.from != "" {
			fmt.Fprintf(&b, "  %-7s %s\n", f.name, f.from)
		}
	}
	b.WriteString("\nForms written (--to):\n\n")
	for _, f := range convertFormats {
		if f.to != "" {
			fmt.Fprintf(&b, "  %-7s %s\n", f.name, f.to)
		}
	}
	b.WriteString(`
Without --from, the input's first bytes (fio iologs, darshan-parser and
darshan-dxt-parser text, strace output) or its name (.jsonl, .csv, .iop)
choose; anything else is a trace file (a Recorder directory needs --from
recorder). Without --to, OUT's name chooses: .jsonl, .csv, .fio (fio), .json
(chrome), .parquet, .iop (script), anything else the binary format. An input the reader cannot take stops the
conversion with one line naming file and line; what a form cannot express is
counted on standard error, never dropped silently. docs/CONVERT.md describes
every form, its options and its limits.`)
	return b.String()
}

// guessFrom chooses the form of an input from its content or name.
func guessFrom(name string) string {
	if name != "-" {
		if _, err := os.Stat(name); err != nil {
			// strace -ff's PREFIX: sniff its first PREFIX.PID file.
			if ins, err := straceFiles(name); err == nil && len(ins) > 0 {
				name = ins[0].Name
			}
		}
		if f, err := os.Open(name); err == nil {
			head := make([]byte, 4096)
			n, _ := io.ReadFull(f, head)
			f.Close()
			for _, cf := range convertFormats {
				if cf.sniff != nil && cf.sniff(head[:n]) {
					return cf.name
				}
			}
		}
	}
	for _, cf := range convertFormats {
		for _, ext := range cf.exts {
			if strings.HasSuffix(name, ext) && cf.from != "" {
				return cf.name
			}
		}
	}
	return "iot"
}

// guessTo chooses the output form from OUT's name.
func guessTo(out string) string {
	for _, cf := range convertFormats {
		for _, ext := range cf.exts {
			if strings.HasSuffix(out, ext) && cf.to != "" {
				return cf.name
			}
		}
	}
	return "iot"
}

// importTo writes the events of imp to the trace file out, through a
// temporary file next to it, so that a failed conversion leaves nothing
// behind; then it prints the importer's notes.
func (r *convertRun) importTo(imp *imported, out string) error {
	o, err := cli.CreateOutput(out)
	if err != nil {
		return err
	}
	defer o.Abort()
	w, err := format.NewWriter(o, imp.meta)
	if err != nil {
		return fmt.Errorf("%s: %w", out, err)
	}
	if _, err := trace.Copy(w, imp.src); err != nil {
		w.Close()
		return err
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("%s: %w", out, err)
	}
	if err := o.Commit(); err != nil {
		return err
	}
	if imp.notes != nil {
		for _, n := range imp.notes() {
			r.note(n)
		}
	}
	return nil
}

// note prints one line on standard error.
func (r *convertRun) note(s string) { fmt.Fprintf(r.stderr, "note: %s\n", s) }

// importMeta is the Meta of a trace made by an importer.
func (r *convertRun) importMeta(m trace.Meta) trace.Meta {
	if m.Creator == "" {
		m.Creator = "iotrace convert --from " + r.from
	}
	if len(m.Command) == 0 {
		m.Command = append([]string{"iotrace", "convert", "--from", r.from, "-o", r.out}, r.args...)
	}
	return m
}

// output opens OUT for writing: standard output for "-".
func (r *convertRun) output() (io.Writer, func() error, error) {
	if r.out == "-" {
		return r.cmd.OutOrStdout(), func() error { return nil }, nil
	}
	f, err := os.Create(r.out)
	if err != nil {
		return nil, nil, err
	}
	return f, f.Close, nil
}

// openInput opens one input ("-" is standard input).
func (r *convertRun) openInput(name string) (io.Reader, func() error, error) {
	if name == "-" {
		return r.cmd.InOrStdin(), func() error { return nil }, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	return f, f.Close, nil
}

// oneInput fails unless the format got exactly one input.
func (r *convertRun) oneInput() error {
	if len(r.args) != 1 {
		return fmt.Errorf("--from %s reads one file (or - for standard input), not %d", r.from, len(r.args))
	}
	return nil
}

// The binary trace format, scripts, JSON lines and CSV.
func init() {
	registerFormat(&convertFormat{
		name: "iot",
		from: "trace files or a directory of them (docs/FORMAT.md); a pattern script (.iop) with --ranks",
		to:   "a trace file",
		bind: func(fs *pflag.FlagSet) convertIO {
			var in cli.Input
			in.AddFlags(fs)
			return convertIO{
				open: func(c *convertRun) (trace.Trace, error) {
					return in.Open(c.args, scriptOpener, c.stderr)
				},
				write: func(c *convertRun, t trace.Trace) error { return writeBinary(c.out, t) },
			}
		},
	})
	for _, lf := range []struct{ name, desc string }{
		{"jsonl", "JSON lines: one object per event (schema in docs/FORMAT.md); any tool can write them"},
		{"csv", "CSV with a header row: one row per event, every field of the JSON-lines schema"},
	} {
		registerFormat(&convertFormat{
			name: lf.name,
			from: lf.desc,
			to:   lf.desc,
			exts: []string{"." + lf.name},
			bind: func(fs *pflag.FlagSet) convertIO {
				name := lf.name
				return convertIO{
					read: func(c *convertRun) (*imported, error) {
						if err := c.oneInput(); err != nil {
							return nil, err
						}
						in, closeIn, err := c.openInput(c.args[0])
						if err != nil {
							return nil, err
						}
						label := c.args[0]
						if label == "-" {
							label = "stdin"
						}
						return &imported{src: lineInput("."+name)(in, label), meta: c.importMeta(trace.Meta{}), close: closeIn}, nil
					},
					write: func(c *convertRun, t trace.Trace) error {
						w, closeOut, err := c.output()
						if err != nil {
							return err
						}
						lw, err := newLineWriter(name, w)
						if err != nil {
							return err
						}
						if err := writeLines(lw, t, nil, nil); err != nil {
							closeOut()
							return err
						}
						return closeOut()
					},
					stdout: true,
				}
			},
		})
	}
}

// writeBinary writes the trace t to a trace file, through a temporary
// file so that a failed conversion leaves nothing behind.
func writeBinary(out string, t trace.Trace) error {
	o, err := cli.CreateOutput(out)
	if err != nil {
		return err
	}
	defer o.Abort()
	w, err := format.NewWriter(o, t.Meta())
	if err != nil {
		return err
	}
	for _, r := range t.Ranks() {
		rs, err := t.Rank(r)
		if err != nil {
			w.Close()
			return err
		}
		if _, err := trace.Copy(w.Rank(r), rs); err != nil {
			w.Close()
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	return o.Commit()
}

// hasPrefixLine reports whether head starts with prefix, after a
// byte-order mark.
func hasPrefixLine(head []byte, prefix string) bool {
	return bytes.HasPrefix(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), []byte(prefix))
}
