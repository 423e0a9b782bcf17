package preload

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
)

// callsProg makes each call the shim records besides the open, read and
// write families, some through the _FORTIFY_SOURCE entry points (the
// test checks that the compiler chose them).
const callsProg = `
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <unistd.h>

volatile int rdonly = O_RDONLY, n4k = 4096;

int main(void) {
	char buf[8192];
	memset(buf, 'z', sizeof buf);
	int src = open("src.dat", O_RDWR | O_CREAT | O_TRUNC, 0644);
	write(src, buf, 8192);
	close(src);
	src = open("src.dat", rdonly);                 /* __open_2 */
	read(src, buf, n4k);                            /* __read_chk, at 0 */
	pread(src, buf, n4k, 100);                      /* __pread64_chk */
	int dir = open(".", O_RDONLY | O_DIRECTORY);
	int s2 = openat(dir, "src.dat", rdonly);        /* __openat_2 */
	close(s2);
	int dst = open("dst.dat", O_RDWR | O_CREAT | O_TRUNC, 0644);
	copy_file_range(src, NULL, dst, NULL, 1000, 0);  /* from 4096 to 0 */
	off64_t oi = 10, oo = 5000;
	copy_file_range(src, &oi, dst, &oo, 100, 0);
	lseek(src, 0, SEEK_SET);
	sendfile(dst, src, NULL, 300);                  /* from 0 to 1000 */
	int p[2];
	pipe(p);
	splice(src, NULL, p[1], NULL, 200, 0);          /* from 300 */
	splice(p[0], NULL, dst, NULL, 200, 0);          /* to 1300 */
	fallocate(dst, 0, 0, 65536);
	posix_fadvise(src, 0, 0, POSIX_FADV_SEQUENTIAL);
	syncfs(dst);
	sync();
	void *m = mmap(NULL, 8192, PROT_READ, MAP_SHARED, src, 0);
	munmap(m, 8192);
	m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); /* not a file */
	munmap(m, 8192);
	link("src.dat", "hard.dat");
	linkat(dir, "src.dat", AT_FDCWD, "hard2.dat", 0);
	symlink("src.dat", "soft.dat");
	symlinkat("../x/y", dir, "soft2.dat");
	readlink("soft.dat", buf, n4k);                 /* __readlink_chk */
	readlinkat(dir, "soft2.dat", buf, n4k);         /* __readlinkat_chk */
	int d2 = fcntl(src, F_DUPFD_CLOEXEC, 10);
	fcntl(d2, F_SETFD, 0);
	fcntl(dst, F_SETFL, O_APPEND);
	write(dst, buf, 10);                            /* O_APPEND: at the end, 65536 */
	close(p[1]);
	dup2(p[0], d2);                                 /* a pipe onto a file's descriptor */
	read(d2, buf, 1);                               /* the pipe: not recorded */
	int hi = dup2(src, 40);
	close_range(30, 50, 0);
	read(hi, buf, 10);                              /* EBADF: closed by close_range */
	printf("%d\n", open("later.dat", O_WRONLY | O_CREAT, 0600));
	return 0;
}
`

