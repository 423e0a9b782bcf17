package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/internal/hosts"
	"github.com/iotrace/iotrace/internal/loadcheck"
	"github.com/iotrace/iotrace/internal/mpitest"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
)

// hostsAppC: after a barrier, rank 0 sleeps argv[2] seconds; then every
// rank writes 4 × 4 KiB to its own file argv[1]/out-RANK (pwrite),
// fsyncs and closes it; a barrier ends the run.
const hostsAppC = `
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
	int rank;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0) usleep((useconds_t)(atof(argv[2]) * 1e6));
	static char buf[4096];
	char name[4096];
	snprintf(name, sizeof name, "%s/out-%d", argv[1], rank);
	int fd = open(name, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (fd < 0) { perror(name); MPI_Abort(MPI_COMM_WORLD, 1); }
	for (int i = 0; i < 4; i++)
		if (pwrite(fd, buf, sizeof buf, i * 4096) != sizeof buf) { perror(name); MPI_Abort(MPI_COMM_WORLD, 1); }
	if (fsync(fd) != 0 || close(fd) != 0) { perror(name); MPI_Abort(MPI_COMM_WORLD, 1); }
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
`

// hostsApp builds hostsAppC into dir, and returns it with the cache of
// the preload shim and the clock library, built once for the test
// binary (beside it) rather than by every rank of every job at once.
func hostsApp(t testing.TB, dir string) (app, cache string) {
	t.Helper()
	src := filepath.Join(dir, "app.c")
	if err := os.WriteFile(src, []byte(hostsAppC), 0o644); err != nil {
		t.Fatal(err)
	}
	app = mpitest.CC(t, dir, "app", src)
	return app, shimCache(t)
}

// hostShift is how far host b's clock is off (the capture's test hook):
// 250 ms ahead of host a's.
const hostShift = 250_000_000

