//go:build linux && (amd64 || arm64)

package ptrace

import (
	"strconv"
	"testing"
)

// BenchmarkTracedPwrite measures a traced 4 KiB pwrite (two stops, one
// event); run it pinned (taskset -c 0) and unpinned. bench/record/run.sh
// compares the whole command with strace.
func BenchmarkTracedPwrite(b *testing.B) {
	dir := b.TempDir()
	bin := buildC(b, dir, "pw", `
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
	static char buf[4096];
	long n = atol(argv[1]);
	int fd = open("f", O_CREAT|O_WRONLY|O_TRUNC, 0644);
	for (long i = 0; i < n; i++) pwrite(fd, buf, sizeof buf, (i % 256) * 4096);
	close(fd);
	return 0;
}`)
	sink := &countSink{}
	b.ResetTimer()
	if _, err := Run(Config{Argv: []string{bin, strconv.Itoa(b.N)}, Dir: dir, Sink: sink}); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if sink.n < b.N {
		b.Fatalf("%d events for %d calls", sink.n, b.N)
	}
}
