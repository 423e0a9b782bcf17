package report

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// FuzzCompute feeds Compute and every renderer arbitrary events (known
// and unknown ops, odd descriptors, negative sizes and durations,
// unbalanced regions) and checks that they do not fail and that the
// tables agree with each other.
func FuzzCompute(f *testing.F) {
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{1, 0, 0, 3, 0, 3, 0, 10, 0, 9, 1, 1}, 4))
	f.Add([]byte{0x90, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0x91, 1, 1, 1, 0, 0, 0, 0, 5, 0, 0, 0, 9, 0, 2, 4, 1, 0xff, 0xff, 0xff, 0xff, 7, 0})
	f.Add([]byte{0xe7, 3, 0, 0, 0xff, 0xff, 0x80, 0, 0x80, 0, 0x80, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		m := trace.NewMemTrace()
		ids := []trace.PathID{0, m.Paths.Intern("/a"), m.Paths.Intern("/b"), m.Paths.Intern("L")}
		known := trace.Ops()
		var markers int64
		for len(data) >= 12 {
			d := data[:12]
			data = data[12:]
			e := trace.Event{
				Op:    known[int(d[0])%len(known)],
				Rank:  uint32(d[2] % 4),
				Path:  ids[d[3]%4],
				FD:    int32(int8(d[4])),
				Ret:   int64(int16(binary.LittleEndian.Uint16(d[5:]))),
				Size:  int64(int8(d[7])) << (d[8] % 64),
				Bytes: int64(int8(d[9])),
				Start: int64(d[10]) * 100,
				Dur:   int64(int8(d[11])) * 10,
			}
			if d[1] == 0xff { // now and then an op this build does not know
				e.Op = trace.Op(binary.LittleEndian.Uint16(d)) | 0x8000
			}
			if c := e.Op.Class(); c == trace.ClassMarker || c == trace.ClassProcess {
				markers++ // no call: reports leave markers and process events out of their rows
			}
			m.Add(e)
		}
		for _, detail := range []bool{false, true} {
			s, err := Compute(m, Options{Detail: detail, Access: detail})
			if err != nil {
				t.Fatal(err)
			}
			if s.Total.Count != s.Events-markers {
				t.Fatalf("TOTAL counts %d calls of %d events, %d markers and process events", s.Total.Count, s.Events, markers)
			}
			var rankCalls, fileBytes, sizeCount int64
			for _, r := range s.ByRank {
				rankCalls += sumIf(r.Ops, func(*OpRow) bool { return true }, count)
			}
			for _, f := range s.Files {
				fileBytes += f.ReadBytes() + f.WriteBytes()
			}
			for _, z := range s.Sizes {
				sizeCount += z.Count
			}
			if rankCalls != s.Total.Count || fileBytes != dataBytes(s.Ops, trace.DirNone) || s.Total.Total < 0 {
				t.Fatalf("ranks hold %d calls, files %d bytes; TOTAL %+v", rankCalls, fileBytes, s.Total)
			}
			for _, reg := range s.Regions {
				if reg.Time < 0 || reg.Wall > reg.Time || sumIf(reg.Ops, func(*OpRow) bool { return true }, count) > s.Total.Count {
					t.Fatalf("region %+v", reg)
				}
			}
			for _, v := range Views {
				for _, f := range Formats {
					var buf bytes.Buffer
					if err := Render(&buf, s, v, f); err != nil {
						t.Fatalf("%s/%s: %v", v, f, err)
					}
					if f == "json" && !json.Valid(buf.Bytes()) {
						t.Fatalf("%s: invalid JSON", v)
					}
				}
			}
			for _, f := range Formats {
				if err := RenderCompare(&bytes.Buffer{}, Compare(s, s), f); err != nil {
					t.Fatalf("compare %s: %v", f, err)
				}
			}
			// The activity series holds the time of every call it can
			// place (known ops), within MaxBins bins.
			var busy float64
			for _, b := range s.Activity.Bins {
				for _, v := range b.Busy {
					busy += v
				}
			}
			want := sumIf(s.Ops, func(r *OpRow) bool { return r.Class != trace.ClassUnknown }, func(r *OpRow) int64 { return r.Total })
			if len(s.Activity.Bins) > MaxBins || math.Abs(busy-float64(want)) > 1e-9*float64(want)+1e-6 {
				t.Fatalf("activity: %d bins, %v ns busy; calls took %d ns", len(s.Activity.Bins), busy, want)
			}
			if err := RenderHTML(&bytes.Buffer{}, s, HTMLOptions{}); err != nil {
				t.Fatalf("html: %v", err)
			}
			if err := RenderCompareHTML(&bytes.Buffer{}, Compare(s, s), HTMLOptions{}); err != nil {
				t.Fatalf("compare html: %v", err)
			}
		}
	})
}
