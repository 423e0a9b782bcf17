package preload

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/capture"
	"github.com/iotrace/iotrace/trace"
)

// putRecord appends r encoded as the shim encodes it (shim.c encode),
// relative to the previous record's start, descriptor and offset (all 0
// with abs), and returns the new previous values.
func putRecord(b []byte, r *Record, abs bool, pstart int64, pfd int32, poff int64) ([]byte, int64, int32, int64) {
	if abs {
		pstart, pfd, poff = 0, 0, 0
	}
	zz := func(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }
	var f []byte
	mask := 0
	put := func(bit int, v uint64) {
		mask |= bit
		f = binary.AppendUvarint(f, v)
	}
	if r.Start != pstart {
		put(mStart, zz(r.Start-pstart))
	}
	if r.Dur != 0 {
		put(mDur, uint64(r.Dur))
	}
	if r.FD != pfd {
		put(mFD, zz(int64(r.FD)))
	}
	if r.Off == -1 {
		mask |= mNoOff
	} else if r.Off != 0 {
		put(mOff, zz(r.Off-poff))
	}
	if r.Size != 0 {
		put(mSize, zz(r.Size))
	}
	pred := int64(0)
	if r.Size > 0 {
		pred = r.Size
	} else if r.Off > 0 {
		pred = r.Off
	}
	if r.Ret != pred {
		put(mRet, zz(r.Ret-pred))
	}
	flags := byte(r.Flags)
	if r.Over != 0 {
		flags |= rfOver
		f = binary.AppendUvarint(f, uint64(r.Over))
	}
	for _, x := range []struct {
		bit int
		v   uint64
	}{{mBytes, zz(r.Bytes)}, {mOFlags, uint64(r.OFlags)}, {mMode, uint64(r.Mode)}, {mPeer, zz(int64(r.Peer))},
		{mTag, zz(int64(r.Tag))}, {mComm, uint64(r.Comm)}, {mCount, zz(int64(r.Count))},
		{mPath, uint64(len(r.Path))}, {mPath2, uint64(len(r.Path2))}} {
		if x.v != 0 {
			put(x.bit, x.v)
		}
	}
	f = append(f, r.Path+r.Path2...)
	if abs {
		flags |= recAbs
	}
	b = binary.LittleEndian.AppendUint16(b, uint16(recFixed+len(f)))
	b = append(b, byte(r.Call), flags, byte(mask), byte(mask>>8))
	b = append(b, f...)
	if abs {
		return b, 0, 0, 0
	}
	if r.Off != -1 && r.Off != 0 {
		poff = r.Off
	}
	return b, r.Start, r.FD, poff
}

