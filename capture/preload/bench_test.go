package preload

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/filter"
	"github.com/iotrace/iotrace/trace/format"
)

// benchProg makes N calls of one kind on FILE and prints the thread CPU
// time per call in ns (CPU time: robust on a shared machine; the program
// only computes and makes calls).
const benchProg = `
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static long ns(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec * 1000000000L + t.tv_nsec; }
int main(int argc, char **argv) {
	const char *m = argv[1];
	long n = atol(argv[2]), sum = 0, t0 = 0, t1 = 0;
	char buf[4096] = {0};
	if (!strcmp(m, "getc") || !strcmp(m, "fgets") || !strcmp(m, "fread")) {
		FILE *f = fopen(argv[3], "r");
		t0 = ns();
		for (long i = 0; i < n; i++) {
			int c;
			if (m[0] == 'g') c = getc(f);
			else if (m[1] == 'g') c = fgets(buf, 64, f) ? buf[0] : EOF;
			else c = fread(buf, 1, 16, f) ? buf[0] : EOF;
			if (c == EOF) rewind(f);
			else sum += c;
		}
		t1 = ns();
		fclose(f);
	} else if (!strcmp(m, "putc") || !strcmp(m, "fprintf")) {
		FILE *f = fopen(argv[3], "w");
		t0 = ns();
		for (long i = 0; i < n; i++) {
			if (m[0] == 'p') putc('x', f);
			else fprintf(f, "%ld\n", i & 7);
		}
		t1 = ns();
		fclose(f);
	} else {
		int fd = open(argv[3], O_RDWR);
		t0 = ns();
		for (long i = 0; i < n; i++) {
			if (m[0] == 'r') { if (read(fd, buf, 64) <= 0) lseek(fd, 0, SEEK_SET); }
			else if (m[0] == 'w') write(fd, buf, 64);
			else pwrite(fd, buf, 64, (i & 1023) * 64);
		}
		t1 = ns();
		close(fd);
	}
	printf("%.2f\n", (double)(t1 - t0) / n);
	return sum == 42;
}
`

// BenchmarkShimCalls measures what the shim adds to the calls programs
// make most: getc and putc (stdio's hot path, which must stay at glibc's
// speed), fgets, fread (16 bytes) and fprintf on a file, and read, write
// and pwrite of 64 bytes (each one recorded). Each iteration runs the C
// program without the shim and with it (as iotrace record runs it),
// interleaved; the metrics are medians of the per-call CPU
// time without the shim, with it, and their difference:
//
//	go test ./capture/preload -run XXX -bench ShimCalls -benchtime 5x
func BenchmarkShimCalls(b *testing.B) {
	libs := buildShim(b)
	dir := b.TempDir()
	bin := compile(b, dir, "calls", benchProg, "-O2")
	in := filepath.Join(dir, "in.txt")
	line := strings.Repeat("abcdefghij", 7) + "\n"
	if err := os.WriteFile(in, []byte(strings.Repeat(line, 1<<18)), 0o644); err != nil {
		b.Fatal(err)
	}
	rw := filepath.Join(dir, "rw.dat")
	if err := os.WriteFile(rw, make([]byte, 1<<20), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		mode string
		n    int
		file string
	}{
		{"getc", 20_000_000, in}, {"putc", 20_000_000, "out.txt"}, {"fgets", 2_000_000, in},
		{"fread", 2_000_000, in}, {"fprintf", 2_000_000, "out.txt"},
		{"read", 500_000, rw}, {"write", 500_000, rw}, {"pwrite", 500_000, rw},
	} {
		b.Run(c.mode, func(b *testing.B) {
			var plain, shim []float64
			parse := func(out []byte) float64 {
				v, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
				if err != nil {
					b.Fatalf("%q: %v", out, err)
				}
				return v
			}
			args := []string{c.mode, strconv.Itoa(c.n), c.file}
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(bin, args...)
				cmd.Dir = dir
				out, err := cmd.Output()
				if err != nil {
					b.Fatal(err)
				}
				plain = append(plain, parse(out))
				spool, out, err := recordOutput(b, libs, dir, bin, args...)
				if err != nil {
					b.Fatal(err)
				}
				os.RemoveAll(spool)
				shim = append(shim, parse(out))
			}
			p, s := median(plain), median(shim)
			b.ReportMetric(p, "plain-ns/call")
			b.ReportMetric(s, "shim-ns/call")
			b.ReportMetric(s-p, "added-ns/call")
		})
	}
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

