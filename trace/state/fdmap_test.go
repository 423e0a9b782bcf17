package state

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// TestFDMapModel checks FDMap against a plain map over random sets,
// deletes and lookups of small, large and negative numbers.
func TestFDMapModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var m FDMap[int32]
		ref := map[int32]int32{}
		pick := func() int32 {
			switch rng.IntN(10) {
			case 0:
				return rng.Int32N(1 << 20)
			case 1:
				return -rng.Int32N(5) - 1
			case 2:
				return rng.Int32N(lowFDs + 100)
			}
			return rng.Int32N(64 + int32(round))
		}
		for range 2000 {
			fd := pick()
			switch rng.IntN(4) {
			case 0:
				m.Delete(fd)
				delete(ref, fd)
			default:
				v := rng.Int32N(3) // 0 removes
				m.Set(fd, v)
				if v == 0 {
					delete(ref, fd)
				} else {
					ref[fd] = v
				}
			}
			if got := m.Get(fd); got != ref[fd] {
				t.Fatalf("round %d: Get(%d) = %d, want %d", round, fd, got, ref[fd])
			}
			if m.Len() != len(ref) {
				t.Fatalf("round %d: Len %d, want %d", round, m.Len(), len(ref))
			}
			from := max(0, pick())
			want := from
			for ref[want] != 0 {
				want++
			}
			if got := m.Lowest(from); got != want {
				t.Fatalf("round %d: Lowest(%d) = %d, want %d", round, from, got, want)
			}
		}
		var keys, got []int32
		for k := range ref {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		c := m.Clone()
		m.Set(7, 99) // the clone is a copy
		c.Each(func(fd, v int32) {
			got = append(got, fd)
			if v != ref[fd] {
				t.Fatalf("Each: %d → %d, want %d", fd, v, ref[fd])
			}
		})
		if !slices.Equal(got, keys) {
			t.Fatalf("Each gave %v, want %v", got, keys)
		}
	}
}

// TestFDMapDense: numbers in use from 0 on live in the slice; a lone large
// one does not make it large.
func TestFDMapDense(t *testing.T) {
	var m FDMap[int32]
	m.Set(4095, 1)
	m.Set(1048575, 1)
	if len(m.low) != 0 {
		t.Fatalf("two descriptors made a slice of %d", len(m.low))
	}
	for fd := range int32(3000) {
		m.Set(fd, 2)
	}
	if len(m.low) < 3000 || len(m.high) != 1 { // 4095 moved into the slice as it grew
		t.Fatalf("3000 descriptors from 0: slice %d, map %d", len(m.low), len(m.high))
	}
	if m.Lowest(0) != 3000 || m.Get(4095) != 1 {
		t.Fatalf("Lowest %d, Get(4095) %d", m.Lowest(0), m.Get(4095))
	}
}

// TestTableMemory: a descriptor table costs what its open descriptors
// do, whatever their numbers: 4,096 ranks whose opens return 1048575 (or
// 4095) took 8 MiB (or 64 KiB) each.
func TestTableMemory(t *testing.T) {
	const ranks = 4096
	for _, fd := range []int32{1048575, 4095, 100000} {
		fs := make([]*Follower[int32, struct{}], ranks)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range fs {
			f := New[int32, struct{}](nil)
			f.Apply(&trace.Event{Op: trace.OpOpen, Path: 1, Ret: int64(fd)})
			f.Apply(&trace.Event{Op: trace.OpWrite, FD: fd, Size: 10, Ret: 10})
			fs[i] = f
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / ranks
		if per > 4096 {
			t.Errorf("descriptor %d: %d bytes per rank", fd, per)
		}
		t.Logf("descriptor %d: %d bytes per rank", fd, per)
		if fs[0].Lookup(0, fd) == nil || fs[0].Open(0) != 1 {
			t.Fatalf("descriptor %d lost", fd)
		}
		runtime.KeepAlive(fs)
	}
}
