package textutil

import "testing"

func TestSeconds(t *testing.T) {
	for s, want := range map[string]int64{"0": 0, "0.0041": 4_100_000, "12.5": 12_500_000_000, "1.123456789": 1_123_456_789, "3.": 3e9} {
		if got, ok := Seconds(s); !ok || got != want {
			t.Errorf("%q: %d %v, want %d", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "-1", "+1", "1.1234567891", "1.x", "x", ".5", "99999999999999999999"} {
		if _, ok := Seconds(s); ok {
			t.Errorf("%q read", s)
		}
	}
}

func TestCountList(t *testing.T) {
	m := map[string]int64{"b": 2, "a": 2, "c": 5, "d": 1}
	if got := CountList(m, 3); got != "c 5, a 2, b 2, 1 more kinds" {
		t.Errorf("%q", got)
	}
	if got := CountList(nil, 3); got != "" {
		t.Errorf("%q", got)
	}
}
