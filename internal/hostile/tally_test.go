package hostile

import (
	"sort"
	"testing"
)

// TestZTally logs how many hostile inputs of each kind the tests of this
// package tried (go test -v), for the record. Its file comes last, so it
// runs last.
func TestZTally(t *testing.T) {
	tally.Lock()
	defer tally.Unlock()
	var kinds []string
	for k := range tally.n {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		t.Logf("%-40s %d", k, tally.n[k])
	}
}