// BenchmarkEncode measures what iotrace record --preload spends per
// record turning a spool into events (after the program, the helper's
// whole work): a spool of 200,000 pwrites of 64 bytes, encoded again
// each iteration.
//
//	go test ./capture/preload -run XXX -bench Encode
func BenchmarkEncode(b *testing.B) {
	const n = 200_000
	run, rules, _ := pwriteSpool(b, n)
	var events int
	for b.Loop() {
		sink := &countSink{paths: trace.NewPaths()}
		for _, r := range run.Ranks() {
			if _, err := run.Encode(r, sink, rules); err != nil {
				b.Fatal(err)
			}
		}
		events = sink.n
	}
	if events < n {
		b.Fatalf("%d events, want at least %d", events, n)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(events), "ns/event")
}

// pwriteSpool records n pwrites of 64 bytes with the shim and returns
// the run's spools (closed at the end of b), the path rules of the
// record, and the directory they are in.
func pwriteSpool(b *testing.B, n int) (*Run, *filter.Paths, string) {
	libs := buildShim(b)
	dir := b.TempDir()
	bin := compile(b, dir, "calls", benchProg, "-O2")
	rw := filepath.Join(dir, "rw.dat")
	if err := os.WriteFile(rw, make([]byte, 1<<20), 0o644); err != nil {
		b.Fatal(err)
	}
	spool, _, err := recordOutput(b, libs, dir, bin, "pwrite", strconv.Itoa(n), rw)
	if err != nil {
		b.Fatal(err)
	}
	run, rules := openSpools(b, spool, dir)
	return run, rules, dir
}

// openSpools reads the spools a record under dir left in spool (closed at
// the end of b) and returns them with the record's path rules (dir).
func openSpools(b *testing.B, spool, dir string) (*Run, *filter.Paths) {
	rules, err := filter.NewPaths([]string{dir}, nil, true)
	if err != nil {
		b.Fatal(err)
	}
	run, err := ReadDir(spool, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { run.Close() })
	return run, rules
}

// countSink counts the events written to it, as a sink that costs nothing.
type countSink struct {
	paths *trace.Paths
	n     int
}

func (s *countSink) WriteEvents(evs []trace.Event) error { s.n += len(evs); return nil }
func (s *countSink) Intern(path string) trace.PathID     { return s.paths.Intern(path) }

// BenchmarkEncodeTrace is BenchmarkEncode writing the trace as iotrace
// record does (format.Writer, compressed blocks, to a file): the whole of
// the helper's work per record after the program.
//
//	go test ./capture/preload -run XXX -bench EncodeTrace
func BenchmarkEncodeTrace(b *testing.B) {
	const n = 200_000
	run, rules, dir := pwriteSpool(b, n)
	encodeTrace(b, run, rules, filepath.Join(dir, "out.iot"), n)
}

// BenchmarkEncodeTraceIOR is BenchmarkEncodeTrace on the spool of one
// rank of IOR's pattern (bench/record/ior.c: per transfer an lseek64 and
// a 4 KiB write or read; 25 iterations of 8 MiB, 204,951 records), as
// bench/record part 1 records it. With BenchmarkEncodeTrace it makes the
// profile the iotrace command is built with (cmd/iotrace/default.pgo,
// bench/pgo/run.sh).
func BenchmarkEncodeTraceIOR(b *testing.B) {
	libs := buildShim(b)
	dir := b.TempDir()
	src, err := os.ReadFile(filepath.Join("..", "..", "bench", "record", "ior.c"))
	if err != nil {
		b.Skip(err)
	}
	bin := compile(b, dir, "ior", string(src), "-O2")
	spool, _, err := recordOutput(b, libs, dir, bin, filepath.Join(dir, "f"), "8388608", "4096", "25")
	if err != nil {
		b.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "f"))
	run, rules := openSpools(b, spool, dir)
	encodeTrace(b, run, rules, filepath.Join(dir, "out.iot"), 204_951)
}

// encodeTrace writes run's trace to out at each iteration of b, and
// reports the time per event; a run of fewer than n events fails b.
func encodeTrace(b *testing.B, run *Run, rules *filter.Paths, out string, n int64) {
	var events int64
	for b.Loop() {
		w, err := format.Create(out, trace.Meta{Creator: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		events = 0
		for _, r := range run.Ranks() {
			st, err := run.Encode(r, w.Rank(r), rules)
			if err != nil {
				b.Fatal(err)
			}
			events += st.Events
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	if events < n {
		b.Fatalf("%d events, want at least %d", events, n)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(events), "ns/event")
}
