package convert

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/iotrace/iotrace/convert/chrome"
	"github.com/iotrace/iotrace/convert/csv"
	"github.com/iotrace/iotrace/convert/darshan"
	"github.com/iotrace/iotrace/convert/dxt"
	"github.com/iotrace/iotrace/convert/fio"
	"github.com/iotrace/iotrace/convert/jsonl"
	"github.com/iotrace/iotrace/convert/recorder"
	"github.com/iotrace/iotrace/internal/outfile"
	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/script/fold"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
	"github.com/iotrace/iotrace/trace/target"
)

// binaryForm is iotrace's own: trace files, and pattern scripts read as
// the trace they make (Opener).
var binaryForm = &Format{
	Name:   Binary,
	Reads:  "trace files or a directory of them (docs/FORMAT.md); a pattern script (.iop) with --ranks",
	Writes: "a trace file",
	// The binary form is also what Guess falls back on; its magic spares
	// a trace the other forms' sniffers (the strace pattern, the text
	// forms' searches of the head).
	Sniff: func(head []byte) bool { return strings.HasPrefix(string(head), format.Magic) },
	Bind: func(*flag.FlagSet) Codec {
		return Codec{
			Import: func(in *Input) (*Imported, error) {
				t, err := in.opener.openBinary(in.Names)
				if err != nil {
					return nil, err
				}
				return &Imported{Trace: t}, nil
			},
			Export: func(out *Output, t trace.Trace) error {
				_, err := WriteTrace(out.Name, t)
				return err
			},
		}
	},
}

// lineForm is a form of one event per line that reads back: JSON lines
// and CSV.
func lineForm(name, desc string, read func(io.Reader, string) trace.Source) *Format {
	return &Format{
		Name: name, Reads: desc, Writes: desc, Exts: []string{"." + name},
		Bind: func(*flag.FlagSet) Codec {
			return Codec{
				Import: func(in *Input) (*Imported, error) {
					if err := in.One(); err != nil {
						return nil, err
					}
					r, closeIn, err := in.Open(in.Names[0])
					if err != nil {
						return nil, err
					}
					return &Imported{Events: read(r, Label(in.Names[0])), Meta: in.Meta(trace.Meta{}), Close: closeIn}, nil
				},
				Export: func(out *Output, t trace.Trace) error {
					return out.Write(func(w io.Writer) error {
						lw, err := NewLineWriter(name, w)
						if err != nil {
							return err
						}
						return WriteLines(lw, t)
					})
				},
				Stdout: true,
			}
		},
	}
}

var jsonlForm = lineForm("jsonl", "JSON lines: one object per event (schema in docs/FORMAT.md); any tool can write them",
	func(r io.Reader, name string) trace.Source { return jsonl.NewReader(r, name) })

var csvForm = lineForm("csv", "CSV with a header row: one row per event, every field of the JSON-lines schema",
	func(r io.Reader, name string) trace.Source { return csv.NewReader(r, name) })

// dxtForm is the text darshan-dxt-parser prints.
var dxtForm = &Format{
	Name:  "dxt",
	Reads: "the text of darshan-dxt-parser (X_POSIX and X_MPIIO records); DXT has no opens: POSIX descriptors are inherit events, MPI_File_open is made in a region saying so",
	Sniff: func(head []byte) bool {
		return (hasPrefixLine(head, "# darshan log version") && !darshan.Sniff(head)) || strings.Contains(string(head), "\n# DXT, file_id: ") ||
			hasPrefixLine(head, "# DXT, file_id: ") || strings.Contains(string(head), "# DXT_POSIX module data") ||
			strings.Contains(string(head), "# DXT_MPIIO module data")
	},
	Bind: func(fs *flag.FlagSet) Codec {
		layer := fs.String("layer", "auto", "dxt: calls to keep: auto (MPI-IO where a rank used a file through MPI-IO, POSIX elsewhere), mpiio, posix or all")
		return Codec{Import: func(in *Input) (*Imported, error) {
			if err := in.One(); err != nil {
				return nil, err
			}
			r, closeIn, err := in.Open(in.Names[0])
			if err != nil {
				return nil, err
			}
			defer closeIn()
			t, err := dxt.Read(r, Label(in.Names[0]), dxt.Options{Layer: *layer})
			if err != nil {
				return nil, err
			}
			return &Imported{Trace: t, Notes: t.Notes}, nil
		}}
	},
}

// darshanForm is the text darshan-parser prints of a log's counters (DXT
// off), made into a pattern script whose expansion has the log's counters.
var darshanForm = &Format{
	Name:  "darshan",
	Reads: "the text of darshan-parser (a Darshan log's counters, DXT off; gzip too): a pattern script whose expansion has the log's counters (-o X.iop writes the script)",
	Sniff: func(head []byte) bool {
		return darshan.Sniff(head) || (len(head) > 1 && head[0] == 0x1f && head[1] == 0x8b)
	},
	Bind: func(*flag.FlagSet) Codec {
		return Codec{Import: func(in *Input) (*Imported, error) {
			if err := in.One(); err != nil {
				return nil, err
			}
			r, closeIn, err := in.Open(in.Names[0])
			if err != nil {
				return nil, err
			}
			defer closeIn()
			t, err := darshan.Read(r, Label(in.Names[0]))
			if err != nil {
				return nil, err
			}
			return &Imported{Trace: t, Notes: t.Notes}, nil
		}}
	},
}

