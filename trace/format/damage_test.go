package format

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// smallTrace writes 3 ranks of a few hundred events in small blocks.
func smallTrace(t testing.TB) ([]byte, map[uint32][]trace.Event, *trace.Paths) {
	r := rand.New(rand.NewPCG(42, 1))
	paths := trace.NewPaths()
	byRank := map[uint32][]trace.Event{}
	for rk := uint32(0); rk < 3; rk++ {
		byRank[rk] = randomEvents(r, rk, 60, paths)
	}
	return writeTrace(t, Options{BlockEvents: 16}, byRank, paths), byRank, paths
}

// readAllRanks reads every rank; it returns the events and the first error.
func readAllRanks(r *Reader) (map[uint32][]trace.Event, error) {
	out := map[uint32][]trace.Event{}
	for _, rk := range r.Ranks() {
		src, err := r.Rank(rk)
		if err != nil {
			return out, err
		}
		evs, err := trace.ReadAll(src)
		out[rk] = evs
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// TestTruncateEveryOffset cuts a trace at every byte: the reader reads a
// prefix of every rank's events (all of them when only the index or
// trailer is lost), says what it recovered, and never fails or panics
// once the header is complete.
func TestTruncateEveryOffset(t *testing.T) {
	data, byRank, paths := smallTrace(t)
	_, hdrEnd, err := readHeader("x", bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	full := map[uint32][]resolvedEvent{}
	for rk, evs := range byRank {
		full[rk] = resolve(evs, paths.Lookup)
	}
	prevTotal := -1
	for cut := 0; cut <= len(data); cut++ {
		r, err := NewReader(bytes.NewReader(data[:cut]), int64(cut), "cut.iot", ReadOptions{})
		if cut < int(hdrEnd) {
			if err == nil || !errors.Is(err, ErrFormat) {
				t.Fatalf("cut at %d (inside the header): err = %v, want a format error", cut, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		got, err := readAllRanks(r)
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		total := 0
		for rk, evs := range got {
			g := resolve(evs, r.Path)
			if !reflect.DeepEqual(g, full[rk][:len(g)]) {
				t.Fatalf("cut at %d: rank %d is not a prefix of the original", cut, rk)
			}
			total += len(evs)
		}
		if total < prevTotal {
			t.Fatalf("cut at %d: %d events, fewer than the shorter cut's %d", cut, total, prevTotal)
		}
		prevTotal = total
		if cut < len(data) && len(r.Warnings()) == 0 {
			t.Fatalf("cut at %d: no warning about the missing end", cut)
		}
		if cut == len(data) && len(r.Warnings()) != 0 {
			t.Fatalf("whole file: warnings %v", r.Warnings())
		}
	}
	if prevTotal != 180 {
		t.Fatalf("whole file read %d events, want 180", prevTotal)
	}
}

// TestCRCDamage flips one byte inside a block: reading fails naming the
// block's offset, Salvage skips that block and reads the rest, and check
// reports it.
func TestCRCDamage(t *testing.T) {
	data, byRank, _ := smallTrace(t)
	r, err := NewReader(bytes.NewReader(data), int64(len(data)), "ok.iot", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Damage the third events block of rank 1.
	var target BlockInfo
	k := 0
	for _, bi := range r.files[0].blocks {
		if bi.Kind == kindEvents && bi.Rank == 1 {
			if k == 2 {
				target = bi
			}
			k++
		}
	}
	bad := bytes.Clone(data)
	bad[target.Offset+blockHeaderLen+target.Length/2] ^= 0x5a

	// The index is intact, so opening works; reading rank 1 fails at the block.
	r, err = NewReader(bytes.NewReader(bad), int64(len(bad)), "bad.iot", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = readAllRanks(r)
	want := "bad.iot: offset " + itoa(target.Offset) + ": block CRC mismatch"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want it to contain %q", err, want)
	}

	r, err = NewReader(bytes.NewReader(bad), int64(len(bad)), "bad.iot", ReadOptions{Salvage: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := readAllRanks(r)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got[1]); n != len(byRank[1])-int(target.Events) {
		t.Fatalf("salvage read %d events of rank 1, want %d", n, len(byRank[1])-int(target.Events))
	}
	if len(got[0]) != len(byRank[0]) || len(got[2]) != len(byRank[2]) {
		t.Fatal("salvage lost events of undamaged ranks")
	}
	if w := r.Warnings(); len(w) != 1 || !strings.Contains(w[0], "offset "+itoa(target.Offset)) {
		t.Fatalf("warnings %v", w)
	}

	rep := check("bad.iot", bytes.NewReader(bad), int64(len(bad)), true)
	if !rep.Damaged() || len(rep.Damage) != 1 || rep.Damage[0].Offset != target.Offset {
		t.Fatalf("check: %+v", rep)
	}
	if rep.Events != 180-target.Events {
		t.Fatalf("check counted %d events, want %d", rep.Events, 180-target.Events)
	}
	rep = check("ok.iot", bytes.NewReader(data), int64(len(data)), false)
	if rep.Damaged() || !rep.Indexed || rep.Events != 180 || len(rep.Ranks) != 3 {
		t.Fatalf("check of a sound file: %+v", rep)
	}
}

// TestDamagedNoIndex damages a block of a file without index: opening
// fails with the offset unless salvaging, which resynchronises on the
// next block.
func TestDamagedNoIndex(t *testing.T) {
	data, _, _ := smallTrace(t)
	r, _ := NewReader(bytes.NewReader(data), int64(len(data)), "x", ReadOptions{})
	blocks := r.files[0].blocks
	noIndex := data[:blocks[len(blocks)-1].Offset+blockHeaderLen+blocks[len(blocks)-1].Length]
	bad := bytes.Clone(noIndex)
	victim := blocks[len(blocks)/2]
	copy(bad[victim.Offset:], "XXXX") // break the block's magic
	_, err := NewReader(bytes.NewReader(bad), int64(len(bad)), "bad.iot", ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), "offset "+itoa(victim.Offset)) {
		t.Fatalf("err = %v", err)
	}
	r, err = NewReader(bytes.NewReader(bad), int64(len(bad)), "bad.iot", ReadOptions{Salvage: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(r.files[0].blocks); got != len(blocks)-1 {
		t.Fatalf("salvage found %d blocks, want %d", got, len(blocks)-1)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func fmtInt(n int64) string { return strconv.FormatInt(n, 10) }

// TestMerge joins per-rank files with different epochs into one without
// re-encoding: events keep their absolute times, and a rank held by two
// inputs is refused.
func TestMerge(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(3, 3))
	paths := trace.NewPaths()
	want := map[uint32][]resolvedEvent{}
	var names []string
	for rk := uint32(0); rk < 3; rk++ {
		evs := randomEvents(r, rk, 300, paths)
		name := filepath.Join(dir, "run.iot."+fmtInt(int64(rk)))
		w, err := CreateOptions(name, trace.Meta{Epoch: 1_000_000 * int64(rk+1), Hosts: []string{"n" + fmtInt(int64(rk))}, Ranks: 3}, Options{BlockEvents: 64})
		if err != nil {
			t.Fatal(err)
		}
		rw := w.Rank(rk)
		batch := append([]trace.Event(nil), evs...)
		for i := range batch {
			batch[i].Path = rw.Intern(paths.Lookup(batch[i].Path))
			batch[i].Path2 = rw.Intern(paths.Lookup(batch[i].Path2))
		}
		if err := rw.WriteEvents(batch); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
		res := resolve(evs, paths.Lookup)
		for i := range res {
			res[i].Start += int64(rk) * 1_000_000 // relative to the earliest epoch
		}
		want[rk] = res
	}
	// Reading the files as one trace and reading their merge agree.
	check := func(r *Reader) {
		t.Helper()
		got, err := readAllRanks(r)
		if err != nil {
			t.Fatal(err)
		}
		for rk := range want {
			if !reflect.DeepEqual(resolve(got[rk], r.Path), want[rk]) {
				t.Fatalf("rank %d differs", rk)
			}
		}
		if m := r.Meta(); m.Epoch != 1_000_000 || len(m.Hosts) != 3 || m.Ranks != 3 {
			t.Fatalf("meta %+v", m)
		}
	}
	r1, err := Open(names...)
	if err != nil {
		t.Fatal(err)
	}
	check(r1)
	var out bytes.Buffer
	st, err := Merge(&out, ReadOptions{}, names...)
	if err != nil {
		t.Fatal(err)
	}
	if st.Ranks != 3 || st.Events != 900 {
		t.Fatalf("merge stats %+v", st)
	}
	r2, err := NewReader(bytes.NewReader(out.Bytes()), int64(out.Len()), "merged.iot", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !r2.files[0].indexed || len(r2.Warnings()) > 0 {
		t.Fatalf("merged file: indexed=%v warnings=%v", r2.files[0].indexed, r2.Warnings())
	}
	check(r2)
	// The event blocks are the inputs' bytes.
	in, _ := os.ReadFile(names[1])
	for _, bi := range r2.files[0].blocks {
		if bi.Kind == kindEvents && bi.Rank == 1 {
			p := out.Bytes()[bi.Offset : bi.Offset+blockHeaderLen+bi.Length]
			if !bytes.Contains(in, p) {
				t.Fatal("merge re-encoded a block")
			}
		}
	}
	// A directory reads as one trace.
	r3, err := Open(dir)
	if err == nil {
		t.Fatalf("directory of *.iot.N files opened: %v", r3.Ranks())
	}
	// Same rank twice.
	if _, err := Merge(&out, ReadOptions{}, names[0], names[0]); err == nil || !strings.Contains(err.Error(), "rank 0 is in both") {
		t.Fatalf("duplicate rank: err = %v", err)
	}
	if _, err := Open(names[1], names[1]); err == nil || !strings.Contains(err.Error(), "rank 1 is in both") {
		t.Fatalf("duplicate rank: err = %v", err)
	}
}
