// Package fio converts between traces and fio's I/O logs: Export writes a
// fio job file with one version-3 iolog per rank, which `fio job.fio`
// replays as is; NewReader reads iologs of version 2 or 3 back into a
// trace.
//
// The iolog format, as fio 3.31+ reads it (iolog.c, read_iolog):
//
//	fio version 3 iolog
//	TIMESTAMP FILENAME add|open|close
//	TIMESTAMP FILENAME read|write|trim OFFSET LENGTH
//	TIMESTAMP FILENAME sync|datasync 0 0
//
// The timestamp counts microseconds from the start of the job (fio
// writes it with utime_since_now and sleeps for the difference between
// consecutive timestamps). Filenames are read with "%256s": at most 256
// bytes, no white space. LENGTH is read with "%u": at most 4 GiB − 1.
// Version 2 has no timestamp and adds "wait N 0" lines (N milliseconds
// from the start of the job; fio's documentation says microseconds, its
// code sleeps until N ms have passed since the job began).
package fio

import (
	"bufio"
	"io"
	"strconv"
)

// Header lines of the two versions.
const (
	headerV2 = "fio version 2 iolog"
	headerV3 = "fio version 3 iolog"
)

// maxLen is the largest LENGTH fio reads ("%u").
const maxLen = 1<<32 - 1

// maxName is the longest filename fio reads ("%256s").
const maxName = 256

// iologWriter writes a version-3 iolog.
type iologWriter struct {
	w    *bufio.Writer
	buf  []byte
	last int64 // last timestamp written (µs)
}

func newIologWriter(w io.Writer) (*iologWriter, error) {
	iw := &iologWriter{w: bufio.NewWriterSize(w, 256<<10)}
	_, err := iw.w.WriteString(headerV3 + "\n")
	return iw, err
}

// stamp keeps timestamps from going back: fio replays a timestamp lower
// than the one before with no delay but then measures the next delay from
// it.
func (iw *iologWriter) stamp(us int64) int64 {
	iw.last = max(iw.last, us, 1)
	return iw.last
}

// file writes a file action: add, open or close.
func (iw *iologWriter) file(us int64, name, action string) error {
	b := strconv.AppendInt(iw.buf[:0], iw.stamp(us), 10)
	b = append(b, ' ')
	b = append(b, name...)
	b = append(b, ' ')
	b = append(b, action...)
	b = append(b, '\n')
	iw.buf = b
	_, err := iw.w.Write(b)
	return err
}

// io writes an I/O action: read, write, sync, datasync.
func (iw *iologWriter) io(us int64, name, action string, off, n int64) error {
	b := strconv.AppendInt(iw.buf[:0], iw.stamp(us), 10)
	b = append(b, ' ')
	b = append(b, name...)
	b = append(b, ' ')
	b = append(b, action...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, off, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, n, 10)
	b = append(b, '\n')
	iw.buf = b
	_, err := iw.w.Write(b)
	return err
}

func (iw *iologWriter) flush() error { return iw.w.Flush() }
