package parquet

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/iotrace/iotrace/convert"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/tracegen"
)

// counts is what a reader of the file must find: rows per op, bytes
// moved, and rows per path.
type counts struct {
	rows   int64
	byOp   map[string]int64
	ret    int64
	byPath map[string]int64
}

func countTrace(t testing.TB, tr trace.Trace) counts {
	c := counts{byOp: map[string]int64{}, byPath: map[string]int64{}}
	for _, r := range tr.Ranks() {
		src, err := tr.Rank(r)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := trace.ReadAll(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			c.rows++
			c.byOp[e.Op.Info().Name]++
			c.ret += e.Ret
			c.byPath[src.Path(e.Path)]++
		}
	}
	return c
}

func countRows(t testing.TB, data []byte) counts {
	c := counts{byOp: map[string]int64{}, byPath: map[string]int64{}}
	err := ReadRows(bytes.NewReader(data), func(rows []Row) error {
		for _, r := range rows {
			c.rows++
			c.byOp[r.Op]++
			c.ret += r.Ret
			c.byPath[r.Path]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func same(t *testing.T, got, want counts) {
	t.Helper()
	if got.rows != want.rows || got.ret != want.ret || len(got.byOp) != len(want.byOp) || len(got.byPath) != len(want.byPath) {
		t.Fatalf("read back %d rows, ret sum %d, %d ops, %d paths; want %d, %d, %d, %d",
			got.rows, got.ret, len(got.byOp), len(got.byPath), want.rows, want.ret, len(want.byOp), len(want.byPath))
	}
	for k, v := range want.byOp {
		if got.byOp[k] != v {
			t.Errorf("op %s: %d rows, want %d", k, got.byOp[k], v)
		}
	}
	for k, v := range want.byPath {
		if got.byPath[k] != v {
			t.Errorf("path %q: %d rows, want %d", k, got.byPath[k], v)
		}
	}
}

// TestRoundTrip: a trace of a million events written as Parquet reads
// back (through parquet-go's own reader) with the same rows per op and
// path and the same results.
func TestRoundTrip(t *testing.T) {
	calls := 125_000 // 4 ranks × (2 × calls + opens and closes) ≈ 1 million events
	if testing.Short() {
		calls = 5000
	}
	tr := tracegen.IOR(4, calls, 1)
	want := countTrace(t, tr)
	var buf bytes.Buffer
	n, err := WriteTrace(&buf, tr)
	if err != nil {
		t.Fatal(err)
	}
	if n != want.rows {
		t.Fatalf("wrote %d rows of %d events", n, want.rows)
	}
	if !testing.Short() && want.rows < 1_000_000 {
		t.Fatalf("only %d events", want.rows)
	}
	same(t, countRows(t, buf.Bytes()), want)
}

// TestPerRank: one file per rank, each with its rank's rows.
func TestPerRank(t *testing.T) {
	tr := tracegen.TwoPhase(4, 1, 6, 8, 64<<10, 3)
	dir := t.TempDir()
	n, err := WriteRanks(dir, tr)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, r := range tr.Ranks() {
		data, err := os.ReadFile(filepath.Join(dir, "rank-0000"+string(rune('0'+r))+".parquet"))
		if err != nil {
			t.Fatal(err)
		}
		one := countRows(t, data)
		total += one.rows
		err = ReadRows(bytes.NewReader(data), func(rows []Row) error {
			for _, row := range rows {
				if row.Rank != int64(r) {
					t.Fatalf("rank %d's file has a row of rank %d", r, row.Rank)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if total != n || n != countTrace(t, tr).rows {
		t.Errorf("%d rows in the files, %d written, %d events", total, n, countTrace(t, tr).rows)
	}
}

// TestFormCodec: importing this package gives the registry's Parquet form
// its codec, which writes a file DuckDB and the tests read.
func TestFormCodec(t *testing.T) {
	f := convert.Lookup("parquet")
	if f == nil || f.Bind == nil {
		t.Fatal("the parquet form has no codec with convert/parquet linked")
	}
	if c := f.Bind(flag.NewFlagSet("", flag.ContinueOnError)); c.Export == nil {
		t.Fatal("no exporter")
	}
}
