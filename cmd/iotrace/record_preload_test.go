package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// TestRecordPreload records a C program with --preload, as a user runs
// it, and checks its calls; then encodes a kept spool again with
// --from-spool.
func TestRecordPreload(t *testing.T) {
	dir := t.TempDir()
	bin := recBuildC(t, dir, "prog", `
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
int main(void) {
	char b[512] = {0};
	int fd = open("out.dat", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	for (int i = 0; i < 100; i++) write(fd, b, 512);
	fsync(fd);
	close(fd);
	FILE *f = fopen("out.dat", "r");
	fread(b, 1, 512, f);
	fclose(f);
	return 3;
}
`)
	env := []string{"IOTRACE_CACHE=" + filepath.Join(dir, "cache")}
	out := filepath.Join(dir, "p.iot")
	spool := filepath.Join(dir, "spool")
	_, stderr, code := recRun(t, dir, env, "", "record", "--preload", "--spool", spool, "-o", out, "--", bin)
	if code != 3 {
		t.Fatalf("exit %d, want the program's 3\n%s", code, stderr)
	}
	got, _ := tallies(t, out)
	want := map[trace.Op]tally{trace.OpOpen: {1, 0}, trace.OpWrite: {100, 51200}, trace.OpFsync: {1, 0},
		trace.OpClose: {1, 0}, trace.OpFopen: {1, 0}, trace.OpRead: {1, 4096}, trace.OpFclose: {1, 0}}
	for op, w := range want {
		if g := got[0][op]; g != w {
			t.Errorf("%s: %d calls, %d bytes; want %d, %d", op, g.n, g.bytes, w.n, w.bytes)
		}
	}
	// fread of 512 bytes is the read that fills stdio's buffer (4096
	// bytes: the file system's block), as the kernel sees it.
	if g := got[0][trace.OpFread]; g.n != 0 {
		t.Errorf("fread recorded as a library call: %+v", g)
	}
	// --spool keeps the spools: encode them again.
	again := filepath.Join(dir, "again.iot")
	if _, stderr, code := recRun(t, dir, env, "", "record", "--from-spool", spool, "-o", again); code != 0 {
		t.Fatalf("--from-spool: exit %d\n%s", code, stderr)
	}
	if g, _ := tallies(t, again); g[0][trace.OpWrite] != want[trace.OpWrite] {
		t.Errorf("--from-spool: writes %+v", g[0][trace.OpWrite])
	}
	// A spool directory already used is refused; an empty one has nothing.
	if _, stderr, code := recRun(t, dir, env, "", "record", "--preload", "--spool", spool, "-o", out, "--", bin); code == 0 || !strings.Contains(stderr, "another run") {
		t.Errorf("reused --spool: exit %d, %q", code, stderr)
	}
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	if _, stderr, code := recRun(t, dir, env, "", "record", "--from-spool", empty, "-o", filepath.Join(dir, "e.iot")); code == 0 || !strings.Contains(stderr, "no process wrote a spool") {
		t.Errorf("empty --from-spool: exit %d, %q", code, stderr)
	}
}
