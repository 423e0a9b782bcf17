package main

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/convert/darshan"
	"github.com/iotrace/iotrace/trace/access"
	"github.com/iotrace/iotrace/trace/format"
)

// TestReplayDarshanScripts: the scripts made from the three Darshan logs
// replay, and the replay's own trace has the log's POSIX counters of
// every file it replayed through POSIX (the files of MPI-IO calls are
// replayed by those calls, their POSIX calls left to them), counted as
// trace/access counts them, and its MPI-IO calls.
func TestReplayDarshanScripts(t *testing.T) {
	for _, name := range []string{"ior-posix-shared.darshan-parser.txt", "ior-mpiio-coll.darshan-parser.txt", "mdtest.darshan-parser.txt.gz"} {
		t.Run(name, func(t *testing.T) {
			f, err := os.Open(filepath.Join("..", "..", "convert", "darshan", "testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var r io.Reader = f
			if strings.HasSuffix(name, ".gz") {
				if r, err = gzip.NewReader(f); err != nil {
					t.Fatal(err)
				}
			}
			l, err := darshan.Parse(r, name)
			if err != nil {
				t.Fatal(err)
			}
			res, err := darshan.Script(l, name)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			src := filepath.Join(dir, "w.iop")
			if err := os.WriteFile(src, res.Script, 0o644); err != nil {
				t.Fatal(err)
			}
			rec := filepath.Join(dir, "replay.iot")
			target := filepath.Join(dir, "target")
			mustRun(t, "--ranks", itoa(l.NProcs), "--timing", "afap", "--target", target, "--record", rec, src)
			tr, err := format.Open(rec)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			ps, ms, err := access.FromTrace(tr, access.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]map[string]int64{}
			for _, p := range access.Reduce(ps, l.NProcs) {
				got["POSIX "+strings.TrimPrefix(p.File, target+"/")+" "+itoa(p.Rank)] = p.Counters()
			}
			for _, m := range access.ReduceMPIIO(ms, l.NProcs) {
				got["MPI-IO "+strings.TrimPrefix(m.File, target+"/")+" "+itoa(m.Rank)] = m.Counters()
			}
			mpiFiles := map[string]bool{}
			for _, rec := range l.Records {
				if rec.Module == "MPI-IO" {
					mpiFiles[rec.File] = true
				}
			}
			compared := 0
			for _, rec := range l.Records {
				var names []string
				switch {
				case rec.Module == "POSIX" && !mpiFiles[rec.File]:
					names = []string{"POSIX_OPENS", "POSIX_READS", "POSIX_WRITES", "POSIX_SEEKS", "POSIX_BYTES_READ",
						"POSIX_BYTES_WRITTEN", "POSIX_CONSEC_READS", "POSIX_CONSEC_WRITES", "POSIX_SEQ_READS", "POSIX_SEQ_WRITES",
						"POSIX_MAX_BYTE_WRITTEN", "POSIX_ACCESS1_ACCESS", "POSIX_ACCESS1_COUNT", "POSIX_STRIDE1_STRIDE", "POSIX_STRIDE1_COUNT"}
				case rec.Module == "MPI-IO":
					names = []string{"MPIIO_COLL_OPENS", "MPIIO_INDEP_OPENS", "MPIIO_COLL_READS", "MPIIO_COLL_WRITES",
						"MPIIO_BYTES_READ", "MPIIO_BYTES_WRITTEN", "MPIIO_ACCESS1_ACCESS", "MPIIO_ACCESS1_COUNT"}
				default:
					continue
				}
				// the replay maps the log's paths into the target, without
				// their common directory
				var c map[string]int64
				for k, v := range got {
					mod, rest, _ := strings.Cut(k, " ")
					i := strings.LastIndex(rest, " ")
					file, rank := "/"+rest[:i], rest[i+1:]
					if mod == rec.Module && rank == itoa(rec.Rank) && strings.HasSuffix(rec.File, file) {
						c = v
					}
				}
				if c == nil {
					t.Errorf("%s %s rank %d: not in the replay's trace", rec.Module, rec.File, rec.Rank)
					continue
				}
				for _, n := range names {
					compared++
					if c[n] != rec.C(n) {
						t.Errorf("%s %s rank %d: replay %d, log %d", n, rec.File, rec.Rank, c[n], rec.C(n))
					}
				}
			}
			if compared == 0 {
				t.Fatal("nothing compared")
			}
		})
	}
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
