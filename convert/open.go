package convert

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/iotrace/iotrace/internal/suggest"
	"github.com/iotrace/iotrace/samples"
	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
	"github.com/iotrace/iotrace/trace/format"
)

// Opener opens the inputs of a command as one trace: trace files and
// directories of them, a pattern script (a file, or a built-in sample by
// name), or files of a form the registry imports.
type Opener struct {
	Salvage bool     // read past damaged blocks of trace files
	Ranks   int      // ranks to run a script with (0: a sample's own)
	Params  []string // script parameters NAME=VALUE
	Groups  []string // script group sizes NAME=N
	// From is the form of the inputs; "" chooses from the first input's
	// content or name (Guess).
	From string
	// Script makes the trace of a script instance; nil expands it
	// (script.Instance.Expand). A replay runs a script instead.
	Script func(*script.Instance) trace.Trace
	// Forms are the forms with their options; nil: the options'
	// defaults.
	Forms *Forms
	// Warn receives warnings (damage read past) and notes (what an
	// import left out); nil discards them.
	Warn io.Writer
	// Stdin is the input "-" names, for the forms that read it.
	Stdin io.Reader
	// Command is the command line, for the Meta of imported traces.
	Command []string
	// Select chooses the events of the inputs (--rank, --op, --skip-op,
	// --path, --exclude, --time); the zero value keeps them all.
	Select filter.Flags
}

// AddSelectFlags registers the selectors of Select on fs.
func (o *Opener) AddSelectFlags(fs *flag.FlagSet) { o.Select.AddFlags(fs) }

// choose returns t seen through the selection, which must name ranks t
// has; it closes t on an error.
func (o *Opener) choose(t trace.Trace) (trace.Trace, error) {
	sel, err := o.Select.Selection()
	if err == nil {
		err = sel.CheckRanks("--rank", t.Ranks())
	}
	if err != nil {
		t.Close()
		return nil, err
	}
	return filter.Apply(t, sel), nil
}

// AddFlags registers the Opener's options on fs.
func (o *Opener) AddFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.Salvage, "salvage", false, "read past damaged blocks of a trace instead of failing")
	fs.IntVar(&o.Ranks, "ranks", 0, "number of ranks to run a pattern script (.iop) with")
	fs.Var((*listValue)(&o.Params), "param", "script parameter `NAME=VALUE` (repeatable)")
	fs.Var((*listValue)(&o.Groups), "group", "script group size `NAME=N` (repeatable)")
}

// AddFromFlag registers --from, the form of the inputs, on fs.
func (o *Opener) AddFromFlag(fs *flag.FlagSet) {
	fs.StringVar(&o.From, "from", "", "input form: "+Names(true)+" (default: from the input's content or name)")
}

// listValue is a repeatable option: each use adds a value.
type listValue []string

func (l *listValue) String() string     { return strings.Join(*l, ",") }
func (l *listValue) Set(s string) error { *l = append(*l, s); return nil }

func (o *Opener) warn() io.Writer {
	if o.Warn == nil {
		return io.Discard
	}
	return o.Warn
}

func (o *Opener) forms() *Forms {
	if o.Forms == nil {
		o.Forms = defaultForms()
	}
	return o.Forms
}

// Open opens args as one trace.
func (o *Opener) Open(args []string) (trace.Trace, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("no input: give trace files, a directory of them, a script (.iop), or a file to import (strace, Darshan DXT or counters, a Recorder directory, fio iologs, JSON lines, CSV)")
	}
	if _, err := o.Select.Selection(); err != nil {
		return nil, err // before any input is read
	}
	from := o.From
	if from == "" {
		from = Guess(args[0])
	}
	if from != Binary {
		if err := o.scriptOnly(args[0]); err != nil {
			return nil, err
		}
	}
	if from == Binary {
		t, err := o.openBinary(args)
		if err != nil {
			return nil, err
		}
		return o.choose(t)
	}
	f := Lookup(from)
	if f == nil || f.Reads == "" {
		return nil, fmt.Errorf("--from %q: want one of %s", from, Names(true))
	}
	imp, err := o.importer(from)(o.input(from, args))
	if err != nil {
		return nil, err
	}
	var t trace.Trace
	if imp.Trace != nil {
		t = o.noted(imp)
	} else if t, err = o.spill(imp); err != nil {
		return nil, err
	}
	return o.choose(t)
}

func (o *Opener) importer(form string) func(*Input) (*Imported, error) {
	return o.forms().Codec(form).Import
}

func (o *Opener) input(form string, args []string) *Input {
	return &Input{Names: args, Stdin: o.Stdin, Form: form, Command: o.Command, opener: o}
}

// noted prints the notes of an import that is a trace (read whole) and
// returns the trace, which closes the inputs with it.
func (o *Opener) noted(imp *Imported) trace.Trace {
	if imp.Notes != nil {
		for _, n := range imp.Notes() {
			fmt.Fprintf(o.warn(), "note: %s\n", n)
		}
	}
	if imp.Close == nil {
		return imp.Trace
	}
	return &closing{Trace: imp.Trace, close: imp.Close}
}

