package dxt

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/state"
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

// checkStreams: every rank's events are in start order; every data call
// is on a descriptor or MPI file handle its rank's events made before (an
// inherit event, or an MPI_File_open in a region labelled Made), as a
// reader of the trace follows them; no offset is negative; the only
// regions are Made ones, each around one MPI_File_open; there are no
// closes (DXT shows none).
func checkStreams(t *testing.T, tr *Trace) {
	t.Helper()
	for _, r := range tr.Ranks() {
		src, _ := tr.Rank(r)
		evs, _ := trace.ReadAll(src)
		f := state.New[struct{}, struct{}](nil)
		var last int64
		for i, e := range evs {
			if e.Start < last {
				t.Fatalf("rank %d event %d starts at %d, before %d", r, i, e.Start, last)
			}
			last = e.Start
			st := f.Apply(&evs[i])
			switch e.Op {
			case trace.OpRegionBegin, trace.OpRegionEnd:
				if tr.Path(e.Path) != Made || i+2 > len(evs) {
					t.Fatalf("rank %d event %d: region %q", r, i, tr.Path(e.Path))
				}
				if e.Op == trace.OpRegionBegin && (evs[i+1].Op != trace.OpMPIFileOpen || evs[i+2].Op != trace.OpRegionEnd) {
					t.Errorf("rank %d event %d: the Made region holds %s", r, i, evs[i+1].Op)
				}
			case trace.OpMPIFileOpen:
				if i == 0 || evs[i-1].Op != trace.OpRegionBegin {
					t.Errorf("rank %d event %d: MPI_File_open outside a Made region", r, i)
				}
			case trace.OpInherit:
				if e.Flags != 0 || e.Offset != -1 {
					t.Errorf("rank %d event %d: %+v", r, i, e)
				}
			case trace.OpClose, trace.OpMPIFileClose, trace.OpOpen:
				t.Errorf("rank %d event %d: %s", r, i, e.Op)
			default:
				if st.Learnt || (st.Desc == nil && st.Handle == nil) {
					t.Errorf("rank %d event %d: %s on %d, which no event made", r, i, e.Op, e.FD)
				}
				if st.Path != e.Path {
					t.Errorf("rank %d event %d: on %s, the event says %s", r, i, tr.Path(st.Path), tr.Path(e.Path))
				}
				if e.Offset < 0 {
					t.Errorf("rank %d event %d: offset %d", r, i, e.Offset)
				}
			}
		}
	}
}

