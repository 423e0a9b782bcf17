package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/samples"
)

// TestStatsAstro3d runs "iotrace stats --format json" on the astro3d
// samples as a user does and checks Tables 1–4 of Thakur et al.: the
// counts of every operation, the communication for I/O and the size
// distributions.
func TestStatsAstro3d(t *testing.T) {
	for _, c := range []struct {
		file  string
		ranks int
		ops   map[string]int64
		comm  int64
		sizes map[string]int64 // "op size" → count
	}{
		{"astro3d-small.iop", 8, map[string]int64{"open": 200, "close": 200, "read": 49, "write": 536, "seek": 1225}, 5608,
			map[string]int64{"read 24": 1, "read 524288": 48, "write 24": 24, "write 131072": 128, "write 524288": 384},
		},
		{"astro3d-large.iop", 64, map[string]int64{"open": 448, "close": 448, "read": 385, "write": 1030, "seek": 3235}, 109888,
			map[string]int64{"read 24": 1, "read 524288": 384, "write 24": 6, "write 131072": 256, "write 524288": 768},
		},
	} {
		out := mustRun(t, "stats", "--format", "json", "--ranks", fmt.Sprint(c.ranks), filepath.Join("..", "..", "samples", c.file))
		var rep struct {
			Ranks int
			Ops   []struct {
				Op    string
				Class string
				Count int64
			}
			Sizes []struct {
				Op    string
				Size  *int64
				Count int64
			}
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%s: %v\n%s", c.file, err, out)
		}
		if rep.Ranks != c.ranks {
			t.Errorf("%s: %d ranks", c.file, rep.Ranks)
		}
		var comm int64
		got := map[string]int64{}
		for _, o := range rep.Ops {
			if o.Class == "comm" {
				comm += o.Count
			} else {
				got[o.Op] = o.Count
			}
		}
		if len(got) != len(c.ops) || comm != c.comm {
			t.Errorf("%s: ops %v, communication %d; want %v, %d", c.file, got, comm, c.ops, c.comm)
		}
		for op, n := range c.ops {
			if got[op] != n {
				t.Errorf("%s: %s %d, want %d", c.file, op, got[op], n)
			}
		}
		sizes := map[string]int64{}
		for _, s := range rep.Sizes {
			if s.Size == nil {
				t.Fatalf("%s: %s has size buckets, want exact sizes", c.file, s.Op)
			}
			if s.Op == "read" || s.Op == "write" {
				sizes[fmt.Sprintf("%s %d", s.Op, *s.Size)] = s.Count
			}
		}
		if fmt.Sprint(sizes) != fmt.Sprint(c.sizes) {
			t.Errorf("%s: sizes %v, want %v", c.file, sizes, c.sizes)
		}
	}
}

