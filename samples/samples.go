// Package samples holds iotrace's classic workloads as pattern scripts
// (docs/SCRIPT.md), embedded in the binaries so that every command can run
// them without the source tree: the astro3d dumps of Thakur et al., the
// Parabench listings, b_eff_io, NASA BTIO and Isaila et al.'s synthetic
// benchmark, and Parabench's OLAP index workload. Each sample's test pins it
// to the numbers of its paper.
package samples

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/iotrace/iotrace/script"
)

//go:embed *.iop
var files embed.FS

// Sample is one embedded pattern script.
type Sample struct {
	Name    string // the file name without ".iop": "astro3d-small"
	Summary string // one line: the first line of the script's header comment
	Ranks   int    // the number of ranks of the run its paper describes
	Source  []byte // the script
}

// File is the sample's file name, "astro3d-small.iop": errors in the
// script name it.
func (s Sample) File() string { return s.Name + ".iop" }

// Compile parses and checks the sample.
func (s Sample) Compile() (*script.Program, error) { return script.Compile(s.File(), s.Source) }

// ranks is the number of ranks each sample is written for: the run of its
// paper. TestEverySampleHasRanks keeps it in step with the files.
var ranks = map[string]int{
	"astro3d-small": 8,
	"astro3d-large": 64,
	// Listing 2 sizes its groups on the command line; two of each.
	"parabench-listing2": 4,
	// Listing 4 shows the run of listing 3 with 16 processes.
	"parabench-listing3": 16,
	// The papers' runs span 2 to 512 processes; 8 is a small partition.
	"beffio": 8,
	// Isaila et al. ran BTIO on 9 compute nodes.
	"btio-a": 9,
	"btio-b": 9,
	"btio-c": 9,
	// Isaila et al.'s synthetic benchmark: 8 compute nodes.
	"isaila-synthetic": 8,
	// Parabench's OLAP emulation ran on a single host.
	"olap-index": 1,
}

// List returns every sample, by name.
func List() []Sample {
	names, _ := fs.Glob(files, "*.iop")
	sort.Strings(names)
	out := make([]Sample, 0, len(names))
	for _, n := range names {
		s, _ := Get(strings.TrimSuffix(n, ".iop"))
		out = append(out, s)
	}
	return out
}

// Get returns the sample called name ("astro3d-small"; a trailing ".iop" is
// allowed).
func Get(name string) (Sample, bool) {
	name = strings.TrimSuffix(name, ".iop")
	if name == "" || strings.ContainsAny(name, "/\\*?[") {
		return Sample{}, false
	}
	src, err := files.ReadFile(name + ".iop")
	if err != nil {
		return Sample{}, false
	}
	return Sample{Name: name, Summary: summary(src), Ranks: ranks[name], Source: src}, true
}

// Arg returns the sample a command-line argument names: the name of a
// sample, with or without ".iop", when no file or directory of that name
// exists (samples/astro3d-small.iop is a file, astro3d-small the sample).
func Arg(arg string) (Sample, bool) {
	if strings.ContainsAny(arg, `/\`) {
		return Sample{}, false
	}
	if _, err := os.Stat(arg); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return Sample{}, false
	}
	return Get(arg)
}

// Names returns the names of the samples.
func Names() []string {
	var ns []string
	for _, s := range List() {
		ns = append(ns, s.Name)
	}
	return ns
}

// Open expands the sample called name into a trace, like script.Open does
// for a file.
func Open(name string, nranks int, params, groups map[string]string) (*script.Expansion, error) {
	s, ok := Get(name)
	if !ok {
		return nil, fmt.Errorf("no sample %q (samples: %s)", name, strings.Join(Names(), ", "))
	}
	p, err := s.Compile()
	if err != nil {
		return nil, err
	}
	return script.Expand(p, script.Config{Ranks: nranks, Params: params, Groups: groups})
}

// summary is the first line of the header comment, without "# ".
func summary(src []byte) string {
	line, _, _ := strings.Cut(string(src), "\n")
	line = strings.TrimSpace(strings.TrimPrefix(line, "#"))
	return strings.TrimSuffix(line, ":")
}
