package textutil

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestSeconds(t *testing.T) {
	for s, want := range map[string]int64{"0": 0, "0.0041": 4_100_000, "12.5": 12_500_000_000, "1.123456789": 1_123_456_789, "3.": 3e9} {
		if got, ok := Seconds(s); !ok || got != want {
			t.Errorf("%q: %d %v, want %d", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "-1", "+1", "1.1234567891", "1.x", "x", ".5", "99999999999999999999"} {
		if _, ok := Seconds(s); ok {
			t.Errorf("%q read", s)
		}
	}
}

func TestCountList(t *testing.T) {
	m := map[string]int64{"b": 2, "a": 2, "c": 5, "d": 1}
	if got := CountList(m, 3); got != "c 5, a 2, b 2, 1 more kinds" {
		t.Errorf("%q", got)
	}
	if got := CountList(nil, 3); got != "" {
		t.Errorf("%q", got)
	}
}

func TestLines(t *testing.T) {
	exact := strings.Repeat("x", MaxLine)
	in := "a\r\nb\n\n" + exact + "\r\nlast"
	l := NewLines(iotest.HalfReader(strings.NewReader(in)), "in.txt")
	var got []string
	for {
		b, err := l.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(b))
	}
	if len(got) != 5 || got[0] != "a" || got[1] != "b" || got[2] != "" || got[3] != exact || got[4] != "last" || l.Line() != 5 {
		t.Fatalf("%d lines, line %d", len(got), l.Line())
	}
	l = NewLines(strings.NewReader("ok\n"+exact+"y\nnext\n"), "in.txt")
	l.Next()
	_, err := l.Next()
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 || !errors.Is(err, ErrLongLine) || err.Error() != "in.txt:2: line longer than 1048576 bytes (the limit of every text importer; it is fixed)" {
		t.Fatalf("%v", err)
	}
	if _, again := l.Next(); again != err {
		t.Fatalf("not sticky: %v", again)
	}
}

func TestCSVRecords(t *testing.T) {
	// Quoted newlines and escaped quotes belong to the record.
	cell := strings.Repeat("a\"\"\n", MaxLine/8)
	in := "h\n\"" + cell + "\"\n" + "x\n\"" + cell + cell + cell + "\"\n"
	b, err := io.ReadAll(CSVRecords(strings.NewReader(in), "in.csv"))
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2+strings.Count(cell, "\n")+1+1 {
		t.Fatalf("%v", err)
	}
	if !strings.HasPrefix(in, string(b)) || len(b) < len(cell)+4 {
		t.Fatalf("read %d bytes", len(b))
	}
}
