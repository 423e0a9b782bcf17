package script

import (
	"fmt"
	"sync"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// clogScript meets in every way a stream must agree on with other ranks:
// collectives on the world and on two groups, time-driven loops of the
// world and of a group, and ranks whose work differs.
const clogScript = `
group a = 3
group b
repeat 20 as i {
    write "f.$rank" at i * 4KiB size 4KiB * (rank + 1)
    barrier
}
on a {
    repeat for 3ms as j {
        write "a.$grank" size 1KiB * (grank + 1)
        allreduce 8
    }
}
on b {
    repeat 5 {
        bcast 64 root gsize - 1
        write "b.$grank" size 512
    }
}
repeat for 2ms {
    read "f.$rank" at 0 size 4KiB
    if rank % 2 == 0 {
        sleep 10us
    }
    alltoall 1KiB
}
barrier
`

// readRanks reads every rank of x in the order given, or all at once, and
// returns each rank's events as text, paths by name.
func readRanks(t *testing.T, x *Expansion, order []uint32, parallel bool) map[uint32][]string {
	t.Helper()
	out := make(map[uint32][]string)
	var mu sync.Mutex
	var wg sync.WaitGroup
	read := func(r uint32) {
		defer wg.Done()
		src, err := x.Rank(r)
		if err != nil {
			t.Error(err)
			return
		}
		evs, err := trace.ReadAll(src)
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
		var lines []string
		for _, e := range evs {
			p, p2 := x.Path(e.Path), x.Path(e.Path2)
			e.Path, e.Path2 = 0, 0
			lines = append(lines, fmt.Sprintf("%+v %s %s", e, p, p2))
		}
		mu.Lock()
		out[r] = lines
		mu.Unlock()
	}
	for _, r := range order {
		wg.Add(1)
		if parallel {
			go read(r)
		} else {
			read(r)
		}
	}
	wg.Wait()
	return out
}

// TestCompletionLog checks that streams reading the shared completion log
// make exactly the events of streams that run every other rank
// themselves (no log), whatever order the ranks are read in, at once or
// one after the other, and when the log fills up part way.
func TestCompletionLog(t *testing.T) {
	p := mustCompile(t, clogScript)
	const ranks = 7
	var order, reverse []uint32
	for r := range uint32(ranks) {
		order = append(order, r)
		reverse = append([]uint32{r}, reverse...)
	}
	expand := func() *Expansion {
		x, err := Expand(p, Config{Ranks: ranks})
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	alone := expand()
	alone.log = nil
	want := readRanks(t, alone, order, false)
	n := 0
	for _, evs := range want {
		n += len(evs)
	}
	if n < 500 {
		t.Fatalf("only %d events", n)
	}
	check := func(name string, got map[uint32][]string) {
		for r := range uint32(ranks) {
			if len(got[r]) != len(want[r]) {
				t.Errorf("%s: rank %d has %d events, the stream that runs the other ranks itself %d", name, r, len(got[r]), len(want[r]))
				continue
			}
			for i := range got[r] {
				if got[r][i] != want[r][i] {
					t.Errorf("%s: rank %d, event %d:\n%s\nwant (the stream that runs the other ranks itself):\n%s", name, r, i, got[r][i], want[r][i])
					break
				}
			}
		}
	}
	check("in order", readRanks(t, expand(), order, false))
	check("reversed", readRanks(t, expand(), reverse, false))
	check("at once", readRanks(t, expand(), order, true))
	// A log that fills up: the streams go on without it.
	x := expand()
	x.log.n = maxLog - 2*logBlock
	check("full", readRanks(t, x, reverse, false))
	if !x.log.full {
		t.Error("the log did not fill up")
	}
}