// TestStatsBeffIO: "iotrace stats --beffio" on the b_eff_io sample gives a
// row per access method and pattern type, the averages and the value.
func TestStatsBeffIO(t *testing.T) {
	beff := filepath.Join("..", "..", "samples", "beffio.iop")
	out := mustRun(t, "stats", "--beffio", "--ranks", "2", "--param", "T=3s", beff)
	for _, want := range []string{"first write    0 scatter, collective", "read           4 segmented, collective",
		"rewrite        average", "b_eff_io  ", "25 % first write + 25 % rewrite + 50 % read"} {
		if !strings.Contains(out, want) {
			t.Errorf("stats --beffio lacks %q:\n%s", want, out)
		}
	}
	out = mustRun(t, "stats", "--by", "beffio", "--format", "json", "--ranks", "2", "--param", "T=3s", beff)
	var rep struct {
		BeffIO struct {
			Value   float64 `json:"value_mb_s"`
			Methods []struct{ Types []struct{ Type int } }
			Missing []string
		} `json:"beffio"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.BeffIO.Value <= 0 || len(rep.BeffIO.Methods) != 3 || len(rep.BeffIO.Methods[2].Types) != 5 || len(rep.BeffIO.Missing) != 0 {
		t.Errorf("json: %+v", rep.BeffIO)
	}
	_, stderr, code := run(t, "stats", "--beffio", "--by", "op", "--ranks", "2", beff)
	if code == 0 || !strings.Contains(stderr, "--beffio is --by beffio") {
		t.Errorf("--beffio --by op: exit %d, %s", code, stderr)
	}
	// A trace without b_eff_io regions says so.
	out = mustRun(t, "stats", "--beffio", filepath.Join("..", "..", "samples", "ior-4x2048.iot"))
	if !strings.Contains(out, "no b_eff_io regions in this trace") {
		t.Errorf("ior sample:\n%s", out)
	}
}

// TestSamplesCommand: "iotrace samples" lists every built-in sample on one
// line; "samples show NAME" prints its script; commands take a sample by
// name, with its paper's ranks by default, unless a file has that name.
func TestSamplesCommand(t *testing.T) {
	out := mustRun(t, "samples")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(samples.Names()) {
		t.Fatalf("%d lines for %d samples:\n%s", len(lines), len(samples.Names()), out)
	}
	for i, s := range samples.List() {
		f := strings.Fields(lines[i])
		if f[0] != s.Name || f[1] != fmt.Sprint(s.Ranks) || !strings.HasSuffix(lines[i], s.Summary) {
			t.Errorf("line %q for %s", lines[i], s.Name)
		}
		if s.Name == "astro3d-small" && !strings.Contains(lines[i], "8 ranks") {
			t.Errorf("astro3d-small: %q", lines[i])
		}
	}
	// show prints the script as the repository has it.
	disk, err := os.ReadFile(filepath.Join("..", "..", "samples", "olap-index.iop"))
	if err != nil {
		t.Fatal(err)
	}
	if got := mustRun(t, "samples", "show", "olap-index"); got != string(disk) {
		t.Error("samples show olap-index differs from samples/olap-index.iop")
	}
	if got := mustRun(t, "samples", "show", "olap-index.iop"); got != string(disk) {
		t.Error("samples show olap-index.iop differs")
	}
	_, stderr, code := run(t, "samples", "show", "nosuch")
	if code == 0 || !strings.Contains(stderr, `no sample "nosuch"`) || !strings.Contains(stderr, "astro3d-small") {
		t.Errorf("show nosuch: exit %d, %q", code, stderr)
	}

	// By name, with the paper's ranks; the same as the file.
	byName := mustRun(t, "stats", "--format", "json", "astro3d-small")
	byFile := mustRun(t, "stats", "--format", "json", "--ranks", "8", filepath.Join("..", "..", "samples", "astro3d-small.iop"))
	if byName != byFile || !strings.Contains(byName, `"ranks": 8,`) {
		t.Error("stats astro3d-small differs from stats --ranks 8 samples/astro3d-small.iop")
	}
	if out := mustRun(t, "stats", "--ranks", "2", "--param", "indexes=3", "olap-index.iop"); !strings.HasPrefix(out, "2 ranks,") {
		t.Errorf("stats --ranks 2 olap-index.iop:\n%s", out)
	}
	// A file of that name wins: here "beffio" is not a trace.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "beffio"), []byte("not a trace"), 0o644)
	_, stderr, code = runIn(t, dir, "stats", "beffio")
	if code == 0 || strings.Contains(stderr, "b_eff_io") {
		t.Errorf("a file named beffio: exit %d, %q", code, stderr)
	}
	_, stderr, code = run(t, "stats", "nosuch")
	if code == 0 || !strings.Contains(stderr, "nosuch") {
		t.Errorf("stats nosuch: exit %d, %q", code, stderr)
	}
}

// TestScriptErrors: a script with an error makes every command that reads
// it exit non-zero with one line "file:line:col: message", whether the
// parser, the checks or a rank's run finds it.
func TestScriptErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		src, want string
	}{
		{"repeat 3 barrier\n", ":1:10: expected '{' after repeat count, found 'barrier'"},
		{"let a = 1\nwrite \"f\" size a + 2s\n", ":2:18: operator + needs two ints, two durations or two strings, got an int and a duration (give both a unit: 10s + 500ms)"},
		{"let l = [1, 2]\nlet x = 10 / (rank - 1)\n", ":2:12: rank 1: division by zero"},
		{"if rank == 0 {\n    barrier\n}\n", ":2:5: rank 0 waits here in MPI_Barrier on all ranks, but rank 1 ended without calling it"},
	} {
		f := filepath.Join(dir, "bad.iop")
		os.WriteFile(f, []byte(c.src), 0o644)
		for _, args := range [][]string{{"stats", "--ranks", "2", f}, {"dump", "--ranks", "2", f}, {"convert", "--ranks", "2", "-o", filepath.Join(dir, "x.iot"), f}} {
			stdout, stderr, code := run(t, args...)
			if code != 1 || stderr != f+c.want+"\n" {
				t.Errorf("%v on %q: exit %d\nstderr %q\nwant   %q\nstdout %q", args[0], c.src, code, stderr, f+c.want+"\n", stdout)
			}
		}
	}
}
