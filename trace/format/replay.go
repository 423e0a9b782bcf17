package format

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/hist"
)

// Fields of a replay block (kind 5): how the replay of one rank went.
const (
	replayTiming    = 1  // string
	replayPlanned   = 2  // uvarint
	replayEvents    = 3  // uvarint
	replayElapsed   = 4  // uvarint, ns
	replayFlags     = 5  // uvarint: 1 interrupted, 2 script
	replayLag       = 6  // uvarint op, then the histogram (repeated)
	replaySkip      = 7  // uvarint op, uvarint count, the reason (repeated)
	replayError     = 8  // uvarint op, varint ret, uvarint expected, uvarint count, the detail (repeated)
	replayUnmatched = 9  // uvarint
	replayNote      = 10 // string (repeated)
	replayStopped   = 11 // string
	replayLib       = 12 // uvarint calls, uvarint ns: MPI-IO library cost kept
	replayIOTime    = 13 // uvarint ns in I/O calls in the replay, uvarint ns of the same calls captured
	replayPredict   = 14 // uvarint 1: ioreplay --predict
	replayIOSpan    = 15 // uvarint ns predicted I/O span of the application, uvarint ns the same captured
)

// SetReplay records how the replay of rank r went (trace.ReplayRank), in
// a replay block. A replay writes it once the rank has ended.
func (w *Writer) SetReplay(r uint32, rr *trace.ReplayRank) error {
	var f fields
	f.str(replayTiming, rr.Timing)
	f.uvarint(replayPlanned, uint64(max(rr.Planned, 0)))
	f.uvarint(replayEvents, uint64(max(rr.Events, 0)))
	f.uvarint(replayElapsed, uint64(max(rr.Elapsed, 0)))
	var flags uint64
	if rr.Interrupted {
		flags |= 1
	}
	if rr.Script {
		flags |= 2
	}
	f.uvarint(replayFlags, flags)
	for _, op := range slices.Sorted(maps.Keys(rr.Lag)) {
		h, _ := rr.Lag[op].MarshalBinary()
		f.bytes(replayLag, append(binary.AppendUvarint(nil, uint64(op)), h...))
	}
	for _, s := range rr.Skips {
		b := binary.AppendUvarint(nil, uint64(s.Op))
		b = binary.AppendUvarint(b, uint64(s.Count))
		f.bytes(replaySkip, append(b, s.Reason...))
	}
	for _, e := range rr.Errors {
		b := binary.AppendUvarint(nil, uint64(e.Op))
		b = binary.AppendVarint(b, e.Ret)
		exp := uint64(0)
		if e.Expected {
			exp = 1
		}
		b = binary.AppendUvarint(b, exp)
		b = binary.AppendUvarint(b, uint64(e.Count))
		f.bytes(replayError, append(b, e.Detail...))
	}
	f.uvarint(replayUnmatched, uint64(max(rr.Unmatched, 0)))
	for _, n := range rr.Notes {
		f.str(replayNote, n)
	}
	if rr.Stopped != "" {
		f.str(replayStopped, rr.Stopped)
	}
	if rr.LibCalls > 0 {
		b := binary.AppendUvarint(nil, uint64(rr.LibCalls))
		f.bytes(replayLib, binary.AppendUvarint(b, uint64(max(rr.LibTime, 0))))
	}
	b := binary.AppendUvarint(nil, uint64(max(rr.IOTime, 0)))
	f.bytes(replayIOTime, binary.AppendUvarint(b, uint64(max(rr.CapturedIOTime, 0))))
	if rr.Predict {
		f.uvarint(replayPredict, 1)
	}
	if rr.IOSpan > 0 || rr.CapturedIOSpan > 0 {
		b := binary.AppendUvarint(nil, uint64(max(rr.IOSpan, 0)))
		f.bytes(replayIOSpan, binary.AppendUvarint(b, uint64(max(rr.CapturedIOSpan, 0))))
	}
	p := append(binary.AppendUvarint(nil, uint64(r)), f...)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writeBlockLocked(kindReplay, p, BlockInfo{Rank: r})
}

