package dxt

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

var samples = []string{"ior-posix-fpp-2ranks-256k.txt", "ior-mpiio-4ranks-64k.txt"}

func readSample(t *testing.T, name, layer string) *Trace {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := Read(f, name, Options{Layer: layer})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// listed counts a sample's calls from its text, independently of the
// parser: the header counts of every record, and the lengths of its lines.
func listed(t *testing.T, name string) map[uint32]*[2]Count {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	counts := map[uint32]*[2]Count{}
	get := func(r uint32) *[2]Count {
		if counts[r] == nil {
			counts[r] = &[2]Count{}
		}
		return counts[r]
	}
	head := regexp.MustCompile(`^# DXT, write_count: (\d+), read_count: (\d+)`)
	rankRe := regexp.MustCompile(`^# DXT, rank: (\d+),`)
	mod := POSIX
	var rank uint32
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if strings.Contains(l, "DXT_MPIIO module data") {
			mod = MPIIO
		}
		if m := rankRe.FindStringSubmatch(l); m != nil {
			v, _ := strconv.Atoi(m[1])
			rank = uint32(v)
		}
		if m := head.FindStringSubmatch(l); m != nil {
			w, _ := strconv.ParseInt(m[1], 10, 64)
			r, _ := strconv.ParseInt(m[2], 10, 64)
			get(rank)[mod].Writes += w
			get(rank)[mod].Reads += r
		}
		if f := strings.Fields(l); len(f) >= 8 && (f[0] == "X_POSIX" || f[0] == "X_MPIIO") {
			n, _ := strconv.ParseInt(f[5], 10, 64)
			if f[2] == "write" {
				get(rank)[mod].WriteBytes += n
			} else {
				get(rank)[mod].ReadBytes += n
			}
		}
	}
	return counts
}

// eventCounts counts the reads and writes of a trace per rank and layer.
func eventCounts(t *testing.T, tr trace.Trace) map[uint32]*[2]Count {
	t.Helper()
	out := map[uint32]*[2]Count{}
	for _, r := range tr.Ranks() {
		src, _ := tr.Rank(r)
		evs, err := trace.ReadAll(src)
		if err != nil {
			t.Fatal(err)
		}
		c := &[2]Count{}
		out[r] = c
		for _, e := range evs {
			m := POSIX
			if e.Op.Class() == trace.ClassMPIIO {
				m = MPIIO
			}
			switch e.Op.Dir() {
			case trace.DirWrite:
				c[m].Writes++
				c[m].WriteBytes += e.Ret
			case trace.DirRead:
				c[m].Reads++
				c[m].ReadBytes += e.Ret
			}
		}
	}
	return out
}

// TestSamplesCounts: the shared samples import, and per rank and layer
// the reads, writes and bytes equal what DXT lists.
func TestSamplesCounts(t *testing.T) {
	for _, name := range samples {
		t.Run(name, func(t *testing.T) {
			tr := readSample(t, name, "all")
			want := listed(t, name)
			got := eventCounts(t, tr)
			if len(got) != len(want) {
				t.Fatalf("ranks %v, want %d", tr.Ranks(), len(want))
			}
			for r, w := range want {
				if g := got[r]; g == nil || *g != *w {
					t.Errorf("rank %d: %+v, DXT lists %+v", r, g, w)
				}
				if l := tr.Listed[r]; *l != *w {
					t.Errorf("rank %d: Listed %+v, want %+v", r, l, w)
				}
			}
			if len(tr.Mismatched) != 0 {
				t.Errorf("mismatched %v", tr.Mismatched)
			}
			checkStreams(t, tr)
			if n := tr.Notes(); !strings.Contains(n[0], "0.1 ms") {
				t.Errorf("notes %v", n)
			}
		})
	}
}

// checkStreams: every rank's events are in start order, every call's
// file is open, every open is closed.
func checkStreams(t *testing.T, tr *Trace) {
	t.Helper()
	for _, r := range tr.Ranks() {
		src, _ := tr.Rank(r)
		evs, _ := trace.ReadAll(src)
		open := map[[2]int32]bool{}
		var last int64
		for i, e := range evs {
			if e.Start < last {
				t.Fatalf("rank %d event %d starts at %d, before %d", r, i, e.Start, last)
			}
			last = e.Start
			k := [2]int32{int32(e.Op.Class()), e.FD}
			switch e.Op {
			case trace.OpOpen, trace.OpMPIFileOpen:
				if open[k] {
					t.Errorf("rank %d: %s opened twice", r, tr.Path(e.Path))
				}
				open[k] = true
			case trace.OpClose, trace.OpMPIFileClose:
				delete(open, k)
			default:
				if !open[k] {
					t.Errorf("rank %d event %d: %s on fd %d, not open", r, i, e.Op, e.FD)
				}
				if e.Offset < 0 {
					t.Errorf("rank %d event %d: offset %d", r, i, e.Offset)
				}
			}
		}
		if len(open) != 0 {
			t.Errorf("rank %d: left open %v", r, open)
		}
	}
}

