package preload

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
	"github.com/iotrace/iotrace/trace/state"
)

// sysFamily is the op family of each system call the tests below count
// (as x86-64 Linux names them); fcntl counts for the commands the
// captures record.
var sysFamily = map[string]string{
	"open": "open", "openat": "open", "creat": "open", "close": "close",
	"read": "read", "pread64": "read", "write": "write", "pwrite64": "write",
	"lseek": "seek", "fsync": "sync", "fdatasync": "sync",
	"newfstatat": "stat", "fstat": "stat", "statx": "stat", "access": "stat", "faccessat": "stat",
	"faccessat2": "stat", "readlink": "stat", "readlinkat": "stat",
	"dup": "dup", "dup2": "dup", "dup3": "dup", "fcntl": "dup",
	"unlink": "unlink", "unlinkat": "unlink", "rmdir": "rmdir", "mkdir": "mkdir", "mkdirat": "mkdir",
	"rename": "rename", "renameat": "rename", "renameat2": "rename",
	"ftruncate": "truncate", "fadvise64": "advise", "fallocate": "allocate",
	"link": "link", "linkat": "link", "symlink": "link", "symlinkat": "link",
	"getdents64": "readdir", "getdents": "readdir",
}

var (
	straceAny  = regexp.MustCompile(`^\d+ +([a-z0-9_]+)\((.*)\) += (-?\d+)`)
	decoration = regexp.MustCompile(`<(/[^>]*)>`)
)

// straceFamilies runs bin in dir under strace (without the shim) and
// counts the calls of each op family that name a file under dir: a
// descriptor decorated with a path under it, or a path argument that is
// under it (relative ones are: dir is the working directory). Each
// family's calls are listed too, for the messages.
func straceFamilies(t *testing.T, dir, bin string, args ...string) (map[string]int, map[string][]string) {
	t.Helper()
	st := needStrace(t)
	out := filepath.Join(t.TempDir(), "strace.out")
	var names []string
	for n := range sysFamily {
		names = append(names, n)
	}
	slices.Sort(names)
	cmd := exec.Command(st, append([]string{"-f", "-qq", "-y", "-s256", "-e", "signal=none", "-e", "trace=" + strings.Join(names, ","), "-o", out, "--", bin}, args...)...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("strace %s: %v\n%s", bin, err, b)
	}
	real, _ := filepath.EvalSymlinks(dir)
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	counts, lines := map[string]int{}, map[string][]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := straceAny.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		fam, ok := sysFamily[m[1]]
		if !ok {
			continue
		}
		if m[1] == "fcntl" && !regexp.MustCompile(`F_DUPFD|F_SETFD|F_SETFL`).MatchString(m[2]) {
			continue
		}
		in := false
		under := func(p string) bool { return p == real || strings.HasPrefix(p, real+"/") }
		args := strings.SplitN(m[2], ", ", 3)
		switch {
		case strings.HasPrefix(args[0], `"`):
			// A path, relative to the working directory (dir).
			p := strings.Trim(args[0], `"`)
			in = !strings.HasPrefix(p, "/") || under(p)
			if m[1] == "symlink" && len(args) > 1 {
				in = under(filepath.Join(real, strings.Trim(args[1], `"`)))
			}
		case len(args) > 1 && strings.HasPrefix(args[1], `"`) && args[1] != `""`:
			// A directory descriptor and a path.
			p := strings.Trim(args[1], `"`)
			if !strings.HasPrefix(p, "/") {
				if d := decoration.FindStringSubmatch(args[0]); d != nil {
					p = d[1] + "/" + p
				}
			}
			in = under(p)
		default:
			if d := decoration.FindStringSubmatch(args[0]); d != nil {
				in = under(d[1])
			}
		}
		if in {
			counts[fam]++
			lines[fam] = append(lines[fam], sc.Text())
		}
	}
	return counts, lines
}

