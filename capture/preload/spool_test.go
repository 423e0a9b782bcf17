package preload

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// spoolBytes builds a spool as the shim writes it: header, then records
// (a nil record is an unwritten slot).
func spoolBytes(h Header, recs []*Record) []byte {
	le := binary.LittleEndian
	b := make([]byte, headerSize)
	copy(b, spoolMagic)
	le.PutUint32(b[8:], spoolVersion)
	le.PutUint32(b[12:], recSize)
	le.PutUint32(b[16:], headerSize)
	le.PutUint32(b[20:], h.PID)
	le.PutUint32(b[24:], h.PPID)
	le.PutUint32(b[28:], uint32(h.Rank))
	le.PutUint32(b[32:], uint32(h.Size))
	le.PutUint32(b[36:], h.Dropped)
	le.PutUint64(b[40:], uint64(h.MonoStart))
	le.PutUint64(b[48:], uint64(h.RealStart))
	cmd := strings.Join(h.Cmdline, "\x00")
	le.PutUint32(b[56:], uint32(len(cmd)))
	copy(b[60:], cmd)
	le.PutUint32(b[1084:], uint32(len(h.Cwd)))
	copy(b[1088:], h.Cwd)
	le.PutUint64(b[offProcStart:], h.ProcStart)
	le.PutUint32(b[offExe:], uint32(len(h.Exe)))
	copy(b[offExe+4:], h.Exe)
	for _, r := range recs {
		slot := make([]byte, recSize)
		if r == nil {
			b = append(b, slot...)
			continue
		}
		paths := r.Path + r.Path2
		n := 1 + (len(paths)+recSize-1)/recSize
		le.PutUint32(slot[0:], recCommit|uint32(n))
		le.PutUint16(slot[4:], r.Call)
		le.PutUint16(slot[6:], r.Flags)
		le.PutUint32(slot[8:], r.Tid)
		le.PutUint32(slot[12:], uint32(r.FD))
		for i, v := range []int64{r.Start, r.Dur, r.Off, r.Size, r.Ret, r.Bytes} {
			le.PutUint64(slot[16+8*i:], uint64(v))
		}
		for i, v := range []uint32{r.OFlags, r.Mode, uint32(r.Peer), uint32(r.Tag), r.Comm, uint32(r.Count)} {
			le.PutUint32(slot[64+4*i:], v)
		}
		le.PutUint16(slot[88:], uint16(len(r.Path)))
		le.PutUint16(slot[90:], uint16(len(r.Path2)))
		le.PutUint32(slot[92:], r.Seq)
		b = append(b, slot...)
		pb := make([]byte, (n-1)*recSize)
		copy(pb, paths)
		b = append(b, pb...)
	}
	return b
}

func readAll(t *testing.T, data []byte) (*Spool, []Record, ReadStats, error) {
	t.Helper()
	s, err := NewSpool("test.sp", bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, nil, ReadStats{}, err
	}
	var recs []Record
	st, err := s.Records(func(r *Record) error {
		recs = append(recs, *r)
		return nil
	})
	return s, recs, st, err
}

func TestSpoolRoundTrip(t *testing.T) {
	h := Header{PID: 42, PPID: 1, Rank: 3, Size: 4, MonoStart: 1000, RealStart: 5e18, Cmdline: []string{"./app", "-x"}, Cwd: "/work", ProcStart: 123456, Exe: "/work/app"}
	long := "/" + strings.Repeat("d", 300) + "/file"
	recs := []*Record{
		{Call: cOpen, FD: -1, Start: 1100, Dur: 5, Ret: 3, OFlags: 0x241, Mode: 0o644, Path: long},
		nil, // a call in progress when the process died
		{Call: cPwrite, FD: 3, Start: 1200, Dur: 2, Off: 64, Size: 64, Ret: 64, Flags: rfInMPIIO},
		{Call: cRename, Start: 1300, Path: "/a", Path2: "/b"},
		{Call: cMPISend, Tid: 2, Start: 1400, Peer: 1, Tag: 7, Comm: 0, Bytes: 800, Count: 100},
	}
	s, got, st, err := readAll(t, append(spoolBytes(h, recs), make([]byte, 3*recSize)...))
	if err != nil {
		t.Fatal(err)
	}
	if s.Header.PID != 42 || s.Header.Rank != 3 || s.Header.Size != 4 || s.Header.Cwd != "/work" ||
		len(s.Header.Cmdline) != 2 || s.Header.Cmdline[1] != "-x" || s.Header.RealStart != 5e18 ||
		s.Header.ProcStart != 123456 || s.Header.Exe != "/work/app" {
		t.Errorf("header %+v", s.Header)
	}
	if len(got) != 4 || st.Records != 4 || st.Incomplete != 1 {
		t.Fatalf("%d records, stats %+v; want 4 records, 1 incomplete (trailing free slots are not)", len(got), st)
	}
	if got[0].Path != long || got[0].Ret != 3 || got[0].OFlags != 0x241 {
		t.Errorf("open %+v", got[0])
	}
	if got[1].Flags != rfInMPIIO || got[1].Off != 64 {
		t.Errorf("pwrite %+v", got[1])
	}
	if got[2].Path != "/a" || got[2].Path2 != "/b" {
		t.Errorf("rename %+v", got[2])
	}
	if got[3].Peer != 1 || got[3].Tag != 7 || got[3].Bytes != 800 || got[3].Tid != 2 {
		t.Errorf("send %+v", got[3])
	}
}

