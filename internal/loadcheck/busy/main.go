// Command busy keeps processors busy while a command runs: the load under
// which the test suite must pass (a test asserts behaviour; timing
// belongs in benchmarks). It starts -n spinning threads (default: one per
// processor), runs the command, stops them when it ends, and says how
// long it took and how loaded the machine was (the kernel's CPU
// pressure). Its exit status is the command's.
//
//	go run ./internal/loadcheck/busy -- go test ./...
//	go run ./internal/loadcheck/busy -runs 3 -- go test ./...
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/iotrace/iotrace/internal/loadcheck"
)

func main() {
	n := flag.Int("n", runtime.NumCPU(), "spinning threads")
	runs := flag.Int("runs", 1, "run the command this many times in a row, stopping at the first failure")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: busy [-n THREADS] [-runs N] -- COMMAND [ARGS…]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	runtime.GOMAXPROCS(*n + 1)
	var stop atomic.Bool
	for range *n {
		go func() {
			runtime.LockOSThread()
			x := uint64(1)
			for !stop.Load() {
				for range 1 << 16 {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
			_ = x
		}()
	}
	code := 0
	for i := 1; i <= *runs && code == 0; i++ {
		start := loadcheck.Now()
		t0 := time.Now()
		cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			code = ee.ExitCode()
		case err != nil:
			fmt.Fprintf(os.Stderr, "busy: %v\n", err)
			code = 1
		}
		l := loadcheck.Since(start)
		fmt.Fprintf(os.Stderr, "busy: run %d of %d with %d spinning threads: exit %d in %v (%v)\n",
			i, *runs, *n, code, time.Since(t0).Round(time.Second), l)
	}
	stop.Store(true)
	os.Exit(code)
}