// shimFamilies records bin in dir with the shim and counts the calls of
// each op family on files under dir.
func shimFamilies(t *testing.T, libs Libs, dir, bin string, args ...string) (map[string]int, map[string][]string) {
	t.Helper()
	spool, err := record(t, libs, dir, bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	rules, _ := filter.NewPaths([]string{real}, []string{spool}, true)
	evs, paths, _ := encode(t, spool, rules)
	counts, lines := map[string]int{}, map[string][]string{}
	for _, rank := range evs {
		f := state.New[struct{}, struct{}](nil)
		for i := range rank {
			e := &rank[i]
			p := paths.Lookup(f.Apply(e).Path)
			if e.Path != 0 {
				p = paths.Lookup(e.Path)
			}
			if e.Op.Class() == trace.ClassProcess || (p != real && !strings.HasPrefix(p, real+"/")) {
				continue
			}
			fam := e.Op.Info().Family
			counts[fam]++
			lines[fam] = append(lines[fam], fmt.Sprintf("%s fd=%d %s off=%d size=%d ret=%d", e.Op, e.FD, p, e.Offset, e.Size, e.Ret))
		}
	}
	return counts, lines
}

// compareFamilies compares strace's counts with the shim's, family by
// family.
func compareFamilies(t *testing.T, sc, sh map[string]int, scl, shl map[string][]string) {
	t.Helper()
	fams := map[string]bool{}
	for f := range sc {
		fams[f] = true
	}
	for f := range sh {
		fams[f] = true
	}
	for f := range fams {
		if sc[f] != sh[f] {
			t.Errorf("%s: strace saw %d calls, the shim recorded %d\nstrace:\n  %s\nshim:\n  %s", f, sc[f], sh[f],
				strings.Join(scl[f], "\n  "), strings.Join(shl[f], "\n  "))
		}
	}
}

// libcInternalProg calls the library functions that make file calls of
// their own inside glibc: directory streams, euidaccess, fchmodat without
// following links, remove, mkdtemp, realpath, scandir, fts.
const libcInternalProg = `
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <fts.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int main(void) {
	mkdir("d", 0755);
	close(open("d/f", O_WRONLY | O_CREAT, 0644));
	symlink("d", "link");
	DIR *a = opendir("d");
	while (readdir(a)) {}
	rewinddir(a);
	seekdir(a, 0);
	closedir(a);
	opendir("nonexistent");
	opendir("");
	int fd = open("d", O_RDONLY | O_DIRECTORY);
	DIR *b = fdopendir(fd);
	closedir(b);
	struct dirent **list;
	int n = scandir("d", &list, NULL, alphasort);
	while (n-- > 0) free(list[n]);
	free(list);
	euidaccess("d/f", R_OK);
	euidaccess("d/f", F_OK);
	eaccess("nonexistent", W_OK);
	faccessat(AT_FDCWD, "d/f", R_OK, AT_EACCESS);
	fchmodat(AT_FDCWD, "d/f", 0600, AT_SYMLINK_NOFOLLOW);
	fchmodat(AT_FDCWD, "link", 0600, AT_SYMLINK_NOFOLLOW); /* EOPNOTSUPP */
	fchmodat(AT_FDCWD, "nonexistent", 0600, AT_SYMLINK_NOFOLLOW);
	lchmod("d/f", 0644);
	free(realpath("d/f", NULL));
	free(realpath("link/f", NULL));
	free(realpath("link/../d/./f", NULL));
	free(realpath("d/nonexistent", NULL));
	free(realpath("d/f/", NULL));
	free(canonicalize_file_name("link/"));
	char *roots[] = {"/proc/self/fdinfo", NULL};
	FTS *fts = fts_open(roots, FTS_PHYSICAL, NULL);
	fts_close(fts);
	char t[] = "tXXXXXX";
	mkdtemp(t);
	remove(t);
	remove("d/f");
	remove("nonexistent");
	return 0;
}
`

// TestShimLibcInternalCalls runs a program that calls the glibc
// functions that make file calls of their own under strace and under the
// shim, and checks that the shim recorded, family by family, the calls
// strace saw on the program's files.
func TestShimLibcInternalCalls(t *testing.T) {
	libs := buildShim(t)
	bin := compile(t, t.TempDir(), "internal", libcInternalProg, "-O2")
	d1, d2 := t.TempDir(), t.TempDir()
	sc, scl := straceFamilies(t, d1, bin)
	sh, shl := shimFamilies(t, libs, d2, bin)
	if sc["open"] < 5 || sc["stat"] < 10 {
		t.Fatalf("strace saw %v", sc)
	}
	t.Logf("strace: %v", sc)
	// scandir reads "d" inside glibc, with a DIR of its own: its two
	// getdents64 (the entries, then the end) are the ones the shim cannot
	// see (README, "Record"). readdir's are recorded.
	sc["readdir"] -= 2
	compareFamilies(t, sc, sh, scl, shl)
}

// scall is a call on a file as the kernel saw it: reads and writes with
// their size and result, lseeks with their offset, whence and result,
// fstats with their result.
type scall struct {
	op          string
	arg, whence int64
	ret         int64
}

func (s scall) String() string {
	switch s.op {
	case "lseek":
		return fmt.Sprintf("lseek(%d,%d)=%d", s.arg, s.whence, s.ret)
	case "fstat":
		return fmt.Sprintf("fstat=%d", s.ret)
	}
	return fmt.Sprintf("%s(%d)=%d", s.op, s.arg, s.ret)
}

var (
	straceIO     = regexp.MustCompile(`^\d+ +(read|write|lseek|newfstatat|fstat)\(\d+<([^>]*)>, (.*)\) += (-?\d+)`)
	straceSize   = regexp.MustCompile(`, (\d+)$`)
	straceLseek  = regexp.MustCompile(`^(-?\d+), SEEK_(SET|CUR|END)$`)
	whenceByName = map[string]int64{"SET": 0, "CUR": 1, "END": 2}
)

// straceIOCalls runs bin in dir under strace (without the shim) and
// returns, for each file under dir, its reads, writes, lseeks and fstats
// in order, named relative to dir.
func straceIOCalls(t *testing.T, dir, bin string) map[string][]scall {
	t.Helper()
	st := needStrace(t)
	out := filepath.Join(t.TempDir(), "strace.out")
	cmd := exec.Command(st, "-f", "-qq", "-y", "-s0", "-e", "signal=none", "-e", "trace=read,write,lseek,newfstatat,fstat", "-o", out, "--", bin)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("strace %s: %v\n%s", bin, err, b)
	}
	real, _ := filepath.EvalSymlinks(dir)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string][]scall{}
	for _, l := range strings.Split(string(data), "\n") {
		m := straceIO.FindStringSubmatch(l)
		if m == nil || !strings.HasPrefix(m[2], real+"/") {
			continue
		}
		name := strings.TrimPrefix(m[2], real)
		var ret int64
		fmt.Sscan(m[4], &ret)
		c := scall{op: m[1], ret: ret}
		switch m[1] {
		case "read", "write":
			if s := straceSize.FindStringSubmatch(m[3]); s != nil {
				fmt.Sscan(s[1], &c.arg)
			}
		case "lseek":
			s := straceLseek.FindStringSubmatch(m[3])
			if s == nil {
				t.Fatalf("an lseek strace prints so: %s", l)
			}
			fmt.Sscan(s[1], &c.arg)
			c.whence = whenceByName[s[2]]
		default:
			if !strings.Contains(m[3], "AT_EMPTY_PATH") && m[1] == "newfstatat" {
				continue
			}
			c = scall{op: "fstat", ret: ret}
		}
		calls[name] = append(calls[name], c)
	}
	return calls
}

