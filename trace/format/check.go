package format

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/units"
)

// CheckReport is what Check found in one file.
type CheckReport struct {
	File       string
	Size       int64
	Meta       trace.Meta
	Blocks     int   // intact blocks
	Events     int64 // events in intact blocks
	Ranks      []uint32
	Paths      int
	Indexed    bool   // the file has a sound index that matches its blocks
	Truncated  string // why the file ends early, if it does
	Damage     []Damage
	IndexNote  string // a problem with the index, if any
	Unreadable string // why the header could not be read, if it could not
	// Empty: the file has no byte, not even a header, or a header and
	// no block nor index (a recorder killed before it wrote its first
	// block): nothing recorded, but not damaged either.
	Empty bool
	// Clocks are what the capture measured of the ranks' clocks (ranks
	// with samples only, times on the reference clock), when the file
	// is not damaged.
	Clocks []RankClock
	// Replay sums up the replay blocks of a replay's own trace; nil in
	// other traces.
	Replay *CheckReplay
	// Costs are what the recorders measured of their own cost and took
	// out of the ranks' times (ranks that say so only).
	Costs []RankCost
}

// CheckReplay is how the replay of a file's ranks went, as their replay
// blocks say.
type CheckReplay struct {
	Ranks       int    // ranks with a replay block
	Interrupted int    // of them, ranks stopped before the end
	Stopped     string // why, when the user did not stop them
	// Events the ranks got to, of the Planned.
	Events, Planned int64
}

// RankCost is the recorder's cost of one rank.
type RankCost struct {
	Rank uint32
	Cost *Cost
}

// RankClock is the clock measured of one rank.
type RankClock struct {
	Rank  uint32
	Clock *Clock
}

// emptyFile says what a file of 0 bytes is.
const emptyFile = "empty file (0 bytes): nothing was recorded in it, not even a trace header (a recording stopped before it began leaves one)"

// Damaged reports whether the file lost data: damaged blocks, truncation,
// or an unreadable header.
func (c *CheckReport) Damaged() bool {
	return len(c.Damage) > 0 || c.Truncated != "" || c.Unreadable != ""
}

// Check reads every block of the file name, checks framing, CRCs and that
// every events block decodes, and compares the index with the blocks.
// Without salvage it stops at the first damaged block; with it, it goes on
// at the next intact block.
func Check(name string, salvage bool) (*CheckReport, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s: is a directory", name)
	}
	return check(name, f, st.Size(), salvage), nil
}

