package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/internal/hosts"
	"github.com/iotrace/iotrace/internal/mpitest"
	"github.com/iotrace/iotrace/trace/format"
)

// scaleScript: every rank writes its own file, passes a message around
// the ring of ranks and joins an all-reduction each step; a barrier ends
// the run. All of its communication crosses processes and hosts.
const scaleScript = `param steps = 20
repeat steps as i {
    write "out/r.$rank" at i * 64KiB size 64KiB
    sendrecv 4KiB to (rank + 1) % nranks from (rank + nranks - 1) % nranks tag i
    allreduce 64B
}
barrier
`

// scaleRun is what one replay over test hosts measured.
type scaleRun struct {
	Ranks, Procs, Hosts int
	Events              int64
	// Startup is from mpirun's start to the ranks' common start (the
	// barrier before the run; the replay's trace's epoch): launch,
	// MPI_Init, reading and planning the trace, the job's communicators,
	// the target checks and the prepare phase.
	Startup time.Duration
	// Run is the replay's elapsed time from the common start.
	Run time.Duration
	// Tail is from the end of the run to mpirun's end: the parts of the
	// replay's trace gathered to process 0 and merged, the report, the
	// processes' ends.
	Tail time.Duration
	// Wall is mpirun's whole run.
	Wall time.Duration
	// RSS holds every process's peak resident set (KiB), sorted.
	RSS []int64
	// Record is the bytes of the replay's trace, gathered.
	Record int64
}

// replayScale runs the scale script with ranks trace ranks over procs
// processes on the test hosts (procs a multiple of their number), each
// process under /usr/bin/time for its peak RSS, and says what it
// measured. dryRun stops after the plan (MPI_Init, the team, reading and
// planning the trace: the start-up's part that does not grow with the
// job's communicators).
func replayScale(t testing.TB, c *hosts.Cluster, bin, dir string, ranks, procs int, dryRun bool, timeout time.Duration) scaleRun {
	t.Helper()
	src := filepath.Join(dir, "scale.iop")
	if err := os.WriteFile(src, []byte(scaleScript), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(dir, fmt.Sprintf("scale-%d-%d.iot", ranks, procs))
	sum := rec + ".json"
	target := filepath.Join(c.Local, "scale")
	rss := filepath.Join(dir, "rss")
	os.RemoveAll(rss)
	if err := os.Mkdir(rss, 0o755); err != nil {
		t.Fatal(err)
	}
	// Each process's peak RSS in a file of its own: their standard
	// errors' lines mix.
	args := []string{"--mca", "mpi_yield_when_idle", "1", "sh", "-c", `exec /usr/bin/time -f %M -o "$0/$OMPI_COMM_WORLD_RANK" "$@"`, rss,
		bin, "--mpi", "--ranks", strconv.Itoa(ranks), "--timing", "afap", "--quiet", "--target", target, "--node-local",
		"--record", rec, "--summary", sum}
	if dryRun {
		args = append(args, "--dry-run")
	}
	args = append(args, src)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := c.MpirunCommand(ctx, dir, procs/len(c.Hosts), []string{"TMPDIR=" + c.Local}, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.WaitDelay = &stdout, &stderr, 5*time.Second
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		t.Fatalf("%d ranks over %d processes: mpirun: %v after %v\n%s\n%s", ranks, procs, err, wall, stdout.String(), stderr.String())
	}
	run := scaleRun{Ranks: ranks, Procs: procs, Hosts: len(c.Hosts), Wall: wall}
	for q := range procs {
		b, err := os.ReadFile(filepath.Join(rss, strconv.Itoa(q)))
		if err != nil {
			t.Fatalf("process %d's peak RSS: %v\n%s", q, err, stderr.String())
		}
		kib, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			t.Fatalf("/usr/bin/time said %q for process %d", b, q)
		}
		run.RSS = append(run.RSS, kib)
	}
	slices.Sort(run.RSS)
	if dryRun {
		return run
	}
	var js struct {
		Replay struct { // the summary is the report's replay object
			Ranks   int     `json:"ranks"`
			Events  int64   `json:"events"`
			Planned int64   `json:"planned"`
			Elapsed float64 `json:"elapsed_seconds"`
		}
	}
	b, err := os.ReadFile(sum)
	if err == nil {
		err = json.Unmarshal(b, &js.Replay)
	}
	if err != nil {
		t.Fatalf("the summary: %v", err)
	}
	if js.Replay.Ranks != ranks || js.Replay.Events != js.Replay.Planned || js.Replay.Events == 0 {
		t.Fatalf("%d ranks over %d processes: the summary says %d ranks, %d of %d events\n%s", ranks, procs, js.Replay.Ranks, js.Replay.Events, js.Replay.Planned, b)
	}
	run.Events = js.Replay.Events
	run.Run = time.Duration(js.Replay.Elapsed * 1e9)
	rd, err := format.Open(rec)
	if err != nil {
		t.Fatal(err)
	}
	epoch := time.Unix(0, rd.Meta().Epoch)
	rd.Close()
	run.Startup = epoch.Sub(start)
	run.Tail = wall - run.Startup - run.Run
	if fi, err := os.Stat(rec); err == nil {
		run.Record = fi.Size()
	}
	return run
}