// shimIOCalls records bin in dir with the shim and returns the same calls
// as straceIOCalls from its events.
func shimIOCalls(t *testing.T, libs Libs, dir, bin string) map[string][]scall {
	t.Helper()
	spool, err := record(t, libs, dir, bin)
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	rules, _ := filter.NewPaths([]string{real}, []string{spool}, true)
	evs, paths, _ := encode(t, spool, rules)
	calls := map[string][]scall{}
	for _, rank := range evs {
		f := state.New[struct{}, struct{}](nil)
		for i := range rank {
			e := &rank[i]
			name := strings.TrimPrefix(paths.Lookup(f.Apply(e).Path), real)
			var c scall
			switch e.Op {
			case trace.OpRead, trace.OpWrite:
				c = scall{op: e.Op.String(), arg: e.Size, ret: e.Ret}
			case trace.OpLseek:
				c = scall{op: "lseek", arg: e.Offset, whence: int64(e.Whence), ret: e.Ret}
			case trace.OpFstat:
				c = scall{op: "fstat", ret: e.Ret}
			default:
				continue
			}
			calls[name] = append(calls[name], c)
		}
	}
	return calls
}

// stdioSeekProg seeks, tells and switches between reading and writing on
// streams the ways real programs do (GNU as writes its object file so:
// w+, fseek past the end, fwrite, fseek back, fread, fwrite), and exits
// with a stream that read ahead open.
const stdioSeekProg = `
#include <stdio.h>
#include <string.h>

static char buf[9000];

int main(void) {
	memset(buf, 'q', sizeof buf);
	FILE *f = fopen("obj.o", "w+");
	fseek(f, 496, SEEK_SET);
	fwrite(buf, 1, 39, f);
	for (int i = 0; i < 5; i++) {
		fseek(f, 0, SEEK_SET);
		fread(buf, 1, 64 + 16 * i, f);
		fwrite(buf, 1, 9 + i, f);
	}
	fseek(f, 4, SEEK_CUR);
	fwrite(buf, 1, 960, f);
	fseek(f, -100, SEEK_END);
	fread(buf, 1, 50, f);
	fseek(f, 10, SEEK_CUR);
	long p = ftell(f);
	fseek(f, 5000, SEEK_SET); /* past the end: a short read, then a seek on */
	fwrite(buf, 1, 3, f);
	rewind(f);
	fclose(f);

	f = fopen("obj.o", "r");
	fgetc(f);
	p += ftell(f);
	fpos_t pos;
	fgetpos(f, &pos);
	fseek(f, 100, SEEK_SET);
	fseek(f, 120, SEEK_SET); /* in the buffer: a resync */
	fgetc(f);
	fclose(f);

	f = fopen("log.txt", "a");
	fputs("one\n", f);
	p += ftell(f); /* append mode with bytes held: a seek to the end */
	fclose(f);
	f = fopen("log.txt", "a+");
	fputs("two\n", f);
	fclose(f);

	f = fopen("obj.o", "r"); /* left open, having read ahead: exit seeks it back */
	fread(buf, 1, 10, f);
	printf("%ld\n", p);
	return 0;
}
`

