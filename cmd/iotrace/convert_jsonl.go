package main

import (
	"fmt"
	"io"
	"os"

	"github.com/iotrace/iotrace/cmd/internal/cli"
	"github.com/iotrace/iotrace/convert/csv"
	"github.com/iotrace/iotrace/convert/jsonl"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
)

// convertFromJSONL streams the JSON lines of in ("-" for standard input)
// into the trace file out, one pass, one line in memory at a time; each
// event goes to the stream of its rank. A bad line stops the conversion
// with an error naming it ("in.jsonl:17: unknown field "sise"") and leaves
// no output file.
func convertFromJSONL(in, out string) error {
	return convertLinesToTrace(in, out, "jsonl", func(r io.Reader, name string) trace.Source {
		return jsonl.NewReader(r, name)
	})
}

// convertFromCSV is convertFromJSONL for CSV with a header row (the form
// 'iotrace dump --format csv' writes).
func convertFromCSV(in, out string) error {
	return convertLinesToTrace(in, out, "csv", func(r io.Reader, name string) trace.Source {
		return csv.NewReader(r, name)
	})
}

func convertLinesToTrace(in, out, from string, open func(io.Reader, string) trace.Source) error {
	var r io.Reader = os.Stdin
	name := "stdin"
	if in != "-" {
		f, err := os.Open(in)
		if err != nil {
			return err
		}
		defer f.Close()
		r, name = f, in
	}
	// A failed conversion leaves nothing behind; a good one appears whole.
	o, err := cli.CreateOutput(out)
	if err != nil {
		return err
	}
	defer o.Abort()
	meta := trace.Meta{
		Command: []string{"iotrace", "convert", "--from", from, "-o", out, in},
		Creator: "iotrace convert",
	}
	w, err := format.NewWriter(o, meta)
	if err != nil {
		return fmt.Errorf("%s: %w", out, err)
	}
	if _, err := trace.Copy(w, open(r, name)); err != nil {
		w.Close()
		return err
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("%s: %w", out, err)
	}
	return o.Commit()
}
