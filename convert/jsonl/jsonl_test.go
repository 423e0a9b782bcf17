package jsonl

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/iotrace/iotrace/convert/schema"
	"github.com/iotrace/iotrace/trace"
)

// randomEvents returns n events that use every field, every known op,
// unknown op numbers, named and unnamed errnos, and awkward paths.
func randomEvents(r *rand.Rand, n int, paths *trace.Paths) []trace.Event {
	ops := append(trace.Ops(), 0, 50, 999, 65535)
	names := []string{"/a", "/b c/\"q\"", "tab\there", "ünï/日本", "nl\nx", "bad\xffbyte\xc3", "\\back\\", "ctl\x01\x7f", "\u2028"}
	v := func() int64 {
		switch r.IntN(4) {
		case 0:
			return 0
		case 1:
			return int64(r.IntN(1000)) - 10
		case 2:
			return []int64{math.MinInt64, math.MaxInt64, math.MinInt32, math.MaxInt32, -1}[r.IntN(5)]
		}
		return r.Int64() - r.Int64()
	}
	nonneg := func() int64 {
		x := v()
		if x < 0 {
			return ^x
		}
		return x
	}
	evs := make([]trace.Event, n)
	for i := range evs {
		op := ops[r.IntN(len(ops))]
		e := trace.Event{Op: op, Rank: r.Uint32() >> r.IntN(32), Thread: uint32(r.IntN(3)), Start: v(), Dur: nonneg(),
			FD: int32(v()), Offset: v(), Size: nonneg(), Ret: v(), Flags: r.Uint32() >> r.IntN(32), Mode: r.Uint32() >> r.IntN(32),
			Whence: int32(r.IntN(7)) - 1, Peer: int32(v()), Tag: int32(v()), Comm: r.Uint32() >> r.IntN(32), Bytes: nonneg(),
			Count: int32(v()), Stride: v(), FD2: int32(v()), Offset2: v()}
		if r.IntN(3) == 0 {
			e.Ret = -int64(1 + r.IntN(130)) // an errno, with or without a name
		}
		if op == trace.OpMPISendrecv && e.Flags&trace.RecvHalf != 0 {
			e.Source, e.RecvTag = int32(v()), int32(v()) // the receive half, known
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

func writeAll(t testing.TB, evs []trace.Event, path func(trace.PathID) string) []byte {
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
	return buf.Bytes()
}

// sameEvents fails unless got (paths in gotPath) equals want (paths in
// wantPath), comparing paths as strings.
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

func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	paths := trace.NewPaths()
	evs := randomEvents(r, 20000, paths)
	data := writeAll(t, evs, paths.Lookup)
	rd := NewReader(bytes.NewReader(data), "x.jsonl")
	got, err := trace.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	sameEvents(t, got, rd.Path, evs, paths.Lookup)
	// Writing what was read gives the same bytes.
	if again := writeAll(t, got, rd.Path); !bytes.Equal(again, data) {
		t.Fatal("second write differs from the first")
	}
}

// TestValidJSON: every line the Writer makes is a JSON object that
// encoding/json reads to the same values.
func TestValidJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	paths := trace.NewPaths()
	evs := randomEvents(r, 3000, paths)
	data := writeAll(t, evs, paths.Lookup)
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		d := json.NewDecoder(strings.NewReader(line))
		d.UseNumber()
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			t.Fatalf("line %d: %v\n%s", i+1, err, line)
		}
		e := evs[i]
		if m["rank"] != json.Number(strconv.FormatUint(uint64(e.Rank), 10)) || m["op"] != e.Op.String() ||
			m["start_ns"] != json.Number(strconv.FormatInt(e.Start, 10)) || m["dur_ns"] != json.Number(strconv.FormatInt(e.Dur, 10)) {
			t.Fatalf("line %d: %v for %+v", i+1, m, e)
		}
		if p := paths.Lookup(e.Path); e.Path != 0 && e.Op.Class() != trace.ClassMarker && m["path"] != strings.ToValidUTF8(p, "\ufffd") &&
			!strings.Contains(p, "\xff") {
			t.Fatalf("line %d: path %q, want %q", i+1, m["path"], p)
		}
		for k := range m {
			if _, ok := schema.LookupField(k); !ok {
				t.Fatalf("line %d: field %q", i+1, k)
			}
		}
	}
}

