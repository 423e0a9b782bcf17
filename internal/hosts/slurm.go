package hosts

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

	"github.com/iotrace/iotrace/internal/mpitest"
)

// Slurm is a Slurm cluster on the test hosts: slurmctld on the first
// host, a slurmd on each (each host is one node, named as the host, with
// CPUs slots), jobs submitted from the first host. Debian's slurm-wlm
// (22.05) with Open MPI 4.1 launches MPI programs with its PMIx plug-in
// (srun --mpi=pmix): Open MPI is built with PMIx and without PMI-1/2.
type Slurm struct {
	c    *Cluster
	dir  string
	conf string // the first host's slurm.conf (srun, sbatch, slurmctld)
	// Env is the environment a job step needs here: Open MPI's TCP
	// transport on the cluster's bridge, as mpirun's options give it.
	Env []string
}

// NeedSlurm skips t (fails it under CI=true) unless Slurm's daemons and
// commands are installed.
func NeedSlurm(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"slurmctld", "slurmd", "srun", "sinfo", "sbatch"} {
		if _, err := exec.LookPath(tool); err != nil {
			msg := fmt.Sprintf("%s not found (install slurm-wlm: slurmctld, slurmd, slurm-client)", tool)
			if os.Getenv("CI") == "true" {
				t.Fatalf("Slurm is required under CI: %s", msg)
			}
			t.Skipf("Slurm unavailable: %s", msg)
		}
	}
}