// recorderForm is a Recorder trace directory.
var recorderForm = &Format{
	Name:     "recorder",
	Reads:    "a Recorder 2.4/2.5 trace directory (VERSION, recorder.mt, RANK.cst/.cfg/.ts): its POSIX, MPI-IO and MPI calls; calls iotrace has no op for are marks",
	SniffDir: recorder.Sniff,
	Bind: func(*flag.FlagSet) Codec {
		return Codec{Import: func(in *Input) (*Imported, error) {
			if err := in.One(); err != nil {
				return nil, err
			}
			t, err := recorder.Open(in.Names[0])
			if err != nil {
				return nil, err
			}
			return &Imported{Trace: t, Notes: t.Notes}, nil
		}}
	},
}

// fioForm: a job file with one iolog per rank; iologs back into a trace.
var fioForm = &Format{
	Name:   "fio",
	Reads:  "fio iologs, version 2 or 3 (write_iolog), one rank per file in the order given",
	Writes: "a fio job file (-o JOB.fio) and one version-3 iolog per rank beside it; run with fio JOB.fio",
	Exts:   []string{".fio"},
	Sniff: func(head []byte) bool {
		return hasPrefixLine(head, "fio version 2 iolog") || hasPrefixLine(head, "fio version 3 iolog")
	},
	Bind: func(fs *flag.FlagSet) Codec {
		dir := fs.String("target", "", "fio: directory the replayed files go to (default: the job file's directory, names relative to it)")
		var maps listValue
		fs.Var(&maps, "map", "fio: place trace paths under OLD at NEW in the target, as ioreplay --map (`OLD=NEW`, repeatable)")
		timing := fs.String("timing", "original", "fio: original (fio sleeps the recorded gaps) or afap (replay_no_stall=1)")
		speed := fs.Float64("speed", 1, "fio: rate factor of original timing (replay_time_scale = 100 × speed)")
		return Codec{
			Import: importFio,
			Export: func(out *Output, t trace.Trace) error {
				opts := fio.ExportOptions{Target: *dir, Speed: *speed, Source: strings.Join(out.Inputs, " ")}
				switch *timing {
				case "original":
				case "afap":
					opts.NoStall = true
				case "think":
					return fmt.Errorf("--timing think: fio has no think-time replay (it sleeps the recorded gap from the previous call's issue); use original or afap")
				default:
					return fmt.Errorf("--timing %q: want original or afap", *timing)
				}
				for _, m := range maps {
					r, err := target.ParseMapRule(m)
					if err != nil {
						return err
					}
					opts.Map = append(opts.Map, r)
				}
				if filepath.Ext(out.Name) != ".fio" {
					return fmt.Errorf("-o %s: name the job file NAME.fio (its iologs go beside it)", out.Name)
				}
				s, err := fio.Export(t, out.Name, opts)
				if err != nil {
					return err
				}
				if n := s.Note(); n != "" {
					out.Note(fmt.Sprintf("%s (counts in %s)", n, out.Name))
				}
				return nil
			},
		}
	},
}

// importFio reads the iologs of the inputs, rank 0 the first.
func importFio(in *Input) (*Imported, error) {
	paths := trace.NewPaths()
	var readers []*fio.Reader
	var srcs []trace.Source
	var closers closers
	for i, name := range in.Names {
		r, cl, err := in.Open(name)
		if err != nil {
			closers.close()
			return nil, err
		}
		closers = append(closers, cl)
		rd := fio.NewReader(r, Label(name), uint32(i), paths)
		readers = append(readers, rd)
		srcs = append(srcs, rd)
	}
	return &Imported{
		Events: &concatSource{srcs: srcs, paths: paths},
		Meta:   in.Meta(trace.Meta{Ranks: len(in.Names), Clock: "fio iolog timestamps"}),
		Notes:  func() []string { return fioNotes(readers) },
		Close:  closers.close,
	}, nil
}

// fioNotes says what iologs held that the trace cannot.
func fioNotes(readers []*fio.Reader) []string {
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
}

// chromeForm is a timeline for Perfetto and chrome://tracing.
var chromeForm = &Format{
	Name:   "chrome",
	Writes: "Chrome trace-event JSON for Perfetto (ui.perfetto.dev) and chrome://tracing: a track per rank and thread, flow arrows for messages and collectives",
	Exts:   []string{".json"},
	Bind: func(*flag.FlagSet) Codec {
		return Codec{
			Export: func(out *Output, t trace.Trace) error {
				var s *chrome.Summary
				err := out.Write(func(w io.Writer) error {
					var err error
					s, err = chrome.Write(w, t)
					return err
				})
				if err != nil {
					return err
				}
				if n := s.Note(); n != "" {
					out.Note(n)
				}
				return nil
			},
			Stdout: true,
		}
	},
}