func TestWriteLines(t *testing.T) {
	paths := trace.NewPaths()
	out, miss, dump := paths.Intern("/scratch/out.0"), paths.Intern("/scratch/missing"), paths.Intern("dump 3")
	evs := []trace.Event{
		{Op: trace.OpOpen, Path: out, Ret: 3, Flags: trace.OWronly | trace.OCreat | trace.OTrunc, Mode: 0o644, Start: 171, Dur: 24440},
		{Op: trace.OpPwrite, FD: 3, Offset: 4096, Size: 4096, Ret: 4096, Start: 24771, Dur: 3946},
		{Op: trace.OpOpen, Rank: 1, Path: miss, Ret: -2, Start: 90, Dur: 1800},
		{Op: trace.OpMPIBcast, Peer: 0, Bytes: 24, Start: 30000, Dur: 5000},
		{Op: trace.OpRegionBegin, Path: dump, Start: 40000},
		{Op: trace.OpLseek, Thread: 2, FD: 3, Offset: -8, Whence: 2, Ret: -22, Start: 1, Dur: 2},
		{Op: trace.OpMPIFileOpen, Path: out, Flags: trace.MPIModeCreate | trace.MPIModeWronly, Comm: 5, FD: 1},
		{Op: 999, Ret: -200, Size: 7},
		{Op: trace.OpRename, Path: out, Path2: miss, Ret: -5000},
		{Op: trace.OpMPIRecv, Peer: -1, Tag: -1, Bytes: 8, Count: 2, Stride: -4},
		{Op: trace.OpMPISendrecv, Rank: 1, Peer: 2, Tag: 5, Bytes: 64, Flags: trace.RecvHalf},                                             // from rank 0, tag 0
		{Op: trace.OpMPISendrecv, Rank: 1, Peer: 2, Tag: 5, Bytes: 64, Source: 3, RecvTag: 6, Flags: trace.RecvHalf | trace.PostedAnyTag}, // posted with MPI_ANY_TAG
		{Op: trace.OpMPISendrecv, Rank: 1, Peer: 2, Tag: 5, Bytes: 64},                                                                    // an old trace's: unknown
	}
	want := `{"rank":0,"op":"open","path":"/scratch/out.0","ret":3,"flags":"O_WRONLY|O_CREAT|O_TRUNC","mode":"0644","start_ns":171,"dur_ns":24440}
{"rank":0,"op":"pwrite","fd":3,"offset":4096,"size":4096,"ret":4096,"start_ns":24771,"dur_ns":3946}
{"rank":1,"op":"open","path":"/scratch/missing","ret":-2,"errno":"ENOENT","start_ns":90,"dur_ns":1800}
{"rank":0,"op":"MPI_Bcast","ret":0,"bytes":24,"start_ns":30000,"dur_ns":5000}
{"rank":0,"op":"region_begin","label":"dump 3","start_ns":40000,"dur_ns":0}
{"rank":0,"thread":2,"op":"lseek","fd":3,"offset":-8,"ret":-22,"errno":"EINVAL","whence":"SEEK_END","start_ns":1,"dur_ns":2}
{"rank":0,"op":"MPI_File_open","path":"/scratch/out.0","fd":1,"ret":0,"flags":"MPI_MODE_CREATE|MPI_MODE_WRONLY","comm":5,"start_ns":0,"dur_ns":0}
{"rank":0,"op":"op#999","size":7,"ret":-200,"errno":"E200","start_ns":0,"dur_ns":0}
{"rank":0,"op":"rename","path":"/scratch/out.0","path2":"/scratch/missing","ret":-5000,"start_ns":0,"dur_ns":0}
{"rank":0,"op":"MPI_Recv","ret":0,"peer":-1,"tag":-1,"bytes":8,"count":2,"stride":-4,"start_ns":0,"dur_ns":0}
{"rank":1,"op":"MPI_Sendrecv","ret":0,"peer":2,"tag":5,"source":0,"recv_tag":0,"bytes":64,"start_ns":0,"dur_ns":0}
{"rank":1,"op":"MPI_Sendrecv","ret":0,"flags":"0x2","peer":2,"tag":5,"source":3,"recv_tag":6,"bytes":64,"start_ns":0,"dur_ns":0}
{"rank":1,"op":"MPI_Sendrecv","ret":0,"peer":2,"tag":5,"bytes":64,"start_ns":0,"dur_ns":0}
`
	if got := string(writeAll(t, evs, paths.Lookup)); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	// schema.AppendEvent (no Writer) writes the same.
	if got := string(schema.AppendEvent(nil, &evs[0], paths.Lookup)); got+"\n" != strings.SplitAfter(want, "\n")[0] {
		t.Fatalf("schema.AppendEvent: %s", got)
	}
}

