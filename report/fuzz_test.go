package report

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"testing"

	"github.com/iotrace/iotrace/internal/sat"
	"github.com/iotrace/iotrace/trace"
)

// FuzzCompute feeds Compute and every renderer arbitrary events (known
// and unknown ops, odd descriptors, negative sizes and durations,
// unbalanced regions, and times, sizes, offsets and results anywhere in
// the int64 range, the most negative too) and checks that they do not
// fail and that the tables agree with each other.
//
// An event is 7 bytes (op, unknown-op marker, rank, path, descriptor, a
// mask of wide fields, a shift) and then result, size, bytes, start,
// duration and offset: each one byte (scaled by the shift) or, where the
// mask says, eight.
func FuzzCompute(f *testing.F) {
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{1, 0, 0, 3, 0, 0, 3, 10, 9, 1, 1, 1, 0}, 4))
	f.Add(append(bytes.Repeat([]byte{1, 0, 0, 3, 0, 0, 3, 10, 9, 1, 1, 1, 0}, 4), 0x90)) // the HTML pages
	f.Add([]byte{0x90, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x91, 1, 1, 1, 0, 0, 0, 0, 5, 0, 0, 0, 9, 0, 2, 4, 1, 0xff, 0xff, 0xff, 0xff, 7, 0})
	f.Add([]byte{0xe7, 3, 0, 0, 0xff, 0, 0x80, 0, 0x80, 0, 0x80, 0, 0})
	// The extremes: a write of 2^62 bytes, and events at the most
	// negative and most positive times, lasting the longest.
	wide := func(op, mask byte, vals ...int64) []byte {
		b := []byte{op, 0, 0, 1, 3, mask, 0}
		for i, v := range vals {
			if mask&(1<<i) != 0 {
				b = binary.LittleEndian.AppendUint64(b, uint64(v))
			} else {
				b = append(b, byte(v))
			}
		}
		return b
	}
	w := byte(trace.OpWrite)
	f.Add(append(wide(w, 0x3, 1<<62, 1<<62, 0, 10, 5, 0), wide(w, 0x3f, 1<<62, 1<<62, 0, math.MinInt64, math.MaxInt64, math.MaxInt64)...))
	f.Add(append(wide(w, 0x18, 4, 4, 0, math.MaxInt64, math.MaxInt64, 0), wide(w, 0x18, 4, 4, 0, math.MinInt64, math.MinInt64, 0)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		var sel byte // which renderers run
		if len(data) > 0 {
			sel = data[len(data)-1]
		}
		// The fuzzer minimises each input that finds new code in time
		// quadratic in its length, running it each time, and counts none
		// of it: a few events are enough to reach every path, and fewer
		// where the input draws the HTML pages' charts (a few ms a run).
		if len(data) > 192 || sel%32 == 16 && len(data) > 80 {
			return
		}
		m := trace.NewMemTrace()
		ids := []trace.PathID{0, m.Paths.Intern("/a"), m.Paths.Intern("/b"), m.Paths.Intern("L")}
		known := trace.Ops()
		var markers int64
		outside := false // an event beyond the activity series' ±2^61 ns
		for len(data) >= 7 {
			d := data[:7]
			data = data[7:]
			mask, shift := d[5], d[6]%64
			var vals [6]int64
			for i := range vals {
				switch {
				case mask&(1<<i) != 0 && len(data) >= 8:
					vals[i] = int64(binary.LittleEndian.Uint64(data))
					data = data[8:]
				case len(data) >= 1:
					vals[i] = int64(int8(data[0])) << shift
					data = data[1:]
				}
			}
			e := trace.Event{
				Op:     known[int(d[0])%len(known)],
				Rank:   uint32(d[2] % 4),
				Path:   ids[d[3]%4],
				FD:     int32(int8(d[4])),
				Ret:    vals[0],
				Size:   vals[1],
				Bytes:  vals[2],
				Start:  vals[3],
				Dur:    vals[4],
				Offset: vals[5],
			}
			if d[1] == 0xff { // now and then an op this build does not know
				e.Op = trace.Op(binary.LittleEndian.Uint16(d)) | 0x8000
			}
			if c := e.Op.Class(); c == trace.ClassMarker || c == trace.ClassProcess {
				markers++ // no call: reports leave markers and process events out of their rows
			}
			if end := e.Start + max(e.Dur, 0); e.Start < -seriesLimit || e.Start > seriesLimit || end < e.Start || end > seriesLimit {
				outside = true
			}
			m.Add(e)
		}
		{
			s, err := Compute(m, Options{Detail: sel&64 != 0, Access: sel&64 != 0})
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
			// The file table holds the bytes of reads and writes (a copy's
			// moves between two files and is in neither).
			for _, f := range s.Files {
				fileBytes = sat.Add(fileBytes, sat.Add(f.ReadBytes(), f.WriteBytes()))
			}
			for _, z := range s.Sizes {
				sizeCount += z.Count
			}
			if rankCalls != s.Total.Count || fileBytes != sat.Add(dataBytes(s.Ops, trace.DirRead), dataBytes(s.Ops, trace.DirWrite)) || s.Total.Total < 0 || s.Total.Bytes < 0 {
				t.Fatalf("ranks hold %d calls, files %d bytes; TOTAL %d calls, %d bytes, %d ns", rankCalls, fileBytes, s.Total.Count, s.Total.Bytes, s.Total.Total)
			}
			for _, reg := range s.Regions {
				if reg.Time < 0 || reg.Wall > reg.Time || sumIf(reg.Ops, func(*OpRow) bool { return true }, count) > s.Total.Count {
					t.Fatalf("region %+v", reg)
				}
			}
			// One view in one format, and the compare and HTML pages now
			// and then, as the input's last byte chooses (the fuzzer finds
			// them all): every renderer on every input took 20 ms a run.
			v, f := Views[int(sel)%len(Views)], Formats[int(sel/16)%len(Formats)]
			var buf bytes.Buffer
			if err := Render(&buf, s, v, f); err != nil {
				t.Fatalf("%s/%s: %v", v, f, err)
			}
			if f == "json" && !json.Valid(buf.Bytes()) {
				t.Fatalf("%s: invalid JSON", v)
			}
			if sel%3 == 0 {
				if err := RenderCompare(&bytes.Buffer{}, Compare(s, s), f); err != nil {
					t.Fatalf("compare %s: %v", f, err)
				}
			}
			if s.RunTime() < 0 {
				t.Fatalf("run time %d", s.RunTime())
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
			// Beyond ±2^61 ns the series clamps times: it then holds no
			// more than the calls took. A total that stopped at the int64
			// bound is below what the series (in float64) holds.
			ok := math.Abs(busy-float64(want)) <= 1e-9*float64(want)+1e-6
			switch {
			case want == math.MaxInt64:
				ok = true
			case outside:
				ok = busy <= float64(want)*(1+1e-9)
			}
			if len(s.Activity.Bins) > MaxBins || !ok {
				t.Fatalf("activity: %d bins, %v ns busy; calls took %d ns", len(s.Activity.Bins), busy, want)
			}
			// The HTML pages' figures and charts for one input in 32, and
			// the pages themselves for one in 256 (the charts and the
			// template take a few ms: every second input drawing them
			// held the fuzzer to ~8,000 runs a minute).
			if sel%32 == 16 {
				statsPage(s, HTMLOptions{})
				comparePage(Compare(s, s), HTMLOptions{})
			}
			if sel == 0x90 {
				if err := RenderHTML(&bytes.Buffer{}, s, HTMLOptions{}); err != nil {
					t.Fatalf("html: %v", err)
				}
				if err := RenderCompareHTML(&bytes.Buffer{}, Compare(s, s), HTMLOptions{}); err != nil {
					t.Fatalf("compare html: %v", err)
				}
			}
		}
	})
}