func check(name string, ra io.ReaderAt, size int64, salvage bool) *CheckReport {
	rep := &CheckReport{File: name, Size: size}
	if size == 0 {
		rep.Empty = true
		return rep
	}
	m, start, err := readHeader(name, ra, size)
	if err != nil {
		rep.Unreadable = err.Error()
		return rep
	}
	rep.Meta = m
	tf := &file{name: name, ra: ra, size: size, meta: m, dataStart: start}
	indexed, hasIndex := tf.readIndex()
	tf.scan(salvage)
	rep.Truncated = tf.truncated
	rep.Damage = tf.damage
	if len(tf.blocks) == 0 && !hasIndex && tf.truncated == "" && len(tf.damage) == 0 {
		rep.Empty = true
		return rep
	}
	if hasIndex {
		rep.Indexed = sameBlocks(indexed, tf.blocks)
		if !rep.Indexed {
			rep.IndexNote = "the index does not match the blocks"
			if lost := lostBlocks(indexed, tf.blocks); lost != "" {
				rep.IndexNote = lost
			}
		}
	} else if tf.truncated == "" && len(tf.damage) == 0 {
		rep.IndexNote = "no index: the writer did not finish (the blocks are complete)"
	}
	// Decode every events block, so damage inside a block with a right CRC
	// (a writer bug) shows too.
	// Damage, truncation and the index are reported above; the reader
	// warns only about blocks whose contents do not parse.
	quiet := *tf
	quiet.damage, quiet.truncated, quiet.indexed = nil, "", true
	r, err := newReader([]*file{&quiet}, ReadOptions{Salvage: true})
	if err != nil {
		rep.Damage = append(rep.Damage, Damage{File: name, Reason: err.Error()})
		return rep
	}
	r.opts.Salvage = false // a block that does not decode is damage to report
	for _, w := range r.Warnings() {
		rep.Damage = append(rep.Damage, Damage{File: name, Reason: w})
	}
	rep.Ranks = r.Ranks()
	rep.Paths = r.paths.Len() - 1
	for _, rk := range rep.Ranks {
		rr := r.Replay(rk)
		if rr == nil {
			continue
		}
		if rep.Replay == nil {
			rep.Replay = &CheckReplay{}
		}
		cr := rep.Replay
		cr.Ranks++
		cr.Events += rr.Events
		cr.Planned += rr.Planned
		if rr.Interrupted {
			cr.Interrupted++
			if cr.Stopped == "" {
				cr.Stopped = rr.Stopped
			}
		}
	}
	for _, bi := range tf.blocks {
		rep.Blocks++
		if bi.Kind != kindEvents {
			continue
		}
		s := &rankSource{r: r, s: r.streams[bi.Rank], rank: bi.Rank}
		s.s = &rankStream{file: tf, blocks: []BlockInfo{bi}, remap: r.streams[bi.Rank].remap, remapM: r.streams[bi.Rank].remapM}
		buf := make([]trace.Event, trace.BatchSize)
		var n int64
		for {
			k, err := s.ReadEvents(buf)
			n += int64(k)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rep.Damage = append(rep.Damage, Damage{File: name, Offset: bi.Offset, Reason: "events do not decode: " + err.Error()})
				break
			}
		}
		rep.Events += n
	}
	if !rep.Damaged() {
		for _, rs := range r.Summary() {
			if rs.Clock != nil && len(rs.Clock.Samples) > 0 {
				rep.Clocks = append(rep.Clocks, RankClock{Rank: rs.Rank, Clock: rs.Clock})
			}
			if rs.Cost != nil {
				rep.Costs = append(rep.Costs, RankCost{Rank: rs.Rank, Cost: rs.Cost})
			}
		}
	}
	return rep
}

// lostBlocks says which events blocks the index lists that the scan did
// not recover, if the scan recovered nothing the index does not list.
func lostBlocks(indexed, found []BlockInfo) string {
	at := map[int64]BlockInfo{}
	for _, b := range indexed {
		at[b.Offset] = b
	}
	for _, b := range found {
		if ib, ok := at[b.Offset]; !ok || ib.Length != b.Length || ib.Kind != b.Kind {
			return "" // the index does not describe these blocks
		}
		delete(at, b.Offset)
	}
	blocks, events := 0, int64(0)
	byRank := map[uint32]int64{}
	for _, b := range at {
		if b.Kind == kindEvents {
			blocks++
			events += b.Events
			byRank[b.Rank] += b.Events
		}
	}
	if blocks == 0 {
		return ""
	}
	ranks := make([]uint32, 0, len(byRank))
	for r := range byRank {
		ranks = append(ranks, r)
	}
	slices.Sort(ranks)
	var per []string
	for _, r := range ranks {
		per = append(per, fmt.Sprintf("%d of rank %d", byRank[r], r))
	}
	return fmt.Sprintf("the index lists %d event %s not recovered: %d events (%s)",
		blocks, plural(blocks, "block", "blocks"), events, strings.Join(per, ", "))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func sameBlocks(a, b []BlockInfo) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Offset != b[i].Offset || a[i].Length != b[i].Length || a[i].Kind != b[i].Kind || a[i].Rank != b[i].Rank || a[i].Events != b[i].Events {
			return false
		}
	}
	return true
}