func TestAppendString(t *testing.T) {
	for in, want := range map[string]string{
		"":             `""`,
		"plain/path":   `"plain/path"`,
		"q\"b\\":       `"q\"b\\"`,
		"a\nb\tc\rd":   `"a\nb\tc\rd"`,
		"\x00\x1f\x7f": `"\u0000\u001f` + "\x7f" + `"`,
		"日本\u2028":     `"日本` + "\u2028" + `"`,
		"x\xffy\xc3":   `"x\udcffy\udcc3"`,
	} {
		if got := string(schema.AppendString(nil, in)); got != want {
			t.Errorf("schema.AppendString(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestAccepts reads inputs in shapes the Writer does not make.
func TestAccepts(t *testing.T) {
	cases := []struct {
		in   string
		want trace.Event
		path string
	}{
		{` { "op" : "pwrite64" , "rank" : 7 , "size":0, "fd":-1 } `, trace.Event{Op: trace.OpPwrite, Rank: 7, FD: -1}, ""},
		{`{"r\u0061nk":1,"op":"mpi_barrier"}`, trace.Event{Op: trace.OpMPIBarrier, Rank: 1}, ""},
		{`{"rank":0,"op":"open","flags":65,"mode":420,"errno":"ENOENT"}`, trace.Event{Op: trace.OpOpen, Flags: 65, Mode: 0o644, Ret: -2}, ""},
		{`{"rank":0,"op":"open","flags":"O_RDWR | O_CREAT","mode":"755","ret":-2,"errno":"ENOENT"}`, trace.Event{Op: trace.OpOpen, Flags: 0x42, Mode: 0o755, Ret: -2}, ""},
		{`{"rank":0,"op":"open","flags":"0x41"}`, trace.Event{Op: trace.OpOpen, Flags: 0x41}, ""},
		{`{"rank":0,"op":"lseek","whence":1}`, trace.Event{Op: trace.OpLseek, Whence: 1}, ""},
		{`{"rank":0,"op":"lseek","whence":"SEEK_HOLE","ret":-9223372036854775808}`, trace.Event{Op: trace.OpLseek, Whence: 4, Ret: math.MinInt64}, ""},
		{`{"rank":0,"op":"op#77","errno":"E77"}`, trace.Event{Op: 77, Ret: -77}, ""},
		{`{"rank":0,"op":"MPI_Sendrecv","source":0}`, trace.Event{Op: trace.OpMPISendrecv, Flags: trace.RecvHalf}, ""},
		{`{"rank":0,"op":"MPI_Sendrecv","flags":4}`, trace.Event{Op: trace.OpMPISendrecv}, ""}, // "source" decides, not the bit
		{`{"rank":0,"op":"mpi_sendrecv","flags":"0x5","source":-2,"recv_tag":-1}`, trace.Event{Op: trace.OpMPISendrecv, Flags: 5, Source: -2, RecvTag: -1}, ""},
		{`{"rank":4294967295,"op":"mark","path":"via path"}`, trace.Event{Op: trace.OpMark, Rank: math.MaxUint32}, "via path"},
		{`{"rank":0,"op":"mark","label":"a\u00e9\ud83d\ude00\/"}`, trace.Event{Op: trace.OpMark}, "aé😀/"},
		{`{"rank":0,"op":"open","path":"raw\udcff\udcc3"}`, trace.Event{Op: trace.OpOpen}, "raw\xff\xc3"},
		{`{"rank":0,"op":"open","path":"lone\ud800x\udc00"}`, trace.Event{Op: trace.OpOpen}, "lone\ufffdx\ufffd"},
		{"\xef\xbb\xbf{\"rank\":0,\"op\":\"close\",\"ret\":0}\r", trace.Event{Op: trace.OpClose}, ""},
		{"# a comment\n\n   \t\n{\"rank\":3,\"op\":\"fsync\"}\n", trace.Event{Op: trace.OpFsync, Rank: 3}, ""},
		{`{"rank":0,"op":"write","start_ns":-5,"dur_ns":9223372036854775807,"offset":-9223372036854775808}`,
			trace.Event{Op: trace.OpWrite, Start: -5, Dur: math.MaxInt64, Offset: math.MinInt64}, ""},
	}
	for _, c := range cases {
		rd := NewReader(strings.NewReader(c.in), "in")
		evs, err := trace.ReadAll(rd)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if len(evs) != 1 {
			t.Errorf("%q: %d events", c.in, len(evs))
			continue
		}
		e := evs[0]
		if p := rd.Path(e.Path); p != c.path {
			t.Errorf("%q: path %q, want %q", c.in, p, c.path)
		}
		e.Path = 0
		if e != c.want {
			t.Errorf("%q:\n got %+v\nwant %+v", c.in, e, c.want)
		}
	}
}

func TestErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"rank":0,"op":"write","sise":4}`, `in.jsonl:1: unknown field "sise"`},
		{"\n# comment\n" + `{"rank":0,"op":"wrte"}`, `in.jsonl:3: unknown op "wrte"`},
		{`{"rank":0}`, `in.jsonl:1: missing field "op"`},
		{`{"op":"write"}`, `in.jsonl:1: missing field "rank"`},
		{`{}`, `in.jsonl:1: missing field "op"`},
		{`{"rank":0,"op":"write","size":"4"}`, `in.jsonl:1: field "size": want an integer, got a string`},
		{`{"rank":0,"op":5}`, `in.jsonl:1: field "op": want a string, got a number`},
		{`{"rank":0,"op":"write","size":4.5}`, `in.jsonl:1: field "size": want an integer, got 4.5`},
		{`{"rank":0,"op":"write","size":1e3}`, `in.jsonl:1: field "size": want an integer, got 1e3`},
		{`{"rank":0,"op":"write","size":true}`, `in.jsonl:1: field "size": want an integer, got a boolean`},
		{`{"rank":0,"op":"write","path":null}`, `in.jsonl:1: field "path": want a string, got null`},
		{`{"rank":0,"op":"open","flags":[1]}`, `in.jsonl:1: field "flags": want a string or an integer, got an array`},
		{`{"rank":0,"op":"write","size":-1}`, `in.jsonl:1: field "size": negative (-1)`},
		{`{"rank":0,"op":"write","dur_ns":-3}`, `in.jsonl:1: field "dur_ns": negative (-3)`},
		{`{"rank":0,"op":"MPI_Send","bytes":-3}`, `in.jsonl:1: field "bytes": negative (-3)`},
		{`{"rank":-1,"op":"write"}`, `in.jsonl:1: field "rank": negative (-1)`},
		{`{"rank":4294967296,"op":"write"}`, `in.jsonl:1: field "rank": 4294967296 out of range`},
		{`{"rank":0,"op":"write","fd":99999999999}`, `in.jsonl:1: field "fd": 99999999999 out of range`},
		{`{"rank":0,"op":"write","ret":9223372036854775808}`, `in.jsonl:1: field "ret": 9223372036854775808 out of range`},
		{`{"rank":0,"op":"write","ret":-9223372036854775809}`, `in.jsonl:1: field "ret": -9223372036854775809 out of range`},
		{`{"rank":0,"op":"write","ret":99999999999999999999999}`, `in.jsonl:1: field "ret": 99999999999999999999999 out of range`},
		{`{"rank":01,"op":"write"}`, `in.jsonl:1: column 9: "01" is not a JSON number (leading zero)`},
		{`{"rank":-,"op":"write"}`, `in.jsonl:1: column 9: "-" is not a JSON number`},
		{`{"rank":1.,"op":"write"}`, `in.jsonl:1: column 9: "1." is not a JSON number`},
		{`{"rank":0,"op":"open","flags":"O_BOGUS"}`, `in.jsonl:1: field "flags": unknown flag "O_BOGUS"`},
		{`{"rank":0,"op":"open","flags":-1}`, `in.jsonl:1: field "flags": negative (-1)`},
		{`{"rank":0,"op":"open","mode":"999"}`, `in.jsonl:1: field "mode": "999" is not an octal mode`},
		{`{"rank":0,"op":"lseek","whence":"SEEK_UP"}`, `in.jsonl:1: field "whence": unknown whence "SEEK_UP"`},
		{`{"rank":0,"op":"open","ret":-2,"errno":"EIO"}`, `in.jsonl:1: "errno" EIO (5) disagrees with "ret" -2`},
		{`{"rank":0,"op":"open","errno":"ENOENT","ret":3}`, `in.jsonl:1: "errno" ENOENT (2) disagrees with "ret" 3`},
		{`{"rank":0,"op":"open","errno":"EWHAT"}`, `in.jsonl:1: unknown errno "EWHAT"`},
		{`{"rank":0,"op":"open","errno":"E4096"}`, `in.jsonl:1: unknown errno "E4096"`},
		{`{"rank":0,"op":"write","size":1,"size":2}`, `in.jsonl:1: field "size" given twice`},
		{`{"rank":0,"op":"write","rank":0}`, `in.jsonl:1: field "rank" given twice`},
		{`{"rank":0,"op":"write"`, `in.jsonl:1: incomplete JSON object`},
		{`{"rank":0,"op":"wri`, `in.jsonl:1: incomplete JSON object`},
		{`{"rank":0,"op":"write"} {}`, `in.jsonl:1: column 25: more than one JSON value on the line`},
		{`{"rank":0 "op":"write"}`, `in.jsonl:1: column 11: want ',' or '}'`},
		{`{"rank" 0}`, `in.jsonl:1: column 9: want ':' after "rank"`},
		{`{rank:0}`, `in.jsonl:1: column 2: want a field name in quotes`},
		{`{"rank":0,}`, `in.jsonl:1: column 11: want a field name in quotes`},
		{`{"rank":+1}`, `in.jsonl:1: column 9: want a value for "rank"`},
		{`[1,2]`, `in.jsonl:1: column 1: want a JSON object`},
		{`{"rank":0,"op":"write","path":"a` + "\t" + `b"}`, `in.jsonl:1: column 33: control character 0x09 in a string (escape it)`},
		{`{"rank":0,"op":"write","path":"a\qb"}`, `in.jsonl:1: column 33: bad escape \q`},
		{`{"rank":0,"op":"write","path":"a\u12"}`, `in.jsonl:1: column 33: bad \u escape`},
		{"{\"rank\":0,\"op\":\"write\",\"path\":\"a\xffb\"}", `in.jsonl:1: column 32: string is not valid UTF-8`},
		{"{\"rank\":0,\"op\":\"write\",\"path\":\"\\n\xffb\"}", `in.jsonl:1: column 34: string is not valid UTF-8`},
		{`{"rank":0,"op":"write","label":"x"}`, `in.jsonl:1: "label" on write, which is not a marker (use "path")`},
		{`{"rank":0,"op":"MPI_Sendrecv","peer":1,"recv_tag":3}`, `in.jsonl:1: "recv_tag" without "source"`},
		{`{"rank":0,"op":"MPI_Send","peer":1,"source":2}`, `in.jsonl:1: "source" on MPI_Send, which has no receive half (only MPI_Sendrecv has)`},
		{`{"rank":0,"op":"MPI_Sendrecv","source":2147483648}`, `in.jsonl:1: field "source": 2147483648 out of range`},
		{`{"rank":0,"op":"mark","label":"x","path":"y"}`, `in.jsonl:1: both "label" and "path": a marker's label is its path`},
		{`{"rank":0,"op":"write"}` + "\n" + `{"rank":0,"op":"write","ret":"x"}`, `in.jsonl:2: field "ret": want an integer, got a string`},
	}
	for _, c := range cases {
		_, err := trace.ReadAll(NewReader(strings.NewReader(c.in), "in.jsonl"))
		if err == nil || err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %s", c.in, err, c.want)
			continue
		}
		var le *schema.LineError
		if !errors.As(err, &le) || le.Name != "in.jsonl" || le.Line < 1 {
			t.Errorf("%s: %T is not a *schema.LineError", c.in, err)
		}
	}
}

func TestLongLine(t *testing.T) {
	// A line longer than the bufio buffer but within MaxLine is read.
	pad := strings.Repeat(" ", 200<<10)
	p := strings.Repeat("x", 4095)
	in := `{"rank":0,` + pad + `"op":"open","path":"` + p + `"}` + "\n" + `{"rank":1,"op":"close"}`
	rd := NewReader(strings.NewReader(in), "big.jsonl")
	evs, err := trace.ReadAll(rd)
	if err != nil || len(evs) != 2 || rd.Path(evs[0].Path) != p || evs[1].Rank != 1 {
		t.Fatalf("%v, %d events", err, len(evs))
	}
	long := "\n" + `{"rank":0,"op":"open","path":"` + strings.Repeat("x", MaxLine+10) + `"}`
	_, err = trace.ReadAll(NewReader(strings.NewReader(long), "big.jsonl"))
	if err == nil || err.Error() != "big.jsonl:2: line longer than 1048576 bytes (the limit of every text importer; it is fixed)" {
		t.Fatalf("err = %v", err)
	}
	// A path (or label) of more than trace.MaxPath bytes is refused.
	for _, f := range []string{"path", "path2", "label"} {
		in := `{"rank":0,"op":"rename","path":"a","` + f + `":"` + strings.Repeat("y", 4096) + `"}`
		if f == "path" {
			in = `{"rank":0,"op":"open","path":"` + strings.Repeat("y", 4096) + `"}`
		}
		_, err = trace.ReadAll(NewReader(strings.NewReader(in), "p.jsonl"))
		if err == nil || !strings.HasPrefix(err.Error(), `p.jsonl:1: field "`+f+`": path of 4096 bytes: a path holds at most 4095 bytes`) {
			t.Errorf("%s: err = %v", f, err)
		}
	}
}

// TestReadEvents checks the Source contract: full batches, a short last
// batch, then io.EOF; events before a bad line come with its error, which
// stays.
func TestReadEvents(t *testing.T) {
	var in strings.Builder
	for i := range 10 {
		in.WriteString(`{"rank":` + strconv.Itoa(i) + `,"op":"read","size":1,"ret":1}` + "\n")
	}
	rd := NewReader(iotest.OneByteReader(strings.NewReader(in.String())), "x")
	buf := make([]trace.Event, 4)
	for i, want := range []int{4, 4, 2} {
		n, err := rd.ReadEvents(buf)
		if n != want || err != nil {
			t.Fatalf("batch %d: %d, %v", i, n, err)
		}
		if buf[0].Rank != uint32(4*i) {
			t.Fatalf("batch %d starts with rank %d", i, buf[0].Rank)
		}
	}
	if n, err := rd.ReadEvents(buf); n != 0 || err != io.EOF {
		t.Fatalf("at the end: %d, %v", n, err)
	}
	if rd.Line() != 10 {
		t.Fatalf("Line() = %d", rd.Line())
	}

	rd = NewReader(strings.NewReader(in.String()+"{oops}\n"+in.String()), "x")
	buf = make([]trace.Event, 32)
	n, err := rd.ReadEvents(buf)
	if n != 10 || err == nil || err.Error() != "x:11: column 2: want a field name in quotes" {
		t.Fatalf("%d, %v", n, err)
	}
	if n, err2 := rd.ReadEvents(buf); n != 0 || err2 != err {
		t.Fatalf("after an error: %d, %v", n, err2)
	}
	// The underlying reader's errors carry the name.
	rd = NewReader(iotest.ErrReader(errors.New("disk on fire")), "y.jsonl")
	if err := rd.Read(&buf[0]); err == nil || err.Error() != "y.jsonl: disk on fire" {
		t.Fatalf("%v", err)
	}
}

// TestPathTable: a reader gives every distinct string one id, and
// trace.Copy translates the ids into a sink's table.
func TestPathTable(t *testing.T) {
	in := `{"rank":0,"op":"open","path":"/a"}
{"rank":1,"op":"open","path":"/b"}
{"rank":0,"op":"rename","path":"/b","path2":"/a"}
{"rank":0,"op":"mark","label":"/a"}
{"rank":0,"op":"open","path":""}
`
	rd := NewReader(strings.NewReader(in), "x")
	evs, err := trace.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	a, b := evs[0].Path, evs[1].Path
	if a == b || a == 0 || evs[2].Path != b || evs[2].Path2 != a || evs[3].Path != a || evs[4].Path != 0 {
		t.Fatalf("ids: %+v", evs)
	}
	if rd.Path(a) != "/a" || rd.Path(b) != "/b" || rd.Paths().Len() != 3 {
		t.Fatalf("table: %q %q %d", rd.Path(a), rd.Path(b), rd.Paths().Len())
	}
	sink := trace.NewSliceSink()
	sink.Intern("/x")
	sink.Intern("/y") // so that the sink's ids differ from the reader's
	n, err := trace.Copy(sink, NewReader(strings.NewReader(in), "x"))
	if err != nil || n != 5 {
		t.Fatal(n, err)
	}
	sameEvents(t, sink.Events, sink.Paths.Lookup, evs, rd.Path)
	if sink.Events[0].Path == a {
		t.Fatal("ids were not translated")
	}
}

// FuzzJSONLReader: no input panics; anything accepted writes back and
// reads back to the same events, and writing those gives the same bytes.
func FuzzJSONLReader(f *testing.F) {
	r := rand.New(rand.NewPCG(2, 2))
	paths := trace.NewPaths()
	data := writeAll(f, randomEvents(r, 40, paths), paths.Lookup)
	for _, l := range strings.Split(string(data), "\n") {
		f.Add(l)
	}
	f.Add(string(data[:len(data)/3]))
	for _, s := range []string{
		`{"rank":0,"op":"open","flags":12,"mode":420,"whence":2,"errno":"ENOENT"}`,
		"# comment\n\n{}",
		`{"r\u0061nk":1,"op":"mpi_barrier","path":"\udcff\ud800\ud83d\ude00"}`,
		"\xef\xbb\xbf{\"rank\":0,\"op\":\"close\"}\r\n",
		`{"rank":0,"op":"op#7","errno":"E300","flags":"O_SYNC|0x3|MPI_MODE_CREATE","whence":"-7"}`,
		`{"rank":1,"op":"mark","path":"x","ret":-1,"size":1e3}`,
		`{"rank":2,"op":"MPI_Sendrecv","peer":3,"tag":1,"source":1,"recv_tag":1,"bytes":8}`,
		`{"rank":2,"op":"MPI_Sendrecv","peer":-2,"flags":"0x4","recv_tag":9,"source":0}`,
		`{"rank":2,"op":"MPI_Sendrecv","peer":3,"flags":4}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		rd := NewReader(strings.NewReader(in), "f")
		evs, err := trace.ReadAll(rd)
		if err != nil {
			var le *schema.LineError
			if !errors.As(err, &le) || le.Line < 1 || !strings.HasPrefix(err.Error(), "f:") {
				t.Fatalf("error %q is not a line error", err)
			}
			return
		}
		out := writeAll(t, evs, rd.Path)
		rd2 := NewReader(bytes.NewReader(out), "g")
		again, err := trace.ReadAll(rd2)
		if err != nil {
			t.Fatalf("re-reading what was written: %v\n%s", err, out)
		}
		sameEvents(t, again, rd2.Path, evs, rd.Path)
		if out2 := writeAll(t, again, rd2.Path); !bytes.Equal(out, out2) {
			t.Fatalf("writes differ:\n%s\n%s", out, out2)
		}
	})
}

// realistic returns the kind of events a checkpointing run makes.
func realistic(n int, paths *trace.Paths) []trace.Event {
	p := paths.Intern("/scratch/run42/out.0007")
	evs := make([]trace.Event, n)
	for i := range evs {
		evs[i] = trace.Event{Op: trace.OpPwrite, Rank: uint32(i % 64), FD: 5, Path: p, Offset: int64(i) * 1 << 20,
			Size: 1 << 20, Ret: 1 << 20, Start: 1_700_000_000 + int64(i)*13_000, Dur: 9_000 + int64(i%500)}
		switch i % 50 {
		case 0:
			evs[i] = trace.Event{Op: trace.OpOpen, Rank: uint32(i % 64), Path: p, Ret: 5, Flags: trace.OWronly | trace.OCreat,
				Mode: 0o644, Start: evs[i].Start, Dur: 30_000}
		case 1:
			evs[i] = trace.Event{Op: trace.OpMPIBarrier, Rank: uint32(i % 64), Start: evs[i].Start, Dur: 120_000}
		}
	}
	return evs
}

func benchWrite(b *testing.B, evs []trace.Event, paths *trace.Paths) {
	w := NewWriter(io.Discard)
	var n int64
	for i := 0; b.Loop(); i++ {
		w.Write(&evs[i%len(evs)], paths.Lookup)
		n++
	}
	w.Flush()
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "lines/s")
}

func benchRead(b *testing.B, evs []trace.Event, paths *trace.Paths) {
	data := writeAll(b, evs, paths.Lookup)
	b.SetBytes(int64(len(data) / len(evs)))
	out := make([]trace.Event, trace.BatchSize)
	var n int64
	rd := NewReader(bytes.NewReader(data), "x")
	for b.Loop() {
		k, err := rd.ReadEvents(out[:1])
		if err == io.EOF {
			rd = NewReader(bytes.NewReader(data), "x")
			continue
		}
		if err != nil {
			b.Fatal(err)
		}
		n += int64(k)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "lines/s")
}

func BenchmarkWrite(b *testing.B) {
	b.Run("random", func(b *testing.B) {
		paths := trace.NewPaths()
		benchWrite(b, randomEvents(rand.New(rand.NewPCG(1, 1)), 10000, paths), paths)
	})
	b.Run("realistic", func(b *testing.B) {
		paths := trace.NewPaths()
		benchWrite(b, realistic(10000, paths), paths)
	})
}

func BenchmarkRead(b *testing.B) {
	b.Run("random", func(b *testing.B) {
		paths := trace.NewPaths()
		benchRead(b, randomEvents(rand.New(rand.NewPCG(1, 1)), 10000, paths), paths)
	})
	b.Run("realistic", func(b *testing.B) {
		paths := trace.NewPaths()
		benchRead(b, realistic(10000, paths), paths)
	})
}

// TestSchemaExamples: the examples of docs/FORMAT.md read, and the first one is
// exactly what the Writer writes for its events.
func TestSchemaExamples(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "FORMAT.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, ex, ok := strings.Cut(string(doc), "### Example\n")
	if !ok {
		t.Fatal("no example section")
	}
	ex, _, _ = strings.Cut(ex, "### CSV")
	blocks := strings.Split(ex, "```")
	if len(blocks) < 4 {
		t.Fatalf("%d code fences", len(blocks))
	}
	for i, want := range []int{6, 1} {
		block := strings.TrimPrefix(blocks[2*i+1], "\n")
		rd := NewReader(strings.NewReader(block), "FORMAT.md")
		evs, err := trace.ReadAll(rd)
		if err != nil || len(evs) != want {
			t.Fatalf("example %d: %d events, %v", i+1, len(evs), err)
		}
		if i == 0 {
			if got := string(writeAll(t, evs, rd.Path)); got != block {
				t.Fatalf("example 1 is not what the writer writes:\n%s", got)
			}
		}
	}
}
