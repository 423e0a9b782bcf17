package memlimit

import (
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// TestSet: under a data limit, a process without GOMEMLIMIT gets 80 % of
// it as the runtime's limit; with GOMEMLIMIT set, the runtime keeps the
// user's.
func TestSet(t *testing.T) {
	if os.Getenv("MEMLIMIT_CHILD") != "" {
		Set()
		os.Stdout.WriteString(strconv.FormatInt(debug.SetMemoryLimit(-1), 10) + "\n")
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	kb := int64(2 << 20) // 2 GiB
	for _, c := range []struct {
		env  string
		want int64
	}{
		{"", int64(float64(kb<<10) * Fraction)},
		{"GOMEMLIMIT=123MiB", 123 << 20},
	} {
		cmd := exec.Command("sh", "-c", "ulimit -d "+strconv.FormatInt(kb, 10)+` && exec "$0" -test.run '^TestSet$'`, exe)
		cmd.Env = append(os.Environ(), "MEMLIMIT_CHILD=1")
		if c.env != "" {
			cmd.Env = append(cmd.Env, c.env)
		}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", c.env, err)
		}
		got, err := strconv.ParseInt(strings.Fields(string(out))[0], 10, 64)
		if err != nil {
			t.Fatalf("%s: output %q", c.env, out)
		}
		// The cgroup may bound the child lower than the data limit.
		if bound, from := Bound(); c.env == "" && from == "cgroup memory.max" && bound < kb<<10 {
			c.want = int64(float64(bound) * Fraction)
		}
		if got != c.want {
			t.Fatalf("%q: runtime limit %d, want %d", c.env, got, c.want)
		}
	}
}

// TestThreads: under a data limit of 1 GiB and 8 MiB stacks, the threads
// share the fifth the runtime's limit leaves: 25; with 1 MiB stacks,
// 204; with no limits, MaxThreads (or half of RLIMIT_NPROC).
func TestThreads(t *testing.T) {
	if os.Getenv("THREADS_CHILD") != "" {
		os.Stdout.WriteString(strconv.Itoa(Threads()) + "\n")
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ulimit string
		want   int
	}{
		{"ulimit -d 1048576 && ulimit -s 8192", 25},
		{"ulimit -d 1048576 && ulimit -s 1024", 204},
	} {
		cmd := exec.Command("sh", "-c", c.ulimit+` && exec "$0" -test.run '^TestThreads$'`, exe)
		cmd.Env = append(os.Environ(), "THREADS_CHILD=1")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", c.ulimit, err)
		}
		if got, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])); got != c.want {
			t.Errorf("%s: Threads() = %q, want %d", c.ulimit, out, c.want)
		}
	}
	if n := Threads(); n < 4 || n > MaxThreads {
		t.Errorf("Threads() = %d", n)
	}
}
