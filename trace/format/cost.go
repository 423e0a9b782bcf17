package format

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Cost is what a recorder measured of its own cost per call in one rank,
// and what it did with it (docs/FORMAT.md, "The recorder's cost"). The
// rank's times are already corrected: Cost says by how much.
type Cost struct {
	// InCall is the recorder's share of each recorded call's measured
	// duration, removed from it (ns); Between its share of the time
	// from a call's end to the next call's start, removed from that gap;
	// Stop the cost of a stop for a call it did not record (ptrace),
	// removed from the gap it fell in.
	InCall, Between, Stop int64
	// Spread is half the interquartile range of the calibration's
	// per-call measurements (ns): how much a single call's cost varied.
	Spread int64
	// Calls are the recorded calls corrected, Stops the unrecorded stops;
	// ClampedDur the calls shorter than InCall (their duration became
	// 0), ClampedGap the gaps shorter than the cost they held (became 0).
	Calls, Stops, ClampedDur, ClampedGap int64
	// Measured are the calls whose in-call share was measured on the
	// call itself, Followed those whose share was their thread's recent
	// measured calls' (ptrace, following the run); InCallOut and
	// BetweenOut the ns taken out of the durations and of the gaps in
	// all. Zero in traces of recorders that only calibrated at start-up.
	Measured, Followed, InCallOut, BetweenOut int64
	// Image is the recorder's cost per process image that its records
	// did not measure (the preload shim's loading and its spool's
	// unmapping), removed from the gap before the first event of each of
	// Images images a forked child of the rank exec'd; Replace the same
	// for each of Replaced images that replaced, by exec, an image with
	// records of its own (ns; 0: not measured).
	Image, Images, Replace, Replaced int64
	// FollowedStops are the unrecorded stops whose cost the recorder
	// measured on the run (ptrace: its time on the stop and the thread's
	// round trips) instead of taking Stop, StopOut the ns taken out for
	// them in all.
	FollowedStops, StopOut int64
}

// fieldCost is the rank-info field of the recorder's cost: uvarints
// in-call, between, stop, spread, calls, stops, clamped durations,
// clamped gaps, measured, followed, in-call out, between out, image,
// images, replace, replaced, followed stops, stop out. A reader takes
// those it knows and ignores any after them.
const fieldCost = 12

const costValues = 18

func appendCost(f *fields, c Cost) {
	var b []byte
	for _, v := range []int64{c.InCall, c.Between, c.Stop, c.Spread, c.Calls, c.Stops, c.ClampedDur, c.ClampedGap, c.Measured, c.Followed, c.InCallOut, c.BetweenOut, c.Image, c.Images, c.Replace, c.Replaced, c.FollowedStops, c.StopOut} {
		b = binary.AppendUvarint(b, uint64(max(v, 0)))
	}
	f.bytes(fieldCost, b)
}

func readCost(v []byte) (*Cost, error) {
	d := &decoder{b: v}
	var x [costValues]int64
	for i := range x {
		if len(d.b) == 0 {
			break // a writer that knew fewer values
		}
		u := d.uvarint()
		if d.err != nil || u > 1<<62 {
			return nil, errors.New("bad recorder cost")
		}
		x[i] = int64(u)
	}
	return &Cost{InCall: x[0], Between: x[1], Stop: x[2], Spread: x[3], Calls: x[4], Stops: x[5], ClampedDur: x[6], ClampedGap: x[7],
		Measured: x[8], Followed: x[9], InCallOut: x[10], BetweenOut: x[11], Image: x[12], Images: x[13],
		Replace: x[14], Replaced: x[15], FollowedStops: x[16], StopOut: x[17]}, nil
}

// SetRankCost records what the recorder of rank r measured of its own
// cost and removed from the rank's times (in a rank-info block of its
// own, which may come after the rank's events).
func (w *Writer) SetRankCost(r uint32, c Cost) error {
	var f fields
	appendCost(&f, c)
	p := binary.AppendUvarint(nil, uint64(r))
	p = append(p, f...)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writeBlockLocked(kindRankInfo, p, BlockInfo{Rank: r})
}

// String is the line iotrace check prints of a rank's recorder cost.
func (c Cost) String() string {
	s := fmt.Sprintf("%s of each call's duration and %s between calls removed (±%s)",
		Nanos(c.InCall), Nanos(c.Between), Nanos(c.Spread))
	if c.Stops > 0 || c.Stop > 0 {
		s += fmt.Sprintf(", %s for each of %d unrecorded stops", Nanos(c.Stop), c.Stops)
		if c.FollowedStops > 0 {
			s += fmt.Sprintf(" (%d of them following the run: %s each on average)", c.FollowedStops, Nanos(c.StopOut/c.FollowedStops))
		}
	}
	s += fmt.Sprintf("; %d calls, %d durations and %d gaps shorter than that (made 0)", c.Calls, c.ClampedDur, c.ClampedGap)
	if c.Measured+c.Followed > 0 && c.Calls > 0 {
		s += fmt.Sprintf("; following the run: %d calls measured, %d from their thread's recent ones; removed %s per call's duration, %s per gap on average",
			c.Measured, c.Followed, Nanos(c.InCallOut/c.Calls), Nanos(c.BetweenOut/c.Calls))
	}
	if c.Images > 0 {
		s += fmt.Sprintf("; %s at each of %d process starts", Nanos(c.Image), c.Images)
	}
	if c.Replaced > 0 {
		s += fmt.Sprintf("; %s at each of %d execs that replaced an image with records", Nanos(c.Replace), c.Replaced)
	}
	return s
}

// Nanos writes a per-call cost: "27 ns" below a microsecond, "11.8 µs"
// above.
func Nanos(ns int64) string {
	if ns < 1000 {
		return fmt.Sprintf("%d ns", ns)
	}
	return fmt.Sprintf("%.1f µs", float64(ns)/1e3)
}
