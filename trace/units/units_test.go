package units

import (
	"math"
	"testing"
)

func TestHuman(t *testing.T) {
	for ns, want := range map[int64]string{0: "0", 999: "999ns", 1000: "1µs", 1500: "1.5µs", 4_210: "4.21µs",
		123_456: "123.5µs", 999_999: "1000µs", 3_500_000: "3.5ms", 12_300_000_000: "12.3s", 4_000_000_000_000: "4000s", -2000: "-2µs",
		math.MinInt64: "-9223372037s", math.MaxInt64: "9223372037s"} {
		if got := Duration(ns); got != want {
			t.Errorf("Duration(%d) = %q, want %q", ns, got, want)
		}
	}
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1 KiB", 1536: "1.5 KiB", 2<<20 + 12: "2 MiB",
		5 << 40: "5 TiB", 1<<63 - 1: "8 EiB", 1234567890: "1.15 GiB", math.MinInt64: "-8 EiB", -1: "-1 B"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestParseSize(t *testing.T) {
	for s, want := range map[string]int64{"4096": 4096, "4k": 4096, "64KiB": 65536, "1.5M": 3 << 19, "2G": 2 << 30, "1MB": 1 << 20} {
		if got, err := ParseSize(s); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "-1", "1Q", "NaN"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q): no error", bad)
		}
	}
}
