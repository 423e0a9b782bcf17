package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

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

func convertLinesToTrace(in, out, from string, open func(io.Reader, string) trace.Source) (err error) {
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
	// Write a temporary file next to out and rename it at the end, so that
	// a failed conversion leaves nothing behind and a good one appears
	// whole.
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	meta := trace.Meta{
		Command: []string{"iotrace", "convert", "--from", from, "-o", out, in},
		Creator: "iotrace convert",
	}
	w, err := format.NewWriter(tmp, meta)
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
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("%s: %w", out, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), out)
}
