package cli

import (
	"fmt"
	"io"
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

// ScriptOpener expands a pattern script into a trace. The script package
// registers it (see cmd/iotrace); it is a variable so that this package does
// not depend on the script language.
type ScriptOpener func(path string, ranks int, params, groups map[string]string) (trace.Trace, error)

// IsScript reports whether name is a pattern script.
func IsScript(name string) bool { return strings.HasSuffix(name, ".iop") }

// Open opens args as one trace: trace files and directories of them, or a
// single pattern script. Warnings about recovered damage go to warn.
func (in *Input) Open(args []string, openScript ScriptOpener, warn io.Writer) (trace.Trace, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("no input: give trace files, a directory of them, or a script (.iop)")
	}
	var scripts []string
	for _, a := range args {
		if IsScript(a) {
			scripts = append(scripts, a)
		}
	}
	if len(scripts) > 0 {
		if len(args) > 1 {
			return nil, fmt.Errorf("a script (%s) is read alone, not with other inputs", scripts[0])
		}
		if openScript == nil {
			return nil, fmt.Errorf("%s: this build cannot read pattern scripts", args[0])
		}
		if in.Ranks <= 0 {
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
		return openScript(args[0], in.Ranks, params, groups)
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
