package script

import (
	"os"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// TestDocExamples compiles and expands every block marked iop in
// docs/SCRIPT.md, and checks that each is in canonical form.
func TestDocExamples(t *testing.T) {
	doc, err := os.ReadFile("../docs/SCRIPT.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	var cur []string
	in := false
	for _, line := range strings.Split(string(doc), "\n") {
		switch {
		case !in && line == "```iop":
			in, cur = true, nil
		case in && line == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, "\n")+"\n")
		case in:
			cur = append(cur, line)
		}
	}
	if len(blocks) < 4 {
		t.Fatalf("found %d iop blocks", len(blocks))
	}
	for i, src := range blocks {
		p, err := Compile("doc.iop", []byte(src))
		if err != nil {
			t.Errorf("block %d: %v\n%s", i, err, src)
			continue
		}
		if out, _ := FormatSource("doc.iop", []byte(src)); string(out) != src {
			t.Errorf("block %d is not in canonical form:\n%s", i, out)
		}
		x, err := Expand(p, Config{Ranks: 4})
		if err != nil {
			t.Errorf("block %d: %v", i, err)
			continue
		}
		for _, r := range x.Ranks() {
			s, _ := x.Rank(r)
			evs, err := trace.ReadAll(s)
			if err != nil {
				t.Errorf("block %d rank %d: %v", i, r, err)
			}
			if len(evs) == 0 {
				t.Errorf("block %d rank %d: no events", i, r)
			}
			if strings.Contains(src, "type 0") {
				n := 0
				for _, e := range evs {
					if e.Op == trace.OpMPIFileWriteAll {
						n++
					}
				}
				if n != 11809 {
					t.Errorf("b_eff_io example: %d iterations, the text says 11,809", n)
				}
			}
		}
	}
}
