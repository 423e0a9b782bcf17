package convert

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/iotrace/iotrace/convert/strace"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
)

// straceLine is how a line of strace output starts: an optional PID, an
// optional time, a call.
var straceLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(\[pid +[0-9]+\] |[0-9]+ +)?([0-9]+\.[0-9]+ |[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)? )?[a-z_0-9]+\(`)
})

// straceForm is the output of strace -f -ttt -T -y: one file, or strace
// -ff's.
var straceForm = &Format{
	Name:  "strace",
	Reads: "strace output: strace -f -ttt -T -y -o FILE (or its stderr), or the PREFIX.PID files of strace -ff -o PREFIX (give PREFIX or the files)",
	Sniff: func(head []byte) bool {
		line, _, _ := strings.Cut(string(head), "\n")
		return straceLine().MatchString(line)
	},
	Bind: func(fs *flag.FlagSet) Codec {
		all := fs.Bool("all", false, "strace: keep every call of the event model: no path exclusions (the system's directories, /proc, /sys, /dev), pipes and sockets too")
		perFile := fs.Bool("rank-per-file", false, "strace: each INPUT is one rank (in the order given), e.g. one strace per MPI process")
		return Codec{Import: func(in *Input) (*Imported, error) {
			// The rules of iotrace record, with the selection's --path
			// (--include) and --exclude prefixes, which every command
			// takes (filter.Flags).
			sel := in.opener.Select
			rules, err := filter.RecordPaths(sel.Paths, sel.Excludes, *all)
			if err != nil {
				return nil, err
			}
			return importStrace(in, rules, *all, *perFile)
		}}
	},
}

// straceFiles expands one input: a file, or the PREFIX of strace -ff's
// PREFIX.PID files.
func straceFiles(arg string) ([]strace.Input, error) {
	if arg == "-" {
		return []strace.Input{{Name: "stdin"}}, nil
	}
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		in := strace.Input{Name: arg}
		if ext := filepath.Ext(arg); len(ext) > 1 {
			if pid, err := strconv.Atoi(ext[1:]); err == nil && pid > 0 {
				in.PID = pid
			}
		}
		return []strace.Input{in}, nil
	}
	matches, _ := filepath.Glob(globEscape(arg) + ".*")
	var ins []strace.Input
	for _, m := range matches {
		pid, err := strconv.Atoi(strings.TrimPrefix(m, arg+"."))
		if err == nil && pid > 0 {
			ins = append(ins, strace.Input{Name: m, PID: pid})
		}
	}
	if len(ins) == 0 {
		return nil, fmt.Errorf("%s: no such file, nor %s.PID files of strace -ff", arg, arg)
	}
	slices.SortFunc(ins, func(a, b strace.Input) int { return a.PID - b.PID })
	return ins, nil
}

var globMeta = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[*?\[\\]`) })

func globEscape(s string) string { return globMeta().ReplaceAllString(s, `\$0`) }

// importStrace reads the strace logs of the inputs: one rank, or with
// perFile one rank per input.
func importStrace(in *Input, rules *filter.Paths, all, perFile bool) (*Imported, error) {
	var groups [][]strace.Input
	for _, a := range in.Names {
		ins, err := straceFiles(a)
		if err != nil {
			return nil, err
		}
		if perFile || len(groups) == 0 {
			groups = append(groups, ins)
		} else {
			groups[0] = append(groups[0], ins...)
		}
	}
	paths := trace.NewPaths()
	var closers closers
	var readers []*strace.Reader
	var srcs []trace.Source
	for rank, g := range groups {
		for i := range g {
			name := g[i].Name
			if name == "stdin" {
				name = "-"
			}
			r, cl, err := in.Open(name)
			if err != nil {
				closers.close()
				return nil, err
			}
			closers = append(closers, cl)
			g[i].R = r
		}
		rd := strace.NewReader(g, strace.Options{Rank: uint32(rank), Rules: rules, All: all, Paths: paths})
		readers = append(readers, rd)
		srcs = append(srcs, rd)
	}
	// The header is written first: read the first log up to its first
	// event, for its command and epoch.
	if err := readers[0].Prime(); err != nil {
		closers.close()
		return nil, err
	}
	meta := readers[0].Meta()
	meta.Ranks = len(groups)
	return &Imported{
		Events: &concatSource{srcs: srcs, paths: paths},
		Meta:   in.Meta(meta),
		Notes: func() []string {
			var n []string
			for i, rd := range readers {
				for _, s := range rd.Notes() {
					if len(readers) > 1 {
						s = fmt.Sprintf("rank %d: %s", i, s)
					}
					n = append(n, s)
				}
			}
			return n
		},
		Close: closers.close,
	}, nil
}
