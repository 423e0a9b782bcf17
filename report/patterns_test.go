package report

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/iotrace/iotrace/convert/darshan"
	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/trace/access"
)

// darshanLog reads a log of convert/darshan's testdata.
func darshanLog(t *testing.T, name string) *darshan.Log {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "convert", "darshan", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l, err := darshan.Parse(f, name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func computeScript(t *testing.T, name string, ranks int) *Stats {
	t.Helper()
	prog, err := script.Load(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	exp, err := script.Expand(prog, script.Config{Ranks: ranks})
	if err != nil {
		t.Fatal(err)
	}
	st, err := Compute(exp, Options{Access: true})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func record(t *testing.T, l *darshan.Log, module, file string) *darshan.Record {
	t.Helper()
	for _, r := range l.Records {
		if r.Module == module && r.File == file {
			return r
		}
	}
	t.Fatalf("no %s record of %s", module, file)
	return nil
}

func commons(r *darshan.Record, prefix, what string) access.Commons {
	var c access.Commons
	for i := range 4 {
		n := string(rune('1' + i))
		c[i] = access.Common{Value: r.C(prefix + n + "_" + what), Count: r.C(prefix + n + "_COUNT")}
	}
	return c
}

// TestAccessPatternsMatchDarshan: the access-pattern columns of stats
// --by file on IOR's POSIX pattern (a script written from IOR's calls,
// not from the log) are what Darshan counted on the same run, counter by
// counter.
func TestAccessPatternsMatchDarshan(t *testing.T) {
	l := darshanLog(t, "ior-posix-shared.darshan-parser.txt")
	st := computeScript(t, "ior-posix-shared.iop", l.NProcs)
	r := record(t, l, "POSIX", "/scratch/run/data/ior.dat")
	if r.Rank != -1 {
		t.Fatalf("log record of rank %d", r.Rank)
	}
	var row *AccessRow
	for _, a := range st.Access {
		if a.Path == r.File {
			row = a
		}
	}
	if row == nil {
		t.Fatalf("no access row of %s: %+v", r.File, st.Access)
	}
	for _, c := range []struct {
		name string
		got  int64
	}{
		{"POSIX_READS", row.Reads}, {"POSIX_WRITES", row.Writes},
		{"POSIX_BYTES_READ", row.ReadBytes}, {"POSIX_BYTES_WRITTEN", row.WriteBytes},
		{"POSIX_SEQ_READS", row.SeqReads}, {"POSIX_SEQ_WRITES", row.SeqWrites},
		{"POSIX_CONSEC_READS", row.ConsecReads}, {"POSIX_CONSEC_WRITES", row.ConsecWrites},
		{"POSIX_RW_SWITCHES", row.RWSwitches}, {"POSIX_FILE_NOT_ALIGNED", row.NotAlignedBlock},
		{"POSIX_FILE_ALIGNMENT", row.BlockSize},
		{"POSIX_MAX_BYTE_READ", row.MaxByteRead}, {"POSIX_MAX_BYTE_WRITTEN", row.MaxByteWritten},
	} {
		if c.got != r.C(c.name) {
			t.Errorf("%s: stats %d, Darshan %d", c.name, c.got, r.C(c.name))
		}
	}
	if want := commons(r, "POSIX_ACCESS", "ACCESS"); row.Sizes != want {
		t.Errorf("common sizes: stats %v, Darshan %v", row.Sizes, want)
	}
	if want := commons(r, "POSIX_STRIDE", "STRIDE"); row.Strides != want {
		t.Errorf("common strides: stats %v, Darshan %v", row.Strides, want)
	}
	if !row.Shared || row.Ranks != l.NProcs {
		t.Errorf("shared %v on %d ranks; Darshan: a shared record (rank -1) of %d ranks", row.Shared, row.Ranks, l.NProcs)
	}
	// Every rank reads back what it wrote: all of it overlaps.
	if row.OverlapBytes != r.C("POSIX_BYTES_WRITTEN") {
		t.Errorf("read/write overlap %d, want %d", row.OverlapBytes, r.C("POSIX_BYTES_WRITTEN"))
	}
	if row.Aligned4K != row.Reads+row.Writes || row.Aligned1M != (row.Reads+row.Writes)/16 {
		t.Errorf("aligned to 4 KiB %d, to 1 MiB %d", row.Aligned4K, row.Aligned1M)
	}
	if len(st.AccessByRank) != l.NProcs {
		t.Errorf("%d per-rank rows", len(st.AccessByRank))
	}
}

// TestAccessPatternsMatchDarshanMPIIO: IOR's collective MPI-IO pattern,
// counted by the Darshan MPI-IO module's rules (trace/access), has the
// log's collective calls, bytes, size histogram and common sizes; the
// report's row of the file is its MPI-IO layer.
func TestAccessPatternsMatchDarshanMPIIO(t *testing.T) {
	l := darshanLog(t, "ior-mpiio-coll.darshan-parser.txt")
	r := record(t, l, "MPI-IO", "/scratch/run/data/iorm.dat")
	prog, err := script.Load(filepath.Join("testdata", "ior-mpiio-coll.iop"))
	if err != nil {
		t.Fatal(err)
	}
	exp, err := script.Expand(prog, script.Config{Ranks: l.NProcs})
	if err != nil {
		t.Fatal(err)
	}
	_, ms, err := access.FromTrace(exp, access.Options{})
	if err != nil {
		t.Fatal(err)
	}
	red := access.ReduceMPIIO(ms, l.NProcs)
	if len(red) != 1 || red[0].Rank != -1 {
		t.Fatalf("reduced records %+v", red)
	}
	got := red[0].Counters()
	for _, name := range []string{"MPIIO_COLL_OPENS", "MPIIO_COLL_READS", "MPIIO_COLL_WRITES", "MPIIO_INDEP_READS",
		"MPIIO_INDEP_WRITES", "MPIIO_BYTES_READ", "MPIIO_BYTES_WRITTEN", "MPIIO_RW_SWITCHES", "MPIIO_MODE",
		"MPIIO_SIZE_READ_AGG_100K_1M", "MPIIO_SIZE_WRITE_AGG_100K_1M", "MPIIO_SIZE_WRITE_AGG_1M_4M",
		"MPIIO_ACCESS1_ACCESS", "MPIIO_ACCESS1_COUNT", "MPIIO_ACCESS2_COUNT"} {
		if got[name] != r.C(name) {
			t.Errorf("%s: %d, Darshan %d", name, got[name], r.C(name))
		}
	}
	st, err := Compute(exp, Options{Access: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Access) != 1 || st.Access[0].Layer != "mpiio" || st.Access[0].Reads != r.C("MPIIO_COLL_READS") ||
		st.Access[0].Sizes != commons(r, "MPIIO_ACCESS", "ACCESS") || !st.Access[0].Shared {
		t.Errorf("access rows %+v", st.Access)
	}
}
