package report

import (
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// TestInMPIIONotCountedTwice checks that the POSIX calls an MPI library
// made inside an MPI-IO call get rows of their own that no total, rank
// time or file count includes.
func TestInMPIIONotCountedTwice(t *testing.T) {
	paths := trace.NewPaths()
	f := paths.Intern("/d/f")
	evs := []trace.Event{
		{Op: trace.OpMPIFileOpen, FD: 1, Path: f, Start: 0, Dur: 10},
		{Op: trace.OpOpen, Path: f, Ret: 5, Flags: trace.InMPIIO, Start: 1, Dur: 5},
		{Op: trace.OpMPIFileWriteAt, FD: 1, Size: 100, Ret: 100, Start: 20, Dur: 50},
		{Op: trace.OpPwrite, FD: 5, Size: 100, Ret: 100, Flags: trace.InMPIIO, Start: 21, Dur: 40},
		{Op: trace.OpMPIFileClose, FD: 1, Start: 80, Dur: 10},
		{Op: trace.OpClose, FD: 5, Flags: trace.InMPIIO, Start: 81, Dur: 2},
	}
	st, err := Compute(sliceTrace(evs, paths), Options{})
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]*OpRow{}
	for _, r := range st.Ops {
		rows[r.Op] = r
	}
	if r := rows["write (in MPI-IO)"]; r == nil || !r.InMPIIO || r.Bytes != 100 || r.Count != 1 {
		t.Fatalf("no row for the pwrite inside MPI_File_write_at: %+v", st.Ops)
	}
	if st.Total.Count != 3 || st.Total.Bytes != 100 || st.Total.Total != 70 {
		t.Errorf("TOTAL counts %d calls, %d bytes, %d ns; want 3, 100, 70", st.Total.Count, st.Total.Bytes, st.Total.Total)
	}
	if b := st.ByRank[0].Bytes(); b != 100 {
		t.Errorf("rank bytes %d, want 100", b)
	}
	if io := st.ByRank[0].IOTime(); io != 70 {
		t.Errorf("rank I/O time %d, want 70", io)
	}
	if len(st.Files) != 1 || st.Files[0].WriteBytes() != 100 || st.Files[0].Opens() != 1 {
		t.Errorf("file rows %+v", st.Files)
	}
}

// sliceTrace is a one-rank trace of evs.
func sliceTrace(evs []trace.Event, paths *trace.Paths) trace.Trace {
	return &oneRank{evs: evs, paths: paths}
}

type oneRank struct {
	evs   []trace.Event
	paths *trace.Paths
}

func (o *oneRank) Meta() trace.Meta            { return trace.Meta{} }
func (o *oneRank) Ranks() []uint32             { return []uint32{0} }
func (o *oneRank) Path(id trace.PathID) string { return o.paths.Lookup(id) }
func (o *oneRank) Close() error                { return nil }
func (o *oneRank) Rank(r uint32) (trace.Source, error) {
	return &trace.SliceSource{Events: o.evs, Paths: o.paths}, nil
}
