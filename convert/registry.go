// Package convert knows every form a trace takes outside the binary
// format, and opens any input as a trace.
//
// The registry (Formats) lists the forms: each has a name (--from and
// --to NAME), what it reads and writes, the name endings and the first
// bytes that choose it, its options, and its importer and exporter, which
// live in the packages below (convert/strace, convert/dxt,
// convert/darshan, convert/recorder, convert/fio, convert/jsonl,
// convert/csv, convert/chrome, convert/parquet, script/fold). Adding a
// form is adding one entry to the list (a form whose codec a program
// should link only when it writes that form sets it from its own package:
// SetCodec).
//
// An Opener opens what a command is given — trace files or a directory of
// them, a pattern script or a built-in sample, or a file or directory of
// any form the registry imports (strace output, Darshan DXT text,
// darshan-parser counters, a Recorder trace directory, fio iologs, JSON
// lines, CSV), chosen by its content or name — as one trace.Trace. A
// Conversion reads with an Opener and writes with a form's exporter.
package convert

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/iotrace/iotrace/trace"
)

// A Format is one form of trace: read (imported), written (exported), or
// both.
type Format struct {
	Name string
	// Reads and Writes say, for the help, what --from NAME reads and
	// --to NAME writes; "" when the form is not read, or not written.
	Reads, Writes string
	// Exts are the name endings that choose the form when none is given.
	Exts []string
	// Sniff reports whether the start of a file is in this form, so that
	// an input's form need not be given; nil never matches.
	Sniff func(head []byte) bool
	// SniffDir reports whether a directory is in this form (a form read
	// from a directory); nil never matches, and a directory no form
	// claims is one of trace files.
	SniffDir func(dir string) bool
	// Bind registers the form's options on fs and returns its importer
	// and exporter, bound to the options' values. Options of several
	// forms share fs, so their names differ; each usage starts with the
	// form's name.
	Bind func(fs *flag.FlagSet) Codec
}

// Codec is what a form does, its options bound.
type Codec struct {
	// Import reads the inputs (nil: the form is not read).
	Import func(in *Input) (*Imported, error)
	// Export writes t (nil: the form is not written).
	Export func(out *Output, t trace.Trace) error
	// Stdout says that Export can write to standard output ("-").
	Stdout bool
}

// Input is what an importer reads.
type Input struct {
	Names []string  // the input files; "-" is Stdin
	Stdin io.Reader // nil: none
	Form  string    // the form read, for errors and the trace's Meta
	// Command is the command line that made the trace, for its Meta.
	Command []string

	opener *Opener // how the binary form opens trace files and scripts
}

