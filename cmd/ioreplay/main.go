// Command ioreplay replays traces and pattern scripts on a file system.
// It is not built yet: this stub says so and exits non-zero.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "ioreplay: not ready yet: replay is being built (see README.md)")
	os.Exit(2)
}
