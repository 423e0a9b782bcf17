package fold

import (
	"testing"

	"github.com/iotrace/iotrace/samples"
)

// maxSampleLines bounds the scripts the samples convert back to.
var maxSampleLines = map[string]int{
	"astro3d-small": 60,
	"astro3d-large": 80,
	"btio-c":        40,
}

// TestSamplesRoundTrip expands every sample with the ranks of its paper,
// converts the expansion back to a script, and checks that the script
// makes the same calls, rank by rank, call by call (Verify): expand →
// trace → convert → expand. It checks the sizes the issue asks for.
func TestSamplesRoundTrip(t *testing.T) {
	all := samples.List()
	if len(all) == 0 {
		t.Fatal("no samples")
	}
	for _, s := range all {
		t.Run(s.Name, func(t *testing.T) {
			if testing.Short() && s.Ranks > 16 {
				t.Skip("many ranks")
			}
			p, err := s.Compile()
			if err != nil {
				t.Fatal(err)
			}
			tr := expandProgram(t, p, s.Ranks)
			out, res := convertTrace(t, tr, Options{Source: s.File()})
			n := lines(out)
			t.Logf("%s: %d ranks, %d calls → %d lines", s.Name, s.Ranks, res.Events, n)
			if max, ok := maxSampleLines[s.Name]; ok && n > max {
				t.Errorf("%s converts to %d lines, want at most %d:\n%s", s.Name, n, max, numbered([]byte(out)))
			}
		})
	}
}
