// Package hosts makes test hosts on one machine, so that tests run MPI
// jobs over several hosts for real: each host is a Linux network
// namespace with an address of its own on a private bridge, a host name
// of its own (a UTS namespace), and a directory of its own mounted over a
// path every host shares the name of (a mount namespace), as node-local
// scratch is on a cluster. Open MPI reaches them as remote hosts: its
// remote-shell launcher (plm rsh) runs a small agent, written per
// cluster, that enters the host's namespaces, and its TCP transport
// carries the messages (btl tcp,self; the out-of-band channel over the
// bridge too).
//
// Making namespaces needs root, iproute2 (ip) and util-linux (unshare).
// Without them a test is skipped with the reason, and under CI=true it
// fails: .ci/run installs them and CI runs as root.
//
// A cluster is torn down when its test ends (testing.TB.Cleanup):
// processes left in its namespaces are killed, then the namespaces, the
// links and the bridge are removed. A test binary that is killed cannot
// clean up; the next New removes what dead test processes left.
package hosts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iotrace/iotrace/internal/mpitest"
)

// Host is one test host.
type Host struct {
	Name string // its host name, and its name for mpirun --host
	Addr string // its IPv4 address on the cluster's bridge
	// Dir is the host's own directory as the machine sees it; processes
	// on the host see it at the cluster's Local path.
	Dir string
	// Env is added to the environment of every process started on the
	// host (a test hook such as a shifted clock).
	Env  []string
	ns   string // network namespace
	veth string // the bridge's end of its link
}

// Cluster is a set of test hosts on one bridge.
type Cluster struct {
	Hosts []*Host
	// Subnet is the bridge's network (CIDR), for Open MPI's
	// btl_tcp_if_include and oob_tcp_if_include.
	Subnet string
	// Local is the path at which each host sees its own directory
	// (Host.Dir). On the machine itself (where mpirun runs, as on a
	// login node) it is an empty directory.
	Local string
	// Agent is the remote shell for mpirun's --mca plm_rsh_agent.
	Agent  string
	bridge string
	etc    string // the hosts' /etc/hosts and /etc/resolv.conf
	net    int
	t      testing.TB
}

// Options describe a cluster.
type Options struct {
	// Env holds extra environment variables per host name.
	Env map[string][]string
}

// names of things a cluster makes: iotbrN (bridge, N the third octet of
// its subnet: making it is the lock on the subnet), iotvN-H (the bridge
// end of host H's link), iotN-PID-H (host H's namespace, PID the test
// process, so that another's leftovers can be told from a live one's).
var nsName = regexp.MustCompile(`^iot(\d+)-(\d+)-([a-z0-9]+)$`)

const subnetBase = "10.213"

// Need skips t (fails it under CI=true) unless test hosts can be made:
// root, ip with network namespaces, unshare, and MPI (mpitest.Need).
func Need(t testing.TB) {
	t.Helper()
	if err := check(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("test hosts are required under CI: %v", err)
		}
		t.Skipf("test hosts unavailable: %v", err)
	}
	mpitest.Need(t)
}

var checked struct {
	sync.Once
	err error
}

func check() error {
	checked.Do(func() {
		if os.Geteuid() != 0 {
			checked.err = errors.New("network namespaces need root")
			return
		}
		for _, tool := range []string{"ip", "nsenter", "unshare", "hostname", "mount"} {
			if _, err := exec.LookPath(tool); err != nil {
				checked.err = fmt.Errorf("%s not found (install iproute2 and util-linux)", tool)
				return
			}
		}
		if out, err := exec.Command("ip", "netns", "list").CombinedOutput(); err != nil {
			checked.err = fmt.Errorf("ip netns list: %v: %s", err, bytes.TrimSpace(out))
		}
	})
	return checked.err
}

