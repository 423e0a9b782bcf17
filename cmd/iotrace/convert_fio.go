package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/iotrace/iotrace/convert/fio"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/target"
	"github.com/spf13/pflag"
)

// fio: a job file with one iolog per rank; iologs back into a trace.
func init() {
	registerFormat(&convertFormat{
		name: "fio",
		from: "fio iologs, version 2 or 3 (write_iolog), one rank per file in the order given",
		to:   "a fio job file (-o JOB.fio) and one version-3 iolog per rank beside it; run with fio JOB.fio",
		exts: []string{".fio"},
		sniff: func(head []byte) bool {
			return hasPrefixLine(head, "fio version 2 iolog") || hasPrefixLine(head, "fio version 3 iolog")
		},
		bind: func(fs *pflag.FlagSet) convertIO {
			var dir, timing string
			var maps []string
			var speed float64
			fs.StringVar(&dir, "target", "", "fio: directory the replayed files go to (default: the job file's directory, names relative to it)")
			fs.StringArrayVar(&maps, "map", nil, "fio: place trace paths under OLD at NEW in the target, as ioreplay --map (repeatable)")
			fs.StringVar(&timing, "timing", "original", "fio: original (fio sleeps the recorded gaps) or afap (replay_no_stall=1)")
			fs.Float64Var(&speed, "speed", 1, "fio: rate factor of original timing (replay_time_scale = 100 × speed)")
			return convertIO{
				read: func(c *convertRun) (*imported, error) {
					return readFioLogs(c)
				},
				write: func(c *convertRun, t trace.Trace) error {
					opts := fio.ExportOptions{Target: dir, Speed: speed, Source: strings.Join(c.args, " ")}
					switch timing {
					case "original":
					case "afap":
						opts.NoStall = true
					case "think":
						return errors.New("--timing think: fio has no think-time replay (it sleeps the recorded gap from the previous call's issue); use original or afap")
					default:
						return fmt.Errorf("--timing %q: want original or afap", timing)
					}
					for _, m := range maps {
						r, err := target.ParseMapRule(m)
						if err != nil {
							return err
						}
						opts.Map = append(opts.Map, r)
					}
					if filepath.Ext(c.out) != ".fio" {
						return fmt.Errorf("-o %s: name the job file NAME.fio (its iologs go beside it)", c.out)
					}
					s, err := fio.Export(t, c.out, opts)
					if err != nil {
						return err
					}
					if n := s.Note(); n != "" {
						fmt.Fprintf(c.stderr, "note: %s (counts in %s)\n", n, c.out)
					}
					return nil
				},
			}
		},
	})
}

// readFioLogs reads the iologs of the inputs, rank 0 the first.
func readFioLogs(c *convertRun) (*imported, error) {
	paths := trace.NewPaths()
	var readers []*fio.Reader
	var srcs []trace.Source
	var closers []func() error
	closeAll := func() error {
		for _, cl := range closers {
			cl()
		}
		return nil
	}
	for i, name := range c.args {
		in, cl, err := c.openInput(name)
		if err != nil {
			closeAll()
			return nil, err
		}
		closers = append(closers, cl)
		label := name
		if name == "-" {
			label = "stdin"
		}
		rd := fio.NewReader(in, label, uint32(i), paths)
		readers = append(readers, rd)
		srcs = append(srcs, rd)
	}
	return &imported{
		src:  &concatSource{srcs: srcs, paths: paths},
		meta: c.importMeta(trace.Meta{Ranks: len(c.args), Clock: "fio iolog timestamps"}),
		notes: func() []string {
			skipped := map[string]int64{}
			for _, rd := range readers {
				for k, v := range rd.Skipped() {
					skipped[k] += v
				}
			}
			var n []string
			if skipped["trim"] > 0 {
				n = append(n, fmt.Sprintf("%d trims left out: the event model has no discard call", skipped["trim"]))
			}
			if skipped["wait"] > 0 {
				n = append(n, fmt.Sprintf("%d wait lines in version 3 logs left out, as fio ignores them", skipped["wait"]))
			}
			for _, rd := range readers {
				if rd.Version() == 2 {
					n = append(n, "version 2 iologs hold no times: calls start when the waits before them end and last 0 ns")
					break
				}
			}
			return n
		},
		close: closeAll,
	}, nil
}

// concatSource reads several sources that share one path table, one
// after the other.
type concatSource struct {
	srcs  []trace.Source
	paths *trace.Paths
}

func (s *concatSource) ReadEvents(evs []trace.Event) (int, error) {
	for len(s.srcs) > 0 {
		n, err := s.srcs[0].ReadEvents(evs)
		if err == io.EOF {
			s.srcs = s.srcs[1:]
			if n == 0 {
				continue
			}
			return n, nil
		}
		return n, err
	}
	return 0, io.EOF
}

func (s *concatSource) Path(id trace.PathID) string { return s.paths.Lookup(id) }