// TestReplayManyRanks replays 256 trace ranks over 8 processes on two
// test hosts: every rank's events replayed, the trace gathered, and every
// process's peak RSS below 1 GiB (a process here holds the whole plan and
// its 32 ranks; BenchmarkReplayScale measures 1,024 ranks).
func TestReplayManyRanks(t *testing.T) {
	c := hosts.New(t, 2, hosts.Options{})
	bin := mpiBin(t)
	r := replayScale(t, c, bin, t.TempDir(), 256, 8, false, 3*time.Minute)
	t.Logf("256 ranks over 8 processes: start-up %v, run %v, tail %v, peak RSS %d–%d KiB",
		r.Startup.Round(time.Millisecond), r.Run.Round(time.Millisecond), r.Tail.Round(time.Millisecond), r.RSS[0], r.RSS[len(r.RSS)-1])
	if max := r.RSS[len(r.RSS)-1]; max > 1<<20 {
		t.Errorf("a process's peak RSS was %d KiB", max)
	}
}

// BenchmarkReplayScale replays IOTRACE_SCALE_RANKS (1,024) trace ranks
// over each of IOTRACE_SCALE_PROCS (8,32,128) processes on
// IOTRACE_SCALE_HOSTS (4) test hosts, once with --dry-run (start-up to
// the plan) and once whole, and logs a Markdown row of each: start-up,
// run, tail (gathering the trace), peak RSS per process. bench/mpi/scale.sh
// runs it.
func BenchmarkReplayScale(b *testing.B) {
	env := func(k, def string) string {
		if v := os.Getenv(k); v != "" {
			return v
		}
		return def
	}
	ranks, err := strconv.Atoi(env("IOTRACE_SCALE_RANKS", "1024"))
	if err != nil {
		b.Fatal(err)
	}
	nh, err := strconv.Atoi(env("IOTRACE_SCALE_HOSTS", "4"))
	if err != nil {
		b.Fatal(err)
	}
	c := hosts.New(b, nh, hosts.Options{})
	bin := mpitest.BuildGo(b, "./cmd/ioreplay", false)
	for _, ps := range strings.Split(env("IOTRACE_SCALE_PROCS", "8,32,128"), ",") {
		procs, err := strconv.Atoi(ps)
		if err != nil || procs%nh != 0 {
			b.Fatalf("IOTRACE_SCALE_PROCS: %q is not a multiple of the %d hosts", ps, nh)
		}
		b.Run(fmt.Sprintf("ranks=%d/procs=%d", ranks, procs), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				dir := b.TempDir()
				d := replayScale(b, c, bin, dir, ranks, procs, true, 30*time.Minute)
				r := replayScale(b, c, bin, dir, ranks, procs, false, 30*time.Minute)
				mib := func(k int64) float64 { return float64(k) / 1024 }
				b.ReportMetric(r.Startup.Seconds(), "startup-s")
				b.ReportMetric(r.Tail.Seconds(), "tail-s")
				b.ReportMetric(mib(r.RSS[len(r.RSS)/2]), "rss-p50-MiB")
				b.ReportMetric(mib(r.RSS[len(r.RSS)-1]), "rss-max-MiB")
				b.Logf("| %d | %d | %d | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f | %.1f | %.1f | %.1f | %.1f |",
					r.Ranks, r.Procs, r.Hosts, r.Events, d.Wall.Seconds(), r.Startup.Seconds(), r.Run.Seconds(), r.Tail.Seconds(), r.Wall.Seconds(),
					mib(d.RSS[len(d.RSS)/2]), mib(r.RSS[0]), mib(r.RSS[len(r.RSS)/2]), mib(r.RSS[len(r.RSS)-1]), float64(r.Record)/(1<<20))
			}
		})
	}
}
