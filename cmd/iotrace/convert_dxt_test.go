package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/convert/dxt"
	"github.com/iotrace/iotrace/trace"
)

// TestConvertDXTMade: what the import adds to the log is marked where
// every reader of the trace sees it: the MPI_File_open it makes are the
// calls of the region dxt.Made in iotrace stats, the POSIX descriptors
// are inherit events, and there are no opens or closes of the log's.
func TestConvertDXTMade(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join("..", "..", "convert", "dxt", "testdata", "ior-mpiio-4ranks-64k.txt")
	out := filepath.Join(dir, "m.iot")
	if _, stderr, code := run(t, "convert", "-o", out, in); code != 0 {
		t.Fatalf("convert: exit %d: %s", code, stderr)
	}
	stdout, stderr, code := run(t, "stats", "--by", "region", out)
	if code != 0 {
		t.Fatalf("stats: exit %d: %s", code, stderr)
	}
	region := stdout[strings.Index(stdout, "region "):]
	if !strings.HasPrefix(region, `region "`+dxt.Made+`": 4 occurrences on 4 ranks`) || !strings.Contains(region, "MPI_File_open      4") {
		t.Errorf("stats by region:\n%s", stdout)
	}
	_, evs := readTrace(t, out)
	ops := map[trace.Op]int{}
	for _, e := range evs {
		ops[e.Op]++
	}
	if ops[trace.OpInherit] != 2 || ops[trace.OpMPIFileOpen] != 4 || ops[trace.OpOpen] != 0 || ops[trace.OpClose] != 0 || ops[trace.OpMPIFileClose] != 0 || ops[trace.OpMPIFileWriteAt] != 128 || ops[trace.OpMPIFileWrite] != 0 {
		t.Errorf("ops %v", ops)
	}
}
