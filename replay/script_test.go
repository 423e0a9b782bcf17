package replay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/iotrace/iotrace/internal/loadcheck"
	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/trace"
)

// TestScriptLoopsEndByTheClock runs a script whose time-driven loop lasts
// 200 ms on ranks of different speeds: the loop ends by the real clock,
// and every rank leaves it at the same iteration.
func TestScriptLoopsEndByTheClock(t *testing.T) {
	prog, err := script.Compile("t.iop", []byte(`
param t = 200ms
group fast = 2
open "/s/f.$rank" as f flags O_WRONLY | O_CREAT
repeat for t as i {
    write f at (i % 16) * 4KiB size 4KiB
}
on fast {
    repeat for 100ms {
        write f at 0 size 1KiB
    }
}
close f
barrier
`))
	if err != nil {
		t.Fatal(err)
	}
	in, err := prog.Instantiate(script.Config{Ranks: 4})
	if err != nil {
		t.Fatal(err)
	}
	// Rank r's writes take r × 300 µs.
	be := &fakeBackend{delay: func(e *trace.Event) time.Duration {
		if e.Op.Dir() == trace.DirWrite {
			return time.Duration(e.Rank) * 300 * time.Microsecond
		}
		return 0
	}}
	// The iterations and where the loops end are checked on every run;
	// that they end soon after their time, and that the ranks got through
	// a fair number of iterations, is timing: an overloaded machine gets a
	// second try.
	loadcheck.Retry(t, func() string {
		rp, err := replay.New(replay.ScriptTrace(in), replay.Options{Timing: replay.AFAP})
		if err != nil {
			t.Fatal(err)
		}
		s := newSinks()
		start := time.Now()
		res, err := rp.Run(context.Background(), be, s.out(""))
		if err != nil {
			t.Fatal(err)
		}
		el := time.Since(start)
		if el < 300*time.Millisecond {
			t.Fatalf("the loops of 200 ms and 100 ms ended after %v together", el)
		}
		var n4k, n1k [4]int
		for r := uint32(0); r < 4; r++ {
			for _, e := range s.rank(r) {
				if e.Op.Dir() == trace.DirWrite {
					if e.Size == 4096 {
						n4k[r]++
					} else {
						n1k[r]++
					}
				}
			}
		}
		if n4k[0] != n4k[3] || n4k[1] != n4k[2] || n4k[0] != n4k[1] || n4k[0] == 0 {
			t.Fatalf("iterations of the world loop per rank: %v", n4k)
		}
		if n1k[0] != n1k[1] || n1k[0] == 0 || n1k[2] != 0 || n1k[3] != 0 {
			t.Fatalf("iterations of the group loop per rank: %v", n1k)
		}
		if res.Unmatched != 0 || res.Failures() != 0 {
			t.Fatalf("unmatched %d failures %d", res.Unmatched, res.Failures())
		}
		t.Logf("iterations: %v %v in %v", n4k, n1k, el)
		// Rank 3's writes take 900 µs: about 220 iterations in 200 ms.
		if el > 600*time.Millisecond || n4k[0] < 50 {
			return fmt.Sprintf("the loops of 200 ms and 100 ms took %v together, %d iterations of the first", el, n4k[0])
		}
		return ""
	})
}