// spoolBytes builds a spool as the shim writes it: the header, then the
// records of each thread (Tid) in blocks of its own, in order; a record
// with Call 0xff is one being written when the process ended (its bytes
// without its length); side ones go to side blocks.
func spoolBytes(h Header, recs []*Record, side ...*Record) []byte {
	le := binary.LittleEndian
	b := make([]byte, headerSize)
	copy(b, spoolMagic)
	le.PutUint32(b[8:], spoolVersion)
	le.PutUint32(b[12:], blockSize)
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
	if h.Exec {
		le.PutUint32(b[offExec:], 1)
	}
	le.PutUint32(b[offExe:], uint32(len(h.Exe)))
	copy(b[offExe+4:], h.Exe)
	type thread struct {
		blk          []byte
		pstart, poff int64
		pfd          int32
	}
	var blocks [][]byte
	threads := map[uint32]*thread{}
	var order []uint32
	newBlock := func(magic uint16, tid uint32, base int64) []byte {
		k := make([]byte, blockHeader, blockSize)
		le.PutUint16(k, magic)
		le.PutUint16(k[2:], 1)
		le.PutUint32(k[4:], tid)
		le.PutUint64(k[8:], uint64(base))
		return k
	}
	var last *thread
	for _, r := range recs {
		th := threads[r.Tid]
		if r.Call == 0xff {
			// Bytes of a record without its length.
			last.blk = append(last.blk, 0, 0, byte(cWrite), 0, mDur, 0, 5)
			continue
		}
		if th == nil || len(th.blk)+recFixed+60+len(r.Path)+len(r.Path2) > blockSize {
			if th == nil {
				th = &thread{}
				threads[r.Tid] = th
				order = append(order, r.Tid)
			} else {
				blocks = append(blocks, th.blk)
			}
			th.blk = newBlock(blockMagic, r.Tid, r.Start)
			th.pstart, th.pfd, th.poff = r.Start, 0, 0
		}
		th.blk, th.pstart, th.pfd, th.poff = putRecord(th.blk, r, false, th.pstart, th.pfd, th.poff)
		last = th
	}
	for _, tid := range order {
		blocks = append(blocks, threads[tid].blk)
	}
	for _, r := range side {
		k := newBlock(sideMagic, r.Tid, 0)
		k, _, _, _ = putRecord(k, r, true, 0, 0, 0)
		blocks = append(blocks, k)
	}
	le.PutUint64(b[offBlocks:], uint64(len(blocks)))
	le.PutUint64(b[offCapacity:], 1<<20)
	le.PutUint32(b[offCost:], uint32(h.Cost.InCall))
	le.PutUint32(b[offCost+4:], uint32(h.Cost.Between))
	le.PutUint32(b[offCost+8:], uint32(h.Cost.Spread))
	le.PutUint32(b[offCost+12:], uint32(h.Cost.Samples))
	le.PutUint32(b[offCost+16:], uint32(h.Tail))
	for _, k := range blocks {
		b = append(b, k...)
		b = append(b, make([]byte, blockSize-len(k))...)
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
	h := Header{PID: 42, PPID: 1, Rank: 3, Size: 4, MonoStart: 1000, RealStart: 5e18, Cmdline: []string{"./app", "-x"}, Cwd: "/work", ProcStart: 123456, Exec: true, Exe: "/work/app",
		Cost: capture.Cost{InCall: 20, Between: 30, Spread: 4, Samples: 256}, Tail: 10}
	long := "/" + strings.Repeat("d", 300) + "/file"
	recs := []*Record{
		{Call: cOpen, FD: -1, Start: 1100, Dur: 5, Ret: 3, OFlags: 0x241, Mode: 0o644, Path: long},
		{Call: cPwrite, FD: 3, Start: 1200, Dur: 2, Off: 64, Size: 64, Ret: 64, Flags: rfInMPIIO, Over: 40},
		{Call: cLseek, FD: 3, Start: 1210, Dur: 1, Off: 1 << 40, Ret: 1 << 40, Over: 1 << 33},
		{Call: cRead, FD: 3, Start: 1220, Dur: 3, Off: -1, Size: 4096, Ret: -5},
		{Call: cRename, Start: 1300, Path: "/a", Path2: "/b", Over: 700},
		{Call: cMPISend, Tid: 2, Start: 1400, Peer: 1, Tag: 7, Comm: 0, Bytes: 800, Count: 100},
		{Call: 0xff}, // being written when the process died
	}
	side := &Record{Call: cWrite, Tid: 0, FD: 3, Start: 1215, Dur: 1, Off: -1, Size: 10, Ret: 10}
	s, got, st, err := readAll(t, append(spoolBytes(h, recs, side), make([]byte, 3*blockSize)...))
	if err != nil {
		t.Fatal(err)
	}
	if s.Header.PID != 42 || s.Header.Rank != 3 || s.Header.Size != 4 || s.Header.Cwd != "/work" ||
		len(s.Header.Cmdline) != 2 || s.Header.Cmdline[1] != "-x" || s.Header.RealStart != 5e18 ||
		s.Header.ProcStart != 123456 || !s.Header.Exec || s.Header.Exe != "/work/app" || s.Header.Blocks != 3 ||
		s.Header.Cost != h.Cost || s.Header.Tail != 10 {
		t.Errorf("header %+v", s.Header)
	}
	if len(got) != 7 || st.Records != 7 || st.Incomplete != 1 {
		t.Fatalf("%d records, stats %+v; want 7 records, 1 incomplete (the free bytes after a block's last record are not)", len(got), st)
	}
	for i, want := range append(append([]*Record(nil), recs[:4]...), recs[4], recs[5], side) {
		if got[i] != *want {
			t.Errorf("record %d: %+v, want %+v", i, got[i], *want)
		}
	}
	if got[0].Path != long || got[0].Ret != 3 || got[0].OFlags != 0x241 {
		t.Errorf("open %+v", got[0])
	}

	// In start order: the threads' streams and the side block merged.
	m := s.merged()
	var starts []int64
	for r := m.next(); r != nil; r = m.next() {
		starts = append(starts, r.Start)
	}
	if m.err != nil || !slicesSorted(starts) || len(starts) != 7 {
		t.Errorf("merged starts %v, error %v", starts, m.err)
	}
}

func slicesSorted(v []int64) bool {
	for i := 1; i < len(v); i++ {
		if v[i] < v[i-1] {
			return false
		}
	}
	return true
}

// TestSpoolDamage checks that damage is one error naming the file and
// the offset, after the records before it.
func TestSpoolDamage(t *testing.T) {
	h := Header{PID: 1, Rank: -1, Size: -1}
	good := spoolBytes(h, []*Record{{Call: cClose, FD: 3}, {Call: cClose, FD: 4, Path: "/p"}})
	rec1 := headerSize + blockHeader // the first record
	rec2 := rec1 + recFixed + 1      // the second: a descriptor of one byte
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
		{"block magic", func(b []byte) []byte { b[headerSize] = 0x11; return b }, "offset 4096: bad block magic", 0},
		{"block span", func(b []byte) []byte { b[headerSize+2] = 3; return b }, "offset 4096: block spans 3 blocks", 0},
		{"length", func(b []byte) []byte { b[rec2] = 0xff; b[rec2+1] = 0x0f; return b }, "offset 4119: record of 4095 bytes in a block with", 1},
		{"fields", func(b []byte) []byte { b[rec1+4] |= mDur; return b }, "offset 4112: record of 7 bytes does not hold the fields its mask 0x6 names", 0},
		{"path", func(b []byte) []byte { b[rec2+7] = 50; return b }, "offset 4119: record of 10 bytes holds 2 bytes of paths, its lengths say 50", 1},
		{"path length", func(b []byte) []byte { b[rec2+7] = 0xff; return b }, "offset 4119: path of 6143 bytes (at most 4095)", 1},
		{"over", func(b []byte) []byte { b[rec1+3] = rfOver; return b }, "offset 4112: record of 7 bytes does not hold the fields its mask 0x4 names", 0},
		{"exec flag", func(b []byte) []byte { b[offExec] = 7; return b }, "offset 3144: exec flag 7 (0 or 1)", 0},
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
//
// A spool is a 4 KiB header and 4 KiB blocks, mostly zeros. Fuzzed as
// such, every input that finds new code is ~8 KiB, and Go's minimizer,
// which tries removing every pair of bytes, spends its minute on each
// (a few hundred runs a minute). So the input is the spool's parts
// without their zeros: head at offset 0 (magic, version, sizes, ids,
// command line), cwd as the working directory, meta at the process
// start time (blocks, capacity, cost, program name length), exe as the
// program name, then body after the header: each block magic in it
// (after its first byte) starts a new block, the one before zero-padded
// to a whole block, the last padded too when pad is set; cut, when not 0,
// cuts the file there. The parts are kept short (1 KiB of body): a
// spool's every case fits, in a few blocks.
func FuzzSpool(f *testing.F) {
	add := func(b []byte, h Header, pad bool, cut uint16) {
		cmd := strings.Join(h.Cmdline, "\x00")
		f.Add(b[:60+len(cmd)], h.Cwd, bytes.TrimRight(b[offProcStart:offExe+4], "\x00"), h.Exe,
			bytes.TrimRight(b[headerSize:], "\x00"), pad, cut)
	}
	h := Header{PID: 7, PPID: 1, Rank: 0, Size: 2, Cmdline: []string{"a"}, Cwd: "/", Exe: "/bin/a",
		Cost: capture.Cost{InCall: 20, Between: 30, Spread: 5, Samples: 256}, Tail: 10}
	recs := []*Record{{Call: cOpen, Path: "/x", Ret: 3}, {Call: 0xff}, {Call: cRead, FD: 3, Size: 10, Ret: 10, Over: 300}}
	add(spoolBytes(h, recs), h, true, 0)
	add(spoolBytes(h, recs), h, false, 4200)
	add(spoolBytes(h, nil), h, true, 0)
	h2 := Header{Rank: -1, Size: -1}
	add(spoolBytes(h2, []*Record{{Call: cRename, Path: strings.Repeat("p", 200), Path2: "q"}},
		&Record{Call: cWrite, Tid: 1, Start: 9, Off: -1, Size: 1, Ret: 1}), h2, true, 0)
	f.Add([]byte("IOTSPOOL"), "", []byte(nil), "", []byte(nil), false, uint16(0))
	f.Fuzz(func(t *testing.T, head []byte, cwd string, meta []byte, exe string, body []byte, pad bool, cut uint16) {
		if len(head)+len(cwd)+len(meta)+len(exe) > 8<<10 || len(body) > 1<<10 {
			return
		}
		le := binary.LittleEndian
		data := make([]byte, headerSize, headerSize+len(body)+blockSize)
		copy(data, head)
		if cwd != "" {
			le.PutUint32(data[1084:], uint32(len(cwd)))
			copy(data[1088:offProcStart], cwd)
		}
		copy(data[offProcStart:], meta)
		if exe != "" {
			if len(meta) < offExe+4-offProcStart {
				le.PutUint32(data[offExe:], uint32(len(exe)))
			}
			copy(data[offExe+4:], exe)
		}
		padTo := func() {
			if r := (len(data) - headerSize) % blockSize; r != 0 {
				data = append(data, make([]byte, blockSize-r)...)
			}
		}
		for len(body) > 0 {
			i := 1 + min(indexOr(body[1:], "BK"), indexOr(body[1:], "BS"))
			data = append(data, body[:i]...)
			if body = body[i:]; len(body) > 0 {
				padTo()
			}
		}
		if pad {
			padTo()
		}
		if cut != 0 && int(cut) < len(data) {
			data = data[:cut]
		}
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
		m := s.merged()
		for r := m.next(); r != nil; r = m.next() {
			if len(r.Path) > maxPath || len(r.Path2) > maxPath || r.Dur < 0 {
				t.Fatalf("record %+v passed the checks", r)
			}
		}
	})
}

// indexOr is the index of sep in b, or len(b).
func indexOr(b []byte, sep string) int {
	if i := bytes.Index(b, []byte(sep)); i >= 0 {
		return i
	}
	return len(b)
}

// TestSpoolClockReadings checks the clock exchange's records (call 190:
// the reference's reading in bytes, no offset) as the encoder takes them:
// readings of the rank's clock in Stats.Clock, no event, and the
// offsets of the records around them as written.
func TestSpoolClockReadings(t *testing.T) {
	const ref = 1_700_000_000_123_456_789
	h := Header{PID: 7, PPID: 1, Rank: 1, Size: 2, MonoStart: 1000, RealStart: 1_700_000_000_000_000_000, Cwd: "/w"}
	recs := []*Record{
		{Call: cMPIRank, Start: 1100, Peer: 1, Count: 2},
		{Call: cOpen, FD: -1, Start: 1200, Dur: 5, Ret: 3, OFlags: 0x42, Path: "/w/f"},
		{Call: cPwrite, FD: 3, Start: 1300, Dur: 2, Off: 4096, Size: 10, Ret: 10},
		{Call: cMPIClock, Start: 1400, Dur: 300, Off: -1, Bytes: ref, Size: 0},
		{Call: cPwrite, FD: 3, Start: 1800, Dur: 2, Off: 8192, Size: 10, Ret: 10},
		{Call: cMPIClock, Start: 1900, Dur: 90, Off: -1, Bytes: ref + 800, Size: 1},
		{Call: cClose, FD: 3, Start: 2000, Dur: 1},
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "spool-7-1000.sp"), spoolBytes(h, recs), 0o600); err != nil {
		t.Fatal(err)
	}
	evs, _, stats := encode(t, dir, nil)
	base := h.RealStart - h.MonoStart
	want := []capture.ClockReading{{Phase: 0, T1: 1400, T3: 1700, Ref: ref, Base: base}, {Phase: 1, T1: 1900, T3: 1990, Ref: ref + 800, Base: base}}
	if len(stats) != 1 || !slices.Equal(stats[0].Clock, want) {
		t.Fatalf("clock readings %+v, want %+v", stats, want)
	}
	var offs []int64
	for _, e := range evs[1] {
		switch e.Op {
		case trace.OpPwrite:
			offs = append(offs, e.Offset)
		case trace.OpUnknown:
			t.Errorf("an event of a bookkeeping record: %+v", e)
		}
	}
	if !slices.Equal(offs, []int64{4096, 8192}) {
		t.Errorf("pwrite offsets %v, want [4096 8192]", offs)
	}
	if c, ok := capture.Clock(stats[0].Clock, h.RealStart, capture.ClockMethodPreload); !ok || len(c.Samples) != 2 {
		t.Errorf("clock %+v, want 2 samples", c)
	}
}
