package csv

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/iotrace/iotrace/convert/internal/textutil"
	"github.com/iotrace/iotrace/convert/schema"
	"github.com/iotrace/iotrace/trace"
)

// Reader reads events from CSV with a header row. It is a trace.Source
// whose events carry their Rank. The header names the columns, in any
// order; columns left out, and empty cells, are 0 or empty. Rows follow the
// rules of the JSON-lines schema (a CSV cell holds what a JSON value would,
// without the quotes), and errors name the line: "in.csv:7: field "size":
// negative (-1)".
type Reader struct {
	r      *csv.Reader
	name   string
	b      *schema.Builder
	cols   []schema.Field
	header bool
	err    error
}

// NewReader returns a Reader of r; name starts every error message.
func NewReader(r io.Reader, name string) *Reader {
	cr := csv.NewReader(textutil.CSVRecords(r, name))
	cr.ReuseRecord = true
	return &Reader{r: cr, name: name, b: schema.NewBuilder()}
}

// Path implements trace.Source.
func (r *Reader) Path(id trace.PathID) string { return r.b.Paths().Lookup(id) }

// Paths returns the table the events' path ids refer to.
func (r *Reader) Paths() *trace.Paths { return r.b.Paths() }

func (r *Reader) lineErr(line int, err error) error {
	return &schema.LineError{Name: r.name, Line: line, Err: err}
}

// csvErr turns an error of encoding/csv into a line error.
func (r *Reader) csvErr(err error) error {
	var le *schema.LineError
	if errors.As(err, &le) {
		return le
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return r.lineErr(pe.Line, pe.Err)
	}
	return fmt.Errorf("%s: %w", r.name, err)
}

func (r *Reader) readHeader() error {
	rec, err := r.r.Read()
	if errors.Is(err, io.EOF) {
		return r.lineErr(1, errors.New("no header row"))
	}
	if err != nil {
		return r.csvErr(err)
	}
	line, _ := r.r.FieldPos(0)
	seen := map[schema.Field]bool{}
	for i, name := range rec {
		if i == 0 {
			name = string(bytes.TrimPrefix([]byte(name), []byte("\xef\xbb\xbf")))
		}
		f, ok := schema.LookupField(name)
		if !ok {
			return r.lineErr(line, fmt.Errorf("unknown column %q", name))
		}
		if seen[f] {
			return r.lineErr(line, fmt.Errorf("column %q given twice", name))
		}
		seen[f] = true
		r.cols = append(r.cols, f)
	}
	r.header = true
	return nil
}

// Read reads the next event into e. At the end of the input it returns
// io.EOF.
func (r *Reader) Read(e *trace.Event) error {
	if r.err != nil {
		return r.err
	}
	if !r.header {
		if r.err = r.readHeader(); r.err != nil {
			return r.err
		}
	}
	rec, err := r.r.Read()
	if err != nil {
		if !errors.Is(err, io.EOF) {
			err = r.csvErr(err)
		}
		r.err = err
		return err
	}
	if err := r.row(rec, e); err != nil {
		line, _ := r.r.FieldPos(0)
		r.err = r.lineErr(line, err)
		return r.err
	}
	return nil
}

func (r *Reader) row(rec []string, e *trace.Event) error {
	r.b.Begin(e)
	for i, cell := range rec {
		if cell == "" {
			continue
		}
		f := r.cols[i]
		if f.Kind() == schema.KindInt {
			v, err := strconv.ParseInt(cell, 10, 64)
			if err != nil {
				return fmt.Errorf("field %q: %q is not an integer", f, cell)
			}
			if err := r.b.SetInt(f, v); err != nil {
				return err
			}
			continue
		}
		if err := r.b.SetString(f, []byte(cell)); err != nil {
			return err
		}
	}
	return r.b.End()
}

// ReadEvents implements trace.Source.
func (r *Reader) ReadEvents(evs []trace.Event) (int, error) {
	for n := range evs {
		if err := r.Read(&evs[n]); err != nil {
			if n > 0 && errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, err
		}
	}
	return len(evs), nil
}
