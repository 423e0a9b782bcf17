package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/iotrace/iotrace/convert/strace"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
	"github.com/spf13/pflag"
)

// straceLine is how a line of strace output starts: an optional PID, an
// optional time, a call.
var straceLine = regexp.MustCompile(`^(\[pid +[0-9]+\] |[0-9]+ +)?([0-9]+\.[0-9]+ |[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)? )?[a-z_0-9]+\(`)

// strace: the output of strace -f -ttt -T -y, one file or strace -ff's.
func init() {
	registerFormat(&convertFormat{
		name: "strace",
		from: "strace output: strace -f -ttt -T -y -o FILE (or its stderr), or the PREFIX.PID files of strace -ff -o PREFIX (give PREFIX or the files)",
		sniff: func(head []byte) bool {
			line, _, _ := strings.Cut(string(head), "\n")
			return straceLine.MatchString(line)
		},
		bind: func(fs *pflag.FlagSet) convertIO {
			var include, exclude []string
			var all, perFile bool
			fs.StringArrayVar(&include, "include", nil, "strace: keep only calls on paths under this prefix (repeatable), as iotrace record")
			fs.StringArrayVar(&exclude, "exclude", nil, "strace: leave out calls on paths under this prefix (repeatable), as iotrace record")
			fs.BoolVar(&all, "all", false, "strace: keep every call of the event model: no path exclusions, pipes and sockets too")
			fs.BoolVar(&perFile, "rank-per-file", false, "strace: each INPUT is one rank (in the order given), e.g. one strace per MPI process")
			return convertIO{read: func(c *convertRun) (*imported, error) {
				rules, err := filter.RecordPaths(include, exclude, false)
				if err != nil {
					return nil, err
				}
				return readStrace(c, rules, all, perFile)
			}}
		},
	})
}

// straceFiles expands one INPUT: a file, or the PREFIX of strace -ff's
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

func globEscape(s string) string {
	return regexp.MustCompile(`[*?\[\\]`).ReplaceAllString(s, `\$0`)
}

func readStrace(c *convertRun, rules *filter.Paths, all, perFile bool) (*imported, error) {
	paths := trace.NewPaths()
	var groups [][]strace.Input
	for _, a := range c.args {
		ins, err := straceFiles(a)
		if err != nil {
			return nil, err
		}
		if perFile {
			groups = append(groups, ins)
		} else if len(groups) == 0 {
			groups = append(groups, ins)
		} else {
			groups[0] = append(groups[0], ins...)
		}
	}
	var closers []func() error
	closeAll := func() error {
		for _, cl := range closers {
			cl()
		}
		return nil
	}
	var readers []*strace.Reader
	var srcs []trace.Source
	for rank, g := range groups {
		for i := range g {
			name := g[i].Name
			if name == "stdin" {
				name = "-"
			}
			r, cl, err := c.openInput(name)
			if err != nil {
				closeAll()
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
		closeAll()
		return nil, err
	}
	meta := readers[0].Meta()
	meta.Ranks = len(groups)
	return &imported{
		src:  &concatSource{srcs: srcs, paths: paths},
		meta: c.importMeta(meta),
		notes: func() []string {
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
		close: closeAll,
	}, nil
}
