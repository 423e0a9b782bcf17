package fold

import (
	"strings"
	"testing"

	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/trace"
)

// fuzzOps are the calls FuzzConvert's events make: the common ones of
// every family, so that most inputs get past the lowering into the
// folding.
var fuzzOps = []trace.Op{
	trace.OpOpen, trace.OpClose, trace.OpRead, trace.OpWrite, trace.OpPread, trace.OpPwrite,
	trace.OpLseek, trace.OpFsync, trace.OpDup, trace.OpUnlink, trace.OpRename, trace.OpStat,
	trace.OpMkdir, trace.OpFtruncate, trace.OpMPIBarrier, trace.OpMPIBcast, trace.OpMPISend,
	trace.OpMPIRecv, trace.OpMPIAllreduce, trace.OpMPIFileOpen, trace.OpMPIFileWriteAt,
	trace.OpMPIFileReadAt, trace.OpMPIFileClose, trace.OpRegionBegin, trace.OpRegionEnd,
	trace.OpPagein, // no call: a wait the conversion leaves out, with its time
}

// fuzzEvents makes the events of data, 8 bytes each: op, rank, path,
// descriptor, then offset and size (a byte each, times a power of two
// the next byte chooses), a gap before the call and its duration.
// Results are what a call that worked returns, or a failure; offsets and
// sizes are on the calls that have them.
func fuzzEvents(data []byte) *trace.MemTrace {
	m := trace.NewMemTrace()
	names := []string{"/out/a", "/out/b", "in/c", "/out/a.tmp", "phase"}
	ids := make([]trace.PathID, len(names))
	for i, n := range names {
		ids[i] = m.Paths.Intern(n)
	}
	var now [3]int64
	for len(data) >= 8 {
		d := data[:8]
		data = data[8:]
		r := d[1] % 3
		fd := int32(d[3] % 8)
		shift := d[5] % 24
		now[r] += int64(d[6]) * 1000
		e := trace.Event{
			Op:     fuzzOps[int(d[0])%len(fuzzOps)],
			Rank:   uint32(r),
			Path:   ids[int(d[2])%len(ids)],
			FD:     fd,
			Offset: int64(d[4]) << shift,
			Size:   int64(d[5]>>5+1) << shift,
			Start:  now[r],
			Dur:    int64(d[7]) * 100,
		}
		now[r] += e.Dur
		e.Ret = e.Size
		info := e.Op.Info()
		switch {
		case d[1]&0x80 != 0:
			e.Ret = -int64(d[1]&0x1f + 1)
		case info.FD == trace.FDOpen || info.FD == trace.FDDup:
			e.Ret = int64(fd)
		case info.Dir == trace.DirNone:
			e.Ret, e.Size = 0, 0
		}
		if info.Dir == trace.DirNone && info.Family != "seek" {
			e.Offset = 0 // only data calls and seeks have one
		}
		if info.Class == trace.ClassComm {
			e.Peer, e.Tag, e.Bytes = int32(d[2]%3), int32(d[3]%4), int64(d[4])
			e.Path, e.FD, e.Ret, e.Size = 0, 0, 0, 0
		}
		if e.Op == trace.OpRename {
			e.Path2 = ids[(int(d[2])+1)%len(ids)]
		}
		if info.Class == trace.ClassMarker {
			e.Path, e.FD, e.Ret, e.Size = ids[4], 0, 0, 0
		}
		m.Add(e)
	}
	return m
}

// FuzzConvert converts arbitrary events to a script: a conversion either
// fails with one line or gives a script in canonical form that compiles;
// the check against the trace (what iotrace convert --to script runs) may
// refuse it, with one line. Nothing panics or hangs.
//
//	go test -run '^$' -fuzz '^FuzzConvert$' -fuzztime 10m ./script/fold
func FuzzConvert(f *testing.F) {
	ev := func(op trace.Op, rank, path, fd, off, size, gap, dur byte) []byte {
		i := 0
		for k, o := range fuzzOps {
			if o == op {
				i = k
			}
		}
		return []byte{byte(i), rank, path, fd, off, size, gap, dur}
	}
	var loop []byte
	for range 6 {
		loop = append(loop, ev(trace.OpPwrite, 0, 0, 3, 1, 12, 1, 2)...)
	}
	f.Add(append(append(ev(trace.OpOpen, 0, 0, 3, 0, 0, 1, 1), loop...), ev(trace.OpClose, 0, 0, 3, 0, 0, 1, 1)...))
	f.Add(append(ev(trace.OpMPIBarrier, 0, 0, 0, 0, 0, 1, 1), append(ev(trace.OpMPIBarrier, 1, 0, 0, 0, 0, 1, 1), ev(trace.OpMPIBarrier, 2, 0, 0, 0, 0, 1, 1)...)...))
	f.Add(append(ev(trace.OpRegionBegin, 1, 4, 0, 0, 0, 1, 0), append(ev(trace.OpMPIFileOpen, 1, 1, 1, 0, 0, 1, 1),
		append(ev(trace.OpMPIFileWriteAt, 1, 1, 1, 4, 13, 1, 1), append(ev(trace.OpMPIFileClose, 1, 1, 1, 0, 0, 1, 1), ev(trace.OpRegionEnd, 1, 4, 0, 0, 0, 1, 0)...)...)...)...))
	f.Add(append(ev(trace.OpOpen, 2, 3, 4, 0, 0, 1, 1), append(ev(trace.OpWrite, 2, 3, 4, 0, 12, 1, 1), append(ev(trace.OpRename, 2, 3, 0, 0, 0, 1, 1), ev(trace.OpDup, 2, 3, 4, 0, 0, 1, 1)...)...)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 8*64 {
			return
		}
		m := fuzzEvents(data)
		res, err := Convert(m, Options{Workers: 1})
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of several lines: %q", err)
			}
			return
		}
		out := script.Format(res.File)
		again, err := script.FormatSource("out.iop", out)
		if err != nil {
			t.Fatalf("the script does not parse: %v\n%s", err, out)
		}
		if string(again) != string(out) {
			t.Fatalf("the script is not in canonical form:\n%s", out)
		}
		if err := Verify(m, "out.iop", out, res.Ranks); err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("check error of several lines: %q", err)
		}
	})
}
