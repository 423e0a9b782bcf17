package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
)

// TestStatsAstro3d runs "iotrace stats --format json" on the astro3d
// samples as a user does and checks Tables 1–4 of Thakur et al.: the
// counts of every operation, the communication for I/O and the size
// distributions.
func TestStatsAstro3d(t *testing.T) {
	for _, c := range []struct {
		file  string
		ranks int
		ops   map[string]int64
		comm  int64
		sizes map[string]int64 // "op size" → count
	}{
		{"astro3d-small.iop", 8, map[string]int64{"open": 200, "close": 200, "read": 49, "write": 536, "seek": 1225}, 5608,
			map[string]int64{"read 24": 1, "read 524288": 48, "write 24": 24, "write 131072": 128, "write 524288": 384},
		},
		{"astro3d-large.iop", 64, map[string]int64{"open": 448, "close": 448, "read": 385, "write": 1030, "seek": 3235}, 109888,
			map[string]int64{"read 24": 1, "read 524288": 384, "write 24": 6, "write 131072": 256, "write 524288": 768},
		},
	} {
		out := mustRun(t, "stats", "--format", "json", "--ranks", fmt.Sprint(c.ranks), filepath.Join("..", "..", "samples", c.file))
		var rep struct {
			Ranks int
			Ops   []struct {
				Op    string
				Class string
				Count int64
			}
			Sizes []struct {
				Op    string
				Size  *int64
				Count int64
			}
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%s: %v\n%s", c.file, err, out)
		}
		if rep.Ranks != c.ranks {
			t.Errorf("%s: %d ranks", c.file, rep.Ranks)
		}
		var comm int64
		got := map[string]int64{}
		for _, o := range rep.Ops {
			if o.Class == "comm" {
				comm += o.Count
			} else {
				got[o.Op] = o.Count
			}
		}
		if len(got) != len(c.ops) || comm != c.comm {
			t.Errorf("%s: ops %v, communication %d; want %v, %d", c.file, got, comm, c.ops, c.comm)
		}
		for op, n := range c.ops {
			if got[op] != n {
				t.Errorf("%s: %s %d, want %d", c.file, op, got[op], n)
			}
		}
		sizes := map[string]int64{}
		for _, s := range rep.Sizes {
			if s.Size == nil {
				t.Fatalf("%s: %s has size buckets, want exact sizes", c.file, s.Op)
			}
			if s.Op == "read" || s.Op == "write" {
				sizes[fmt.Sprintf("%s %d", s.Op, *s.Size)] = s.Count
			}
		}
		if fmt.Sprint(sizes) != fmt.Sprint(c.sizes) {
			t.Errorf("%s: sizes %v, want %v", c.file, sizes, c.sizes)
		}
	}
}