// TestLayers: "auto" keeps the MPI-IO calls of the shared file and the
// POSIX calls of files used only through POSIX; MPI-IO calls without an
// offset take their POSIX call's.
func TestLayers(t *testing.T) {
	name := "ior-mpiio-4ranks-64k.txt"
	auto := readSample(t, name, "")
	c := eventCounts(t, auto)
	if c[1][POSIX] != (Count{}) || c[1][MPIIO].Writes != 32 || c[0][POSIX].Writes != 5 {
		t.Errorf("auto: rank 1 %+v, rank 0 %+v", *c[1], *c[0])
	}
	if auto.Dropped[POSIX] != 4*64 || auto.Matched != 4*64 || auto.Assumed != 0 {
		t.Errorf("dropped %v matched %d assumed %d", auto.Dropped, auto.Matched, auto.Assumed)
	}
	src, _ := auto.Rank(1)
	evs, _ := trace.ReadAll(src)
	if evs[0].Op != trace.OpMPIFileOpen || evs[0].Comm != trace.CommSelf || evs[0].Flags != trace.MPIModeCreate|trace.MPIModeRdwr {
		t.Errorf("first event %+v", evs[0])
	}
	// Rank 1's first write is at its POSIX call's offset, 1 MiB.
	if e := evs[1]; e.Op != trace.OpMPIFileWrite || e.Offset != 1<<20 || e.Size != 65536 || e.Start != 19_200_000 {
		t.Errorf("first write %+v", e)
	}
	if n := strings.Join(auto.Notes(), "\n"); !strings.Contains(n, "256 X_POSIX calls that the MPI-IO library made") {
		t.Errorf("notes %q", n)
	}
	posix := readSample(t, name, "posix")
	if c := eventCounts(t, posix); c[2][MPIIO] != (Count{}) || c[2][POSIX].Reads != 32 {
		t.Errorf("posix: %+v", *c[2])
	}
	mp := readSample(t, name, "mpiio")
	if len(mp.Ranks()) != 4 || mp.Dropped[POSIX] != 4*64+5 {
		t.Errorf("mpiio: ranks %v dropped %v", mp.Ranks(), mp.Dropped)
	}
	m := auto.Meta()
	if m.Ranks != 4 || m.Epoch != 1795342037e9 || m.Command[0] != "/opt/ior/bin/ior" || len(m.Hosts) != 1 || m.Hosts[0] != "node01" {
		t.Errorf("meta %+v", m)
	}
	if _, err := Read(strings.NewReader(""), "x", Options{Layer: "both"}); err == nil || !strings.Contains(err.Error(), `layer "both"`) {
		t.Errorf("bad layer: %v", err)
	}
}

// TestOrder: calls sort by start across files, with the listing order
// for ties; threads are numbered in order of appearance; an MPI-IO call
// with no POSIX call is placed at the individual pointer.
func TestOrder(t *testing.T) {
	text := `# DXT_MPIIO module data
# DXT, file_id: 1, file_name: /a
# DXT, rank: 3, hostname: h
# DXT, write_count: 2, read_count: 1
# Module    Rank  Wt/Rd  Segment          Offset          Length    Start(s)      End(s)   Pthread-ID
 X_MPIIO       3  write        0              -1             100      0.0010      0.0020   77
 X_MPIIO       3  write        1              -1             100      0.0030      0.0030   78
 X_MPIIO       3   read        0             500              10      0.0010      0.0015   77
`
	tr, err := Read(strings.NewReader(text), "x", Options{})
	if err != nil {
		t.Fatal(err)
	}
	src, _ := tr.Rank(3)
	evs, _ := trace.ReadAll(src)
	var ops []string
	for _, e := range evs {
		ops = append(ops, e.Op.String()+"@"+strconv.FormatInt(e.Offset, 10)+"/t"+strconv.Itoa(int(e.Thread)))
	}
	// The read ends first of the two calls at 1 ms.
	want := "MPI_File_open@0/t0 MPI_File_read_at@500/t0 MPI_File_write@0/t0 MPI_File_write@100/t1 MPI_File_close@0/t0"
	if got := strings.Join(ops, " "); got != want {
		t.Errorf("%s\nwant %s", got, want)
	}
	if tr.Assumed != 2 || len(tr.Mismatched) != 0 {
		t.Errorf("assumed %d mismatched %v", tr.Assumed, tr.Mismatched)
	}
	if evs[0].Flags != trace.MPIModeCreate|trace.MPIModeRdwr {
		t.Errorf("open %+v", evs[0])
	}
}

