package hosts

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/internal/mpitest"
)

// ringC passes a token of 64 KiB around the ranks 20 times (so every
// host's TCP link carries messages both ways), then each rank writes its
// host name and its environment's HOSTTAG into LOCAL/rank-R.
const ringC = `
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	static char buf[65536];
	for (int i = 0; i < 20; i++) {
		if (rank == 0) {
			MPI_Send(buf, sizeof buf, MPI_BYTE, 1 % size, i, MPI_COMM_WORLD);
			MPI_Recv(buf, sizeof buf, MPI_BYTE, size - 1, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(buf, sizeof buf, MPI_BYTE, rank - 1, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(buf, sizeof buf, MPI_BYTE, (rank + 1) % size, i, MPI_COMM_WORLD);
		}
	}
	char host[256], name[4096];
	gethostname(host, sizeof host);
	snprintf(name, sizeof name, "%s/rank-%d", argv[1], rank);
	FILE *f = fopen(name, "w");
	if (!f) { perror(name); MPI_Abort(MPI_COMM_WORLD, 1); }
	const char *tag = getenv("HOSTTAG");
	fprintf(f, "%s %s\n", host, tag ? tag : "-");
	fclose(f);
	MPI_Finalize();
	return 0;
}
`

// TestCluster runs an MPI job of 2 ranks on each of 3 test hosts: the
// messages go over TCP between the hosts' namespaces, each rank runs on
// the host mpirun put it on (by its host name), with that host's
// environment, and what it writes under Local lands in its host's own
// directory only. When the test ends, nothing of the cluster is left.
func TestCluster(t *testing.T) {
	var c *Cluster
	t.Run("job", func(t *testing.T) {
		c = New(t, 3, Options{Env: map[string][]string{"b": {"HOSTTAG=it's b"}}})
		dir := t.TempDir()
		src := filepath.Join(dir, "ring.c")
		if err := os.WriteFile(src, []byte(ringC), 0o644); err != nil {
			t.Fatal(err)
		}
		prog := mpitest.CC(t, dir, "ring", src)
		r := c.Mpirun(dir, 2*time.Minute, 2, nil, prog, c.Local)
		if r.Code != 0 {
			t.Fatalf("mpirun: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		// mpirun fills each host's slots in order: ranks 0, 1 on a, 2, 3
		// on b, 4, 5 on c.
		for i, h := range c.Hosts {
			ents, _ := os.ReadDir(h.Dir)
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			sort.Strings(names)
			want := fmt.Sprintf("[rank-%d rank-%d]", 2*i, 2*i+1)
			if fmt.Sprint(names) != want {
				t.Errorf("host %s's directory holds %v, want %s", h.Name, names, want)
			}
			tag := "-"
			if h.Name == "b" {
				tag = "it's b"
			}
			for _, n := range names {
				b, _ := os.ReadFile(filepath.Join(h.Dir, n))
				if got := strings.TrimSpace(string(b)); got != h.Name+" "+tag {
					t.Errorf("%s on host %s: %q, want %q", n, h.Name, got, h.Name+" "+tag)
				}
			}
		}
		if ents, _ := os.ReadDir(c.Local); len(ents) != 0 {
			t.Errorf("the machine's own %s holds %d files; every rank ran on a test host", c.Local, len(ents))
		}
		// A process the test leaves running on a host is removed with it.
		cmd := c.Command(t.Context(), c.Host("a"), "sleep", "600")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go cmd.Wait()
	})
	if c == nil {
		t.Fatal("no cluster")
	}
	for _, h := range c.Hosts {
		if exec.Command("ip", "netns", "pids", h.ns).Run() == nil {
			t.Errorf("namespace %s is still there", h.ns)
		}
		if exec.Command("ip", "link", "show", h.veth).Run() == nil {
			t.Errorf("link %s is still there", h.veth)
		}
	}
	if exec.Command("ip", "link", "show", c.bridge).Run() == nil {
		t.Errorf("bridge %s is still there", c.bridge)
	}
}

// TestSweep: what a killed test process left (a namespace named with
// its pid) is removed by the next New; a live process's is not.
func TestSweep(t *testing.T) {
	Need(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := fmt.Sprintf("iot%d-%d-a", 250, dead.Process.Pid)
	live := fmt.Sprintf("iot%d-%d-a", 251, os.Getpid())
	for _, ns := range []string{stale, live} {
		if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			t.Fatalf("ip netns add %s: %v: %s", ns, err, out)
		}
	}
	t.Cleanup(func() { removeNS(stale); removeNS(live) })
	New(t, 1, Options{})
	if exec.Command("ip", "netns", "pids", stale).Run() == nil {
		t.Errorf("stale namespace %s was left", stale)
	}
	if exec.Command("ip", "netns", "pids", live).Run() != nil {
		t.Errorf("a live process's namespace %s was removed", live)
	}
}

// TestSlurm starts Slurm on two test hosts (slurmctld and one slurmd per
// host) and runs the MPI job of TestCluster with srun (2 tasks per node,
// PMIx) and again from a batch script (sbatch): every rank runs on
// its node, in its namespace, and talks to the others over TCP.
func TestSlurm(t *testing.T) {
	c := New(t, 2, Options{})
	s := c.StartSlurm(4)
	dir := t.TempDir()
	src := filepath.Join(dir, "ring.c")
	if err := os.WriteFile(src, []byte(ringC), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := mpitest.CC(t, dir, "ring", src)
	check := func(what string) {
		t.Helper()
		for i, h := range c.Hosts {
			for _, r := range []int{2 * i, 2*i + 1} {
				b, err := os.ReadFile(filepath.Join(h.Dir, fmt.Sprintf("rank-%d", r)))
				if err != nil || strings.TrimSpace(string(b)) != h.Name+" -" {
					t.Errorf("%s: rank %d on host %s: %q, %v", what, r, h.Name, b, err)
				}
				os.Remove(filepath.Join(h.Dir, fmt.Sprintf("rank-%d", r)))
			}
		}
	}
	r := s.Run(dir, 2*time.Minute, nil, "srun", "--nodes=2", "--ntasks-per-node=2", prog, c.Local)
	if r.Code != 0 {
		t.Fatalf("srun: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	check("srun")
	job := filepath.Join(dir, "job.sh")
	script := fmt.Sprintf("#!/bin/sh\n#SBATCH --nodes=2 --ntasks-per-node=2\n#SBATCH --output=%s/job.out\nsrun %s %s\n", dir, prog, c.Local)
	if err := os.WriteFile(job, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if st := s.Batch(dir, 2*time.Minute, job); st != "COMPLETED" {
		out, _ := os.ReadFile(filepath.Join(dir, "job.out"))
		t.Fatalf("batch job: %s\njob output:\n%s", st, out)
	}
	check("sbatch")
}
