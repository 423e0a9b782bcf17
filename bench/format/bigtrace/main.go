// Command bigtrace writes and reads a large generated trace and reports
// time, bytes per event and peak memory, for docs/BENCHMARKS.md (d).
//
//	bigtrace write FILE EVENTS   # IOR-like pattern over 16 ranks
//	bigtrace read FILE
//
// Each phase runs in its own process so that its peak RSS is its own.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
	"github.com/iotrace/iotrace/trace/tracegen"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bigtrace:", err)
		os.Exit(1)
	}
}

func peakRSS() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Maxrss) / 1024 // KiB -> MiB
}

func run(args []string) error {
	if len(args) < 2 {
		return errors.New("usage: bigtrace write FILE EVENTS | bigtrace read FILE")
	}
	start := time.Now()
	switch args[0] {
	case "write":
		if len(args) != 3 {
			return errors.New("usage: bigtrace write FILE EVENTS")
		}
		n, err := strconv.Atoi(args[2])
		if err != nil {
			return err
		}
		const ranks = 16
		calls := (n/ranks - 4) / 2
		t := tracegen.IOR(ranks, calls, 1)
		w, err := format.Create(args[1], t.Meta())
		if err != nil {
			return err
		}
		var total int64
		for _, r := range t.Ranks() {
			src, _ := t.Rank(r)
			k, err := trace.Copy(w.Rank(r), src)
			if err != nil {
				return err
			}
			total += k
		}
		if err := w.Close(); err != nil {
			return err
		}
		st, _ := os.Stat(args[1])
		el := time.Since(start).Seconds()
		fmt.Printf("write events=%d bytes=%d bytes_per_event=%.3f seconds=%.2f events_per_s=%.0f peak_rss_mib=%.1f\n",
			total, st.Size(), float64(st.Size())/float64(total), el, float64(total)/el, peakRSS())
	case "read":
		r, err := format.Open(args[1])
		if err != nil {
			return err
		}
		buf := make([]trace.Event, trace.BatchSize)
		var total, bytes int64
		for _, rk := range r.Ranks() {
			src, _ := r.Rank(rk)
			for {
				k, err := src.ReadEvents(buf)
				for i := range buf[:k] {
					bytes += buf[i].Size
				}
				total += int64(k)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return err
				}
			}
		}
		r.Close()
		el := time.Since(start).Seconds()
		fmt.Printf("read events=%d seconds=%.2f events_per_s=%.0f peak_rss_mib=%.1f (checksum %d)\n", total, el, float64(total)/el, peakRSS(), bytes)
	default:
		return fmt.Errorf("unknown phase %q", args[0])
	}
	return nil
}
