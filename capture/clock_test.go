package capture

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/launcher"
	"github.com/iotrace/iotrace/trace/format"
)

// TestClockSample: rank 0 answered 1000 at some moment between the
// question (t1 = 100) and the answer (t3 = 140) on a clock whose base is
// 1000: the rank's clock read 1120 at the midpoint, 120 more than rank
// 0's, within ±20; at 120 ns of a trace whose epoch is 1050, 70.
func TestClockSample(t *testing.T) {
	r := ClockReading{T1: 100, T3: 140, Ref: 1000, Base: 1000}
	if got, want := r.Sample(1050), (format.ClockSample{At: 70, Offset: 120, Err: 20}); got != want {
		t.Errorf("sample %+v, want %+v", got, want)
	}
	// An odd round trip rounds the bound up: it is a bound.
	if got := (ClockReading{T1: 0, T3: 5}).Sample(0).Err; got != 3 {
		t.Errorf("bound of a 5 ns round trip: %d, want 3", got)
	}
}

// TestClockBestPerPhase: a rank's clock has one sample per phase, from
// the reading with the shortest round trip, in the order of the phases.
func TestClockBestPerPhase(t *testing.T) {
	rd := []ClockReading{
		{Phase: 0, T1: 0, T3: 50, Ref: 10, Reference: 0},
		{Phase: 0, T1: 100, T3: 110, Ref: 90},
		{Phase: 1, T1: 1000, T3: 1040, Ref: 1000},
	}
	c, ok := Clock(rd, 0, ClockMethodPreload)
	if !ok || c.Method != ClockMethodPreload || len(c.Samples) != 2 {
		t.Fatalf("clock %+v, %v", c, ok)
	}
	if c.Samples[0] != (format.ClockSample{At: 105, Offset: 15, Err: 5}) || c.Samples[1].At != 1020 {
		t.Errorf("samples %+v", c.Samples)
	}
	if _, ok := Clock(nil, 0, ""); ok {
		t.Error("a clock of no readings")
	}
}

// TestWantClockSync: the exchange is asked for only when every rank
// surely takes part.
func TestWantClockSync(t *testing.T) {
	job := launcher.Rank{Rank: 1, Known: true, Size: 4}
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, c := range []struct {
		mode   ClockSync
		r      launcher.Rank
		parent string
		env    func(string) string
		want   bool
		why    string
	}{
		{ClockAuto, job, "orted", env(), true, ""},
		{ClockAuto, job, "slurmstepd", env(), true, ""},
		{ClockAuto, job, "mpirun", env("OMPI_NUM_APP_CTX", "1"), true, ""},
		{ClockAuto, job, "bash", env(), false, `started by "bash"`},
		{ClockAuto, job, "orted", env("OMPI_NUM_APP_CTX", "2"), false, "MPMD"},
		{ClockOn, job, "bash", env("OMPI_NUM_APP_CTX", "2"), true, ""},
		{ClockOff, job, "orted", env(), false, "off"},
		{ClockAuto, launcher.Rank{}, "orted", env(), false, "not a rank"},
		{ClockOn, launcher.Rank{Known: true, Size: 1}, "orted", env(), false, "not a rank"},
	} {
		got, why := WantClockSync(c.mode, c.r, c.parent, c.env)
		if got != c.want || !strings.Contains(why, c.why) {
			t.Errorf("%v %+v %q: %v (%s), want %v (%s)", c.mode, c.r, c.parent, got, why, c.want, c.why)
		}
	}
	for _, s := range []string{"auto", "on", "off"} {
		var v ClockSync // the flag's value: its name back
		if err := v.Set(s); err != nil || v.String() != s {
			t.Errorf("Set(%q): %v, %v", s, v, err)
		}
	}
	if v := ClockSync(0); v.String() != "auto" || v.Set("yes") == nil {
		t.Errorf("the zero value is %v, or Set took yes", v)
	}
	if _, err := ParseClockSync("yes"); err == nil || !strings.Contains(err.Error(), "--clock-sync") {
		t.Errorf("--clock-sync yes: %v", err)
	}
}

// TestReadClockFile reads the clock library's lines, and names the line
// of one that is not a reading.
func TestReadClockFile(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "readings")
	if rd, err := ReadClockFile(f, 7); err != nil || rd != nil {
		t.Errorf("no file: %v, %v", rd, err)
	}
	os.WriteFile(f, []byte("0 10 30 1000\n1 500 520 1500\n"), 0o600)
	rd, err := ReadClockFile(f, 7)
	if err != nil || len(rd) != 2 || rd[1] != (ClockReading{Phase: 1, T1: 500, T3: 520, Ref: 1500, Base: 7}) {
		t.Errorf("readings %+v, %v", rd, err)
	}
	for _, bad := range []string{"0 10 30\n", "0 30 10 5\n", "2 1 2 3\n", "0 x 2 3\n"} {
		os.WriteFile(f, []byte(bad), 0o600)
		if _, err := ReadClockFile(f, 0); err == nil || !strings.Contains(err.Error(), "readings:1:") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
