package preload

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
)

// TestShimProcessEvents records a program that starts a thread, forks a
// child that writes to a descriptor it inherited and then execs the
// program again (whose new image writes to it too), and exits with a
// status; and checks the process events the encoder makes: fork, clone,
// exec, inherit and exit, with their threads, in order.
func TestShimProcessEvents(t *testing.T) {
	libs := buildShim(t)
	dir := t.TempDir()
	bin := compile(t, dir, "procs", `
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
static int logfd;
static void *worker(void *arg) { write(logfd, "t", 1); return arg; }
int main(int argc, char **argv) {
	if (argc > 1) {
		write(3, "e", 1);
		int fd = open("exec.dat", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		write(fd, "x", 1);
		close(fd);
		return 5;
	}
	logfd = open("log.dat", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	pthread_t th;
	pthread_create(&th, NULL, worker, NULL);
	pthread_join(th, NULL);
	pid_t p = fork();
	if (p == 0) {
		write(logfd, "c", 1);
		execl(argv[0], argv[0], "again", (char *)NULL);
		_exit(127);
	}
	int st;
	waitpid(p, &st, 0);
	write(logfd, "p", 1);
	return WEXITSTATUS(st) == 5 ? 3 : 1;
}
`)
	spool, err := record(t, libs, dir, bin)
	if err == nil {
		t.Fatal("the program exited with 0, want 3")
	}
	real, _ := filepath.EvalSymlinks(dir)
	rules, _ := filter.NewPaths([]string{real}, nil, true)
	evs, paths, stats := encode(t, spool, rules)
	if stats[0].Processes != 3 || stats[0].Threads != 3 {
		t.Errorf("stats %+v: want 3 process images (parent, child, child after exec) and 3 threads", stats[0])
	}
	var lines []string
	for _, e := range evs[0] {
		name := strings.TrimPrefix(strings.TrimPrefix(paths.Lookup(e.Path), real), dir)
		s := fmt.Sprintf("%d %s", e.Thread, e.Op)
		switch e.Op {
		case trace.OpFork, trace.OpClone, trace.OpExit:
			s += fmt.Sprintf(" ret=%d", e.Ret)
		case trace.OpExec:
			s += " " + filepath.Base(paths.Lookup(e.Path))
		case trace.OpInherit:
			s += fmt.Sprintf(" fd=%d %s", e.FD, name)
		case trace.OpWrite, trace.OpOpen, trace.OpClose:
			s += fmt.Sprintf(" fd=%d %s", e.FD, name)
		}
		lines = append(lines, s)
	}
	got := strings.Join(lines, "\n")
	t.Logf("events:\n%s", got)
	want := `0 open fd=3 /log.dat
0 clone ret=1
1 write fd=3 
1 exit ret=0
0 fork ret=2
2 inherit fd=3 /log.dat
2 write fd=3 
2 exec procs
2 inherit fd=3 /log.dat
2 write fd=3 
2 open fd=4 /exec.dat
2 write fd=4 
2 close fd=4 
2 exit ret=5
0 write fd=3 
0 exit ret=3`
	if got != want {
		t.Errorf("want:\n%s", want)
	}
}