func TestErrors(t *testing.T) {
	rec := "# DXT, file_id: 1, file_name: /a\n# DXT, rank: 0, hostname: h\n# DXT, write_count: 1, read_count: 0\n"
	for _, c := range []struct{ in, want string }{
		{"", "x.txt: no DXT records"},
		{"# just a comment\n", "x.txt: no DXT records"},
		{"hello\n", `x.txt:1: not a line of darshan-dxt-parser output: "hello"`},
		{" X_POSIX 0 write 0 0 1 0.1 0.2\n", "x.txt:1: X_POSIX line before any file record"},
		{rec + " X_POSIX 1 write 0 0 1 0.1 0.2\n", `x.txt:4: rank "1": the record is of rank 0`},
		{rec + " X_POSIX 0 write 0 0 1 0.1\n", "x.txt:4: 7 fields"},
		{rec + " X_POSIX 0 append 0 0 1 0.1 0.2\n", `x.txt:4: "append": want write or read`},
		{rec + " X_POSIX 0 write 0 -5 1 0.1 0.2\n", `x.txt:4: offset "-5"`},
		{rec + " X_POSIX 0 write 0 0 -1 0.1 0.2\n", `x.txt:4: length "-1"`},
		{rec + " X_POSIX 0 write 0 0 1 x 0.2\n", `x.txt:4: start "x"`},
		{rec + " X_POSIX 0 write 0 0 1 0.3 0.2\n", "x.txt:4: ends (0.2 s) before it starts (0.3 s)"},
		{rec + " X_MPIIO 0 write 0 0 1 0.1 0.2\n", "x.txt:4: X_MPIIO line in the X_POSIX section"},
		{"# DXT, rank: 0, hostname: h\n", "x.txt:1: rank before file_id"},
		{"# DXT, file_id: 1, file_name: /a\n# DXT, write_count: x, read_count: 0\n", "x.txt:2: bad counts"},
	} {
		_, err := Read(strings.NewReader(c.in), "x.txt", Options{})
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
	// Counts that disagree with the lines are noted, not fatal.
	tr, err := Read(strings.NewReader(rec+" X_POSIX 0 read 0 0 1 0.1 0.2\n"), "x.txt", Options{})
	if err != nil || len(tr.Mismatched) != 1 || !strings.Contains(tr.Mismatched[0], "x.txt:1: X_POSIX of /a, rank 0: 0 writes and 1 reads listed, the header says 1 and 0") {
		t.Errorf("%v %v", err, tr)
	}
}

var errLine = regexp.MustCompile(`^x\.txt(:[0-9]+)?: [^\n]+$`)

// FuzzRead: any input reads or stops with one error line naming the file
// (and the line); never a panic.
func FuzzRead(f *testing.F) {
	for _, name := range samples {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b[:min(len(b), 6000)]))
	}
	f.Add("# DXT_MPIIO module data\n# DXT, file_id: 1, file_name: /a\n# DXT, rank: 0, hostname: h\n# DXT, write_count: 1, read_count: 0\n# Module Pthread-ID\n X_MPIIO 0 write 0 -1 4 0.0001 0.0002 5 [ 1] [ 2]\n")
	f.Fuzz(func(t *testing.T, in string) {
		for _, layer := range Layers {
			tr, err := Read(strings.NewReader(in), "x.txt", Options{Layer: layer})
			if err != nil {
				if !errLine.MatchString(err.Error()) {
					t.Fatalf("error %q is not one line naming the file", err)
				}
				return
			}
			for _, r := range tr.Ranks() {
				src, _ := tr.Rank(r)
				if _, err := trace.ReadAll(src); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}