// StartSlurm configures and starts Slurm on the cluster's hosts, each
// with cpus CPUs, and waits until every node is idle. The daemons end
// with the cluster.
func (c *Cluster) StartSlurm(cpus int) *Slurm {
	c.t.Helper()
	NeedSlurm(c.t)
	s := &Slurm{c: c, dir: filepath.Join(filepath.Dir(c.Local), "slurm")}
	first := c.Hosts[0]
	var b strings.Builder
	fmt.Fprintf(&b, `# iotrace test hosts (internal/hosts)
ClusterName=iotrace
SlurmctldHost=%s(%s)
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
MpiDefault=pmix
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
SlurmdParameters=config_overrides
ReturnToService=2
StateSaveLocation=%[3]s/state
SlurmdSpoolDir=%[3]s/spool-%%n
SlurmctldPidFile=%[3]s/slurmctld.pid
SlurmdPidFile=%[3]s/slurmd-%%n.pid
SlurmctldLogFile=%[3]s/slurmctld.log
SlurmdLogFile=%[3]s/slurmd-%%n.log
`, first.Name, first.Addr, s.dir)
	var names []string
	for _, h := range c.Hosts {
		fmt.Fprintf(&b, "NodeName=%s NodeAddr=%s CPUs=%d State=UNKNOWN\n", h.Name, h.Addr, cpus)
		names = append(names, h.Name)
	}
	fmt.Fprintf(&b, "PartitionName=test Nodes=%s Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES\n", strings.Join(names, ","))
	for _, d := range []string{"state"} {
		if err := os.MkdirAll(filepath.Join(s.dir, d), 0o755); err != nil {
			c.t.Fatal(err)
		}
	}
	// Each node has a configuration directory of its own: the nodes
	// share one file system here, and the PMIx plug-in's directories
	// (under /tmp by default, named by job) would collide.
	for _, h := range c.Hosts {
		conf := filepath.Join(s.dir, "conf-"+h.Name)
		for _, d := range []string{conf, filepath.Join(s.dir, "spool-"+h.Name), filepath.Join(s.dir, "pmix-"+h.Name)} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				c.t.Fatal(err)
			}
		}
		files := map[string]string{
			"slurm.conf": b.String(),
			"mpi.conf":   "PMIxCliTmpDirBase=" + filepath.Join(s.dir, "pmix-"+h.Name) + "\n",
		}
		for n, text := range files {
			if err := os.WriteFile(filepath.Join(conf, n), []byte(text), 0o644); err != nil {
				c.t.Fatal(err)
			}
		}
	}
	s.conf = filepath.Join(s.dir, "conf-"+first.Name, "slurm.conf")
	s.Env = []string{
		"SLURM_CONF=" + s.conf,
		"OMPI_MCA_btl=tcp,self",
		"OMPI_MCA_btl_tcp_if_include=" + c.Subnet,
		"OMPI_MCA_oob_tcp_if_include=" + c.Subnet,
	}
	// The daemons run in the foreground, as children of the test (and
	// in their hosts' namespaces, whose tear-down ends them).
	start := func(h *Host, argv ...string) {
		cmd := c.Command(context.Background(), h, argv...)
		if err := cmd.Start(); err != nil {
			c.t.Fatalf("%s on %s: %v", argv[0], h.Name, err)
		}
		go cmd.Wait()
	}
	start(first, "slurmctld", "-D", "-f", s.conf)
	for _, h := range c.Hosts {
		start(h, "slurmd", "-D", "-f", filepath.Join(s.dir, "conf-"+h.Name, "slurm.conf"), "-N", h.Name)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, _ := s.command(context.Background(), nil, "sinfo", "--noheader", "--Node", "--format=%N %t").CombinedOutput()
		idle := 0
		for _, l := range strings.Split(string(out), "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[1] == "idle" {
				idle++
			}
		}
		if idle == len(c.Hosts) {
			return s
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("Slurm did not start: sinfo: %s\n%s", bytes.TrimSpace(out), s.logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// logs returns the end of the daemons' logs, for a failure.
func (s *Slurm) logs() string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(s.dir, "*.log"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		fmt.Fprintf(&b, "== %s\n%s\n", filepath.Base(f), strings.Join(lines, "\n"))
	}
	return b.String()
}

// command runs a Slurm command on the first host (the submit host),
// with the cluster's environment and extra variables.
func (s *Slurm) command(ctx context.Context, extra []string, argv ...string) *exec.Cmd {
	env := append(append([]string{"env"}, s.Env...), "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
	env = append(env, extra...)
	return s.c.Command(ctx, s.c.Hosts[0], append(env, argv...)...)
}

// Run runs a Slurm command (srun, sbatch --wait, salloc…) with its
// arguments on the submit host, in dir, with a deadline and extra
// environment variables.
func (s *Slurm) Run(dir string, timeout time.Duration, env []string, argv ...string) mpitest.Result {
	s.c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := s.command(ctx, env, append([]string{"sh", "-c", `cd "$0" && exec "$@"`, dir}, argv...)...)
	res := mpitest.Collect(s.c.t, ctx, cmd, s.logs)
	if res.Code != 0 {
		res.Stderr += "\n" + s.logs()
	}
	return res
}

// Batch submits the batch script job (sbatch) from dir and waits for the
// job to end; it returns the job's final state (COMPLETED, FAILED…).
// sbatch --wait would do, but polls every few seconds.
func (s *Slurm) Batch(dir string, timeout time.Duration, job string) string {
	s.c.t.Helper()
	r := s.Run(dir, timeout, nil, "sbatch", "--parsable", job)
	if r.Code != 0 {
		s.c.t.Fatalf("sbatch %s: exit %d\n%s\n%s", job, r.Code, r.Stdout, r.Stderr)
	}
	id := strings.TrimSpace(strings.Split(r.Stdout, ";")[0])
	deadline := time.Now().Add(timeout)
	for {
		out, _ := s.command(context.Background(), nil, "scontrol", "show", "job", id).CombinedOutput()
		for _, f := range strings.Fields(string(out)) {
			if st, ok := strings.CutPrefix(f, "JobState="); ok {
				switch st {
				case "PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED":
				default:
					return st
				}
			}
		}
		if time.Now().After(deadline) {
			s.c.t.Fatalf("batch job %s: no end after %v: %s\n%s", id, timeout, bytes.TrimSpace(out), s.logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