// WriteText writes the report as iotrace check prints it: one line for
// the file (its status, size, blocks, events, ranks and paths), then a
// line for each problem, then one for each rank's clock.
func (c *CheckReport) WriteText(w io.Writer) {
	if c.Empty {
		if c.Size == 0 {
			fmt.Fprintf(w, "%s: EMPTY: 0 bytes, nothing recorded, not even a trace header (a recorder killed before its first block leaves one)\n", c.File)
		} else {
			fmt.Fprintf(w, "%s: EMPTY: %d bytes, a trace header and nothing recorded (a recorder killed before its first block leaves one)\n", c.File, c.Size)
		}
		return
	}
	if c.Unreadable != "" {
		fmt.Fprintf(w, "%s: DAMAGED: %s\n", c.File, strings.TrimPrefix(c.Unreadable, c.File+": "))
		return
	}
	status := "ok"
	switch {
	case len(c.Damage) > 0:
		status = "DAMAGED"
	case c.Truncated != "":
		status = "TRUNCATED"
	case c.IndexNote != "":
		status = "ok (no index)"
	}
	of := ""
	if c.Meta.Ranks > len(c.Ranks) {
		of = fmt.Sprintf(" of the run's %d", c.Meta.Ranks)
	}
	fmt.Fprintf(w, "%s: %s: %s, %s, %s, %s %s%s, %s\n", c.File, status, count(c.Size, "byte"),
		count(int64(c.Blocks), "block"), count(c.Events, "event"), count(int64(len(c.Ranks)), "rank"),
		rankList(c.Ranks), of, count(int64(c.Paths), "path"))
	if c.Truncated != "" {
		fmt.Fprintf(w, "  truncated: %s\n", c.Truncated)
	}
	for _, d := range c.Damage {
		fmt.Fprintf(w, "  damaged: offset %d: %s\n", d.Offset, d.Reason)
	}
	if c.IndexNote != "" {
		fmt.Fprintf(w, "  index: %s\n", c.IndexNote)
	}
	if s := c.Replay.partial(len(c.Ranks)); s != "" {
		fmt.Fprintf(w, "  replay: %s\n", s)
	}
	for _, rc := range c.Clocks {
		fmt.Fprintln(w, rc.String())
	}
	for _, rc := range c.Costs {
		fmt.Fprintf(w, "  recorder cost: rank %d: %s\n", rc.Rank, rc.Cost)
	}
}

// partial says how a replay of ranks ranks did not end: ranks interrupted
// (and why), ranks without a replay block; "" for a replay that ended, or
// a trace of no replay.
func (cr *CheckReplay) partial(ranks int) string {
	if cr == nil || (cr.Interrupted == 0 && cr.Ranks == ranks) {
		return ""
	}
	var parts []string
	if cr.Interrupted > 0 {
		s := "interrupted"
		if cr.Stopped != "" {
			s += ": " + cr.Stopped
		}
		parts = append(parts, fmt.Sprintf("%s: %d of %d events of %s replayed", s, cr.Events, cr.Planned, count(int64(cr.Ranks), "rank")))
	}
	if n := ranks - cr.Ranks; n > 0 {
		parts = append(parts, fmt.Sprintf("%s without a replay block (their replay did not end)", count(int64(n), "rank")))
	}
	return strings.Join(parts, "; ")
}

// String is the line iotrace check prints of a rank's clock: its offsets
// from the reference, their error bounds and when they were measured, and
// the drift between the first and last.
func (rc RankClock) String() string {
	c := rc.Clock
	var parts []string
	for _, s := range c.Samples {
		parts = append(parts, fmt.Sprintf("%s ±%s at %s", signed(s.Offset), units.Duration(s.Err), units.Duration(s.At)))
	}
	line := fmt.Sprintf("  clock: rank %d against rank %d", rc.Rank, c.Ref)
	if c.Method != "" {
		line += " (" + c.Method + ")"
	}
	line += ": " + strings.Join(parts, ", ")
	if f, l := c.Samples[0], c.Samples[len(c.Samples)-1]; l.At > f.At {
		d := float64(l.At - f.At)
		line += fmt.Sprintf("; drift %.3g ±%.2g µs/s", float64(l.Offset-f.Offset)/d*1e6, float64(l.Err+f.Err)/d*1e6)
	}
	return line
}

// signed is a duration with its sign: "+1.2ms", "-300ns".
func signed(ns int64) string {
	if ns < 0 {
		return units.Duration(ns)
	}
	return "+" + units.Duration(ns)
}

// count is "1 block", "2 blocks".
func count(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// rankList prints ranks compactly: "[0-3 7]".
func rankList(rs []uint32) string {
	var parts []string
	for i := 0; i < len(rs); {
		j := i
		for j+1 < len(rs) && rs[j+1] == rs[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", rs[i], rs[j]))
		} else {
			parts = append(parts, fmt.Sprint(rs[i]))
		}
		i = j + 1
	}
	return "[" + strings.Join(parts, " ") + "]"
}
