package convert

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Conversion reads inputs in one form and writes them in another.
type Conversion struct {
	// Opener reads the inputs; its From is the input form ("" guesses),
	// its Forms the forms with their options (Bind).
	Opener *Opener
	// To is the output form; "" chooses from Output's name (GuessOut).
	To string
	// Output is the file to write; "-" is standard output (text forms
	// only).
	Output string
	Stdout io.Writer
	Stderr io.Writer
	// Set names the options given, so that one of a form that takes no
	// part is a mistake.
	Set []string
}

// Run converts the inputs args.
func (c *Conversion) Run(args []string) error {
	o := c.Opener
	from, to := o.From, c.To
	if from == "" && len(args) > 0 {
		from = Guess(args[0])
	}
	if to == "" {
		if to = GuessOut(c.Output); to == "" {
			return fmt.Errorf("-o %s: no form is written to files ending in %s: give --to FORM (%s; a binary trace ends in .iot; 'iotrace dump' prints events as text)",
				c.Output, filepath.Ext(c.Output), Names(false))
		}
	}
	if f := Lookup(from); f == nil || f.Reads == "" {
		return fmt.Errorf("--from %q: want one of %s", from, Names(true))
	}
	if f := Lookup(to); f == nil || f.Writes == "" {
		return fmt.Errorf("--to %q: want one of %s", to, Names(false))
	}
	if err := o.forms().CheckOptions(c.Set, from, to); err != nil {
		return err
	}
	dst := o.forms().Codec(to)
	if dst.Export == nil {
		// A form whose codec this program does not link (SetCodec).
		return fmt.Errorf("--to %s: this program does not write it ('iotrace convert --to %s' does)", to, to)
	}
	if c.Output == "-" && !dst.Stdout {
		return fmt.Errorf("--to %s is not written to standard output; give -o FILE", to)
	}
	if o.Command == nil {
		o.Command = append([]string{"iotrace", "convert", "--from", from, "-o", c.Output}, args...)
	}
	if o.Warn == nil {
		o.Warn = c.Stderr
	}
	if _, err := o.Select.Selection(); err != nil {
		return err
	}
	if from != Binary && len(args) > 0 {
		if err := o.scriptOnly(args[0]); err != nil {
			return err
		}
	}
	out := &Output{Name: c.Output, Stdout: c.Stdout, Stderr: c.Stderr, Inputs: args}
	imp, err := o.importer(from)(o.input(from, args))
	if err != nil {
		return err
	}
	if imp.Trace != nil {
		t, err := o.choose(o.noted(imp))
		if err != nil {
			return err
		}
		defer t.Close()
		return dst.Export(out, t)
	}
	if to == Binary && o.Select.Empty() {
		// An importer's events go straight into the trace file.
		return writeImport(imp, c.Output, c.Stderr)
	}
	// Through a temporary trace file: exporters read a trace rank by rank,
	// an importer gives its events in input order.
	tmp, err := os.MkdirTemp("", "iotrace-convert-")
	if err != nil {
		closeImport(imp)
		return err
	}
	defer os.RemoveAll(tmp)
	r, err := o.spillTo(imp, filepath.Join(tmp, "imported.iot"))
	if err != nil {
		return err
	}
	t, err := o.choose(r)
	if err != nil {
		return err
	}
	defer t.Close()
	return dst.Export(out, t)
}
