// Command gentrace writes the traces of the replay benchmarks
// (bench/replay/run.sh):
//
//	gentrace pwrite  -o OUT -calls N -path P           one rank: open, N × 4 KiB pwrite at (i mod 256) × 4 KiB, close
//	gentrace gaps    -o OUT -calls N -gap D -path P    one rank: open, N × 4 KiB pwrite D apart (start to start), close
//	gentrace barrier -o OUT -ranks R -calls N -every K  R ranks, each: open own file, N × 4 KiB pwrite with an MPI_Barrier every K calls, close
//	gentrace dense   -o OUT -calls N -path P           one rank: open, N × 4 KiB pwrite of 1 µs, each 0 to 5 µs (uniform, seeded) after the previous ended, close
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: gentrace pwrite|gaps|barrier|dense [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	out := fs.String("o", "", "trace file to write")
	calls := fs.Int("calls", 200000, "calls per rank")
	ranks := fs.Int("ranks", 1, "ranks (barrier)")
	every := fs.Int("every", 100, "calls between barriers (barrier)")
	gap := fs.Duration("gap", 500*time.Microsecond, "start-to-start gap between calls (gaps)")
	path := fs.String("path", "/bench/replay.dat", "file the calls write")
	fs.Parse(os.Args[2:])
	if *out == "" {
		fmt.Fprintln(os.Stderr, "gentrace: -o is required")
		os.Exit(2)
	}
	if err := write(os.Args[1], *out, *calls, *ranks, *every, *gap, *path); err != nil {
		fmt.Fprintln(os.Stderr, "gentrace:", err)
		os.Exit(1)
	}
}

func write(kind, out string, calls, ranks, every int, gap time.Duration, path string) error {
	if kind != "barrier" {
		ranks = 1
	}
	w, err := format.Create(out, trace.Meta{Command: os.Args, Clock: "nominal", Ranks: ranks, Creator: "bench/replay/gentrace"})
	if err != nil {
		return err
	}
	const fd, bs = 3, 4096
	rng := rand.New(rand.NewPCG(1, 2))
	for r := 0; r < ranks; r++ {
		p := path
		if kind == "barrier" {
			p = fmt.Sprintf("%s.%d", path, r)
		}
		id := w.Intern(p)
		var evs []trace.Event
		t := int64(0)
		add := func(e trace.Event, dur int64) {
			e.Rank, e.Start, e.Dur = uint32(r), t, dur
			evs = append(evs, e)
		}
		add(trace.Event{Op: trace.OpOpen, Path: id, Flags: trace.OWronly | trace.OCreat | trace.OTrunc, Mode: 0o644, FD: fd, Ret: fd}, 5000)
		t += 10000
		for i := 0; i < calls; i++ {
			if kind == "barrier" && i > 0 && i%every == 0 {
				add(trace.Event{Op: trace.OpMPIBarrier, Comm: trace.CommWorld}, 2000)
				t += 3000
			}
			add(trace.Event{Op: trace.OpPwrite, FD: fd, Offset: int64(i%256) * bs, Size: bs, Ret: bs}, 1000)
			switch kind {
			case "gaps":
				t += int64(gap)
			case "dense":
				t += 1000 + rng.Int64N(5001)
			default:
				t += 1500
			}
		}
		add(trace.Event{Op: trace.OpClose, FD: fd}, 2000)
		if err := w.Rank(uint32(r)).WriteEvents(evs); err != nil {
			w.Close()
			return err
		}
	}
	return w.Close()
}
