package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/internal/mpitest"
)

// parityScript makes every kind of file a replay option changes: a
// directory rank 0 makes, an input the trace only reads (prepared), a file
// per rank whose name holds the rank (--layout shared), a file every rank
// writes a region of (--layout fpp), unaligned sizes (--align), requests
// larger than a schedule block (--split), and communication.
const parityScript = `param out = "/scratch/job"
if rank == 0 {
    mkdir "$out/res" mode 0o755
}
barrier
open "$out/input.dat" as i flags O_RDONLY
read i size 96KiB
close i
open "$out/res/r$rank.dat" as f flags O_WRONLY | O_CREAT | O_TRUNC
repeat 4 {
    write f size 40000
}
sync f
close f
open "$out/shared.dat" as s flags O_WRONLY | O_CREAT
seek s to rank * 200000
write s size 150000
close s
bcast 8B root 0
barrier
`

// TestOptionsSameUnderMPI runs ioreplay with each replay option alone and
// under mpirun (--mpi, two processes; some through the MPI-IO backend),
// and checks that the option did the same: the same files with the same
// bytes in the target, the same calls and bytes in the replay's trace,
// the same summary, the same plan.
func TestOptionsSameUnderMPI(t *testing.T) {
	bin := mpiBin(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "parity.iop")
	if err := os.WriteFile(src, []byte(parityScript), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		opts  []string
		mpiio bool // also through the MPI-IO backend
	}{
		{nil, true},
		{[]string{"--data", "fixed"}, true},
		{[]string{"--sparse"}, false},
		{[]string{"--scale-size", "2"}, false},
		{[]string{"--align", "4096"}, false},
		{[]string{"--layout", "fpp"}, false},
		{[]string{"--layout", "shared"}, false},
		{[]string{"--split", "16KiB", "--servers", "2", "--order", "hash"}, false},
		{[]string{"--map", "/scratch/job=mapped"}, false},
		{[]string{"--rank-subset", "0,2"}, false},
		{[]string{"--skip-ops", "read"}, false},
		{[]string{"--ops", "write"}, false},
		{[]string{"--timing", "think", "--speed", "1000", "--strict"}, false},
		{[]string{"--prepare-only"}, false},
		{[]string{"--dry-run"}, false},
	} {
		name := strings.Join(c.opts, " ")
		if name == "" {
			name = "defaults"
		}
		run := func(how string, mpirun bool, extra ...string) replayRun {
			d := filepath.Join(dir, fmt.Sprint(i), how)
			r := replayRun{target: filepath.Join(d, "target"), record: filepath.Join(d, "replay.iot"), summary: filepath.Join(d, "summary.json")}
			if err := os.MkdirAll(d, 0o755); err != nil { // ioreplay makes the target, not the directories above it
				t.Fatal(err)
			}
			args := append([]string{"--ranks", "4", "--quiet", "--target", r.target, "--record", r.record, "--summary", r.summary}, c.opts...)
			if !slices.Contains(c.opts, "--timing") {
				args = append(args, "--timing", "afap")
			}
			args = append(append(args, extra...), src)
			if mpirun {
				r.stdout = mpitest.MustRun(t, dir, 2*time.Minute, 2, nil, append([]string{bin, "--mpi"}, args...)...).Stdout
			} else {
				r.stdout = mpitest.MustRun(t, dir, 2*time.Minute, 1, nil, append([]string{bin}, args...)...).Stdout
			}
			r.stdout = strings.ReplaceAll(r.stdout, r.target, "TARGET")
			return r
		}
		alone := run("alone", false)
		mpi := run("mpi", true)
		alone.same(t, name+": --mpi", mpi)
		if c.mpiio {
			mpi.same(t, name+": --mpi --backend mpiio", run("mpiio", true, "--backend", "mpiio"))
		}
	}
}

// replayRun is what one run of ioreplay left.
type replayRun struct {
	target, record, summary string
	stdout                  string
}

// same fails t unless b did what r did.
func (r replayRun) same(t *testing.T, what string, b replayRun) {
	t.Helper()
	if got, want := tree(t, b.target), tree(t, r.target); !maps.Equal(got, want) {
		t.Errorf("%s: the target holds\n%v\nwant, as alone:\n%v", what, got, want)
	}
	if _, err := os.Stat(r.record); err != nil {
		// A dry run or a prepare-only run: it records nothing; a dry run
		// prints the same plan, before the shares of the processes.
		if got, want := strings.Split(b.stdout, "\nprocesses:")[0], r.stdout; strings.TrimSpace(got) != strings.TrimSpace(want) {
			t.Errorf("%s: printed\n%s\nwant, as alone:\n%s", what, got, want)
		}
		return
	}
	sameCallsAndBytes(t, what, stats(t, r.record), stats(t, b.record))
	if got, want := summaryOf(t, b.summary), summaryOf(t, r.summary); got != want {
		t.Errorf("%s: summary %+v, want, as alone, %+v", what, got, want)
	}
}

// tree returns every file and directory under dir, with its size and a
// hash of its bytes.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			out[rel] = "dir"
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[rel] = fmt.Sprintf("%d bytes %x", len(b), sha256.Sum256(b))
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}

// summary is what --summary says of a replay, but its times.
type summary struct {
	Ranks, Events, Planned, Unmatched int64
	Timing                            string
	Errors, Skips                     string
}

func summaryOf(t *testing.T, path string) summary {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Ranks     int64           `json:"ranks"`
		Events    int64           `json:"events"`
		Planned   int64           `json:"planned"`
		Unmatched int64           `json:"unmatched"`
		Timing    string          `json:"timing"`
		Errors    json.RawMessage `json:"errors"`
		Skips     json.RawMessage `json:"skips"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return summary{v.Ranks, v.Events, v.Planned, v.Unmatched, v.Timing, string(v.Errors), string(v.Skips)}
}
