package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/internal/hosts"
	"github.com/iotrace/iotrace/internal/mpitest"
	"github.com/iotrace/iotrace/trace/format"
)

// The tests of this file replay over test hosts (internal/hosts: network
// namespaces on one machine, Open MPI over TCP between them), as a job
// spread over the nodes of a cluster does.

// hostsScript: every rank reads its part of a shared input, then, step
// by step, writes its own file through POSIX and another through MPI-IO
// (opened on MPI_COMM_SELF), passes a message around the ring of ranks
// and joins an all-reduction; a barrier ends the run.
const hostsScript = `param steps = 4
read "in/input.dat" at rank * 64KiB size 64KiB
mpiopen "out/mpi.$rank" as f self
repeat steps as i {
    write "out/posix.$rank" at i * 256KiB size 256KiB
    write f at i * 128KiB size 128KiB
    sendrecv 64KiB to (rank + 1) % nranks from (rank + nranks - 1) % nranks tag i
    allreduce 8KiB
}
close f
barrier
`

// hostOfRank says on which test host each of the 8 trace ranks of the
// replays below runs: 6 processes, 2 per host (mpirun fills a host's
// slots in order), the ranks spread block-wise (process q runs ranks
// 8q/6 to 8(q+1)/6 − 1): a runs ranks 0–1, b 2–4, c 5–7.
var hostOfRank = []string{"a", "a", "b", "b", "b", "c", "c", "c"}