// TestLayers: "auto" keeps the MPI-IO calls of the shared file and the
// POSIX calls of files used only through POSIX. The log gives no offset
// for the X_MPIIO calls (Darshan built with Open MPI): each takes the
// offset of its POSIX call, so every rank's MPI-IO calls are at the
// offsets the log's POSIX calls of that rank show (rank r's blocks of
// IOR's -b 1m -s 2: r MiB and 4+r MiB), not counted from 0.
func TestLayers(t *testing.T) {
	name := "ior-mpiio-4ranks-64k.txt"
	auto := readSample(t, name, "")
	c := eventCounts(t, auto)
	if c[1][POSIX] != (Count{}) || c[1][MPIIO].Writes != 32 || c[0][POSIX].Writes != 5 {
		t.Errorf("auto: rank 1 %+v, rank 0 %+v", *c[1], *c[0])
	}
	if auto.Dropped[POSIX] != 4*64 || auto.Matched != 4*64 || auto.Unplaced != 0 || len(auto.Fallback) != 0 {
		t.Errorf("dropped %v matched %d unplaced %d fallback %v", auto.Dropped, auto.Matched, auto.Unplaced, auto.Fallback)
	}
	all := readSample(t, name, "all")
	const shared = "/gpfs/scratch/alice/shared"
	for _, r := range auto.Ranks() {
		offsets := func(tr *Trace, class trace.Class) map[string][]int64 {
			src, _ := tr.Rank(r)
			evs, _ := trace.ReadAll(src)
			m := map[string][]int64{}
			for _, e := range evs {
				if e.Op.Class() == class && e.Op.Dir() != trace.DirNone && tr.Path(e.Path) == shared {
					m[e.Op.String()] = append(m[e.Op.String()], e.Offset)
				}
			}
			return m
		}
		mp, px := offsets(auto, trace.ClassMPIIO), offsets(all, trace.ClassPOSIX)
		if len(mp["MPI_File_write_at"]) != 32 || len(mp["MPI_File_read_at"]) != 32 || len(mp) != 2 {
			t.Fatalf("rank %d: MPI-IO calls %v", r, mp)
		}
		for _, k := range [][2]string{{"MPI_File_write_at", "pwrite"}, {"MPI_File_read_at", "pread"}} {
			a, b := slices.Sorted(slices.Values(mp[k[0]])), slices.Sorted(slices.Values(px[k[1]]))
			if !slices.Equal(a, b) {
				t.Errorf("rank %d: %s at %v, the log's POSIX calls at %v", r, k[0], a, b)
			}
		}
		if w := mp["MPI_File_write_at"]; w[0] != int64(r)<<20 || w[16] != int64(4+r)<<20 {
			t.Errorf("rank %d: writes at %v", r, w)
		}
	}
	src, _ := auto.Rank(1)
	evs, _ := trace.ReadAll(src)
	if evs[0].Op != trace.OpRegionBegin || evs[1].Op != trace.OpMPIFileOpen || evs[1].Comm != trace.CommSelf || evs[1].Flags != trace.MPIModeCreate|trace.MPIModeRdwr {
		t.Errorf("first events %+v %+v", evs[0], evs[1])
	}
	if e := evs[3]; e.Op != trace.OpMPIFileWriteAt || e.Offset != 1<<20 || e.Size != 65536 || e.Start != 19_200_000 {
		t.Errorf("first write %+v", e)
	}
	notes := strings.Join(auto.Notes(), "\n")
	for _, w := range []string{"256 X_POSIX calls that the MPI-IO library made", "256 X_MPIIO calls have no offset in the log", "DXT does not say which MPI-IO call", "DXT has no MPI_File_open: 4 were made on MPI_COMM_SELF", "the 2 files ranks used through POSIX"} {
		if !strings.Contains(notes, w) {
			t.Errorf("notes lack %q:\n%s", w, notes)
		}
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

// TestPOSIXOnly: a POSIX-only log: one inherit per rank and file before
// its first call, pwrite/pread at the log's offsets, no opens.
func TestPOSIXOnly(t *testing.T) {
	tr := readSample(t, "ior-posix-fpp-2ranks-256k.txt", "")
	for _, r := range tr.Ranks() {
		src, _ := tr.Rank(r)
		evs, _ := trace.ReadAll(src)
		if len(evs) != 17 || evs[0].Op != trace.OpInherit || evs[0].FD != 3 || evs[0].Ret != 3 || tr.Path(evs[0].Path) != fmt.Sprintf("/lustre/scratch/bob/fpp.%08d", r) {
			t.Fatalf("rank %d: %d events, first %+v", r, len(evs), evs[0])
		}
		for i, e := range evs[1:] {
			op, off := trace.OpPwrite, int64(i)*262144
			if i >= 8 {
				op, off = trace.OpPread, int64(i-8)*262144
			}
			if e.Op != op || e.Offset != off || e.Size != 262144 || e.Ret != 262144 || e.FD != 3 {
				t.Errorf("rank %d call %d: %+v", r, i, e)
			}
		}
	}
	if tr.Inherited != 2 || tr.Opens != 0 {
		t.Errorf("inherited %d opens %d", tr.Inherited, tr.Opens)
	}
}

// TestOrder: calls sort by start across files, with the listing order
// for ties; threads are numbered in order of appearance; MPI-IO calls
// with offsets in the log (Darshan not built with Open MPI) are at them.
func TestOrder(t *testing.T) {
	text := `# DXT_MPIIO module data
# DXT, file_id: 1, file_name: /a
# DXT, rank: 3, hostname: h
# DXT, write_count: 2, read_count: 1
# Module    Rank  Wt/Rd  Segment          Offset          Length    Start(s)      End(s)   Pthread-ID
 X_MPIIO       3  write        0            4096             100      0.0010      0.0020   77
 X_MPIIO       3  write        1           65536             100      0.0030      0.0030   78
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
	want := "region_begin@0/t0 MPI_File_open@0/t0 region_end@0/t0 MPI_File_read_at@500/t0 MPI_File_write_at@4096/t0 MPI_File_write_at@65536/t1"
	if got := strings.Join(ops, " "); got != want {
		t.Errorf("%s\nwant %s", got, want)
	}
	if tr.Matched != 0 || tr.Unplaced != 0 || len(tr.Mismatched) != 0 {
		t.Errorf("matched %d unplaced %d mismatched %v", tr.Matched, tr.Unplaced, tr.Mismatched)
	}
	if evs[1].Flags != trace.MPIModeCreate|trace.MPIModeRdwr {
		t.Errorf("open %+v", evs[1])
	}
	checkStreams(t, tr)
}

// TestNoOffset: X_MPIIO calls without an offset and no POSIX call of
// theirs (collective buffering: the aggregator's POSIX call holds both
// ranks' data) are not given one. With auto, the ranks' POSIX calls of
// the file are kept instead; with mpiio, the calls are left out.
func TestNoOffset(t *testing.T) {
	text := `# DXT_POSIX module data
# DXT, file_id: 1, file_name: /f
# DXT, rank: 0, hostname: h
# DXT, write_count: 1, read_count: 0
# Module    Rank  Wt/Rd  Segment          Offset          Length    Start(s)      End(s)
 X_POSIX       0  write        0               0             200      0.0012      0.0013
# DXT_MPIIO module data
# DXT, file_id: 1, file_name: /f
# DXT, rank: 0, hostname: h
# DXT, write_count: 1, read_count: 0
# Module    Rank  Wt/Rd  Segment          Offset          Length    Start(s)      End(s)
 X_MPIIO       0  write        0              -1             100      0.0010      0.0020
# DXT, file_id: 1, file_name: /f
# DXT, rank: 1, hostname: h
# DXT, write_count: 1, read_count: 0
# Module    Rank  Wt/Rd  Segment          Offset          Length    Start(s)      End(s)
 X_MPIIO       1  write        0              -1             100      0.0010      0.0021
`
	auto, err := Read(strings.NewReader(text), "x", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r := auto.Ranks(); len(r) != 1 || r[0] != 0 || auto.Dropped[MPIIO] != 2 || auto.Unplaced != 0 || len(auto.Fallback) != 1 {
		t.Errorf("auto: ranks %v dropped %v unplaced %d fallback %v", r, auto.Dropped, auto.Unplaced, auto.Fallback)
	}
	src, _ := auto.Rank(0)
	evs, _ := trace.ReadAll(src)
	if len(evs) != 2 || evs[1].Op != trace.OpPwrite || evs[1].Size != 200 {
		t.Errorf("auto: %+v", evs)
	}
	if n := strings.Join(auto.Notes(), "\n"); !strings.Contains(n, "X_MPIIO calls of 1 files (/f) have no offset") {
		t.Errorf("notes %s", n)
	}
	mp, err := Read(strings.NewReader(text), "x", Options{Layer: "mpiio"})
	if err != nil {
		t.Fatal(err)
	}
	if len(mp.Ranks()) != 0 || mp.Unplaced != 2 {
		t.Errorf("mpiio: ranks %v unplaced %d", mp.Ranks(), mp.Unplaced)
	}
	if n := strings.Join(mp.Notes(), "\n"); !strings.Contains(n, "2 calls without an offset in the log") {
		t.Errorf("notes %s", n)
	}
	// An incomplete module is said.
	inc, err := Read(strings.NewReader("# *WARNING*: The DXT_POSIX module contains incomplete data!\n"+text), "x", Options{})
	if err != nil || !strings.Contains(strings.Join(inc.Notes(), "\n"), "DXT_POSIX module holds incomplete data") {
		t.Errorf("%v %v", err, inc.Notes())
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
		// The job's size must hold the ranks listed, and fit a trace.
		{"# nprocs: 99999999999999\n" + rec + " X_POSIX 0 write 0 0 1 0.1 0.2\n", "x.txt:1: nprocs 99999999999999: more processes than a trace holds (2147483648); the log lists ranks up to 0"},
		{"# nprocs: 2147483649\n" + rec + " X_POSIX 0 write 0 0 1 0.1 0.2\n", "x.txt:1: nprocs 2147483649: more processes than a trace holds"},
		{"# exe: x\n# nprocs: 1\n" + strings.Replace(rec, "rank: 0", "rank: 3", 1) + " X_POSIX 3 write 0 0 1 0.1 0.2\n", "x.txt:2: nprocs 1, but the log lists rank 3"},
		{"# nprocs: -4\n" + rec + " X_POSIX 0 write 0 0 1 0.1 0.2\n", `x.txt:1: nprocs "-4": want the number of processes of the job`},
		{"# nprocs: 0\n" + rec + " X_POSIX 0 write 0 0 1 0.1 0.2\n", `x.txt:1: nprocs "0"`},
		{strings.Replace(rec, "rank: 0", "rank: 2147483648", 1), `x.txt:2: rank "2147483648": want 0 to 2147483647`},
		// Paths and lines are bounded as in every text importer.
		{"# DXT, file_id: 1, file_name: /" + strings.Repeat("d", 4095) + "\n", "x.txt:1: file_name: path of 4096 bytes: a path holds at most 4095 bytes"},
		{"# " + strings.Repeat("c", 1<<20) + "\n", "x.txt:1: line longer than 1048576 bytes (the limit of every text importer; it is fixed)"},
	} {
		_, err := Read(strings.NewReader(c.in), "x.txt", Options{})
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
	// A job larger than the ranks listed (ranks that did no I/O) is fine.
	tr, err := Read(strings.NewReader("# nprocs: 1024\n"+rec+" X_POSIX 0 write 0 0 1 0.1 0.2\n"), "x.txt", Options{})
	if err != nil || tr.Meta().Ranks != 1024 {
		t.Errorf("nprocs 1024: %v", err)
	}
	// Counts that disagree with the lines are noted, not fatal.
	tr, err = Read(strings.NewReader(rec+" X_POSIX 0 read 0 0 1 0.1 0.2\n"), "x.txt", Options{})
	if err != nil || len(tr.Mismatched) != 1 || !strings.Contains(tr.Mismatched[0], "x.txt:1: X_POSIX of /a, rank 0: 0 writes and 1 reads listed, the header says 1 and 0") {
		t.Errorf("%v %v", err, tr)
	}
}

var errLine = regexp.MustCompile(`^x\.txt(:[0-9]+)?: [^\n]+$`)

// FuzzRead: any input reads or stops with one error line naming the file
// (and the line); never a panic.
//
// Go's minimizer takes time quadratic in an input's length for each
// input that finds new code (a sample of a few KiB: a minute each, and a
// few runs a minute in all). So an input is an edit of a real log (base
// picks it, or none: patch is the whole input): patch written over it at
// off, or inserted there, and the log cut at cut when not 0. Inputs stay
// a few bytes long; the logs' every line is within reach.
func FuzzRead(f *testing.F) {
	var bases []string
	for _, name := range samples {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		bases = append(bases, string(b[:min(len(b), 6000)]))
	}
	raw := uint8(len(bases))
	f.Add(uint8(0), uint16(0), "", false, uint16(0))
	f.Add(uint8(1), uint16(0), "", false, uint16(0))
	f.Add(uint8(0), uint16(1800), "# nprocs: 99999999999999\n", true, uint16(0))
	f.Add(uint8(1), uint16(3000), "X", false, uint16(4000))
	f.Add(raw, uint16(0), "# DXT_MPIIO module data\n# DXT, file_id: 1, file_name: /a\n# DXT, rank: 0, hostname: h\n# DXT, write_count: 1, read_count: 0\n# Module Pthread-ID\n X_MPIIO 0 write 0 -1 4 0.0001 0.0002 5 [ 1] [ 2]\n", false, uint16(0))
	f.Fuzz(func(t *testing.T, base uint8, off uint16, patch string, insert bool, cut uint16) {
		in := patch
		if b := int(base) % (len(bases) + 1); b < len(bases) {
			if len(patch) > 256 {
				return
			}
			log := bases[b]
			o := int(off) % (len(log) + 1)
			if insert {
				in = log[:o] + patch + log[o:]
			} else {
				in = log[:o] + patch + log[min(o+len(patch), len(log)):]
			}
			if cut != 0 && int(cut) < len(in) {
				in = in[:cut]
			}
		} else if len(patch) > 1024 {
			return
		}
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
