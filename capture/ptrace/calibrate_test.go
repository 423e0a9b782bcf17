//go:build linux && (amd64 || arm64)

package ptrace

import (
	"os"
	"testing"
	"time"
)

// TestCalibrate: the tracer's cost per call is measured, positive, and
// of the order a stop costs (microseconds; under 10 ms even on a loaded
// machine).
func TestCalibrate(t *testing.T) {
	c, err := Calibrate("")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("in call %v, between %v, stop %v, ±%v, call %v, stopped %v, %d calls", time.Duration(c.InCall), time.Duration(c.Between),
		time.Duration(c.Stop), time.Duration(c.Spread), time.Duration(c.Call), time.Duration(c.Stopped), c.Samples)
	if c.Samples < calibrationCalls/2 || c.InCall <= 0 || c.Between+c.InCall <= 0 || c.Stop <= 0 {
		t.Errorf("cost %+v", c)
	}
	if _, err := os.Stat("/proc/self/schedstat"); err == nil && c.Stopped <= 0 {
		t.Errorf("cost %+v", c)
	}
	for _, v := range []int64{c.InCall, c.Between, c.Stop, c.Stopped} {
		if v > int64(10*time.Millisecond) {
			t.Errorf("cost %+v", c)
		}
	}
}
