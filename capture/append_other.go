//go:build !unix

package capture

import "os"

// appendMode reports whether f was opened with O_APPEND; it cannot tell
// here.
func appendMode(f *os.File) bool { return false }
