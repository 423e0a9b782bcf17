package csv

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/convert/schema"
	"github.com/iotrace/iotrace/trace"
)

func randomEvents(r *rand.Rand, n int, paths *trace.Paths) []trace.Event {
	ops := append(trace.Ops(), 0, 999)
	names := []string{"/a", "with,comma", "q\"uote", " lead", "nl\nx", "日本", `\.`, "bad\xff"}
	v := func() int64 {
		switch r.IntN(3) {
		case 0:
			return 0
		case 1:
			return int64(r.IntN(1000)) - 10
		}
		return []int64{math.MinInt64, math.MaxInt64, r.Int64() - r.Int64()}[r.IntN(3)]
	}
	nonneg := func() int64 { return max(0, v()) }
	evs := make([]trace.Event, n)
	for i := range evs {
		e := trace.Event{Op: ops[r.IntN(len(ops))], Rank: r.Uint32() >> r.IntN(32), Thread: uint32(r.IntN(3)), Start: v(),
			Dur: nonneg(), FD: int32(v()), Offset: v(), Size: nonneg(), Ret: v(), Flags: r.Uint32() >> r.IntN(32),
			Mode: r.Uint32() >> r.IntN(32), Whence: int32(r.IntN(6)) - 1, Peer: int32(v()), Tag: int32(v()),
			Comm: uint32(r.IntN(4)), Bytes: nonneg(), Count: int32(v()), Stride: v(), FD2: int32(v()), Offset2: v()}
		if r.IntN(3) == 0 {
			e.Ret = -int64(1 + r.IntN(130))
		}
		if e.Op == trace.OpMPISendrecv && e.Flags&trace.RecvHalf != 0 {
			e.Source, e.RecvTag = int32(v()), int32(v())
		}
		if r.IntN(2) == 0 {
			e.Path = paths.Intern(names[r.IntN(len(names))])
		}
		if r.IntN(4) == 0 {
			e.Path2 = paths.Intern(names[r.IntN(len(names))])
		}
		evs[i] = e
	}
	return evs
}

