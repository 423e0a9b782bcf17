package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/convert/csv"
	"github.com/iotrace/iotrace/convert/jsonl"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
	"github.com/spf13/cobra"
)

func init() { commands = append(commands, newConvertCmd) }

func newConvertCmd() *cobra.Command {
	var in cli.Input
	var from, to, out string
	var sopt scriptOptions
	c := &cobra.Command{
		Use:   "convert [--from iot|jsonl|csv] [--to iot|jsonl|csv|script] -o OUT INPUT…",
		Short: "Convert traces between the binary format, JSON lines and CSV; expand scripts; fold traces into scripts",
		Long: `convert reads a trace (trace files or a directory, a pattern script with
--ranks, or JSON lines) and writes it in another form. --from and --to default
to what the file names say: .jsonl is JSON lines, .csv is CSV, .iop a script,
anything else the binary format. JSON lines (schema in docs/FORMAT.md) may
come from any tool; a bad line stops the conversion with its line number.
-o - writes to standard output (text forms only).

--to script (or -o OUT.iop) folds the trace into a pattern script that makes
the same calls, rank by rank (docs/SCRIPT.md, "Converting traces to
scripts"); without -o it goes to standard output.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" && to != "script" {
				return fmt.Errorf("-o OUT is required")
			}
			if from == "" {
				from = "iot"
				switch {
				case strings.HasSuffix(args[0], ".jsonl"):
					from = "jsonl"
				case strings.HasSuffix(args[0], ".csv"):
					from = "csv"
				}
			}
			if to == "" {
				switch filepath.Ext(out) {
				case ".jsonl":
					to = "jsonl"
				case ".csv":
					to = "csv"
				case ".iop":
					to = "script"
				default:
					to = "iot"
				}
			}
			var src trace.Source
			var t trace.Trace
			switch from {
			case "jsonl", "csv":
				if len(args) != 1 {
					return fmt.Errorf("--from %s reads one file (or - for standard input)", from)
				}
				if to == "iot" {
					if out == "-" {
						return fmt.Errorf("the binary format is not written to standard output; give -o FILE")
					}
					if from == "csv" {
						return convertFromCSV(args[0], out)
					}
					return convertFromJSONL(args[0], out)
				}
				var r io.Reader = cmd.InOrStdin()
				name := "stdin"
				if args[0] != "-" {
					f, err := os.Open(args[0])
					if err != nil {
						return err
					}
					defer f.Close()
					r, name = f, args[0]
				}
				if from == "csv" {
					src = csv.NewReader(r, name)
				} else {
					src = jsonl.NewReader(r, name)
				}
			case "iot":
				var err error
				t, err = in.Open(args, scriptOpener, cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				defer t.Close()
			default:
				return fmt.Errorf("--from %q: want iot, jsonl or csv", from)
			}
			switch to {
			case "script":
				if t == nil {
					return fmt.Errorf("--to script reads a trace (binary trace files or a script), not --from %s: convert it to a trace first", from)
				}
				return convertToScript(cmd, t, args, out, &sopt)
			case "iot":
				if out == "-" {
					return fmt.Errorf("the binary format is not written to standard output; give -o FILE")
				}
				return writeBinary(out, t)
			case "jsonl", "csv":
				w := cmd.OutOrStdout()
				if out != "-" {
					f, err := os.Create(out)
					if err != nil {
						return err
					}
					defer f.Close()
					w = f
				}
				lw, err := newLineWriter(to, w)
				if err != nil {
					return err
				}
				if t != nil {
					return writeLines(lw, t, nil, nil)
				}
				return copyLines(lw, src)
			}
			return fmt.Errorf("--to %q: want iot, jsonl, csv or script", to)
		},
	}
	in.AddFlags(c.Flags())
	c.Flags().StringVar(&from, "from", "", "input form: iot (trace files, directories, scripts), jsonl or csv")
	c.Flags().StringVar(&to, "to", "", "output form: iot, jsonl, csv or script")
	sopt.addFlags(c)
	c.Flags().StringVarP(&out, "output", "o", "", "file to write")
	return c
}

// writeBinary writes the trace t to a trace file, through a temporary
// file so that a failed conversion leaves nothing behind.
func writeBinary(out string, t trace.Trace) error {
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*.tmp")
	if err != nil {
		return err
	}
	tmp.Close()
	w, err := format.Create(tmp.Name(), t.Meta())
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	fail := func(err error) error {
		w.Close()
		os.Remove(tmp.Name())
		return err
	}
	for _, r := range t.Ranks() {
		rs, err := t.Rank(r)
		if err != nil {
			return fail(err)
		}
		if _, err := trace.Copy(w.Rank(r), rs); err != nil {
			return fail(err)
		}
	}
	if err := w.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), out)
}

func copyLines(lw lineWriter, src trace.Source) error {
	buf := make([]trace.Event, trace.BatchSize)
	for {
		n, err := src.ReadEvents(buf)
		for i := range buf[:n] {
			if werr := lw.Write(&buf[i], src.Path); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return lw.Flush()
		}
		if err != nil {
			return err
		}
	}
}
