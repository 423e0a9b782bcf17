package session

import "testing"

// The blocks of the replay's own trace shrink with the number of ranks so
// that the open blocks of all ranks stay within 2^20 events.
func TestRecordBlock(t *testing.T) {
	for _, c := range []struct{ ranks, want int }{
		{0, 16384}, {1, 16384}, {64, 16384}, {65, 16131}, {1024, 1024}, {4096, 256}, {100000, 256},
	} {
		if got := RecordBlock(c.ranks); got != c.want {
			t.Errorf("RecordBlock(%d) = %d, want %d", c.ranks, got, c.want)
		}
		if got := RecordBlock(c.ranks); c.ranks >= 64 && c.ranks <= 4096 && got*c.ranks > 1<<20 {
			t.Errorf("RecordBlock(%d): %d events open in all", c.ranks, got*c.ranks)
		}
	}
}
