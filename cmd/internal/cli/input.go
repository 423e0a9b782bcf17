package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
	"github.com/spf13/pflag"
)

// Input holds the flags of every command that reads a trace, and opens
// its inputs.
type Input struct {
	Salvage bool
	Ranks   int      // ranks to expand a script with
	Params  []string // script parameters NAME=VALUE
	Groups  []string // script group sizes NAME=N
}

// AddFlags registers the input flags on fs.
func (in *Input) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&in.Salvage, "salvage", false, "read past damaged blocks of a trace instead of failing")
	fs.IntVar(&in.Ranks, "ranks", 0, "number of ranks to run a pattern script (.iop) with")
	fs.StringArrayVar(&in.Params, "param", nil, "script parameter NAME=VALUE (repeatable)")
	fs.StringArrayVar(&in.Groups, "group", nil, "script group size NAME=N (repeatable)")
}

// ScriptOpener expands pattern scripts into traces: script files, and the
// built-in samples by name. cmd/iotrace sets one up (package script and
// package samples); it is an interface so that this package does not depend
// on the script language.
type ScriptOpener interface {
	// Open expands the script at path, or the sample called path.
	Open(path string, ranks int, params, groups map[string]string) (trace.Trace, error)
	// Sample reports whether name, which is no file, names a built-in
	// sample ("astro3d-small" or "astro3d-small.iop"), and the number of
	// ranks it is meant for: the default of --ranks.
	Sample(name string) (ranks int, ok bool)
}

// IsScript reports whether name is a pattern script.
func IsScript(name string) bool { return strings.HasSuffix(name, ".iop") }

// isScript reports whether the argument a is a script: a file named
// *.iop, or a built-in sample named by a name that is no file.
func isScript(a string, scripts ScriptOpener) bool {
	if IsScript(a) {
		return true
	}
	if scripts == nil {
		return false
	}
	if _, err := os.Stat(a); err == nil {
		return false
	}
	_, ok := scripts.Sample(a)
	return ok
}

// Open opens args as one trace: trace files and directories of them, or a
// single pattern script (a file, or a built-in sample by name). Warnings
// about recovered damage go to warn.
func (in *Input) Open(args []string, scripts ScriptOpener, warn io.Writer) (trace.Trace, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("no input: give trace files, a directory of them, or a script (.iop)")
	}
	var found []string
	for _, a := range args {
		if isScript(a, scripts) {
			found = append(found, a)
		}
	}
	if len(found) > 0 {
		if len(args) > 1 {
			return nil, fmt.Errorf("a script (%s) is read alone, not with other inputs", found[0])
		}
		if scripts == nil {
			return nil, fmt.Errorf("%s: this build cannot read pattern scripts", args[0])
		}
		ranks := in.Ranks
		if n, ok := scripts.Sample(args[0]); ok && ranks <= 0 {
			ranks = n
		}
		if ranks <= 0 {
			return nil, fmt.Errorf("%s: a script needs --ranks N", args[0])
		}
		params, err := keyValues("--param", in.Params)
		if err != nil {
			return nil, err
		}
		groups, err := keyValues("--group", in.Groups)
		if err != nil {
			return nil, err
		}
		return scripts.Open(args[0], ranks, params, groups)
	}
	r, err := format.OpenOptions(format.ReadOptions{Salvage: in.Salvage}, args...)
	if err != nil {
		return nil, err
	}
	for _, w := range r.Warnings() {
		fmt.Fprintf(warn, "warning: %s\n", w)
	}
	return &warnTrace{Reader: r, warn: warn, seen: len(r.Warnings())}, nil
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