// Replay implements trace.Replayed: how rank r's replay went, as its
// replay block says; nil without one.
func (r *Reader) Replay(rank uint32) *trace.ReplayRank {
	if s := r.streams[rank]; s != nil {
		return s.replay
	}
	return nil
}

var _ trace.Replayed = (*Reader)(nil)

// readReplay decodes a replay block.
func readReplay(p []byte) (*trace.ReplayRank, error) {
	d := &decoder{b: p}
	rank := d.uvarint()
	if d.err != nil {
		return nil, d.err
	}
	if rank > 1<<32-1 {
		return nil, errors.New("replay block: rank out of range")
	}
	rr := &trace.ReplayRank{Rank: uint32(rank)}
	err := eachField(d.b, func(id uint64, v []byte) error {
		switch id {
		case replayTiming:
			rr.Timing = string(v)
		case replayLib, replayIOTime, replayIOSpan:
			d := &decoder{b: v}
			a, b := d.uvarint(), d.uvarint()
			// ns, as the writer writes them: up to the largest int64
			// (sums of them saturate, internal/sat).
			if d.err != nil || a > math.MaxInt64 || b > math.MaxInt64 {
				return errors.New("bad MPI-IO cost or I/O time")
			}
			switch id {
			case replayLib:
				rr.LibCalls, rr.LibTime = int64(a), int64(b)
			case replayIOTime:
				rr.IOTime, rr.CapturedIOTime = int64(a), int64(b)
			default:
				rr.IOSpan, rr.CapturedIOSpan = int64(a), int64(b)
			}
		case replayPlanned, replayEvents, replayElapsed, replayFlags, replayUnmatched, replayPredict:
			x, err := fieldUvarint(v)
			if err != nil || x > 1<<62 {
				return errors.New("bad count")
			}
			switch id {
			case replayPlanned:
				rr.Planned = int64(x)
			case replayEvents:
				rr.Events = int64(x)
			case replayElapsed:
				rr.Elapsed = int64(x)
			case replayFlags:
				rr.Interrupted, rr.Script = x&1 != 0, x&2 != 0
			case replayUnmatched:
				rr.Unmatched = int64(x)
			case replayPredict:
				rr.Predict = x&1 != 0
			}
		case replayNote:
			rr.Notes = append(rr.Notes, string(v))
		case replayStopped:
			rr.Stopped = string(v)
		default:
			return readReplayEntry(rr, id, v)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("replay block: %v", err)
	}
	return rr, nil
}

// readReplayEntry decodes a lag, skip or error entry; other ids are
// skipped.
func readReplayEntry(rr *trace.ReplayRank, id uint64, v []byte) error {
	d := &decoder{b: v}
	var op trace.Op
	switch id {
	case replayLag, replaySkip, replayError:
		x := d.uvarint()
		if x > 1<<16-1 {
			return errors.New("op out of range")
		}
		op = trace.Op(x)
	default:
		return nil
	}
	switch id {
	case replayLag:
		var h hist.Hist
		if d.err != nil || h.UnmarshalBinary(d.b) != nil {
			return errors.New("bad lag histogram")
		}
		if rr.Lag == nil {
			rr.Lag = map[trace.Op]*hist.Hist{}
		}
		rr.Lag[op] = &h
	case replaySkip:
		n := d.uvarint()
		if d.err != nil || n > 1<<62 {
			return errors.New("bad skip")
		}
		rr.Skips = append(rr.Skips, trace.ReplaySkip{Op: op, Count: int64(n), Reason: string(d.b)})
	case replayError:
		ret := d.varint()
		exp := d.uvarint()
		n := d.uvarint()
		if d.err != nil || n > 1<<62 || exp > 1 {
			return errors.New("bad error count")
		}
		rr.Errors = append(rr.Errors, trace.ReplayError{Op: op, Ret: ret, Expected: exp == 1, Count: int64(n), Detail: string(d.b)})
	}
	return nil
}