func writeAll(t testing.TB, evs []trace.Event, path func(trace.PathID) string) string {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for i := range evs {
		if err := w.Write(&evs[i], path); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func sameEvents(t testing.TB, got []trace.Event, gotPath func(trace.PathID) string, want []trace.Event, wantPath func(trace.PathID) string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if gotPath(g.Path) != wantPath(w.Path) || gotPath(g.Path2) != wantPath(w.Path2) {
			t.Fatalf("event %d: paths %q %q, want %q %q", i, gotPath(g.Path), gotPath(g.Path2), wantPath(w.Path), wantPath(w.Path2))
		}
		g.Path, g.Path2, w.Path, w.Path2 = 0, 0, 0, 0
		if g != w {
			t.Fatalf("event %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

func TestHeaderAndColumns(t *testing.T) {
	want := "rank,thread,op,path,path2,label,fd,offset,size,ret,errno,flags,mode,whence,peer,tag,source,recv_tag,comm,bytes,count,stride,fd2,offset2,start_ns,dur_ns"
	if got := strings.Join(Columns(), ","); got != want {
		t.Fatalf("columns %s", got)
	}
	if got := writeAll(t, nil, nil); got != want+"\n" {
		t.Fatalf("empty trace: %q", got)
	}
	paths := trace.NewPaths()
	out, dump := paths.Intern("/scratch/out,0"), paths.Intern("dump 3")
	evs := []trace.Event{
		{Op: trace.OpOpen, Path: out, Ret: 3, Flags: trace.OWronly | trace.OCreat, Mode: 0o644, Start: 171, Dur: 24440},
		{Op: trace.OpPwrite, Rank: 2, Thread: 1, FD: 3, Offset: 4096, Size: 4096, Ret: 4096, Start: 24771, Dur: 3946},
		{Op: trace.OpLseek, FD: 3, Ret: -22},
		{Op: trace.OpRename, Path: out, Path2: paths.Intern(`say "hi"`), Ret: -5000},
		{Op: trace.OpMPISend, Peer: 3, Tag: -1, Comm: 1, Bytes: 8, Count: 1, Stride: -2},
		{Op: trace.OpCopyFileRange, FD: 3, FD2: 4, Offset: 10, Offset2: 20, Size: 5, Ret: 5, Flags: trace.CopyInAt},
		{Op: trace.OpRegionBegin, Path: dump, Start: 40000},
		{Op: trace.OpMPISendrecv, Rank: 1, Peer: 2, Tag: 5, Bytes: 64, Flags: trace.RecvHalf},
		{Op: trace.OpMPISendrecv, Rank: 1, Peer: 2, Tag: 5, Bytes: 64},
	}
	got := writeAll(t, evs, paths.Lookup)
	wantRows := want + `
0,0,open,"/scratch/out,0",,,0,0,0,3,,O_WRONLY|O_CREAT,0644,,0,0,,,0,0,0,0,0,0,171,24440
2,1,pwrite,,,,3,4096,4096,4096,,,,,0,0,,,0,0,0,0,0,0,24771,3946
0,0,lseek,,,,3,0,0,-22,EINVAL,,,SEEK_SET,0,0,,,0,0,0,0,0,0,0,0
0,0,rename,"/scratch/out,0","say ""hi""",,0,0,0,-5000,,,,,0,0,,,0,0,0,0,0,0,0,0
0,0,MPI_Send,,,,0,0,0,0,,,,,3,-1,,,1,8,1,-2,0,0,0,0
0,0,copy_file_range,,,,3,10,5,5,,0x1,,,0,0,,,0,0,0,0,4,20,0,0
0,0,region_begin,,,dump 3,0,0,0,0,,,,,0,0,,,0,0,0,0,0,0,40000,0
1,0,MPI_Sendrecv,,,,0,0,0,0,,,,,2,5,0,0,0,64,0,0,0,0,0,0
1,0,MPI_Sendrecv,,,,0,0,0,0,,,,,2,5,,,0,64,0,0,0,0,0,0
`
	if got != wantRows {
		t.Fatalf("got\n%s\nwant\n%s", got, wantRows)
	}
	// encoding/csv reads it: every row has every column.
	recs, err := csv.NewReader(strings.NewReader(got)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(evs)+1 || recs[4][4] != `say "hi"` {
		t.Fatalf("%d records, %q", len(recs), recs[4])
	}
}

func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	paths := trace.NewPaths()
	evs := randomEvents(r, 5000, paths)
	data := writeAll(t, evs, paths.Lookup)
	rd := NewReader(strings.NewReader(data), "x.csv")
	got, err := trace.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	sameEvents(t, got, rd.Path, evs, paths.Lookup)
	if again := writeAll(t, got, rd.Path); again != data {
		t.Fatal("second write differs")
	}
}

// TestReadSubset: columns in any order, some left out, empty cells.
func TestReadSubset(t *testing.T) {
	in := "\xef\xbb\xbfop,size,rank,path,flags,mode,whence,errno\n" +
		"pwrite,4096,3,/x,,,,\n" +
		"open,,0,/y,O_RDWR|O_CREAT,644,,ENOENT\n" +
		"lseek,,1,,,,2,\n"
	rd := NewReader(strings.NewReader(in), "in.csv")
	evs, err := trace.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	want := []trace.Event{
		{Op: trace.OpPwrite, Size: 4096, Rank: 3},
		{Op: trace.OpOpen, Flags: 0x42, Mode: 0o644, Ret: -2},
		{Op: trace.OpLseek, Rank: 1, Whence: 2},
	}
	if rd.Path(evs[0].Path) != "/x" || rd.Path(evs[1].Path) != "/y" {
		t.Fatalf("paths %q %q", rd.Path(evs[0].Path), rd.Path(evs[1].Path))
	}
	for i := range evs {
		evs[i].Path = 0
		if evs[i] != want[i] {
			t.Fatalf("event %d: %+v, want %+v", i, evs[i], want[i])
		}
	}
}

func TestErrors(t *testing.T) {
	const h = "rank,op,size\n"
	for _, c := range []struct{ in, want string }{
		{"", `in.csv:1: no header row`},
		{"rank,op,sise\n", `in.csv:1: unknown column "sise"`},
		{"rank,op,rank\n", `in.csv:1: column "rank" given twice`},
		{h + "0,write,4\n0,wrte,4\n", `in.csv:3: unknown op "wrte"`},
		{h + "0,write,-1\n", `in.csv:2: field "size": negative (-1)`},
		{h + "0,write,4k\n", `in.csv:2: field "size": "4k" is not an integer`},
		{h + "0,write,99999999999999999999\n", `in.csv:2: field "size": "99999999999999999999" is not an integer`},
		{h + ",write,4\n", `in.csv:2: missing field "rank"`},
		{h + "0,write\n", `in.csv:2: wrong number of fields`},
		{h + "0,\"write,4\n", `in.csv:2: extraneous or missing " in quoted-field`},
		{"rank,op,ret,errno\n0,open,3,ENOENT\n", `in.csv:2: "errno" ENOENT (2) disagrees with "ret" 3`},
		{"rank,op,label\n0,open,x\n", `in.csv:2: "label" on open, which is not a marker (use "path")`},
		{"rank,op,flags\n0,open,O_NOPE\n", `in.csv:2: field "flags": unknown flag "O_NOPE"`},
		// A path longer than PATH_MAX; a row (a quoted cell over lines
		// too) longer than the limit of every text importer.
		{"rank,op,path\n0,open," + strings.Repeat("p", 4096) + "\n", `in.csv:2: field "path": path of 4096 bytes: a path holds at most 4095 bytes (Linux's PATH_MAX)`},
		{"rank,op,path\n0,open," + strings.Repeat("p", 2<<20) + "\n", `in.csv:2: record longer than 1048576 bytes (the limit of every text importer; it is fixed)`},
		{"rank,op,path\n0,mark,x\n0,open,\"" + strings.Repeat("p\n", 600<<10) + "\"\n", `in.csv:3: record longer than 1048576 bytes (the limit of every text importer; it is fixed)`},
	} {
		_, err := trace.ReadAll(NewReader(strings.NewReader(c.in), "in.csv"))
		if err == nil || err.Error() != c.want {
			t.Errorf("%q:\n got %v\nwant %s", c.in, err, c.want)
		}
	}
}

// FuzzCSVReader: no input panics, errors are line errors, and anything
// accepted writes back and reads back to the same events.
func FuzzCSVReader(f *testing.F) {
	paths := trace.NewPaths()
	f.Add(writeAll(f, randomEvents(rand.New(rand.NewPCG(2, 2)), 3, paths), paths.Lookup))
	f.Add("op,rank,path\nmark,1,x\nopen,2,\"a\nb\"\n")
	f.Add("rank,op,mode,whence,flags\n0,open,0755,SEEK_CUR,0x41\n")
	f.Add("rank,op,peer,tag,source,recv_tag\n1,MPI_Sendrecv,2,5,0,0\n1,MPI_Sendrecv,2,5,,\n1,MPI_Sendrecv,-2,5,,3\n")
	f.Fuzz(func(t *testing.T, in string) {
		if len(in) > 1024 {
			// The fuzzer minimises each input that finds new code in
			// time quadratic in its length (a few hundred runs a minute
			// on inputs of a few KiB); a few rows reach every path.
			return
		}
		rd := NewReader(strings.NewReader(in), "f")
		evs, err := trace.ReadAll(rd)
		if err != nil {
			var le *schema.LineError
			if !errors.As(err, &le) || le.Line < 1 {
				t.Fatalf("error %q is not a line error", err)
			}
			return
		}
		out := writeAll(t, evs, rd.Path)
		rd2 := NewReader(strings.NewReader(out), "g")
		again, err := trace.ReadAll(rd2)
		if err != nil {
			t.Fatalf("re-reading: %v\n%s", err, out)
		}
		// encoding/csv reads a quoted "\r\n" as "\n"; compare paths as
		// the second read has them.
		norm := func(id trace.PathID) string { return strings.ReplaceAll(rd.Path(id), "\r\n", "\n") }
		sameEvents(t, again, rd2.Path, evs, norm)
	})
}

func BenchmarkWrite(b *testing.B) {
	paths := trace.NewPaths()
	evs := randomEvents(rand.New(rand.NewPCG(1, 1)), 1000, paths)
	w := NewWriter(io.Discard)
	var n int
	for i := 0; b.Loop(); i++ {
		w.Write(&evs[i%len(evs)], paths.Lookup)
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "rows/s")
}