// TestRecordAcrossHosts records an MPI job of 4 ranks spread over two
// test hosts (mpirun --host a:2,b:2, TCP between network namespaces), with
// ptrace and with the preload shim. Each rank writes its trace into its
// host's own directory (node-local: run.iot/rank-NNNNN.iot under the same
// path on both hosts, different directories); iotrace merge gathers them
// into one trace, whose ranks say which host they ran on.
//
// One clock: host b's clock reads 250 ms ahead (IOTRACE_TEST_CLOCK_SHIFT,
// as if its clock were off). Each rank's capture measured its clock
// against rank 0's at start-up and at the end; the measured offset of a
// rank on b is 250 ms within the recorded error bound, and the trace's
// times on one clock put the ranks' calls after the first barrier
// together again, where the hosts' own clocks have them 250 ms apart.
//
// Rank 0 starts its I/O 1 s after the others: ioreplay with original
// timing replays that delay (its first open 1 s after rank 2's, on the
// other host) within 1 ms.
func TestRecordAcrossHosts(t *testing.T) {
	recSkipUnsupported(t)
	c := hosts.New(t, 2, hosts.Options{Env: map[string][]string{"b": {fmt.Sprintf("IOTRACE_TEST_CLOCK_SHIFT=%d", hostShift)}}})
	dir := t.TempDir()
	app, cache := hostsApp(t, dir)
	replayBin := mpitest.BuildGo(t, "./cmd/ioreplay", false)
	for _, mode := range []string{"ptrace", "preload"} {
		t.Run(mode, func(t *testing.T) {
			out := filepath.Join(c.Local, mode+".iot")
			args := []string{iotraceBin, "record", "--include", c.Local, "-o", out}
			if mode == "preload" {
				args = append(args, "--preload")
			}
			args = append(args, "--", app, c.Local, "1")
			start := loadcheck.Now()
			r := c.Mpirun(dir, 2*time.Minute, 2, []string{"IOTRACE_CACHE=" + cache}, args...)
			load := loadcheck.Since(start)
			// timing fails t where the run's timing is off on a machine
			// that was not overloaded while it ran; on an overloaded one
			// it is logged, not judged (the clocks are, exactly, below).
			timing := func(format string, args ...any) {
				t.Helper()
				if !load.Overloaded() {
					t.Errorf(format+" (machine: %v)", append(args, load)...)
					return
				}
				t.Logf(format+" (machine overloaded: %v; timing not judged)", append(args, load)...)
			}
			if r.Code != 0 {
				t.Fatalf("mpirun: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
			}
			// Node-local output: each host holds its ranks' files.
			var parts []string
			for i, h := range c.Hosts {
				part := filepath.Join(h.Dir, mode+".iot")
				for k := 0; k < 4; k++ {
					_, err := os.Stat(filepath.Join(part, fmt.Sprintf("rank-%05d.iot", k)))
					if mine := k/2 == i; mine != (err == nil) {
						t.Errorf("host %s: rank %d's file there: %v, want %v", h.Name, k, err == nil, mine)
					}
				}
				parts = append(parts, part)
			}
			// The gather: one trace of the job.
			all := filepath.Join(dir, mode+"-all.iot")
			mustRun(t, append([]string{"merge", "-o", all}, parts...)...)
			aligned := openFirsts(t, all, format.ReadOptions{})
			raw := openFirsts(t, all, format.ReadOptions{RawClocks: true})

			rd, err := format.Open(all)
			if err != nil {
				t.Fatal(err)
			}
			defer rd.Close()
			maxErr := map[uint32]int64{}
			for _, rs := range rd.Summary() {
				if want := string(rune('a' + rs.Rank/2)); rs.Host != want {
					t.Errorf("rank %d ran on %q, want %q", rs.Rank, rs.Host, want)
				}
				if rs.Rank == 0 {
					if rs.Clock != nil {
						t.Errorf("rank 0, the reference, has clock samples %+v", rs.Clock)
					}
					continue
				}
				if rs.Clock == nil || len(rs.Clock.Samples) != 2 || rs.Clock.Ref != 0 {
					t.Errorf("rank %d: clock %+v; want 2 samples against rank 0", rs.Rank, rs.Clock)
					continue
				}
				want := int64(0)
				if rs.Rank >= 2 {
					want = hostShift
				}
				for _, s := range rs.Clock.Samples {
					maxErr[rs.Rank] = max(maxErr[rs.Rank], s.Err)
					// The hosts share one clock: the true offset is the
					// shift, and the reading of the wall clock at each
					// capture's start (the same clock, read microseconds
					// apart; 200 µs allows for a slewing NTP).
					if d := s.Offset - want; d > s.Err+200_000 || d < -s.Err-200_000 {
						t.Errorf("rank %d: measured offset %v ±%v, true %v", rs.Rank, time.Duration(s.Offset), time.Duration(s.Err), time.Duration(want))
					}
				}
				t.Logf("rank %d: clock %+v", rs.Rank, rs.Clock.Samples)
			}
			// The merged trace moves each open by its rank's measured
			// offset from rank 0's clock (beside the time base all
			// share): b's by the shift, a's by nothing, within what the
			// samples say they know.
			base := raw[0] - aligned[0]
			for k := uint32(1); k < 4; k++ {
				want := int64(0)
				if k >= 2 {
					want = hostShift
				}
				if d := raw[k] - aligned[k] - base - want; d > maxErr[k]+200_000 || d < -maxErr[k]-200_000 {
					t.Errorf("rank %d's open moved by %v against rank 0's on one clock, want %v ±%v", k, time.Duration(raw[k]-aligned[k]-base), time.Duration(want), time.Duration(maxErr[k]))
				}
			}
			// After the first barrier ranks 1–3 open their files at once:
			// on one clock within 100 ms, on the hosts' own clocks b's
			// 250 ms late (how close is the machine's load).
			for k := uint32(2); k < 4; k++ {
				if d := aligned[k] - aligned[1]; d > 100_000_000 || d < -100_000_000 {
					timing("aligned: rank %d opened %v after rank 1", k, time.Duration(d))
				}
				if d := raw[k] - raw[1]; d < hostShift-100_000_000 || d > hostShift+100_000_000 {
					timing("raw clocks: rank %d opened %v after rank 1, want about %v", k, time.Duration(d), time.Duration(hostShift))
				}
			}
			// Rank 0 slept 1 s before its open: on one clock it opened
			// about that much later than the others (less by as long as
			// they took to open theirs after the barrier).
			delay := aligned[0] - aligned[2]
			if delay < 900_000_000 {
				timing("rank 0 opened its file %v after rank 2; it slept 1 s", time.Duration(delay))
			}
			// The replay keeps that delay, across the hosts' skew: the two
			// opens are issued at their recorded offsets within 1 ms, each
			// as late as the machine made it (the replay measures how late
			// it issued each call: its issue lag).
			loadcheck.Retry(t, func() string {
				tmp := t.TempDir()
				rec, sum := filepath.Join(tmp, "replay.iot"), filepath.Join(tmp, "summary.json")
				cmd := exec.Command(replayBin, "--timing", "original", "--target", filepath.Join(tmp, "target"), "--record", rec, "--summary", sum, "--quiet", all)
				if b, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("ioreplay: %v\n%s", err, b)
				}
				var summary struct {
					Lag struct {
						Max float64 `json:"max_seconds"`
					}
				}
				if b, err := os.ReadFile(sum); err != nil || json.Unmarshal(b, &summary) != nil {
					t.Fatalf("summary: %v %s", err, b)
				}
				lag := time.Duration(summary.Lag.Max * 1e9)
				rep := openFirsts(t, rec, format.ReadOptions{})
				got := rep[0] - rep[2]
				if d := time.Duration(got - delay).Abs(); d > time.Millisecond+lag {
					return fmt.Sprintf("replay: rank 0 opened %v after rank 2, recorded %v: off by %v, more than 1 ms and the replay's worst issue lag %v",
						time.Duration(got), time.Duration(delay), d, lag)
				}
				t.Logf("replay: rank 0 opened %v after rank 2, recorded %v (issue lag at most %v)", time.Duration(got), time.Duration(delay), lag)
				return ""
			})
		})
	}
}