// TestShimStdioSeeksAsSyscalls runs stdio programs under strace and
// under the shim (two runs: the shim's own calls would show under
// strace) and compares, file by file, the reads, writes, lseeks and
// fstats in order: the lseeks fseek, ftell and a flush after reading make,
// the fstat of a stream's first buffer.
func TestShimStdioSeeksAsSyscalls(t *testing.T) {
	libs := buildShim(t)
	for _, prog := range []struct{ name, src string }{{"seeks", stdioSeekProg}, {"stdio", stdioProg}} {
		t.Run(prog.name, func(t *testing.T) {
			bin := compile(t, t.TempDir(), prog.name, prog.src, "-O2")
			d1, d2 := t.TempDir(), t.TempDir()
			sc := straceIOCalls(t, d1, bin)
			sh := shimIOCalls(t, libs, d2, bin)
			if len(sc) == 0 {
				t.Fatal("strace saw no calls on the program's files")
			}
			if testing.Verbose() {
				for n, cs := range sc {
					t.Logf("%s: %v", n, cs)
				}
			}
			var names []string
			for n := range sc {
				names = append(names, n)
			}
			for n := range sh {
				if _, ok := sc[n]; !ok {
					names = append(names, n)
				}
			}
			slices.Sort(names)
			for _, n := range names {
				a, b := sc[n], sh[n]
				if !slices.Equal(a, b) {
					i := 0
					for i < len(a) && i < len(b) && a[i] == b[i] {
						i++
					}
					t.Errorf("%s: the calls differ from call %d of %d on:\nstrace %v\nshim   %v", n, i, len(a), a[i:min(len(a), i+10)], b[i:min(len(b), i+10)])
				}
			}
		})
	}
}

// TestShimStartsInEarlierConstructors: the loader runs the constructors
// of a program's libraries before the shim's (a preloaded library
// depends on none of them), and the calls they make are the program's
// (fio's libpmem walks a directory so): the first of them starts the
// shim.
func TestShimStartsInEarlierConstructors(t *testing.T) {
	libs := buildShim(t)
	dir := t.TempDir()
	lib := filepath.Join(dir, "libearly.c")
	if err := os.WriteFile(lib, []byte(`
#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void early(void) {
	int fd = open("early.dat", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	write(fd, "x", 1);
	close(fd);
}
void nothing(void) {}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command("cc", "-shared", "-fPIC", "-o", filepath.Join(dir, "libearly.so"), lib).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, b)
	}
	bin := compile(t, dir, "prog", "void nothing(void);\nint main(void) { nothing(); return 0; }\n",
		"-O1", "-L"+dir, "-Wl,-rpath,"+dir, "-Wl,--no-as-needed", "-learly")
	sh, shl := shimFamilies(t, libs, dir, bin)
	for fam, n := range map[string]int{"open": 1, "write": 1, "close": 1} {
		if sh[fam] != n {
			t.Errorf("%s: %d calls recorded, want %d: %v", fam, sh[fam], n, shl[fam])
		}
	}
}
