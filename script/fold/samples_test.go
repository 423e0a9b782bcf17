package fold

import (
	"testing"

	"github.com/iotrace/iotrace/samples"
	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/trace"
)

// maxSampleLines bounds the scripts the samples convert back to: the
// issue's bounds for astro3d and btio-c, and a little above what the
// others reach, to catch regressions. Every sample has a bound.
var maxSampleLines = map[string]int{
	"astro3d-small":      60,
	"astro3d-large":      80,
	"btio-c":             40,
	"btio-b":             40,
	"btio-a":             280, // 64 points on 3 × 3 cells: cells of 22, 21 and 21 points
	"beffio":             300,
	"olap-index":         60,
	"parabench-listing2": 40,
	"parabench-listing3": 145,
	"isaila-synthetic":   20,
}

// smaller runs the big samples with smaller parameters, so that the test
// stays quick: the structure of their calls is the same.
var smaller = map[string]map[string]string{
	"beffio":             {"T": "2s"},
	"parabench-listing3": {"fine": "2048", "coarse": "4"},
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
			p, err := s.Compile()
			if err != nil {
				t.Fatal(err)
			}
			x, err := script.Expand(p, script.Config{Ranks: s.Ranks, Params: smaller[s.Name]})
			if err != nil {
				t.Fatal(err)
			}
			var tr trace.Trace = x
			out, res := convertTrace(t, tr, Options{Source: s.File()})
			n := lines(out)
			t.Logf("%s: %d ranks, %d calls → %d lines", s.Name, s.Ranks, res.Events, n)
			if max, ok := maxSampleLines[s.Name]; !ok {
				t.Errorf("%s has no size bound in maxSampleLines (it converts to %d lines)", s.Name, n)
			} else if n > max {
				t.Errorf("%s converts to %d lines, want at most %d:\n%s", s.Name, n, max, numbered([]byte(out)))
			}
		})
	}
}