// openFirsts returns, per rank, the start of its first open of its
// out-RANK file in trace t.
func openFirsts(t *testing.T, path string, opts format.ReadOptions) map[uint32]int64 {
	t.Helper()
	rd, err := format.OpenOptions(opts, path)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	evs, err := trace.ReadAll(trace.All(rd))
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint32]int64{}
	for _, e := range evs {
		if e.Op.Info().FD != trace.FDOpen || !strings.HasSuffix(rd.Path(e.Path), fmt.Sprintf("/out-%d", e.Rank)) {
			continue
		}
		if _, ok := out[e.Rank]; !ok {
			out[e.Rank] = e.Start
		}
	}
	if len(out) != 4 {
		t.Fatalf("%s: opens of out-RANK by ranks %v, want 4 ranks", path, out)
	}
	return out
}

// BenchmarkClockAlignment measures how well a capture's clock samples
// know the hosts' offsets: 4 ranks on two test hosts, host b's clock
// 250 ms ahead (the test hook); the hosts share one real clock, so the
// true offset of each rank is known (0 on a, the shift on b). It reports,
// over every sample of ranks 1–3 (start-up and end), the mean and the
// largest error of the measured offset, and the mean error bound the
// capture recorded (half the best round trip), and the share of samples
// whose error exceeds their bound, per capture mode.
func BenchmarkClockAlignment(b *testing.B) {
	recSkipUnsupported(b)
	c := hosts.New(b, 2, hosts.Options{Env: map[string][]string{"b": {fmt.Sprintf("IOTRACE_TEST_CLOCK_SHIFT=%d", hostShift)}}})
	dir := b.TempDir()
	app, cache := hostsApp(b, dir)
	for _, mode := range []string{"ptrace", "preload"} {
		b.Run(mode, func(b *testing.B) {
			var sum, worst, bound time.Duration
			n, outside := 0, 0
			for i := 0; i < b.N; i++ {
				out := filepath.Join(c.Local, fmt.Sprintf("%s-%d.iot", mode, i))
				args := []string{iotraceBin, "record", "--include", c.Local, "-o", out}
				if mode == "preload" {
					args = append(args, "--preload")
				}
				args = append(args, "--", app, c.Local, "0")
				if r := c.Mpirun(dir, 2*time.Minute, 2, []string{"IOTRACE_CACHE=" + cache}, args...); r.Code != 0 {
					b.Fatalf("mpirun: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
				}
				var parts []string
				for _, h := range c.Hosts {
					parts = append(parts, filepath.Join(h.Dir, filepath.Base(out)))
				}
				rd, err := format.Open(parts...)
				if err != nil {
					b.Fatal(err)
				}
				for _, rs := range rd.Summary() {
					if rs.Rank == 0 || rs.Clock == nil {
						continue
					}
					want := int64(0)
					if rs.Rank >= 2 {
						want = hostShift
					}
					for _, s := range rs.Clock.Samples {
						e := time.Duration(s.Offset - want).Abs()
						sum, worst, bound, n = sum+e, max(worst, e), bound+time.Duration(s.Err), n+1
						if e > time.Duration(s.Err) {
							outside++
						}
					}
				}
				rd.Close()
			}
			if n == 0 {
				b.Fatal("no clock samples")
			}
			b.ReportMetric(float64(sum.Microseconds())/float64(n), "err-us")
			b.ReportMetric(float64(worst.Microseconds()), "max-err-us")
			b.ReportMetric(float64(bound.Microseconds())/float64(n), "bound-us")
			b.ReportMetric(float64(outside)/float64(n), "outside-bound")
		})
	}
}

// TestSlurmRecordReplay runs the capture and the replay as a Slurm user
// does, on two test hosts with Slurm started on them: srun -n 4 iotrace
// record --preload (each rank's trace into one shared directory, the
// clocks measured, since slurmstepd started every rank), then srun -n 4
// ioreplay --mpi of that trace, whose own trace holds the same calls.
func TestSlurmRecordReplay(t *testing.T) {
	c := hosts.New(t, 2, hosts.Options{})
	s := c.StartSlurm(4)
	dir := t.TempDir()
	app, cache := hostsApp(t, dir)
	replayBin := mpitest.BuildGo(t, "./cmd/ioreplay", false)
	env := []string{"IOTRACE_CACHE=" + cache}
	out := filepath.Join(dir, "run.iot")
	r := s.Run(dir, 2*time.Minute, env, "srun", "--ntasks=4", "--ntasks-per-node=2",
		iotraceBin, "record", "--preload", "--include", c.Local, "-o", out, "--", app, c.Local, "0")
	if r.Code != 0 {
		t.Fatalf("srun iotrace record: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	rd, err := format.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	sum := rd.Summary()
	rd.Close()
	if len(sum) != 4 {
		t.Fatalf("%d ranks recorded, want 4", len(sum))
	}
	for _, rs := range sum {
		if want := string(rune('a' + rs.Rank/2)); rs.Host != want {
			t.Errorf("rank %d ran on %q, want %q", rs.Rank, rs.Host, want)
		}
		if rs.Rank > 0 && (rs.Clock == nil || len(rs.Clock.Samples) != 2) {
			t.Errorf("rank %d: clock %+v, want 2 samples", rs.Rank, rs.Clock)
		}
	}
	got, _ := tallies(t, out)
	rec := filepath.Join(dir, "replay.iot")
	r = s.Run(dir, 2*time.Minute, nil, "srun", "--ntasks=4", "--ntasks-per-node=2",
		replayBin, "--mpi", "--timing", "afap", "--target", filepath.Join(dir, "target"), "--record", rec, "--quiet", out)
	if r.Code != 0 {
		t.Fatalf("srun ioreplay --mpi: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	rep, _ := tallies(t, rec)
	for rk := uint32(0); rk < 4; rk++ {
		for _, op := range []trace.Op{trace.OpOpen, trace.OpOpenat, trace.OpPwrite, trace.OpFsync, trace.OpClose, trace.OpMPIBarrier} {
			if got[rk][op] != rep[rk][op] {
				t.Errorf("rank %d: %s: recorded %v, replayed %v", rk, op, got[rk][op], rep[rk][op])
			}
		}
		if got[rk][trace.OpPwrite].n != 4 {
			t.Errorf("rank %d: %d pwrites recorded, want 4", rk, got[rk][trace.OpPwrite].n)
		}
	}
}
