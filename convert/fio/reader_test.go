package fio

import (
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// A log as fio 3.33 writes it with write_iolog (rate_iops=100).
const fioWrittenV3 = `fio version 3 iolog
146 data1 add
710 data1 open
718 data1 write 0 4096
10691 data1 write 4096 4096
23923 data1 read 0 4096
30546 data1 sync 0 0
30600 data1 datasync 0 0
30700 data1 trim 0 4096
150627 data1 close
`

func readLog(t *testing.T, text string) (*Reader, []trace.Event, error) {
	t.Helper()
	r := NewReader(strings.NewReader(text), "x.iolog", 2, nil)
	evs, err := trace.ReadAll(r)
	return r, evs, err
}

func TestReaderV3(t *testing.T) {
	r, evs, err := readLog(t, fioWrittenV3)
	if err != nil {
		t.Fatal(err)
	}
	want := []trace.Event{
		{Op: trace.OpOpen, Start: 710e3, FD: 3, Flags: trace.ORdwr | trace.OCreat, Mode: 0o644, Ret: 3},
		{Op: trace.OpPwrite, Start: 718e3, FD: 3, Offset: 0, Size: 4096, Ret: 4096},
		{Op: trace.OpPwrite, Start: 10691e3, FD: 3, Offset: 4096, Size: 4096, Ret: 4096},
		{Op: trace.OpPread, Start: 23923e3, FD: 3, Offset: 0, Size: 4096, Ret: 4096},
		{Op: trace.OpFsync, Start: 30546e3, FD: 3},
		{Op: trace.OpFdatasync, Start: 30600e3, FD: 3},
		{Op: trace.OpClose, Start: 150627e3, FD: 3},
	}
	if len(evs) != len(want) {
		t.Fatalf("%d events: %+v", len(evs), evs)
	}
	for i, w := range want {
		w.Rank, w.Path = 2, evs[0].Path
		if evs[i] != w {
			t.Errorf("event %d: %+v\nwant %+v", i, evs[i], w)
		}
	}
	if r.Path(evs[0].Path) != "data1" || r.Version() != 3 || r.Skipped()["trim"] != 1 {
		t.Errorf("path %q version %d skipped %v", r.Path(evs[0].Path), r.Version(), r.Skipped())
	}
}

func TestReaderV2(t *testing.T) {
	_, evs, err := readLog(t, "fio version 2 iolog\n/a add\n/b add\n/a open\n/b open\n/a write 0 10\n/a wait 1500 0\n/b read 100 20\n/a wait 1000 0\n/b close\n/a close\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 6 {
		t.Fatalf("%+v", evs)
	}
	// wait N: N ms since the job started; an earlier one does not go back.
	if evs[2].Start != 0 || evs[3].Start != 1500e6 || evs[4].Start != 1500e6 || evs[3].FD != 4 || evs[3].Op != trace.OpPread {
		t.Errorf("%+v", evs)
	}
}

func TestReaderErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "x.iolog:1: empty file"},
		{"fio version 1 iolog\n", `x.iolog:1: "fio version 1 iolog": only iolog versions 2 and 3`},
		{"hello\n", "x.iolog:1: not a fio iolog"},
		{"\x00\x74\x61\x65binary", "x.iolog:1: not a text fio iolog"},
		{headerV3 + "\n1 a add\n2 a open\nx a write 0 1\n", `x.iolog:4: timestamp "x"`},
		{headerV3 + "\n1 a add\n2 a write 0 1\n", "x.iolog:3: write on a, which is not open"},
		{headerV3 + "\n1 a open\n", "x.iolog:2: open of a, which the log has not added"},
		{headerV3 + "\n1 a add\n2 a open\n3 a write -1 1\n", `x.iolog:4: offset "-1"`},
		{headerV3 + "\n1 a add\n2 a open\n3 a write 0 4294967296\n", `x.iolog:4: length "4294967296"`},
		{headerV3 + "\n1 a add\n2 a open\n3 a frob 0 1\n", `x.iolog:4: I/O action "frob"`},
		{headerV3 + "\n1 a delete\n", `x.iolog:2: file action "delete"`},
		{headerV3 + "\n1 a add extra\n", "x.iolog:2: want TIMESTAMP FILENAME ACTION"},
		{headerV2 + "\na add\na open\na wait 99999999999999999 0\n", "x.iolog:4: wait"},
		{headerV3 + "\n" + strings.Repeat("9", 30) + " a add\n", "x.iolog:2: timestamp"},
		{headerV3 + "\n1 " + strings.Repeat("n", 300) + " add\n", "x.iolog:2: file name of 300 bytes"},
		{headerV3 + "\n1 a add\n2 a open\n3 a read 9223372036854775807 4096\n", "x.iolog:4: offset 9223372036854775807 and length 4096 end past the largest file offset"},
		{headerV3 + "\n1 " + strings.Repeat("n", 1<<20) + " add\n", "x.iolog:2: line longer than 1048576 bytes (the limit of every text importer; it is fixed)"},
	} {
		_, _, err := readLog(t, c.in)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.in, err, c.want)
		}
	}
}

var errLine = regexp.MustCompile(`^x\.iolog:[0-9]+: [^\n]+$`)

// FuzzReader: any input reads to the end or stops with one error line
// naming the file and line; never a panic.
func FuzzReader(f *testing.F) {
	f.Add(fioWrittenV3)
	f.Add("fio version 2 iolog\n/a add\n/a open\n/a write 0 10\n/a wait 100 0\n/a read 0 10\n/a close\n")
	f.Add(headerV3 + "\n1 a add\n2 a open\n3 a write 0 4294967295\n4 a trim 0 1\n5 a wait 1 0\n")
	f.Add("fio version 3 iolog\r\n1 a add\r\n")
	f.Fuzz(func(t *testing.T, in string) {
		r := NewReader(strings.NewReader(in), "x.iolog", 0, nil)
		buf := make([]trace.Event, 3)
		for {
			n, err := r.ReadEvents(buf)
			for _, e := range buf[:n] {
				if e.Path == 0 || r.Path(e.Path) == "" {
					t.Fatalf("event without a path: %+v", e)
				}
			}
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				if !errLine.MatchString(err.Error()) {
					t.Fatalf("error %q is not one line naming file and line", err)
				}
				return
			}
		}
	})
}
