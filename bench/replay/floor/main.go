// Command floor is the floor of a Go replayer in the overhead benchmark
// (bench/replay/run.sh): the N × 4 KiB pwrites at (i mod 256) ×
// 4 KiB, in a Go process, with what any replayer that writes honest data
// and measures every call must do and nothing else — the data taken from
// ioreplay's pattern (replay.NewPattern, the non-repeating stream),
// each call issued as a raw system call, the clock (the time-stamp counter
// where there is one, as ioreplay's engine reads it) read once per call
// and the call's duration kept in memory faulted in beforehand. No trace
// is read, no engine runs, nothing is recorded or reported.
//
//	floor FILE N
//
// It prints the loop's time in ns, as bench/replay/pwrite.c does.
package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"github.com/iotrace/iotrace/replay"
)

const bs = 4096

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: floor FILE N")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[2])
	if err != nil || n < 1 {
		fmt.Fprintln(os.Stderr, "floor: N must be a positive number")
		os.Exit(2)
	}
	fd, err := syscall.Open(os.Args[1], syscall.O_CREAT|syscall.O_WRONLY|syscall.O_TRUNC, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
	cur := replay.NewPattern().Cursor(0)
	// ioreplay keeps a call's times in event batches it reuses; here,
	// one slot per call, faulted in before the loop.
	durs := make([]int64, n)
	for i := range durs {
		durs[i] = 1
	}
	start := time.Now()
	t := ticks()
	for i := range n {
		p := cur.Next(bs, 0)
		r, _, e := syscall.RawSyscall6(syscall.SYS_PWRITE64, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), bs, uintptr(i%256*bs), 0, 0)
		if e != 0 || r != bs {
			fmt.Fprintln(os.Stderr, "floor: pwrite:", e)
			os.Exit(1)
		}
		end := ticks()
		durs[i], t = end-t, end
	}
	elapsed := time.Since(start)
	syscall.Close(fd)
	var sum int64
	for _, d := range durs {
		sum += d
	}
	if sum < 0 {
		os.Exit(1)
	}
	fmt.Println(elapsed.Nanoseconds())
}
