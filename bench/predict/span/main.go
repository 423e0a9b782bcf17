// Command span prints how long the file I/O of a trace took, as the
// prediction benchmark (bench/predict/run.sh) measures it on both sides:
//
//	span TRACE…
//
// prints one line of key=value pairs:
//
//	span     seconds from the start of the first file call (of any rank) to
//	         the end of the last one: the application's I/O time in a
//	         capture, the predicted I/O time in a replay's own trace
//	calls    file calls: POSIX, metadata and MPI-IO calls (trace.ClassPOSIX,
//	         ClassMeta, ClassMPIIO); process events (fork, exec, exit,
//	         inherit), communication and markers neither open nor close the
//	         span, but communication inside it is part of it
//	busy     seconds spent inside file calls by the busiest rank (the sum
//	         of its calls' durations, its processes' and threads' added up;
//	         the POSIX calls an MPI library made inside an MPI-IO call,
//	         trace.InMPIIO, are not counted twice); for one rank of one
//	         thread, span − busy is its time between calls (computation,
//	         waits, the recorder's own cost)
//	lead     seconds from the trace's first event to the first file call
//	tail     seconds from the end of the last file call to the end of the
//	         trace's last event
//	first, last   the ops of the first and last file call
//
// Times are those the trace holds (every rank on rank 0's clock, as every
// iotrace command reads them).
package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: span TRACE…")
		os.Exit(2)
	}
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "span:", err)
		os.Exit(1)
	}
}

func isFileCall(op trace.Op) bool {
	switch op.Class() {
	case trace.ClassPOSIX, trace.ClassMeta, trace.ClassMPIIO:
		return true
	}
	return false
}

// result is what span prints, in nanoseconds.
type result struct {
	span, busy, lead, tail int64
	calls                  int64
	first, last            trace.Op
}

func run(names []string) error {
	res, err := measure(names...)
	if err != nil {
		return err
	}
	s := func(ns int64) float64 { return float64(ns) / 1e9 }
	fmt.Printf("span=%.6f calls=%d busy=%.6f lead=%.6f tail=%.6f first=%s last=%s\n",
		s(res.span), res.calls, s(res.busy), s(res.lead), s(res.tail), res.first.Info().Name, res.last.Info().Name)
	return nil
}

// measure reads the trace in names and measures its file calls.
func measure(names ...string) (result, error) {
	var res result
	r, err := format.Open(names...)
	if err != nil {
		return res, err
	}
	defer r.Close()
	var (
		first, last   int64 = math.MaxInt64, math.MinInt64 // file calls
		tFirst, tLast int64 = math.MaxInt64, math.MinInt64 // any event
	)
	buf := make([]trace.Event, trace.BatchSize)
	for _, rk := range r.Ranks() {
		src, err := r.Rank(rk)
		if err != nil {
			return res, err
		}
		var busy int64
		for {
			n, err := src.ReadEvents(buf)
			for i := range buf[:n] {
				e := &buf[i]
				end := e.Start + e.Dur
				tFirst, tLast = min(tFirst, e.Start), max(tLast, end)
				if !isFileCall(e.Op) {
					continue
				}
				res.calls++
				if e.Flags&trace.InMPIIO == 0 || e.Op.Class() == trace.ClassMPIIO {
					busy += e.Dur
				}
				if e.Start < first {
					first, res.first = e.Start, e.Op
				}
				if end > last {
					last, res.last = end, e.Op
				}
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return res, err
			}
		}
		if c, ok := src.(io.Closer); ok {
			c.Close()
		}
		res.busy = max(res.busy, busy)
	}
	if res.calls == 0 {
		return res, fmt.Errorf("%s: no file calls", names[0])
	}
	res.span, res.lead, res.tail = last-first, first-tFirst, tLast-last
	return res, nil
}
