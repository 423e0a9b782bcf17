//go:build unix

package capture

import (
	"os"

	"golang.org/x/sys/unix"
)

// appendMode reports whether f was opened with O_APPEND.
func appendMode(f *os.File) bool {
	fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	return err == nil && fl&unix.O_APPEND != 0
}
