// Package parquet writes traces as Apache Parquet: one row per event,
// typed columns named as the fields of the JSON-lines schema
// (docs/FORMAT.md), paths and op names as dictionary columns, for
// analysis in pandas, polars, DuckDB or Spark (docs/CONVERT.md).
//
// The file is written with github.com/parquet-go/parquet-go, in row groups
// of RowGroupRows rows compressed with zstd, so memory stays at one row
// group whatever the trace's length.
package parquet

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	pq "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/iotrace/iotrace/internal/outfile"
	"github.com/iotrace/iotrace/trace"
)

// Row is one event: the columns of the file. Ranks, threads,
// communicators, flags and modes are the event's unsigned 32-bit values
// in 64-bit columns (readers without unsigned types read them right);
// path and path2 are "" for none; errno is the name of -ret for a failed
// call; start and dur are nanoseconds (start from the trace's epoch).
type Row struct {
	Rank    int64  `parquet:"rank,delta"`
	Thread  int64  `parquet:"thread,delta"`
	Op      string `parquet:"op,dict"`
	Class   string `parquet:"class,dict"`
	Family  string `parquet:"family,dict"`
	Path    string `parquet:"path,dict"`
	Path2   string `parquet:"path2,dict"`
	FD      int32  `parquet:"fd"`
	Offset  int64  `parquet:"offset,delta"`
	Size    int64  `parquet:"size"`
	Ret     int64  `parquet:"ret"`
	Errno   string `parquet:"errno,dict"`
	Flags   int64  `parquet:"flags"`
	Mode    int64  `parquet:"mode"`
	Whence  int32  `parquet:"whence"`
	Peer    int32  `parquet:"peer"`
	Tag     int32  `parquet:"tag"`
	Source  int32  `parquet:"source"`
	RecvTag int32  `parquet:"recv_tag"`
	Comm    int64  `parquet:"comm"`
	Bytes   int64  `parquet:"bytes"`
	Count   int32  `parquet:"count"`
	Stride  int64  `parquet:"stride"`
	FD2     int32  `parquet:"fd2"`
	Offset2 int64  `parquet:"offset2"`
	Start   int64  `parquet:"start,delta"`
	Dur     int64  `parquet:"dur"`
}

// RowGroupRows is the number of rows of a row group.
const RowGroupRows = 1 << 18

// FromEvent fills row with e; path resolves path ids.
func FromEvent(row *Row, e *trace.Event, path func(trace.PathID) string) {
	info := e.Op.Info()
	*row = Row{
		Rank: int64(e.Rank), Thread: int64(e.Thread), Op: info.Name, Class: info.Class.String(), Family: info.Family,
		Path: path(e.Path), Path2: path(e.Path2), FD: e.FD, Offset: e.Offset, Size: e.Size, Ret: e.Ret,
		Flags: int64(e.Flags), Mode: int64(e.Mode), Whence: e.Whence, Peer: e.Peer, Tag: e.Tag,
		Source: e.Source, RecvTag: e.RecvTag, Comm: int64(e.Comm), Bytes: e.Bytes, Count: e.Count,
		Stride: e.Stride, FD2: e.FD2, Offset2: e.Offset2, Start: e.Start, Dur: e.Dur,
	}
	if e.Ret < 0 {
		switch info.Class {
		case trace.ClassPOSIX, trace.ClassMeta, trace.ClassMPIIO:
			row.Errno = trace.Errno(e.Ret)
		}
	}
}

// Writer writes events as Parquet rows.
type Writer struct {
	w    *pq.GenericWriter[Row]
	buf  []Row
	rows int64
}

// NewWriter returns a writer of a Parquet file to w, with the trace's
// metadata as key/value metadata.
func NewWriter(w io.Writer, m trace.Meta) *Writer {
	opts := []pq.WriterOption{
		pq.Compression(&zstd.Codec{Level: zstd.SpeedDefault}),
		pq.MaxRowsPerRowGroup(RowGroupRows),
		pq.CreatedBy("iotrace", "", ""),
	}
	if m.Creator != "" {
		opts = append(opts, pq.KeyValueMetadata("iotrace.creator", m.Creator))
	}
	return &Writer{w: pq.NewGenericWriter[Row](w, opts...), buf: make([]Row, 0, 1024)}
}

// Write writes events, path resolving their path ids.
func (w *Writer) Write(evs []trace.Event, path func(trace.PathID) string) error {
	for i := range evs {
		w.buf = append(w.buf, Row{})
		FromEvent(&w.buf[len(w.buf)-1], &evs[i], path)
		if len(w.buf) == cap(w.buf) {
			if err := w.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *Writer) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	n, err := w.w.Write(w.buf)
	w.rows += int64(n)
	w.buf = w.buf[:0]
	return err
}

// Rows returns the rows written so far.
func (w *Writer) Rows() int64 { return w.rows + int64(len(w.buf)) }

// Close writes what is buffered and the file's footer.
func (w *Writer) Close() error {
	if err := w.flush(); err != nil {
		return err
	}
	return w.w.Close()
}

// WriteTrace writes every rank of t, rank after rank, to one file.
func WriteTrace(w io.Writer, t trace.Trace) (int64, error) {
	pw := NewWriter(w, t.Meta())
	for _, r := range t.Ranks() {
		if err := copyRank(pw, t, r); err != nil {
			return pw.Rows(), err
		}
	}
	return pw.Rows(), pw.Close()
}

func copyRank(pw *Writer, t trace.Trace, r uint32) error {
	src, err := t.Rank(r)
	if err != nil {
		return err
	}
	if c, ok := src.(io.Closer); ok {
		defer c.Close()
	}
	buf := make([]trace.Event, trace.BatchSize)
	for {
		n, err := src.ReadEvents(buf)
		if werr := pw.Write(buf[:n], src.Path); werr != nil {
			return werr
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// WriteRanks writes every rank of t to its own file in dir,
// rank-NNNNN.parquet (the names of per-rank trace files), each whole or
// not at all, and returns the rows written.
func WriteRanks(dir string, t trace.Trace) (int64, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	var total int64
	for _, r := range t.Ranks() {
		name := filepath.Join(dir, fmt.Sprintf("rank-%05d.parquet", r))
		err := outfile.Write(name, nil, func(w io.Writer) error {
			pw := NewWriter(w, t.Meta())
			err := copyRank(pw, t, r)
			if err == nil {
				err = pw.Close()
			}
			total += pw.Rows()
			return err
		})
		if err != nil {
			return total, fmt.Errorf("%s: %w", name, err)
		}
	}
	return total, nil
}

// ReadRows reads every row of a Parquet file written by Writer (the
// round trip of tests and of tools that have no Parquet reader of their
// own); fn sees each batch.
func ReadRows(r io.ReaderAt, fn func([]Row) error) error {
	pr := pq.NewGenericReader[Row](r)
	defer pr.Close()
	buf := make([]Row, 1024)
	for {
		n, err := pr.Read(buf)
		if n > 0 {
			if ferr := fn(buf[:n]); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
