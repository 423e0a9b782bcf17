package parquet

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/iotrace/iotrace/trace/tracegen"
)

// duckdbQuery is a Node.js program that reads a Parquet file with DuckDB
// and prints rows per op and the sum of their results as JSON.
const duckdbQuery = `
const { DuckDBInstance } = require('@duckdb/node-api');
(async () => {
  const inst = await DuckDBInstance.create(':memory:');
  const con = await inst.connect();
  const r = await con.runAndReadAll("SELECT op, count(*)::BIGINT AS n, sum(ret)::BIGINT AS s, count(DISTINCT path)::BIGINT AS paths FROM read_parquet('" + process.argv[2] + "') GROUP BY op ORDER BY op");
  console.log(JSON.stringify(r.getRowObjectsJson()));
})().catch(e => { console.error(String(e)); process.exit(1); });
`

// TestDuckDBReadsIt: DuckDB, a reader that is not ours (installed from
// npm by .ci/run into .ci/duckdb), reads the file with the same rows per
// op and the same results. Without DuckDB it is skipped, but under
// CI=true it fails.
func TestDuckDBReadsIt(t *testing.T) {
	mods, _ := filepath.Abs(filepath.Join("..", "..", ".ci", "duckdb", "node_modules"))
	_, err := os.Stat(filepath.Join(mods, "@duckdb", "node-api"))
	node, nerr := exec.LookPath("node")
	if err != nil || nerr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("DuckDB for Node.js is not installed in %s (bash .ci/run installs it): %v %v", mods, err, nerr)
		}
		t.Skipf("DuckDB for Node.js not installed (bash .ci/run installs it in %s)", mods)
	}
	tr := tracegen.IOR(3, 2000, 7)
	want := countTrace(t, tr)
	dir := t.TempDir()
	file := filepath.Join(dir, "t.parquet")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := WriteTrace(f, tr); err != nil {
		t.Fatal(err)
	}
	f.Close()
	js := filepath.Join(dir, "q.js")
	os.WriteFile(js, []byte(duckdbQuery), 0o644)
	cmd := exec.Command(node, js, file)
	cmd.Env = append(os.Environ(), "NODE_PATH="+mods)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("duckdb: %v: %s", err, stderr)
	}
	var rows []struct {
		Op    string `json:"op"`
		N     string `json:"n"`
		S     string `json:"s"`
		Paths string `json:"paths"`
	}
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var total, ret int64
	for _, r := range rows {
		n, _ := strconv.ParseInt(r.N, 10, 64)
		s, _ := strconv.ParseInt(r.S, 10, 64)
		if n != want.byOp[r.Op] {
			t.Errorf("DuckDB: op %s: %d rows, want %d", r.Op, n, want.byOp[r.Op])
		}
		total += n
		ret += s
	}
	if total != want.rows || ret != want.ret || len(rows) != len(want.byOp) {
		t.Errorf("DuckDB read %d rows (ret sum %d, %d ops), want %d (%d, %d)", total, ret, len(rows), want.rows, want.ret, len(want.byOp))
	}
}
