// Package units prints and reads the quantities people read in reports
// and type in flags: durations and byte counts.
package units

import (
	"fmt"
	"strconv"
	"strings"
)

// Duration prints ns as "812ns", "4.21µs", "3.5ms", "12.3s".
func Duration(ns int64) string {
	if ns < 0 {
		// -ns overflows for the most negative int64; the magnitude as a
		// float does not, and no recursion is needed.
		return "-" + duration(-float64(ns))
	}
	return duration(float64(ns))
}

func duration(f float64) string {
	switch {
	case f == 0:
		return "0"
	case f < 1000:
		return fmt.Sprintf("%dns", int64(f))
	case f < 1e6:
		return Short(f/1e3) + "µs"
	case f < 1e9:
		return Short(f/1e6) + "ms"
	}
	return Short(f/1e9) + "s"
}

// Bytes prints a byte count with binary units: "512 B", "4 KiB",
// "1.5 MiB".
func Bytes(n int64) string {
	if n < 0 {
		// As Duration: no -n, which overflows for the most negative int64.
		return "-" + bytes(-float64(n))
	}
	return bytes(float64(n))
}

func bytes(f float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	u := 0
	for f >= 1024 && u < len(units)-1 {
		f /= 1024
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%d B", int64(f))
	}
	return Short(f) + " " + units[u]
}

// Short prints f with four significant digits at most (all of its
// integer part), without trailing zeros.
func Short(f float64) string {
	s := strconv.FormatFloat(f, 'f', 3, 64)
	if i := strings.Index(s, "."); i > 1 {
		s = strconv.FormatFloat(f, 'f', max(0, 4-i), 64)
	}
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