// Open opens the input name ("-" is standard input).
func (in *Input) Open(name string) (io.Reader, func() error, error) {
	if name == "-" {
		if in.Stdin == nil {
			return nil, nil, fmt.Errorf("-: no standard input here")
		}
		return in.Stdin, func() error { return nil }, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	return f, f.Close, nil
}

// One fails unless there is exactly one input.
func (in *Input) One() error {
	if len(in.Names) != 1 {
		return fmt.Errorf("%s is read alone, not with other inputs (a %s input is one file, or - for standard input)", in.Names[0], in.Form)
	}
	return nil
}

// Label is the name of an input in errors: "stdin" for "-".
func Label(name string) string {
	if name == "-" {
		return "stdin"
	}
	return name
}

// Meta completes the Meta of an imported trace: who made it and how.
func (in *Input) Meta(m trace.Meta) trace.Meta {
	if m.Creator == "" {
		m.Creator = "iotrace convert --from " + in.Form
	}
	if len(m.Command) == 0 {
		m.Command = in.Command
	}
	return m
}

// Imported is what an importer read: a trace whose ranks are apart (trace
// files, DXT), or events in input order that carry their ranks (Events,
// whose trace is Meta).
type Imported struct {
	Trace  trace.Trace
	Events trace.Source
	Meta   trace.Meta
	// Notes, if set, returns what the input held that the trace cannot,
	// once every event is read: lines for the user.
	Notes func() []string
	// Close, if set, releases the inputs.
	Close func() error
}

// Output is where an exporter writes.
type Output struct {
	Name   string    // the file; "-" is Stdout
	Stdout io.Writer // standard output
	Stderr io.Writer // notes and warnings
	// Inputs name what the trace was read from, for outputs that say so.
	Inputs []string
}

// Write runs write on the output: standard output for "-", else a file
// that appears whole when write succeeds and not at all when it fails.
func (out *Output) Write(write func(io.Writer) error) error {
	return writeOutput(out.Name, out.Stdout, write)
}

// Note prints one line for the user.
func (out *Output) Note(s string) { fmt.Fprintf(out.Stderr, "note: %s\n", s) }

// Formats returns the registry: every form, in the order the help lists
// them.
func Formats() []*Format {
	return []*Format{binaryForm, jsonlForm, csvForm, straceForm, dxtForm, darshanForm, recorderForm, fioForm,
		chromeForm, parquetForm, scriptForm}
}

// Lookup returns the form called name, or nil.
func Lookup(name string) *Format {
	for _, f := range Formats() {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// Names lists the forms read (reads) or written, sorted, for errors and
// the help.
func Names(reads bool) string {
	var n []string
	for _, f := range Formats() {
		if (reads && f.Reads != "") || (!reads && f.Writes != "") {
			n = append(n, f.Name)
		}
	}
	slices.Sort(n)
	return strings.Join(n, ", ")
}

// Describe writes the forms read (reads) or written, one line each, for
// the help: the name, padded to the longest name, and what --from NAME
// reads or --to NAME writes.
func Describe(w io.Writer, reads bool) {
	width := 0
	for _, f := range Formats() {
		width = max(width, len(f.Name))
	}
	for _, f := range Formats() {
		d := f.Writes
		if reads {
			d = f.Reads
		}
		if d != "" {
			fmt.Fprintf(w, "  %-*s %s\n", width, f.Name, d)
		}
	}
}

// Binary is the name of iotrace's own form.
const Binary = "iot"

// Guess chooses the form of the input name from its first bytes (or, for
// a directory, its files), then its name; anything else is the binary
// form (trace files, directories of them, scripts).
func Guess(name string) string {
	if st, err := os.Stat(name); err == nil && st.IsDir() {
		for _, cf := range Formats() {
			if cf.SniffDir != nil && cf.SniffDir(name) {
				return cf.Name
			}
		}
		return Binary
	}
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
			for _, cf := range Formats() {
				if cf.Sniff != nil && cf.Sniff(head[:n]) {
					return cf.Name
				}
			}
		}
	}
	for _, cf := range Formats() {
		if cf.Reads != "" && hasExt(name, cf.Exts) {
			return cf.Name
		}
	}
	return Binary
}

// GuessOut chooses the form of the output name from its name: the form
// whose ending it has; Binary for a name ending in .iot or with no
// ending; "" for any other ending (x.txt: which form is not clear, and a
// binary trace there would surprise).
func GuessOut(name string) string {
	for _, cf := range Formats() {
		if cf.Writes != "" && hasExt(name, cf.Exts) {
			return cf.Name
		}
	}
	if ext := filepath.Ext(name); ext == "" || ext == ".iot" {
		return Binary
	}
	return ""
}

func hasExt(name string, exts []string) bool {
	for _, e := range exts {
		if strings.HasSuffix(name, e) {
			return true
		}
	}
	return false
}

// hasPrefixLine reports whether head starts with prefix, after a
// byte-order mark.
func hasPrefixLine(head []byte, prefix string) bool {
	return bytes.HasPrefix(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), []byte(prefix))
}

// Forms are the forms with their options bound to one flag set.
type Forms struct {
	codecs map[string]Codec
	owner  map[string]string // option name → form
}

// Bind registers the options of every form on fs and returns the forms
// bound to them. With o, the Opener's options are registered too, as the
// binary form's.
func Bind(fs *flag.FlagSet, o *Opener) *Forms {
	fo := &Forms{codecs: map[string]Codec{}, owner: map[string]string{}}
	own := func(form string, bind func()) {
		before := map[string]bool{}
		fs.VisitAll(func(fl *flag.Flag) { before[fl.Name] = true })
		bind()
		fs.VisitAll(func(fl *flag.Flag) {
			if !before[fl.Name] {
				fo.owner[fl.Name] = form
			}
		})
	}
	if o != nil {
		own(Binary, func() { o.AddFlags(fs) })
	}
	for _, f := range Formats() {
		if f.Bind != nil {
			own(f.Name, func() { fo.codecs[f.Name] = f.Bind(fs) })
		}
	}
	return fo
}

// SetCodec gives the form called name its options and codec (Bind), for
// a form whose codec lives in a package of its own that only the
// programs writing it link in: convert/parquet sets Parquet's when it is
// imported (cmd/iotrace does; ioreplay, which writes no form, does not).
// Until then the form is listed, and converting to it fails as for a
// form that is not written.
func SetCodec(name string, bind func(fs *flag.FlagSet) Codec) {
	if f := Lookup(name); f != nil {
		f.Bind = bind
	}
}

// defaultForms are the forms with their options' defaults.
func defaultForms() *Forms {
	return Bind(flag.NewFlagSet("", flag.ContinueOnError), nil)
}

// Codec returns the form name's importer and exporter.
func (fo *Forms) Codec(name string) Codec { return fo.codecs[name] }

// CheckOptions fails when an option given (set, by name) belongs to a
// form that takes no part in a conversion from one form to another: a
// mistake.
func (fo *Forms) CheckOptions(set []string, from, to string) error {
	for _, name := range set {
		if o, ok := fo.owner[name]; ok && o != from && o != to {
			return fmt.Errorf("--%s is an option of --from/--to %s, not of this conversion (%s to %s)", name, o, from, to)
		}
	}
	return nil
}
