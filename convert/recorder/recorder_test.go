package recorder

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/iotrace/iotrace/trace"
)

const dir = "testdata/ior-posix-2ranks"

func readAll(t *testing.T, tr trace.Trace) map[uint32][]trace.Event {
	t.Helper()
	out := map[uint32][]trace.Event{}
	for _, r := range tr.Ranks() {
		src, err := tr.Rank(r)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := trace.ReadAll(src)
		if err != nil {
			t.Fatal(err)
		}
		out[r] = evs
	}
	return out
}

// recorderName is the Recorder function an event was made from, for
// comparing with Recorder's own counts: the op's name, a mark's label.
func recorderName(tr trace.Trace, e *trace.Event) string {
	if e.Op == trace.OpMark {
		return tr.Path(e.Path)
	}
	return e.Op.Info().Name
}

// recorderOp maps Recorder's function names to the op names they become
// (the communicators this trace makes have every rank: the calls that
// make them are marks of their own name).
var recorderOp = map[string]string{
	"lseek64": "lseek", "open64": "open", "pread64": "pread", "pwrite64": "pwrite", "__xstat": "stat",
	"__xstat64": "stat", "__lxstat": "lstat", "__lxstat64": "lstat", "__fxstat": "fstat", "__fxstat64": "fstat",
	"remove": "unlink", "MPI_Ssend": "MPI_Send", "creat64": "creat", "fopen64": "fopen",
	"mmap64": "mmap", "fseeko": "fseek",
}

// TestSameAsRecorderSummary: the trace has, per call, the number of
// calls Recorder counted in its call signature tables (the count of each
// signature, read independently of the grammar the calls are expanded
// from), and the bytes of its reads and writes (count × size argument).
func TestSameAsRecorderSummary(t *testing.T) {
	tr, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	sum := tr.Summary()
	want := map[string]int64{}
	for fn, n := range sum.Calls {
		if o, ok := recorderOp[fn]; ok {
			fn = o
		}
		want[fn] += n
	}
	got := map[string]int64{}
	var bytes, wantBytes int64
	for _, evs := range readAll(t, tr) {
		for i := range evs {
			got[recorderName(tr, &evs[i])]++
			if d := evs[i].Op.Dir(); d == trace.DirRead || d == trace.DirWrite {
				bytes += evs[i].Ret
			}
		}
	}
	for _, b := range sum.Bytes {
		wantBytes += b
	}
	for fn, n := range want {
		if got[fn] != n {
			t.Errorf("%s: %d calls, Recorder counted %d", fn, got[fn], n)
		}
	}
	for fn, n := range got {
		if want[fn] != n {
			t.Errorf("%s: %d calls, Recorder counted %d", fn, n, want[fn])
		}
	}
	// IOR -w -r -t 64k -b 1m on 2 ranks: 16 writes and 16 reads of 64 KiB each.
	if wantBytes != 4<<20 || bytes != wantBytes || want["write"] != 32 || want["read"] != 32 {
		t.Errorf("bytes %d, Recorder's %d; writes %d, reads %d", bytes, wantBytes, want["write"], want["read"])
	}
}

// TestEvents: the calls become the events they are, at the offsets the
// descriptor's position gives, in time order.
func TestEvents(t *testing.T) {
	tr, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	all := readAll(t, tr)
	for r, evs := range all {
		var last int64
		var writes []int64
		for _, e := range evs {
			if e.Start < last {
				t.Fatalf("rank %d: %s at %d before %d", r, e.Op.Info().Name, e.Start, last)
			}
			last = e.Start
			if e.Op == trace.OpWrite {
				writes = append(writes, e.Offset)
				if tr.Path(e.Path) != "/scratch/run/data/iorr.dat" || e.FD != 3 || e.Size != 65536 {
					t.Errorf("rank %d: %+v", r, e)
				}
			}
		}
		// rank r writes its 1 MiB block at r MiB, 64 KiB at a time
		if len(writes) != 16 || writes[0] != int64(r)<<20 || writes[15] != int64(r)<<20+15*65536 {
			t.Errorf("rank %d: writes at %v", r, writes)
		}
	}
	if tr.Meta().Ranks != 2 {
		t.Errorf("meta %+v", tr.Meta())
	}
}

var errLine = regexp.MustCompile(`^[^\n]+$`)

// FuzzRead: no files make Read or a rank's stream panic, hang, or
// allocate beyond what the files describe; bad ones are one error line.
//
// Go's minimizer takes time quadratic in an input's length for each input
// that finds new code: with the four files of a real trace (8 KiB) as the
// input, a minute each, a few runs a minute in all. So an input is an
// edit of the real trace: patch written over file which (mt, cst, cfg,
// ts) at off, or inserted there, and that file cut at cut when not 0.
func FuzzRead(f *testing.F) {
	load := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	mt0 := load("recorder.mt")
	// one rank: the header says so
	files := [4][]byte{append([]byte{1, 0, 0, 0}, mt0[4:]...), load("0.cst"), load("0.cfg"), load("0.ts")}
	f.Add(uint8(0), uint16(0), []byte(nil), false, uint16(0))
	f.Add(uint8(1), uint16(0), []byte(nil), false, uint16(100))
	f.Add(uint8(2), uint16(0), []byte(nil), false, uint16(20))
	f.Add(uint8(3), uint16(0), []byte(nil), false, uint16(16))
	f.Add(uint8(0), uint16(0), []byte{0xff, 0xff, 0xff, 0x7f}, false, uint16(0))
	f.Add(uint8(2), uint16(8), []byte{0, 0, 0, 0x40}, true, uint16(0))
	f.Fuzz(func(t *testing.T, which uint8, off uint16, patch []byte, insert bool, cut uint16) {
		if len(patch) > 256 {
			return
		}
		var in [4][]byte
		copy(in[:], files[:])
		w := int(which) % 4
		b := in[w]
		o := int(off) % (len(b) + 1)
		e := append([]byte(nil), b[:o]...)
		e = append(e, patch...)
		if insert {
			e = append(e, b[o:]...)
		} else {
			e = append(e, b[min(o+len(patch), len(b)):]...)
		}
		if cut != 0 && int(cut) < len(e) {
			e = e[:cut]
		}
		in[w] = e
		mt, cst, cfg, ts := in[0], in[1], in[2], in[3]
		fsys := fstest.MapFS{
			"VERSION": {Data: []byte("2.5.0")}, "recorder.mt": {Data: mt},
			"0.cst": {Data: cst}, "0.cfg": {Data: cfg}, "0.ts": {Data: ts},
		}
		tr, err := Read(fsys, "d")
		if err != nil {
			if !errLine.MatchString(err.Error()) || !strings.HasPrefix(err.Error(), "d") {
				t.Fatalf("error %q", err)
			}
			return
		}
		for _, r := range tr.Ranks() {
			src, err := tr.Rank(r)
			if err != nil {
				return
			}
			buf := make([]trace.Event, 256)
			for {
				_, err := src.ReadEvents(buf)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}