// spill writes the events of an import, which come in input order, to a
// temporary trace file and opens it: consumers read a trace rank by rank.
// Closing the trace removes the file.
func (o *Opener) spill(imp *Imported) (trace.Trace, error) {
	dir, err := os.MkdirTemp("", "iotrace-import-")
	if err != nil {
		closeImport(imp)
		return nil, err
	}
	t, err := o.spillTo(imp, filepath.Join(dir, "imported.iot"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &closing{Trace: t, close: func() error { return os.RemoveAll(dir) }}, nil
}

// spillTo writes the events of imp to the trace file name and opens it.
func (o *Opener) spillTo(imp *Imported, name string) (*format.Reader, error) {
	if err := writeImport(imp, name, o.warn()); err != nil {
		return nil, err
	}
	return format.Open(name)
}

// closing is a trace that releases more when it is closed.
type closing struct {
	trace.Trace
	close func() error
}

// RankOps implements trace.OpIndexed when the trace does.
func (c *closing) RankOps(r uint32, keep func(trace.Op) bool) (trace.Source, error) {
	if x, ok := c.Trace.(trace.OpIndexed); ok {
		return x.RankOps(r, keep)
	}
	return c.Trace.Rank(r)
}

func (c *closing) Close() error {
	err := c.Trace.Close()
	if cerr := c.close(); err == nil {
		err = cerr
	}
	return err
}

func closeImport(imp *Imported) {
	if imp.Close != nil {
		imp.Close()
	}
}

// writeImport writes the events of imp to the trace file out, whole or
// not at all, and then prints the importer's notes on notes.
func writeImport(imp *Imported, out string, notes io.Writer) error {
	defer closeImport(imp)
	err := writeTrace(out, func(w *format.Writer) error {
		_, err := trace.Copy(w, imp.Events)
		return err
	}, imp.Meta)
	if err != nil {
		return err
	}
	if imp.Notes != nil {
		for _, n := range imp.Notes() {
			fmt.Fprintf(notes, "note: %s\n", n)
		}
	}
	return nil
}

// openBinary opens trace files and directories of them, or a single
// pattern script.
func (o *Opener) openBinary(args []string) (trace.Trace, error) {
	var found []string
	for _, a := range args {
		if isScript(a) {
			found = append(found, a)
		}
	}
	if len(found) > 0 {
		if len(args) > 1 {
			return nil, fmt.Errorf("a script (%s) is read alone, not with other inputs", found[0])
		}
		return o.openScript(args[0])
	}
	if err := o.scriptOnly(args[0]); err != nil {
		return nil, err
	}
	r, err := format.OpenOptions(format.ReadOptions{Salvage: o.Salvage}, args...)
	if err != nil {
		return nil, o.noSuchInput(args, err)
	}
	for _, w := range r.Warnings() {
		fmt.Fprintf(o.warn(), "warning: %s\n", w)
	}
	return &warnTrace{Reader: r, warn: o.warn(), seen: len(r.Warnings())}, nil
}

// scriptOnly fails when an option of scripts (--ranks, --param, --group)
// is given for input, which is no script: it would do nothing.
func (o *Opener) scriptOnly(input string) error {
	switch {
	case o.Ranks != 0:
		return fmt.Errorf("--ranks %d: %s is a trace, not a pattern script: --ranks sets how many ranks a script runs with (--rank LIST selects ranks of a trace)", o.Ranks, input)
	case len(o.Params) > 0:
		return fmt.Errorf("--param: %s is a trace, not a pattern script", input)
	case len(o.Groups) > 0:
		return fmt.Errorf("--group: %s is a trace, not a pattern script", input)
	}
	return nil
}

// noSuchInput adds to the error of opening args as trace files, when the
// first names nothing, the sample it may have meant ("astro3d-smal").
func (o *Opener) noSuchInput(args []string, err error) error {
	for _, a := range args {
		if _, serr := os.Stat(a); !os.IsNotExist(serr) || strings.ContainsRune(a, '/') {
			continue
		}
		if m := suggest.Closest(a, samples.Names()); m != "" {
			return fmt.Errorf("%s: no such file, nor a sample of that name: did you mean %s? ('iotrace samples' lists them)", a, m)
		}
		if !strings.ContainsRune(a, '.') {
			return fmt.Errorf("%s: no such file, nor a sample of that name ('iotrace samples' lists them)", a)
		}
	}
	return err
}

// IsScript reports whether name is a pattern script by its name.
func IsScript(name string) bool { return strings.HasSuffix(name, ".iop") }

// isScript reports whether the argument a is a script: a file named
// *.iop, or a built-in sample named by a name that is no file.
func isScript(a string) bool {
	if IsScript(a) {
		return true
	}
	_, ok := samples.Arg(a)
	return ok
}

// openScript opens the script at path, or the sample called path, with
// the Opener's ranks (by default a sample's own) and parameters.
func (o *Opener) openScript(path string) (trace.Trace, error) {
	ranks := o.Ranks
	s, isSample := samples.Arg(path)
	if isSample && ranks <= 0 {
		ranks = s.Ranks
	}
	if ranks <= 0 {
		return nil, fmt.Errorf("%s: a script needs --ranks N", path)
	}
	params, err := keyValues("--param", o.Params)
	if err != nil {
		return nil, err
	}
	groups, err := keyValues("--group", o.Groups)
	if err != nil {
		return nil, err
	}
	var prog *script.Program
	if isSample {
		prog, err = s.Compile()
	} else {
		prog, err = script.Load(path)
	}
	if err != nil {
		return nil, err
	}
	inst, err := prog.Instantiate(script.Config{Ranks: ranks, Params: params, Groups: groups})
	if err != nil {
		return nil, err
	}
	if o.Script != nil {
		return o.Script(inst), nil
	}
	return inst.Expand(), nil
}

func keyValues(flag string, kvs []string) (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%s %q: want NAME=VALUE", flag, kv)
		}
		m[k] = v
	}
	return m, nil
}

// warnTrace prints the warnings a reader finds while it is read (blocks
// skipped by --salvage) when it is closed.
type warnTrace struct {
	*format.Reader
	warn io.Writer
	seen int
}

func (w *warnTrace) Close() error {
	for _, s := range w.Reader.Warnings()[w.seen:] {
		fmt.Fprintf(w.warn, "warning: %s\n", s)
	}
	return w.Reader.Close()
}
