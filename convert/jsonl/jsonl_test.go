package jsonl

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

func randomEvents(r *rand.Rand, n int, paths *trace.Paths) []trace.Event {
	ops := trace.Ops()
	names := []string{"/a", "/b c/\"q\"", "tab\there", "ünï/日本", "nl\nx"}
	v := func() int64 {
		switch r.IntN(3) {
		case 0:
			return 0
		case 1:
			return int64(r.IntN(1000)) - 10
		}
		return r.Int64() - r.Int64()
	}
	evs := make([]trace.Event, n)
	for i := range evs {
		op := ops[r.IntN(len(ops))]
		e := trace.Event{Op: op, Rank: uint32(r.IntN(5)), Thread: uint32(r.IntN(3)), Start: v(), Dur: max(0, v()),
			FD: int32(v()), Offset: v(), Size: max(0, v()), Ret: v(), Flags: r.Uint32() & 0x1fffff, Mode: r.Uint32() & 0o7777,
			Whence: int32(r.IntN(5)), Peer: int32(v()), Tag: int32(v()), Comm: uint32(r.IntN(4)), Bytes: v(), Count: int32(r.IntN(9)), Stride: v()}
		if r.IntN(2) == 0 {
			e.Path = paths.Intern(names[r.IntN(len(names))])
		}
		if r.IntN(4) == 0 && op.Info().Class != trace.ClassMarker {
			e.Path2 = paths.Intern(names[r.IntN(len(names))])
		}
		if op.Info().Class == trace.ClassMarker {
			e.Ret = 0
		}
		if e.Ret < 0 {
			e.Ret = -int64(1 + r.IntN(40)) // a known errno
			if trace.Errno(e.Ret)[0] == 'E' && strings.HasPrefix(trace.Errno(e.Ret), "E") && trace.Errno(e.Ret)[1] >= '0' && trace.Errno(e.Ret)[1] <= '9' {
				e.Ret = -2
			}
		}
		evs[i] = e
	}
	return evs
}

func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	paths := trace.NewPaths()
	evs := randomEvents(r, 5000, paths)
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for i := range evs {
		if err := w.Write(&evs[i], paths.Lookup); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush()
	rd := NewReader(&buf, "x.jsonl")
	got, err := trace.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(evs) {
		t.Fatalf("%d events, want %d", len(got), len(evs))
	}
	for i := range evs {
		g, want := got[i], evs[i]
		if rd.Path(g.Path) != paths.Lookup(want.Path) || rd.Path(g.Path2) != paths.Lookup(want.Path2) {
			t.Fatalf("event %d: paths %q %q, want %q %q", i, rd.Path(g.Path), rd.Path(g.Path2), paths.Lookup(want.Path), paths.Lookup(want.Path2))
		}
		g.Path, g.Path2, want.Path, want.Path2 = 0, 0, 0, 0
		if !reflect.DeepEqual(g, want) {
			t.Fatalf("event %d:\n got %+v\nwant %+v", i, g, want)
		}
	}
}

func TestErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"rank":0,"op":"write","sise":4}`, `in.jsonl:1: unknown field "sise"`},
		{"\n# comment\n" + `{"rank":0,"op":"wrte"}`, `in.jsonl:3: unknown op "wrte"`},
		{`{"rank":0}`, `in.jsonl:1: missing field "op"`},
		{`{"op":"write"}`, `in.jsonl:1: missing field "rank"`},
		{`{"rank":0,"op":"write","size":"4"}`, `in.jsonl:1: field "size": want an integer, got a string`},
		{`{"rank":0,"op":"write","size":4.5}`, `in.jsonl:1: field "size": want an integer, got a fraction`},
		{`{"rank":0,"op":"write","size":-1}`, `in.jsonl:1: field "size": negative (-1)`},
		{`{"rank":-1,"op":"write"}`, `in.jsonl:1: field "rank": -1 out of range`},
		{`{"rank":0,"op":"open","flags":"O_BOGUS"}`, `in.jsonl:1: field "flags": unknown flag "O_BOGUS"`},
		{`{"rank":0,"op":"open","mode":"999"}`, `in.jsonl:1: field "mode": "999" is not an octal mode`},
		{`{"rank":0,"op":"lseek","whence":"SEEK_UP"}`, `in.jsonl:1: field "whence": unknown whence "SEEK_UP"`},
		{`{"rank":0,"op":"open","ret":-2,"errno":"EIO"}`, `in.jsonl:1: "errno" EIO (5) disagrees with "ret" -2`},
		{`{"rank":0,"op":"open","errno":"EWHAT"}`, `in.jsonl:1: unknown errno "EWHAT"`},
		{`{"rank":0,"op":"write","size":1,"size":2}`, `in.jsonl:1: field "size" given twice`},
		{`{"rank":0,"op":"write"`, `in.jsonl:1: incomplete JSON object`},
		{`{"rank":0,"op":"write"} {}`, `in.jsonl:1: column 25: more than one JSON value on the line`},
		{`[1,2]`, `in.jsonl:1: column 1: want a JSON object`},
		{`{"rank":0,"op":"write","label":"x"}`, `in.jsonl:1: "label" on write, which is not a marker`},
		{`{"rank":0,"op":"write","fd":99999999999}`, `in.jsonl:1: field "fd": 99999999999 out of range`},
	}
	for _, c := range cases {
		_, err := trace.ReadAll(NewReader(strings.NewReader(c.in), "in.jsonl"))
		if err == nil || err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %s", c.in, err, c.want)
		}
	}
}

func TestLongLineAndStdinShapes(t *testing.T) {
	long := `{"rank":0,"op":"open","path":"` + strings.Repeat("x", MaxLine+10) + `"}`
	_, err := trace.ReadAll(NewReader(strings.NewReader(long), "big.jsonl"))
	if err == nil || !strings.Contains(err.Error(), "big.jsonl:1: line longer than") {
		t.Fatalf("err = %v", err)
	}
	// CRLF line ends, no final newline, blank lines.
	in := "{\"rank\":2,\"op\":\"MPI_Barrier\"}\r\n\r\n{\"rank\":2,\"op\":\"mark\",\"label\":\"x\"}"
	evs, err := trace.ReadAll(NewReader(strings.NewReader(in), "x"))
	if err != nil || len(evs) != 2 || evs[0].Op != trace.OpMPIBarrier || evs[1].Rank != 2 {
		t.Fatalf("%v %+v", err, evs)
	}
}

// FuzzReader: no input panics; anything accepted writes back and reads
// back to the same events.
func FuzzReader(f *testing.F) {
	r := rand.New(rand.NewPCG(2, 2))
	paths := trace.NewPaths()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, e := range randomEvents(r, 20, paths) {
		w.Write(&e, paths.Lookup)
	}
	w.Flush()
	for _, l := range strings.Split(buf.String(), "\n") {
		f.Add(l)
	}
	f.Add(`{"rank":0,"op":"open","flags":12,"mode":420,"whence":2,"errno":"ENOENT"}`)
	f.Add("# comment\n\n{}")
	f.Fuzz(func(t *testing.T, in string) {
		rd := NewReader(strings.NewReader(in), "f")
		evs, err := trace.ReadAll(rd)
		if err != nil {
			return
		}
		var out bytes.Buffer
		w := NewWriter(&out)
		for i := range evs {
			w.Write(&evs[i], rd.Path)
		}
		w.Flush()
		rd2 := NewReader(&out, "g")
		again, err := trace.ReadAll(rd2)
		if err != nil {
			t.Fatalf("re-reading what was written: %v\n%s", err, out.String())
		}
		if len(again) != len(evs) {
			t.Fatalf("%d events, then %d", len(evs), len(again))
		}
		for i := range evs {
			a, b := evs[i], again[i]
			if rd.Path(a.Path) != rd2.Path(b.Path) && strings.ToValidUTF8(rd.Path(a.Path), "\ufffd") != rd2.Path(b.Path) {
				t.Fatalf("event %d: path %q then %q", i, rd.Path(a.Path), rd2.Path(b.Path))
			}
			a.Path, a.Path2, b.Path, b.Path2 = 0, 0, 0, 0
			if a != b {
				t.Fatalf("event %d: %+v then %+v", i, a, b)
			}
		}
	})
}

func BenchmarkWrite(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	paths := trace.NewPaths()
	evs := randomEvents(r, 10000, paths)
	w := NewWriter(io.Discard)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w.Write(&evs[i%len(evs)], paths.Lookup)
	}
	w.Flush()
}

func BenchmarkRead(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	paths := trace.NewPaths()
	evs := randomEvents(r, 10000, paths)
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for i := range evs {
		w.Write(&evs[i], paths.Lookup)
	}
	w.Flush()
	data := buf.Bytes()
	b.ResetTimer()
	n := 0
	for n < b.N {
		rd := NewReader(bytes.NewReader(data), "x")
		out := make([]trace.Event, trace.BatchSize)
		for {
			k, err := rd.ReadEvents(out)
			n += k
			if errors.Is(err, io.EOF) || n >= b.N {
				break
			}
		}
	}
}
