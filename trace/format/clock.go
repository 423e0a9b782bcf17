package format

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ClockSample is one measurement of a rank's clock against the
// reference's (docs/FORMAT.md, "One clock"): at At (ns from the rank's
// epoch, on the rank's own clock) the rank's clock read Offset ns more
// than the reference's, within ±Err ns.
type ClockSample struct {
	At     int64
	Offset int64
	Err    int64
}

// Clock is what a capture measured of a rank's clock: the reference it
// was measured against (a rank of the run), how, and the samples, in
// the order they were taken (at start-up and at the end).
type Clock struct {
	Ref     uint32
	Method  string
	Samples []ClockSample
}

// clockFix is a rank's clock correction, from its first and last samples.
type clockFix struct {
	a1, a2 int64 // when the first and last samples were taken
	o1, o2 int64 // their offsets
	rate   float64
}

func newClockFix(c *Clock) *clockFix {
	if c == nil || len(c.Samples) == 0 {
		return nil
	}
	f, l := c.Samples[0], c.Samples[len(c.Samples)-1]
	x := &clockFix{a1: f.At, a2: l.At, o1: f.Offset, o2: l.Offset}
	if x.a2 <= x.a1 {
		// One sample (or samples out of order): a constant offset.
		x.a2, x.o2 = x.a1, x.o1
	} else {
		x.rate = float64(x.o2-x.o1) / float64(x.a2-x.a1)
	}
	return x
}

// offsetAt returns the rank's clock offset at t (ns from its epoch): the
// first sample's before the first sample, the last's after the last, and
// the straight line between them in between, so that a drift measured
// between the start and the end of a run is taken out too.
func (x *clockFix) offsetAt(t int64) int64 {
	switch {
	case t <= x.a1:
		return x.o1
	case t >= x.a2:
		return x.o2
	}
	return x.o1 + int64(float64(t-x.a1)*x.rate)
}

// Rank-info fields of the clock.
const (
	fieldClockSample = 8  // varint at, varint offset, uvarint error bound
	fieldClockRef    = 9  // uvarint: the reference rank
	fieldClockMethod = 10 // text: how the samples were taken
)

// maxClockSamples bounds the samples a rank may have (a reader keeps
// them in memory).
const maxClockSamples = 1024

func appendClock(f *fields, c Clock) {
	f.uvarint(fieldClockRef, uint64(c.Ref))
	if c.Method != "" {
		f.str(fieldClockMethod, c.Method)
	}
	for _, s := range c.Samples {
		b := binary.AppendVarint(nil, s.At)
		b = binary.AppendVarint(b, s.Offset)
		b = binary.AppendUvarint(b, uint64(s.Err))
		f.bytes(fieldClockSample, b)
	}
}

// readClockField reads one clock field of a rank-info block into c.
func readClockField(c *Clock, id uint64, v []byte) error {
	switch id {
	case fieldClockRef:
		x, err := fieldUvarint(v)
		if err != nil {
			return err
		}
		if x > 1<<32-1 {
			return errors.New("clock reference rank out of range")
		}
		c.Ref = uint32(x)
	case fieldClockMethod:
		c.Method = string(v)
	case fieldClockSample:
		d := &decoder{b: v}
		at, off := d.varint(), d.varint()
		e := d.uvarint()
		if d.err != nil || len(d.b) != 0 {
			return errors.New("bad clock sample")
		}
		if e > 1<<62 {
			return fmt.Errorf("clock sample: error bound %d out of range", e)
		}
		if len(c.Samples) >= maxClockSamples {
			return fmt.Errorf("more than %d clock samples", maxClockSamples)
		}
		c.Samples = append(c.Samples, ClockSample{At: at, Offset: off, Err: int64(e)})
	}
	return nil
}

// SetRankClock records what the capture measured of rank r's clock
// against the reference rank's (in a rank-info block of its own, which
// may come after the rank's events). Readers then give the rank's times
// on the reference's clock.
func (w *Writer) SetRankClock(r uint32, c Clock) error {
	if len(c.Samples) == 0 {
		return nil
	}
	if len(c.Samples) > maxClockSamples {
		return fmt.Errorf("rank %d: %d clock samples, at most %d", r, len(c.Samples), maxClockSamples)
	}
	for _, s := range c.Samples {
		if s.Err < 0 {
			return fmt.Errorf("rank %d: clock sample with a negative error bound %d", r, s.Err)
		}
	}
	var f fields
	appendClock(&f, c)
	p := binary.AppendUvarint(nil, uint64(r))
	p = append(p, f...)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writeBlockLocked(kindRankInfo, p, BlockInfo{Rank: r})
}
