package fold

import (
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// TestRoundTripStdStreams: rank 0 prints, the others do not; standard
// output is declared once for every rank, at the start, so that the
// ranks' programs stay one.
func TestRoundTripStdStreams(t *testing.T) {
	m := trace.NewMemTrace()
	tty := m.Paths.Intern("/dev/pts/0")
	f := m.Paths.Intern("/d/out")
	for r := uint32(0); r < 4; r++ {
		now := int64(0)
		add := func(e trace.Event) { e.Rank, e.Start, e.Dur = r, now, 100; now += 1000; m.Add(e) }
		if r == 0 {
			add(trace.Event{Op: trace.OpWrite, FD: 1, Path: tty, Size: 10, Ret: 10})
		}
		add(trace.Event{Op: trace.OpOpen, Path: f, Flags: trace.OWronly | trace.OCreat, Mode: 0o644, Ret: 3})
		for i := int64(0); i < 5; i++ {
			add(trace.Event{Op: trace.OpPwrite, FD: 3, Path: f, Offset: (i*4 + int64(r)) * 4096, Size: 4096, Ret: 4096})
		}
		add(trace.Event{Op: trace.OpClose, FD: 3, Path: f})
		add(trace.Event{Op: trace.OpMPIBarrier})
		if r == 0 {
			add(trace.Event{Op: trace.OpWrite, FD: 1, Path: tty, Offset: 10, Size: 10, Ret: 10})
		}
		add(trace.Event{Op: trace.OpMPIBarrier})
	}
	out, _ := convertTrace(t, m, Options{})
	if !strings.Contains(out, "inherit \"/dev/pts/0\" as stdout fd 1 quiet\nif rank == 0 {\n    write stdout size 10\n}\nopen") {
		t.Errorf("standard output is not declared at the start for every rank:\n%s", out)
	}
}