// New makes n hosts, named a, b, c…, and removes them when t ends.
func New(t testing.TB, n int, opts Options) *Cluster {
	t.Helper()
	Need(t)
	if n < 1 || n > 26 {
		t.Fatalf("hosts.New: %d hosts (1 to 26)", n)
	}
	sweep()
	c := &Cluster{t: t}
	// The directory first: cleanups run last-registered first, so the
	// hosts' processes (Slurm's daemons writing their spools) are killed
	// before the directory is removed, not while it is.
	root := t.TempDir()
	t.Cleanup(c.close)
	// A free subnet: the first bridge name that can be made.
	start := os.Getpid() % 200
	for i := 0; i < 200; i++ {
		k := 20 + (start+i)%200
		br := fmt.Sprintf("iotbr%d", k)
		if exec.Command("ip", "link", "add", br, "type", "bridge").Run() == nil {
			c.bridge, c.net = br, k
			break
		}
	}
	if c.bridge == "" {
		t.Fatal("hosts.New: no free subnet (every bridge iotbr20…iotbr219 exists)")
	}
	c.Subnet = fmt.Sprintf("%s.%d.0/24", subnetBase, c.net)
	c.ip("addr", "add", fmt.Sprintf("%s.%d.1/24", subnetBase, c.net), "dev", c.bridge)
	c.ip("link", "set", c.bridge, "up")

	c.Local = filepath.Join(root, "local")
	if err := os.Mkdir(c.Local, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		name := string(rune('a' + i))
		h := &Host{
			Name: name,
			Addr: fmt.Sprintf("%s.%d.%d", subnetBase, c.net, 2+i),
			Dir:  filepath.Join(root, "host-"+name),
			Env:  opts.Env[name],
			ns:   fmt.Sprintf("iot%d-%d-%s", c.net, os.Getpid(), name),
			veth: fmt.Sprintf("iotv%d-%s", c.net, name),
		}
		if err := os.Mkdir(h.Dir, 0o755); err != nil {
			t.Fatal(err)
		}
		c.Hosts = append(c.Hosts, h)
		c.ip("netns", "add", h.ns)
		c.ip("link", "add", h.veth, "type", "veth", "peer", "name", "eth0", "netns", h.ns)
		c.ip("link", "set", h.veth, "master", c.bridge, "up")
		c.ip("-n", h.ns, "addr", "add", h.Addr+"/24", "dev", "eth0")
		c.ip("-n", h.ns, "link", "set", "eth0", "up")
		c.ip("-n", h.ns, "link", "set", "lo", "up")
		c.ip("-n", h.ns, "route", "add", "default", "via", fmt.Sprintf("%s.%d.1", subnetBase, c.net))
	}
	// The hosts' name service: their names in a hosts file of their
	// own, and no name server (the machine's is out of reach from the
	// bridge: a lookup would wait for it to time out).
	etc := filepath.Join(root, "etc")
	if err := os.Mkdir(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	hostsFile := "127.0.0.1 localhost\n"
	for _, h := range c.Hosts {
		hostsFile += h.Addr + " " + h.Name + "\n"
	}
	for name, text := range map[string]string{"hosts": hostsFile, "resolv.conf": "# test hosts: no name server\n"} {
		if err := os.WriteFile(filepath.Join(etc, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c.etc = etc
	c.Agent = filepath.Join(root, "agent")
	if err := os.WriteFile(c.Agent, []byte(c.agentScript()), 0o755); err != nil {
		t.Fatal(err)
	}
	return c
}

// ip runs ip ARGS… and fails the test if it fails.
func (c *Cluster) ip(args ...string) {
	c.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		c.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
}

// agentScript is the remote shell: "agent HOST COMMAND…" runs the shell
// command COMMAND… on HOST, as ssh would: inside the host's network
// namespace, with its own host name, its own directory mounted at Local,
// the cluster's hosts file, and its environment.
func (c *Cluster) agentScript() string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n# Test hosts of iotrace (internal/hosts): Open MPI's remote shell.\n")
	b.WriteString("# agent HOST COMMAND...: run the shell command COMMAND on HOST.\n")
	b.WriteString("h=$1; shift\ncase \"$h\" in\n")
	for _, h := range c.Hosts {
		env := ""
		for _, kv := range h.Env {
			k, v, _ := strings.Cut(kv, "=")
			env += "export " + k + "=" + shellQuote(v) + "; "
		}
		fmt.Fprintf(&b, "%s|%s) ns=%s; dir=%s; env=%s ;;\n", h.Name, h.Addr, h.ns, shellQuote(h.Dir), shellQuote(env))
	}
	b.WriteString("*) echo \"agent: no test host $h\" >&2; exit 255 ;;\nesac\n")
	fmt.Fprintf(&b, "etc=%s\n", shellQuote(c.etc))
	// nsenter, not ip netns exec, which would mount a /sys of the
	// namespace's own and so hide the cgroup hierarchies slurmd needs.
	b.WriteString("exec nsenter --net=/run/netns/\"$ns\" unshare --uts --mount sh -c '" +
		"hostname \"$1\" && mount --bind \"$2\" \"$3\" && " +
		"mount --bind \"$4/hosts\" /etc/hosts && mount --bind \"$4/resolv.conf\" /etc/resolv.conf && " +
		"eval \"$5\"' sh \"$h\" \"$dir\" " + shellQuote(c.Local) + " \"$etc\" \"$env $*\"\n")
	return b.String()
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Host returns the host named name.
func (c *Cluster) Host(name string) *Host {
	for _, h := range c.Hosts {
		if h.Name == name {
			return h
		}
	}
	c.t.Fatalf("no test host %q", name)
	return nil
}

// MCA is the Open MPI options that run a job on the cluster's hosts:
// the agent as remote shell, TCP between processes, and the bridge's
// network for both.
func (c *Cluster) MCA() []string {
	return []string{
		"--mca", "plm_rsh_agent", c.Agent,
		"--mca", "btl", "tcp,self",
		"--mca", "btl_tcp_if_include", c.Subnet,
		"--mca", "oob_tcp_if_include", c.Subnet,
	}
}

// HostList is mpirun's --host value for slots processes on each host
// (a:2,b:2).
func (c *Cluster) HostList(slots int) string {
	var l []string
	for _, h := range c.Hosts {
		l = append(l, fmt.Sprintf("%s:%d", h.Name, slots))
	}
	return strings.Join(l, ",")
}

// Mpirun runs an MPI job of slots processes per host, in dir on the
// machine (mpirun's own directory; the processes start in the same path
// on their hosts), with a deadline and extra environment variables.
func (c *Cluster) Mpirun(dir string, timeout time.Duration, slots int, env []string, argv ...string) mpitest.Result {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return mpitest.Collect(c.t, ctx, c.MpirunCommand(ctx, dir, slots, env, argv...), nil)
}

// MpirunCommand is the command Mpirun runs: mpirun of slots processes
// per host, in dir, with extra environment variables; argv may start with
// more of mpirun's options.
func (c *Cluster) MpirunCommand(ctx context.Context, dir string, slots int, env []string, argv ...string) *exec.Cmd {
	c.t.Helper()
	mpitest.Need(c.t)
	args := []string{"-np", strconv.Itoa(slots * len(c.Hosts)), "--host", c.HostList(slots), "--bind-to", "none"}
	args = append(append(args, c.MCA()...), argv...)
	cmd := exec.CommandContext(ctx, "mpirun", args...)
	cmd.Dir = dir
	cmd.Env = mpitest.Env(env...)
	return cmd
}

// Pids returns the processes running on host h.
func (c *Cluster) Pids(h *Host) []int {
	out, _ := exec.Command("ip", "netns", "pids", h.ns).Output()
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	return pids
}

// Command is a command that runs argv on host h (through the agent, as
// mpirun starts its daemons).
func (c *Cluster) Command(ctx context.Context, h *Host, argv ...string) *exec.Cmd {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellQuote(a)
	}
	return exec.CommandContext(ctx, c.Agent, h.Name, strings.Join(q, " "))
}

// SetLink takes host h's link to the bridge down (up false) or up again:
// the host is cut off from the others, its processes go on.
func (c *Cluster) SetLink(h *Host, up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	if out, err := exec.Command("ip", "link", "set", h.veth, state).CombinedOutput(); err != nil {
		return fmt.Errorf("ip link set %s %s: %v: %s", h.veth, state, err, bytes.TrimSpace(out))
	}
	return nil
}

// close removes the cluster: processes first, then namespaces, links and
// the bridge. It reports what it could not remove.
func (c *Cluster) close() {
	var errs []string
	for _, h := range c.Hosts {
		if err := removeNS(h.ns); err != nil {
			errs = append(errs, err.Error())
		}
		exec.Command("ip", "link", "del", h.veth).Run() // gone with the namespace's end
	}
	if c.bridge != "" {
		if out, err := exec.Command("ip", "link", "del", c.bridge).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Sprintf("ip link del %s: %v: %s", c.bridge, err, bytes.TrimSpace(out)))
		}
	}
	if len(errs) > 0 {
		c.t.Errorf("hosts: tear-down: %s", strings.Join(errs, "; "))
	}
}

// removeNS kills the processes in namespace ns and removes it.
func removeNS(ns string) error {
	for try := 0; try < 50; try++ {
		out, _ := exec.Command("ip", "netns", "pids", ns).Output()
		pids := strings.Fields(string(out))
		if len(pids) == 0 {
			break
		}
		for _, p := range pids {
			if pid, err := strconv.Atoi(p); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns del %s: %v: %s", ns, err, bytes.TrimSpace(out))
	}
	return nil
}

// sweep removes what clusters of test processes that no longer run left
// behind (a test binary killed by its deadline).
func sweep() {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	dead := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		m := nsName.FindStringSubmatch(f[0])
		if m == nil {
			continue
		}
		pid, _ := strconv.Atoi(m[2])
		if alive(pid) {
			continue
		}
		removeNS(f[0])
		exec.Command("ip", "link", "del", fmt.Sprintf("iotv%s-%s", m[1], m[3])).Run()
		dead[m[1]] = true
	}
	for k := range dead {
		exec.Command("ip", "link", "del", "iotbr"+k).Run()
	}
}

func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
