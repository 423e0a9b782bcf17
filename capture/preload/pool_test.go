package preload

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
)

// waitFor polls cond for up to 10 s (the pool works in a goroutine).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("after 10 s: %s", what)
		}
	}
}

func slotsIn(dir string) int {
	n := 0
	for k := range PoolSlots {
		if _, err := os.Stat(filepath.Join(dir, "pool-"+strconv.Itoa(k))); err == nil {
			n++
		}
	}
	return n
}

// TestPoolKeepsSlots checks that a pool makes its files, remakes one
// that is taken, and removes what is left when it stops, leaving what
// was taken.
func TestPoolKeepsSlots(t *testing.T) {
	dir := t.TempDir()
	p, err := StartPool(dir)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pool's files made", func() bool { return slotsIn(dir) == PoolSlots })
	fi, err := os.Stat(filepath.Join(dir, "pool-3"))
	if err != nil || fi.Size() != poolFirst {
		t.Fatalf("pool-3: %v, size %d, want %d", err, fi.Size(), poolFirst)
	}
	taken := filepath.Join(dir, "spool-1-1.sp")
	if err := os.Rename(filepath.Join(dir, "pool-3"), taken); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the taken file remade", func() bool { return slotsIn(dir) == PoolSlots && p.Taken() == 1 })
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(left) != 1 || left[0] != taken {
		t.Errorf("after Stop: %v, want only %s", left, taken)
	}
}

// TestShimTakesSpoolsFromPool records a program that forks and execs
// with a pool in its spool directory: each process image's spool is one
// of the pool's files, renamed (none is created), and the trace is the
// one the shim makes without a pool.
func TestShimTakesSpoolsFromPool(t *testing.T) {
	libs := buildShim(t)
	dir := t.TempDir()
	bin := compile(t, dir, "forkexecpool", `
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
	int fd = open(argc > 1 ? "child.dat" : "parent.dat", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	write(fd, "c", 1);
	close(fd);
	if (argc > 1) return 0;
	for (int i = 0; i < 3; i++) {
		pid_t p = fork();
		if (p == 0) {
			execl(argv[0], argv[0], "again", (char *)NULL);
			_exit(127);
		}
		int st;
		waitpid(p, &st, 0);
	}
	return 0;
}
`)
	spool := filepath.Join(dir, "spool")
	if err := os.Mkdir(spool, 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := StartPool(spool)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pool's files made", func() bool { return slotsIn(spool) == PoolSlots })
	cmd := exec.Command(bin)
	cmd.Dir = dir
	cmd.Env = append(append(append(os.Environ(), "LD_PRELOAD="+libs.Preload("")), Env(spool)...), PoolEnv()...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// Each of the 4 images took a file: the pool saw them go.
	waitFor(t, "4 files taken", func() bool { return p.Taken() == 4 })
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := Recover(spool); err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(spool, "*"))
	if len(names) != 4 {
		t.Errorf("spool directory after the pool stopped: %v, want the 4 spools", names)
	}
	real, _ := filepath.EvalSymlinks(dir)
	rules, _ := filter.NewPaths([]string{real}, nil, true)
	evs, _, stats := encode(t, spool, rules)
	writes := 0
	for _, e := range evs[0] {
		if e.Op == trace.OpWrite {
			writes++
		}
	}
	if writes != 4 || stats[0].Processes != 4 {
		t.Errorf("%d writes, %d process images; want 4 and 4", writes, stats[0].Processes)
	}
}