func TestShimCalls(t *testing.T) {
	libs := buildShim(t)
	dir := t.TempDir()
	bin := compile(t, dir, "calls", callsProg, "-O2", "-D_FORTIFY_SOURCE=2")
	out, err := exec.Command("nm", "-D", "--undefined-only", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, sym := range []string{"__open_2", "__openat_2", "__read_chk", "__pread_chk", "__readlink_chk", "__readlinkat_chk"} {
		if !strings.Contains(string(out), sym+"@") {
			t.Errorf("the test program does not call %s; it calls:\n%s", sym, out)
		}
	}
	spool, err := record(t, libs, dir, bin)
	if err != nil {
		t.Fatal(err)
	}
	rules, _ := filter.NewPaths([]string{dir}, nil, true)
	evs, paths, _ := encode(t, spool, rules)
	real, _ := filepath.EvalSymlinks(dir)
	rel := func(id trace.PathID) string {
		n := paths.Lookup(id)
		return strings.TrimPrefix(strings.TrimPrefix(n, real), dir)
	}
	var lines []string
	for _, e := range evs[0] {
		s := fmt.Sprintf("%s fd=%d %s", e.Op, e.FD, rel(e.Path))
		switch e.Op {
		case trace.OpCopyFileRange, trace.OpSendfile, trace.OpSplice:
			s += fmt.Sprintf(" -> fd=%d %s off=%d off2=%d size=%d ret=%d flags=%d", e.FD2, rel(e.Path2), e.Offset, e.Offset2, e.Size, e.Ret, e.Flags)
		case trace.OpSymlink, trace.OpSymlinkat, trace.OpLink, trace.OpLinkat:
			s += fmt.Sprintf(" -> %s ret=%d", paths.Lookup(e.Path2), e.Ret)
		case trace.OpRead, trace.OpPread, trace.OpWrite:
			s += fmt.Sprintf(" off=%d size=%d ret=%d", e.Offset, e.Size, e.Ret)
		case trace.OpFallocate, trace.OpFadvise, trace.OpMmap, trace.OpFcntl, trace.OpCloseRange, trace.OpReadlink, trace.OpReadlinkat:
			s += fmt.Sprintf(" off=%d size=%d flags=%#x mode=%d ret=%d", e.Offset, e.Size, e.Flags, e.Mode, e.Ret)
		case trace.OpDup2, trace.OpOpen, trace.OpOpenat:
			s += fmt.Sprintf(" ret=%d", e.Ret)
		}
		lines = append(lines, s)
	}
	got := strings.Join(lines, "\n")
	t.Logf("events:\n%s", got)
	// The descriptor F_DUPFD_CLOEXEC gave: 10 or above (the test may
	// inherit some).
	d2 := "?"
	for _, e := range evs[0] {
		if e.Op == trace.OpFcntl && e.Flags == trace.FDupfdCloexec {
			d2 = fmt.Sprint(e.Ret)
		}
	}
	for _, want := range []string{
		"open fd=3 /src.dat ret=3",
		"read fd=3  off=0 size=4096 ret=4096",
		"pread fd=3  off=100 size=4096 ret=4096",
		"openat fd=5 /src.dat ret=5",
		"copy_file_range fd=3 /src.dat -> fd=5 /dst.dat off=4096 off2=0 size=1000 ret=1000 flags=0",
		"copy_file_range fd=3 /src.dat -> fd=5 /dst.dat off=10 off2=5000 size=100 ret=100 flags=3",
		"sendfile fd=3 /src.dat -> fd=5 /dst.dat off=0 off2=1000 size=300 ret=300 flags=0",
		"splice fd=3 /src.dat -> fd=7  off=300 off2=0 size=200 ret=200 flags=0",
		"splice fd=6  -> fd=5 /dst.dat off=0 off2=1300 size=200 ret=200 flags=0",
		"fallocate fd=5  off=0 size=65536 flags=0x0 mode=0 ret=0",
		"posix_fadvise fd=3  off=0 size=0 flags=0x2 mode=0 ret=0",
		"syncfs fd=5 ",
		"sync fd=0 ",
		"mmap fd=3  off=0 size=8192 flags=0x1 mode=1 ret=0",
		"link fd=-100 /src.dat -> " + dir,
		"linkat fd=4 /src.dat -> " + dir,
		"symlink fd=-100 /soft.dat -> src.dat ret=0",
		"symlinkat fd=4 /soft2.dat -> ../x/y ret=0",
		"readlink fd=-100 /soft.dat off=0 size=4096 flags=0x0 mode=0 ret=7",
		"readlinkat fd=4 /soft2.dat off=0 size=4096 flags=0x0 mode=0 ret=6",
		"fcntl fd=3  off=0 size=10 flags=0x406 mode=0 ret=" + d2,
		"fcntl fd=" + d2 + "  off=0 size=0 flags=0x2 mode=0 ret=0",
		"fcntl fd=5  off=0 size=1024 flags=0x4 mode=0 ret=0",
		"write fd=5  off=65536 size=10 ret=10",
		"dup2 fd=6  ret=" + d2,
		"close_range fd=30  off=0 size=50 flags=0x0 mode=0 ret=0",
		"open fd=7 /later.dat ret=7",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in the events", want)
		}
	}
	for _, e := range evs[0] {
		if e.Op == trace.OpMmap && e.FD < 0 {
			t.Errorf("anonymous mmap recorded: %+v", e)
		}
		if e.Op == trace.OpRead && (fmt.Sprint(e.FD) == d2 || e.FD == 40) {
			t.Errorf("a read on a descriptor that no longer names a recorded file: %+v", e)
		}
	}
}

// TestShimInternalOpens checks the opens glibc makes itself: the mkstemp
// family, tmpfile and opendir are recorded as the openat the kernel sees
// (and opendir's fstat), closedir as the close.
func TestShimInternalOpens(t *testing.T) {
	libs := buildShim(t)
	dir := t.TempDir()
	bin := compile(t, dir, "tmp", `
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(void) {
	char a[] = "tmpXXXXXX", b[] = "tmpXXXXXX.suf";
	int fa = mkstemp(a);
	int fb = mkostemps(b, 4, O_APPEND | O_CLOEXEC);
	write(fa, "abc", 3);
	close(fa);
	close(fb);
	FILE *t = tmpfile();
	fclose(t);
	DIR *d = opendir(".");
	while (readdir(d)) {}
	closedir(d);
	printf("%s %s\n", a, b);
	return 0;
}
`)
	spool, err := record(t, libs, dir, bin)
	if err != nil {
		t.Fatal(err)
	}
	evs, paths, _ := encode(t, spool, nil)
	real, _ := filepath.EvalSymlinks(dir)
	var lines []string
	for _, e := range evs[0] {
		name := paths.Lookup(e.Path)
		if strings.HasPrefix(name, dir) || strings.HasPrefix(name, real) {
			name = "DIR" + strings.TrimPrefix(strings.TrimPrefix(name, real), dir)
		}
		lines = append(lines, fmt.Sprintf("%s %s flags=%#x mode=%#o ret=%d", e.Op, name, e.Flags, e.Mode, e.Ret))
	}
	got := strings.Join(lines, "\n")
	for _, re := range []string{
		`openat DIR/tmp[A-Za-z0-9]{6} flags=0xc2 mode=0600 ret=3`,
		`openat DIR/tmp[A-Za-z0-9]{6}\.suf flags=0x804c2 mode=0600 ret=4`,
		`write  flags=0x0 mode=0 ret=3`,
		`close  flags=0x0 mode=0 ret=0\nclose  flags=0x0 mode=0 ret=0`,
		`openat /tmp/.* \(deleted\) flags=0xc2 mode=0600 ret=3\n(.*\n)?fclose `,
		// opendir's openat and fstat, readdir's getdents64 (glibc's own:
		// the entries, then 0 at the end), closedir.
		`openat DIR flags=0x90800 mode=0 ret=3\nfstat  flags=0x0 mode=0 ret=0\ngetdents  flags=0x0 mode=0 ret=[1-9][0-9]*\ngetdents  flags=0x0 mode=0 ret=0\nclose `,
	} {
		if !regexp.MustCompile(re).MatchString(got) {
			t.Errorf("no %q in the events:\n%s", re, got)
		}
	}
}