// TestReplayAcrossHosts replays a job of 8 ranks over 6 processes on three
// test hosts, with both backends, into node-local targets (--node-local:
// the same path on every host, a directory of each host's own): the first
// process of each host prepares its target, each rank writes its files
// into its own host's, and process 0 gathers the replay's trace into one,
// whose ranks say which host they ran on. Each process writes its part of
// that trace into a node-local directory (TMPDIR on the host's own
// storage here), removed once gathered.
//
// Without --node-local, the replay refuses a target the hosts do not
// share, and with it, a target they do, each with the reason.
func TestReplayAcrossHosts(t *testing.T) {
	c := hosts.New(t, 3, hosts.Options{})
	bin := mpiBin(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "hosts.iop")
	if err := os.WriteFile(src, []byte(hostsScript), 0o644); err != nil {
		t.Fatal(err)
	}
	want := statsOf(t, expand(t, src, 8))
	target := filepath.Join(c.Local, "target")
	env := []string{"TMPDIR=" + c.Local}
	for _, be := range []string{"posix", "mpiio"} {
		t.Run(be, func(t *testing.T) {
			rec := filepath.Join(dir, be+".iot")
			r := c.Mpirun(dir, 3*time.Minute, 2, env, bin, "--mpi", "--backend", be, "--timing", "afap", "--ranks", "8",
				"--target", target, "--node-local", "--record", rec, "--strict", "--quiet", src)
			if r.Code != 0 {
				t.Fatalf("mpirun: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
			}
			if !strings.Contains(r.Stdout, "MPI_File_write_at") {
				t.Errorf("no report on stdout:\n%s", r.Stdout)
			}
			sameCallsAndBytes(t, be, want, stats(t, rec))
			rd, err := format.Open(rec)
			if err != nil {
				t.Fatal(err)
			}
			sum := rd.Summary()
			rd.Close()
			if len(sum) != 8 {
				t.Fatalf("the replay's trace has %d ranks, want 8", len(sum))
			}
			for _, rs := range sum {
				if rs.Host != hostOfRank[rs.Rank] {
					t.Errorf("rank %d replayed on %q, want %q", rs.Rank, rs.Host, hostOfRank[rs.Rank])
				}
			}
			for _, h := range c.Hosts {
				tdir := filepath.Join(h.Dir, "target")
				if st, err := os.Stat(filepath.Join(tdir, "in", "input.dat")); err != nil || st.Size() < 8*64<<10 {
					t.Errorf("host %s: the input was not prepared in its target: %v", h.Name, err)
				}
				for rk, on := range hostOfRank {
					for _, f := range []struct {
						name string
						size int64
					}{{"posix", 4 * 256 << 10}, {"mpi", 4 * 128 << 10}} {
						st, err := os.Stat(filepath.Join(tdir, "out", fmt.Sprintf("%s.%d", f.name, rk)))
						switch {
						case on == h.Name && (err != nil || st.Size() != f.size):
							t.Errorf("host %s: rank %d's %s file: %v, want %d bytes", h.Name, rk, f.name, err, f.size)
						case on != h.Name && err == nil:
							t.Errorf("host %s holds rank %d's %s file; the rank ran on %s", h.Name, rk, f.name, on)
						}
					}
				}
				if parts, _ := filepath.Glob(filepath.Join(h.Dir, "ioreplay-parts-*")); len(parts) > 0 {
					t.Errorf("host %s: the parts of the replay's trace were left: %v", h.Name, parts)
				}
				os.RemoveAll(tdir)
			}
			if ents, _ := os.ReadDir(c.Local); len(ents) != 0 {
				t.Errorf("the machine's own %s holds %d files; every process ran on a test host", c.Local, len(ents))
			}
		})
	}
	t.Run("refused", func(t *testing.T) {
		for _, tc := range []struct {
			what, target, flag, want string
		}{
			{"node-local target without --node-local", target, "--keep", "is not the directory process 0 prepared"},
			{"shared target with --node-local", filepath.Join(dir, "shared"), "--node-local", "is the directory of host"},
		} {
			r := c.Mpirun(dir, 3*time.Minute, 1, env, bin, "--mpi", "--ranks", "8", "--target", tc.target, tc.flag, "--quiet", src)
			if r.Code == 0 || !strings.Contains(r.Stderr, tc.want) {
				t.Errorf("%s: exit %d, want an error saying %q\n%s", tc.what, r.Code, tc.want, r.Stderr)
			}
			t.Logf("%s: %s", tc.what, strings.SplitN(r.Stderr, "\n", 2)[0])
		}
	})
}

// cutScript runs for about 30 s (300 steps of 100 ms think time): every
// rank writes, passes a message around the ring of ranks and joins an
// all-reduction each step.
const cutScript = `param steps = 300
repeat steps as i {
    write "out/posix.$rank" at (i % 16) * 64KiB size 64KiB
    sendrecv 4KiB to (rank + 1) % nranks from (rank + nranks - 1) % nranks tag i % 100
    allreduce 64B
    sleep 100ms
}
barrier
`

// cutMCA: Open MPI's launcher notices a lost node by the keepalive of its
// out-of-band connections (by default after 300 s idle and 9 probes 20 s
// apart); here after 10 s idle and 5 probes 2 s apart, longer than the
// replay's --peer-timeout, so that ioreplay says first what was lost.
var cutMCA = []string{"--mca", "oob_tcp_keepalive_time", "10", "--mca", "oob_tcp_keepalive_intvl", "2", "--mca", "oob_tcp_keepalive_probes", "5"}

// TestReplayCutHost cuts host b off (its link down) in the middle of a
// replay of 8 ranks over 4 processes on two hosts. Process 0 says, after
// --peer-timeout (3 s), which processes on which host (and which trace
// ranks) stopped answering; the processes on a stop their ranks, keep
// their parts of the replay's trace in their node-local directory, say
// where, and end with the job, which mpirun ends once it notices the lost
// node: within a bounded time. The processes on b, which lost process 0,
// stop too. The parts are readable: iotrace check and stats say the
// replay was interrupted, why, and how many of its ranks they hold.
func TestReplayCutHost(t *testing.T) {
	c := hosts.New(t, 2, hosts.Options{})
	bin := mpiBin(t)
	iot := mpitest.BuildGo(t, "./cmd/iotrace", false)
	dir := t.TempDir()
	src := filepath.Join(dir, "cut.iop")
	if err := os.WriteFile(src, []byte(cutScript), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(dir, "replay.iot")
	args := append(append([]string{}, cutMCA...), bin, "--mpi", "--ranks", "8", "--target", filepath.Join(c.Local, "target"), "--node-local",
		"--peer-timeout", "3s", "--record", rec, src)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := c.MpirunCommand(ctx, dir, 2, []string{"TMPDIR=" + c.Local}, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.WaitDelay = &stdout, &stderr, 5*time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The replay runs once every process has its part (made after the
	// prepare phase, just before the ranks start); cut b 2 s later.
	parts := func(h *hosts.Host) []string {
		p, _ := filepath.Glob(filepath.Join(h.Dir, "ioreplay-parts-*", "process-*.iot"))
		return p
	}
	for len(parts(c.Host("a"))) < 2 || len(parts(c.Host("b"))) < 2 {
		if ctx.Err() != nil {
			t.Fatalf("the replay did not start\n%s\n%s", stdout.String(), stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	if err := c.SetLink(c.Host("b"), false); err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	err := cmd.Wait()
	ended := time.Since(cut)
	out := stderr.String()
	if ctx.Err() != nil {
		t.Fatalf("mpirun did not end %v after the cut\n%s", ended, out)
	}
	t.Logf("mpirun ended %v after the cut: %v", ended.Round(time.Millisecond), err)
	if err == nil {
		t.Errorf("mpirun succeeded; the replay lost host b")
	}
	// 3 s to notice, then Open MPI's keepalive: 10 s + 5 × 2 s at most.
	if ended > 60*time.Second {
		t.Errorf("mpirun ended %v after the cut", ended)
	}
	for _, want := range []string{
		"ioreplay: processes 2–3 on host b (trace ranks 4–7) have not answered for 3s (--peer-timeout): stopping the replay",
		"ioreplay: each process keeps its part of the replay's trace in " + c.Local + "/ioreplay-parts-",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stderr does not say %q:\n%s", want, out)
		}
	}
	// Nothing of the replay is left running on either host.
	deadline := time.Now().Add(30 * time.Second)
	for _, h := range c.Hosts {
		for len(c.Pids(h)) > 0 && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if pids := c.Pids(h); len(pids) > 0 {
			var l []string
			for _, p := range pids {
				b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
				l = append(l, fmt.Sprintf("%d %s", p, bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
			}
			t.Errorf("host %s: processes still run %v after mpirun ended:\n%s", h.Name, time.Since(cut)-ended, strings.Join(l, "\n"))
		}
	}
	if _, err := os.Stat(rec); err == nil {
		t.Errorf("%s was written; the replay did not end", rec)
	}
	// Process 0's host holds the parts of processes 0 and 1, whole, and
	// says the replay was interrupted and why; b's hold what its processes
	// wrote before they stopped.
	why := "processes 2–3 on host b (trace ranks 4–7) have not answered for 3s (--peer-timeout)"
	var all []string
	for _, h := range c.Hosts {
		ps := parts(h)
		if len(ps) != 2 {
			t.Fatalf("host %s holds parts %v, want 2", h.Name, ps)
		}
		for _, p := range ps {
			b, err := exec.Command(iot, "check", p).CombinedOutput()
			if err != nil {
				t.Errorf("iotrace check %s: %v\n%s", p, err, b)
			}
			// Process 1 heard it from process 0; b's processes lost process 0.
			want := map[string]string{"a": why, "b": "process 0 on host a (trace ranks 0–1) has not answered for 3s (--peer-timeout)"}[h.Name]
			if strings.HasSuffix(p, "process-00001.iot") {
				want = "process 0: " + why
			}
			if !strings.Contains(string(b), "of the run's 8") || !strings.Contains(string(b), "replay: interrupted: "+want+": ") {
				t.Errorf("iotrace check %s does not say the replay was interrupted, and why (%s):\n%s", p, want, b)
			}
			if h.Name == "a" && !strings.Contains(string(b), ": ok: ") {
				t.Errorf("iotrace check %s: the part is not whole:\n%s", p, b)
			}
			t.Logf("%s", bytes.TrimSpace(b))
		}
		all = append(all, filepath.Dir(ps[0]))
	}
	b, err := exec.Command(iot, "stats", all[0]).CombinedOutput()
	if err != nil || !strings.Contains(string(b), "replay: 4 of its 8 ranks in this trace") || !strings.Contains(string(b), "interrupted: "+why+": ") {
		t.Errorf("iotrace stats of host a's parts: %v\n%s", err, b)
	}
	b, err = exec.Command(iot, "stats", all[0], all[1]).CombinedOutput()
	if err != nil || !strings.Contains(string(b), "8 ranks") || !strings.Contains(string(b), "interrupted: ") {
		t.Errorf("iotrace stats of both hosts' parts: %v\n%s", err, b)
	}
	t.Logf("iotrace stats of both hosts' parts:\n%s", b)
}
