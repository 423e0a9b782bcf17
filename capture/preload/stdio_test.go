package preload

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
	"github.com/iotrace/iotrace/trace/state"
)

// needStrace returns strace's path; it skips t without it (fails under
// CI, which installs it).
func needStrace(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("strace")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("strace is required under CI")
		}
		t.Skip("no strace")
	}
	return p
}

// kcall is a read or write as the kernel saw it.
type kcall struct {
	op        string // "read" or "write"
	size, ret int64
}

func (k kcall) String() string { return fmt.Sprintf("%s(%d)=%d", k.op, k.size, k.ret) }

// fileCalls are the reads and writes of each file, in order.
type fileCalls map[string][]kcall

// straceLine matches a read or write of strace -y -s0 (whole, or the
// start of one a thread switch cut).
var (
	straceCall    = regexp.MustCompile(`^(\d+) +(read|write)\(\d+<([^>]*)>, (?:""|"")\.*, (\d+)\)(?: += (-?\d+))?`)
	straceStarted = regexp.MustCompile(`^(\d+) +(read|write)\(\d+<([^>]*)>, (?:""|"")\.*, (\d+) <unfinished`)
	straceResumed = regexp.MustCompile(`^(\d+) +<\.\.\. (read|write) resumed>.*\) += (-?\d+)`)
)