// parquetForm is Apache Parquet, one row per event. Its codec is
// convert/parquet's (SetCodec), linked only by a program that imports
// that package: the Parquet writer, its compression codecs and protobuf
// are half of a program that writes no other form (ioreplay: 26 MB with
// them, 14 MB without, and 1 ms of its start-up).
var parquetForm = &Format{
	Name:   "parquet",
	Writes: "Apache Parquet: one row per event, typed columns (the JSON-lines fields), paths and ops as dictionary columns, zstd; for pandas, polars, DuckDB",
	Exts:   []string{".parquet"},
}

// scriptForm is a trace folded into a pattern script.
var scriptForm = &Format{
	Name:   "script",
	Writes: "a pattern script that makes the same calls, rank by rank, folded into loops (docs/SCRIPT.md, \"Converting traces to scripts\"); without -o, to standard output",
	Exts:   []string{".iop"},
	Bind: func(fs *flag.FlagSet) Codec {
		o := &scriptOptions{}
		fs.BoolVar(&o.explain, "explain", false, "--to script: print what was folded: per rank, and the calls each line of the script makes")
		fs.BoolVar(&o.noVerify, "no-verify", false, "--to script: do not run the script to check it makes the trace's calls")
		fs.IntVar(&o.window, "window", 0, "--to script: longest loop body (in commands or loops) to look for (default 256)")
		fs.DurationVar(&o.keepSleep, "keep-sleep", 0, "--to script: think time at least this long stays before its call (default 100µs); shorter gaps are pooled per loop body")
		fs.DurationVar(&o.minSleep, "min-sleep", 0, "--to script: pooled think time shorter than this is dropped (default 1µs)")
		return Codec{Export: func(out *Output, t trace.Trace) error { return exportScript(out, t, o) }, Stdout: true}
	},
}

// scriptOptions are the options of --to script.
type scriptOptions struct {
	explain   bool
	noVerify  bool
	window    int
	keepSleep time.Duration
	minSleep  time.Duration
}

// Scripted is a trace that is the expansion of a pattern script an
// importer made (convert/darshan): --to script writes that script as it
// was made rather than folding the trace.
type Scripted interface {
	PatternScript() []byte
}

// exportScript folds t into a pattern script, checks that the script
// makes the trace's calls, and writes it.
func exportScript(out *Output, t trace.Trace, o *scriptOptions) error {
	if s, ok := t.(Scripted); ok {
		return out.Write(func(w io.Writer) error { _, err := w.Write(s.PatternScript()); return err })
	}
	name := strings.Join(out.Inputs, " ")
	res, err := fold.Convert(t, fold.Options{Window: o.window, KeepSleep: o.keepSleep, MinSleep: o.minSleep,
		Source: filepath.Base(name)})
	if err != nil {
		return fmt.Errorf("%s: cannot write it as a script: %w", name, err)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(out.Stderr, "warning: %s\n", w)
	}
	src := script.Format(res.File)
	toStdout := out.Name == "" || out.Name == "-"
	scriptName := out.Name
	if toStdout {
		scriptName = "converted.iop"
	}
	if !o.noVerify {
		if err := fold.Verify(t, scriptName, src, res.Ranks); err != nil {
			// What the converter let through but the language cannot
			// make: one line naming the rank, the call and the field.
			return fmt.Errorf("%s: cannot write it as a script exactly: %w", name, err)
		}
	}
	report := out.Stdout
	if toStdout {
		report = out.Stderr
	}
	if err := writeOutput(out.Name, out.Stdout, func(w io.Writer) error { _, err := w.Write(src); return err }); err != nil {
		return err
	}
	if o.explain {
		return fold.Explain(report, res, scriptName, src)
	}
	return nil
}

// WriteTrace writes the trace t to the trace file out, whole or not at
// all, and returns the number of events written.
func WriteTrace(out string, t trace.Trace) (int64, error) {
	var n int64
	err := writeTrace(out, func(w *format.Writer) error {
		for _, r := range t.Ranks() {
			rs, err := t.Rank(r)
			if err != nil {
				return err
			}
			k, err := trace.Copy(w.Rank(r), rs)
			closeSource(rs)
			n += k
			if err != nil {
				return err
			}
		}
		return nil
	}, t.Meta())
	return n, err
}

// writeTrace writes a trace file through write, whole or not at all.
func writeTrace(out string, write func(*format.Writer) error, m trace.Meta) error {
	o, err := outfile.Create(out)
	if err != nil {
		return err
	}
	defer o.Abort()
	w, err := format.NewWriter(o, m)
	if err != nil {
		return fmt.Errorf("%s: %w", out, err)
	}
	if err := write(w); err != nil {
		w.Close()
		return err
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("%s: %w", out, err)
	}
	return o.Commit()
}

// writeOutput writes to standard output for "" and "-", else to the file
// name whole or not at all.
func writeOutput(name string, stdout io.Writer, write func(io.Writer) error) error {
	return outfile.Write(name, stdout, write)
}

func closeSource(src trace.Source) {
	if c, ok := src.(io.Closer); ok {
		c.Close()
	}
}

// closers close several inputs.
type closers []func() error

func (c closers) close() error {
	for _, cl := range c {
		cl()
	}
	return nil
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
