package session

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/target"
	"github.com/iotrace/iotrace/trace/units"
	"golang.org/x/sys/unix"
)

// showProgress shows, on the lead, how far the replay got on w (a
// terminal), every second from the second second on, until the returned
// function is called.
func showProgress(w io.Writer, rp *replay.Replay, lead bool) (stop func()) {
	if w == nil || !lead {
		return func() {}
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		start := time.Now()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		shown := false
		for {
			select {
			case <-done:
				if shown {
					fmt.Fprint(w, "\r\033[K")
				}
				return
			case <-tick.C:
				el := time.Since(start)
				if el < 2*time.Second {
					continue
				}
				d, total := rp.Progress()
				fmt.Fprintf(w, "\r\033[Kioreplay: %s", progressLine(d, total, rp.Moved(), el))
				shown = true
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// progressLine says how far a replay got: the share of its events done,
// the time since it started, the time left at the pace so far (ETA), and
// the bytes read and written per second.
func progressLine(done, total, moved int64, elapsed time.Duration) string {
	pct := 100.0
	if total > 0 {
		pct = 100 * float64(min(done, total)) / float64(total)
	}
	eta := "-"
	if done > 0 && done < total {
		eta = units.Duration(int64(float64(elapsed) * float64(total-done) / float64(done))) // the pace so far
	}
	rate := float64(moved) / elapsed.Seconds()
	return fmt.Sprintf("%5.1f %% (%d of %d events), %s elapsed, ETA %s, %s/s", pct, done, total,
		units.Duration(int64(elapsed.Round(time.Second))), eta, units.Bytes(int64(rate)))
}

// writeDryRun writes what a replay would do: the path mapping, what it
// prepares, the calls per rank, and how the team shares them.
func writeDryRun(w io.Writer, rp *replay.Replay, dir string, sparse bool, team string) error {
	bw := bufio.NewWriter(w)
	p := rp.Plan()
	space := func() string {
		need, files := p.SpaceNeed(dir, sparse)
		s := fmt.Sprintf("space: up to %s in %s", units.Bytes(need), replay.Files(files))
		if dir != "" {
			var st unix.Statfs_t
			if unix.Statfs(dir, &st) == nil {
				s += fmt.Sprintf("; the target's file system has %s free", units.Bytes(int64(st.Bavail)*max(st.Frsize, 1)))
			}
		}
		return s
	}()
	if dir == "" {
		dir = "(a new temporary directory)"
	}
	fmt.Fprintf(bw, "dry run: %d ranks, %d events, timing %s, target %s\n", len(p.Ranks), p.Events, rp.Timing(), dir)
	fmt.Fprintf(bw, "\npaths (common prefix %s):\n", p.Prefix)
	for _, e := range p.Paths {
		switch e.Note {
		case target.NoteSpecial:
			fmt.Fprintf(bw, "  %q -> (skipped: /dev, /proc or /sys)\n", e.Trace)
		case target.NoteKernel:
			fmt.Fprintf(bw, "  %q -> (skipped: pipe, socket or other kernel object)\n", e.Trace)
		case target.NoteClamped:
			fmt.Fprintf(bw, "  %q -> %q (\"..\" kept inside the target)\n", e.Trace, e.Target)
		default:
			fmt.Fprintf(bw, "  %q -> %q\n", e.Trace, e.Target)
		}
	}
	fmt.Fprintf(bw, "\ndirectories to create: %d\n", len(p.Dirs))
	for _, d := range p.Dirs {
		fmt.Fprintf(bw, "  %q\n", d)
	}
	fmt.Fprintf(bw, "\nfiles to prepare: %d (%s)\n", len(p.Files), units.Bytes(p.Bytes()))
	for _, fl := range p.Files {
		fmt.Fprintf(bw, "  %q %d bytes\n", fl.Path, fl.Size)
	}
	fmt.Fprintf(bw, "\n%s\n", space)
	if n, ns := p.LibCosts(); n > 0 {
		what := "not kept as fast as possible"
		if rp.Timing() != replay.AFAP {
			what = "kept by the POSIX backend; --backend mpiio pays its own"
		}
		fmt.Fprintf(bw, "MPI-IO library cost in the capture, beyond its POSIX calls: %d calls, %s (%s)\n", n, units.Duration(ns), what)
	}
	fmt.Fprintln(bw, "\ncalls per rank:")
	for _, rc := range p.PerRank {
		ops := make([]trace.Op, 0, len(rc.Ops))
		for op := range rc.Ops {
			ops = append(ops, op)
		}
		slices.Sort(ops)
		parts := make([]string, len(ops))
		for i, op := range ops {
			parts[i] = fmt.Sprintf("%s %d", op, rc.Ops[op])
		}
		fmt.Fprintf(bw, "  rank %d: %d events: %s\n", rc.Rank, rc.Events, strings.Join(parts, ", "))
	}
	if team != "" {
		fmt.Fprint(bw, "\n"+team)
	}
	return bw.Flush()
}