// parseStrace reads the reads and writes of files under dir from the
// output of strace -f -y -s0 -e trace=read,write.
func parseStrace(t *testing.T, name, dir string) fileCalls {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := fileCalls{}
	type started struct {
		op, path string
		size     int64
	}
	pend := map[string]started{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	add := func(op, path string, size, ret int64) {
		if strings.HasPrefix(path, dir+"/") {
			out[path] = append(out[path], kcall{op, size, ret})
		}
	}
	for sc.Scan() {
		l := sc.Text()
		if m := straceStarted.FindStringSubmatch(l); m != nil {
			size, _ := strconv.ParseInt(m[4], 10, 64)
			pend[m[1]] = started{m[2], m[3], size}
			continue
		}
		if m := straceResumed.FindStringSubmatch(l); m != nil {
			s, ok := pend[m[1]]
			if ok && s.op == m[2] {
				ret, _ := strconv.ParseInt(m[3], 10, 64)
				add(s.op, s.path, s.size, ret)
				delete(pend, m[1])
			}
			continue
		}
		if m := straceCall.FindStringSubmatch(l); m != nil && m[5] != "" {
			size, _ := strconv.ParseInt(m[4], 10, 64)
			ret, _ := strconv.ParseInt(m[5], 10, 64)
			add(m[2], m[3], size, ret)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// shimCalls returns the reads and writes of each file in a rank's
// events (one process).
func shimCalls(evs []trace.Event, paths *trace.Paths) fileCalls {
	out := fileCalls{}
	f := state.New[struct{}, struct{}](nil)
	for i := range evs {
		e := &evs[i]
		p := f.Apply(e).Path
		switch e.Op {
		case trace.OpRead, trace.OpWrite:
			name := paths.Lookup(p)
			out[name] = append(out[name], kcall{e.Op.String(), e.Size, e.Ret})
		}
	}
	return out
}

// compareCalls compares, file by file, the reads and writes strace saw
// with those the shim recorded in the same run: their count, their
// bytes, and the calls themselves. With ordered, the order too (a file
// one thread reads and writes); without, as a multiset (threads of one
// process reading several files interleave differently in the two
// views).
func compareCalls(t *testing.T, strace, shim fileCalls, ordered bool) {
	t.Helper()
	var names []string
	for n := range strace {
		names = append(names, n)
	}
	for n := range shim {
		if _, ok := strace[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	tally := func(cs []kcall, op string) (n, bytes int64) {
		for _, c := range cs {
			if c.op == op {
				n++
				bytes += max(c.ret, 0)
			}
		}
		return
	}
	for _, n := range names {
		a, b := strace[n], shim[n]
		for _, op := range []string{"read", "write"} {
			an, ab := tally(a, op)
			bn, bb := tally(b, op)
			if an != bn || ab != bb {
				t.Errorf("%s: strace saw %d %ss of %d bytes, the shim recorded %d of %d", n, an, op, ab, bn, bb)
			}
		}
		if !ordered {
			a, b = slices.Clone(a), slices.Clone(b)
			cmpK := func(x, y kcall) int {
				return strings.Compare(x.String(), y.String())
			}
			slices.SortFunc(a, cmpK)
			slices.SortFunc(b, cmpK)
		}
		if !slices.Equal(a, b) {
			i := 0
			for i < len(a) && i < len(b) && a[i] == b[i] {
				i++
			}
			t.Errorf("%s: the calls differ from call %d on:\nstrace %v\nshim   %v", n, i, a[i:min(len(a), i+8)], b[i:min(len(b), i+8)])
		}
	}
}

// straceWithShim runs bin in dir under strace with the shim preloaded,
// so that both see the same run, and returns both views
// of the files under dir.
func straceWithShim(t *testing.T, libs Libs, dir string, stdout string, env []string, bin string, args ...string) (fileCalls, fileCalls) {
	t.Helper()
	st := needStrace(t)
	spool := filepath.Join(dir, "spool")
	os.RemoveAll(spool)
	if err := os.Mkdir(spool, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(spool, "strace.out")
	sargs := []string{"-f", "-qq", "-y", "-s0", "-e", "trace=read,write", "-o", out,
		"-E", "LD_PRELOAD=" + libs.POSIX, "-E", "IOTRACE_SPOOL=" + spool, "--", bin}
	cmd := exec.Command(st, append(sargs, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if stdout != "" {
		f, err := os.Create(stdout)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdout = f
	}
	var errs strings.Builder
	cmd.Stderr = &errs
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, errs.String())
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	sc := parseStrace(t, out, real)
	os.Remove(out)
	rules, _ := filter.NewPaths([]string{real}, []string{spool}, true)
	evs, paths, _ := encode(t, spool, rules)
	return sc, shimCalls(evs[0], paths)
}

// stdioProg uses a stream on a file every way stdio offers: character,
// line, formatted and block I/O, both ways, with seeks and flushes, a
// stream the program never closes, standard output on a file, the getc
// and putc macros (which call __uflow and __overflow) and, built with
// _FORTIFY_SOURCE, the _chk entry points.
const stdioProg = `
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char buf[70000];

int main(void) {
	memset(buf, 'a', sizeof buf);
	FILE *f = fopen("w.txt", "w");
	for (int i = 0; i < 10000; i++) fputc('x', f);
	for (int i = 0; i < 1000; i++) fprintf(f, "line %d\n", i);
	fputs("hello world\n", f);
	fwrite(buf, 1, 10000, f);
	fwrite(buf, 1, 3, f);
	fflush(f);
	fwrite(buf, 10, 500, f);
	for (int i = 0; i < 5000; i++) putc_unlocked('y', f);
	fwrite(buf, 1, 65536, f);
	fclose(f);

	long n = 0;
	f = fopen("w.txt", "r");
	int c;
	while ((c = getc(f)) != EOF) n++;
	fclose(f);
	f = fopen("w.txt", "r");
	while ((c = getc_unlocked(f)) != EOF) n++;
	fclose(f);
	f = fopen("w.txt", "r");
	char line[64];
	while (fgets(line, sizeof line, f)) n++;
	fclose(f);
	f = fopen("w.txt", "r");
	char *lp = NULL;
	size_t cap = 0;
	while (getline(&lp, &cap, f) > 0) n++;
	fclose(f);
	f = fopen("w.txt", "r");
	fread(buf, 1, 100, f);
	fread(buf, 1, 20000, f);
	fseek(f, 5, SEEK_SET);
	fread(buf, 1, 10, f);
	fseek(f, 30000, SEEK_SET);
	fread(buf, 1, 10, f);
	fseek(f, 30020, SEEK_SET); /* in the buffer: no call */
	fread(buf, 3, 10, f);
	while (fread(buf, 7, 1000, f) > 0) n++;
	rewind(f);
	fread(buf, 1, 10, f);
	fflush(f); /* a reading stream: seeks the file back */
	fclose(f);

	f = fopen("a.txt", "a");
	fprintf(f, "%s\n", "appended");
	fclose(f);
	f = fopen("a.txt", "r+");
	fgets(line, sizeof line, f);
	fseek(f, 0, SEEK_END);
	fputs("more\n", f);
	fclose(f);

	FILE *t = tmpfile();
	for (int i = 0; i < 3000; i++) fprintf(t, "%d\n", i);
	rewind(t);
	while (fgets(line, sizeof line, t)) n++;
	fclose(t);

	int fd = open("d.txt", O_RDWR | O_CREAT | O_TRUNC, 0644);
	FILE *d = fdopen(fd, "w");
	for (int i = 0; i < 2000; i++) fprintf(d, "%d\n", i);
	fclose(d);

	FILE *u = fopen("unclosed.txt", "w"); /* flushed by exit */
	for (int i = 0; i < 1500; i++) fprintf(u, "%d %d\n", i, i * i);

	for (int i = 0; i < 3000; i++) printf("%ld %d\n", n, i);
	puts("done");
	return 0;
}
`

// TestShimStdioAsSyscalls runs a program that uses stdio every way under
// strace with the shim preloaded, and checks that the shim recorded, for
// each file, exactly the reads and writes strace saw.
func TestShimStdioAsSyscalls(t *testing.T) {
	libs := buildShim(t)
	dir := t.TempDir()
	for _, fortify := range []bool{false, true} {
		t.Run(fmt.Sprintf("fortify=%v", fortify), func(t *testing.T) {
			flags := []string{"-O2"}
			if fortify {
				flags = append(flags, "-D_FORTIFY_SOURCE=2")
			}
			bin := compile(t, dir, "stdio", stdioProg, flags...)
			sc, sh := straceWithShim(t, libs, dir, filepath.Join(dir, "out.txt"), nil, bin)
			if len(sc) < 5 {
				t.Fatalf("strace saw only %v", sc)
			}
			compareCalls(t, sc, sh, true)
		})
	}
}

// TestShimSortAsSyscalls sorts a 14 MiB file with GNU sort (fread_unlocked,
// fwrite_unlocked, temporary files by mkstemp and fdopen, two threads)
// under strace with the shim preloaded: every file's reads and writes as
// strace saw them.
func TestShimSortAsSyscalls(t *testing.T) {
	libs := buildShim(t)
	sortBin, err := exec.LookPath("sort")
	if err != nil {
		t.Skip("no sort")
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	if err := writeLines(in, 14<<20); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-o", filepath.Join(dir, "sorted.txt"), in},
		{"-S", "2M", "--parallel=2", "-o", filepath.Join(dir, "sorted2.txt"), in}, // temporary files
	} {
		t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
			sc, sh := straceWithShim(t, libs, dir, "", []string{"TMPDIR=" + dir, "LC_ALL=C"}, sortBin, args...)
			compareCalls(t, sc, sh, false)
			if len(sh) < 2 {
				t.Errorf("files: %v", sh)
			}
		})
	}
}

// writeLines writes about size bytes of lines to sort.
func writeLines(name string, size int) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	x := uint64(88172645463325252)
	for n := 0; n < size; {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		k, _ := fmt.Fprintf(w, "%d %s\n", x%1e9, strings.Repeat("x", int(x%40)))
		n += k
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
