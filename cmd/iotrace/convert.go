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
	c := &cobra.Command{
		Use:   "convert [--from iot|jsonl|csv] [--to iot|jsonl|csv] -o OUT INPUT…",
		Short: "Convert traces between the binary format, JSON lines and CSV; expand scripts",
		Long: `convert reads a trace (trace files or a directory, a pattern script with
--ranks, or JSON lines) and writes it in another form. --from and --to default
to what the file names say: .jsonl is JSON lines, .csv is CSV, .iop a script,
anything else the binary format. JSON lines (schema in docs/FORMAT.md) may
come from any tool; a bad line stops the conversion with its line number.
-o - writes to standard output (text forms only).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
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
			return fmt.Errorf("--to %q: want iot, jsonl or csv", to)
		},
	}
	in.AddFlags(c.Flags())
	c.Flags().StringVar(&from, "from", "", "input form: iot (trace files, directories, scripts), jsonl or csv")
	c.Flags().StringVar(&to, "to", "", "output form: iot, jsonl or csv")
	c.Flags().StringVarP(&out, "output", "o", "", "file to write")
	return c
}

// writeBinary writes the trace t to a trace file, through a temporary
// file so that a failed conversion leaves nothing behind.
func writeBinary(out string, t trace.Trace) error {
	o, err := cli.CreateOutput(out)
	if err != nil {
		return err
	}
	defer o.Abort()
	w, err := format.NewWriter(o, t.Meta())
	if err != nil {
		return err
	}
	for _, r := range t.Ranks() {
		rs, err := t.Rank(r)
		if err != nil {
			w.Close()
			return err
		}
		if _, err := trace.Copy(w.Rank(r), rs); err != nil {
			w.Close()
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	return o.Commit()
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