// TestSpoolDamage checks that damage is one error naming the file and
// the offset, after the records before it.
func TestSpoolDamage(t *testing.T) {
	h := Header{PID: 1, Rank: -1, Size: -1}
	good := spoolBytes(h, []*Record{{Call: cClose, FD: 3}, {Call: cClose, FD: 4}})
	for _, c := range []struct {
		name  string
		edit  func([]byte) []byte
		want  string
		nrecs int
	}{
		{"magic", func(b []byte) []byte { b[0] = 'X'; return b }, "offset 0: not an iotrace spool", 0},
		{"no header", func(b []byte) []byte { copy(b, make([]byte, 8)); return b }, "offset 0: no header", 0},
		{"version", func(b []byte) []byte { b[8] = 9; return b }, "offset 8: spool version 9", 0},
		{"short", func(b []byte) []byte { return b[:100] }, "offset 100: shorter than its header", 0},
		{"commit", func(b []byte) []byte { b[headerSize+recSize+3] = 0x11; return b }, "offset 4192: bad record commit word", 1},
		{"slots", func(b []byte) []byte { b[headerSize+recSize] = 3; return b }, "offset 4192: record spans 3 slots", 1},
		{"path", func(b []byte) []byte {
			binary.LittleEndian.PutUint16(b[headerSize+recSize+88:], 50)
			return b
		}, "offset 4192: record spans 1 slots, its paths need 2", 1},
		{"past end", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[headerSize+recSize:], recCommit|2)
			binary.LittleEndian.PutUint16(b[headerSize+recSize+88:], 50)
			return b
		}, "offset 4288: record runs past the end", 1},
		{"flags", func(b []byte) []byte { b[headerSize+6] = 0xff; return b }, "offset 4096: unknown record flags", 0},
	} {
		b := c.edit(append([]byte(nil), good...))
		_, recs, _, err := readAll(t, b)
		var se *SpoolError
		if err == nil || !errors.As(err, &se) || !strings.Contains(err.Error(), "test.sp: "+c.want) {
			t.Errorf("%s: error %v, want a SpoolError %q", c.name, err, c.want)
		}
		if len(recs) != c.nrecs {
			t.Errorf("%s: %d records before the damage, want %d", c.name, len(recs), c.nrecs)
		}
	}
}

// FuzzSpool checks that no input makes the reader panic: a spool is
// outside input (a crashed process may leave anything).
func FuzzSpool(f *testing.F) {
	h := Header{PID: 7, PPID: 1, Rank: 0, Size: 2, Cmdline: []string{"a"}, Cwd: "/"}
	f.Add(spoolBytes(h, []*Record{{Call: cOpen, Path: "/x", Ret: 3}, nil, {Call: cRead, FD: 3, Size: 10, Ret: 10}}))
	f.Add(spoolBytes(h, nil))
	f.Add(spoolBytes(Header{Rank: -1, Size: -1}, []*Record{{Call: cRename, Path: strings.Repeat("p", 200), Path2: "q"}}))
	f.Add([]byte("IOTSPOOL"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := NewSpool("fuzz.sp", bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		n := 0
		s.Records(func(r *Record) error {
			n++
			if len(r.Path) > maxPath || len(r.Path2) > maxPath || r.Dur < 0 {
				t.Fatalf("record %+v passed the checks", r)
			}
			return nil
		})
	})
}
