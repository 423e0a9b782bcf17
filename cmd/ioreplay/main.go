// Command ioreplay replays traces and pattern scripts on a file system:
// every rank of the trace becomes a goroutine that issues the rank's calls
// through POSIX in a target directory, with the original timing, the
// recorded think time, or as fast as possible, while barriers,
// collectives and messages keep the ranks in the order they had. It
// prints the statistics of what it did (iotrace stats over the replay's
// own trace). docs/REPLAY.md has the details.
package main

import (
	"os"

	"github.com/iotrace/iotrace/cmd/internal/cli"
)

func main() {
	os.Exit(cli.Run(newRoot(), os.Args[1:]))
}
