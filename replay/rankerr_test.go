package replay

import (
	"errors"
	"io"
	"testing"
)

// TestRankErrNamedOnce: an error about a rank says "rank N: " once,
// whether or not the error it wraps named the rank, and still wraps it.
func TestRankErrNamedOnce(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{io.ErrUnexpectedEOF, "rank 3: unexpected EOF"},
		{errors.New("rank 3: bad block"), "rank 3: bad block"},
		{errors.New("rank 30: bad block"), "rank 3: rank 30: bad block"},
	} {
		got := rankErr(3, c.err)
		if got.Error() != c.want || !errors.Is(got, c.err) {
			t.Fatalf("rankErr(3, %q) = %q, want %q wrapping it", c.err, got, c.want)
		}
	}
}
