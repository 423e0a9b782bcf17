package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/internal/hosts"
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
