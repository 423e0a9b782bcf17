package darshan

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var logs = []string{"ior-posix-shared.darshan-parser.txt", "ior-mpiio-coll.darshan-parser.txt", "mdtest.darshan-parser.txt.gz"}

func readLog(t testing.TB, name string) *Log {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(name, ".gz") {
		z, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		r = z
	}
	l, err := Parse(r, name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestScriptGivesBackCounters(t *testing.T) {
	for _, name := range logs {
		t.Run(name, func(t *testing.T) {
			l := readLog(t, name)
			res, err := Script(l, name)
			if err != nil {
				t.Fatal(err)
			}
			if os.Getenv("DARSHAN_SHOW") != "" {
				t.Logf("%s", res.Script)
			}
			for _, m := range res.Off {
				t.Errorf("%s", m)
			}
			t.Logf("%d counters compared", res.Counters)
		})
	}
}

// errLine: every error of Parse is one line naming the input.
var errLine = regexp.MustCompile(`^x\.txt(:\d+)?: [^\n]+$`)

func TestParseErrors(t *testing.T) {
	head := "# darshan log version: 3.41\n# nprocs: 2\n"
	for _, c := range []struct{ in, want string }{
		{"", "x.txt: empty: not darshan-parser output"},
		{"hello\n", "x.txt:1: not darshan-parser output"},
		{head + "POSIX\t0\t1\tPOSIX_OPENS\n", "x.txt:3: want 8 tab-separated fields"},
		{head + "POSIX\tx\t1\tPOSIX_OPENS\t1\t/a\t/\text4\n", "x.txt:3: bad rank"},
		{head + "POSIX\t0\t1\tPOSIX_OPENS\tmany\t/a\t/\text4\n", "x.txt:3: POSIX_OPENS: bad value"},
		{head + "POSIX\t5\t1\tPOSIX_OPENS\t1\t/a\t/\text4\n", "x.txt:3: rank 5, but the job has 2 processes"},
		{"# darshan log version: 3.41\nPOSIX\t0\t1\tPOSIX_OPENS\t1\t/a\t/\text4\n", "x.txt: no \"# nprocs:\" line"},
		{head + "POSIX\t0\t1\tPOSIX_F_READ_TIME\tNaN\t/a\t/\text4\n", "x.txt:3: POSIX_F_READ_TIME: bad value"},
	} {
		_, err := Parse(strings.NewReader(c.in), "x.txt")
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || !errLine.MatchString(err.Error()) {
			t.Errorf("Parse(%q) = %v, want %q…", c.in, err, c.want)
		}
	}
}

func TestSniff(t *testing.T) {
	for _, name := range logs {
		l, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".gz") {
			continue
		}
		if !Sniff(l[:min(len(l), 4096)]) {
			t.Errorf("%s: not sniffed as darshan-parser text", name)
		}
	}
	dxt, err := os.ReadFile("../dxt/testdata/ior-mpiio-4ranks-64k.txt")
	if err != nil {
		t.Fatal(err)
	}
	if Sniff(dxt[:4096]) {
		t.Error("darshan-dxt-parser text sniffed as darshan-parser text")
	}
}

// FuzzParse: no input makes Parse or Script panic or hang; bad input is
// one line naming the file.
func FuzzParse(f *testing.F) {
	for _, name := range logs[:2] {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b[:min(len(b), 9000)]))
	}
	f.Add("# darshan log version: 3.41\n# nprocs: 2\n# run time: 1.5\nPOSIX\t-1\t7\tPOSIX_WRITES\t3\t/a\t/\text4\nPOSIX\t-1\t7\tPOSIX_SIZE_WRITE_0_100\t3\t/a\t/\text4\nPOSIX\t-1\t7\tPOSIX_BYTES_WRITTEN\t30\t/a\t/\text4\nPOSIX\t-1\t7\tPOSIX_OPENS\t2\t/a\t/\text4\nPOSIX\t-1\t7\tPOSIX_SEQ_WRITES\t2\t/a\t/\text4\n")
	f.Fuzz(func(t *testing.T, in string) {
		l, err := Parse(strings.NewReader(in), "x.txt")
		if err != nil {
			if !errLine.MatchString(err.Error()) {
				t.Fatalf("error %q is not one line naming the file", err)
			}
			return
		}
		// Keep the work of one input small: the script's expansion is as
		// big as the counters say.
		var calls int64
		for _, r := range l.Records {
			for _, c := range []string{"POSIX_READS", "POSIX_WRITES", "POSIX_OPENS", "POSIX_SEEKS", "POSIX_STATS",
				"POSIX_FSYNCS", "POSIX_FDSYNCS", "POSIX_DUPS", "MPIIO_COLL_OPENS", "MPIIO_INDEP_OPENS",
				"MPIIO_COLL_READS", "MPIIO_COLL_WRITES", "MPIIO_INDEP_READS", "MPIIO_INDEP_WRITES",
				"MPIIO_NB_READS", "MPIIO_NB_WRITES", "MPIIO_SPLIT_READS", "MPIIO_SPLIT_WRITES", "MPIIO_SYNCS", "MPIIO_VIEWS"} {
				v := r.C(c)
				if v < 0 || v > 1000 {
					return
				}
				calls += v
			}
		}
		if l.NProcs > 16 || calls > 5000 {
			return
		}
		if _, err := Script(l, "x.txt"); err != nil && !errLine.MatchString(err.Error()) {
			t.Fatalf("Script: error %q is not one line naming the file", err)
		}
	})
}

// TestScriptTimes: the expansion's first opens, reads and writes of every
// record are where the log has them, within 2% of the run time, and the
// expansion ends near the run's end; cumulative times are the model's
// (the header says so), not compared.
func TestScriptTimes(t *testing.T) {
	for _, name := range logs {
		t.Run(name, func(t *testing.T) {
			l := readLog(t, name)
			res, err := Script(l, name)
			if err != nil {
				t.Fatal(err)
			}
			ps, ms, err := Counters(l, res.Script)
			if err != nil {
				t.Fatal(err)
			}
			tol := 0.02 * l.RunTime
			type key struct {
				file string
				rank int
			}
			got := map[string]map[key]map[string]float64{"POSIX": {}, "MPI-IO": {}}
			for _, r := range ps {
				got["POSIX"][key{r.File, r.Rank}] = r.FCounters()
			}
			for _, r := range ms {
				got["MPI-IO"][key{r.File, r.Rank}] = r.FCounters()
			}
			n := 0
			for _, r := range l.Records {
				c := got[r.Module][key{r.File, r.Rank}]
				if c == nil {
					continue
				}
				p := "POSIX"
				if r.Module == "MPI-IO" {
					p = "MPIIO"
				}
				for _, what := range []string{"OPEN", "READ", "WRITE"} {
					name := p + "_F_" + what + "_START_TIMESTAMP"
					want := r.F(name)
					if want == 0 {
						continue
					}
					n++
					if !secondsClose(c[name], want, tol) {
						t.Errorf("%s %s rank %d: %s %.6f, log %.6f", r.Module, r.File, r.Rank, name, c[name], want)
					}
				}
			}
			if n == 0 {
				t.Fatal("no times compared")
			}
		})
	}
}

func TestParseDXTText(t *testing.T) {
	f, err := os.Open("../dxt/testdata/ior-mpiio-4ranks-64k.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := Parse(f, "x.txt"); err == nil || !strings.Contains(err.Error(), "--from dxt") {
		t.Errorf("DXT text: %v", err)
	}
}
